# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Security: the test seams GPUDIRECT_HOST_ROOT / GPUDIRECT_PROC_ROOT / GPUDIRECT_BIN_DIR in a
task's environment change nothing on a normal host (no lab marker, or a marker root does not
own or others may write). Only lab hosts (lab/labctl creates the marker) honour them."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostpaths as _hostpaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths, seams_enabled
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner
from ansible_collections.gpudirect.storage.plugins.modules import gds_facts
from ansible_collections.gpudirect.storage.tests.fixtures.cuda_standin import standin
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module


class _Module(object):
    check_mode = False

    def get_bin_path(self, name, required=False, opt_dirs=None):
        for d in opt_dirs or []:
            if os.path.exists(os.path.join(d, name)):
                return os.path.join(d, name)
        return None


@pytest.fixture
def seam_env(tmp_path, monkeypatch):
    """An attacker's (or a careless test's) environment: a fake tree and a shim directory."""
    tree = tmp_path / "tree"
    (tree / "etc").mkdir(parents=True)
    (tree / "etc/os-release").write_text('ID=ubuntu\nVERSION_ID="24.04"\n')
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "modprobe").write_text("#!/bin/sh\ntouch %s/pwned\n" % tmp_path)
    (shims / "modprobe").chmod(0o755)
    monkeypatch.setenv("GPUDIRECT_HOST_ROOT", str(tree))
    monkeypatch.setenv("GPUDIRECT_PROC_ROOT", str(tree))
    monkeypatch.setenv("GPUDIRECT_BIN_DIR", str(shims))
    return tree, shims


def _normal_host(monkeypatch, tmp_path, how):
    """Point LAB_MARKER at what a normal host has: nothing, or a marker that proves nothing."""
    marker = tmp_path / "marker"
    if how == "absent":
        pass
    elif how == "group-writable":
        marker.write_text("")
        marker.chmod(0o664)
    elif how == "not-root-owned":
        marker.write_text("")
        marker.chmod(0o644)
        monkeypatch.setattr(_hostpaths, "_MARKER_UID", os.stat(str(marker)).st_uid + 1)
    elif how == "symlink":
        (tmp_path / "real").write_text("")
        marker.symlink_to(tmp_path / "real")
    monkeypatch.setattr(_hostpaths, "LAB_MARKER", str(marker))


@pytest.mark.parametrize("how", ["absent", "group-writable", "not-root-owned", "symlink"])
def test_variables_alone_change_nothing_on_a_normal_host(seam_env, monkeypatch, tmp_path, how):
    tree, shims = seam_env
    _normal_host(monkeypatch, tmp_path, how)
    assert not seams_enabled()
    paths = HostPaths()
    assert paths.root == "/" and paths.proc_root == "/"
    assert paths.os_release == "/etc/os-release" and paths.proc_modules == "/proc/modules"
    runner = Runner(_Module())
    assert str(shims) not in runner.bin_dirs
    assert runner.which("modprobe") != str(shims / "modprobe")


def test_a_module_reads_the_real_host_without_the_marker(seam_env, monkeypatch, tmp_path):
    """gds_facts run with the variables set reads the real /etc and /proc, not the tree."""
    host, proc = standin.fake_host(str(tmp_path / "standin"), nvidia=False)
    monkeypatch.setenv("GPUDIRECT_HOST_ROOT", host)
    monkeypatch.setenv("GPUDIRECT_PROC_ROOT", proc)
    data = tmp_path / "data"
    data.mkdir()
    with_marker = run_module(gds_facts.main, {"probe_path": [str(data)]})["ansible_facts"]["gds"]
    assert with_marker["kernel"]["release"] == "6.18.44-standin"  # the lab honours the seams
    _normal_host(monkeypatch, tmp_path, "absent")
    without = run_module(gds_facts.main, {"probe_path": [str(data)]})["ansible_facts"]["gds"]
    assert without["kernel"]["release"] == os.uname()[2]


def test_lab_marker_switches_the_seams_on(seam_env):
    tree, shims = seam_env
    assert seams_enabled()  # tests/unit/conftest.py's marker, as lab/labctl writes it
    assert HostPaths().os_release == str(tree / "etc/os-release")
    assert Runner(_Module()).bin_dirs[0] == str(shims)


def test_the_marker_is_a_fixed_host_path_no_seam_moves(seam_env):
    """HostPaths re-roots its PATHS; the marker is none of them, so a seam cannot forge it."""
    assert _hostpaths.LAB_MARKER not in [entry[1] for entry in _hostpaths.PATHS.values()]
    assert seams_enabled() and HostPaths().root != "/"
