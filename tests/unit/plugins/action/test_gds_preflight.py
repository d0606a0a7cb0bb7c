# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gds_preflight action: one gds_facts call with the ``facts`` options, the checks on the
controller, facts returned on success, the table and the
message alone on failure, bad options refused before the host is touched."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpudirect.storage.plugins.action import gds_preflight as action
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.action_harness import run_with_module_result
from ansible_collections.gpudirect.storage.tests.unit.plugins.plugin_utils.test__preflight import UBUNTU, facts

AnsibleActionFail = pytest.importorskip("ansible.errors").AnsibleActionFail


def run_action(args, module_result=None):
    if module_result is None:
        module_result = {"changed": False, "ansible_facts": {"gds": copy.deepcopy(UBUNTU)}}
    return run_with_module_result(action, "gpudirect.storage.gds_preflight", args, module_result)


def test_passes_with_the_facts_and_a_summary_from_one_module_call():
    gds = copy.deepcopy(UBUNTU)
    gds["cufile"] = {"files": [{"path": "/etc/cufile.json", "role": "global", "exists": True, "text": "{}"}]}
    result, execute = run_action({"facts": {"probe": True, "probe_size_mb": 16}}, {"ansible_facts": {"gds": gds}})
    execute.assert_called_once_with(module_name="gpudirect.storage.gds_facts",
                                    module_args={"probe": True, "probe_size_mb": 16}, task_vars={})
    assert not result.get("failed") and result["ansible_facts"]["gds"]["host"]["architecture"] == "x86_64"
    assert result["preflight"]["failures"] == [] and result["preflight"]["warnings"] == []
    assert [r["status"] for r in result["preflight"]["checks"]][:2] == ["passed", "passed"]
    assert result["msg"].startswith("Ubuntu 24.04 x86_64, kernel 6.8.0")
    cufile = result["ansible_facts"]["gds"]["cufile"]  # validated on the controller, the text dropped
    assert cufile["valid"] is True and cufile["validator"] == "ok" and "text" not in cufile["files"][0]


def test_default_facts_call_runs_no_probe():
    dummy, execute = run_action({})
    assert execute.call_args.kwargs["module_args"] == {"probe": False}


def test_failed_checks_fail_the_host_and_keep_the_facts_for_the_report():
    os_info = {"id": "debian", "version_id": "12", "major": "12", "distribution": "Debian"}
    debian = {"ansible_facts": {"gds": facts(host__os=os_info, host__free_mb={"/": 10})}}
    result, dummy = run_action({}, debian)
    assert result["failed"] is True
    assert result["msg"].startswith("preflight failed, nothing was changed: Debian 12 is not a supported GDS host OS")
    assert "only 10 MiB free on /" in result["msg"] and len([r for r in result["preflight"]["table"] if r.startswith("failed")]) == 2


def test_a_failed_result_is_the_message_and_the_table_without_the_facts():
    result, dummy = run_action({}, {"ansible_facts": {"gds": facts(host__free_mb={"/": 10})}})
    assert result["failed"] is True
    assert sorted(result) == ["changed", "failed", "msg", "preflight"]
    assert sorted(result["preflight"]) == ["failures", "table"]
    assert [r.split()[0] for r in result["preflight"]["table"]] == ["passed", "passed", "failed", "skipped", "passed"]
    assert len(result["preflight"]["failures"]) == 1 and result["preflight"]["failures"][0] in result["msg"]


def test_warnings_are_ansible_warnings():
    result, dummy = run_action({"fail_on_secure_boot": False}, {"ansible_facts": {"gds": facts(secure_boot="enabled")}})
    assert not result.get("failed") and result["warnings"][0].startswith("Secure Boot is enabled")


def test_a_failed_facts_call_is_reported_as_such():
    result, dummy = run_action({}, {"failed": True, "msg": "probe_size_mb=0 is out of range"})
    assert result["failed"] is True
    assert result["msg"] == "gds_facts failed, nothing was checked: probe_size_mb=0 is out of range"


@pytest.mark.parametrize("args, needle", [({"min_free_mb": "lots"}, "min_free_mb"), ({"facts": "probe"}, "facts"),
                                          ({"bogus_zz": 1}, "bogus_zz")])
def test_bad_options_are_refused_before_the_host_is_touched(args, needle):
    with pytest.raises(AnsibleActionFail, match=needle):
        run_action(args)
