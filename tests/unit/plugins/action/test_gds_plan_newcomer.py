# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_plan as a newcomer meets it: typos in variables are caught before anything changes,
extra-vars-only variables set in the inventory are named, stage failures name the inventory
variable, the plan's fields agree, and a failure names the reason with its checks, not the facts (the same at any -v)."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from ansible.utils.display import Display

from ansible_collections.gpudirect.storage.plugins.action import gds_plan as action
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_vars as _role_vars
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.action_harness import run_with_module_result
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gds_plan import module_result
from ansible_collections.gpudirect.storage.tests.unit.plugins.plugin_utils.test__preflight import facts


def run_action(args, out=None, task_vars=None, extra_vars=None):
    with patch.object(action, "load_extra_vars", return_value=dict(extra_vars or {})):
        return run_with_module_result(action, "gpudirect.storage.gds_plan", args,
                                      out if out is not None else module_result(), task_vars)


def test_a_typo_in_a_role_variable_fails_the_host_with_did_you_mean_before_the_host_is_touched():
    host_vars = {"cufile_setings": {"logging": {"level": "ERROR"}}, "gds_hosts": 1, "cufile_settings": {},
                 "lab_repo_url": "x"}
    result, execute = run_action({}, task_vars=host_vars)
    assert result["failed"] is True and execute.call_count == 0
    assert "cufile_setings (did you mean cufile_settings?)" in result["msg"]
    assert "gds_plan_unknown_variables: warn" in result["msg"]


def test_unknown_variables_can_be_warnings():
    result, execute = run_action({"unknown_variables": "warn"}, task_vars={"gds_verfy_probe_path": ["/mnt"]})
    assert not result.get("failed") and execute.call_count == 1
    assert any("gds_verfy_probe_path (did you mean gds_verify_probe_path?)" in w for w in result["warnings"])


def test_every_known_variable_passes():
    known = dict((name, None) for name in _role_vars.known_variables())
    extra_vars = dict((name, 1) for name in _role_vars.EXTRA_VARS_ONLY)  # gds_serial, gds_canary, ...
    result, dummy = run_action({}, task_vars=known, extra_vars=extra_vars)
    assert not result.get("failed") and not result.get("warnings"), result.get("warnings")


@pytest.mark.parametrize("name", ["gds_serial", "gds_max_fail_percentage"])
def test_extra_vars_only_variables_from_the_inventory_warn(name):
    result, dummy = run_action({}, task_vars={name: [1, "10%"]})
    assert not result.get("failed")
    assert any(w.startswith("%s is set in the inventory" % name) and "-e '{\"%s\": [1, \"10%%\"]}'" % name in w
               for w in result["warnings"]), result.get("warnings")
    result, dummy = run_action({}, task_vars={name: [1, "10%"]}, extra_vars={name: [1, "10%"]})
    assert not result.get("warnings")


def test_a_stage_failure_names_the_role_variable_not_the_module_option():
    out = module_result({"nvidia_fs": {"changed": False, "failed": True,
                                       "msg": "Debian 12 is not supported by GDS; set unsupported_os=warn to try "
                                              "anyway. Set mok_key/mok_cert to an enrolled MOK key pair, state=present"}},
                        converged=False)
    result, dummy = run_action({}, out)
    assert "set nvidia_fs_unsupported_os=warn" in result["msg"]
    assert "nvidia_fs_mok_key/nvidia_fs_mok_cert" in result["msg"] and "nvidia_fs_state=present" in result["msg"]


def test_no_stage_planned_says_so_and_never_claims_converged():
    result, dummy = run_action({}, module_result(stages={}, converged=False))
    assert result["converged"] is False and "converged" not in result["msg"]
    assert result["msg"].startswith("no stage planned")


@pytest.mark.parametrize("stages, converged", [
    ({}, False), ({"mofed": {"changed": False, "failed": False}}, True),
    ({"mofed": {"changed": True, "failed": False, "actions": ["install"]}}, False)])
def test_the_converged_field_and_the_message_agree(stages, converged):
    result, dummy = run_action({}, module_result(stages=stages, converged=converged))
    assert result["converged"] is converged
    assert result["msg"].startswith("converged") is converged


def test_preflight_only_joins_no_group_and_carries_the_table():
    result, dummy = run_action({"preflight": {}, "rollout_group": "", "converged_group": ""},
                               module_result(stages={}, converged=False))
    assert "add_group" not in result
    assert result["preflight"]["table"][0].startswith("passed   os")


@pytest.fixture(params=[0, 3], ids=["default", "-vvv"])
def verbosity(request):
    display = Display()
    before, display.verbosity = display.verbosity, request.param
    yield request.param
    display.verbosity = before


def test_a_failure_names_the_reason_and_shows_its_checks_at_any_verbosity(verbosity):
    out = module_result({"cufile": {"changed": False, "failed": True, "msg": "bad key", "findings": [{"x": 1}] * 40}},
                        converged=False, gds=facts(host__architecture="ppc64le"))
    result, dummy = run_action({"preflight": {}}, out)
    assert result["failed"] is True and "architecture ppc64le" in result["msg"]
    assert "ansible_facts" not in result  # the table and the failing checks, not the facts
    assert len(result["stages"]["cufile"]["findings"]) == 40
    assert "failures" in result["preflight"] and "table" in result["preflight"]


def test_a_gds_preflight_failure_is_short_and_a_gds_facts_failure_keeps_the_facts_at_any_verbosity(verbosity):
    from ansible_collections.gpudirect.storage.plugins.action import gds_facts as facts_action
    from ansible_collections.gpudirect.storage.plugins.action import gds_preflight as preflight_action
    bad = facts(host__architecture="ppc64le")
    result, dummy = run_with_module_result(preflight_action, "gpudirect.storage.gds_preflight", {},
                                           {"ansible_facts": {"gds": bad}})
    assert result["failed"] is True and "ansible_facts" not in result
    assert any("ppc64le" in row for row in result["preflight"]["table"])
    out = {"failed": True, "msg": "GDS verdict compat is weaker than the required gds", "ansible_facts": {"gds": bad}}
    result, dummy = run_with_module_result(facts_action, "gpudirect.storage.gds_facts", {}, out)
    assert result["failed"] is True and result["ansible_facts"]["gds"]["host"]["architecture"] == "ppc64le"
    assert result["msg"].startswith("GDS verdict compat is weaker")
