# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The installed versions read from dpkg's status file give what ``dpkg-query -W`` gives, and
every case the file alone cannot answer runs dpkg-query."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Result
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import apt_dnf as pk
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import dpkg_status

STATUS = """Package: nvidia-fs
Status: install ok installed
Priority: optional
Architecture: amd64
Version: 2.28.2-1
Depends: nvidia-fs-dkms (>= 2.28.2)
Description: NVIDIA filesystem for GPUDirect Storage
 Package: not-a-stanza
 .
 the description's continuation lines are not fields

Package: nvidia-fs-dkms
Status: hold ok installed
Architecture: amd64
Version: 2.28.2-1
Conffiles:
 /etc/dkms/nvidia-fs.conf 0123456789abcdef

Package: doca-ofed
Status: deinstall ok config-files
Architecture: amd64
Version: 3.1.0-091000-25.07-ubuntu2404

Package: libc6
Status: install ok installed
Architecture: amd64
Multi-Arch: same
Version: 2.36-9+deb12u13

Package: libc6
Status: install ok installed
Architecture: i386
Multi-Arch: same
Version: 2.36-9+deb12u13

Package: mlnx-ofed-all
Status: install ok half-configured
Architecture: all
Version: 1:24.10-1.1.4.0
"""


def test_installed_versions_are_read_from_the_stanzas_of_the_names_asked():
    got = dpkg_status.parse_dpkg_status(STATUS, ["nvidia-fs", "nvidia-fs-dkms", "doca-ofed", "libc6",
                                                 "mlnx-ofed-all", "not-a-stanza", "absent"])
    # "installed" is the third word of Status, as dpkg-query's ${db:Status-Status}: a held
    # package is installed, config-files and half-configured are not; a continuation line of
    # another field is no stanza; a multi-arch package's instances have one version
    assert got == {"nvidia-fs": "2.28.2-1", "nvidia-fs-dkms": "2.28.2-1", "libc6": "2.36-9+deb12u13"}


def test_a_name_is_matched_whole_not_as_a_prefix():
    assert dpkg_status.parse_dpkg_status(STATUS, ["nvidia"]) == {}
    assert dpkg_status.parse_dpkg_status(STATUS, ["nvidia-fs"]) == {"nvidia-fs": "2.28.2-1"}


def test_an_epoch_is_kept_as_dpkg_query_prints_it():
    text = STATUS.replace("install ok half-configured", "install ok installed")
    assert dpkg_status.parse_dpkg_status(text, ["mlnx-ofed-all"]) == {"mlnx-ofed-all": "1:24.10-1.1.4.0"}


def test_fields_are_found_wherever_they_are_in_the_stanza_and_never_in_another_fields_text():
    text = ("Package: gds-tools-13-0\nArchitecture: amd64\nDescription: tools\n Status: deinstall ok config-files\n"
            " Version: 0.0\nVersion: 1.15.1.6-1\nStatus: install ok installed\n")
    assert dpkg_status.parse_dpkg_status(text, ["gds-tools-13-0"]) == {"gds-tools-13-0": "1.15.1.6-1"}
    assert dpkg_status.parse_dpkg_status(text.replace("\nVersion: 1.15.1.6-1", ""), ["gds-tools-13-0"]) == {}


@pytest.mark.parametrize("name,plain", [("nvidia-fs-dkms", True), ("libstdc++6", True), ("g++-12", True),
                                        ("x", False), ("Nvidia-fs", False), ("-fs", False), ("nvidia-fs*", False),
                                        ("libc6:amd64", False), ("nvidia fs", False), ("", False)])
def test_only_plain_package_names_are_read(name, plain):
    assert dpkg_status.plain_name(name) is plain


class _Runner(object):
    def __init__(self, program="/usr/bin/dpkg-query", environ=None, stdout=""):
        self.program, self.environ, self.stdout, self.argvs = program, dict(environ or {}), stdout, []

    def which(self, name, required=False):
        return self.program if name == "dpkg-query" else None

    def run(self, argv, check=True, **kw):
        self.argvs.append(list(argv))
        return Result(argv, 0, self.stdout, "")


@pytest.fixture
def admin(tmp_path):
    base = tmp_path / "var" / "lib" / "dpkg"
    (base / "updates").mkdir(parents=True)
    (base / "status").write_text(STATUS)
    return tmp_path


def test_the_status_file_answers_when_nothing_else_could_change_the_answer(admin, monkeypatch):
    monkeypatch.delenv("DPKG_ADMINDIR", raising=False)
    monkeypatch.delenv("DPKG_ROOT", raising=False)
    got = dpkg_status.installed(_Runner(), HostPaths(root=str(admin)), ["nvidia-fs-dkms", "doca-ofed"])
    assert got == {"nvidia-fs-dkms": "2.28.2-1"}
    assert dpkg_status.installed(_Runner(program="/bin/dpkg-query"), HostPaths(root=str(admin)), ["libc6"]) == {
        "libc6": "2.36-9+deb12u13"}


@pytest.mark.parametrize("case", ["journal", "admindir_env", "root_env", "runner_env", "shim", "pattern",
                                  "arch_qualified", "no_status", "no_dpkg_query"])
def test_what_the_file_alone_cannot_answer_is_left_to_dpkg_query(admin, monkeypatch, case):
    monkeypatch.delenv("DPKG_ADMINDIR", raising=False)
    monkeypatch.delenv("DPKG_ROOT", raising=False)
    runner, names = _Runner(), ["nvidia-fs-dkms"]
    base = admin / "var" / "lib" / "dpkg"
    if case == "journal":  # an interrupted dpkg run: dpkg-query applies updates/NNNN over status
        (base / "updates" / "0000").write_text("Package: nvidia-fs-dkms\nStatus: install ok unpacked\n")
    elif case == "admindir_env":
        monkeypatch.setenv("DPKG_ADMINDIR", "/srv/other-dpkg")
    elif case == "root_env":
        monkeypatch.setenv("DPKG_ROOT", "/srv/chroot")
    elif case == "runner_env":
        runner = _Runner(environ={"DPKG_ADMINDIR": "/srv/other-dpkg"})
    elif case == "shim":  # a wrapper or a test seam's shim is what the host answers with
        runner = _Runner(program="/opt/gds-shims/dpkg-query")
    elif case == "pattern":
        names = ["nvidia-fs*"]
    elif case == "arch_qualified":
        names = ["libc6:i386"]
    elif case == "no_status":
        (base / "status").unlink()
    elif case == "no_dpkg_query":
        runner = _Runner(program=None)
    assert dpkg_status.installed(runner, HostPaths(root=str(admin)), names) is None


def test_a_journal_file_still_being_written_is_not_a_pending_entry(admin, monkeypatch):
    # dpkg writes updates/tmp.i and renames it to a number; dpkg-query skips tmp.i too
    monkeypatch.delenv("DPKG_ADMINDIR", raising=False)
    monkeypatch.delenv("DPKG_ROOT", raising=False)
    (admin / "var" / "lib" / "dpkg" / "updates" / "tmp.i").write_text("Package: nvidia-fs-dkms\n")
    assert dpkg_status.installed(_Runner(), HostPaths(root=str(admin)), ["nvidia-fs-dkms"]) == {
        "nvidia-fs-dkms": "2.28.2-1"}


def test_the_apt_backend_reads_the_file_and_runs_dpkg_query_only_when_it_cannot(admin, monkeypatch):
    monkeypatch.delenv("DPKG_ADMINDIR", raising=False)
    monkeypatch.delenv("DPKG_ROOT", raising=False)
    runner = _Runner(stdout="nvidia-fs-dkms\t2.28.1-1\tinstalled\n")
    assert pk.Apt(runner, paths=HostPaths(root=str(admin))).installed_now(["nvidia-fs-dkms"]) == {
        "nvidia-fs-dkms": "2.28.2-1"}
    assert runner.argvs == []
    (admin / "var" / "lib" / "dpkg" / "updates" / "0001").write_text("")
    assert pk.Apt(runner, paths=HostPaths(root=str(admin))).installed_now(["nvidia-fs-dkms"]) == {
        "nvidia-fs-dkms": "2.28.1-1"}
    assert [a[0] for a in runner.argvs] == ["dpkg-query"]


@pytest.mark.skipif(not (shutil.which("dpkg-query") and os.path.isfile("/var/lib/dpkg/status")),
                    reason="no dpkg on this machine")
def test_the_file_gives_what_dpkg_query_gives_for_every_package_of_this_machine():
    # every package dpkg knows here (installed, config-files, ...), through both ways
    if any(n.isdigit() for n in os.listdir("/var/lib/dpkg/updates")):
        pytest.skip("dpkg's journal has pending entries on this machine")
    names = sorted(set(subprocess.run(["dpkg-query", "-W", "-f=${Package}\n"], stdout=subprocess.PIPE,
                                      universal_newlines=True, check=True).stdout.split()))
    out = subprocess.run(["dpkg-query", "-W", "-f=" + pk.DPKG_QUERY_FORMAT] + names, stdout=subprocess.PIPE,
                         universal_newlines=True, check=False).stdout
    with open("/var/lib/dpkg/status") as f:
        assert dpkg_status.parse_dpkg_status(f.read(), names) == pk.parse_dpkg_query(out)
