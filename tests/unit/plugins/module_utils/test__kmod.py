# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_kmod: /proc/modules, sysfs state, persistence files, dkms status and modinfo parsing over
real captured output (tests/fixtures/captured/SOURCES.md), DKMS failure reporting."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostparse
from ansible_collections.gpudirect.storage.plugins.module_utils._common import managed_file
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import kmod
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Result
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import captured


def test_parse_proc_modules_real_tainted():
    mods = hostparse.parse_proc_modules(captured("proc/modules-vbox-tainted.txt"))
    assert mods["vboxdrv"] == {"size": 696320, "refcount": 2, "used_by": ["vboxnetadp", "vboxnetflt"],
                               "state": "Live", "taint": "OE"}
    assert mods["overlay"]["taint"] == "" and mods["overlay"]["used_by"] == []
    assert "nvidia_fs" not in mods


def test_module_state_from_fake_tree(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "modules").write_text(captured("proc/modules-nvidia-fs.constructed.txt"))
    sysm = tmp_path / "sys/module/nvidia_fs/parameters"
    sysm.mkdir(parents=True)
    (sysm.parent / "version").write_text("2.28.2\n")
    (sysm / "rw_stats_enabled").write_text("1\n")
    st = kmod.module_state(HostPaths(root=str(tmp_path), proc_root=str(tmp_path)), "nvidia-fs")
    assert st == {"name": "nvidia_fs", "loaded": True, "refcount": 32, "used_by": [], "version": "2.28.2",
                  "params": {"rw_stats_enabled": "1"}}
    st = kmod.module_state(HostPaths(root=str(tmp_path), proc_root=str(tmp_path / "none")), "nvidia_fs")
    assert st["loaded"] is False and st["version"] is None


def test_modprobe_argv_and_params():
    assert kmod.modprobe_argv("nvidia_fs", {"rw_stats_enabled": 1}) == ["modprobe", "nvidia_fs", "rw_stats_enabled=1"]
    assert kmod.modprobe_argv("nvidia_fs", {"b": True, "a": "x"}) == ["modprobe", "nvidia_fs", "a=x", "b=1"]
    assert kmod.unload_argv("nvidia_fs") == ["modprobe", "-r", "nvidia_fs"]
    assert kmod.params_differ({"rw_stats_enabled": "1"}, {"rw_stats_enabled": 1}) == []
    assert kmod.params_differ({"rw_stats_enabled": "0"}, {"rw_stats_enabled": 1}) == ["rw_stats_enabled"]
    assert kmod.params_differ({"flag": "Y"}, {"flag": True}) == []
    assert kmod.params_differ({}, {"x": 1}) == ["x"]


def test_persistence_render_and_semantic_compare():
    text = kmod.render_modules_load("nvidia-fs")
    assert text.endswith("\nnvidia-fs\n") and text.startswith("# Managed by")
    # NVIDIA's package ships the file with just the module name: already satisfied.
    assert kmod.modules_load_satisfied("nvidia-fs\n", "nvidia-fs")
    assert kmod.modules_load_satisfied("# comment\nnvidia_fs  # inline\n", "nvidia-fs")
    assert not kmod.modules_load_satisfied("# nvidia-fs\n", "nvidia-fs")
    assert not kmod.modules_load_satisfied(None, "nvidia-fs")
    opts = kmod.render_modprobe_options("nvidia_fs", {"rw_stats_enabled": 1})
    assert opts.endswith("options nvidia_fs rw_stats_enabled=1\n")
    assert kmod.render_modprobe_options("nvidia_fs", {}) is None
    assert kmod.modprobe_options_satisfied("options nvidia-fs rw_stats_enabled=1\n", "nvidia_fs", {"rw_stats_enabled": 1})
    assert not kmod.modprobe_options_satisfied("options nvidia_fs rw_stats_enabled=0\n", "nvidia_fs",
                                               {"rw_stats_enabled": 1})
    assert kmod.modprobe_options_satisfied(None, "nvidia_fs", {})
    assert not kmod.modprobe_options_satisfied("options nvidia_fs x=1\n", "nvidia_fs", {})


def test_dkms2_status_real():
    entries = kmod.parse_dkms_status(captured("dkms/dkms2-status-ubuntu1204.txt"))
    assert len(entries) == 6
    assert entries[0] == {"module": "blktap", "version": "2.0.91", "kernel": "3.2.0-26-generic", "arch": "x86_64",
                          "state": "installed", "note": ""}
    assert kmod.dkms_entry(entries, "zfs", "0.6.0.65", "3.2.0-25-generic")["state"] == "installed"


def test_dkms3_status_real_with_notes():
    entries = kmod.parse_dkms_status(captured("dkms/dkms3-status-fedora-original-modules.txt"))
    assert [e["kernel"] for e in entries] == ["7.1.12-200.fc44.x86_64", "7.1.13-200.fc44.x86_64", "7.2.4-200.fc44.x86_64"]
    assert entries[0]["state"] == "installed" and entries[0]["note"] == "Original modules exist"


def test_dkms3_status_real_added_and_built():
    entries = kmod.parse_dkms_status(captured("dkms/dkms3.0.10-status-debian12.txt"))
    assert entries == [
        {"module": "gds-test-module-broken", "version": "0.1.0", "kernel": None, "arch": None, "state": "added", "note": ""},
        {"module": "gds-test-module", "version": "0.1.0", "kernel": "6.1.0-56-amd64", "arch": "x86_64",
         "state": "built", "note": ""}]
    assert kmod.dkms_entry(entries, "gds-test-module-broken", "0.1.0", "6.1.0-56-amd64")["state"] == "added"


def test_dkms3_status_stale_error_line():
    entries = kmod.parse_dkms_status(captured("dkms/dkms3-status-stale-nvidia-fs.txt"))
    assert entries[0]["module"] == "mlnx-ofed-kernel" and entries[0]["version"] == "24.01.OFED.24.01.0.3.3.1"
    assert entries[1]["module"] == "nvidia-fs" and entries[1]["state"] == "error"
    assert "Could not locate dkms.conf" in entries[1]["note"]


def test_dkms3_status_without_arch():
    e = kmod.parse_dkms_status(captured("dkms/dkms3-status-nvidia-fs-no-arch.txt"))[0]
    assert (e["module"], e["version"], e["kernel"], e["arch"], e["state"]) == (
        "nvidia-fs", "2.28.4", "6.8.0-111-generic", None, "installed")


def test_parse_modinfo_real_signed_and_unsigned():
    info = kmod.parse_modinfo(captured("modinfo/nvidia-fs-2.20.5-rhel9.4.txt"))
    assert info["version"] == "2.20.5" and info["name"] == "nvidia_fs" and info["depends"] == ""
    assert info["signer"] == "DKMS module signing key" and kmod.modinfo_signed(info)
    assert not kmod.modinfo_signed(kmod.parse_modinfo(captured("modinfo/gds-test-module-debian12-unsigned.txt")))
    signed = kmod.parse_modinfo(captured("modinfo/gds-test-module-debian12-signed.txt"))
    assert kmod.modinfo_signed(signed) and signed["signature"].count(":") > 100  # continuation lines joined
    assert signed["parm"].startswith("rw_stats_enabled:")
    nv = kmod.parse_modinfo(captured("modinfo/nvidia-590.44.01-open.txt"))
    assert nv["license"] == "Dual MIT/GPL" and len(nv["alias"]) == 8 and len(nv["parm"]) == 4


class _FakeRunner(object):
    def __init__(self, rc, stdout, stderr):
        self.res = (rc, stdout, stderr)
        self.calls = []

    def run(self, argv, check=True, mutates=False, environ=None, **kw):
        self.calls.append((argv, mutates, environ))
        return Result(argv, *self.res)


def test_dkms_failure_carries_make_log_tail(tmp_path):
    paths = HostPaths(root=str(tmp_path), proc_root=str(tmp_path))
    log = tmp_path / "var/lib/dkms/nvidia-fs/2.28.2/build/make.log"
    log.parent.mkdir(parents=True)
    log.write_text(captured("dkms/make.log-gds-test-module-broken.txt"))
    stderr = captured("dkms/dkms3.0.10-build-failure.stderr.txt").replace(
        "/tmp/gdscap/dkms/gds-test-module-broken/0.1.0/build/make.log", str(log))
    runner = _FakeRunner(10, captured("dkms/dkms3.0.10-build-failure.stdout.txt"), stderr)
    with pytest.raises(kmod.DkmsBuildError) as exc:
        kmod.dkms_run(runner, paths, "build", "nvidia-fs", "2.28.2", "6.8.0-86-generic", "x86_64")
    err = exc.value
    assert err.rc == 10 and err.make_log == str(log)
    assert "implicit declaration of function" in err.make_log_tail
    assert "implicit declaration of function" in str(err) and "Bad return status" in str(err)
    kw = err.to_fail_kwargs()
    assert kw["make_log"] == str(log) and kw["rc"] == 10 and "dkms" in kw["cmd"][0]
    argv, mutates, _env = runner.calls[0]
    assert mutates and argv[:8] == ["dkms", "build", "-m", "nvidia-fs", "-v", "2.28.2", "-k", "6.8.0-86-generic"]
    assert argv[8:] == ["--dkmstree", paths.dkms_tree]  # re-rooted tree only


def test_dkms_tree_not_passed_on_real_root():
    assert kmod.dkms_tree_args(HostPaths(root="/", proc_root="/")) == []


def test_find_make_log_fallback_when_dkms_does_not_say(tmp_path):
    paths = HostPaths(root=str(tmp_path), proc_root=str(tmp_path))
    kept = tmp_path / "var/lib/dkms/m/1/6.1.0-56-amd64/x86_64/log/make.log"
    kept.parent.mkdir(parents=True)
    kept.write_text("x")
    assert kmod.find_make_log(paths, "m", "1", "6.1.0-56-amd64", "x86_64") == str(kept)


class _Mod(object):
    check_mode = False

    def __init__(self, check=False):
        self.check_mode = check
        self.backups = []

    def atomic_move(self, src, dst, unsafe_writes=False):
        os.rename(src, dst)

    def backup_local(self, path):
        self.backups.append(path)
        return path + ".bak~"


def test_managed_file_create_update_remove(tmp_path):
    path = str(tmp_path / "etc/modules-load.d/nvidia-fs.conf")
    ch = managed_file.plan_file(path, "nvidia-fs\n")
    assert ch["action"] == "create"
    managed_file.apply_file(_Mod(check=True), ch)
    assert not os.path.exists(path)  # check mode writes nothing
    managed_file.apply_file(_Mod(), ch)
    assert open(path).read() == "nvidia-fs\n" and oct(os.stat(path).st_mode & 0o777) == "0o644"
    assert managed_file.plan_file(path, "nvidia-fs\n")["action"] == "none"
    mod = _Mod()
    ch = managed_file.plan_file(path, "nvidia_fs\n")
    assert ch["action"] == "update" and managed_file.file_diff(ch)["before"] == "nvidia-fs\n"
    assert managed_file.apply_file(mod, ch) == path + ".bak~" and mod.backups == [path]
    ch = managed_file.plan_file(path, None)
    assert ch["action"] == "remove"
    managed_file.apply_file(_Mod(), ch, backup=False)
    assert not os.path.exists(path)
    assert os.listdir(os.path.dirname(path)) == []  # no temp files left behind
