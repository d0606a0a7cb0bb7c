# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The RBAC of the storage parts (docs/rbac/gds_local_volumes.yaml, and
docs/rbac/gds_node_probe_storage.yaml next to gds_node_probe.yaml) against the Kubernetes API
emulator: the whole run passes with it, and without any one of its verbs the run fails naming
that verb and the resource, without a traceback.
"""

from __future__ import annotations

import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gds_node_probe"))
sys.path.insert(0, os.path.join(ROOT, "build", "collections"))
from np_cluster import cluster_factory, standin_libs  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import local_volumes as lv  # noqa: E402
from rbac_roles import without_each_verb  # noqa: E402  pylint: disable=wrong-import-position

RBAC = os.path.join(ROOT, "docs", "rbac")
NS = "gpu-operator"
PLAYBOOKS = os.path.join(ROOT, "tests", "integration", "gds_node_probe", "playbooks")


def _apis(cluster):
    from kubernetes import client
    api = cluster.core().api_client
    return client.CoreV1Api(api), client.StorageV1Api(api)


def _each_verb_needed(cluster, docs, reset, run):
    """Run once without each verb of ``docs``' roles (after ``reset()``): the run fails naming verb and resource."""
    def reset_and_run():
        reset()
        return run()

    tried = []
    for rule, verb, (rc, res, out) in without_each_verb(cluster.core().api_client, NS, docs, reset_and_run):
        named = r"%s %s(/[a-z0-9.-]+)?: 403 Forbidden" % (verb, rule["resources"][0])
        assert rc != 0 and re.search(named, res.get("msg", "")), (verb, rule["resources"], res.get("msg"))
        assert "Traceback (most recent call last)" not in out and "Module failed" not in res["msg"], out[-3000:]
        tried.append("%s %s" % (verb, rule["resources"][0]))
    return tried


def test_gds_local_volumes_runs_with_its_role_and_needs_each_verb(cluster_factory):
    cluster = cluster_factory()
    core, storage = _apis(cluster)
    core.create_namespace({"metadata": {"name": NS}}, _preload_content=False)
    docs = cluster.apply(os.path.join(RBAC, "gds_local_volumes.yaml"))
    kubeconfig = cluster.token_kubeconfig(NS, "gds-local-volumes")
    volumes = [{"node": "gpu-a", "path": "/mnt/nvme0", "capacity": "2Gi"},
               {"node": "gpu-b", "path": "/mnt/nvme0", "capacity": "2Gi"}]

    def reset():  # gpu-a's PV ours with another capacity (to patch), no class, no PV on gpu-b (to create)
        for name in (lv.pv_name("nvme-gds", n, "/mnt/nvme0") for n in ("gpu-a", "gpu-b")):
            core.delete_persistent_volume(name, _preload_content=False) if name in _names(core) else None
        if "nvme-gds" in [s["metadata"]["name"] for s in json.loads(storage.list_storage_class(
                _preload_content=False).data)["items"]]:
            storage.delete_storage_class("nvme-gds", _preload_content=False)
        core.create_persistent_volume(lv.pv_body("nvme-gds", dict(volumes[0], capacity="1Gi"), "gpu-a"),
                                      _preload_content=False)

    def run():
        return cluster.run(os.path.join(PLAYBOOKS, "local_volumes_listed.yml"),
                           {"np_kubeconfig": kubeconfig, "lv_volumes": volumes},
                           task="Run gpudirect.storage.gds_local_volumes")

    reset()
    rc, res, out = run()
    assert rc == 0, out[-3000:]
    assert [v["action"] for v in res["volumes"]] == ["updated", "created"] and res["storage_class"]["action"] == "created"
    tried = _each_verb_needed(cluster, docs, reset, run)
    assert tried == ["list nodes", "get storageclasses", "create storageclasses", "get persistentvolumes",
                     "create persistentvolumes", "patch persistentvolumes"]


def _names(core):
    return [p["metadata"]["name"] for p in json.loads(core.list_persistent_volume(_preload_content=False).data)["items"]]


def test_gds_node_probe_through_claims_runs_with_the_storage_role_and_needs_each_verb(cluster_factory):
    cluster = cluster_factory()
    core, storage = _apis(cluster)
    core.create_namespace({"metadata": {"name": NS}}, _preload_content=False)
    cluster.apply(os.path.join(RBAC, "gds_node_probe.yaml"))
    docs = cluster.apply(os.path.join(RBAC, "gds_node_probe_storage.yaml"))
    kubeconfig = cluster.token_kubeconfig(NS, "gds-node-probe")
    storage.create_storage_class(lv.storage_class_body("nvme-gds"), _preload_content=False)
    for node in ("gpu-a", "gpu-b"):
        path = os.path.join(cluster.tmp, "pv", node)
        os.makedirs(path)
        core.create_persistent_volume(lv.pv_body("nvme-gds", {"node": node, "path": path, "capacity": "10Gi"}, node),
                                      _preload_content=False)

    def reset():  # what a refused delete or patch left: the claims, the PVs' claimRefs, the ConfigMap
        for claim in json.loads(core.list_namespaced_persistent_volume_claim(NS, _preload_content=False).data)["items"]:
            core.delete_namespaced_persistent_volume_claim(claim["metadata"]["name"], NS, _preload_content=False)
        for name in _names(core):
            core.patch_persistent_volume(name, {"spec": {"claimRef": None}}, _preload_content=False)
        for name in cluster.left_behind():
            core.delete_namespaced_config_map(name, NS, _preload_content=False)

    def run():
        return cluster.probe(np_kubeconfig=kubeconfig, np_namespace=NS, np_storage_class="nvme-gds")

    rc, res, out = run()
    assert rc == 0, out[-3000:]
    assert [n["volume"]["released"] for n in res["nodes"]] == [True, True]
    tried = _each_verb_needed(cluster, docs, reset, run)
    assert tried == ["get storageclasses", "get persistentvolumes", "patch persistentvolumes",
                     "create persistentvolumeclaims", "get persistentvolumeclaims", "list persistentvolumeclaims",
                     "delete persistentvolumeclaims"]
    reset()
