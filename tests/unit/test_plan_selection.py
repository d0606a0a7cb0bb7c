# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""site.yml's plan task selects its stages from the gds_plan role's variables and the run's tags
in the action (role_options.selection): what --tags, --skip-tags, gds_<stage>_enabled and the
gds_plan_* variables select, and a bad gds_plan_* variable named before the host is touched."""

from __future__ import annotations

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_options as _role_options
from ansible_collections.gpudirect.storage.tests.unit.test_role_options import host_vars, run_roles

STAGES_ALL = ["mofed", "nvidia_fs", "cufile", "gds_preflight", "gds_verify"]


def select(**overrides):
    task_vars = host_vars(**overrides)
    selected, problem = _role_options.selection(Templar(loader=DataLoader(), variables=task_vars), task_vars)
    assert problem is None
    return selected


@pytest.mark.parametrize("overrides, roles, preflight_only", [
    ({}, STAGES_ALL, False),
    ({"gds_mofed_enabled": False}, ["nvidia_fs", "cufile", "gds_preflight", "gds_verify"], False),
    ({"gds_mofed_enabled": "false"}, ["nvidia_fs", "cufile", "gds_preflight", "gds_verify"], False),
    ({"gds_cufile_enabled": "{{ 1 == 2 }}", "gds_mofed_enabled": "{{ 1 == 1 }}"}, ["mofed", "nvidia_fs", "gds_preflight", "gds_verify"], False),
    ({"ansible_run_tags": ["nvidia_fs"]}, ["nvidia_fs", "gds_preflight", "gds_verify"], False),
    ({"ansible_skip_tags": ["verify", "mofed"]}, ["nvidia_fs", "cufile", "gds_preflight"], False),
    ({"ansible_skip_tags": ["preflight"]}, ["mofed", "nvidia_fs", "cufile", "gds_verify"], False),
    ({"gds_preflight_enabled": False, "gds_verify_enabled": "no"}, ["mofed", "nvidia_fs", "cufile"], False),
    ({"ansible_run_tags": ["preflight"]}, ["gds_preflight", "gds_verify"], True),
    ({"ansible_run_tags": ["preflight", "verify"]}, ["gds_preflight", "gds_verify"], False),
    ({"gds_plan_stages": ["cufile"]}, ["cufile", "gds_preflight", "gds_verify"], False),
    ({"gds_plan_stages": "{{ ['mofed'] }}", "gds_plan_verify": "false"}, ["mofed", "gds_preflight"], False),
    ({"ansible_run_tags": ["preflight"], "gds_plan_preflight_only": False}, ["gds_preflight", "gds_verify"], False),
])
def test_the_stages_follow_the_tags_the_switches_and_the_gds_plan_variables(overrides, roles, preflight_only):
    selected = select(**overrides)
    assert selected["roles"] == roles
    assert selected["preflight_only"] is preflight_only
    groups = ("", "") if preflight_only else ("gds_rollout", "gds_converged")
    assert (selected["rollout_group"], selected["converged_group"]) == groups
    assert selected["unknown_variables"] == "fail"


def test_the_groups_and_the_unknown_variables_policy_come_from_the_role_variables():
    selected = select(gds_plan_rollout_group="todo", gds_plan_converged_group="done", gds_plan_unknown_variables="warn")
    assert (selected["rollout_group"], selected["converged_group"], selected["unknown_variables"]) == ("todo", "done", "warn")


def test_the_action_plans_the_selected_roles_and_says_whether_the_run_is_preflight_only():
    result, execute = run_roles(select=True, ansible_run_tags=["preflight"])
    assert not result.get("failed"), result.get("msg")
    assert result["preflight_only"] is True and "add_group" not in result
    sent = execute.call_args.kwargs["module_args"]
    assert "mofed" not in sent and "nvidia_fs" not in sent and "cufile" not in sent
    result, execute = run_roles(select=True)
    assert result["preflight_only"] is False and result["add_group"] == "gds_converged"
    assert set(["mofed", "nvidia_fs", "cufile"]) <= set(execute.call_args.kwargs["module_args"])


def test_the_role_defaults_hold_no_template_the_plan_task_would_compile_per_host():
    defaults = host_vars()
    assert not [name for name, value in defaults.items() if isinstance(value, str) and "{{" in value]


@pytest.mark.parametrize("variable, value, needle", [
    ("gds_plan_stages", 5, "gds_plan_stages"), ("gds_plan_stages", ["mofed", "nvidia-fs"], "nvidia-fs"),
    ("gds_plan_stages", {"mofed": 1}, "gds_plan_stages"), ("gds_plan_verify", "maybe", "gds_plan_verify"),
    ("gds_plan_preflight_only", "{{ 'sure' }}", "gds_plan_preflight_only"),
    ("gds_plan_unknown_variables", "loud", "gds_plan_unknown_variables")])
def test_a_bad_gds_plan_variable_fails_naming_it_before_the_host_is_touched(variable, value, needle):
    result, execute = run_roles(select=True, **{variable: value})
    assert result["failed"] is True and execute.call_count == 0
    assert "gds_plan: " in result["msg"] and variable in result["msg"] and needle in result["msg"], result["msg"]
    assert "nothing was changed" in result["msg"]
