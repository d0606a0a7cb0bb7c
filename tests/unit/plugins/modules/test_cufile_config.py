# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.cufile_config, target side: plan and apply phases with temp dirs."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile import host_file as _host_file
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import cufile_config as _cufile_config
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import dumps, loads
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.shipped import shipped
from ansible_collections.gpudirect.storage.plugins.modules import cufile_config
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module

# cufile_version auto: the test host runs CUDA 13.0's libcufile 1.15.1 (tests/unit/conftest.py)
pytestmark = pytest.mark.usefixtures("host_libcufile_1_15")

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "cufile", "cuda-13.0-shipped.json")


def plan(path, check_mode=False, diff=False, internal=None, **args):
    args = dict(args, path=str(path), _cufile=dict(internal or {}, phase="plan"))
    return run_module(cufile_config.main, args, check_mode=check_mode, diff=diff)


def apply(path, planned, **args):
    internal = {"phase": "apply", "expect": planned["fingerprint"]}
    if "desired_text" in planned:
        internal["content"] = planned["desired_text"]
    return run_module(cufile_config.main, dict(args, path=str(path), _cufile=internal))


def converge(path, **args):
    planned = plan(path, **args)
    assert not planned.get("failed"), planned
    if not planned["changed"]:
        return planned, None
    return planned, apply(path, planned, **args)


def snapshot(directory):
    return sorted((n, os.lstat(os.path.join(str(directory), n)).st_mtime_ns) for n in os.listdir(str(directory)))


@pytest.mark.parametrize("internal", [None, {}, {"phase": "write"}])
def test_bare_module_run_is_refused(tmp_path, internal):
    result = run_module(cufile_config.main, {"path": str(tmp_path / "c.json"), "_cufile": internal})
    assert result["failed"] and "action plugin" in result["msg"]
    assert os.listdir(str(tmp_path)) == []


def test_apply_without_content_is_refused(tmp_path):
    target = tmp_path / "cufile.json"
    planned = plan(target, base="empty")
    result = run_module(cufile_config.main, {"path": str(target), "base": "empty",
                                             "_cufile": {"phase": "apply", "expect": planned["fingerprint"]}})
    assert result["failed"] and "no content" in result["msg"] and not target.exists()


def test_plan_never_writes_and_reports_create(tmp_path):
    target = tmp_path / "cufile.json"
    result = plan(target, settings={"properties": {"io_batchsize": 64}})
    assert result["changed"] and result["reasons"] == ["create"]
    assert result["cufile"]["properties"]["io_batchsize"] == 64
    assert result["cufile"]["logging"] == {"level": "ERROR"}          # base shipped by default
    assert loads(result["desired_text"]) == result["cufile"]
    assert result["fingerprint"] == "absent"
    assert os.listdir(str(tmp_path)) == []


def test_check_mode_plan_writes_nothing(tmp_path):
    target = tmp_path / "cufile.json"
    target.write_text('{"profile": {"nvtx": true}}')
    before = snapshot(tmp_path)
    result = plan(target, check_mode=True, diff=True, base="empty", settings={"profile": {"nvtx": False}})
    assert result["changed"] and result["diff"]["before"] == dumps({"profile": {"nvtx": True}})
    assert result["diff"]["after"] == dumps({"profile": {"nvtx": False}})
    assert snapshot(tmp_path) == before


def test_apply_writes_mode_and_second_run_is_unchanged(tmp_path):
    target = tmp_path / "cufile.json"
    planned, applied = converge(target, settings={"properties": {"allow_compat_mode": False}}, mode="0640")
    assert applied["changed"] and applied["backup_file"] is None
    assert loads(target.read_bytes()) == planned["cufile"]
    assert stat.S_IMODE(os.stat(str(target)).st_mode) == 0o640
    again, second = converge(target, settings={"properties": {"allow_compat_mode": False}}, mode="0640")
    assert again["changed"] is False and again["reasons"] == [] and second is None


def test_comments_and_formatting_alone_are_no_change(tmp_path):
    target = tmp_path / "cufile.json"
    with open(FIXTURE, "rb") as f:
        target.write_bytes(f.read())
    os.chmod(str(target), 0o644)
    result = plan(target)                                  # base shipped == the commented shipped file
    assert result["changed"] is False and result["current"] == shipped()


def test_attribute_only_change_is_planned_and_applied(tmp_path):
    target = tmp_path / "cufile.json"
    target.write_text(dumps(shipped()))
    os.chmod(str(target), 0o600)
    planned = plan(target, base="shipped")
    assert planned["changed"] and planned["reasons"] == ["attributes"]
    assert stat.S_IMODE(os.stat(str(target)).st_mode) == 0o600    # planning changes nothing
    applied = apply(target, planned)
    assert applied["changed"] and stat.S_IMODE(os.stat(str(target)).st_mode) == 0o644


def test_backup_is_created_when_replacing(tmp_path):
    target = tmp_path / "cufile.json"
    original = b'// mine\n{"profile": {"nvtx": true}}\n'
    target.write_bytes(original)
    planned, applied = converge(target, base="current", settings={"profile": {"cufile_stats": 1}}, backup=True)
    assert planned["cufile"] == {"profile": {"nvtx": True, "cufile_stats": 1}}
    with open(applied["backup_file"], "rb") as f:
        assert f.read() == original
    assert loads(target.read_bytes()) == planned["cufile"]


def test_settings_null_removes_a_key(tmp_path):
    target = tmp_path / "cufile.json"
    result = plan(target, settings={"properties": {"rdma_load_balancing_policy": None}, "fs": None})
    assert "rdma_load_balancing_policy" not in result["cufile"]["properties"] and "fs" not in result["cufile"]


def test_src_text_from_the_controller_with_settings(tmp_path):
    target = tmp_path / "cufile.json"
    result = plan(target, src="files/cufile.json", internal={"src_text": '// c\n{"logging": {"level": "INFO"}}'},
                  settings={"profile": {"nvtx": True}})
    assert result["cufile"] == {"logging": {"level": "INFO"}, "profile": {"nvtx": True}}


def test_remote_src_is_read_on_the_target(tmp_path):
    src = tmp_path / "src.json"
    src.write_text('{"logging": {"level": "INFO"}} // x')
    result = plan(tmp_path / "cufile.json", src=str(src), remote_src=True)
    assert result["cufile"] == {"logging": {"level": "INFO"}} and result["src_text"].endswith("// x")


@pytest.mark.parametrize("args, words", [
    ({"src": "x.json"}, "action plugin"),
    ({"src": "/nonexistent.json", "remote_src": True}, "cannot read src"),
    ({"src": "files/c.json", "internal": {"src_text": "{'a': 1}"}}, "single-quoted"),
    ({"base": "current"}, "does not parse"),
    ({"base": "shipped", "src": "x"}, "mutually exclusive"),
    ({"settings": {"a": float("nan")}}, "JSON cannot write"),
])
def test_bad_input_fails_and_writes_nothing(tmp_path, args, words):
    target = tmp_path / "cufile.json"
    target.write_text('{"broken": ,}')
    before = snapshot(tmp_path)
    result = plan(target, **args)
    assert result["failed"] and words in result["msg"]
    assert snapshot(tmp_path) == before and target.read_text() == '{"broken": ,}'


def test_unparsable_current_file_is_replaced(tmp_path):
    target = tmp_path / "cufile.json"
    target.write_text('{"a": 1,}')
    planned, applied = converge(target, base="empty", settings={"profile": {"nvtx": False}}, backup=True)
    assert planned["reasons"] == ["replace-unparsable"] and "line 1 column 8" in planned["current_error"]
    assert loads(target.read_text()) == {"profile": {"nvtx": False}}
    assert open(applied["backup_file"]).read() == '{"a": 1,}'


def test_apply_refuses_when_the_file_changed_since_plan(tmp_path):
    target = tmp_path / "cufile.json"
    target.write_text('{"profile": {"nvtx": true}}')
    planned = plan(target, base="empty", settings={"profile": {"nvtx": False}})
    target.write_text('{"profile": {"nvtx": "someone else"}}')
    result = apply(target, planned, base="empty", settings={"profile": {"nvtx": False}})
    assert result["failed"] and "changed on the host" in result["msg"]
    assert target.read_text() == '{"profile": {"nvtx": "someone else"}}'


def test_symlink_is_replaced_by_a_regular_file_and_the_target_is_untouched(tmp_path):
    cuda = tmp_path / "cuda-13.0" / "gds"
    cuda.mkdir(parents=True)
    package_file = cuda / "cufile.json"
    with open(FIXTURE, "rb") as f:
        shipped_bytes = f.read()
    package_file.write_bytes(shipped_bytes)
    alternatives = tmp_path / "alternatives"
    alternatives.mkdir()
    os.symlink(str(package_file), str(alternatives / "cufile.json"))
    etc = tmp_path / "etc"
    etc.mkdir()
    link = etc / "cufile.json"
    os.symlink(str(alternatives / "cufile.json"), str(link))

    planned = plan(link, diff=True, settings={"properties": {"io_batchsize": 64}}, backup=True)
    assert planned["reasons"] == ["content", "replace-symlink"]
    assert planned["link_target"] == str(alternatives / "cufile.json")
    assert "symlink to" in planned["diff"]["before_header"]
    applied = apply(link, planned, settings={"properties": {"io_batchsize": 64}}, backup=True)
    assert applied["changed"] and applied["link_target"] == str(alternatives / "cufile.json")
    assert not os.path.islink(str(link)) and loads(link.read_bytes())["properties"]["io_batchsize"] == 64
    assert package_file.read_bytes() == shipped_bytes                          # CUDA file untouched
    backup = applied["backup_file"]
    assert os.path.islink(backup) and os.readlink(backup) == str(alternatives / "cufile.json")
    assert converge(link, settings={"properties": {"io_batchsize": 64}})[0]["changed"] is False


def test_symlink_with_identical_content_is_still_taken_over(tmp_path):
    real = tmp_path / "real.json"
    real.write_text(dumps(shipped()))
    link = tmp_path / "cufile.json"
    os.symlink(str(real), str(link))
    planned, applied = converge(link, base="shipped")
    assert planned["reasons"] == ["replace-symlink"] and applied["changed"]
    assert not os.path.islink(str(link)) and real.read_text() == dumps(shipped())


def test_dangling_symlink_is_replaced(tmp_path):
    link = tmp_path / "cufile.json"
    os.symlink(str(tmp_path / "gone.json"), str(link))
    planned, applied = converge(link, base="empty", settings={"profile": {"nvtx": True}})
    assert planned["reasons"] == ["create", "replace-symlink"] and applied["changed"]
    assert loads(link.read_text()) == {"profile": {"nvtx": True}}


def test_state_absent_removes_with_backup_and_is_idempotent(tmp_path):
    target = tmp_path / "cufile.json"
    target.write_text("{}")
    planned = plan(target, state="absent")
    assert planned["changed"] and planned["cufile"] is None and target.exists()
    applied = apply(target, planned, state="absent", backup=True)
    assert applied["changed"] and not target.exists() and open(applied["backup_file"]).read() == "{}"
    assert plan(target, state="absent")["changed"] is False


def test_atomic_write_goes_through_a_temp_file_in_the_same_directory(tmp_path, monkeypatch):
    target = tmp_path / "cufile.json"
    target.write_text('{"profile": {"nvtx": true}}')
    moves = []
    from ansible.module_utils.basic import AnsibleModule
    real_move = AnsibleModule.atomic_move

    def spy(self, src, dest, *a, **kw):
        moves.append((os.path.dirname(src), os.path.basename(src), dest, open(src).read()))
        assert json.loads(open(dest).read()) == {"profile": {"nvtx": True}}   # old content until the rename
        return real_move(self, src, dest, *a, **kw)

    monkeypatch.setattr(AnsibleModule, "atomic_move", spy)
    converge(target, base="empty", settings={"profile": {"nvtx": False}})
    ((directory, name, dest, content),) = moves
    assert directory == str(tmp_path) and name.startswith(".cufile.json.") and dest == str(target)
    assert loads(content) == {"profile": {"nvtx": False}}
    assert sorted(os.listdir(str(tmp_path))) == ["cufile.json"]          # no temp file left behind


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "cufile.json"
    target.write_text("{}")
    from ansible.module_utils.basic import AnsibleModule

    def boom(self, src, dest, *a, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(AnsibleModule, "atomic_move", boom)
    planned = plan(target, base="empty", settings={"profile": {"nvtx": False}})
    result = apply(target, planned, base="empty", settings={"profile": {"nvtx": False}})
    assert result["failed"] and "cannot write %s: disk full" % target in result["msg"]  # a clean failure (issue 10)
    assert target.read_text() == "{}" and sorted(os.listdir(str(tmp_path))) == ["cufile.json"]


def test_env_file_text_and_host_facts_are_returned(tmp_path, monkeypatch):
    env = tmp_path / "user.json"
    env.write_text('{"properties": {"io_batchsize": 1}}')
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "modules").write_text("nvidia_fs 253952 0 - Live 0x0000000000000000\n")
    monkeypatch.setattr(_cufile_config, "HostPaths", lambda: _HostPathsFor(str(proc)))
    result = plan(tmp_path / "cufile.json", env_path_json=str(env),
                  settings={"logging": {"dir": str(tmp_path)}, "denylist": {"mounts": ["/nonexistent"]}},
                  internal={"path_checks": [{"path": "logging.dir", "what": "value", "kind": "dir"},
                                            {"path": "denylist.mounts", "what": "items", "kind": "exists"}]})
    assert result["env_text"] == '{"properties": {"io_batchsize": 1}}'
    assert result["host"] == {"nvidia_fs": True}
    assert result["path_facts"] == {str(tmp_path): {"exists": True, "is_dir": True},
                                    "/nonexistent": {"exists": False, "is_dir": False}}


class _HostPathsFor(object):
    def __init__(self, proc):
        self.nvidia_fs_proc = os.path.join(proc, "driver", "nvidia-fs")
        self.proc = proc

    def read(self, name):
        with open(os.path.join(self.proc, "modules")) as f:
            return f.read()


@pytest.mark.parametrize("modules, expected", [
    ("nvidia_fs 253952 0 - Live 0x0\nnvidia 1 2 - Live 0x0\n", True),
    ("nvidia 1 2 - Live 0x0\nnvidia_fs_x 1 0 - Live 0x0\n", False),
    (None, None),
])
def test_nvidia_fs_loaded(tmp_path, modules, expected):
    proc = tmp_path / "proc"
    proc.mkdir()
    if modules is not None:
        (proc / "modules").write_text(modules)
    from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
    assert _cufile_config.nvidia_fs_loaded(HostPaths(root=str(tmp_path), proc_root=str(tmp_path))) is expected


def test_content_changes_is_a_pure_type_exact_comparison(tmp_path):
    state = _host_file.FileState("/x")
    state.exists, state.document = True, {"properties": {"io_batchsize": 1}}
    assert _cufile_config.content_changes(state, {"properties": {"io_batchsize": 1}}) == []
    assert _cufile_config.content_changes(state, {"properties": {"io_batchsize": True}}) == ["content"]
    assert _cufile_config.content_changes(state, {"properties": {"io_batchsize": 1.0}}) == ["content"]
