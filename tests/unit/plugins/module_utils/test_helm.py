# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_helm: parsers on real helm 3.19.0 / 4.1.4 output (tests/fixtures/helm/captured, recaptured
by tests/fixtures/helm/capture.py), the change plan, the diff and the argv builders."""

from __future__ import annotations

import pytest
from ansible.module_utils.common.dict_transformations import dict_merge

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import helm as h
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import outcome as oc
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError, Result
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import fixture_text

VERSIONS = ("3.19.0", "4.1.4")


def captured(version, name):
    return fixture_text("helm", "captured", version, name)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["version.txt", "version-short.txt"])
def test_parse_version_real_output(version, name):
    assert h.parse_version(captured(version, name)) == tuple(int(p) for p in version.split("."))


@pytest.mark.parametrize("text,expected", [
    ("v3.19.0+g3d8990f\n", (3, 19, 0)),
    ("v4.3.1", (4, 3, 1)),
    ('version.BuildInfo{Version:"v3.14.4", GitCommit:"81c902a"}', (3, 14, 4)),
])
def test_parse_version_variants(text, expected):
    assert h.parse_version(text) == expected


@pytest.mark.parametrize("text", ["", "Client: &version.Version{SemVer:\"v2.17.0\"", "helm: command not found"])
def test_parse_version_rejects(text):
    with pytest.raises(h.HelmError, match="cannot parse helm version"):
        h.parse_version(text)


@pytest.mark.parametrize("version", VERSIONS)
def test_parse_history_failed_release(version):
    history = h.parse_history(captured(version, "history-failed.json"), "gpu-operator")
    assert [r["revision"] for r in history] == [1, 2, 3]
    assert [r["status"] for r in history] == ["superseded", "deployed", "failed"]
    assert history[-1]["chart_name"] == "gpu-operator"
    assert history[-1]["chart_version"] == "26.7.0-test.1"
    assert history[-1]["app_version"] == "v26.7.0"
    assert h.previous_good_revision(history) == 2


@pytest.mark.parametrize("version", VERSIONS)
def test_plan_release_failed_and_pending_need_action(version):
    desired_chart = {"name": "gpu-operator", "version": "26.7.0-test.1"}
    values = {"gds": {"enabled": True}}
    failed = h.parse_history(captured(version, "history-failed.json"))
    assert h.plan_release(failed, values, values, desired_chart) == (True, ["release status is failed (revision 3)"])
    pending = h.parse_history(captured(version, "history-pending.json"))
    needed, reasons = h.plan_release(pending, values, values, desired_chart)
    assert needed and reasons == ["release status is pending-upgrade (revision 4)"]
    assert h.previous_good_revision(pending) == 2


@pytest.mark.parametrize("version", VERSIONS)
def test_get_values_and_show_chart_real_output(version):
    assert h.parse_values(captured(version, "get-values-deployed.json")) == {"gds": {"enabled": True}}
    meta = h.parse_chart_metadata(captured(version, "show-chart.txt"))
    assert (meta["name"], meta["version"], meta["appVersion"]) == ("gpu-operator", "26.7.0-test.1", "v26.7.0")


def test_parse_values_null_and_errors():
    assert h.parse_values("null\n") == {}
    with pytest.raises(h.HelmError, match="not an object"):
        h.parse_values("[1]")
    with pytest.raises(h.HelmError, match="did not return JSON"):
        h.parse_values("Error: boom")


@pytest.mark.parametrize("chart,name,expected", [
    ("gpu-operator-v26.7.0", None, ("gpu-operator", "v26.7.0")),
    ("gpu-operator-26.7.0-test.1", None, ("gpu-operator", "26.7.0-test.1")),
    ("nginx-1-1.2.3", None, ("nginx-1", "1.2.3")),
    ("my-chart-2-0.1.0", "my-chart-2", ("my-chart-2", "0.1.0")),
    ("weird", None, ("weird", "")),
])
def test_split_chart(chart, name, expected):
    assert h.split_chart(chart, name) == expected


@pytest.mark.parametrize("value,seconds", [(600, 600), ("600", 600), ("10m", 600), ("1h2m3s", 3723), ("90s", 90)])
def test_parse_duration(value, seconds):
    assert h.parse_duration(value) == seconds


@pytest.mark.parametrize("value", ["", "ten", "5d", 0, -1, True])
def test_parse_duration_rejects(value):
    with pytest.raises(h.HelmError, match="wait_timeout"):
        h.parse_duration(value)


def test_parse_duration_message_in_yaml_terms():
    with pytest.raises(h.HelmError) as err:
        h.parse_duration(True)
    assert str(err.value) == "wait_timeout must be seconds or a duration like 10m, not true"
    with pytest.raises(h.HelmError) as err:
        h.parse_duration("ten")
    assert str(err.value).endswith('not "ten"')


def test_ansibles_dict_merge_merges_values_like_helm():
    """operator_values merges values files and values with ansible's dict_merge: helm -f's rule."""
    base = {"gds": {"enabled": False, "env": [{"name": "A"}]}, "driver": {"version": "1"}}
    over = {"gds": {"enabled": True, "env": []}, "driver": None}
    assert dict_merge(base, over) == {"gds": {"enabled": True, "env": []}, "driver": None}
    assert base["gds"]["enabled"] is False  # inputs untouched


def test_plan_release_cases():
    deployed = [{"revision": 3, "status": "deployed", "chart_name": "gpu-operator", "chart_version": "v26.3.1"}]
    chart = {"name": "gpu-operator", "version": "v26.3.1"}
    values = {"gds": {"enabled": True, "version": "2.27.3"}}
    assert h.plan_release([], {}, values, chart) == (True, ["release is not installed"])
    assert h.plan_release(deployed, values, values, chart) == (False, [])
    # Ansible-native vs JSON types compare equal after normalisation
    assert h.plan_release(deployed, {"n": [1, 2]}, {"n": (1, 2)}, chart) == (False, [])
    changed = dict(values, gds={"enabled": True, "version": "2.29.4"}, rdma=None)
    assert h.plan_release(deployed, values, changed, chart) == (True, ["values differ at gds.version, rdma"])
    assert h.plan_release(deployed, values, values, dict(chart, version="v26.7.0")) == (
        True, ["chart version v26.3.1 -> v26.7.0"])
    assert h.plan_release(deployed, values, values, {"name": "other", "version": "v26.3.1"})[1] == [
        "chart gpu-operator -> other"]
    # a subtree added or removed is named by its leaf paths, not by the subtree
    rdma = dict(values, driver={"rdma": {"enabled": True, "useHostMofed": True}})
    assert h.plan_release(deployed, values, rdma, chart)[1] == [
        "values differ at driver.rdma.enabled, driver.rdma.useHostMofed"]
    assert h.diff_paths(rdma, values) == ["driver.rdma.enabled", "driver.rdma.useHostMofed"]
    assert h.diff_paths({"a": {}}, {}) == ["a"]


def test_values_diff_and_paths():
    diff = h.values_diff("gpu-operator", {"gds": {"version": "1"}}, {"gds": {"version": "2"}}, "c-1", "c-2")
    assert diff["before"].startswith("# chart: c-1\n") and '"version": "1"' in diff["before"]
    assert '"version": "2"' in diff["after"]
    assert h.values_diff("r", {}, {})["before"] == "{}\n"
    assert h.diff_paths({"a": {"b": 1, "c": 2}}, {"a": {"b": 1, "c": 3, "d": 4}}) == ["a.c", "a.d"]


def test_upgrade_argv_helm3_and_helm4_wait():
    common = dict(release="gpu-operator", namespace="gpu-operator", chart_ref="gpu-operator", values_file="/t/v.yaml",
                  repo_url="https://charts.example", version="v26.7.0", timeout=600,
                  conn=h.connection_args("/k/config", "admin"))
    argv3 = h.upgrade_argv("helm", 3, **common)
    argv4 = h.upgrade_argv("helm", 4, **common)
    assert argv3[:5] == ["helm", "upgrade", "--install", "gpu-operator", "gpu-operator"]
    assert "--wait" in argv3 and "--wait=watcher" not in argv3
    assert "--wait=watcher" in argv4 and "--wait" not in argv4
    for argv in (argv3, argv4):
        assert argv[argv.index("--values") + 1] == "/t/v.yaml" and "--reset-values" in argv
        assert argv[argv.index("--timeout") + 1] == "600s"
        assert argv[-4:] == ["--kubeconfig", "/k/config", "--kube-context", "admin"]
        assert not any(a.startswith("--set") for a in argv)
    no_wait = h.upgrade_argv("helm", 4, create_namespace=False, wait=False, **common)
    assert "--create-namespace" not in no_wait and not any(a.startswith("--wait") for a in no_wait)


class FakeRunner(object):
    def __init__(self, results):
        self.results = list(results)
        self.calls = []

    def run(self, argv, check=True, mutates=False, hint=None):
        self.calls.append((list(argv), mutates))
        rc, out, err = self.results.pop(0)
        res = Result(argv, rc, out, err)
        if check and rc != 0:
            raise CommandError(argv, rc, out, err)
        return res


@pytest.mark.parametrize("version", VERSIONS)
def test_client_history_not_found_is_empty(version):
    text = captured(version, "history-not-found.txt").split("\n", 1)[1]
    runner = FakeRunner([(0, captured(version, "version-short.txt"), ""), (1, "", text)])
    client = h.Helm(runner, "helm", kubeconfig="/k")
    assert client.detect_version() == version and client.major == int(version[0])
    assert client.history("gpu-operator", "gpu-operator") == []
    assert runner.calls[1][0][-2:] == ["--kubeconfig", "/k"]


def test_client_history_other_error_raises_and_mutating_calls_are_marked():
    runner = FakeRunner([(0, "v4.1.4", ""), (1, "", "Error: Kubernetes cluster unreachable"),
                         (0, "", ""), (0, "", "")])
    client = h.Helm(runner)
    client.detect_version()
    with pytest.raises(CommandError, match="cluster unreachable"):
        client.history("gpu-operator", "gpu-operator")
    client.rollback("gpu-operator", "gpu-operator", 2, timeout=60)
    client.uninstall("gpu-operator", "gpu-operator", wait=False, timeout=60)
    assert runner.calls[2] == (["helm", "rollback", "gpu-operator", "2", "--namespace", "gpu-operator",
                                "--wait=watcher", "--timeout", "60s"], True)
    assert runner.calls[3][1] is True and "--wait=watcher" not in runner.calls[3][0]
    assert client.commands[2] == "helm rollback gpu-operator 2 --namespace gpu-operator --wait=watcher --timeout 60s"


def test_client_rejects_helm2():
    client = h.Helm(FakeRunner([(0, 'v2.17.0+ga690bad', "")]))
    with pytest.raises(h.HelmError, match="not supported"):
        client.detect_version()


def test_undo_reserve_stays_inside_wait_timeout():
    assert [oc.undo_reserve(t) for t in (2, 15, 60, 600, 3600)] == [1, 3, 12, 60, 60]
    assert oc.undo_reserve(15, slowest=0.6) == 5 and oc.undo_reserve(15, slowest=3) == 10
    assert oc.undo_reserve(600, slowest=2.2) == 60


def test_leftovers_of_a_failed_first_install():
    before = ({"a.example.com"}, False)
    after = ({"a.example.com", "clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"}, True)
    left = oc.leftovers(before, after, "gpu-operator")
    assert left == {"crds": ["clusterpolicies.nvidia.com", "nvidiadrivers.nvidia.com"], "namespace": "gpu-operator"}
    text = oc.leftovers_text(left)
    assert "kubectl delete crd clusterpolicies.nvidia.com nvidiadrivers.nvidia.com; kubectl delete namespace " \
           "gpu-operator" in text and "never removes them" in text
    assert oc.leftovers(after, after, "gpu-operator") == {"crds": [], "namespace": None}
    assert oc.leftovers_text({"crds": [], "namespace": None}) == "" and oc.leftovers(None, after, "x") is None


def test_error_text_drops_helm4_log_lines_and_repeats():
    text = ('level=WARN msg="upgrade failed" name=gpu-operator error="context deadline exceeded"\n'
            "Error: UPGRADE FAILED: context deadline exceeded\nError: UPGRADE FAILED: context deadline exceeded\n")
    assert oc.error_text(text) == "Error: UPGRADE FAILED: context deadline exceeded"
