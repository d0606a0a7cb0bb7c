# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_operator module in-process: a fake helm (real captured outputs, a small release state
machine) and a fake API source (captured JSON). Checks check mode, the 0600 values file, the
kubeconfig contents never leaving a 0600 temp file, rollback / uninstall on failure."""

from __future__ import annotations

import copy
import json
import os
import stat
from unittest import mock

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import cluster_policy as cp
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gpu_operator as mgr
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError, Result
from ansible_collections.gpudirect.storage.plugins.modules import gpu_operator
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import fixture_text, k8s_items
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module

CHART_META = fixture_text("helm", "captured", "4.1.4", "show-chart.txt")
CHART = "gpu-operator-26.7.0-test.1"


HEALTHY = {"clusterpolicies": k8s_items("clusterpolicies-ready.json"), "nodes": k8s_items("nodes-gpu.json"),
           "pods": k8s_items("pods-ready.json")}
CRASHING = {"clusterpolicies": k8s_items("clusterpolicies-notready.json"), "nodes": HEALTHY["nodes"],
            "pods": k8s_items("pods-crashloop.json")}


class FakeSource(object):
    """The API as the module reads it: lists of ``state``; a kind in ``forbidden`` answers 403;
    ClusterPolicy merge patches are applied and recorded."""

    def __init__(self, state, forbidden=()):
        self.state = state
        self.forbidden = forbidden
        self.patches = []

    def list(self, kind):
        if kind in self.forbidden:
            raise type("ApiException", (Exception,), {"status": 403, "reason": "Forbidden", "body": None})()
        return copy.deepcopy(self.state.get(kind, [])), "1"

    def watch(self, kind, rv, timeout):
        return iter(())

    def patch_policy(self, name, body):
        self.patches.append((name, copy.deepcopy(body)))
        policy = next(p for p in self.state["clusterpolicies"] if p["metadata"]["name"] == name)
        policy["spec"] = cp.apply_patch(policy["spec"], body)


class FakeHelm(object):
    """Answers helm argv like helm 4.1.4 would, keeping a release history."""

    def __init__(self, history=None, values=None, upgrade_rc=0, render_error=None):
        self.history = history or []
        self.values = values or {}
        self.upgrade_rc = upgrade_rc
        self.render_error = render_error  # helm fails before creating a revision
        self.calls = []
        self.seen = {}

    def _entry(self, status, description):
        return {"revision": len(self.history) + 1, "updated": "2026-11-23T05:22:28Z", "status": status,
                "chart": CHART, "app_version": "v26.7.0", "description": description}

    def __call__(self, argv, check=True, mutates=False, data=None, environ=None, cwd=None, hint=None):
        self.calls.append(list(argv))
        verb = argv[1]
        rc, out, err = 0, "", ""
        if "--kubeconfig" in argv:
            path = argv[argv.index("--kubeconfig") + 1]
            self.seen["kubeconfig"] = (stat.S_IMODE(os.stat(path).st_mode), open(path).read())
        if verb == "version":
            out = "v4.1.4+g05fa379\n"
        elif verb == "show":
            out = CHART_META
        elif verb == "history":
            if self.history:
                out = json.dumps(self.history)
            else:
                rc, err = 1, "Error: release: not found\n"
        elif verb == "get":
            out = json.dumps(self.values) if self.values else "null"
        elif verb == "template":
            if self.render_error:
                rc, err = 1, self.render_error
        elif verb == "upgrade":
            path = argv[argv.index("--values") + 1]
            self.seen["values_mode"] = stat.S_IMODE(os.stat(path).st_mode)
            self.seen["values_path"] = path
            self.seen.setdefault("timeouts", []).append(argv[argv.index("--timeout") + 1])
            if self.render_error:
                rc, err = 1, self.render_error
            elif self.upgrade_rc:
                rc, err = self.upgrade_rc, "Error: UPGRADE FAILED: context deadline exceeded\n"
                self.history.append(self._entry("failed", "Upgrade failed"))
            else:
                for entry in self.history:
                    entry["status"] = "superseded"
                self.history.append(self._entry("deployed", "Upgrade complete"))
                with open(path) as handle:
                    self.values = json.load(handle)
        elif verb == "rollback":
            self.seen.setdefault("timeouts", []).append(argv[argv.index("--timeout") + 1])
            for entry in self.history:
                entry["status"] = "superseded"
            self.history.append(self._entry("deployed", "Rollback to %s" % argv[3]))
        elif verb == "uninstall":
            if not self.history:
                rc, err = 1, "Error: uninstall: Release not loaded: gpu-operator: release: not found\n"
            self.history, self.values = [], {}
        if check and rc != 0:
            raise CommandError(argv, rc, out, err)
        return Result(argv, rc, out, err)


def deployed(values):
    return [{"revision": 1, "updated": "2026-11-23T05:22:28Z", "status": "deployed", "chart": CHART,
             "app_version": "v26.7.0", "description": "Install complete"}], values


def run(helm, args, state=None, **kw):
    runner = mock.Mock()
    runner.run.side_effect = helm
    base = {"chart_ref": "/charts/gpu-operator", "helm_binary": "helm", "wait_timeout": 2}
    base.update(args)
    base = {k: v for k, v in base.items() if v is not None}
    with mock.patch.object(mgr, "Runner", return_value=runner), \
            mock.patch.object(mgr.auth, "default_kubeconfig_exists", return_value=True), \
            mock.patch.object(mgr.GpuOperatorManager, "_source", return_value=FakeSource(state or HEALTHY)):
        return run_module(gpu_operator.main, base, **kw)


def verbs(helm):
    return [c[1] for c in helm.calls]


def test_fresh_install_values_file_0600_and_removed():
    helm = FakeHelm()
    res = run(helm, {"gds": {"version": "2.29.4"}, "driver": {"kernel_module_type": "open"}})
    assert res["changed"] is True and not res.get("failed"), res
    assert verbs(helm) == ["version", "show", "history", "template", "upgrade", "history"]
    assert helm.seen["values_mode"] == 0o600 and not os.path.exists(helm.seen["values_path"])
    assert helm.values == {"gds": {"enabled": True, "version": "2.29.4"}, "driver": {"kernelModuleType": "open"}}
    assert res["release"]["revision"] == 1 and res["release"]["status"] == "deployed"
    assert res["cluster_policy"]["state"] == "ready" and all(n["gds_ready"] for n in res["nodes"])
    assert res["helm_version"] == "4.1.4" and not any("--set" in c for c in res["commands"])


def test_idempotent_and_check_mode_diff():
    values = {"gds": {"enabled": True, "version": "2.29.4"}}
    helm = FakeHelm(*deployed(values))
    res = run(helm, {"gds": {"version": "2.29.4"}})
    assert res["changed"] is False and "upgrade" not in verbs(helm)
    helm = FakeHelm(*deployed(values))
    res = run(helm, {"gds": {"version": "2.30.1"}}, check_mode=True, diff=True)
    assert res["changed"] is True and res["reasons"] == ["values differ at gds.version"]
    assert "version: 2.29.4" in res["diff"]["before"] and "version: 2.30.1" in res["diff"]["after"]
    assert "upgrade" not in verbs(helm) and helm.values == values


def test_preflight_and_value_errors_change_nothing():
    helm = FakeHelm()
    res = run(helm, {"driver": {"kernel_module_type": "proprietary"}})
    assert res["failed"] and "driver.kernelModuleType: proprietary" in res["msg"]
    assert "upgrade" not in verbs(helm)
    helm = FakeHelm()
    res = run(helm, {"gds": {"version": "2"}, "values": {"gds": {"version": "1"}}})
    assert res["failed"] and "contradicts values gds.version" in res["msg"] and "upgrade" not in verbs(helm)


def test_upgrade_failure_rolls_back_and_reports_nodes():
    helm = FakeHelm(*deployed({"gds": {"enabled": True, "version": "2.29.4"}}), upgrade_rc=1)
    res = run(helm, {"gds": {"version": "2.99.0"}}, state=CRASHING)
    assert res["failed"] and res["rolled_back_to"] == 1 and res["changed"] is True
    assert "helm upgrade failed" in res["msg"] and "CrashLoopBackOff" in res["msg"]
    assert "rolled back to revision 1" in res["msg"]
    assert verbs(helm)[-2:] == ["rollback", "history"] and res["release"]["description"] == "Rollback to 1"


def test_first_install_not_ready_is_uninstalled():
    helm = FakeHelm()
    res = run(helm, {"wait_timeout": 1}, state=CRASHING)
    assert res["failed"] and "GDS not ready after 1s" in res["msg"]
    assert "first install failed, release uninstalled" in res["msg"] and "uninstall" in verbs(helm)
    assert res["release"]["status"] == "absent"


def test_unchanged_but_not_ready_is_not_rolled_back():
    helm = FakeHelm(*deployed({"gds": {"enabled": True}}))
    res = run(helm, {"wait_timeout": 1, "rollback_on_failure": True}, state=CRASHING)
    assert res["failed"] and "nothing was changed by this run" in res["msg"] and res["changed"] is False
    assert "rollback" not in verbs(helm) and "uninstall" not in verbs(helm)


def test_kubeconfig_content_stays_in_a_0600_temp_file():
    secret = "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: s3cr3t-token\n"
    helm = FakeHelm()
    res = run(helm, {"kubeconfig_content": secret})
    assert not res.get("failed"), res
    mode, content = helm.seen["kubeconfig"]
    assert mode == 0o600 and content == secret
    path = [c[c.index("--kubeconfig") + 1] for c in helm.calls if "--kubeconfig" in c][0]
    assert not os.path.exists(path)
    assert "s3cr3t-token" not in json.dumps(res)


def test_absent():
    helm = FakeHelm(*deployed({"gds": {"enabled": True}}))
    res = run(helm, {"state": "absent"}, check_mode=True, diff=True)
    assert res["changed"] is True and "uninstall" not in verbs(helm) and res["diff"]["after"].endswith("{}\n")
    res = run(helm, {"state": "absent"})
    assert res["changed"] is True and "uninstall" in verbs(helm) and res["release"]["status"] == "absent"
    res = run(FakeHelm(), {"state": "absent"})
    assert res["changed"] is False


@pytest.mark.parametrize("args,needle", [
    # chart_ref: only a helm install needs it (an OLM-installed operator is patched without a chart)
    ({"chart_ref": None}, "chart_ref is required with state=present"),
    ({"chart_ref": ""}, "chart_ref is required with state=present"),
    ({"kubeconfig": "/a", "kubeconfig_content": "x"}, "mutually exclusive"),
    ({"wait_timeout": "soon"}, "wait_timeout must be seconds"),
    ({"driver": {"kernel_module_type": "closed"}}, "kernel_module_type"),
])
def test_bad_arguments(args, needle):
    helm = FakeHelm()
    res = run(helm, args)
    assert res["failed"] and needle in res["msg"] and "upgrade" not in verbs(helm)


RENDER_ERROR = ("Error: execution error at (gpu-operator/templates/validations.yaml:10:4): "
                "the NRI Plugin cannot be enabled when CDI is disabled\n")


def test_render_failure_on_first_install_changes_nothing():
    helm = FakeHelm(render_error=RENDER_ERROR)
    res = run(helm, {"values": {"cdi": {"enabled": False, "nriPluginEnabled": True}}})
    assert res["failed"] and res["changed"] is False, res
    assert "the NRI Plugin cannot be enabled" in res["msg"] and "FAILED" not in res["msg"]
    assert "the chart refuses these values, nothing was changed" in res["msg"]
    assert "values set: cdi.enabled, cdi.nriPluginEnabled, gds.enabled" in res["msg"]
    assert "upgrade" not in verbs(helm) and "uninstall" not in verbs(helm)


def test_render_failure_on_upgrade_is_not_rolled_back():
    helm = FakeHelm(*deployed({"gds": {"enabled": True}}), render_error=RENDER_ERROR)
    res = run(helm, {"values": {"cdi": {"enabled": False, "nriPluginEnabled": True}}})
    assert res["failed"] and res["changed"] is False and res["rolled_back_to"] is None
    assert "rollback" not in verbs(helm) and [h["revision"] for h in helm.history] == [1]


def test_failed_run_is_bounded_by_wait_timeout():
    """helm and the wait share wait_timeout less a reserve; the rollback runs in that reserve,
    without --wait (a wait of ours that timed out would leave the release failed)."""
    helm = FakeHelm(*deployed({"gds": {"enabled": True, "version": "2.29.4"}}))
    res = run(helm, {"gds": {"version": "2.30.1"}, "wait_timeout": 7}, state=CRASHING)
    assert res["failed"] and res["rolled_back_to"] == 1 and res["elapsed"] <= 7
    upgrade, rollback = (int(t.rstrip("s")) for t in helm.seen["timeouts"])
    assert upgrade == 4 and 1 <= rollback <= 3
    assert not any(c[1] == "rollback" and any(a.startswith("--wait") for a in c) for c in helm.calls)
    helm = FakeHelm(*deployed({"gds": {"enabled": True, "version": "2.29.4"}}), upgrade_rc=1)
    res = run(helm, {"gds": {"version": "2.30.1"}, "wait_timeout": "1h"}, state=CRASHING)
    assert helm.seen["timeouts"][0] == "3540s", helm.seen
    assert "rolled back to revision 1" in res["msg"]


def test_zero_gpu_nodes_fail_while_gds_is_on():
    fresh = {"clusterpolicies": copy.deepcopy(HEALTHY["clusterpolicies"]), "pods": [],
             "nodes": [{"metadata": {"name": "cpu-0", "labels": {
                 "feature.node.kubernetes.io/system-os_release.ID": "debian"}}}]}
    fresh["clusterpolicies"][0]["status"]["conditions"][0]["reason"] = "NoGPUNodes"
    helm = FakeHelm()
    res = run(helm, {"wait_timeout": 1}, state=fresh)
    assert res["failed"] and "no GPU node" in res["msg"] and "NoGPUNodes" in res["msg"]
    assert "no node has an NVIDIA PCI device" in res["msg"]


def test_expected_gpu_nodes_and_selector():
    helm = FakeHelm(*deployed({"gds": {"enabled": True}}))
    res = run(helm, {"expected_gpu_nodes": 64, "wait_timeout": 1})
    assert res["failed"] and "2 of 64 expected GPU nodes" in res["msg"] and res["changed"] is False
    res = run(FakeHelm(*deployed({"gds": {"enabled": True}})), {"expected_gpu_nodes": 2})
    assert not res.get("failed") and res["changed"] is False, res
    helm = FakeHelm()
    res = run(helm, {"gpu_node_selector": "pool in (a)"})
    assert res["failed"] and "gpu_node_selector: cannot parse" in res["msg"] and verbs(helm) == []
    res = run(FakeHelm(), {"expected_gpu_nodes": 0})
    assert res["failed"] and "expected_gpu_nodes must be at least 1" in res["msg"]
