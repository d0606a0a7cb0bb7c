# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_local_volumes, the pure part: which data mounts become local PersistentVolumes, the
StorageClass and PV objects, and what a run does to each. PRIVATE to the collection.

A volume is a host's probe path that GDS can serve as a local file system (``class.kind`` nvme),
not the root file system. The PV's name derives from class, node and path so a run finds its own
PVs again; a PV or StorageClass without the managed-by label is never changed."""

from __future__ import annotations

import hashlib
import re

MANAGED_BY = ("app.kubernetes.io/managed-by", "gpudirect.storage.gds_local_volumes")
NODE_ANNOTATION = "gpudirect.storage/node"
PATH_ANNOTATION = "gpudirect.storage/path"
SOURCE_ANNOTATION = "gpudirect.storage/source"
NO_PROVISIONER = "kubernetes.io/no-provisioner"
HOSTNAME_LABEL = "kubernetes.io/hostname"
ACCESS_MODES = ["ReadWriteOnce"]
RECLAIM = "Retain"  # a local volume has nothing that could delete it: Delete would leave it Failed
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
GIB, MIB = 1 << 30, 1 << 20


def capacity_text(size):
    """A stable quantity for ``size`` bytes: whole GiB (MiB under 1 GiB), rounded down."""
    return "%dGi" % (size // GIB) if size >= GIB else "%dMi" % max(size // MIB, 1)


def volumes_from_facts(node_facts):
    """(volumes, skipped) from {node name: that host's gds facts}: each volume
    {node, path, capacity, source}, each skipped {node, path, why}."""
    volumes, skipped = [], []
    for node in sorted(node_facts):
        storage = (node_facts[node] or {}).get("storage") or {}
        paths = storage.get("probe_paths") or []
        if not paths:
            skipped.append({"node": node, "path": None,
                            "why": "no storage facts: run gds_facts (probe_path: auto) on the host first"})
        for mount in (storage.get("auto") or {}).get("skipped") or []:  # what probe_path: auto left out, and why
            skipped.append({"node": node, "path": mount.get("mount_point"), "why": mount.get("why")})
        for info in paths:
            cls = info.get("class") or {}
            why = None
            if not info.get("exists", True):
                why = "the directory does not exist"
            elif not cls.get("gds_capable"):
                why = cls.get("reason") or "not a file system GDS can serve (%s)" % cls.get("kind")
            elif cls.get("kind") != "nvme":
                why = "%s is a %s file system: the same data on every node, not a node-local volume" % (
                    info.get("fstype"), cls.get("kind"))
            elif info.get("mount_point") == "/":
                why = "on the root file system, not a data mount"
            size = info.get("size_bytes") or info.get("free_bytes")
            if why is None and not size:
                why = "the file system's size is unknown"
            if why:
                skipped.append({"node": node, "path": info.get("path"), "why": why})
                continue
            source = "gds_facts: %s on %s (%s)" % (info.get("fstype"), info.get("block_device"), cls.get("kind"))
            volumes.append({"node": node, "path": info["path"], "capacity": capacity_text(size), "source": source})
    return volumes, skipped


def check(storage_class, volumes):
    """The error naming the bad field, or None."""
    if not DNS_LABEL.match(storage_class or "") or len(storage_class) > 63:
        return "storage_class %r is not a valid name (lower case letters, digits and '-', at most 63)" % storage_class
    seen = set()
    for i, vol in enumerate(volumes):
        where = "volumes[%d]" % i
        unknown = sorted(set(vol) - {"node", "path", "capacity", "source"})
        if unknown:
            return "%s: unknown key(s) %s (node, path and capacity are known)" % (where, ", ".join(unknown))
        if not isinstance(vol.get("node"), str) or not vol["node"]:
            return "%s.node is required" % where
        path = vol.get("path")
        if not isinstance(path, str) or not path.startswith("/") or "/../" in path + "/" \
                or any(c.isspace() or not c.isprintable() for c in path):
            return "%s.path %r must be an absolute path without '..' or white space" % (where, path)
        if not QUANTITY.match(str(vol.get("capacity") or "")):
            return "%s.capacity %r is not a Kubernetes quantity (e.g. 3576Gi)" % (where, vol.get("capacity"))
        if (vol["node"], vol["path"]) in seen:
            return "%s: node %s path %s is listed twice" % (where, vol["node"], vol["path"])
        seen.add((vol["node"], vol["path"]))
    return None


def pv_name(storage_class, node, path):
    """DNS-1123, unique per class, node and path: ``<class>-<node>-<6 hex>``."""
    digest = hashlib.sha256(("%s\0%s" % (node, path)).encode("utf-8")).hexdigest()[:6]
    stem = re.sub(r"[^a-z0-9-]", "-", node.lower()).strip("-")[:40].strip("-")
    return "%s-%s-%s" % (storage_class, stem or "node", digest)


def storage_class_body(name):
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "labels": {MANAGED_BY[0]: MANAGED_BY[1]}},
            "provisioner": NO_PROVISIONER, "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": RECLAIM}


def pv_body(storage_class, vol, hostname):
    """The local PV of ``vol`` on the node whose ``kubernetes.io/hostname`` label is ``hostname``."""
    notes = {NODE_ANNOTATION: vol["node"], PATH_ANNOTATION: vol["path"]}
    if vol.get("source"):
        notes[SOURCE_ANNOTATION] = vol["source"]
    term = {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [hostname]}]}
    return {"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name(storage_class, vol["node"], vol["path"]),
                         "labels": {MANAGED_BY[0]: MANAGED_BY[1]}, "annotations": notes},
            "spec": {"capacity": {"storage": vol["capacity"]}, "volumeMode": "Filesystem",
                     "accessModes": list(ACCESS_MODES), "persistentVolumeReclaimPolicy": RECLAIM,
                     "storageClassName": storage_class, "local": {"path": vol["path"]},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}}}}


def ours(obj):
    return ((obj.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY[0]) == MANAGED_BY[1]


def plan_class(current, want):
    """("create" | "keep" | "refuse", why): a class of that name made elsewhere is used as it
    stands when it binds the same way; never changed (its fields are immutable anyway)."""
    if current is None:
        return "create", None
    differs = [k for k in ("provisioner", "volumeBindingMode") if current.get(k) != want[k]]
    if differs:
        return "refuse", "StorageClass %s exists%s with %s: local PVs need %s; choose another storage_class" % (
            want["metadata"]["name"], "" if ours(current) else " (not created by this module)",
            ", ".join("%s=%s" % (k, current.get(k)) for k in differs),
            ", ".join("%s=%s" % (k, want[k]) for k in differs))
    return "keep", None


IMMUTABLE = ("local", "nodeAffinity", "storageClassName", "accessModes", "volumeMode")


def plan_pv(current, want):
    """("create" | "patch" | "keep" | "refuse", patch body or why)."""
    name = want["metadata"]["name"]
    if current is None:
        return "create", None
    if not ours(current):
        return "refuse", ("PersistentVolume %s exists and was not created by this module (no label %s=%s): "
                          "it is left alone" % (name, MANAGED_BY[0], MANAGED_BY[1]))
    spec = current.get("spec") or {}
    moved = [k for k in IMMUTABLE if spec.get(k) != want["spec"][k]]
    if moved:
        return "refuse", "PersistentVolume %s has another %s than wanted (immutable): delete it to recreate it" % (
            name, ", ".join(moved))
    meta = current.get("metadata") or {}
    patch = {}
    notes = dict((k, v) for k, v in want["metadata"]["annotations"].items() if (meta.get("annotations") or {}).get(k) != v)
    if notes:
        patch["metadata"] = {"annotations": notes}
    for key in ("capacity", "persistentVolumeReclaimPolicy"):
        if spec.get(key) != want["spec"][key]:
            patch.setdefault("spec", {})[key] = want["spec"][key]
    return ("patch", patch) if patch else ("keep", None)


def view(obj):
    """What the diff shows of a StorageClass or PV (None: absent)."""
    if obj is None:
        return None
    meta = obj.get("metadata") or {}
    out = {"labels": meta.get("labels") or {}, "annotations": meta.get("annotations") or {}}
    if obj.get("kind") == "StorageClass" or "provisioner" in obj:
        out.update((k, obj.get(k)) for k in ("provisioner", "volumeBindingMode", "reclaimPolicy"))
    else:
        out["spec"] = dict((k, v) for k, v in (obj.get("spec") or {}).items() if k != "claimRef")
    return out


def patched(obj, patch):
    """``obj`` with a (two-level) merge ``patch`` applied: the after-view of a diff."""
    out = dict(obj, metadata=dict(obj.get("metadata") or {}), spec=dict(obj.get("spec") or {}))
    for part in ("metadata", "spec"):
        for key, value in (patch.get(part) or {}).items():
            out[part][key] = dict(out[part].get(key) or {}, **value) if key in ("annotations", "labels") else value
    return out
