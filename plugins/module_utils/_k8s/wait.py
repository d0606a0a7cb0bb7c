# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Is GDS really up? ClusterPolicy and nvidia-fs-ctr readiness with the kubernetes client.
PRIVATE to the collection.

helm's own ``--wait`` (3 and 4) returns while the ClusterPolicy is still ``notReady`` and
before any nvidia-fs pod exists: the operator creates the driver DaemonSet after helm is
done. Ready here means: ``ClusterPolicy.status.state == ready`` (and not merely because
it found no GPU node: reasons ``NoGPUNodes`` / ``NFDLabelsMissing``) AND at least one GPU node
AND on every GPU node a driver pod whose ``nvidia-fs-ctr`` (and ``nvidia-peermem-ctr`` when
RDMA is on) is ready and runs the image the ClusterPolicy (or NVIDIADriver) asks for.

GPU nodes: the operator itself labels ``nvidia.com/gpu.present=true`` on nodes whose NFD labels
show an NVIDIA PCI device, so on a fresh cluster the wait first waits for those labels; a node
with such a PCI label but no GPU label yet is waited for too, and an optional expectation
(a count, a node selector) says which nodes must become GPU nodes. Driver pods are found by
``app.kubernetes.io/component=nvidia-driver``, which every deployment mode sets (ClusterPolicy
``nvidia-driver-daemonset``, NVIDIADriver ``nvidia-gpu-driver-<os>-<hash>``, OpenShift
``nvidia-driver-daemonset-<rhcos>``).

:func:`evaluate` decides that from plain API JSON; :class:`Waiter` feeds it from list +
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
DRIVER_COMPONENT = "app.kubernetes.io/component"
DRIVER_SELECTOR = DRIVER_COMPONENT + "=nvidia-driver"
NFD_PREFIX = "feature.node.kubernetes.io/"
# what the operator labels GPU nodes from (gpu-operator controllers/state_manager.go gpuNodeLabels)
NVIDIA_PCI_LABELS = (NFD_PREFIX + "pci-10de.present", NFD_PREFIX + "pci-0302_10de.present",
                     NFD_PREFIX + "pci-0300_10de.present")
NO_GPU_REASONS = ("NoGPUNodes", "NFDLabelsMissing")
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


def has_nvidia_pci(node):
    return any(_labels(node).get(key) == "true" for key in NVIDIA_PCI_LABELS)


def gpu_candidates(nodes):
    """Nodes that are or will be GPU nodes: labelled by the operator, or with an NVIDIA PCI
    device in their NFD labels (the operator labels those)."""
    return sorted((n for n in nodes or [] if _labels(n).get(GPU_LABEL) == "true" or has_nvidia_pci(n)),
                  key=lambda n: n["metadata"]["name"])


def parse_selector(text):
    """'a=b,c!=d,e,!f' -> [(key, op, value)]; ValueError on anything else (set-based
    selectors are not supported)."""
    reqs = []
    for part in [p.strip() for p in (text or "").split(",") if p.strip()]:
        if "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append((key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            reqs.append((key.strip(), "=", value.strip()))
        elif part.startswith("!"):
            reqs.append((part[1:].strip(), "!", None))
        else:
            reqs.append((part, "exists", None))
        if not reqs[-1][0] or " " in reqs[-1][0] or "(" in part:
            raise ValueError("cannot parse label selector %r (use key=value, key!=value, key or !key)" % text)
    return reqs


def selector_matches(labels, reqs):
    for key, op, value in reqs:
        if (op == "=" and labels.get(key) != value) or (op == "!=" and labels.get(key) == value) or \
                (op == "exists" and key not in labels) or (op == "!" and key in labels):
            return False
    return True


def pick_policy(policies):
    """The ClusterPolicy the operator acts on: one not marked ``ignored`` (else the first)."""
    ordered = sorted(policies or [], key=lambda p: p["metadata"]["name"])
    for policy in ordered:
        if ((policy.get("status") or {}).get("state")) != "ignored":
            return policy
    return ordered[0] if ordered else None


def driver_crd_mode(policy):
    return bool((((policy or {}).get("spec") or {}).get("driver") or {}).get("useNvidiaDriverCRD"))


def _driver_specs(policy, drivers):
    """The specs that carry gds/rdma: the ClusterPolicy's, or in NVIDIADriver mode every
    NVIDIADriver CR's (one per node pool)."""
    if driver_crd_mode(policy):
        return [d.get("spec") or {} for d in drivers or []]
    spec = (policy or {}).get("spec") or {}
    return [{"gds": spec.get("gds") or {}, "rdma": (spec.get("driver") or {}).get("rdma") or {}}]


def required_containers(policy, drivers=None):
    wanted = []
    specs = _driver_specs(policy, drivers)
    if any((s.get("gds") or {}).get("enabled") for s in specs):
        wanted.append(NVIDIA_FS)
    if any((s.get("rdma") or {}).get("enabled") for s in specs):
        wanted.append(PEERMEM)
    return wanted


def _image_of(gds):
    if not gds.get("version") or not gds.get("image"):
        return None
    repo = gds.get("repository")
    image = "%s/%s" % (repo.rstrip("/"), gds["image"]) if repo else gds["image"]
    return "%s:%s" % (image, gds["version"])


def expected_nvidia_fs_images(policy, drivers=None):
    """['<repository>/<image>:<version>'] asked for (the operator appends -<os>); in
    NVIDIADriver mode one per CR that sets them."""
    images = [_image_of(s.get("gds") or {}) for s in _driver_specs(policy, drivers)]
    return sorted(set(i for i in images if i))


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
    """``expected``: one image or a list of acceptable ones (NVIDIADriver pools)."""
    if not expected or report["name"] != NVIDIA_FS:
        return True
    image = report["image"]
    return any(image == want or image.startswith(want + "-")
               for want in ([expected] if isinstance(expected, str) else expected))


def _pod_report(pod, wanted, expected):
    containers = [container_report(pod, name) for name in wanted]
    for report in containers:
        report["image_ok"] = _image_ok(report, expected)
    ok = all(r["present"] and r["ready"] and r["image_ok"] for r in containers)
    return {"pod": pod["metadata"]["name"], "ready": ok, "containers": containers}


def _problem(node, report, expected):
    if report is None:
        return "%s: no driver pod (%s) yet" % (node, DRIVER_SELECTOR)
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
            wants = expected if isinstance(expected, str) else " or ".join(expected)
            parts.append("%s runs %s, ClusterPolicy wants %s (not rolled out yet)" % (ctr["name"], ctr["image"], wants))
    return "%s: %s" % (node, "; ".join(parts))


def _no_gpu_node_problem(nodes, cp_reason):
    """Why no node is labelled nvidia.com/gpu.present=true, from the NFD labels."""
    text = "no GPU node: no node is labelled %s=true" % GPU_LABEL
    if not any(key.startswith(NFD_PREFIX) for n in nodes or [] for key in _labels(n)):
        text += (" and no node has Node Feature Discovery labels (%s*): NFD is missing (the chart deploys it "
                 "with nfd.enabled: true)" % NFD_PREFIX)
    elif not any(has_nvidia_pci(n) for n in nodes or []):
        text += " and no node has an NVIDIA PCI device (NFD label %s=true)" % NVIDIA_PCI_LABELS[0]
    if cp_reason in NO_GPU_REASONS:
        text += "; ClusterPolicy reports %s" % cp_reason
    return text


def _expectation_problems(nodes, gpu_names, expect):
    problems, extra = [], []
    count, reqs = (expect or {}).get("count"), (expect or {}).get("selector")
    if count and len(gpu_names) < count:
        problems.append("%d of %d expected GPU nodes labelled %s=true" % (len(gpu_names), count, GPU_LABEL))
    for node in nodes or []:
        name = node["metadata"]["name"]
        if reqs and selector_matches(_labels(node), reqs) and name not in gpu_names:
            extra.append(node)
            problems.append("%s: selected by gpu_node_selector but not labelled %s=true" % (name, GPU_LABEL))
    return problems, extra


def evaluate(policies, nodes, pods, drivers=None, expect=None):
    """Readiness of GDS from API JSON. Returns {ready, cluster_policy, nodes, problems}.

    ``nodes``: all nodes (not only GPU nodes); ``drivers``: NVIDIADriver CRs; ``expect``:
    {count: int, selector: parse_selector() output} or None.
    """
    policy = pick_policy(policies)
    problems = []
    cp_reason = ""
    wanted = required_containers(policy, drivers)
    if policy is None:
        cp_report = {}
        problems.append("no ClusterPolicy exists yet")
    else:
        status = policy.get("status") or {}
        cp_report = {"name": policy["metadata"]["name"], "state": status.get("state") or "",
                     "conditions": [{k: c.get(k, "") for k in ("type", "status", "reason", "message")}
                                    for c in status.get("conditions") or []]}
        cp_reason = next((c["reason"] for c in cp_report["conditions"] if c["type"] == "Ready"), "")
        if cp_report["state"] != "ready":
            problems.append("ClusterPolicy %s state is %s" % (cp_report["name"], cp_report["state"] or "not set yet"))
    expected = expected_nvidia_fs_images(policy, drivers)
    driver_pods = [p for p in pods or [] if _labels(p).get(DRIVER_COMPONENT) == "nvidia-driver"
                   and not (p.get("metadata") or {}).get("deletionTimestamp")]
    labelled = gpu_nodes(nodes)
    gpu_names = {n["metadata"]["name"] for n in labelled}
    node_reports = []
    if wanted or policy is None:
        if not labelled:
            problems.append(_no_gpu_node_problem(nodes, cp_reason))
        elif policy is not None and cp_report["state"] == "ready" and cp_reason in NO_GPU_REASONS:
            problems.append("ClusterPolicy %s still reports %s" % (cp_report["name"], cp_reason))
        expectation, selected = _expectation_problems(nodes, gpu_names, expect)
        problems.extend(expectation)
        waiting = {n["metadata"]["name"]: n for n in gpu_candidates(nodes) + selected if n["metadata"]["name"]
                   not in gpu_names}
        for name in sorted(waiting):
            node_reports.append({"name": name, "os": os_text(node_os(waiting[name])), "gpu_labelled": False,
                                 "ready": False, "gds_ready": False, "pod": "", "containers": []})
            if has_nvidia_pci(waiting[name]):
                problems.append("%s: NVIDIA PCI device (NFD) but not labelled %s=true by the operator yet"
                                % (name, GPU_LABEL))
    for node in labelled:
        name = node["metadata"]["name"]
        on_node = sorted((p for p in driver_pods if (p.get("spec") or {}).get("nodeName") == name),
                         key=lambda p: p["metadata"].get("creationTimestamp") or "", reverse=True)
        reports = [_pod_report(p, wanted, expected) for p in on_node]
        best = next((r for r in reports if r["ready"]), reports[0] if reports else None)
        ready = (best is not None and best["ready"] if wanted else True) and policy is not None
        gds_ready = bool(best) and any(c["name"] == NVIDIA_FS and c["ready"] and c["image_ok"]
                                       for c in best["containers"])
        node_reports.append({"name": name, "os": os_text(node_os(node)), "gpu_labelled": True, "ready": ready,
                             "gds_ready": gds_ready, "pod": best["pod"] if best else "",
                             "containers": best["containers"] if best else []})
        if wanted and not (best is not None and best["ready"]):
            problems.append(_problem(name, best, expected))
    node_reports.sort(key=lambda r: r["name"])
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
            "nvidiadrivers": lambda **kw: custom.list_cluster_custom_object("nvidia.com", "v1alpha1", "nvidiadrivers",
                                                                            **kw),
            "nodes": core.list_node,  # all nodes: the unlabelled ones explain a wait
            "pods": lambda **kw: core.list_namespaced_pod(namespace, label_selector=DRIVER_SELECTOR, **kw),
        }

    def list(self, kind):
        """(items, resourceVersion); a missing ClusterPolicy / NVIDIADriver CRD lists as empty."""
        try:
            resp = self.calls[kind](_preload_content=False, _request_timeout=30)
        except ApiException as exc:
            if getattr(exc, "status", None) == 404 and kind in ("clusterpolicies", "nvidiadrivers"):
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

    KINDS = ("clusterpolicies", "nvidiadrivers", "nodes", "pods")

    def __init__(self, source, clock=time.monotonic, relist=RELIST_SECONDS, expect=None):
        self.source = source
        self.clock = clock
        self.relist = relist
        self.expect = expect
        self.rvs = {}

    def snapshot(self):
        lists = {}
        for kind in self.KINDS:
            lists[kind], self.rvs[kind] = self.source.list(kind)
        return evaluate(lists["clusterpolicies"], lists["nodes"], lists["pods"], lists["nvidiadrivers"], self.expect)

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
