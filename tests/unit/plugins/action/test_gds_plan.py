# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gds_plan action: one module call, the planned cufile.json validated here, preflight
checks, the host sorted into a group (as group_by does), require_mode held on converged hosts."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpudirect.storage.plugins.action import gds_plan as action
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.action_harness import run_with_module_result
from ansible_collections.gpudirect.storage.tests.unit.plugins.plugin_utils.test__preflight import UBUNTU, facts

AnsibleActionFail = pytest.importorskip("ansible.errors").AnsibleActionFail


def module_result(stages=None, converged=True, gds=None):
    return {"changed": False, "converged": converged, "stages": stages if stages is not None else
            {"mofed": {"changed": False, "failed": False, "actions": []}},
            "ansible_facts": {"gds": copy.deepcopy(gds or UBUNTU)}}


def run_action(args, out=None):
    return run_with_module_result(action, "gpudirect.storage.gds_plan", args,
                                  out if out is not None else module_result())


def test_converged_host_joins_the_converged_group_from_one_module_call():
    result, execute = run_action({"mofed": {"flavour": "doca-ofed"}, "facts": {"probe": True}})
    assert execute.call_count == 1
    sent = execute.call_args.kwargs["module_args"]
    assert sent == {"mofed": {"flavour": "doca-ofed"}, "facts": {"probe": True}}  # action-only options stay here
    assert not result.get("failed") and result["changed"] is False
    assert result["add_group"] == "gds_converged" and result["parent_groups"] == ["all"]
    assert result["msg"].startswith("converged: no stage would change anything; GDS now (no I/O) compat")


def test_a_host_to_change_joins_the_rollout_group_and_says_what_would_change():
    out = module_result({"mofed": {"changed": True, "failed": False, "actions": ["install doca-ofed=3.2.1"]},
                         "cufile": {"changed": True, "failed": False, "reasons": ["content"]}}, converged=False)
    result, _execute = run_action({"rollout_group": "todo"}, out)
    assert result["add_group"] == "todo" and result["converged"] is False
    assert result["msg"].startswith("would change: mofed (install doca-ofed=3.2.1); cufile (content)")


def test_the_passphrase_never_leaves_the_controller():
    _result, execute = run_action({"nvidia_fs": {"state": "present", "mok_key_passphrase": "s3cret"}})
    assert execute.call_args.kwargs["module_args"]["nvidia_fs"] == {"state": "present"}


def test_preflight_failures_and_stage_failures_fail_the_host_naming_them():
    gds = facts(host__architecture="ppc64le")
    out = module_result({"nvidia_fs": {"changed": False, "failed": True, "msg": "nvidia_fs preflight failed"}},
                        converged=False, gds=gds)
    result, _execute = run_action({"preflight": {}}, out)
    assert result["failed"] is True and "add_group" not in result
    assert result["msg"].startswith("preflight: architecture ppc64le is not supported")
    assert "nvidia_fs: nvidia_fs preflight failed" in result["msg"] and result["msg"].endswith("nothing was changed")
    assert "ansible_facts" not in result  # short: the message, the preflight table, the failed stages
    assert list(result["stages"]) == ["nvidia_fs"]


def test_preflight_warnings_are_warnings():
    result, _execute = run_action({"preflight": {"fail_on_secure_boot": False}},
                                  module_result(gds=facts(secure_boot="enabled")))
    assert not result.get("failed") and result["warnings"][0].startswith("Secure Boot is enabled")


def probed(mode, verified=True, proven=True):
    return facts(mode=mode, verified=verified, proven=proven, probe={"enabled": True, "ran": True})


@pytest.mark.parametrize("mode, required, ok", [("compat", "compat", True), ("compat", "gds", False),
                                                ("unavailable", "compat", False)])
def test_require_mode_is_held_on_converged_hosts(mode, required, ok):
    result, _execute = run_action({"require_mode": required}, module_result(gds=probed(mode)))
    assert bool(result.get("failed")) is not ok
    assert result["ansible_facts"]["gds"]["require_mode"] == {"mode": required, "proven": True, "met": ok}
    if not ok:
        assert result["msg"].startswith("GDS verdict %s is weaker than the required %s" % (mode, required))


def test_an_inferred_verdict_never_meets_require_mode_on_a_converged_host():
    """Issue 14: facts.probe=false and nvidia_fs loaded gave an inferred gds that passed require_mode=gds."""
    inferred = facts(mode="gds", verified=False, proven=False, probe={"enabled": False, "ran": False})
    result, _execute = run_action({"require_mode": "gds"}, module_result(gds=inferred))
    assert result["failed"] is True and "nothing was written" in result["msg"]
    assert "add_group" not in result


def test_an_unproven_gds_needs_require_proven_false():
    result, _execute = run_action({"require_mode": "gds"}, module_result(gds=probed("gds", proven=False)))
    assert result["failed"] is True and "not proven" in result["msg"]
    result, execute = run_action({"require_mode": "gds", "require_proven": False},
                                 module_result(gds=probed("gds", proven=False)))
    assert not result.get("failed") and result["add_group"] == "gds_converged"
    assert "require_proven" not in execute.call_args.kwargs["module_args"]  # decided here, on the controller


def test_require_mode_waits_for_the_verify_after_the_rollout():
    out = module_result({"mofed": {"changed": True, "failed": False}}, converged=False, gds=facts(mode="unavailable"))
    result, _execute = run_action({"require_mode": "gds"}, out)
    assert not result.get("failed") and result["add_group"] == "gds_rollout"
    assert "check_mode_verify" not in result and "require_mode" not in result["ansible_facts"]["gds"]


@pytest.mark.parametrize("required, says", [
    ("gds", "check mode: would require gds after installing mofed, cufile; not proven"),
    ("", "check mode: would verify the data path after installing mofed, cufile; not proven")])
def test_in_check_mode_a_host_to_change_says_what_its_verify_would_require_and_claims_nothing(required, says):
    out = module_result({"mofed": {"changed": True, "failed": False}, "nvidia_fs": {"changed": False, "failed": False},
                         "cufile": {"changed": True, "failed": False}}, converged=False, gds=facts(mode="unavailable"))
    result, _execute = run_with_module_result(action, "gpudirect.storage.gds_plan", {"require_mode": required}, out,
                                              check_mode=True)
    assert not result.get("failed") and result["add_group"] == "gds_rollout"
    assert result["check_mode_verify"] == says
    gds = result["ansible_facts"]["gds"]
    assert gds.get("require_mode") == ({"mode": "gds", "proven": True, "met": None} if required else None)


def test_a_cufile_plan_that_libcufile_would_refuse_fails_the_stage(tmp_path):
    props = {"posix_pool_slab_count": [1, 2], "posix_pool_slab_size_kb": [4, 8, 16]}
    planned = {"changed": True, "failed": False, "cufile": {"properties": props}, "base": "shipped",
               "libcufile": {"path": "/usr/lib/libcufile.so.0", "version": "1.15.1", "release": "1.15", "source": "host"}}
    result, execute = run_action({"cufile": {"path": str(tmp_path / "c.json")}},
                                 module_result({"cufile": planned}, converged=False))
    sent = execute.call_args.kwargs["module_args"]["cufile"]
    assert sent["_cufile"]["phase"] == "plan" and sent["path"] == str(tmp_path / "c.json")
    assert result["failed"] and result["stages"]["cufile"]["failed"]
    assert "posix_pool_slab_count" in result["msg"] and result["msg"].startswith("cufile: ")


def test_a_failed_module_call_is_the_result():
    result, _execute = run_action({}, {"failed": True, "msg": "facts: probe_size_mb=0 is out of range"})
    assert result["failed"] and result["msg"] == "facts: probe_size_mb=0 is out of range"


@pytest.mark.parametrize("args, needle", [({"require_mode": "fast"}, "require_mode"), ({"bogus_zz": 1}, "bogus_zz"),
                                          ({"preflight": {"min_free_mb": "lots"}}, "min_free_mb")])
def test_bad_options_are_refused_before_the_host_is_touched(args, needle):
    with pytest.raises(AnsibleActionFail, match=needle):
        run_action(args)


def test_module_warnings_are_kept_beside_the_preflight_warnings():
    out = module_result(gds=facts(secure_boot="enabled"))
    out["warnings"] = ["probe_path=auto found no mounted file system GDS can serve"]
    result, _execute = run_action({}, out)
    assert result["warnings"] == out["warnings"]
    result, _execute = run_action({"preflight": {}}, out)
    assert result["warnings"][0] == out["warnings"][0] and result["warnings"][1].startswith("Secure Boot is enabled")


def test_the_preflight_mok_cert_is_asked_about_on_the_host():
    """With Secure Boot on, the facts ask mokutil about the signing certificate (issue 18)."""
    _result, execute = run_action({"preflight": {"mok_key": "/k.priv", "mok_cert": "/k.der"}, "facts": {"probe": False}})
    assert execute.call_args.kwargs["module_args"]["facts"] == {"probe": False, "mok_cert": "/k.der"}
