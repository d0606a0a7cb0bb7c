# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError, Runner, tail


class FakeModule(object):
    """Records run_command calls; answers from a table keyed by argv[0] basename."""

    def __init__(self, answers=None, check_mode=False, bins=("modprobe", "dkms", "true")):
        self.answers = answers or {}
        self.check_mode = check_mode
        self.calls = []
        self.bins = bins

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/sbin/" + name if name in self.bins else None

    def run_command(self, argv, **kwargs):
        self.calls.append((argv, kwargs))
        return self.answers.get(os.path.basename(argv[0]), (0, "ok\n", ""))


def test_run_resolves_binary_and_forces_c_locale():
    mod = FakeModule()
    res = Runner(mod).run(["modprobe", "nvidia_fs"])
    assert res.ok and res.stdout == "ok\n"
    argv, kwargs = mod.calls[0]
    assert argv == ["/usr/sbin/modprobe", "nvidia_fs"]
    assert kwargs["environ_update"]["LC_ALL"] == "C"
    assert kwargs["check_rc"] is False


def test_run_refuses_shell_strings():
    with pytest.raises(TypeError):
        Runner(FakeModule()).run("modprobe nvidia_fs && reboot")


def test_mutating_command_is_skipped_in_check_mode():
    mod = FakeModule(check_mode=True)
    res = Runner(mod).run(["modprobe", "nvidia_fs"], mutates=True)
    assert res.skipped and res.rc == 0
    assert mod.calls == []


def test_read_only_command_runs_in_check_mode():
    mod = FakeModule(check_mode=True)
    Runner(mod).run(["dkms", "status"])
    assert len(mod.calls) == 1


def test_failure_raises_with_command_rc_and_stderr_tail():
    err = "\n".join("line %d" % i for i in range(40))
    mod = FakeModule(answers={"dkms": (10, "", err)})
    with pytest.raises(CommandError) as exc:
        Runner(mod).run(["dkms", "build", "-m", "nvidia-fs"])
    msg = str(exc.value)
    assert "/usr/sbin/dkms build -m nvidia-fs" in msg and "rc=10" in msg
    assert "line 39" in msg and "line 5\n" not in msg
    assert exc.value.to_fail_kwargs()["rc"] == 10


def test_check_false_returns_failed_result():
    mod = FakeModule(answers={"dkms": (3, "", "boom")})
    res = Runner(mod).run(["dkms", "status"], check=False)
    assert res.rc == 3 and not res.ok


def test_missing_binary_is_rc_127_with_hint():
    with pytest.raises(CommandError) as exc:
        Runner(FakeModule()).run(["ofed_info", "-s"], hint="MOFED is not installed")
    assert exc.value.rc == 127 and "MOFED is not installed" in str(exc.value)
    res = Runner(FakeModule()).run(["ofed_info", "-s"], check=False)
    assert res.rc == 127


def test_data_is_passed_as_binary(tmp_path):
    mod = FakeModule()
    Runner(mod).run(["true"], data=b"\x00\x01")
    assert mod.calls[0][1]["data"] == b"\x00\x01" and mod.calls[0][1]["binary_data"] is True


def test_shim_dir_is_searched_first(tmp_path, monkeypatch):
    shim = tmp_path / "modprobe"
    shim.write_text("#!/bin/sh\n")
    shim.chmod(shim.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("GPUDIRECT_BIN_DIR", str(tmp_path))
    assert Runner(FakeModule()).bin_dirs[0] == str(tmp_path)


def test_absolute_binary_path():
    assert Runner(FakeModule()).which("/bin/sh") == "/bin/sh"
    assert Runner(FakeModule()).which("/nonexistent/x") is None


def test_tail():
    assert tail(None) == ""
    assert tail("a\nb\nc\n", 2) == "b\nc"
