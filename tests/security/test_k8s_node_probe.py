# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Attacks on gds_node_probe's pods and node labels, through the Kubernetes API emulator whose
kubelet really runs the probe pods (tests/integration/gds_node_probe/np_cluster.py).

A user of the probe namespace who may edit ConfigMaps tries to run their own code in the probe
pod to forge the verdict that sets the labels; a kubelet tries to label its own node; a node
that left the selector keeps its labels. Each test passes when the attack failed.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "integration", "gds_node_probe"))
from np_cluster import MANAGED, cluster_factory, standin_libs  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

MODE = "node-restriction.kubernetes.io/gpudirect.storage.gds-mode"
VERIFIED = "node-restriction.kubernetes.io/gpudirect.storage.gds-verified"
NOTE, PROVEN_AT = "gpudirect.storage/gds-probe", "gpudirect.storage/gds-proven-at"
OURS = (MODE, VERIFIED, NOTE, PROVEN_AT)
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
# what an attacker's probe program prints: the verdict that would label the node "gds"
FORGED = ('import json\nprint("\\n@@GDS_NODE@@ facts " + json.dumps({"mode": "gds", "verified": True, '
          '"proven": True, "reason": "forged", "reasons": ["forged"], "probe": {"paths": []}}))\n')


def _ours(cluster, name):
    meta = cluster.node(name)["metadata"]
    return dict((k, v) for k, v in list((meta.get("labels") or {}).items()) +
                list((meta.get("annotations") or {}).items()) if k in OURS)


def _tenant(cluster):
    """A user of the namespace ``default`` who may do anything to its ConfigMaps, nothing else."""
    from kubernetes import client, config, utils
    api = config.new_client_from_config(config_file=cluster.emu.kubeconfig, persist_config=False)
    for doc in ({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "tenant", "namespace": "default"}},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                 "metadata": {"name": "configmap-editor", "namespace": "default"},
                 "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                 "metadata": {"name": "tenant", "namespace": "default"},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-editor"},
                 "subjects": [{"kind": "ServiceAccount", "name": "tenant", "namespace": "default"}]}):
        utils.create_from_dict(api, doc)
    return cluster.core(cluster.token_kubeconfig("default", "tenant"))


def _probe_in_background(cluster, **extra):
    """Run the module while the kubelet holds the pods; returns (thread, result holder)."""
    holder = {}
    thread = threading.Thread(target=lambda: holder.update(res=cluster.probe(**extra)), daemon=True)
    thread.start()
    deadline = time.time() + 60
    while time.time() < deadline:
        cms = json.loads(cluster.core().list_namespaced_config_map("default", label_selector=MANAGED,
                                                                   _preload_content=False).data)["items"]
        pods = json.loads(cluster.core().list_namespaced_pod("default", label_selector=MANAGED,
                                                             _preload_content=False).data)["items"]
        if cms and pods:
            return thread, holder, cms[0]
        time.sleep(0.1)
    raise AssertionError("the probe run created no ConfigMap and pod")


@pytest.mark.attack
def test_namespace_user_cannot_change_the_probe_code_before_the_pod_starts(cluster_factory):
    from kubernetes.client.exceptions import ApiException
    cluster = cluster_factory(kubelet={"hold_nodes": ["gpu-a"]})
    tenant = _tenant(cluster)
    thread, holder, cm = _probe_in_background(cluster, np_labels=True, np_nodes=["gpu-a"])
    refused = None
    try:
        tenant.patch_namespaced_config_map(cm["metadata"]["name"], "default", {"data": {"entry.py": FORGED}},
                                           _preload_content=False)
    except ApiException as exc:
        refused = exc
    finally:
        cluster.emu.control(hold_nodes=[])
        thread.join(300)
    rc, res, out = holder["res"]
    assert refused is not None and refused.status == 422 and "immutable" in refused.body, "the code was changed"
    assert rc == 0 and res["nodes"][0]["mode"] == "compat", out[-3000:]
    assert _ours(cluster, "gpu-a")[MODE] == "compat"


@pytest.mark.attack
def test_replaced_probe_code_fails_the_sha256_check_and_labels_nothing(cluster_factory):
    """Immutable does not stop delete + create: the pod checks the bundle's sha256 itself."""
    cluster = cluster_factory(kubelet={"hold_nodes": ["gpu-a"]})
    tenant = _tenant(cluster)
    thread, holder, cm = _probe_in_background(cluster, np_labels=True, np_nodes=["gpu-a"])
    try:
        name = cm["metadata"]["name"]
        # the pods stay (Orphan), and the kubelet mounts whatever ConfigMap has that name
        tenant.delete_namespaced_config_map(name, "default", propagation_policy="Orphan", _preload_content=False)
        forged = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": cm["metadata"]["labels"]},
                  "data": dict(cm["data"], **{"entry.py": FORGED})}
        tenant.create_namespaced_config_map("default", forged, _preload_content=False)
    finally:
        cluster.emu.control(hold_nodes=[])
        thread.join(300)
    rc, res, out = holder["res"]
    node = res["nodes"][0]
    assert node["mode"] != "gds" and "forged" not in json.dumps(node), node
    assert rc != 0 and node["failure"]["kind"] == "bundle", out[-3000:]
    assert "sha256" in node["reason"] and "gpu-a" in res["msg"]
    assert _ours(cluster, "gpu-a") == {} and res["labels_changed"] == []


@pytest.mark.attack
def test_a_kubelet_cannot_label_its_own_node_proven(cluster_factory):
    """NodeRestriction refuses a kubelet's change of labels under node-restriction.kubernetes.io/:
    the labels the module sets must be there, so a node cannot claim GDS by itself."""
    from kubernetes.client.exceptions import ApiException
    cluster = cluster_factory()
    rc, res, out = cluster.probe(np_labels=True, np_nodes=["gpu-a"])
    assert rc == 0, out[-3000:]
    labels = cluster.node("gpu-a")["metadata"]["labels"]
    ours = sorted(k for k in labels if "gds-" in k)
    assert ours == [MODE, VERIFIED]
    kubelet = cluster.core(cluster.kubeconfig_with(cluster.emu.node_token("gpu-b"),
                                                   "kubelet-gpu-b"))
    kubelet.patch_node("gpu-b", {"metadata": {"labels": {"example.com/own-label": "x"}}}, _preload_content=False)
    for key in ours:
        with pytest.raises(ApiException) as err:
            kubelet.patch_node("gpu-b", {"metadata": {"labels": {key: "gds"}}}, _preload_content=False)
        assert err.value.status == 403
    assert not any("gds-" in k for k in cluster.node("gpu-b")["metadata"]["labels"])


@pytest.mark.attack
def test_stale_labels_of_a_node_that_left_the_selector_are_removed(cluster_factory):
    cluster = cluster_factory()
    stale = {"metadata": {"labels": {MODE: "gds", VERIFIED: "true", "nvidia.com/gpu.present": None},
                          "annotations": {PROVEN_AT: "2026-01-01T00:00:00Z", NOTE: "{}"}}}
    cluster.core().patch_node("gpu-b", stale, _preload_content=False)  # its GPU was taken out

    def writes():
        return [r for r in cluster.emu.requests() if r["method"] in ("POST", "PUT", "PATCH", "DELETE")]

    before = writes()
    rc, res, out = cluster.probe(check=True, diff=True, np_labels=True)
    assert rc == 0, out[-3000:]
    assert res["labels_removed"] == ["gpu-b"] and res["changed"] is True
    assert res["diff"]["before"]["gpu-b"][MODE] == "gds" and res["diff"]["after"]["gpu-b"] == {}
    assert writes() == before and _ours(cluster, "gpu-b")[MODE] == "gds"  # check mode wrote nothing

    rc, res, out = cluster.probe(np_labels=True)
    assert rc == 0, out[-3000:]
    assert res["labels_removed"] == ["gpu-b"] and res["labels_changed"] == ["gpu-a"]
    assert _ours(cluster, "gpu-b") == {}
    ours = _ours(cluster, "gpu-a")
    assert ours[MODE] == "compat" and ours[VERIFIED] == "true" and RFC3339_UTC.match(ours[PROVEN_AT]), ours

    rc, res, out = cluster.probe(np_labels=True)
    assert rc == 0 and res["changed"] is False and res["labels_removed"] == [] and res["labels_changed"] == []
    assert _ours(cluster, "gpu-a")[PROVEN_AT] == ours[PROVEN_AT]
