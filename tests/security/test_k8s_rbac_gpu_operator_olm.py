# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""docs/rbac/gpu_operator_olm.yaml against the Kubernetes API emulator (RBAC enforced for the
ServiceAccount's token) on an OLM-installed GPU Operator: its rights enable GDS by the ClusterPolicy
patch and verify it; without each verb the run fails (forbidden), the list of OLM's objects too
(without it nobody can tell who installed the operator), before anything is patched.
"""

from __future__ import annotations

import copy
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gpu_operator"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gds_node_probe"))
from gpu_operator_rig import Emulator, Rig, helm_bins  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
from np_cluster import manifest_objects  # noqa: E402  pylint: disable=wrong-import-position
from test_gpu_operator_olm import NS, POLICY, RHCOS_NODES, install_by_olm, olm_args  # noqa: E402  pylint: disable=wrong-import-position
from rbac_roles import api_client, replace_role, serviceaccount_kubeconfig, without_each_verb  # noqa: E402  pylint: disable=wrong-import-position

MANIFEST = os.path.join(ROOT, "docs", "rbac", "gpu_operator_olm.yaml")
SA = "gpu-operator-gds"


def test_gpu_operator_olm_rbac_patch_and_verify(helm_bins, tmp_path):  # pylint: disable=redefined-outer-name
    from kubernetes import utils
    emu = Emulator(tmp_path / "emulator", nodes=RHCOS_NODES, pod_delay=0.3)
    emu.start()
    try:
        rig = Rig(tmp_path, helm_bins["3.19.0"], emu)
        install_by_olm(rig)
        admin = api_client(emu.kubeconfig)
        docs = manifest_objects(MANIFEST)
        for doc in docs:
            utils.create_from_dict(admin, doc)
        kubeconfig = serviceaccount_kubeconfig(emu, tmp_path, NS, SA)

        # every verb but patch, with a change to make: the patch is refused, nothing changed
        roles = [d for d in docs if d["kind"] in ("ClusterRole", "Role")]
        policy_rule = next(i for i, r in enumerate(roles[0]["rules"]) if "clusterpolicies" in r["resources"])
        less = copy.deepcopy(roles[0])
        less["rules"][policy_rule]["verbs"].remove("patch")
        replace_role(admin, less, NS)
        rc, res, out = rig.play(**olm_args(rig, go_kubeconfig=kubeconfig))
        assert rc != 0 and "403" in res["msg"] and "patching ClusterPolicy gpu-cluster-policy" in res["msg"], \
            out[-3000:]
        assert rig.api("GET", POLICY)["spec"]["gds"] == {"enabled": False}
        replace_role(admin, roles[0], NS)

        rc, res, out = rig.play(**olm_args(rig, go_kubeconfig=kubeconfig))
        assert rc == 0 and res["changed"] is True and res["install_method"] == "olm", out[-3000:]
        rc, res, out = rig.play(**olm_args(rig, go_kubeconfig=kubeconfig))
        assert rc == 0 and res["changed"] is False and res["cluster_policy"]["state"] == "ready", out[-3000:]

        # each list is needed (watch is what the wait uses while the cluster is not ready yet)
        tried = []
        for rule, _verb, (rc, res, out) in without_each_verb(
                admin, NS, docs, lambda: rig.play(**olm_args(rig, go_kubeconfig=kubeconfig)),
                verbs=lambda rule: ["list"] if "list" in rule["verbs"] else []):
            resources = ",".join(rule["resources"])
            tried.append(resources)
            if "subscriptions" in rule["resources"]:
                # who installed it stays unknown: refused before anything is patched
                assert rc != 0 and "cannot tell whether OLM installed the GPU Operator" in res["msg"], out[-3000:]
                assert "nothing was changed" in res["msg"], res["msg"]
                continue
            assert rc != 0 and ("403" in res["msg"] or "forbidden" in res["msg"].lower()), (resources, out[-2000:])
        assert tried == ["nodes", "clusterpolicies", "nvidiadrivers", "subscriptions,clusterserviceversions", "pods"]
    finally:
        emu.stop()
