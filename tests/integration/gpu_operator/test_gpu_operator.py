# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""End-to-end tests of gpudirect.storage.gpu_operator: real ansible-playbook, real helm 3.19.0
and 4.1.4, the Kubernetes API emulator over HTTPS with its own CA, and the test chart (or the
real chart with ``GPU_OPERATOR_CHART=/path``; see conftest.py and docs/testing.md).

Run: ``.venv/bin/pytest -p no:cacheprovider tests/integration/gpu_operator`` (fetches helm into
build/helm on first use). Every emulator is a child process stopped by PID in a finalizer.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import time

import pytest
from gpu_operator_rig import CHART, CRASH_MESSAGE, REAL_CHART, base, container, helm_bins, node, rig  # noqa: F401 pylint: disable=import-error,unused-import


def test_lifecycle(rig):
    """install -> idempotent -> change gds.version -> check mode -> CrashLoopBackOff + rollback -> absent."""
    # install: helm upgrade --install, then ClusterPolicy ready and nvidia-fs-ctr ready on both GPU nodes
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.29.4"}, go_show_values=True))
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and res["reasons"] == ["release is not installed"]
    assert res["release"]["revision"] == 1 and res["release"]["status"] == "deployed"
    assert res["release"]["chart"].startswith("gpu-operator-")
    assert REAL_CHART or res["release"]["chart"] == "gpu-operator-26.7.0-test.1"
    assert res["helm_version"] == os.path.basename(os.path.dirname(rig.helm))
    assert res["applied_values"] == {"gds": {"enabled": True, "version": "2.29.4"}}
    assert res["cluster_policy"]["state"] == "ready"
    assert [n["name"] for n in res["nodes"]] == ["gpu-a", "gpu-b"]
    for name in ("gpu-a", "gpu-b"):
        report = node(res, name)
        assert report["gds_ready"] is True and report["os_supported"] is True and report["gpu_labelled"] is True
        # the operator appends -<os> of the first GPU node (ClusterPolicy mode: one DaemonSet)
        assert container(report, "nvidia-fs-ctr")["image"] == "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-ubuntu22.04"
    assert any(" upgrade --install " in c and "--values" in c and "--set" not in c for c in res["commands"])
    assert rig.user_values() == {"gds": {"enabled": True, "version": "2.29.4"}}

    # idempotent re-run: nothing to do, and GDS is still verified
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.29.4"}))
    assert rc == 0, out[-4000:]
    assert res["changed"] is False and res["reasons"] == [] and "applied_values" not in res
    assert not any(" upgrade " in c for c in res["commands"])
    assert res["release"]["revision"] == 1 and res["cluster_policy"]["state"] == "ready"

    # change gds.version: changed, new revision, nvidia-fs-ctr rolled to the new image
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.30.1"}))
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and res["reasons"] == ["values differ at gds.version"]
    assert res["release"]["revision"] == 2
    for name in ("gpu-a", "gpu-b"):
        assert container(node(res, name), "nvidia-fs-ctr")["image"].endswith(":2.30.1-ubuntu22.04")

    # check mode + diff of a further change: predicted changed, nothing touched
    before = rig.revisions()
    # (with a registry password in the values: masked in the diff, nowhere in the output)
    rc, res, out = rig.play(check=True, diff=True, **base(rig, go_gds={"version": "2.31.0"},
                                                          go_values={"driver": {"registryPassword": "Hunter2Int"}}))
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and "Hunter2Int" not in out and "registryPassword: '********'" in res["diff"]["after"]
    assert "2.30.1" in res["diff"]["before"] and "2.31.0" in res["diff"]["after"]
    assert not any(" upgrade " in c or " rollback " in c for c in res["commands"])
    assert rig.revisions() == before
    assert rig.user_values()["gds"]["version"] == "2.30.1"

    # nvidia-fs-ctr crash-loops with the new version: fail naming nodes + reason, roll back to 2
    rig.emu.control(crash_nvidia_fs_versions=["2.99.0"], crash_message=CRASH_MESSAGE)
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.99.0"}, go_wait_timeout=10))
    assert rc != 0 and res["failed"] is True
    for needle in ("gpu-a: nvidia-fs-ctr not ready", "gpu-b: nvidia-fs-ctr not ready", "CrashLoopBackOff",
                   CRASH_MESSAGE, "rolled back to revision 2"):
        assert needle in res["msg"], res["msg"]
    assert res["rolled_back_to"] == 2
    assert container(node(res, "gpu-a"), "nvidia-fs-ctr")["reason"] == "CrashLoopBackOff"
    assert rig.revisions()[-1] == (4, "deployed", "Rollback to 2")
    assert rig.user_values()["gds"]["version"] == "2.30.1"

    # after the rollback the previous version is healthy again and nothing needs doing
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.30.1"}))
    assert rc == 0, out[-4000:]
    assert res["changed"] is False and res["cluster_policy"]["state"] == "ready"
    assert all(n["gds_ready"] for n in res["nodes"])

    # absent: check mode predicts, the real run uninstalls, the next run has nothing to do
    rc, res, out = rig.play(check=True, go_state="absent", go_kubeconfig=rig.emu.kubeconfig)
    assert rc == 0 and res["changed"] is True, out[-4000:]
    assert rig.revisions()
    rc, res, out = rig.play(go_state="absent", go_kubeconfig=rig.emu.kubeconfig)
    assert rc == 0 and res["changed"] is True, out[-4000:]
    assert res["release"]["status"] == "absent" and rig.revisions() == []
    rc, res, out = rig.play(go_state="absent", go_kubeconfig=rig.emu.kubeconfig)
    assert rc == 0 and res["changed"] is False, out[-4000:]


@pytest.mark.parametrize("rig", ["4.1.4"], indirect=True)
def test_role_tgz_rdma_kubeconfig_content(rig):
    """The role with a packaged chart, RDMA on and the kubeconfig passed as (never logged) contents."""
    if CHART.endswith(".tgz"):  # GPU_OPERATOR_CHART already names a packaged chart
        tgz = CHART
    else:
        res = subprocess.run([rig.helm, "package", CHART, "--destination", rig.tmp], env=rig.env,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60, check=False)
        assert res.returncode == 0, res.stdout
        tgz = glob.glob(os.path.join(rig.tmp, "gpu-operator-*.tgz"))[0]
    with open(rig.emu.kubeconfig) as handle:
        token = [line.split()[-1] for line in handle if "token:" in line][0]
    extra = {"go_kubeconfig_file": rig.emu.kubeconfig, "gpu_operator_chart_ref": tgz,
             "gpu_operator_helm_binary": rig.helm, "gpu_operator_rdma_enabled": True,
             "gpu_operator_wait_timeout": "1m"}
    rc, first, out = rig.play("role.yml", **extra)
    assert rc == 0, out[-4000:]
    assert token not in out
    assert first["changed"] is True
    assert rig.user_values()["driver"] == {"kernelModuleType": "open", "rdma": {"enabled": True, "useHostMofed": False}}
    for report in first["nodes"]:
        assert container(report, "nvidia-peermem-ctr")["ready"] is True and report["gds_ready"] is True
    rc, second, out = rig.play("role.yml", **extra)
    assert rc == 0 and second["changed"] is False, out[-4000:]
    assert token not in out


@pytest.mark.parametrize("rig", ["3.19.0"], indirect=True)
def test_preflight_fails_before_any_change(rig):
    """Proprietary kernel module and an unsupported node OS stop the run before helm changes anything."""
    rig.emu.stop()
    rig.emu.nodes = "gpu-a:ubuntu:22.04:gpu,gpu-c:rocky:9.4:gpu,cpu-0:debian:12"
    rig.emu.start()
    rc, res, out = rig.play(**base(rig, go_driver={"kernel_module_type": "proprietary"}))
    assert rc != 0 and "driver.kernelModuleType: proprietary" in res["msg"], out[-4000:]
    rc, res, out = rig.play(**base(rig, go_values={"driver": {"enabled": False}}))
    assert rc != 0 and "driver.enabled: false" in res["msg"] and "nothing was changed" in res["msg"], out[-4000:]
    rc, res, out = rig.play(**base(rig, go_unsupported_os="fail"))
    assert rc != 0 and "gpu-c (rocky 9.4)" in res["msg"] and "nothing was changed" in res["msg"], out[-4000:]
    assert not any(" upgrade " in c for c in res["commands"])
    assert rig.revisions() == []
    rc, res, out = rig.play(check=True, **base(rig))
    assert rc == 0 and res["changed"] is True, out[-4000:]
    assert any("gpu-c (rocky 9.4)" in w for w in res.get("warnings", []))
    assert rig.revisions() == []


def test_release_stuck_pending_is_recovered(rig):
    """helm killed mid-upgrade leaves pending-upgrade: the run fails, rolls back, the next one is clean."""
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.30.1"}))
    assert rc == 0, out[-4000:]
    rig.emu.control(pod_delay_override=30)
    proc = subprocess.Popen([rig.helm, "upgrade", "gpu-operator", CHART, "--namespace", "gpu-operator",
                             "--set", "operator.version=v0-slow", "--wait", "--timeout", "60s",
                             "--kubeconfig", rig.emu.kubeconfig], env=rig.env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 30
    while time.time() < deadline and rig.revisions()[-1][1] != "pending-upgrade":
        time.sleep(0.2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    rig.emu.control(pod_delay_override=0)
    assert rig.revisions()[-1][:2] == (2, "pending-upgrade")
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.30.1"}))
    assert rc != 0 and res["reasons"][0] == "release status is pending-upgrade (revision 2)", out[-4000:]
    assert "another operation" in res["msg"] and res["rolled_back_to"] == 1
    rc, res, out = rig.play(**base(rig, go_gds={"version": "2.30.1"}))
    assert rc == 0 and res["changed"] is False and res["release"]["revision"] == 3, out[-4000:]
