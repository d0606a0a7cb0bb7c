# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Is GDS really up? ClusterPolicy and nvidia-fs-ctr readiness with the kubernetes client.
PRIVATE to the collection.

helm's own ``--wait`` (3 and 4) returns while the ClusterPolicy is still ``notReady`` and
before any nvidia-fs pod exists: the operator creates the driver DaemonSet after helm is
done. Ready here means: ``ClusterPolicy.status.state == ready`` AND on every GPU node
(label ``nvidia.com/gpu.present=true``) a driver pod whose ``nvidia-fs-ctr`` (and
``nvidia-peermem-ctr`` when RDMA is on) is ready and runs the image the ClusterPolicy asks
for. :func:`evaluate` decides that from plain API JSON; :class:`Waiter` feeds it from list +
watch, bounded by a deadline. Objects are handled as JSON dicts (``_preload_content=False``),
never as the client's strict models.
"""

from __future__ import annotations

import json
import os
import queue
import threading
import time
import traceback

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
    from kubernetes.client.exceptions import ApiException
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    ApiException = Exception

GPU_LABEL = "nvidia.com/gpu.present"
DRIVER_APP = "nvidia-driver-daemonset"
OS_ID_LABEL = "feature.node.kubernetes.io/system-os_release.ID"
OS_VERSION_LABEL = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
NVIDIA_FS = "nvidia-fs-ctr"
PEERMEM = "nvidia-peermem-ctr"
RELIST_SECONDS = 5.0


# --- pure evaluation -------------------------------------------------------------------------
def _labels(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def node_os(node):
    labels = _labels(node)
    return {"id": labels.get(OS_ID_LABEL), "version_id": labels.get(OS_VERSION_LABEL)}


def os_text(os_info):
    if not os_info.get("id"):
        return "unknown"
    return ("%s %s" % (os_info["id"], os_info.get("version_id") or "")).strip()


def gpu_nodes(nodes):
    return sorted((n for n in nodes or [] if _labels(n).get(GPU_LABEL) == "true"),
                  key=lambda n: n["metadata"]["name"])


def pick_policy(policies):
    """The ClusterPolicy the operator acts on: one not marked ``ignored`` (else the first)."""
    ordered = sorted(policies or [], key=lambda p: p["metadata"]["name"])
    for policy in ordered:
        if ((policy.get("status") or {}).get("state")) != "ignored":
            return policy
    return ordered[0] if ordered else None


def required_containers(policy):
    spec = (policy or {}).get("spec") or {}
    wanted = []
    if (spec.get("gds") or {}).get("enabled"):
        wanted.append(NVIDIA_FS)
    if ((spec.get("driver") or {}).get("rdma") or {}).get("enabled"):
        wanted.append(PEERMEM)
    return wanted


def expected_nvidia_fs_image(policy):
    """'<repository>/<image>:<version>' from the ClusterPolicy (the operator appends -<os>)."""
    gds = ((policy or {}).get("spec") or {}).get("gds") or {}
    if not gds.get("version") or not gds.get("image"):
        return None
    repo = gds.get("repository")
    image = "%s/%s" % (repo.rstrip("/"), gds["image"]) if repo else gds["image"]
    return "%s:%s" % (image, gds["version"])


def container_report(pod, name):
    spec = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == name), None)
    status = next((s for s in (pod.get("status") or {}).get("containerStatuses") or [] if s.get("name") == name), None)
    report = {"name": name, "present": spec is not None, "ready": bool(status and status.get("ready")),
              "image": (spec or {}).get("image", ""), "restart_count": (status or {}).get("restartCount", 0),
              "state": "missing" if spec is None else "pending", "reason": "", "message": ""}
    state = (status or {}).get("state") or {}
    for key in ("running", "waiting", "terminated"):
        if key in state:
            report["state"] = key
            report["reason"] = state[key].get("reason", "") or ""
            report["message"] = state[key].get("message", "") or ""
    last = ((status or {}).get("lastState") or {}).get("terminated")
    if last:
        report["last_termination"] = {"reason": last.get("reason", ""), "message": (last.get("message") or "").strip(),
                                      "exit_code": last.get("exitCode")}
    return report


def _image_ok(report, expected):
    if not expected or report["name"] != NVIDIA_FS:
        return True
    image = report["image"]
    return image == expected or image.startswith(expected + "-")


def _pod_report(pod, wanted, expected):
    containers = [container_report(pod, name) for name in wanted]
    for report in containers:
        report["image_ok"] = _image_ok(report, expected)
    ok = all(r["present"] and r["ready"] and r["image_ok"] for r in containers)
    return {"pod": pod["metadata"]["name"], "ready": ok, "containers": containers}


def _problem(node, report, expected):
    if report is None:
        return "%s: no %s pod yet" % (node, DRIVER_APP)
    parts = []
    for ctr in report["containers"]:
        if not ctr["present"]:
            parts.append("%s missing from pod %s" % (ctr["name"], report["pod"]))
        elif not ctr["ready"]:
            text = "%s not ready (%s%s" % (ctr["name"], ctr["state"], ": " + ctr["reason"] if ctr["reason"] else "")
            last = ctr.get("last_termination")
            if last:
                text += "; last termination: %s" % (last.get("reason") or "?")
                if last.get("exit_code") is not None:
                    text += " (exit %s)" % last["exit_code"]
                if last.get("message"):
                    text += ": %s" % last["message"]
            if ctr["restart_count"]:
                text += "; restarts: %d" % ctr["restart_count"]
            parts.append(text + ")")
        elif not ctr["image_ok"]:
            parts.append("%s runs %s, ClusterPolicy wants %s (not rolled out yet)" % (ctr["name"], ctr["image"], expected))
    return "%s: %s" % (node, "; ".join(parts))


def evaluate(policies, nodes, pods):
    """Readiness of GDS from API JSON. Returns {ready, cluster_policy, nodes, problems}."""
    policy = pick_policy(policies)
    problems = []
    if policy is None:
        cp_report = {}
        problems.append("no ClusterPolicy exists yet")
    else:
        status = policy.get("status") or {}
        cp_report = {"name": policy["metadata"]["name"], "state": status.get("state") or "",
                     "conditions": [{k: c.get(k, "") for k in ("type", "status", "reason", "message")}
                                    for c in status.get("conditions") or []]}
        if cp_report["state"] != "ready":
            problems.append("ClusterPolicy %s state is %s" % (cp_report["name"], cp_report["state"] or "not set yet"))
    wanted = required_containers(policy)
    expected = expected_nvidia_fs_image(policy)
    driver_pods = [p for p in pods or [] if _labels(p).get("app") == DRIVER_APP
                   and not (p.get("metadata") or {}).get("deletionTimestamp")]
    node_reports = []
    for node in gpu_nodes(nodes):
        name = node["metadata"]["name"]
        on_node = sorted((p for p in driver_pods if (p.get("spec") or {}).get("nodeName") == name),
                         key=lambda p: p["metadata"].get("creationTimestamp") or "", reverse=True)
        reports = [_pod_report(p, wanted, expected) for p in on_node]
        best = next((r for r in reports if r["ready"]), reports[0] if reports else None)
        ready = best is not None and best["ready"] if wanted else True
        gds_ready = bool(best) and any(c["name"] == NVIDIA_FS and c["ready"] and c["image_ok"]
                                       for c in best["containers"])
        node_reports.append({"name": name, "os": os_text(node_os(node)), "ready": ready, "gds_ready": gds_ready,
                             "pod": best["pod"] if best else "", "containers": best["containers"] if best else []})
        if wanted and not ready:
            problems.append(_problem(name, best, expected))
    return {"ready": not problems, "cluster_policy": cp_report, "nodes": node_reports, "problems": problems}


def failure_message(evaluation, timeout):
    return "GDS not ready after %ds: %s" % (timeout, "; ".join(evaluation["problems"]) or "unknown")


# --- I/O: list + watch -----------------------------------------------------------------------
def api_client(kubeconfig=None, context=None):
    """A kubernetes ApiClient from a kubeconfig path / $KUBECONFIG / ~/.kube/config, or in-cluster."""
    if kubeconfig or os.environ.get("KUBECONFIG") or os.path.exists(os.path.expanduser("~/.kube/config")):
        return k8s_config.new_client_from_config(config_file=kubeconfig, context=context, persist_config=False)
    k8s_config.load_incluster_config()
    return k8s_client.ApiClient()


class KubeSource(object):
    """Lists and watches of the three resources the wait needs, as JSON dicts.

    Uses the typed API methods with ``_preload_content=False`` (raw urllib3 responses), which
    behave the same in the old (<= 33) and the pydantic-generated (>= 34) kubernetes clients.
    """

    def __init__(self, client, namespace):
        core = k8s_client.CoreV1Api(client)
        custom = k8s_client.CustomObjectsApi(client)
        self.calls = {
            "clusterpolicies": lambda **kw: custom.list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", **kw),
            "nodes": lambda **kw: core.list_node(label_selector=GPU_LABEL + "=true", **kw),
            "pods": lambda **kw: core.list_namespaced_pod(namespace, label_selector="app=" + DRIVER_APP, **kw),
        }

    def list(self, kind):
        """(items, resourceVersion); a missing ClusterPolicy CRD lists as empty."""
        try:
            resp = self.calls[kind](_preload_content=False, _request_timeout=30)
        except ApiException as exc:
            if getattr(exc, "status", None) == 404 and kind == "clusterpolicies":
                return [], None
            raise
        data = json.loads(resp.data)
        return data.get("items") or [], (data.get("metadata") or {}).get("resourceVersion")

    def watch(self, kind, resource_version, timeout):
        """Yield (type, object) until the server ends the watch after ``timeout`` seconds."""
        kwargs = {"watch": True, "timeout_seconds": max(1, int(timeout)), "allow_watch_bookmarks": True,
                  "_preload_content": False, "_request_timeout": (10, int(timeout) + 10)}
        if resource_version:
            kwargs["resource_version"] = resource_version
        resp = self.calls[kind](**kwargs)
        buffer = b""
        try:
            for chunk in resp.stream(4096, decode_content=False):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        event = json.loads(line)
                        yield event.get("type"), event.get("object") or {}
        finally:
            resp.release_conn()


class Waiter(object):
    """Evaluate, then re-evaluate on every watch event until ready or the deadline.

    ``source`` has ``list(kind) -> (items, rv)`` and ``watch(kind, rv, timeout)``; the
    kubernetes-backed one is :class:`KubeSource`, tests pass fakes.
    """

    KINDS = ("clusterpolicies", "nodes", "pods")

    def __init__(self, source, clock=time.monotonic, relist=RELIST_SECONDS):
        self.source = source
        self.clock = clock
        self.relist = relist
        self.rvs = {}

    def snapshot(self):
        lists = {}
        for kind in self.KINDS:
            lists[kind], self.rvs[kind] = self.source.list(kind)
        return evaluate(lists["clusterpolicies"], lists["nodes"], lists["pods"])

    def _watch_loop(self, kind, changes, stop, deadline):
        while not stop.is_set():
            remaining = deadline - self.clock()
            if remaining <= 0:
                return
            try:
                for etype, obj in self.source.watch(kind, self.rvs.get(kind), remaining):
                    if stop.is_set():
                        return
                    if etype == "ERROR":  # e.g. 410 Gone: start over from the next list
                        self.rvs[kind] = None
                        break
                    self.rvs[kind] = (obj.get("metadata") or {}).get("resourceVersion") or self.rvs.get(kind)
                    if etype != "BOOKMARK":
                        changes.put(kind)
                stop.wait(0.1)  # the server ended the watch: reconnect, without spinning
            except Exception:  # a broken watch is retried; the periodic re-list covers the gap
                stop.wait(0.5)

    def wait(self, timeout):
        """Return the last evaluation (``ready`` False when the deadline passed)."""
        deadline = self.clock() + timeout
        evaluation = self.snapshot()
        if evaluation["ready"]:
            return evaluation
        changes, stop = queue.Queue(), threading.Event()
        for kind in self.KINDS:
            thread = threading.Thread(target=self._watch_loop, args=(kind, changes, stop, deadline), daemon=True)
            thread.start()
        try:
            while True:
                remaining = deadline - self.clock()
                if remaining <= 0:
                    return evaluation
                try:
                    changes.get(timeout=min(remaining, self.relist))
                except queue.Empty:
                    pass
                while not changes.empty():
                    changes.get_nowait()
                evaluation = self.snapshot()
                if evaluation["ready"]:
                    return evaluation
        finally:
            stop.set()
