# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""site.yml's plan task selects its stages from the gds_plan role's variables and the run's tags
in the action (role_args.selection), not in Jinja defaults that Ansible compiles again at every
reference and host: what --tags, --skip-tags, gds_<stage>_enabled and the gds_plan_* variables
select, and that a bad gds_plan_* variable is named before the host is touched."""

from __future__ import annotations

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_args as _role_args
from ansible_collections.gpudirect.storage.tests.unit.test_role_args import host_vars, run_roles

STAGES_ALL = ["gds_plan", "mofed", "nvidia_fs", "cufile", "gds_preflight", "gds_verify"]


def trusted(value):
    """A template as an inventory file gives it (trusted); other values as they are."""
    return trust_as_template(value) if isinstance(value, str) and "{{" in value else value


def select(**overrides):
    return _role_args.selection(Templar(loader=DataLoader()),
                                host_vars(**dict((k, trusted(v)) for k, v in overrides.items())))


@pytest.mark.parametrize("overrides, roles, preflight_only", [
    ({}, STAGES_ALL, False),
    ({"gds_mofed_enabled": False}, ["gds_plan", "nvidia_fs", "cufile", "gds_preflight", "gds_verify"], False),
    ({"gds_mofed_enabled": "false"}, ["gds_plan", "nvidia_fs", "cufile", "gds_preflight", "gds_verify"], False),
    ({"gds_cufile_enabled": "{{ 1 == 2 }}", "gds_mofed_enabled": "{{ 1 == 1 }}"}, ["gds_plan", "mofed", "nvidia_fs", "gds_preflight", "gds_verify"], False),
    ({"ansible_run_tags": ["nvidia_fs"]}, ["gds_plan", "nvidia_fs", "gds_preflight", "gds_verify"], False),
    ({"ansible_skip_tags": ["verify", "mofed"]}, ["gds_plan", "nvidia_fs", "cufile", "gds_preflight"], False),
    ({"ansible_skip_tags": ["preflight"]}, ["gds_plan", "mofed", "nvidia_fs", "cufile", "gds_verify"], False),
    ({"gds_preflight_enabled": False, "gds_verify_enabled": "no"}, ["gds_plan", "mofed", "nvidia_fs", "cufile"], False),
    ({"ansible_run_tags": ["preflight"]}, ["gds_plan", "gds_preflight", "gds_verify"], True),
    ({"ansible_run_tags": ["preflight", "verify"]}, ["gds_plan", "gds_preflight", "gds_verify"], False),
    ({"gds_plan_stages": ["cufile"]}, ["gds_plan", "cufile", "gds_preflight", "gds_verify"], False),
    ({"gds_plan_stages": "{{ ['mofed'] }}", "gds_plan_verify": "false"}, ["gds_plan", "mofed", "gds_preflight"], False),
    ({"ansible_run_tags": ["preflight"], "gds_plan_preflight_only": False}, ["gds_plan", "gds_preflight", "gds_verify"], False),
])
def test_the_stages_follow_the_tags_the_switches_and_the_gds_plan_variables(overrides, roles, preflight_only):
    selected, problem = select(**overrides)
    assert problem is None
    assert selected["roles"] == roles
    assert selected["preflight_only"] is preflight_only
    groups = ("", "") if preflight_only else ("gds_rollout", "gds_converged")
    assert (selected["rollout_group"], selected["converged_group"]) == groups
    assert selected["unknown_variables"] == "fail"


def test_the_groups_and_the_unknown_variables_policy_come_from_the_role_variables():
    selected, problem = select(gds_plan_rollout_group="todo", gds_plan_converged_group="done",
                               gds_plan_unknown_variables="warn")
    assert problem is None
    assert (selected["rollout_group"], selected["converged_group"], selected["unknown_variables"]) == ("todo", "done", "warn")


@pytest.mark.parametrize("overrides, needle", [
    ({"gds_plan_stages": ["mofed", "nvidia-fs"]}, "gds_plan_stages"),
    ({"gds_plan_verify": "maybe"}, "gds_plan_verify"),
    ({"gds_plan_unknown_variables": "loud"}, "gds_plan_unknown_variables"),
])
def test_a_bad_gds_plan_variable_is_named(overrides, needle):
    selected, problem = select(**overrides)
    assert selected is None and needle in problem and "nothing was changed" in problem


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
