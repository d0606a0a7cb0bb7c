# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_node_probe through a PersistentVolumeClaim of a StorageClass (option ``storage_class``).
PRIVATE to the collection.

Each probe pod mounts a claim of its own at CLAIM_MOUNT, so the probe proves the volume a workload
of that class is given on the node (the record's ``volume``). At the end the claims are deleted
and a Retain PV the probe's claim bound is made Available again."""

from __future__ import annotations

import json

try:
    from kubernetes import client as k8s_client
except ImportError:  # the module reports missing_required_lib
    k8s_client = None

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import node_probe as np
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.api_retry import ApiCallFailed
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_node_probe import (
    POLL, KubeApi, NodeProbe)

CLAIM_MOUNT = "/gds-volume"
REQUEST = "1Mi"  # the claim takes the whole PV; the request only has to fit it
RELEASE_WAIT = 60  # seconds for the claims to be gone (the pvc-protection finalizer waits on the pods)
_call = KubeApi._call  # pylint: disable=protected-access


class ClaimApi(object):
    """PersistentVolumeClaims, PersistentVolumes and StorageClasses on the probe's KubeApi."""

    def __init__(self, api):
        self.api = api
        self.core = api.core
        self.storage = k8s_client.StorageV1Api(api.core.api_client)

    @staticmethod
    def _json(resource, read_call, *args, **kwargs):
        return json.loads(_call("get", resource, read_call, *args, **kwargs))  # a "get" comes back as text

    def storage_class(self, name):
        try:
            return self._json("storageclasses/" + name, self.storage.read_storage_class, name)
        except ApiCallFailed as exc:
            if exc.status == 404:
                return None
            raise

    def create_claim(self, namespace, body):
        return _call("create", "persistentvolumeclaims/" + body["metadata"]["name"],
                     self.core.create_namespaced_persistent_volume_claim, namespace, body)

    def claim(self, namespace, name):
        return self._json("persistentvolumeclaims/" + name, self.core.read_namespaced_persistent_volume_claim,
                          name, namespace, _request_timeout=30)

    def claims(self, namespace, selector):
        return (_call("list", "persistentvolumeclaims", self.core.list_namespaced_persistent_volume_claim, namespace,
                      label_selector=selector, _request_timeout=30) or {}).get("items") or []

    def delete_claim(self, namespace, name):
        return self.api._delete("persistentvolumeclaims/" + name,  # pylint: disable=protected-access
                                self.core.delete_namespaced_persistent_volume_claim, name, namespace)

    def pv(self, name):
        return self._json("persistentvolumes/" + name, self.core.read_persistent_volume, name, _request_timeout=30)

    def release_pv(self, name, claim_uid):
        """Remove the PV's claimRef if it still names the claim ``claim_uid``."""
        return _call("patch", "persistentvolumes/" + name, self.core.patch_persistent_volume, name,
                     [{"op": "test", "path": "/spec/claimRef/uid", "value": claim_uid},
                      {"op": "remove", "path": "/spec/claimRef"}])


def prepare(api, params):
    """(problem or None, the probe's params: the claim's mount point as the probe path)."""
    name = params["storage_class"]
    try:
        sc = ClaimApi(api).storage_class(name)
    except ApiCallFailed as exc:
        return "Kubernetes API: %s" % exc, params
    if sc is None:
        return "StorageClass %s not found: create it (gpudirect.storage.gds_local_volumes) or name another" % name, params
    if sc.get("volumeBindingMode") != "WaitForFirstConsumer":
        return ("StorageClass %s has volumeBindingMode %s: a claim per node needs WaitForFirstConsumer (the claim is "
                "bound where its pod is scheduled)" % (name, sc.get("volumeBindingMode") or "Immediate")), params
    return None, dict(params, probe_path=[CLAIM_MOUNT])


def through(params):
    return " through a claim of StorageClass %s" % params["storage_class"] if params.get("storage_class") else ""


def via(node):
    vol = node.get("volume") or {}
    return " via PV %s (%s)" % (vol["pv"], vol["path"]) if vol.get("pv") else ""


def claim_body(pod, storage_class):
    meta = pod["metadata"]
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": meta["name"], "namespace": meta["namespace"], "labels": dict(meta["labels"]),
                         "annotations": dict(meta["annotations"]), "ownerReferences": list(meta["ownerReferences"])},
            "spec": {"storageClassName": storage_class, "accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                     "resources": {"requests": {"storage": REQUEST}}}}


def mount_claim(pod, claim):
    """The pod with the claim at CLAIM_MOUNT in place of the hostPath probe directories."""
    spec = pod["spec"]
    ctr = spec["containers"][0]
    ctr["volumeMounts"] = [m for m in ctr["volumeMounts"] if not m["name"].startswith("probe-dir-")] + [
        {"name": "probe-volume", "mountPath": CLAIM_MOUNT}]
    spec["volumes"] = [v for v in spec["volumes"] if not v["name"].startswith("probe-dir-")] + [
        {"name": "probe-volume", "persistentVolumeClaim": {"claimName": claim}}]
    return pod


class ClaimProbe(NodeProbe):
    """NodeProbe whose pods write to a claim of ``storage_class`` each."""

    def __init__(self, api, params, **kwargs):
        super(ClaimProbe, self).__init__(api, params, **kwargs)
        self.ops = ClaimApi(api)
        self.claim_uids = {}
        self.records = {}
        self.created["claims"] = []
        self.deleted["claims"] = 0

    def _create_pod(self, body):
        claim = claim_body(body, self.params["storage_class"])
        name = claim["metadata"]["name"]
        with self.lock:
            self.created["claims"].append(name)  # recorded first: deleted even if the answer is lost
        try:
            self.claim_uids[name] = self.ops.create_claim(self.ns, claim)["metadata"]["uid"]
        except ApiCallFailed as exc:
            return str(exc)
        return super(ClaimProbe, self)._create_pod(mount_claim(body, name))

    def _check(self, pod, node, obj, age):
        result = super(ClaimProbe, self)._check(pod, node, obj, age)
        if result is None:
            return None
        vol = {"storage_class": self.params["storage_class"], "claim": pod, "pv": None, "path": None,
               "mount_path": CLAIM_MOUNT, "released": False}
        result["volume"] = vol
        try:
            pv_name = (self.ops.claim(self.ns, pod).get("spec") or {}).get("volumeName")
            if pv_name:
                pv = self.ops.pv(pv_name)
                spec = pv.get("spec") or {}
                vol.update(pv=pv_name, path=(spec.get("local") or spec.get("hostPath") or {}).get("path"),
                           reclaim_policy=spec.get("persistentVolumeReclaimPolicy"))
        except ApiCallFailed as exc:
            self._refused(exc)
        if vol["path"]:  # the pod's mount point is the PV's path on the node
            result["reasons"] = [r.replace(CLAIM_MOUNT, vol["path"]) for r in result.get("reasons") or []]
            result["reason"] = (result.get("reason") or "").replace(CLAIM_MOUNT, vol["path"])
        with self.lock:
            self.records[pod] = vol
        return result

    def _delete_all(self):
        for name in self.created["claims"]:
            try:
                if self.ops.delete_claim(self.ns, name):
                    self.deleted["claims"] += 1
            except ApiCallFailed as exc:
                self._refused(exc)
        super(ClaimProbe, self)._delete_all()  # pods and the ConfigMap
        self._release()

    def _release(self):
        """Give the Retain PVs the claims bound back (Available again) once the claims are gone."""
        todo = dict((c, v) for c, v in self.records.items() if v.get("pv") and v.get("reclaim_policy") == "Retain"
                    and c in self.claim_uids)
        deadline = self.clock() + RELEASE_WAIT
        while todo:
            try:
                left = set(c["metadata"]["name"] for c in self.ops.claims(self.ns, "%s=%s" % (np.RUN_LABEL, self.run_id)))
            except ApiCallFailed as exc:
                self._refused(exc)
                return
            for claim in [c for c in todo if c not in left]:
                vol = todo.pop(claim)
                try:
                    self.ops.release_pv(vol["pv"], self.claim_uids[claim])
                    vol["released"] = True
                except ApiCallFailed as exc:
                    if exc.status != 422:  # 422: the test failed, the PV is no longer this claim's
                        self._refused(exc)
            if todo and self.clock() > deadline:
                self._refused("persistentvolumeclaims %s still present after %ds: their PVs stay Released" % (
                    ", ".join(sorted(todo)), RELEASE_WAIT))
                return
            if todo:
                self.sleep(POLL)
