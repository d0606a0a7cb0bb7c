# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The Kubernetes API emulator's protocol pieces (tests/fixtures/k8s_emulator): the protobuf
decoder on real helm 3.19.0 / 4.1.4 request bodies, patches, selectors and watch resume."""

from __future__ import annotations

import base64
import gzip
import json
import os
import sys

import pytest

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures")
sys.path.insert(0, os.path.abspath(FIXTURES))

from k8s_emulator import patch, protobuf  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.store import ApiError, Store, labels_match, parse_label_selector  # noqa: E402


@pytest.mark.parametrize("version", ["3.19.0", "4.1.4"])
def test_decode_real_helm_release_secret(version):
    with open(os.path.join(FIXTURES, "k8s_emulator", "captured", "helm-%s-secret-create.pb" % version), "rb") as h:
        secret = protobuf.decode(h.read())
    assert secret["kind"] == "Secret" and secret["type"] == "helm.sh/release.v1"
    assert secret["metadata"]["name"] == "sh.helm.release.v1.t.v1"
    assert secret["metadata"]["labels"]["owner"] == "helm" and "uid" not in secret["metadata"]
    # helm stores base64(gzip(json)) in data.release; the secret's data is base64 again
    release = json.loads(gzip.decompress(base64.b64decode(base64.b64decode(secret["data"]["release"]))))
    assert release["name"] == "t" and release["chart"]["metadata"]["name"] == "gpu-operator"
    with open(os.path.join(FIXTURES, "k8s_emulator", "captured", "helm-%s-delete-options.pb" % version), "rb") as h:
        assert protobuf.decode(h.read()) == {"apiVersion": "v1", "kind": "DeleteOptions"}


def test_decode_rejects_non_protobuf():
    with pytest.raises(protobuf.ProtobufError, match="magic"):
        protobuf.decode(b"{}")


def test_strategic_merge_by_key_and_directives():
    current = {"spec": {"containers": [{"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
                                       {"name": "b", "image": "b:1"}], "finalizers": ["f1"]}}
    out = patch.strategic_merge(current, {"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
        "containers": [{"name": "a", "image": "a:2"}, {"name": "b", "$patch": "delete"}, {"name": "c", "image": "c"}],
        "finalizers": ["f2"]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["a", "c"]
    assert out["spec"]["containers"][0] == {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}]}
    assert out["spec"]["finalizers"] == ["f1", "f2"]
    assert patch.strategic_merge({"a": {"b": 1}}, {"a": {"$patch": "replace", "c": 2}}) == {"a": {"c": 2}}


def test_merge_and_json_patch():
    assert patch.merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    ops = [{"op": "add", "path": "/a/-", "value": 3}, {"op": "replace", "path": "/a/0", "value": 0},
           {"op": "test", "path": "/a/1", "value": 2}]
    doc = patch.json_patch({"a": [1, 2]}, ops)
    assert doc == {"a": [0, 2, 3]}
    with pytest.raises(patch.PatchError, match="test failed"):
        patch.json_patch(doc, [{"op": "test", "path": "/a/0", "value": 9}])


def test_server_side_apply_keeps_status_and_merges_labels():
    current = {"metadata": {"name": "x", "uid": "u", "labels": {"a": "1"}}, "spec": {"old": 1}, "status": {"s": 1}}
    out = patch.apply_patch("application/apply-patch+yaml", current,
                            "metadata:\n  name: x\n  labels: {b: '2'}\nspec: {new: 2}\n", __import__("yaml").safe_load)
    assert out == {"metadata": {"name": "x", "uid": "u", "labels": {"a": "1", "b": "2"}}, "spec": {"new": 2},
                   "status": {"s": 1}}


@pytest.mark.parametrize("selector,labels,match", [
    ("name=r,owner=helm", {"name": "r", "owner": "helm"}, True),
    ("name=r,owner=helm", {"name": "r"}, False),
    ("app in (a, b),!gone", {"app": "b"}, True),
    ("app notin (a),tier!=x", {"app": "a"}, False),
    ("nvidia.com/gpu.present=true", {"nvidia.com/gpu.present": "true"}, True),
])
def test_label_selectors(selector, labels, match):
    assert labels_match(labels, parse_label_selector(selector)) is match


def test_store_conflicts_and_watch_resume():
    store = Store()
    gk = ("", "configmaps")
    obj = store.create(gk, {"metadata": {"name": "c", "namespace": "n"}, "data": {"a": "1"}})
    stale = dict(obj, data={"a": "2"})
    store.update(gk, stale)
    with pytest.raises(ApiError) as err:
        store.update(gk, dict(obj, data={"a": "3"}))
    assert err.value.code == 409
    watcher, events = store.watch(gk, "n", obj["metadata"]["resourceVersion"])[:2]
    assert [event[0] for event in events] == ["MODIFIED"]
    store.delete(gk, "n", "c")
    assert watcher.events.get_nowait()[0] == "DELETED"
    watcher.close()


# --- garbage collection, CRD schemas, the stand-in GPU Operator --------------------------------
from k8s_emulator import schema  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.__main__ import node_object  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.controllers import Controllers  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.resources import ResourceType  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.server import Handler  # noqa: E402  pylint: disable=wrong-import-position

DEPLOY, RS, PODS, DS = ("apps", "deployments"), ("apps", "replicasets"), ("", "pods"), ("apps", "daemonsets")
CP, NVD, NODES = ("nvidia.com", "clusterpolicies"), ("nvidia.com", "nvidiadrivers"), ("", "nodes")


def _owned(owner, kind, name, namespace="n"):
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace, "ownerReferences": [
        {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
         "uid": owner["metadata"]["uid"], "controller": True}]}}


def test_a_child_created_for_a_deleted_owner_is_collected():
    """The list-snapshot race: a controller creates a ReplicaSet for a Deployment helm just deleted."""
    store = Store()
    dep = store.create(DEPLOY, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"}})
    rs = store.create(RS, dict(_owned(dep, "ReplicaSet", "d-1"), apiVersion="apps/v1"))
    store.create(PODS, _owned(rs, "Pod", "d-1-a"))
    store.delete(DEPLOY, "n", "d")
    assert store.list(RS)[0] == [] and store.list(PODS)[0] == []
    late = store.create(RS, dict(_owned(dep, "ReplicaSet", "d-2"), apiVersion="apps/v1"))
    assert late["metadata"]["name"] == "d-2" and store.get(RS, "n", "d-2") is None
    assert store.objects == {}


CP_SCHEMA = {"type": "object", "properties": {
    "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
    "spec": {"type": "object", "required": ["operator"], "properties": {
        "operator": {"type": "object"},
        "gds": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "version": {"type": "string"}}},
        "driver": {"type": "object", "properties": {
            "kernelModuleType": {"type": "string", "enum": ["auto", "open", "proprietary"]},
            "maxUnavailable": {"x-kubernetes-int-or-string": True},
            "env": {"type": "array", "items": {
                "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}}}}}}}


def test_crd_schema_types_required_and_enums():
    good = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "p", "x": 1},
            "spec": {"operator": {}, "gds": {"enabled": True, "version": "2.29.4"},
                     "driver": {"maxUnavailable": "25%", "kernelModuleType": None, "env": [{"name": "A"}]}}}
    assert schema.validate(CP_SCHEMA, good) == []
    bad = {"spec": {"gds": {"enabled": "true", "version": 2}, "driver": {"kernelModuleType": "closed",
                                                                         "maxUnavailable": True, "env": [{}]}}}
    errors = schema.validate(CP_SCHEMA, bad)
    assert 'spec.gds.enabled: Invalid value: "string": spec.gds.enabled in body must be of type boolean: "string"' \
        in errors
    assert 'spec.gds.version: Invalid value: "integer": spec.gds.version in body must be of type string: "integer"' \
        in errors
    assert "spec.operator: Required value" in errors and "spec.driver.env[0].name: Required value" in errors
    assert any(e.startswith('spec.driver.kernelModuleType: Unsupported value: "closed"') for e in errors)
    assert any(e.startswith("spec.driver.maxUnavailable: Invalid value") for e in errors)
    rtype = ResourceType("nvidia.com", "v1", "clusterpolicies", "ClusterPolicy", False, schema=CP_SCHEMA)
    with pytest.raises(ApiError) as err:
        Handler._validate(rtype, dict(bad, metadata={"name": "p"}))
    assert err.value.code == 422 and err.value.message.startswith('ClusterPolicy.nvidia.com "p" is invalid: [')


def _cluster(nodes, policy_spec, control=None):
    store = Store()
    for spec in nodes:
        store.create(NODES, node_object(spec))
    store.create(("", "namespaces"), {"metadata": {"name": "gpu-operator"}})
    ctl = Controllers(store, control if control is not None else {}, pod_delay=0, job_delay=0)
    pod = store.create(PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "gpu-operator-x", "namespace": "gpu-operator", "labels": {"app": "gpu-operator"}},
        "spec": {"nodeName": "cpu-0", "containers": [{"name": "gpu-operator", "image": "op"}]}})
    assert pod
    store.create(CP, {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"},
                      "spec": policy_spec})
    return store, ctl


def _run(ctl, ticks=6):
    for _tick in range(ticks):
        for step in (ctl.daemonsets, ctl.kubelet, ctl.gpu_operator):
            step()


def _policy(store):
    status = store.get(CP, None, "cluster-policy")["status"]
    return status["state"], status["conditions"][0]["reason"]


def _driver_pods(store):
    return {p["spec"]["nodeName"]: p for p in store.list(PODS, "gpu-operator", "app.kubernetes.io/component=nvidia-driver")[0]}


GDS_SPEC = {"driver": {"enabled": True, "version": "595.91.07"},
            "gds": {"enabled": True, "repository": "nvcr.io/nvidia/cloud-native", "image": "nvidia-fs",
                    "version": "2.29.4"}}


def test_standin_labels_gpu_nodes_itself_and_suffixes_images():
    store, ctl = _cluster(["gpu-a:ubuntu:22.04:gpu", "gpu-b:ubuntu:24.04:gpu", "cpu-0:debian:12"], GDS_SPEC)
    assert not any("nvidia.com/gpu.present" in n["metadata"]["labels"] for n in store.list(NODES)[0])
    _run(ctl)
    labelled = sorted(n["metadata"]["name"] for n in store.list(NODES, label_selector="nvidia.com/gpu.present=true")[0])
    assert labelled == ["gpu-a", "gpu-b"]
    pods = _driver_pods(store)
    assert sorted(pods) == ["gpu-a", "gpu-b"] and _policy(store) == ("ready", "Reconciled")
    images = {c["name"]: c["image"] for c in pods["gpu-b"]["spec"]["containers"]}
    assert images["nvidia-fs-ctr"] == "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-ubuntu22.04"
    assert images["nvidia-driver-ctr"] == "nvcr.io/nvidia/driver:595.91.07-ubuntu22.04"
    assert pods["gpu-a"]["metadata"]["labels"]["app"] == "nvidia-driver-daemonset"


@pytest.mark.parametrize("nodes,reason", [
    (["cpu-0:debian:12", "cpu-1:ubuntu:22.04"], "NoGPUNodes"),
    (["cpu-0:debian:12:nonfd", "gpu-a:ubuntu:22.04:gpu:nonfd"], "NFDLabelsMissing"),
])
def test_standin_reports_no_gpu_nodes(nodes, reason):
    store, ctl = _cluster(nodes, GDS_SPEC)
    _run(ctl)
    assert _policy(store) == ("ready", reason) and _driver_pods(store) == {}


def test_standin_honours_driver_enabled_false():
    store, ctl = _cluster(["gpu-a:ubuntu:22.04:gpu", "cpu-0:debian:12"], dict(GDS_SPEC, driver={"enabled": False}))
    _run(ctl)
    assert _policy(store) == ("ready", "Reconciled") and _driver_pods(store) == {}
    assert store.list(DS, "gpu-operator")[0] == []


def test_standin_openshift_driver_toolkit_naming():
    store, ctl = _cluster(["gpu-r:rhcos:4.18:gpu", "cpu-0:rhcos:4.18"], GDS_SPEC)
    _run(ctl)
    pod = _driver_pods(store)["gpu-r"]
    assert pod["metadata"]["labels"]["app"] == "nvidia-driver-daemonset-418.92.202601010000-0"
    assert {c["name"]: c["image"] for c in pod["spec"]["containers"]}["nvidia-fs-ctr"].endswith(":2.29.4-rhcos4.18")


def test_standin_nvidiadriver_mode_one_daemonset_per_pool():
    store, ctl = _cluster(["gpu-a:ubuntu:22.04:gpu", "gpu-b:ubuntu:24.04:gpu", "cpu-0:debian:12"],
                          {"driver": {"enabled": True, "useNvidiaDriverCRD": True}, "gds": {"enabled": True}})
    for name, selector in (("default", None), ("pool-b", {"kubernetes.io/hostname": "gpu-b"})):
        spec = {"version": "595.91.07", "gds": {"enabled": True, "version": "2.29.4"}}
        if selector:
            spec["nodeSelector"] = selector
        else:
            spec["default"] = True  # the CR for the GPU nodes no other CR selects
        store.create(NVD, {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": name},
                           "spec": spec})
    _run(ctl)
    pods = _driver_pods(store)
    assert sorted(pods) == ["gpu-a", "gpu-b"] and _policy(store) == ("ready", "Reconciled")
    apps = {node: pod["metadata"]["labels"]["app"] for node, pod in pods.items()}
    assert apps["gpu-a"].startswith("nvidia-gpu-driver-ubuntu22.04-")
    assert apps["gpu-b"].startswith("nvidia-gpu-driver-ubuntu24.04-") and apps["gpu-a"] != apps["gpu-b"]
    fs_image = {c["name"]: c["image"] for c in pods["gpu-b"]["spec"]["containers"]}["nvidia-fs-ctr"]
    assert fs_image == "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-ubuntu24.04"
    store.delete(NVD, None, "pool-b")
    _run(ctl)
    moved = _driver_pods(store)["gpu-b"]["metadata"]["labels"]["app"]  # now in the default CR's pool
    assert moved.startswith("nvidia-gpu-driver-ubuntu24.04-") and moved != apps["gpu-b"]
