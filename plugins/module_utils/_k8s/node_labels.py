# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_node_probe's node labels: what each node should carry after a run (pure), and ``apply()``.
PRIVATE to the collection.

The labels are under ``node-restriction.kubernetes.io/``, which a kubelet cannot set on its own
Node, so a node cannot claim GDS by itself. After a run with labels, exactly the nodes this run
proved carry them."""

from __future__ import annotations

import datetime
import json

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.api_retry import ApiCallFailed

LABEL_MODE = "node-restriction.kubernetes.io/gpudirect.storage.gds-mode"
LABEL_VERIFIED = "node-restriction.kubernetes.io/gpudirect.storage.gds-verified"
ANNOTATION = "gpudirect.storage/gds-probe"
PROVEN_AT = "gpudirect.storage/gds-proven-at"
LABELS, ANNOTATIONS = (LABEL_MODE, LABEL_VERIFIED), (ANNOTATION, PROVEN_AT)
RFC3339_UTC = "%Y-%m-%dT%H:%M:%SZ"


def ours(node):
    """{key: value} of the module's labels and annotations on a Node dict."""
    meta = node.get("metadata") or {}
    out = dict((k, v) for k, v in (meta.get("labels") or {}).items() if k in LABELS)
    out.update((k, v) for k, v in (meta.get("annotations") or {}).items() if k in ANNOTATIONS)
    return out


def desired_labels(record):
    return {LABEL_MODE: record["mode"], LABEL_VERIFIED: "true" if record.get("verified") else "false"}


def _older_than_a_day(proven_at, when):
    try:
        then, now = (datetime.datetime.strptime(t, RFC3339_UTC) for t in (proven_at, when))
    except (TypeError, ValueError):
        return True
    return now - then > datetime.timedelta(days=1)


def label_patch(current, record, when):
    """The merge patch that makes Node ``current`` carry ``record``'s verdict, or None when it does.
    GB/s alone never rewrite a node; ``PROVEN_AT`` is rewritten when the verdict changes and at most
    once a day while it holds, so a same-day re-run changes nothing."""
    have = ours(current)
    want = desired_labels(record)
    if (all(have.get(k) == v for k, v in want.items()) and ANNOTATION in have
            and not _older_than_a_day(have.get(PROVEN_AT), when)):
        return None
    tput = record.get("throughput") or {}
    note = {"mode": record["mode"], "reason": record.get("reason"), "verified": bool(record.get("verified")),
            "proven": bool(record.get("proven")), "write_gbps": tput.get("write_gbps"),
            "read_gbps": tput.get("read_gbps"), "size_mb": tput.get("size_mb"), "time": when}
    return {"metadata": {"labels": want, "annotations": {ANNOTATION: json.dumps(note, sort_keys=True),
                                                         PROVEN_AT: when}}}


def removal_patch(current):
    """The merge patch that removes every label and annotation of the module, or None."""
    have = ours(current)
    if not have:
        return None
    return {"metadata": {"labels": dict((k, None) for k in LABELS if k in have),
                         "annotations": dict((k, None) for k in ANNOTATIONS if k in have)}}


def plan(cluster_nodes, proven, when, undecided=()):
    """({node: patch} to set, {node: patch} to remove) for the Node dicts ``cluster_nodes``:
    ``proven`` maps the names this run proved to their records; ``undecided`` names are left
    alone (in check mode, the selected nodes whose verdict is not known)."""
    to_set, to_remove = {}, {}
    for node in cluster_nodes:
        name = node["metadata"]["name"]
        if name in proven:
            patch = label_patch(node, proven[name], when)
            if patch:
                to_set[name] = patch
        elif name not in undecided:
            patch = removal_patch(node)
            if patch:
                to_remove[name] = patch
    return to_set, to_remove


def diff(cluster_nodes, patches):
    """Ansible's diff of the nodes ``patches`` touch: their labels and annotations before and after."""
    before, after = {}, {}
    for node in cluster_nodes:
        name = node["metadata"]["name"]
        if name not in patches:
            continue
        before[name] = ours(node)
        meta = patches[name]["metadata"]
        changes = dict(meta.get("labels") or {}, **(meta.get("annotations") or {}))
        after[name] = dict((k, v) for k, v in dict(before[name], **changes).items() if v is not None)
    return {"before": before, "after": after}


def apply(api, proven, when, check_mode, undecided=(), errors=None):
    """Label the nodes in ``proven`` and unlabel every other node (but ``undecided``); a refused patch
    goes into ``errors``. Returns (names labelled, names unlabelled, diff)."""
    errors = errors if errors is not None else []
    try:
        cluster = api.nodes("")
    except ApiCallFailed as exc:
        errors.append(str(exc))
        return [], [], {}
    to_set, to_remove = plan(cluster, proven, when, undecided)
    done = {}
    for name, patch in sorted(dict(to_set, **to_remove).items()):
        try:
            if not check_mode:
                api.patch_node(name, patch)
            done[name] = patch
        except ApiCallFailed as exc:
            errors.append(str(exc))
    return sorted(n for n in to_set if n in done), sorted(n for n in to_remove if n in done), diff(cluster, done)
