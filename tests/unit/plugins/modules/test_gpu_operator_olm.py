# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_operator in-process on an OLM-installed GPU Operator: a fake API source (captured JSON,
OLM's Subscription and CSV, a ClusterPolicy without helm annotations) that records the merge
patches. No helm runs; check mode patches nothing; a failed wait puts the managed paths back."""

from __future__ import annotations

import copy
from unittest import mock

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gpu_operator as mgr
from ansible_collections.gpudirect.storage.plugins.modules import gpu_operator
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import k8s_items
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.test_gpu_operator import FakeSource

NS = "nvidia-gpu-operator"


def olm_state(spec_gds=None, pods=True):
    """An OpenShift-like cluster after OperatorHub: Subscription, CSV, the console's ClusterPolicy."""
    policy = copy.deepcopy(k8s_items("clusterpolicies-ready.json")[0])
    policy["metadata"] = {"name": "gpu-cluster-policy", "resourceVersion": "7"}
    policy["spec"]["gds"] = spec_gds if spec_gds is not None else {"enabled": False}
    policy["status"]["namespace"] = NS
    return {"clusterpolicies": [policy], "nodes": k8s_items("nodes-gpu.json"),
            "pods": k8s_items("pods-ready.json") if pods else [],
            "subscriptions": [{"metadata": {"name": "gpu-operator-certified", "namespace": NS},
                               "spec": {"name": "gpu-operator-certified", "channel": "v26.7"},
                               "status": {"installedCSV": "gpu-operator-certified.v26.7.0"}}],
            "clusterserviceversions": [{"metadata": {"name": "gpu-operator-certified.v26.7.0", "namespace": NS},
                                        "spec": {"version": "26.7.0"}, "status": {"phase": "Succeeded"}}]}


@pytest.fixture(autouse=True)
def kubeconfig(tmp_path, monkeypatch):
    """A kubeconfig file that exists (the API itself is the fake source)."""
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    monkeypatch.setitem(BASE, "kubeconfig", str(path))
    return path


BASE = {"wait_timeout": 3, "gds": {"version": "2.29.4"}}


def no_helm(argv, **kwargs):
    raise CommandError(argv, 127, "", "helm: not installed here")


def run(source, args, warnings=None, **kw):
    """The module's result; ``warnings``: a list that gets the warnings."""
    runner = mock.Mock()
    runner.run.side_effect = no_helm
    base = dict(BASE, **args)
    with mock.patch.object(mgr, "Runner", return_value=runner), \
            mock.patch.object(mgr.GpuOperatorManager, "_source", return_value=source), \
            mock.patch("ansible.module_utils.basic.AnsibleModule.warn") as warn:
        result = run_module(gpu_operator.main, {k: v for k, v in base.items() if v is not None}, **kw)
    if warnings is not None:
        warnings.extend(c.args[0] for c in warn.call_args_list)
    assert not runner.run.called or result.get("install_method") == "helm", "helm ran outside helm mode"
    return result


def test_patch_once_then_nothing_to_do():
    source = FakeSource(olm_state())
    res = run(source, {})
    assert not res.get("failed") and res["changed"] is True, res
    assert res["install_method"] == "olm" and res["release"]["status"] == "none" and res["commands"] == []
    assert res["operator"]["csv"] == "gpu-operator-certified.v26.7.0" and res["operator"]["namespace"] == NS
    assert source.patches == [("gpu-cluster-policy", {"spec": {"gds": {
        "enabled": True, "version": "2.29.4", "repository": "nvcr.io/nvidia/cloud-native", "image": "nvidia-fs"}}})]
    assert all(n["gds_ready"] for n in res["nodes"]) and res["cluster_policy"]["state"] == "ready"
    res = run(source, {})
    assert res["changed"] is False and res["reasons"] == [] and len(source.patches) == 1


def test_check_mode_and_diff_patch_nothing():
    source = FakeSource(olm_state())
    res = run(source, {"rdma": {"enabled": True, "use_host_mofed": True}}, check_mode=True, diff=True)
    assert res["changed"] is True and source.patches == []
    assert "spec.driver.rdma.useHostMofed: false -> true" in res["reasons"]
    assert "enabled: false" in res["diff"]["before"] and "useHostMofed: true" in res["diff"]["after"]
    assert "ClusterPolicy gpu-cluster-policy" in res["diff"]["before_header"]


def test_failed_wait_puts_the_managed_paths_back():
    source = FakeSource(olm_state(pods=False))
    res = run(source, {"wait_timeout": 2})
    assert res["failed"] and res["changed"] is True and "GDS not ready" in res["msg"]
    assert "put back as they were" in res["msg"]
    assert [body for dummy, body in source.patches][1] == {"spec": {"gds": {
        "enabled": False, "version": None, "repository": None, "image": None}}}
    assert source.state["clusterpolicies"][0]["spec"]["gds"] == {"enabled": False}


def test_refusals_change_nothing():
    both = olm_state()
    helm_policy = copy.deepcopy(k8s_items("clusterpolicies-ready.json")[0])  # helm's, annotated
    both["clusterpolicies"].append(helm_policy)
    source = FakeSource(both)
    res = run(source, {"chart_ref": "/charts/gpu-operator"})
    assert res["failed"] and res["changed"] is False and source.patches == []
    assert "helm release gpu-operator (namespace gpu-operator) and OLM Subscription gpu-operator-certified" in res["msg"]
    for args, needle in (({"values": {"gds": {"enabled": True}}}, "values: chart values apply to a helm install"),
                         ({"state": "absent"}, "state=absent uninstalls a helm release"),
                         ({"gds": {"enabled": True}}, "gds.version not set")):
        source = FakeSource(olm_state())
        res = run(source, args)
        assert res["failed"] and needle in res["msg"] and source.patches == [], (args, res["msg"])
    source = FakeSource(dict(olm_state(), clusterpolicies=[]))
    res = run(source, {})
    assert res["failed"] and "no ClusterPolicy to patch" in res["msg"]


@pytest.mark.parametrize("forced", ["olm", "auto"])
def test_a_clusterpolicy_no_helm_release_owns(forced):
    state = dict(olm_state(), subscriptions=[], clusterserviceversions=[])
    source = FakeSource(state)
    warnings = []
    res = run(source, {"install_method": forced, "chart_ref": "/charts/gpu-operator"}, warnings)
    assert not res.get("failed") and res["install_method"] == "clusterpolicy" and len(source.patches) == 1, res
    assert any("chart_ref ignored" in w for w in warnings), warnings


@pytest.mark.parametrize("forbidden", ["subscriptions", "clusterserviceversions"])
def test_olm_lists_forbidden_fail_before_anything_changes(forbidden):
    """auto: a refused list of OLM's objects is no proof that OLM did not install the operator."""
    source = FakeSource(olm_state(), forbidden=(forbidden,))
    res = run(source, {"chart_ref": "/charts/gpu-operator"})
    assert res["failed"] and res["changed"] is False and source.patches == [], res
    assert "list %s.operators.coreos.com is forbidden" % forbidden in res["msg"], res["msg"]
    assert "install_method: helm" in res["msg"] and "nothing was changed" in res["msg"], res["msg"]
    assert "helm: not installed here" not in res["msg"]  # helm never ran


def test_olm_lists_forbidden_with_install_method_helm_warn_and_go_on():
    source = FakeSource({"clusterpolicies": []}, forbidden=("subscriptions",))
    warnings = []
    res = run(source, {"chart_ref": "/charts/gpu-operator", "install_method": "helm"}, warnings)
    assert any("not checked whether OLM installed the GPU Operator" in w and "403" in w for w in warnings), warnings
    assert res["install_method"] == "helm" and "helm: not installed here" in res["msg"]


def test_no_olm_crds_means_no_olm():
    """404 (no OLM's CRDs on the cluster): KubeSource lists OLM's objects as none, not as an error."""
    from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import wait as kw

    class NoOlm(kw.KubeSource):
        def __init__(self):  # pylint: disable=super-init-not-called
            def missing(**kwargs):  # pylint: disable=unused-argument
                raise kw.ApiException(status=404, reason="Not Found")
            self.calls = {"subscriptions": missing, "clusterserviceversions": missing}
    assert NoOlm().list("subscriptions")[0] == []


def test_finding_the_installer_counts_against_wait_timeout():
    """The run ends within wait_timeout: the reads that find who installed the operator come out of
    the helm sequence's time (here they take 5 of the 15 s)."""
    from functools import partial
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gpu_operator_policy
    from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.test_gpu_operator import (
        HEALTHY, FakeHelm, deployed)
    now = [1000.0]

    class SlowOlmSource(FakeSource):
        def list(self, kind):
            if kind == "subscriptions":
                now[0] += 5
            return super(SlowOlmSource, self).list(kind)

    helm = FakeHelm(*deployed({"gds": {"enabled": True, "version": "2.29.4"}}))
    runner = mock.Mock()
    runner.run.side_effect = helm
    manager = partial(gpu_operator_policy.GpuOperatorManager, clock=lambda: now[0])
    with mock.patch.object(mgr, "Runner", return_value=runner), \
            mock.patch.object(gpu_operator, "GpuOperatorManager", manager), \
            mock.patch.object(mgr.GpuOperatorManager, "_source", return_value=SlowOlmSource(copy.deepcopy(HEALTHY))):
        res = run_module(gpu_operator.main, dict(BASE, chart_ref="/charts/gpu-operator", helm_binary="helm",
                                                 wait=False, wait_timeout=15, gds={"version": "2.30.1"}))
    assert not res.get("failed") and res["install_method"] == "helm", res
    # 15 s less the 5 s of reads, less the undo reserve (3 s): helm gets 7 s, not 12
    assert helm.seen["timeouts"] == ["7s"], helm.seen
