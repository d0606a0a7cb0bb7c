# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gds_facts action plugin: cufile.json texts validated on the controller, texts dropped
from the facts, and a clear "validator unavailable" when jsonschema or the validator is missing."""

from __future__ import annotations

import copy
import os
import sys
from unittest import mock

import pytest

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.storage.plugins.action import gds_facts as action
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import results

SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                       "fixtures", "cufile", "cuda-13.0-shipped.json")
VALIDATOR = "ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate"


def shipped():
    with open(SHIPPED) as f:
        return f.read()


def gds(overlay=None, mode="compat"):
    files = [{"path": "/etc/cufile.json", "role": "global", "exists": True, "text": shipped()}]
    if overlay is not None:
        files.append({"path": "/tmp/user.json", "role": "overlay", "exists": True, "text": overlay})
    return {"mode": mode, "reason": "r", "reasons": ["r"], "nvidia_fs": {"loaded": False},
            "cufile": {"files": files, "env_path_json": "/tmp/user.json" if overlay is not None else None}}


def test_shipped_config_is_valid_and_text_dropped():
    facts = gds()
    results.validate_cufile(facts)
    cufile = facts["cufile"]
    assert cufile["validator"] == "ok" and cufile["valid"] is True and cufile["errors"] == 0
    assert all("text" not in f for f in cufile["files"])


def test_rejected_overlay_is_invalid_and_joins_a_failed_reason():
    facts = gds('{"properties": {"allow_compat_mode": false,}}', mode="failed")
    results.validate_cufile(facts)
    cufile = facts["cufile"]
    assert cufile["valid"] is False and cufile["errors"] == 1
    finding = cufile["findings"][0]
    assert finding["severity"] == "error" and finding["source"] == "/tmp/user.json" and finding["line"] == 1
    assert facts["reasons"][-1].startswith("cufile.json: $: JSON syntax error at line 1 column 43: trailing comma")
    assert facts["reason"] == "; ".join(facts["reasons"])


def test_overlay_warning_for_compat_disallowed_without_nvidia_fs():
    facts = gds('{"properties": {"allow_compat_mode": false}}')
    results.validate_cufile(facts)
    assert facts["cufile"]["valid"] is True and facts["cufile"]["warnings"] == 1
    assert "5001" in facts["cufile"]["findings"][0]["message"]
    assert facts["reasons"] == ["r"]


def test_no_config_at_all():
    facts = {"mode": "compat", "cufile": {"files": [{"path": "/etc/cufile.json", "role": "global", "exists": False}]}}
    results.validate_cufile(facts)
    assert facts["cufile"]["valid"] is True and "built-in defaults" in facts["cufile"]["note"]


def test_validator_unavailable_degrades(monkeypatch):
    monkeypatch.setitem(sys.modules, VALIDATOR, None)  # import raises ImportError
    facts = gds()
    results.validate_cufile(facts)
    assert facts["cufile"]["valid"] is None and facts["cufile"]["findings"] == []
    assert facts["cufile"]["validator"].startswith("validator unavailable: ")
    assert "text" not in facts["cufile"]["files"][0]


def test_jsonschema_missing_degrades(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    facts = gds()
    results.validate_cufile(facts)
    assert facts["cufile"]["validator"] == ("validator unavailable: the Python library jsonschema is not installed "
                                            "on the controller")


@pytest.mark.parametrize("failed", [False, True])
def test_run_executes_the_module_then_validates(failed):
    module_result = {"changed": False, "ansible_facts": {"gds": gds(mode="failed" if failed else "compat")}}
    if failed:
        module_result.update(failed=True, msg="GDS verdict is failed")
    plugin = action.ActionModule.__new__(action.ActionModule)
    plugin._task = mock.MagicMock(args={"probe_size_mb": 4})
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", return_value=copy.deepcopy(module_result)) as execute:
        result = plugin.run(task_vars={})
    execute.assert_called_once_with(module_name="gpudirect.storage.gds_facts", module_args={"probe_size_mb": 4},
                                    task_vars={})
    assert result["ansible_facts"]["gds"]["cufile"]["valid"] is True
    assert bool(result.get("failed")) is failed
    if failed:
        assert result["msg"] == "GDS verdict is failed"
    else:
        assert result["msg"].startswith("GDS mode compat (no verified I/O) write - GB/s")


def test_verdict_line_names_mode_io_throughput_versions_and_reason():
    facts = {"mode": "gds", "verified": True, "reason": "nvidia-fs Writes counter moved",
             "throughput": {"write_gbps": 12.5, "read_gbps": 13.1, "size_mb": 256},
             "versions": {"nvidia_driver": "580.95.05", "nvidia_kernel_module": "open", "libcufile": "1.15.1",
                          "nvidia_fs": "2.26.6"}}
    assert results.verdict_line(facts) == (
        "GDS mode gds (verified 256 MiB) write 12.5 GB/s, read 13.1 GB/s; driver 580.95.05 (open kernel module), "
        "libcufile 1.15.1, nvidia_fs 2.26.6: nvidia-fs Writes counter moved")


def test_warm_loads_jsonschema_and_the_schema_and_never_raises(monkeypatch):
    from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile import schema
    from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile import validate
    monkeypatch.setattr(schema, "_CACHE", {})
    monkeypatch.delitem(sys.modules, "jsonschema", raising=False)
    assert validate.warm() is None
    assert "jsonschema" in sys.modules and ("view", None, "1.15") in schema._CACHE  # what the forked workers inherit
    broken = mock.Mock(side_effect=RuntimeError("no jsonschema"))
    monkeypatch.setattr(validate, "lint_text", broken)
    assert validate.warm() is None and broken.call_count == 1  # reported by the real call, not at import


def test_validation_follows_the_host_libcufile_release():
    """Fact-time validation uses the libcufile found on the host (issue 18), and says so."""
    facts = gds()
    facts["libcufile"] = {"path": "/usr/local/cuda/lib64/libcufile.so.0", "version": "1.15.1"}
    results.validate_cufile(facts)
    assert facts["cufile"]["valid"] is True and facts["cufile"]["libcufile_release"] == "1.15"


def test_a_host_release_unknown_to_the_collection_is_not_judged_by_another_release():
    facts = gds()
    facts["libcufile"] = {"path": "/usr/local/cuda-11.8/lib64/libcufile.so.0", "version": "1.9.1"}
    results.validate_cufile(facts)
    cufile = facts["cufile"]
    assert cufile["valid"] is None and cufile["findings"] == [] and cufile["libcufile_release"] is None
    assert cufile["validator"] == ("not validated: the host's libcufile 1.9.1 is unknown to the collection (known releases: "
                                   "1.13, 1.14, 1.15, 1.16, 1.17, 1.18, 1.19, 1.20)")
    assert all("text" not in f for f in cufile["files"])


def test_no_libcufile_on_the_host_is_validated_against_the_newest_release_and_says_so():
    facts = gds()
    results.validate_cufile(facts)
    assert facts["cufile"]["valid"] is True and facts["cufile"]["libcufile_release"] == "1.15"
    assert facts["cufile"]["note"].startswith("no libcufile found on the host: validated against libcufile 1.15")


def run_in_role(role_name, task_vars, args=None, check_mode=False):
    """The action as a task of role ``role_name`` (ansible_role_name; None: a task of a playbook)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible_collections.gpudirect.storage.tests.unit.plugins.action.action_harness import run_with_module_result
    out = {"changed": False, "ansible_facts": {"gds": gds()}}
    task_vars = dict(task_vars, ansible_role_name=role_name) if role_name else task_vars
    return run_with_module_result(action, action.MODULE, args or {"probe": False}, out, task_vars=task_vars,
                                  templar=Templar(loader=DataLoader(), variables=task_vars), check_mode=check_mode)


@pytest.mark.parametrize("role_name", ["gds_verify", "gpudirect.storage.gds_verify"])
def test_in_the_gds_verify_role_a_bad_value_fails_naming_the_variable_before_the_host(role_name):
    """verify.yml imports the role without Ansible's own argument validation task: the one task
    checks the role's variables against its argument spec with Ansible's validator."""
    result, execute = run_in_role(role_name, {"gds_verify_probe_size_mb": "lots", "gds_verify_require_mode": "fast"})
    assert result["failed"] and execute.call_count == 0 and result["changed"] is False
    assert "gds_verify_probe_size_mb" in result["msg"] and "unable to convert to int" in result["msg"]
    assert "gds_verify_require_mode must be one of: compat, p2pdma, gds" in result["msg"]
    assert result["msg"].endswith("nothing was run on the host")
    result, execute = run_in_role("other.collection.gds_verify_x", {"gds_verify_probe_size_mb": "lots"})
    assert not result.get("failed") and execute.call_count == 1


def test_a_recorded_verdict_carries_the_controllers_cufile_validity():
    result, execute = run_in_role("gds_verify", {}, args={"require_mode": "compat", "record_path": "/r/v.json"})
    assert not result.get("failed"), result.get("msg")
    first, second = [c.kwargs["module_args"] for c in execute.call_args_list]
    assert first == {"require_mode": "compat"}
    assert second["record_path"] == "/r/v.json" and set(second) == {"record_path", "record"}
    assert second["record"]["cufile"]["valid"] is True and second["record"]["require_mode"] == "compat"
    assert all("text" not in f for f in second["record"]["cufile"]["files"])


def test_a_failed_verdict_is_not_recorded_and_the_record_option_is_the_actions_own():
    from ansible_collections.gpudirect.storage.tests.unit.plugins.action.action_harness import run_with_module_result
    out = {"failed": True, "msg": "GDS verdict failed", "ansible_facts": {"gds": gds(mode="failed")}}
    result, execute = run_with_module_result(action, action.MODULE, {"record_path": "/r/v.json"}, out)
    assert result["failed"] and execute.call_count == 1
    result, execute = run_with_module_result(action, action.MODULE, {"record": {"mode": "gds"}, "record_path": "/r"}, out)
    assert result["failed"] and "record" in result["msg"] and execute.call_count == 0


def test_in_the_gds_verify_role_a_misspelled_variable_fails_naming_the_likely_one():
    """verify.yml runs only this role: its one task names a variable nothing reads, with the one
    it probably meant, before anything runs on the host (site.yml's plan does the same)."""
    typo = {"gds_verify_require_mod": "gds"}
    result, execute = run_in_role("gds_verify", typo)
    assert result["failed"] and execute.call_count == 0 and result["changed"] is False
    assert "gds_verify_require_mod (did you mean gds_verify_require_mode?)" in result["msg"]
    assert "nothing was run on the host" in result["msg"]
    result, execute = run_in_role("gds_verify", dict(typo, gds_plan_unknown_variables="warn"))
    assert not result.get("failed") and execute.call_count == 1
    assert any("gds_verify_require_mod" in w for w in result["warnings"])
    result, execute = run_in_role("gds_verify", {"gds_verify_require_mode": "compat", "gds_verify_probe_size_mb": 16})
    assert not result.get("failed") and execute.call_count == 1
    result, execute = run_in_role(None, typo)  # a playbook's own gds_facts task: no role, no role variables
    assert not result.get("failed") and execute.call_count == 1


def test_importing_the_action_reads_the_roles_files_before_the_workers_fork(monkeypatch):
    # each host's worker is a fork of the process that imported the action: the roles' files,
    # parsed there once, are not parsed again per host
    import importlib
    from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_vars
    role_vars.known_variables.cache_clear()
    importlib.reload(action)
    assert role_vars.known_variables.cache_info().currsize == 1


def test_a_hosts_result_is_handled_with_what_the_action_imported_before_the_workers_fork():
    """Issue 21: a module the per-host path imports first in a worker is compiled for every host
    (Ansible's collection loader keeps no bytecode): host_release imported two of them there."""
    import subprocess
    import textwrap
    script = textwrap.dedent("""
        import json, sys
        from ansible_collections.gpudirect.storage.plugins.action import gds_facts, gds_preflight  # noqa: F401
        from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import results
        before = set(sys.modules)
        gds = json.loads(sys.stdin.read())
        results.validate_cufile(gds)
        results.verdict_line(gds)
        print(json.dumps([gds["cufile"].get("validator"), sorted(set(sys.modules) - before)]))
    """)
    facts = dict(gds(), libcufile={"version": "1.15.1"})
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    import json
    out = subprocess.run([sys.executable, "-c", script], input=json.dumps(facts), env=env, capture_output=True,
                         text=True, check=True).stdout
    validator, imported = json.loads(out.strip().splitlines()[-1])
    assert validator == "ok"
    assert [m for m in imported if m.startswith("ansible_collections.")] == []
