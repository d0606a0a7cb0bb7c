# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The rollout settings of site.yml (plugin_utils/_gds/rollout.py) and the gds_rollout_check
action that applies them before any host is touched."""

from __future__ import annotations

from unittest.mock import MagicMock, patch

import pytest

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import rollout

HOSTS = ["gpu-01", "gpu-02", "gpu-03"]


@pytest.mark.parametrize("value", [1, 0, "5", "10%", " 25 % ", [1, "10%", "25%"], []])
def test_batch_sizes_ansible_reads_pass(value):
    assert rollout.serial_problem(value) is None


@pytest.mark.parametrize("value, bad", [
    ([1, "ten%"], "'ten%' (element 2 of [1, \"ten%\"])"), ("ten%", "'ten%' is"), (True, "True"), (-1, "-1"),
    ("12.5%", "'12.5%'"), ([1, None], "None (element 2"), ({"a": 1}, "{'a': 1}"), (1.5, "1.5")])
def test_a_bad_batch_size_names_the_variable_the_element_and_the_forms(value, bad):
    problem = rollout.serial_problem(value)
    assert problem.startswith("gds_serial: ") and bad in problem, problem
    assert '"N%"' in problem and "a list of them" in problem


@pytest.mark.parametrize("value, ok", [(20, True), (0, True), (100, True), (12.5, True), ("20%", True),
                                       (101, False), (-1, False), ("lots", False), (True, False), ([20], False)])
def test_max_fail_percentage(value, ok):
    problem = rollout.max_fail_problem(value)
    assert (problem is None) is ok, problem
    if not ok:
        assert problem.startswith("gds_max_fail_percentage: ") and "0 to 100" in problem


def test_a_canary_that_is_no_host_of_the_group_is_named_with_the_group():
    assert rollout.canary_problem("gpu-02", "gds_hosts", HOSTS) is None
    assert rollout.canary_problem(["gpu-02", "gpu-01"], "gds_hosts", HOSTS) is None
    problem = rollout.canary_problem(["gpu-02", "gpu-z99"], "gds_hosts", HOSTS)
    assert problem.startswith("gds_canary names gpu-z99, not a host of group gds_hosts"), problem
    assert "gpu-01, gpu-02, gpu-03" in problem
    assert "not a host name" in rollout.canary_problem([1], "gds_hosts", HOSTS)


def test_no_hosts_in_the_group_says_which_group_and_how_to_name_another():
    problem = rollout.problems("gds_hosts", [], {}, {}, sources=["/inv/prod/hosts.yml"])
    assert len(problem) == 1
    assert "group gds_hosts" in problem[0] and "/inv/prod/hosts.yml" in problem[0]
    assert "{gds_hosts: {children: {my_gpu_hosts: {}}}}" in problem[0]


def test_settings_from_the_inventory_name_their_files_and_the_extra_var(tmp_path):
    inv = tmp_path / "prod"
    (inv / "group_vars" / "gds_hosts").mkdir(parents=True)
    (inv / "host_vars").mkdir()
    (inv / "hosts.yml").write_text("all:\n  children:\n    gds_hosts:\n      hosts: {gpu-01: , gpu-02: }\n")
    (inv / "group_vars" / "all.yml").write_text("gds_allow_reboot: true\n")
    (inv / "group_vars" / "gds_hosts" / "rollout.yml").write_text('gds_serial: [1, "50%"]\n')
    (inv / "host_vars" / "gpu-02.yml").write_text("gds_canary: gpu-02\n")
    found = rollout.problems("gds_hosts", HOSTS, {}, {"gds_serial": {h: [1, "50%"] for h in HOSTS},
                                                      "gds_canary": {"gpu-02": "gpu-02"}},
                             sources=[str(inv / "hosts.yml")], playbook_dir=str(tmp_path / "playbooks"))
    assert len(found) == 2, found
    serial, canary = found
    assert serial.startswith("gds_serial is set in %s " % (inv / "group_vars" / "gds_hosts" / "rollout.yml"))
    assert "(hosts gpu-01, gpu-02, gpu-03)" in serial and """-e '{"gds_serial": [1, "50%"]}'""" in serial
    assert canary.startswith("gds_canary is set in %s " % (inv / "host_vars" / "gpu-02.yml"))
    assert """-e '{"gds_canary": "gpu-02"}'""" in canary


def test_an_extra_var_wins_and_is_checked_a_setting_nowhere_found_says_the_inventory():
    inventory = {"gds_serial": {"gpu-01": "ten%"}}
    assert rollout.problems("gds_hosts", HOSTS, {"gds_serial": 2}, inventory) == []
    found = rollout.problems("gds_hosts", HOSTS, {"gds_serial": [1, "ten%"], "gds_canary": "gpu-z99"}, {})
    assert [p.split(":")[0].split(" ")[0] for p in found] == ["gds_serial", "gds_canary"], found
    found = rollout.problems("gds_hosts", HOSTS, {}, {"gds_max_fail_percentage": {"gpu-03": 10}})
    assert "in the inventory (its hosts file or a vars plugin) (hosts gpu-03)" in found[0]


def run_action(groups, hostvars=None, extra_vars=None, args=None, **task_vars):
    from ansible_collections.gpudirect.storage.plugins.action import gds_rollout_check as action
    task = MagicMock(args=dict(args or {}), async_val=0, check_mode=True, action="gpudirect.storage.gds_rollout_check")
    plugin = action.ActionModule(task, MagicMock(), MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    with patch.object(action, "load_extra_vars", return_value=dict(extra_vars or {})):
        return plugin.run(task_vars=dict(task_vars, groups=groups, hostvars=hostvars or {}))


def test_the_action_fails_naming_every_problem_and_reports_the_settings_in_effect():
    pytest.importorskip("ansible.plugins.action")
    result = run_action({"gds_hosts": HOSTS}, {h: {"gds_serial": 1} for h in HOSTS},
                        extra_vars={"gds_canary": "gpu-z99"})
    assert result["failed"] is True and result["msg"].endswith(" - nothing was changed")
    assert "gds_serial is set in the inventory" in result["msg"] and "gds_canary names gpu-z99" in result["msg"]
    result = run_action({}, {})
    assert result["failed"] is True and "group gds_hosts" in result["msg"]
    result = run_action({"gds_hosts": HOSTS}, {h: {"gds_serial": 1} for h in HOSTS},
                        extra_vars={"gds_serial": [1, "50%"], "gds_canary": "gpu-03"})
    assert not result.get("failed"), result
    assert result["settings"] == {"gds_serial": [1, "50%"], "gds_max_fail_percentage": 25, "gds_canary": "gpu-03"}
    assert result["hosts"] == 3 and result["changed"] is False
