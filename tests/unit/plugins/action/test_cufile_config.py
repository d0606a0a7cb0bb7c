# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The cufile_config action plugin, with the module run in-process instead of over a connection."""

from __future__ import annotations

import hashlib
import os
from unittest.mock import MagicMock

import pytest

from ansible_collections.gpudirect.storage.plugins.action import cufile_config as action_mod
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import cufile_config as _cufile_config
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import loads
from ansible_collections.gpudirect.storage.plugins.modules import cufile_config as module_mod
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module

# cufile_version auto: the test host runs CUDA 13.0's libcufile 1.15.1 (tests/unit/conftest.py)
pytestmark = pytest.mark.usefixtures("host_libcufile_1_15")


def sha(path):
    with open(str(path), "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Harness(object):
    """An ActionModule whose _execute_module runs the module's main() here."""

    def __init__(self, tmp_path, monkeypatch, nvidia_fs=None):
        self.tmp_path = tmp_path
        self.calls = []
        monkeypatch.setattr(_cufile_config, "nvidia_fs_loaded", lambda paths=None: nvidia_fs)

    def run(self, check_mode=False, diff=False, **args):
        task = MagicMock(args=args, check_mode=check_mode, diff=diff, async_val=0, action="gpudirect.storage.cufile_config")
        connection = MagicMock()
        connection._shell.tmpdir = str(self.tmp_path)
        action = action_mod.ActionModule(task, connection, MagicMock(), MagicMock(), None, None)

        def execute(module_name, module_args, task_vars=None, **kwargs):
            assert module_name == "gpudirect.storage.cufile_config"
            self.calls.append(module_args["_cufile"]["phase"])
            return run_module(module_mod.main, module_args, check_mode=check_mode, diff=diff)

        action._execute_module = execute
        action._find_needle = lambda where, name: os.path.join(str(self.tmp_path), "files", name)
        self.calls = []
        return action.run(task_vars={})


@pytest.fixture
def harness(tmp_path, monkeypatch):
    return Harness(tmp_path, monkeypatch)


def test_writes_after_validation_and_second_run_is_one_round_trip(harness, tmp_path):
    target = tmp_path / "cufile.json"
    result = harness.run(path=str(target), settings={"properties": {"allow_compat_mode": False}})
    assert result["changed"] and harness.calls == ["plan", "apply"] and result["findings"] == []
    assert loads(target.read_text())["properties"]["allow_compat_mode"] is False
    assert result["cufile"]["properties"]["allow_compat_mode"] is False
    again = harness.run(path=str(target), settings={"properties": {"allow_compat_mode": False}})
    assert again["changed"] is False and harness.calls == ["plan"]


def test_rejected_settings_fail_with_all_findings_and_write_nothing(harness, tmp_path):
    target = tmp_path / "cufile.json"
    target.write_text('// mine\n{"profile": {"nvtx": true}}\n')
    before = sha(target)
    result = harness.run(path=str(target), backup=True, settings={
        "execution": {"allow_compat_mode": False}, "denylist": "nvme", "properties": {"io_batchsize": 512}})
    assert result["failed"] and result["changed"] is False and harness.calls == ["plan"]
    assert "3 errors, nothing was written" in result["msg"]
    paths = sorted(f["path"] for f in result["findings"] if f["severity"] == "error")
    assert paths == ["denylist", "execution.allow_compat_mode", "properties.io_batchsize"]
    assert sha(target) == before and sorted(os.listdir(str(tmp_path))) == ["cufile.json"]


def test_check_mode_reports_change_without_apply(harness, tmp_path):
    target = tmp_path / "cufile.json"
    result = harness.run(check_mode=True, diff=True, path=str(target), base="empty", settings={"profile": {"nvtx": True}})
    assert result["changed"] and harness.calls == ["plan"] and not target.exists()
    assert result["diff"]["before"] == "" and '"nvtx": true' in result["diff"]["after"]


def test_controller_src_with_syntax_error_never_reaches_the_host(harness, tmp_path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "cufile.json").write_text('{\n  "properties": {\n    "io_batchsize": 1,\n  }\n}\n')
    result = harness.run(path=str(tmp_path / "cufile.json"), src="cufile.json")
    assert result["failed"] and harness.calls == []
    (finding,) = result["findings"]
    assert (finding["path"], finding["line"], finding["column"], finding["code"]) == ("$", 3, 22, "syntax")


def test_controller_src_findings_carry_src_line_numbers(harness, tmp_path):
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "cufile.json").write_text('// reviewed\n{\n  "properties": {\n    "use_compat_mode": false\n  }\n}\n')
    result = harness.run(path=str(tmp_path / "cufile.json"), src="cufile.json")
    (finding,) = result["findings"]
    assert (finding["source"], finding["line"], finding["suggestion"]) == ("cufile.json", 4, "properties.allow_compat_mode")
    assert not (tmp_path / "cufile.json").exists()


def test_env_overlay_is_validated(harness, tmp_path):
    env = tmp_path / "user.json"
    env.write_text('{"properties": {"posix_pool_slab_size_kb": [4, 8]}}')
    target = tmp_path / "cufile.json"
    result = harness.run(path=str(target), env_path_json=str(env), base="shipped")
    assert result["failed"] and not target.exists()
    (finding,) = [f for f in result["findings"] if f["severity"] == "error"]
    assert (finding["source"], finding["path"]) == ("merged", "properties.posix_pool_slab_count")


def test_missing_host_paths_are_checked_on_the_target(harness, tmp_path):
    target = tmp_path / "cufile.json"
    result = harness.run(path=str(target), settings={"denylist": {"mounts": [str(tmp_path / "nope")]},
                                                     "logging": {"dir": str(tmp_path)}})
    assert result["failed"] and [f["path"] for f in result["findings"]] == ["denylist.mounts[0]"]
    assert not target.exists()


def test_compat_forbidden_without_nvidia_fs_warns(tmp_path, monkeypatch):
    harness = Harness(tmp_path, monkeypatch, nvidia_fs=False)
    result = harness.run(path=str(tmp_path / "cufile.json"), settings={"properties": {"allow_compat_mode": False}})
    assert result["changed"] and any("5001" in w for w in result["warnings"])
    assert [f["code"] for f in result["findings"]] == ["rule:no-compat-needs-nvidia-fs"]


def test_state_absent_skips_validation(harness, tmp_path):
    target = tmp_path / "cufile.json"
    target.write_text("{'not': json}")
    result = harness.run(path=str(target), state="absent", backup=True)
    assert result["changed"] and harness.calls == ["plan", "apply"] and not target.exists()
    assert open(result["backup_file"]).read() == "{'not': json}"


def test_internal_options_and_missing_jsonschema_are_refused(harness, tmp_path, monkeypatch):
    result = harness.run(path=str(tmp_path / "c.json"), _cufile={"phase": "apply"})
    assert result["failed"] and "internal" in result["msg"] and harness.calls == []
    from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile import action as _cufile_action
    monkeypatch.setattr(_cufile_action, "jsonschema_available", lambda: False)
    result = harness.run(path=str(tmp_path / "c.json"))
    assert result["failed"] and "jsonschema" in result["msg"] and harness.calls == []


def test_unknown_cufile_version_is_refused(harness, tmp_path):
    result = harness.run(path=str(tmp_path / "c.json"), cufile_version="9.9")
    assert result["failed"] and "9.9" in result["msg"]


def test_the_action_reads_unset_options_from_the_module_spec(monkeypatch):
    """Each default is stated once, in the module's argument spec: the controller half reads it
    from there (changing the spec changes what the action assumes)."""
    from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile import action as _cufile_action
    assert [_cufile_action.option({}, k) for k in ("state", "path", "cufile_version", "remote_src")] == [
        "present", "/etc/cufile.json", "auto", False]
    assert _cufile_action.option({"path": "/srv/cufile.json"}, "path") == "/srv/cufile.json"
    spec = _cufile_config.argument_spec()
    spec["path"]["default"] = "/opt/cufile.json"
    monkeypatch.setattr(_cufile_action, "argument_spec", lambda: spec)
    assert _cufile_action.option({"path": None}, "path") == "/opt/cufile.json"


def host_runs(monkeypatch, version, path="/usr/local/cuda/lib64/libcufile.so.0"):
    """The host's libcufile is ``version`` (cufile_version may only name the host's release)."""
    found = {"path": path, "version": version}
    monkeypatch.setattr(_cufile_config, "host_libcufile", lambda paths=None: dict(found))


def test_base_shipped_is_refused_for_a_release_without_a_known_shipped_file(harness, tmp_path, monkeypatch):
    host_runs(monkeypatch, "1.17.1")
    target = tmp_path / "c.json"
    for args in ({}, {"base": "shipped"}):
        result = harness.run(path=str(target), cufile_version="1.17", **args)
        assert result["failed"] and "no shipped file of libcufile 1.17" in result["msg"]
        assert not target.exists()


def test_a_release_view_validates_the_planned_document(harness, tmp_path, monkeypatch):
    target = tmp_path / "c.json"
    host_runs(monkeypatch, "1.20.0")
    result = harness.run(path=str(target), cufile_version="1.20", base="empty",
                         settings={"properties": {"gds_fallback_io": 1}})
    assert result["failed"] and "libcufile 1.20 refuses" in result["msg"] and "5002" in result["msg"]
    assert not target.exists()
    host_runs(monkeypatch, "1.13.1")
    ok = harness.run(path=str(target), cufile_version="1.13", base="empty",
                     settings={"properties": {"gds_fallback_io": 1}})
    assert not ok.get("failed") and any("ignored by libcufile 1.13: added in 1.19" in w for w in ok.get("warnings", []))
