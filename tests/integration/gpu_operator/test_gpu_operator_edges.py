# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_operator on the edge cases of a real cluster, end to end through the emulator:
no GPU node, NFD missing, NVIDIADriver node pools, OpenShift naming, a chart that refuses to
render, an expected GPU node count, CRD schema validation, and 20 install/uninstall cycles
that must leave nothing behind."""

from __future__ import annotations

import subprocess
import time
import urllib.error

import pytest
from gpu_operator_rig import CHART, NRI_WITHOUT_CDI, REAL_CHART, base, helm_bins, node, rig  # noqa: F401 pylint: disable=import-error,unused-import


def _driver_apps(rig):
    pods = rig.api("GET", "/api/v1/namespaces/gpu-operator/pods?labelSelector=app.kubernetes.io/component%3Dnvidia-driver")
    return {p["spec"]["nodeName"]: p["metadata"]["labels"]["app"] for p in pods["items"]}


@pytest.mark.parametrize("rig", ["3.19.0"], indirect=True)
@pytest.mark.parametrize("nodes,needles", [
    ("cpu-0:debian:12,cpu-1:ubuntu:22.04", ["no node has an NVIDIA PCI device", "ClusterPolicy reports NoGPUNodes"]),
    ("cpu-0:debian:12:nonfd,gpu-a:ubuntu:22.04:gpu:nonfd", ["NFD is missing", "NFDLabelsMissing"]),
])
def test_no_gpu_node_is_a_failure_not_a_success(rig, nodes, needles):
    rig.restart(nodes)
    rc, res, out = rig.play(**base(rig, go_wait_timeout=20))
    assert rc != 0 and res["failed"] is True, out[-4000:]
    assert "no GPU node: no node is labelled nvidia.com/gpu.present=true" in res["msg"], res["msg"]
    for needle in needles:
        assert needle in res["msg"], res["msg"]
    assert "first install failed, release uninstalled" in res["msg"] and rig.revisions() == []
    assert not any(n.get("ready") for n in res["nodes"])


@pytest.mark.parametrize("rig", ["4.1.4"], indirect=True)
def test_nvidiadriver_mode_with_two_node_pools(rig):
    values = {"driver": {"nvidiaDriverCRD": {"enabled": True}}}
    rc, res, out = rig.play(**base(rig, go_values=values))
    assert rc == 0 and all(n["gds_ready"] for n in res["nodes"]), out[-4000:]
    apps = _driver_apps(rig)
    assert sorted(apps) == ["gpu-a", "gpu-b"] and all(a.startswith("nvidia-gpu-driver-ubuntu") for a in apps.values())
    pool = {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "pool-b"},
            "spec": {"default": False, "driverType": "gpu", "image": "driver", "repository": "nvcr.io/nvidia", "version": "595.91.07",
                     "nodeSelector": {"kubernetes.io/hostname": "gpu-b"},
                     "gds": {"enabled": True, "repository": "nvcr.io/nvidia/cloud-native", "image": "nvidia-fs",
                             "version": "2.29.4"}}}
    # the CRD's openAPIV3Schema is enforced like a real API server does
    bad = dict(pool, metadata={"name": "bad"}, spec=dict(pool["spec"], gds={"enabled": "yes"}))
    with pytest.raises(urllib.error.HTTPError) as err:
        rig.api("POST", "/apis/nvidia.com/v1alpha1/nvidiadrivers", bad)
    assert err.value.code == 422 and "spec.gds.enabled in body must be of type boolean" in err.value.read().decode()
    rig.api("POST", "/apis/nvidia.com/v1alpha1/nvidiadrivers", pool)
    deadline = time.time() + 20
    while time.time() < deadline and len(set(_driver_apps(rig).values())) < 2:
        time.sleep(0.3)
    rc, res, out = rig.play(**base(rig, go_values=values))
    assert rc == 0 and res["changed"] is False and all(n["gds_ready"] for n in res["nodes"]), out[-4000:]
    apps = _driver_apps(rig)
    assert apps["gpu-a"].startswith("nvidia-gpu-driver-ubuntu22.04-")
    assert apps["gpu-b"].startswith("nvidia-gpu-driver-ubuntu24.04-") and apps["gpu-a"] != apps["gpu-b"]


@pytest.mark.parametrize("rig", ["3.19.0"], indirect=True)
def test_openshift_driver_toolkit_pods(rig):
    rig.restart("gpu-r:rhcos:4.18:gpu,cpu-0:rhcos:4.18")
    rc, res, out = rig.play(**base(rig))
    assert rc == 0 and res["cluster_policy"]["state"] == "ready", out[-4000:]
    report = node(res, "gpu-r")
    assert report["gds_ready"] is True and report["pod"].startswith("nvidia-driver-daemonset-418.92.")


@pytest.mark.parametrize("rig", ["3.19.0", "4.1.4"], indirect=True)
def test_failures_tell_the_truth(rig):
    """A chart that refuses to render changes nothing, so nothing is undone; nor is an unmet
    expected GPU node count on an unchanged release."""
    rc, res, out = rig.play(**base(rig, go_values=NRI_WITHOUT_CDI))
    assert rc != 0 and res["changed"] is False, out[-4000:]
    assert "NRI Plugin cannot be enabled when CDI is disabled" in res["msg"] and "FAILED" not in res["msg"]
    assert "the chart refuses these values, nothing was changed" in res["msg"]
    assert not any(" upgrade " in c or " uninstall " in c for c in res["commands"]) and rig.revisions() == []
    rc, res, out = rig.play(**base(rig))
    assert rc == 0 and res["release"]["revision"] == 1, out[-4000:]
    rc, res, out = rig.play(**base(rig, go_values=NRI_WITHOUT_CDI))
    assert rc != 0 and res["changed"] is False and res["rolled_back_to"] is None, out[-4000:]
    assert not any(" rollback " in c for c in res["commands"]) and len(rig.revisions()) == 1
    started = time.time()
    rc, res, out = rig.play(**base(rig, go_expected_gpu_nodes=3, go_wait_timeout=6))
    assert rc != 0 and "2 of 3 expected GPU nodes" in res["msg"] and res["changed"] is False, out[-4000:]
    assert time.time() - started < 6 + 30  # wait_timeout plus ansible's own start-up
    assert len(rig.revisions()) == 1


@pytest.mark.parametrize("rig", ["4.1.4"], indirect=True)
def test_twenty_install_uninstall_cycles_leave_nothing(rig):
    baseline = {tuple(o) for o in rig.emu.objects()}
    conn = ["--namespace", "gpu-operator", "--kubeconfig", rig.emu.kubeconfig]
    for cycle in range(20):
        res = subprocess.run([rig.helm, "upgrade", "--install", "gpu-operator", CHART, "--create-namespace",
                              "--set", "gds.enabled=true", "--wait", "--timeout", "60s"] + conn, env=rig.env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120, check=False)
        assert res.returncode == 0, (cycle, res.stdout[-2000:])
        deadline = time.time() + 10  # let the stand-in operator create its driver DaemonSet and pods
        while time.time() < deadline and len(_driver_apps(rig)) < 2:
            time.sleep(0.1)
        res = subprocess.run([rig.helm, "uninstall", "gpu-operator", "--wait", "--timeout", "60s"] + conn,
                             env=rig.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120,
                             check=False)
        assert res.returncode == 0, (cycle, res.stdout[-2000:])
        time.sleep(0.3)  # a controller tick or two
        assert rig.leftovers(baseline) == [], cycle
    time.sleep(1)
    assert rig.leftovers(baseline) == []
    assert not REAL_CHART or rig.revisions() == []
