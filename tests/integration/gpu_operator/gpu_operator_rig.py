# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Shared rig of the gpu_operator integration tests (imported by name, not a conftest.py: several
suites run in one pytest session and tests/system/test_faults_k8s.py loads these tests too): real ansible-playbook, real helm 3.19.0 and
4.1.4, the Kubernetes API emulator over HTTPS with its own CA, and a chart: the test chart, or
the real NVIDIA GPU Operator chart when ``GPU_OPERATOR_CHART=/path`` (a chart directory or
``.tgz`` kept outside the repository) is set. Every emulator is a child process stopped by PID
in a finalizer.
"""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
import urllib.request

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
TEST_CHART = os.path.join(FIXTURES, "charts", "gpu-operator-test")
CHART = os.environ.get("GPU_OPERATOR_CHART") or TEST_CHART
REAL_CHART = CHART != TEST_CHART
CRASH_MESSAGE = "nvidia-fs: Unknown symbol nvidia_p2p_get_pages (err -2)"
NRI_WITHOUT_CDI = {"cdi": {"enabled": False, "nriPluginEnabled": True}}  # values the chart refuses to render

sys.path.insert(0, FIXTURES)
from k8s_emulator.fixture import Emulator  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.suite import (  # noqa: E402  pylint: disable=wrong-import-position
    HELM_VERSIONS, admin_token, ansible_env, helm_binaries, link_collection, run_playbook)


@pytest.fixture(scope="session")
def helm_bins():
    link_collection()
    return helm_binaries()


class Rig(object):
    """One emulator + one helm + the ansible-playbook runner for the steps of a test."""

    def __init__(self, tmp_path, helm, emulator):  # pylint: disable=redefined-outer-name
        self.tmp = str(tmp_path)
        self.helm = helm
        self.emu = emulator
        self.env = ansible_env(self.tmp, HELM_CACHE_HOME=os.path.join(self.tmp, "helm-cache"),
                               HELM_CONFIG_HOME=os.path.join(self.tmp, "helm-config"),
                               HELM_DATA_HOME=os.path.join(self.tmp, "helm-data"))
        self.runs = 0

    def play(self, playbook="module.yml", check=False, diff=False, **extra):
        """Run one step; returns (rc, result of the module task, stdout)."""
        self.runs += 1
        extra.setdefault("go_helm", self.helm)
        extra.setdefault("ansible_python_interpreter", sys.executable)
        vars_file = os.path.join(self.tmp, "vars-%d.json" % self.runs)
        with open(vars_file, "w") as handle:
            json.dump(extra, handle)
        argv = ["-i", "localhost,", os.path.join(HERE, "playbooks", playbook), "-e", "@" + vars_file]
        rc, tasks, stdout, _err = run_playbook(argv + ["--check"] * check + ["--diff"] * diff, self.tmp, self.env)
        hits = [hosts for name, hosts in tasks
                if "Run gpudirect.storage.gpu_operator" in name or "Install or upgrade the GPU Operator" in name]
        assert hits, stdout[-3000:]
        return rc, hits[0]["localhost"], stdout

    def restart(self, nodes):
        """The emulator again, empty, with these nodes."""
        self.emu.stop()
        self.emu.nodes = nodes
        self.emu.start()

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

    def api(self, method, path, body=None):
        """A call to the emulated API server with the kubeconfig's token (JSON in, JSON out)."""
        req = urllib.request.Request(self.emu.url + path, method=method, data=json.dumps(body).encode() if body else None,
                                     headers={"Authorization": "Bearer " + admin_token(self.emu.kubeconfig),
                                              "Content-Type": "application/json"})
        with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=self.emu.ca), timeout=10) as resp:
            return json.loads(resp.read())

    def leftovers(self, baseline):
        """Objects that are not in ``baseline`` and not kept by helm on purpose (CRDs, namespace)."""
        return [o for o in self.emu.objects() if tuple(o) not in baseline
                and o[1] != "customresourcedefinitions" and o[:2] != ["", "namespaces"]]


@pytest.fixture(params=HELM_VERSIONS)
def rig(request, helm_bins, tmp_path):
    emulator = Emulator(tmp_path / "emulator", pod_delay=0.3)
    emulator.start()
    try:
        yield Rig(tmp_path, helm_bins[request.param], emulator)
    finally:
        emulator.stop()


def base(rig, **extra):
    args = {"go_chart_ref": CHART, "go_kubeconfig": rig.emu.kubeconfig, "go_wait_timeout": 60}
    args.update(extra)
    return args


def node(result, name):
    return next(n for n in result["nodes"] if n["name"] == name)


def container(node_report, name):
    return next(c for c in node_report["containers"] if c["name"] == name)
