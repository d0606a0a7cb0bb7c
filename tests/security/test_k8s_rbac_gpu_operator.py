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

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gpu_operator"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gds_node_probe"))
from gpu_operator_rig import Emulator, Rig, base, helm_bins  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
from np_cluster import manifest_objects  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.olm import olm_crds  # noqa: E402  pylint: disable=wrong-import-position,import-error
from rbac_roles import api_client, serviceaccount_kubeconfig, without_each_verb  # noqa: E402  pylint: disable=wrong-import-position

MANIFEST = os.path.join(ROOT, "docs", "rbac", "gpu_operator.yaml")
NS = "gpu-operator"
# a real cluster's own cluster-admin (the emulator starts without any ClusterRole)
CLUSTER_ADMIN = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "cluster-admin"},
                 "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]}


@pytest.mark.parametrize("helm", ["3.19.0", "4.1.4"])
def test_gpu_operator_rbac_install_then_verify_only(helm_bins, tmp_path, helm):
    from kubernetes import client, utils
    emu = Emulator(tmp_path / "emulator", pod_delay=0.3)
    emu.start()
    try:
        rig = Rig(tmp_path, helm_bins[helm], emu)
        admin = api_client(emu.kubeconfig)
        utils.create_from_dict(admin, CLUSTER_ADMIN)
        client.CoreV1Api(admin).create_namespace({"metadata": {"name": NS}})
        for crd in olm_crds():  # a cluster with OLM (OpenShift) that did not install the GPU Operator
            client.ApiextensionsV1Api(admin).create_custom_resource_definition(crd)
        docs = manifest_objects(MANIFEST)
        for doc in docs:
            utils.create_from_dict(admin, doc)
        kubeconfig = serviceaccount_kubeconfig(emu, tmp_path, NS, "gpu-operator-installer")
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
        for rule, verb, (rc, res, out) in without_each_verb(
                admin, NS, docs, lambda: rig.play(**base(rig, go_kubeconfig=kubeconfig, go_gds=gds)),
                verbs=lambda rule: [v for v in rule["verbs"] if v != "watch"]):
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
