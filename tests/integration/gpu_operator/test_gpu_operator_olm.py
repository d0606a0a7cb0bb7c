# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.gpu_operator on a GPU Operator installed by OLM (OpenShift's OperatorHub):
real ansible-playbook, the Kubernetes API emulator with its stand-in OLM (k8s_emulator/olm.py:
Subscription -> CSV -> operator Deployment) and RHCOS GPU nodes, the ClusterPolicy created as the
console creates it from the CSV's alm-examples. GDS is turned on by a merge patch of that
ClusterPolicy, waited for per node; a helm release and an OLM install both present are refused.
"""

from __future__ import annotations

import glob
import os
import time

import pytest
import yaml
from gpu_operator_rig import CHART, TEST_CHART, Rig, container, helm_bins, node  # noqa: F401 pylint: disable=import-error,unused-import
from k8s_emulator.fixture import Emulator  # pylint: disable=import-error
from k8s_emulator.olm import olm_crds, operator_group, subscription  # pylint: disable=import-error

NS = "nvidia-gpu-operator"
CSV = "gpu-operator-certified.v26.7.0"
POLICY = "/apis/nvidia.com/v1/clusterpolicies/gpu-cluster-policy"
RHCOS_NODES = "gpu-a:rhcos:4.18:gpu,gpu-b:rhcos:4.18:gpu,cpu-0:rhcos:4.18"
# the CSV's alm-examples ClusterPolicy, the parts the stand-in operator and the test look at
ALM_EXAMPLE = {
    "operator": {"use_ocp_driver_toolkit": True},
    "driver": {"enabled": True, "useNvidiaDriverCRD": False, "kernelModuleType": "auto",
               "upgradePolicy": {"autoUpgrade": True, "maxParallelUpgrades": 1, "maxUnavailable": "25%"}},
    "toolkit": {"enabled": True}, "devicePlugin": {"enabled": True},
    "dcgmExporter": {"enabled": True, "serviceMonitor": {"enabled": True}},
    "daemonsets": {"updateStrategy": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "1"}},
    "gds": {"enabled": False}, "gdrcopy": {"enabled": False},
}


@pytest.fixture
def olm_rig(helm_bins, tmp_path):  # pylint: disable=redefined-outer-name
    emulator = Emulator(tmp_path / "emulator", nodes=RHCOS_NODES, pod_delay=0.3)
    emulator.start()
    try:
        yield Rig(tmp_path, helm_bins["3.19.0"], emulator)
    finally:
        emulator.stop()


def install_by_olm(rig):
    """What OperatorHub does: the bundle's CRDs, the namespace, an OperatorGroup and a
    Subscription; then OLM (the stand-in) installs the CSV; then the administrator creates the
    ClusterPolicy from alm-examples."""
    have = {o[3] for o in rig.emu.objects() if o[1] == "customresourcedefinitions"}
    crds = olm_crds() + [yaml.safe_load(open(path)) for path in sorted(glob.glob(os.path.join(TEST_CHART, "crds", "*.yaml")))]
    for crd in crds:
        if crd["metadata"]["name"] not in have:
            rig.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    rig.api("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    rig.api("POST", "/apis/operators.coreos.com/v1/namespaces/%s/operatorgroups" % NS, operator_group(NS))
    rig.api("POST", "/apis/operators.coreos.com/v1alpha1/namespaces/%s/subscriptions" % NS, subscription(NS))
    deadline = time.time() + 30
    while time.time() < deadline:
        csvs = rig.api("GET", "/apis/operators.coreos.com/v1alpha1/namespaces/%s/clusterserviceversions" % NS)["items"]
        if csvs and (csvs[0].get("status") or {}).get("phase") == "Succeeded":
            break
        time.sleep(0.2)
    else:
        raise AssertionError("the stand-in OLM did not install %s" % CSV)
    rig.api("POST", "/apis/nvidia.com/v1/clusterpolicies", {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
                                                            "metadata": {"name": "gpu-cluster-policy"},
                                                            "spec": ALM_EXAMPLE})


def olm_args(rig, **extra):
    args = {"go_kubeconfig": rig.emu.kubeconfig, "go_wait_timeout": 60, "go_gds": {"version": "2.29.4"}}
    args.update(extra)
    return args


def test_olm_installed_operator_gets_gds_by_a_clusterpolicy_patch(olm_rig):
    rig = olm_rig
    install_by_olm(rig)
    before = rig.api("GET", POLICY)

    # check mode + diff: the plan and the managed paths before/after; nothing touched
    rc, res, out = rig.play(check=True, diff=True, **olm_args(rig))
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and res["install_method"] == "olm"
    assert res["operator"] == {"method": "olm", "cluster_policy": "gpu-cluster-policy", "namespace": NS,
                               "subscription": "gpu-operator-certified", "csv": CSV, "csv_phase": "Succeeded",
                               "version": "26.7.0"}
    assert res["reasons"] == ["spec.gds.enabled: false -> true", "spec.gds.image: (unset) -> nvidia-fs",
                              "spec.gds.repository: (unset) -> nvcr.io/nvidia/cloud-native",
                              "spec.gds.version: (unset) -> 2.29.4"]
    diff = res["diff"][0] if isinstance(res["diff"], list) else res["diff"]
    assert "enabled: false" in diff["before"] and "version" not in diff["before"]
    assert "enabled: true" in diff["after"] and "version: 2.29.4" in diff["after"]
    assert "dcgmExporter" not in diff["after"]  # only the paths the module manages
    now = rig.api("GET", POLICY)
    # generation counts spec changes (the stand-in operator writes status meanwhile)
    assert now["metadata"]["generation"] == before["metadata"]["generation"] and now["spec"] == ALM_EXAMPLE

    # the run: a merge patch of the managed paths, then the wait for nvidia-fs-ctr on every GPU node
    rc, res, out = rig.play(**olm_args(rig))
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and res["install_method"] == "olm" and res["release"]["status"] == "none"
    assert res["cluster_policy"]["name"] == "gpu-cluster-policy" and res["cluster_policy"]["state"] == "ready"
    assert [n["name"] for n in res["nodes"]] == ["gpu-a", "gpu-b"] and res["gds_nodes"]["enabled"] == ["gpu-a", "gpu-b"]
    for name in ("gpu-a", "gpu-b"):
        report = node(res, name)
        assert report["gds_ready"] is True and report["os_supported"] is True
        assert report["pod"].startswith("nvidia-driver-daemonset-418.")  # OpenShift: one DaemonSet per RHCOS version
        assert container(report, "nvidia-fs-ctr")["image"] == "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-rhcos4.18"
    spec = rig.api("GET", POLICY)["spec"]
    assert spec["gds"] == {"enabled": True, "version": "2.29.4", "repository": "nvcr.io/nvidia/cloud-native",
                           "image": "nvidia-fs"}
    # every field the module does not manage is as the administrator left it
    assert {k: v for k, v in spec.items() if k != "gds"} == {k: v for k, v in ALM_EXAMPLE.items() if k != "gds"}

    # re-run and check mode: nothing to patch (the spec's generation stays), GDS verified again
    generation = rig.api("GET", POLICY)["metadata"]["generation"]
    rc, res, out = rig.play(**olm_args(rig))
    assert rc == 0, out[-4000:]
    assert res["changed"] is False and res["reasons"] == [] and all(node(res, n)["gds_ready"] for n in ("gpu-a", "gpu-b"))
    rc, res, out = rig.play(check=True, **olm_args(rig))
    assert rc == 0 and res["changed"] is False, out[-4000:]
    assert rig.api("GET", POLICY)["metadata"]["generation"] == generation


def test_helm_release_and_olm_install_both_present_refused_naming_both(olm_rig):
    rig = olm_rig
    rc, res, out = rig.play(go_chart_ref=CHART, go_kubeconfig=rig.emu.kubeconfig, go_wait=False, go_wait_timeout=60)
    assert rc == 0 and res["install_method"] == "helm" and res["release"]["revision"] == 1, out[-4000:]
    install_by_olm(rig)
    policies = {p["metadata"]["name"]: p["spec"] for p in rig.api("GET", "/apis/nvidia.com/v1/clusterpolicies")["items"]}

    forced = ({"go_chart_ref": CHART}, {}, {"go_install_method": "olm"},
              {"go_install_method": "helm", "go_chart_ref": CHART})
    for extra in forced:
        rc, res, out = rig.play(**olm_args(rig, **extra))
        assert rc != 0 and res["changed"] is False, out[-4000:]
        assert "helm release gpu-operator (namespace gpu-operator)" in res["msg"], res["msg"]
        assert "OLM Subscription gpu-operator-certified (CSV %s) in namespace %s" % (CSV, NS) in res["msg"]
        assert "nothing was changed" in res["msg"]
    assert [r[0] for r in rig.revisions()] == [1]  # helm did not run
    assert {p["metadata"]["name"]: p["spec"] for p in rig.api("GET", "/apis/nvidia.com/v1/clusterpolicies")["items"]} \
        == policies
