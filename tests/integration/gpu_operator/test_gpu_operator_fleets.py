# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_operator on mixed fleets, end to end through the emulator with helm 3 and 4: GDS on one
NVIDIADriver node pool only, a pool on an OS without a GDS driver that has GDS off, what a failed
first install leaves in the cluster, and the bound of the whole run (rollback included)."""

from __future__ import annotations

import subprocess
import time

import pytest
import yaml
from gpu_operator_rig import CHART, CRASH_MESSAGE, NRI_WITHOUT_CDI, base, helm_bins, node, rig  # noqa: F401 pylint: disable=import-error,unused-import

POOLS_ONLY = {"driver": {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}}}


def _pool(name, hostname, gds):
    spec = {"default": False, "driverType": "gpu", "image": "driver", "repository": "nvcr.io/nvidia",
            "version": "595.91.07", "nodeSelector": {"kubernetes.io/hostname": hostname}}
    if gds:
        spec["gds"] = {"enabled": True, "repository": "nvcr.io/nvidia/cloud-native", "image": "nvidia-fs",
                       "version": "2.29.4"}
    return {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": name}, "spec": spec}


def _node_pools(rig, pools):
    """The chart's NVIDIADriver CRD and one NVIDIADriver per node pool, made before the install
    (as a site with deployDefaultCR: false does)."""
    res = subprocess.run([rig.helm, "show", "crds", CHART], env=rig.env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stdout[-2000:]
    crd = next(d for d in yaml.safe_load_all(res.stdout) if d and d["metadata"]["name"] == "nvidiadrivers.nvidia.com")
    rig.api("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    for cr in pools:
        rig.api("POST", "/apis/nvidia.com/v1alpha1/nvidiadrivers", cr)


def _crds(rig):
    return sorted(c["metadata"]["name"] for c in
                  rig.api("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"])


def test_gds_on_one_nvidiadriver_pool_only(rig):
    _node_pools(rig, [_pool("storage", "gpu-a", True), _pool("compute", "gpu-b", False)])
    rc, res, out = rig.play(**base(rig, go_values=POOLS_ONLY))
    assert rc == 0, out[-4000:]
    storage, compute = node(res, "gpu-a"), node(res, "gpu-b")
    assert storage["gds_expected"] is True and storage["gds_ready"] is True and storage["ready"] is True
    assert storage["driver_config"] == "NVIDIADriver storage"
    assert compute["gds_expected"] is False and compute["gds_ready"] is False and compute["ready"] is True
    assert compute["driver_config"] == "NVIDIADriver compute"
    assert res["gds_nodes"] == {"enabled": ["gpu-a"], "disabled": ["gpu-b"]}
    rc, res, out = rig.play(**base(rig, go_values=POOLS_ONLY))
    assert rc == 0 and res["changed"] is False and res["gds_nodes"]["enabled"] == ["gpu-a"], out[-4000:]


def test_unsupported_os_pool_without_gds(rig):
    rig.restart("gpu-a:ubuntu:22.04:gpu,gpu-c:rocky:9.4:gpu,cpu-0:debian:12")
    _node_pools(rig, [_pool("storage", "gpu-a", True), _pool("compute", "gpu-c", False)])
    rc, res, out = rig.play(**base(rig, go_values=POOLS_ONLY, go_unsupported_os="fail", go_wait_timeout=30))
    assert rc == 0, out[-4000:]
    assert not any("gpu-c" in w for w in res.get("warnings", [])), res.get("warnings")
    rocky = node(res, "gpu-c")
    assert rocky["os_supported"] is False and rocky["gds_expected"] is False and rocky["ready"] is True
    assert res["gds_nodes"] == {"enabled": ["gpu-a"], "disabled": ["gpu-c"]}
    # ClusterPolicy mode puts GDS on every GPU node: now gpu-c counts, before helm changes anything
    rc, res, out = rig.play(**base(rig, go_unsupported_os="fail"))
    assert rc != 0 and "gpu-c (rocky 9.4)" in res["msg"] and "gpu-a" not in res["msg"], out[-4000:]
    assert len(rig.revisions()) == 1


def test_failed_first_install_names_what_it_leaves(rig):
    before = _crds(rig)
    # a chart that refuses to render fails before helm creates anything, in check mode too
    for check in (True, False):
        rc, res, out = rig.play(check=check, **base(rig, go_values=NRI_WITHOUT_CDI))
        assert rc != 0 and res["changed"] is False, out[-4000:]
        assert "NRI Plugin cannot be enabled when CDI is disabled" in res["msg"], res["msg"]
        assert "cdi.enabled" in res["msg"] and "cdi.nriPluginEnabled" in res["msg"], res["msg"]
        assert _crds(rig) == before and rig.revisions() == []
    # nvidia-fs-ctr crash-loops: the first install is uninstalled; its CRDs and namespace stay
    rig.emu.control(crash_nvidia_fs_versions=["*"], crash_message=CRASH_MESSAGE)
    rc, res, out = rig.play(**base(rig, go_wait_timeout=15))
    assert rc != 0 and "release uninstalled" in res["msg"] and rig.revisions() == [], out[-4000:]
    left = sorted(set(_crds(rig)) - set(before))
    assert "clusterpolicies.nvidia.com" in left
    assert res["changed"] is True and res["left_in_cluster"] == {"crds": left, "namespace": "gpu-operator"}
    for name in left + ["namespace gpu-operator", "kubectl delete crd"]:
        assert name in res["msg"], res["msg"]
    # a second failed install leaves nothing new
    rc, res, out = rig.play(**base(rig, go_wait_timeout=15))
    assert rc != 0 and res["changed"] is False and res["left_in_cluster"] == {"crds": [], "namespace": None}, out[-4000:]


@pytest.mark.parametrize("bound", [15, 60])
def test_the_run_ends_within_wait_timeout(rig, bound):
    """A crash-looping upgrade is rolled back inside wait_timeout; the release is never left failed."""
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.30.1"}))
    assert rc == 0, out[-4000:]
    rig.emu.control(crash_nvidia_fs_versions=["2.99.0"], crash_message=CRASH_MESSAGE)
    started = time.monotonic()
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.99.0"}, go_wait_timeout=bound))
    wall = time.monotonic() - started
    print("helm %s wait_timeout %ds: module %.1fs, ansible-playbook %.1fs: %s" % (
        res.get("helm_version"), bound, res["elapsed"], wall, res["msg"][-80:]))
    assert rc != 0 and res["elapsed"] <= bound, out[-4000:]
    assert "level=" not in res["msg"] and res["msg"].count("context deadline exceeded") <= 1, res["msg"]
    history = rig.revisions()
    if "leaves no time for helm upgrade" in res["msg"]:  # a host too loaded for this bound: nothing started
        assert len(history) == 1 and res["changed"] is False, history
    else:
        assert res["rolled_back_to"] == 1 and res["release"]["status"] == "deployed", out[-4000:]
        assert history[-1][1] == "deployed" and history[-1][2] == "Rollback to 1", history


@pytest.mark.parametrize("rig", ["4.1.4"], indirect=True)
def test_messages_in_the_users_terms(rig):
    """The fix is told where the user set the value, and following it literally works; a switch
    given as a string is refused, naming it."""
    rc, res, out = rig.play(**base(rig, go_values={"driver": {"kernelModuleType": "proprietary"}}))
    assert rc != 0 and "set driver.kernelModuleType: open (or auto) in values" in res["msg"], out[-4000:]
    rc, res, out = rig.play(check=True, **base(rig, go_values={"driver": {"kernelModuleType": "open"}}))
    assert rc == 0 and res["changed"] is True, out[-4000:]
    rc, res, out = rig.play(**base(rig, go_driver={"kernel_module_type": "proprietary"}))
    assert rc != 0 and "use driver.kernel_module_type: open (or auto)" in res["msg"], out[-4000:]
    rc, res, out = rig.play(**base(rig, go_values={"gds": {"enabled": "false"}}, go_gds={"version": "2.29.4"}))
    assert rc != 0 and 'values gds.enabled: "false" is a string, not a boolean' in res["msg"], out[-4000:]
    assert rig.revisions() == []
