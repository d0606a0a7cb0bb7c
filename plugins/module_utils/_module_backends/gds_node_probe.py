# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_node_probe, the part that talks to the cluster. PRIVATE to the collection.

One immutable ConfigMap per run, one pod per node (at most ``parallel`` at a time), one LIST per
poll; a ``finally`` deletes every pod and the ConfigMap of the run, also on SIGTERM/SIGINT, and a
later run removes the leftovers of a run that could not clean up."""

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
    from urllib3.exceptions import HTTPError
    HAS_KUBERNETES, IMPORT_ERROR = True, None
    API_ERRORS = (ApiException, HTTPError, OSError)
except ImportError:  # the module reports missing_required_lib
    k8s_client = None
    ApiException = Exception
    HAS_KUBERNETES, IMPORT_ERROR = False, traceback.format_exc()
    API_ERRORS = ()

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import auth, node_labels as nl, node_probe as np
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import wait as kw
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.api_retry import ApiCallFailed

POLL = 0.5
API_THREADS = 16  # concurrent API calls (pod creates, log reads, deletes): 1000 nodes are not 3000 round trips in a row
MANAGED = "%s=%s" % np.MANAGED_BY


class KubeApi(object):
    """The few calls the probe needs, JSON in and out; every failure is an ApiCallFailed."""

    def __init__(self, api_client):
        self.core = k8s_client.CoreV1Api(api_client)

    @staticmethod
    def _call(verb, resource, func, *args, **kwargs):
        try:
            resp = func(*args, _preload_content=False, **kwargs)
        except API_ERRORS as exc:
            raise ApiCallFailed(verb, resource, exc)
        data = getattr(resp, "data", None) or b""
        return data.decode("utf-8", "replace") if verb == "get" else json.loads(data or b"null")

    def _items(self, resource, list_call, *args, **kwargs):
        return (self._call("list", resource, list_call, *args, _request_timeout=30, **kwargs) or {}).get("items") or []

    def _delete(self, resource, delete_call, *args, **kwargs):
        """True when deleted, False when it was already gone (404)."""
        try:
            self._call("delete", resource, delete_call, *args, **kwargs)
            return True
        except ApiCallFailed as exc:
            if exc.status == 404:
                return False
            raise

    def nodes(self, selector=None):
        return self._items("nodes", self.core.list_node, label_selector=selector or None)

    def pods(self, namespace, selector):
        return self._items("pods", self.core.list_namespaced_pod, namespace, label_selector=selector)

    def configmaps(self, namespace, selector):
        return self._items("configmaps", self.core.list_namespaced_config_map, namespace, label_selector=selector)

    def create_configmap(self, namespace, body):
        return self._call("create", "configmaps/" + body["metadata"]["name"], self.core.create_namespaced_config_map,
                          namespace, body)

    def create_pod(self, namespace, body):
        return self._call("create", "pods/" + body["metadata"]["name"], self.core.create_namespaced_pod, namespace, body)

    def log(self, namespace, name):
        return self._call("get", "pods/%s/log" % name, self.core.read_namespaced_pod_log, name, namespace,
                          container="probe", _request_timeout=30)

    def delete_pod(self, namespace, name):
        return self._delete("pods/" + name, self.core.delete_namespaced_pod, name, namespace, grace_period_seconds=0)

    def delete_configmap(self, namespace, name):
        return self._delete("configmaps/" + name, self.core.delete_namespaced_config_map, name, namespace)

    def patch_node(self, name, body):
        return self._call("patch", "nodes/" + name, self.core.patch_node, name, body)


class Interrupted(Exception):
    """SIGTERM or SIGINT during the run: the ``finally`` still deletes what the run created."""


def _interrupt(signum, frame):
    raise Interrupted("interrupted by signal %d" % signum)


class NodeProbe(object):
    """Run the probe on ``nodes`` (Node dicts); ``api`` is a :class:`KubeApi` (or a fake).
    ``api_errors``: the failed API calls that are not one node's failure (deletes, for one)."""

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
        self.api_errors = []
        self.lock = threading.Lock()

    def _refused(self, exc):
        with self.lock:
            self.api_errors += [str(exc)] if str(exc) not in self.api_errors else []

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
        """{node name: record}; a call that fails the whole run (the ConfigMap's creation, the
        poll's list) fails every node without a verdict yet, naming the call."""
        old = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGINT)}
        results = {}
        try:
            self._run(nodes, results)
        except ApiCallFailed as exc:  # named in each node's failure
            for name in (n["metadata"]["name"] for n in nodes):
                results.setdefault(name, np.failed_node(name, "api", str(exc)))
        finally:
            try:
                self._delete_all()
            finally:
                for s, handler in old.items():
                    signal.signal(s, handler)
        return results

    def _run(self, nodes, results):
        todo = []
        for node in nodes:
            why = np.node_not_ready(node)
            if why:
                results[node["metadata"]["name"]] = np.failed_node(node["metadata"]["name"], "node_not_ready", why)
            else:
                todo.append(node["metadata"]["name"])
        if not todo:
            return
        expires = self.clock() + self.params["pod_timeout"] + 60
        data = np.bundle_data(self.params)
        digest = np.bundle_digest(data)
        cm_name = np.configmap_name(self.run_id, digest)
        self.created["configmaps"].append(cm_name)  # recorded first: deleted even if the answer is lost
        cm = self.api.create_configmap(self.ns, np.configmap(cm_name, self.ns, self.run_id, data, digest))
        started = {}
        pending = list(todo)
        running = {}
        with ThreadPoolExecutor(max_workers=min(API_THREADS, self.params["parallel"])) as pool:
            while pending or running:
                batch = []
                while pending and len(running) + len(batch) < self.params["parallel"]:
                    batch.append(np.pod_spec(pending.pop(0), self.run_id, self.params, cm_name, cm["metadata"]["uid"],
                                             expires, digest))
                for body in batch:  # recorded first: a create that fails half-way is still cleaned up
                    self.created["pods"].append(body["metadata"]["name"])
                for body, refused in zip(batch, pool.map(self._create_pod, batch)):
                    pod, node = body["metadata"]["name"], body["metadata"]["annotations"][np.NODE_ANNOTATION]
                    if refused:
                        results[node] = np.failed_node(node, "api", refused, pod)
                    else:
                        started[pod] = self.clock()
                        running[pod] = node
                if not running:
                    continue
                self.sleep(POLL)
                selector = "%s=%s" % (np.RUN_LABEL, self.run_id)
                by_name = dict((p["metadata"]["name"], p) for p in self.api.pods(self.ns, selector))
                due = [(pod, node, by_name.get(pod), self.clock() - started[pod]) for pod, node in running.items()]
                for (pod, node, _o, _a), result in zip(due, pool.map(lambda args: self._check(*args), due)):
                    if result is not None:
                        results[node] = result
                        del running[pod]

    def _create_pod(self, body):
        """None when created, else the refusal's text (that node's failure)."""
        try:
            self.api.create_pod(self.ns, body)
            return None
        except ApiCallFailed as exc:
            return str(exc)

    def _check(self, pod, node, obj, age):
        """The node's result once its pod is done (the log read, the pod deleted), else None."""
        try:
            result = self._result(pod, node, obj, age)
        except ApiCallFailed as exc:  # the log could not be read: no verdict from this node
            result = np.failed_node(node, "api", str(exc), pod)
        if result is not None and obj is not None:
            try:
                deleted = self.api.delete_pod(self.ns, pod)
            except ApiCallFailed as exc:
                self._refused(exc)  # the verdict stands; the ConfigMap's deletion lets the GC take the pod
                return result
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
        facts, problems = np.parse_log(text)
        if problems.get("bundle"):  # the pod refused to run code that is not the module's
            return np.failed_node(node, "bundle", problems["bundle"], pod)
        if problems.get("image"):
            return np.failed_node(node, "image", "image %s: %s - %s" % (self.params["image"], problems["image"],
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
            except ApiCallFailed as exc:
                self._refused(exc)  # the ConfigMap's deletion still lets the garbage collector take the pod
        for name in self.created["configmaps"]:
            try:
                if self.api.delete_configmap(self.ns, name):
                    self.deleted["configmaps"] += 1
            except ApiCallFailed as exc:
                self._refused(exc)


def _expired(pod, now):
    expires = ((pod.get("metadata") or {}).get("annotations") or {}).get(np.EXPIRES_ANNOTATION)
    return not expires or float(expires) < now


def _started(pod):
    ctr = next(iter((pod.get("status") or {}).get("containerStatuses") or []), {})
    state = ctr.get("state") or {}
    return bool(state.get("running") or state.get("terminated") or ctr.get("lastState", {}).get("terminated"))


def argument_spec():
    return dict(
        auth.argument_spec(),
        namespace=dict(type="str", default="gpu-operator"),
        node_selector=dict(type="str", default="nvidia.com/gpu.present=true"),
        nodes=dict(type="list", elements="str"), storage_class=dict(type="str"),
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
        require_proven=dict(type="bool", default=True), labels=dict(type="bool", default=False),
    )


def summarize(nodes, required):
    by_mode = dict((m, 0) for m in ("gds", "p2pdma", "compat", "unavailable", "failed"))
    for node in nodes:
        by_mode[node["mode"]] = by_mode.get(node["mode"], 0) + 1
    return {"nodes": len(nodes), "by_mode": by_mode, "require_mode": required,
            "probe_failed": [n["name"] for n in nodes if n.get("failure")],
            "below_required": [n["name"] for n in nodes if (n.get("require_mode") or {}).get("met") is False]}


def run(params, check_mode, api=None, clock=time.time, diff=False):
    """(failure message or None, result dict) of one module run."""
    problem = np.check_params(params)
    if problem:
        return problem, {"changed": False, "nodes": []}
    try:  # after the options' own checks: bad input is named before any connection
        api, warnings = (api, []) if api else auth.connect(params, KubeApi)
    except auth.AuthError as exc:
        return str(exc), {"changed": False, "nodes": []}
    result = {"changed": False, "nodes": [], "labels_changed": [], "labels_removed": [], "cleaned_leftovers": [],
              "summary": summarize([], params.get("require_mode")), "warnings": warnings}
    try:
        all_nodes, result["not_meant_for_gds"] = kw.probe_nodes(api, params["node_selector"], params.get("nodes"))
    except ApiCallFailed as exc:
        return "Kubernetes API: %s" % exc, result
    if params.get("nodes"):
        unknown = sorted(set(params["nodes"]) - set(n["metadata"]["name"] for n in all_nodes))
        if unknown:
            return "nodes not found among those matching %r: %s" % (params["node_selector"], ", ".join(unknown)), result
        all_nodes = [n for n in all_nodes if n["metadata"]["name"] in params["nodes"]]
    names = sorted(n["metadata"]["name"] for n in all_nodes)
    if not all_nodes:
        return "no node matches node_selector %r: nothing to probe (is the GPU Operator running?)" % (
            params["node_selector"]), result
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_node_probe_claims as pvc
    problem, params = pvc.prepare(api, params) if params.get("storage_class") else (None, params)
    if problem:
        return problem, result
    when = time.strftime(nl.RFC3339_UTC, time.gmtime(clock()))
    api_errors = []
    if check_mode:  # the selected nodes' verdicts are unknown: only the other nodes' removals are sure
        result["msg"] = "check mode: would probe %d node(s)%s: %s" % (len(names), pvc.through(params), ", ".join(names))
        if params["labels"]:
            _labels(api, result, {}, when, True, names, api_errors, diff)
        return _api_failure(api_errors), result
    probe = (pvc.ClaimProbe if params.get("storage_class") else NodeProbe)(api, params, clock=clock)
    result["run_id"] = probe.run_id
    try:
        result["cleaned_leftovers"] = probe.cleanup_leftovers()
    except ApiCallFailed as exc:
        return "Kubernetes API: %s" % exc, result
    try:
        by_node = probe.run(all_nodes)
    finally:
        result["deleted"] = dict(probe.deleted)
    api_errors.extend(probe.api_errors)
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
        proven = dict((n["name"], n) for n in nodes if not n.get("failure"))
        _labels(api, result, proven, when, False, (), api_errors, diff)
    result["nodes"] = nodes
    result["summary"] = summarize(nodes, required)
    result["msg"] = "; ".join("%s: %s%s%s" % (n["name"], n["mode"], pvc.via(n), " (%s)" % n["reason"]
                                              if n["mode"] != "gds" else "") for n in nodes)
    failed = ["%s: %s" % (n["name"], n["reason"]) for n in nodes if n.get("failure")]
    image = [n for n in nodes if (n.get("failure") or {}).get("kind") == "image"]
    if image:
        return image[0]["failure"]["message"] + " (nodes: %s)" % ", ".join(n["name"] for n in image), result
    parts = [_api_failure(api_errors)] if api_errors else []
    if failed:
        parts.append("the probe pod could not give a verdict on %d node(s): %s" % (len(failed), " | ".join(failed)))
    if below:
        parts.append("%d node(s) below require_mode=%s: %s" % (len(below), required, " | ".join(below)))
    return "; ".join(parts) or None, result


def _labels(api, result, proven, when, check_mode, undecided, api_errors, diff):
    labelled, unlabelled, changes = nl.apply(api, proven, when, check_mode, undecided, api_errors)
    result.update(labels_changed=labelled, labels_removed=unlabelled, changed=bool(labelled or unlabelled))
    if diff:
        result["diff"] = changes


def _api_failure(api_errors):
    if not api_errors:
        return None
    return "the Kubernetes API refused or failed %d call(s): %s" % (len(api_errors), " | ".join(api_errors))
