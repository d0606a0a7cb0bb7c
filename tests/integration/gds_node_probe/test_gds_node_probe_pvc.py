# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_node_probe through a PersistentVolumeClaim of a StorageClass (option storage_class) on the
API emulator: one claim per node, bound by WaitForFirstConsumer to the node's local PV, the probe
pod mounts it (the emulator's kubelet bind-mounts the PV's path in the pod's mount namespace),
the verdict names the PV and its path on the node; the claims are deleted and the PVs are
Available again afterwards.
"""

from __future__ import annotations

import json
import os
import sys

from np_cluster import cluster_factory, standin_libs  # noqa: F401  pylint: disable=unused-import

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "build", "collections"))
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import local_volumes as lv  # noqa: E402


def make_volumes(cluster, nodes):
    """The StorageClass nvme-gds and a local PV on each of ``nodes`` (a directory of its own)."""
    from kubernetes import client
    client.StorageV1Api(cluster.core().api_client).create_storage_class(lv.storage_class_body("nvme-gds"),
                                                                        _preload_content=False)
    paths = {}
    for node in nodes:
        paths[node] = os.path.join(cluster.tmp, "pv", node)
        os.makedirs(paths[node])
        body = lv.pv_body("nvme-gds", {"node": node, "path": paths[node], "capacity": "100Gi"}, node)
        cluster.core().create_persistent_volume(body, _preload_content=False)
    return paths


def listing(cluster, what):
    core = cluster.core()
    if what == "pvc":
        return json.loads(core.list_persistent_volume_claim_for_all_namespaces(_preload_content=False).data)["items"]
    return json.loads(core.list_persistent_volume(_preload_content=False).data)["items"]


def test_probe_through_a_claim_names_the_pv_and_gives_it_back(cluster_factory):
    cluster = cluster_factory()
    paths = make_volumes(cluster, ["gpu-a", "gpu-b"])
    rc, res, out = cluster.probe(np_storage_class="nvme-gds")
    assert rc == 0, out[-4000:]
    for name in ("gpu-a", "gpu-b"):
        node = next(n for n in res["nodes"] if n["name"] == name)
        pv = lv.pv_name("nvme-gds", name, paths[name])
        assert node["mode"] == "compat" and node["verified"] is True and node["failure"] is None, node
        assert node["volume"]["pv"] == pv and node["volume"]["path"] == paths[name], node["volume"]
        assert node["volume"]["storage_class"] == "nvme-gds" and node["volume"]["claim"].startswith("gds-probe-")
        assert node["volume"]["released"] is True
        assert "/gds-volume" not in node["reason"]  # the path on the node, not the pod's mount point
        assert "%s: compat via PV %s (%s)" % (name, pv, paths[name]) in res["msg"]
    assert res["deleted"] == {"pods": 2, "configmaps": 1, "claims": 2}
    assert listing(cluster, "pvc") == []
    for pv in listing(cluster, "pv"):  # Retain, and the claim's reference cleared: Available for the next claim
        assert pv["status"]["phase"] == "Available" and not pv["spec"].get("claimRef"), pv

    # a second run binds them again
    rc, res, out = cluster.probe(np_storage_class="nvme-gds", np_nodes=["gpu-a"])
    assert rc == 0 and res["nodes"][0]["volume"]["pv"] == lv.pv_name("nvme-gds", "gpu-a", paths["gpu-a"]), out[-3000:]


def test_a_node_without_a_volume_of_the_class_is_named(cluster_factory):
    cluster = cluster_factory()
    make_volumes(cluster, ["gpu-a"])
    rc, res, out = cluster.probe(np_storage_class="nvme-gds")
    assert rc != 0
    node = next(n for n in res["nodes"] if n["name"] == "gpu-b")
    assert node["failure"]["kind"] == "unschedulable", node
    assert "didn't find available persistent volumes to bind" in node["reason"]
    assert next(n for n in res["nodes"] if n["name"] == "gpu-a")["mode"] == "compat"
    assert listing(cluster, "pvc") == []


def test_check_mode_and_a_missing_class(cluster_factory):
    cluster = cluster_factory()
    rc, res, out = cluster.probe(np_storage_class="nvme-gds")
    assert rc != 0 and "StorageClass nvme-gds not found" in res["msg"], res.get("msg")
    make_volumes(cluster, ["gpu-a", "gpu-b"])
    rc, res, out = cluster.probe(check=True, np_storage_class="nvme-gds")
    assert rc == 0 and "through a claim of StorageClass nvme-gds" in res["msg"], res.get("msg")
    assert [r for r in cluster.emu.requests() if r["method"] == "POST" and "claims" in r["path"]] == []
    assert listing(cluster, "pvc") == []
