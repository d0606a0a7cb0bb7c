# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""docs/rbac/gpu_operator.yaml against the Kubernetes API emulator (RBAC enforced for the
ServiceAccount's token) with real helm: the installer binding installs the operator; the verify
roles alone run check mode and a run that finds the release up to date, and are refused a real
upgrade; without each of their verbs that run fails (the list of OLM's objects too: install_method
auto cannot otherwise tell that OLM did not install the operator).
"""

from __future__ import annotations

import copy
import os
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gpu_operator"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gds_node_probe"))
from gpu_operator_rig import Emulator, Rig, base, helm_bins  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
from np_cluster import manifest_objects  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.olm import olm_crds  # noqa: E402  pylint: disable=wrong-import-position,import-error

MANIFEST = os.path.join(ROOT, "docs", "rbac", "gpu_operator.yaml")
NS = "gpu-operator"
# a real cluster's own cluster-admin (the emulator starts without any ClusterRole)
CLUSTER_ADMIN = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cluster-admin"},
                 "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}


def _client(kubeconfig):
    from kubernetes import config
    return config.new_client_from_config(config_file=kubeconfig, persist_config=False)


def _serviceaccount_kubeconfig(emu, tmp_path):
    from kubernetes import client
    core = client.CoreV1Api(_client(emu.kubeconfig))
    resp = core.create_namespaced_service_account_token("gpu-operator-installer", NS, {"spec": {"audiences": []}})
    with open(emu.kubeconfig) as handle:
        conf = yaml.safe_load(handle)
    conf["users"][0]["user"]["token"] = resp.status.token
    path = str(tmp_path / "kubeconfig-installer")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
        yaml.safe_dump(conf, handle)
    return path


def _replace(api_client, doc):
    from kubernetes import client
    rbac = client.RbacAuthorizationV1Api(api_client)
    if doc["kind"] == "ClusterRole":
        rbac.replace_cluster_role(doc["metadata"]["name"], doc)
    else:
        rbac.replace_namespaced_role(doc["metadata"]["name"], NS, doc)


@pytest.mark.parametrize("helm", ["3.19.0", "4.1.4"])
def test_gpu_operator_rbac_install_then_verify_only(helm_bins, tmp_path, helm):
    from kubernetes import client, utils
    emu = Emulator(tmp_path / "emulator", pod_delay=0.3)
    emu.start()
    try:
        rig = Rig(tmp_path, helm_bins[helm], emu)
        admin = _client(emu.kubeconfig)
        utils.create_from_dict(admin, CLUSTER_ADMIN)
        client.CoreV1Api(admin).create_namespace({"metadata": {"name": NS}})
        for crd in olm_crds():  # a cluster with OLM (OpenShift) that did not install the GPU Operator
            client.ApiextensionsV1Api(admin).create_custom_resource_definition(crd)
        docs = manifest_objects(MANIFEST)
        for doc in docs:
            utils.create_from_dict(admin, doc)
        kubeconfig = _serviceaccount_kubeconfig(emu, tmp_path)
        gds = {"version": "2.29.4"}

        rc, res, out = rig.play(**base(rig, go_kubeconfig=kubeconfig, go_gds=gds))
        assert rc == 0 and res["changed"] is True, out[-3000:]

        client.RbacAuthorizationV1Api(admin).delete_cluster_role_binding("gpudirect-storage-gpu-operator-install")
        rc, res, out = rig.play(**base(rig, go_kubeconfig=kubeconfig, go_gds=gds))
        assert rc == 0 and res["changed"] is False and res["cluster_policy"]["state"] == "ready", out[-3000:]
        rc, res, out = rig.play(check=True, **base(rig, go_kubeconfig=kubeconfig, go_gds={"version": "2.30.0"}))
        assert rc == 0 and res["changed"] is True, out[-3000:]
        rc, res, out = rig.play(**base(rig, go_kubeconfig=kubeconfig, go_gds={"version": "2.30.0"}))
        assert rc != 0 and "forbidden" in res["msg"].lower(), out[-3000:]

        # each list is needed (watch is what the wait uses while the cluster is not ready yet:
        # this cluster is ready at once, so it never watches)
        tried = []
        for role in [d for d in docs if d["kind"] in ("ClusterRole", "Role")]:
            for i, rule in enumerate(role["rules"]):
                for verb in [v for v in rule["verbs"] if v != "watch"]:
                    less = copy.deepcopy(role)
                    less["rules"][i]["verbs"] = [v for v in rule["verbs"] if v != verb]
                    _replace(admin, less)
                    try:
                        rc, res, out = rig.play(**base(rig, go_kubeconfig=kubeconfig, go_gds=gds))
                    finally:
                        _replace(admin, role)
                    assert rc != 0 and ("403" in res["msg"] or "forbidden" in res["msg"]), (verb, rule["resources"], out[-2000:])
                    if "subscriptions" in rule["resources"]:
                        # no OLM here, but a refused lookup proves nothing: fail, naming the ways out
                        assert "list subscriptions.operators.coreos.com is forbidden" in res["msg"], res["msg"]
                        assert "install_method: helm" in res["msg"] and res["changed"] is False, res["msg"]
                    tried.append(verb + " " + ",".join(rule["resources"]))
        assert tried == ["list nodes", "list clusterpolicies,nvidiadrivers", "list subscriptions,clusterserviceversions",
                         "list pods", "list secrets"], tried
    finally:
        emu.stop()
