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
