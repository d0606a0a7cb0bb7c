# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a failed helm run costs and leaves (time kept to undo it, CRDs and namespace left, helm's
error text). Pure functions. PRIVATE to the collection."""

from __future__ import annotations

import math


def undo_reserve(timeout, slowest=0.0):
    """Seconds of ``wait_timeout`` kept for helm's apply and for undoing a failed change (applied
    without ``--wait``, so it cannot time out and leave the release ``failed``): eight times the
    slowest read-only helm call, at least 3 s and a fifth (at most 60 s), at most two thirds."""
    return min(timeout * 2 // 3, max(3, min(60, timeout // 5), int(math.ceil(8 * slowest))))


def leftovers(before, after, namespace):
    """What a failed first install left: {crds: [new CRD names], namespace: name or None}, from
    (CRD names, namespace exists) before helm ran and after the undo; None when unknown."""
    if before is None or after is None:
        return None
    return {"crds": sorted(after[0] - before[0]), "namespace": namespace if after[1] and not before[1] else None}


def leftovers_text(left):
    """'; left in the cluster: ...' and how to remove it ('' when nothing is left)."""
    if not left or not (left["crds"] or left["namespace"]):
        return ""
    parts = (["namespace %s" % left["namespace"]] if left["namespace"] else []) + \
        (["CRDs %s" % ", ".join(left["crds"])] if left["crds"] else [])
    commands = (["kubectl delete crd %s" % " ".join(left["crds"])] if left["crds"] else []) + \
        (["kubectl delete namespace %s" % left["namespace"]] if left["namespace"] else [])
    return ("; left in the cluster: %s (helm applies a chart's CRDs first and never removes them). A re-run uses "
            "them as they are; to remove them: %s (deleting a CRD deletes every object of its kind)"
            % (" and ".join(parts), "; ".join(commands)))


def error_text(text):
    """helm's error output for a message: helm 4's structured log lines (``level=WARN msg=...``)
    dropped, a line repeated verbatim kept once."""
    lines = []
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("level=") and line not in lines:
            lines.append(line)
    return "\n".join(lines)
