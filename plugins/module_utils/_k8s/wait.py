# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Wait until GDS is really up: list + watch of the objects ``readiness.evaluate`` reads, until it
says ready or the deadline passes; the CRDs and namespace a failed first install left.
PRIVATE to the collection. Objects are JSON dicts (``_preload_content=False``), not the client's models."""

from __future__ import annotations

import json
import queue
import threading
import time
import traceback

try:
    from kubernetes import client as k8s_client
    from kubernetes.client.exceptions import ApiException
    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()
    ApiException = Exception

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import auth
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.readiness import (
    DRIVER_SELECTOR, GPU_LABEL, evaluate, gds_node_split, node_results, parse_selector, probe_selection)

__all__ = ["HAS_KUBERNETES", "KUBERNETES_IMPORT_ERROR", "KubeSource", "RELIST_SECONDS", "Waiter", "api_client",
           "cluster_objects", "evaluate", "failure_message", "gds_node_split", "node_results", "parse_selector", "probe_nodes"]

RELIST_SECONDS = 5.0


def failure_message(evaluation, timeout):
    return "GDS not ready after %ds: %s" % (timeout, "; ".join(evaluation["problems"]) or "unknown")


def cluster_objects(source):
    """(CRD names, whether the release namespace exists) for a failure message; None when the
    API cannot say."""
    try:
        crds = {(c.get("metadata") or {}).get("name") for c in source.list("crds")[0]}
        return crds, bool(source.list("namespace")[0])
    except Exception:  # pylint: disable=broad-except
        return None


def probe_nodes(api, selector, names=None):
    """(nodes, names of GPU nodes left out): those ``selector`` matches; with the default selector and
    no ``names``, only those the ClusterPolicy / NVIDIADriver CRs mean to get GDS (all if unreadable)."""
    nodes = api.nodes(selector)
    if names or selector != GPU_LABEL + "=true" or getattr(api, "core", None) is None:
        return nodes, []
    custom = k8s_client.CustomObjectsApi(api.core.api_client)
    lists = []
    for version, plural in (("v1", "clusterpolicies"), ("v1alpha1", "nvidiadrivers")):
        try:
            resp = custom.list_cluster_custom_object("nvidia.com", version, plural, _preload_content=False,
                                                     _request_timeout=30)
        except ApiException:
            return nodes, []
        lists.append(json.loads(resp.data).get("items") or [])
    return probe_selection(nodes, *lists)


# --- I/O: list + watch -----------------------------------------------------------------------
def api_client(kubeconfig=None, context=None):
    """A kubernetes ApiClient from a kubeconfig path / $KUBECONFIG / ~/.kube/config, never the pod's
    in-cluster account (AuthError says why there is none)."""
    return auth.connect({"kubeconfig": kubeconfig, "context": context})[0]


class KubeSource(object):
    """Lists and watches of the resources the wait needs, as JSON dicts (``_preload_content=False``)."""

    def __init__(self, client, namespace):
        self.client = client
        core = k8s_client.CoreV1Api(client)
        custom = k8s_client.CustomObjectsApi(client)
        self.calls = {
            "clusterpolicies": lambda **kw: custom.list_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", **kw),
            "nvidiadrivers": lambda **kw: custom.list_cluster_custom_object("nvidia.com", "v1alpha1", "nvidiadrivers",
                                                                            **kw),
            # who installed the operator (gpu_operator's install_method: auto); 404 without OLM
            "subscriptions": lambda **kw: custom.list_cluster_custom_object("operators.coreos.com", "v1alpha1",
                                                                            "subscriptions", **kw),
            "clusterserviceversions": lambda **kw: custom.list_cluster_custom_object(
                "operators.coreos.com", "v1alpha1", "clusterserviceversions", **kw),
            "nodes": core.list_node,  # all nodes: the unlabelled ones explain a wait
            "pods": lambda **kw: core.list_namespaced_pod(namespace, label_selector=DRIVER_SELECTOR, **kw),
            # what a failed first install leaves behind
            "crds": k8s_client.ApiextensionsV1Api(client).list_custom_resource_definition,
            "namespace": lambda **kw: core.list_namespace(field_selector="metadata.name=" + namespace, **kw),
        }

    def list(self, kind):
        """(items, resourceVersion); a missing ClusterPolicy / NVIDIADriver CRD lists as empty."""
        try:
            resp = self.calls[kind](_preload_content=False, _request_timeout=30)
        except ApiException as exc:
            optional = ("clusterpolicies", "nvidiadrivers", "subscriptions", "clusterserviceversions")
            if getattr(exc, "status", None) == 404 and kind in optional:
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
    """Evaluate, then re-evaluate on every watch event until ready or the deadline. ``source`` has
    ``list(kind) -> (items, rv)`` and ``watch(kind, rv, timeout)`` (:class:`KubeSource`, or a fake)."""

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
