# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_node_probe, the part that talks to the cluster. PRIVATE to the collection.

One ConfigMap per run, one pod per GPU node (at most ``parallel`` at a time), one LIST of the
run's pods per poll for all of them, each pod's log read and the pod deleted as soon as it is
done, and a ``finally`` that deletes every pod and the ConfigMap of the run, also when the run
fails or is interrupted (SIGTERM/SIGINT become an exception). A later run first removes the
leftovers of runs that could not clean up (killed with SIGKILL, API gone).
"""

from __future__ import annotations

import json
import signal
import threading
import time
import traceback
import uuid
from concurrent.futures import ThreadPoolExecutor

try:
    from kubernetes import client as k8s_client
    from kubernetes.client.exceptions import ApiException
    HAS_KUBERNETES, IMPORT_ERROR = True, None
except ImportError:  # the module reports missing_required_lib
    k8s_client = None
    ApiException = Exception
    HAS_KUBERNETES, IMPORT_ERROR = False, traceback.format_exc()

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import node_probe as np

POLL = 0.5
API_THREADS = 16  # concurrent API calls (pod creates, log reads, deletes): 1000 nodes are not 3000 round trips in a row
MANAGED = "%s=%s" % np.MANAGED_BY


class KubeApi(object):
    """The few calls the probe needs, JSON in and out (``_preload_content=False``: the same with
    the old and the pydantic-generated kubernetes clients)."""

    def __init__(self, api_client):
        self.core = k8s_client.CoreV1Api(api_client)

    @staticmethod
    def _json(resp):
        return json.loads(resp.data or b"null")

    def _items(self, list_call, *args, **kwargs):
        return self._json(list_call(*args, _preload_content=False, _request_timeout=30, **kwargs)).get("items") or []

    @staticmethod
    def _delete(delete_call, *args, **kwargs):
        """True when deleted, False when it was already gone (404)."""
        try:
            delete_call(*args, _preload_content=False, **kwargs)
            return True
        except ApiException as exc:
            if getattr(exc, "status", None) == 404:
                return False
            raise

    def nodes(self, selector):
        return self._items(self.core.list_node, label_selector=selector or None)

    def pods(self, namespace, selector):
        return self._items(self.core.list_namespaced_pod, namespace, label_selector=selector)

    def configmaps(self, namespace, selector):
        return self._items(self.core.list_namespaced_config_map, namespace, label_selector=selector)

    def create_configmap(self, namespace, body):
        return self._json(self.core.create_namespaced_config_map(namespace, body, _preload_content=False))

    def create_pod(self, namespace, body):
        return self._json(self.core.create_namespaced_pod(namespace, body, _preload_content=False))

    def log(self, namespace, name):
        resp = self.core.read_namespaced_pod_log(name, namespace, container="probe", _preload_content=False,
                                                 _request_timeout=30)
        return (resp.data or b"").decode("utf-8", "replace")

    def delete_pod(self, namespace, name):
        return self._delete(self.core.delete_namespaced_pod, name, namespace, grace_period_seconds=0)

    def delete_configmap(self, namespace, name):
        return self._delete(self.core.delete_namespaced_config_map, name, namespace)

    def patch_node(self, name, body):
        return self._json(self.core.patch_node(name, body, _preload_content=False))


class Interrupted(Exception):
    pass


def _interrupt(signum, frame):
    raise Interrupted("interrupted by signal %d" % signum)


def _age(pod, started):
    return time.time() - started.get(pod["metadata"]["name"], time.time())


class NodeProbe(object):
    """Run the probe on ``nodes`` (Node dicts); ``api`` is a :class:`KubeApi` (or a fake)."""

    def __init__(self, api, params, clock=time.time, sleep=time.sleep):
        self.api = api
        self.params = params
        self.ns = params["namespace"]
        self.clock = clock
        self.sleep = sleep
        self.run_id = uuid.uuid4().hex[:8]
        self.created = {"pods": [], "configmaps": []}
        self.deleted = {"pods": 0, "configmaps": 0}
        self.gone = set()
        self.lock = threading.Lock()

    def cleanup_leftovers(self):
        """Delete pods and ConfigMaps of earlier runs that are past their deadline (or carry none)."""
        gone = []
        now = self.clock()
        for kind, items, delete in (("pod", self.api.pods(self.ns, MANAGED), self.api.delete_pod),
                                    ("configmap", self.api.configmaps(self.ns, MANAGED), self.api.delete_configmap)):
            for item in items:
                meta = item["metadata"]
                expires = (meta.get("annotations") or {}).get(np.EXPIRES_ANNOTATION)
                if kind == "configmap" or not expires or float(expires) < now:
                    if kind == "configmap" and any(p for p in self.api.pods(self.ns, "%s=%s" % (
                            np.RUN_LABEL, (meta.get("labels") or {}).get(np.RUN_LABEL))) if not _expired(p, now)):
                        continue  # another run still uses it
                    if delete(self.ns, meta["name"]):
                        gone.append("%s/%s" % (kind, meta["name"]))
        return gone

    def run(self, nodes):
        old = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self._run(nodes)
        finally:
            try:
                self._delete_all()
            finally:
                for s, handler in old.items():
                    signal.signal(s, handler)

    def _run(self, nodes):
        results = {}
        todo = []
        for node in nodes:
            why = np.node_not_ready(node)
            if why:
                results[node["metadata"]["name"]] = np.failed_node(node["metadata"]["name"], "node_not_ready", why)
            else:
                todo.append(node["metadata"]["name"])
        if not todo:
            return results
        expires = self.clock() + self.params["pod_timeout"] + 60
        cm_name = "gds-node-probe-" + self.run_id
        cm = self.api.create_configmap(self.ns, np.configmap(cm_name, self.ns, self.run_id, self.params))
        self.created["configmaps"].append(cm_name)
        started = {}
        pending = list(todo)
        running = {}
        with ThreadPoolExecutor(max_workers=min(API_THREADS, self.params["parallel"])) as pool:
            while pending or running:
                batch = []
                while pending and len(running) + len(batch) < self.params["parallel"]:
                    batch.append(np.pod_spec(pending.pop(0), self.run_id, self.params, cm_name, cm["metadata"]["uid"],
                                             expires))
                for body in batch:  # recorded first: a create that fails half-way is still cleaned up
                    self.created["pods"].append(body["metadata"]["name"])
                list(pool.map(lambda body: self.api.create_pod(self.ns, body), batch))
                for body in batch:
                    started[body["metadata"]["name"]] = self.clock()
                    running[body["metadata"]["name"]] = body["metadata"]["annotations"][np.NODE_ANNOTATION]
                self.sleep(POLL)
                selector = "%s=%s" % (np.RUN_LABEL, self.run_id)
                by_name = dict((p["metadata"]["name"], p) for p in self.api.pods(self.ns, selector))
                due = [(pod, node, by_name.get(pod), self.clock() - started[pod]) for pod, node in running.items()]
                for (pod, node, _o, _a), result in zip(due, pool.map(lambda args: self._check(*args), due)):
                    if result is not None:
                        results[node] = result
                        del running[pod]
        return results

    def _check(self, pod, node, obj, age):
        """The node's result once its pod is done (the log read, the pod deleted), else None."""
        result = self._result(pod, node, obj, age)
        if result is not None and obj is not None:
            deleted = self.api.delete_pod(self.ns, pod)
            with self.lock:
                self.deleted["pods"] += 1 if deleted else 0
                self.gone.add(pod)
        return result

    def _result(self, pod, node, obj, age):
        if obj is None:
            return np.failed_node(node, "pod_gone", "the probe pod disappeared before it finished", pod)
        state, failure = np.classify(obj, age, self.params["schedule_timeout"])
        if state == "wait":
            if age < self.params["pod_timeout"] + 10:
                return None
            failure = np.still_waiting(obj, age)
        text = self.api.log(self.ns, pod) if _started(obj) else ""
        facts, image_problem = np.parse_log(text)
        if image_problem:
            return np.failed_node(node, "image", "image %s: %s - %s" % (self.params["image"], image_problem,
                                                                        np.IMAGE_HELP), pod)
        if state == "done":
            if facts is None:
                return np.failed_node(node, "no_result", "the probe printed no facts; log tail: " + np.log_tail(text), pod)
            return np.node_from_facts(node, facts, pod)
        kind, message = failure
        tail = np.log_tail(text)
        return np.failed_node(node, kind, message + ("; log tail: " + tail if tail and kind != "image_pull" else ""), pod)

    def _delete_all(self):
        for pod in [p for p in self.created["pods"] if p not in self.gone]:
            try:
                if self.api.delete_pod(self.ns, pod):
                    self.deleted["pods"] += 1
            except Exception:  # pylint: disable=broad-except
                pass  # the ConfigMap's deletion still lets the garbage collector take the pod
        for name in self.created["configmaps"]:
            if self.api.delete_configmap(self.ns, name):
                self.deleted["configmaps"] += 1


def _expired(pod, now):
    expires = ((pod.get("metadata") or {}).get("annotations") or {}).get(np.EXPIRES_ANNOTATION)
    return not expires or float(expires) < now


def _started(pod):
    ctr = next(iter((pod.get("status") or {}).get("containerStatuses") or []), {})
    state = ctr.get("state") or {}
    return bool(state.get("running") or state.get("terminated") or ctr.get("lastState", {}).get("terminated"))


def apply_labels(api, nodes_by_name, results, check_mode, when):
    """Patch each node whose labels differ from its verdict; returns the names changed."""
    changed = []
    for name, result in sorted(results.items()):
        patch = np.label_patch(nodes_by_name.get(name) or {}, result, when)
        if patch is None:
            continue
        changed.append(name)
        if not check_mode:
            api.patch_node(name, patch)
    return changed


def argument_spec():
    return dict(
        kubeconfig=dict(type="path"), context=dict(type="str", aliases=["kube_context"]),
        namespace=dict(type="str", default="gpu-operator"),
        node_selector=dict(type="str", default="nvidia.com/gpu.present=true"),
        nodes=dict(type="list", elements="str"),
        image=dict(type="str", default="nvcr.io/nvidia/pytorch:25.12-py3"),
        image_pull_policy=dict(type="str", choices=["Always", "IfNotPresent", "Never"], default="IfNotPresent"),
        image_pull_secrets=dict(type="list", elements="str", default=[], no_log=False),
        probe_path=dict(type="list", elements="path", default=["/var/tmp"]),
        probe_size_mb=dict(type="int", default=64), probe_threads=dict(type="int", default=0),
        probe_timeout=dict(type="int", default=60), cufile_lib=dict(type="path"),
        cufile_json=dict(type="str", default="/etc/cufile.json"),
        gpu_resource=dict(type="str", default="nvidia.com/gpu"), runtime_class=dict(type="str"),
        memory=dict(type="str", default="2Gi"), privileged=dict(type="bool", default=False),
        tolerations=dict(type="list", elements="dict", default=[]),
        parallel=dict(type="int", default=32), pod_timeout=dict(type="int", default=300),
        schedule_timeout=dict(type="int", default=60),
        require_mode=dict(type="str", choices=["gds", "p2pdma", "compat"]),
        require_proven=dict(type="bool", default=True),
        labels=dict(type="bool", default=False),
    )


def summarize(nodes, required):
    by_mode = dict((m, 0) for m in ("gds", "p2pdma", "compat", "unavailable", "failed"))
    for node in nodes:
        by_mode[node["mode"]] = by_mode.get(node["mode"], 0) + 1
    return {"nodes": len(nodes), "by_mode": by_mode, "require_mode": required,
            "probe_failed": [n["name"] for n in nodes if n.get("failure")],
            "below_required": [n["name"] for n in nodes if (n.get("require_mode") or {}).get("met") is False]}


def run(params, check_mode, api=None, clock=time.time):
    """(failure message or None, result dict) of one module run."""
    from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import wait as kw
    problem = np.check_params(params)
    if problem:
        return problem, {"changed": False, "nodes": []}
    api = api or KubeApi(kw.api_client(params.get("kubeconfig"), params.get("context")))
    all_nodes = api.nodes(params["node_selector"])
    if params.get("nodes"):
        unknown = sorted(set(params["nodes"]) - set(n["metadata"]["name"] for n in all_nodes))
        if unknown:
            return "nodes not found among those matching %r: %s" % (params["node_selector"], ", ".join(unknown)), \
                {"changed": False, "nodes": []}
        all_nodes = [n for n in all_nodes if n["metadata"]["name"] in params["nodes"]]
    names = sorted(n["metadata"]["name"] for n in all_nodes)
    result = {"changed": False, "nodes": [], "labels_changed": [], "cleaned_leftovers": [], "summary": {}}
    if not all_nodes:
        result["summary"] = summarize([], params.get("require_mode"))
        return "no node matches node_selector %r: nothing to probe (is the GPU Operator running?)" % (
            params["node_selector"]), result
    if check_mode:
        result["msg"] = "check mode: would probe %d node(s): %s" % (len(names), ", ".join(names))
        result["summary"] = summarize([], params.get("require_mode"))
        return None, result
    probe = NodeProbe(api, params, clock=clock)
    result["run_id"] = probe.run_id
    result["cleaned_leftovers"] = probe.cleanup_leftovers()
    try:
        by_node = probe.run(all_nodes)
    finally:
        result["deleted"] = dict(probe.deleted)
    nodes = [by_node[n] for n in names]
    required = params.get("require_mode")
    below = []
    for node in nodes:
        if required:
            unmet = np.requirement_problem(node, required, params.get("require_proven"))
            node["require_mode"] = {"mode": required, "met": unmet is None}
            if unmet:
                below.append("%s: %s" % (node["name"], unmet))
    if params["labels"]:
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(clock()))
        fresh = dict((n["metadata"]["name"], n) for n in api.nodes(params["node_selector"]))
        result["labels_changed"] = apply_labels(api, fresh, dict((n["name"], n) for n in nodes), check_mode, when)
        result["changed"] = bool(result["labels_changed"])
    result["nodes"] = nodes
    result["summary"] = summarize(nodes, required)
    result["msg"] = "; ".join("%s: %s%s" % (n["name"], n["mode"], " (%s)" % n["reason"] if n["mode"] != "gds" else "")
                              for n in nodes)
    failed = ["%s: %s" % (n["name"], n["reason"]) for n in nodes if n.get("failure")]
    image = [n for n in nodes if (n.get("failure") or {}).get("kind") == "image"]
    if image:
        return image[0]["failure"]["message"] + " (nodes: %s)" % ", ".join(n["name"] for n in image), result
    if failed or below:
        parts = []
        if failed:
            parts.append("the probe pod could not give a verdict on %d node(s): %s" % (len(failed), " | ".join(failed)))
        if below:
            parts.append("%d node(s) below require_mode=%s: %s" % (len(below), required, " | ".join(below)))
        return "; ".join(parts), result
    return None, result
