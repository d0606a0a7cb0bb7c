# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import PATHS, HostPaths


def test_real_paths_are_the_default():
    hp = HostPaths(environ={})
    assert hp.proc_modules == "/proc/modules"
    assert hp.modules_load_d == "/etc/modules-load.d"
    assert hp.cufile_json == "/etc/cufile.json"


def test_root_and_proc_root_rebase_their_kinds(tmp_path):
    hp = HostPaths(root=str(tmp_path / "root"), proc_root=str(tmp_path / "proc"))
    assert hp.modprobe_d == str(tmp_path / "root/etc/modprobe.d")
    assert hp.proc_modules == str(tmp_path / "proc/proc/modules")
    assert hp.sys_module == str(tmp_path / "proc/sys/module")
    assert hp.under_root("/usr/local/cuda") == str(tmp_path / "root/usr/local/cuda")


def test_environment_rebases(tmp_path):
    hp = HostPaths(environ={"GPUDIRECT_HOST_ROOT": str(tmp_path)})
    assert hp.proc_modules == str(tmp_path / "proc/modules")  # proc_root follows root by default
    hp = HostPaths(environ={"GPUDIRECT_HOST_ROOT": str(tmp_path), "GPUDIRECT_PROC_ROOT": "/"})
    assert hp.proc_modules == "/proc/modules" and hp.os_release == str(tmp_path / "etc/os-release")


def test_read_and_kernel_release(tmp_path):
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("6.8.0-45-generic\n")
    hp = HostPaths(root=str(tmp_path))
    assert hp.kernel_release() == "6.8.0-45-generic"
    assert hp.read("proc_modules") is None and hp.read("proc_modules", "") == ""
    assert hp.read(str(tmp_path / "proc/sys/kernel/osrelease")).startswith("6.8")


def test_every_path_is_absolute():
    assert all(path.startswith("/") and kind in ("proc", "file") for kind, path in PATHS.values())
