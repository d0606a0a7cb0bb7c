# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_packages: parsers over real captured output (tests/fixtures/captured/SOURCES.md), the plan,
the argv we build (never a signature bypass) and the lock holder detection."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._packages import apt_dnf as pk

from ansible_collections.gpudirect.storage.plugins.module_utils._packages import locks, queries, versions

from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repos
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Result
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import captured


@pytest.mark.parametrize("left,right,expected", [
    ("2.28.2-1", "2.26.6-1", 1),
    ("2.26.6-1", "2.26.6-1", 0),
    ("2.9.0-1", "2.10.0-1", -1),
    ("2.19.7~12.4.1", "2.19.7", -1),          # Debian trixie's nvidia-fs-dkms version
    ("1:1.0-1", "2.0-1", 1),
    ("24.10-4.1.4.0", "24.10-1.1.4.0", 1),
    ("580.65.06", "580.159.04", -1),
    ("2.26.6-1", "2.17.5", 1),
])
def test_compare_versions(left, right, expected):
    assert versions.compare_versions(left, right) == expected
    assert versions.compare_versions(right, left) == -expected


@pytest.mark.parametrize("version,wanted,ok", [
    ("2.26.6-1", "2.26.6", True),
    ("2.26.6-1", "2.26", True),
    ("2.26.6-1", "2.2", False),
    ("24.10-4.1.4.0", "24.10", True),
    ("1:2.0-1", "2.0", True),
    ("2.26.6-1", "2.26.6-1", True),
    (None, "2.26", False),
])
def test_version_matches(version, wanted, ok):
    assert versions.version_matches(version, wanted) is ok


def test_parse_apt_cache_policy_local_repo_two_versions():
    pol = pk.parse_apt_cache_policy(captured("apt/apt-cache-policy-local-file-repo.stdout.txt"))
    assert pol["nvidia-fs-dkms"] == {"installed": "2.26.6-1", "candidate": "2.28.2-1",
                                     "versions": ["2.28.2-1", "2.26.6-1"]}
    assert pol["nvidia-fs"]["installed"] is None
    assert pol["nvidia-fs"]["versions"] == ["2.28.2-1"]
    assert pol["libcufile-12-8"]["candidate"] == "1.13.1.3-1"
    # apt-cache prints nothing for an unknown package (gds-tools-12-8 was asked for).
    assert "gds-tools-12-8" not in pol


def test_parse_apt_cache_policy_two_origins():
    pol = pk.parse_apt_cache_policy(captured("apt/apt-cache-policy-debian12-two-origins.txt"))
    assert pol["linux-headers-amd64"]["versions"] == ["6.1.192-2", "6.1.176-1"]
    assert pol["linux-headers-amd64"]["installed"] == "6.1.192-2"


def test_parse_dpkg_query_real():
    out = pk.parse_dpkg_query(captured("dpkg/dpkg-query-debian12.stdout.txt"))
    assert out == {"dkms": "3.0.10-8+deb12u1", "linux-headers-amd64": "6.1.192-2"}
    assert "no packages found matching nvidia-fs-dkms" in captured("dpkg/dpkg-query-debian12.stderr.txt")


def test_parse_dpkg_query_skips_config_files_state():
    # Constructed: a removed package whose conffiles stay ("config-files") is not installed.
    assert pk.parse_dpkg_query("nvidia-fs\t2.26.6-1\tconfig-files\n") == {}


def test_parse_rpm_q_real():
    names = ["nvidia-fs-dkms", "nvidia-fs", "nvidia-gds", "libcufile-12-8", "gds-tools-12-8"]
    out = pk.parse_rpm_q(captured("rpm/rpm-q-el-stubs.txt"), names)
    assert out == {"nvidia-fs-dkms": "2.24.2-1", "nvidia-fs": "2.24.2-1", "nvidia-gds": "12.8.0-1",
                   "libcufile-12-8": None, "gds-tools-12-8": None}


def test_parse_rpm_q_el_release():
    # Package names as listed on a RHEL host (kmod-nvidia-open-dkms ... .el8), release with a dot.
    out = pk.parse_rpm_q("nvidia-fs-2.16.1-1.x86_64\nnvidia-driver-535.54.03-1.el8.x86_64\n",
                         ["nvidia-fs", "nvidia-driver"])
    assert out == {"nvidia-fs": "2.16.1-1", "nvidia-driver": "535.54.03-1.el8"}


def test_parse_dnf_repoquery():
    # Constructed in the --qf format we ask for ("%{name}\t%{evr}\n").
    out = pk.parse_dnf_repoquery("nvidia-fs-dkms\t2.24.2-1\nnvidia-fs-dkms\t2.25.7-1\nnvidia-fs\t0:2.25.7-1\n\n")
    assert out == {"nvidia-fs-dkms": ["2.24.2-1", "2.25.7-1"], "nvidia-fs": ["2.25.7-1"]}


def test_plan_installs_pinned_upgrade_and_diff():
    installed = {"nvidia-fs-dkms": "2.26.6-1"}
    available = {"nvidia-fs-dkms": ["2.28.2-1", "2.26.6-1"], "nvidia-fs": ["2.28.2-1"]}
    plan = pk.plan_packages(installed, available, {"nvidia-fs-dkms": "2.28", "nvidia-fs": "2.28"})
    assert plan["install"] == [("nvidia-fs", "2.28.2-1", "install"), ("nvidia-fs-dkms", "2.28.2-1", "upgrade")]
    d = pk.package_diff(installed, plan)
    assert d["before"] == "nvidia-fs-dkms=2.26.6-1\n"
    assert d["after"] == "nvidia-fs=2.28.2-1\nnvidia-fs-dkms=2.28.2-1\n"


def test_plan_is_idempotent_and_downgrades_explicitly():
    installed = {"nvidia-fs-dkms": "2.28.2-1"}
    available = {"nvidia-fs-dkms": ["2.28.2-1", "2.26.6-1"]}
    assert pk.plan_packages(installed, available, {"nvidia-fs-dkms": "2.28.2-1"})["install"] == []
    assert pk.plan_packages(installed, available, {"nvidia-fs-dkms": None})["ok"] == ["nvidia-fs-dkms"]
    plan = pk.plan_packages(installed, available, {"nvidia-fs-dkms": "2.26"})
    assert plan["install"] == [("nvidia-fs-dkms", "2.26.6-1", "downgrade")]
    argv = pk.Apt(None).install_argv(plan)
    assert "--allow-downgrades" in argv and argv[-1] == "nvidia-fs-dkms=2.26.6-1"


def test_plan_missing_version_is_an_error_naming_what_exists():
    plan = pk.plan_packages({}, {"nvidia-fs-dkms": ["2.28.2-1"]}, {"nvidia-fs-dkms": "2.30"})
    assert plan["install"] == []
    assert "nvidia-fs-dkms version 2.30" in plan["errors"][0] and "2.28.2-1" in plan["errors"][0]
    lax = pk.plan_packages({}, {}, {"nvidia-fs-dkms": "2.30"}, strict=False)
    assert lax["install"] == [("nvidia-fs-dkms", "2.30", "install")]


def test_plan_absent():
    plan = pk.plan_packages({"nvidia-fs": "1"}, {}, {"nvidia-fs": None, "nvidia-fs-dkms": None}, "absent")
    assert plan["remove"] == ["nvidia-fs"] and plan["ok"] == ["nvidia-fs-dkms"]


def test_argv_never_disables_signature_checks():
    plan = {"install": [("a", "1", "install"), ("b", "2", "downgrade")], "remove": []}
    for argv in (pk.Apt(None).install_argv(plan), pk.Apt(None).remove_argv(["a"]),
                 pk.Dnf(None).install_argv(plan), pk.Dnf(None).remove_argv(["a"])):
        assert not any(bad in a for a in argv for bad in pk.FORBIDDEN_ARGS), argv
    assert pk.Dnf(None).install_argv(plan)[-2:] == ["a-1", "b-2"]
    with pytest.raises(AssertionError):
        pk.check_argv(["apt-get", "install", "--allow-unauthenticated", "x"])


class _RecordingRunner(object):
    def __init__(self):
        self.calls = []

    def run(self, argv, **kw):
        self.calls.append((argv, kw))


def test_dnf_refresh_accepts_the_configured_metadata_key():
    """Seen on the lab's EL 9 hosts (real dnf 4.14): a repository with repo_gpgcheck=1 whose key
    is not imported yet makes ``dnf makecache`` ask "Is this ok [y/N]" and fail without a
    terminal. The key is the one the repository file names (gpgkey=), as for ``dnf install -y``."""
    runner = _RecordingRunner()
    pk.Dnf(runner).refresh()
    argv, kw = runner.calls[0]
    assert argv[:2] == ["dnf", "makecache"] and "-y" in argv and kw.get("mutates") is True
    assert not any(bad in a for a in argv for bad in pk.FORBIDDEN_ARGS), argv


def test_repo_rendering_is_always_signed():
    name, text = repos.render_apt_source({"path": "/mnt/ofed/DEBS", "signed_by": "/etc/apt/keyrings/ofed.gpg",
                                          "suite": "./"}, "gpudirect-ofed")
    assert name == "gpudirect-ofed.sources"
    assert "URIs: file:/mnt/ofed/DEBS\nSuites: ./\nSigned-By: /etc/apt/keyrings/ofed.gpg\n" in text
    assert "Components" not in text and "trusted" not in text.lower()
    _n, text = repos.render_apt_source({"url": "https://repo.example.invalid/ubuntu2404/x86_64", "suite": "noble",
                                        "components": ["main"], "signed_by": "/k.gpg", "name": "cuda"}, "x")
    assert "Suites: noble\nComponents: main\n" in text
    name, text = repos.render_dnf_repo({"path": "/mnt/ofed/RPMS", "signed_by": "/etc/pki/rpm-gpg/ofed"}, "gpudirect-ofed")
    assert name == "gpudirect-ofed.repo" and "gpgcheck=1\n" in text and "baseurl=file:///mnt/ofed/RPMS\n" in text


def test_parse_proc_locks_real_and_blocked():
    held = locks.parse_proc_locks(captured("proc/locks-debian12-fcntl-holder.txt"))
    assert held == [{"pid": 27585, "major": 0xfe, "minor": 0, "inode": 2148075, "kind": "POSIX", "blocked": False}]
    # Constructed from the kernel's format: a waiter is shown with "->".
    waiter = locks.parse_proc_locks("1: -> POSIX  ADVISORY  WRITE 4242 fe:00:2148075 0 EOF\n")
    assert waiter[0]["blocked"] and waiter[0]["pid"] == 4242


def _fake_proc(tmp_path, pid, comm, cmdline):
    d = tmp_path / "proc" / str(pid)
    d.mkdir(parents=True)
    (d / "comm").write_text(comm + "\n")
    (d / "cmdline").write_text("\0".join(cmdline) + "\0")


def test_lock_holder_named_from_fake_proc_locks(tmp_path):
    lock = tmp_path / "var/lib/dpkg/lock-frontend"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    _fake_proc(tmp_path, 31337, "apt-get", ["apt-get", "install", "foo"])
    (tmp_path / "proc" / "locks").write_text("1: POSIX  ADVISORY  WRITE 31337 fe:01:%d 0 EOF\n" % lock.stat().st_ino)
    paths = HostPaths(root=str(tmp_path), proc_root=str(tmp_path))
    holders = locks.lock_holders(paths, paths.dpkg_lock)
    assert holders == [{"pid": 31337, "comm": "apt-get", "cmdline": "apt-get install foo"}]
    clock = iter([0.0, 0.5, 1.0, 2.5]).__next__
    slept = []
    with pytest.raises(pk.LockHeldError) as exc:
        locks.wait_for_locks(paths, [paths.dpkg_lock], timeout=2, sleep=slept.append, clock=clock)
    assert "pid 31337 (apt-get install foo)" in str(exc.value) and "lock-frontend" in str(exc.value)
    assert "Nothing was changed" in str(exc.value) and slept == [1.0, 1.0]


def test_lock_free_returns_immediately(tmp_path):
    paths = HostPaths(root=str(tmp_path), proc_root=str(tmp_path))
    (tmp_path / "proc").mkdir()
    assert locks.wait_for_locks(paths, [paths.dpkg_lock], timeout=0, sleep=None, clock=lambda: 1.0) == 0


def test_lock_holder_fd_scan_fallback(tmp_path):
    lock = tmp_path / "var/lib/dpkg/lock-frontend"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    _fake_proc(tmp_path, 4711, "unattended-upgr", ["/usr/bin/python3", "/usr/bin/unattended-upgrade"])
    fd = tmp_path / "proc" / "4711" / "fd"
    fd.mkdir()
    os.symlink(str(lock), str(fd / "3"))
    paths = HostPaths(root=str(tmp_path), proc_root=str(tmp_path))
    assert [h["pid"] for h in locks.lock_holders(paths, paths.dpkg_lock)] == [4711]


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="no /proc/locks on this kernel")
def test_lock_holder_real_process(tmp_path):
    """A real process holds an fcntl lock (as dpkg does); the real /proc/locks names it."""
    lock = tmp_path / "var/lib/dpkg/lock-frontend"
    lock.parent.mkdir(parents=True)
    lock.write_text("")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl,sys,time\nf=open(sys.argv[1],'w')\nfcntl.lockf(f,fcntl.LOCK_EX)\n"
        "print('locked',flush=True)\ntime.sleep(60)\n"), str(lock)], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline().strip() == b"locked"
        paths = HostPaths(root=str(tmp_path), proc_root="/")
        holders = locks.lock_holders(paths, paths.dpkg_lock)
        assert [h["pid"] for h in holders] == [holder.pid]
        with pytest.raises(pk.LockHeldError, match="pid %d" % holder.pid):
            locks.wait_for_locks(paths, [paths.dpkg_lock], timeout=0)
        # We can take it ourselves only after the holder is gone.
        with open(str(lock), "w") as f:
            with pytest.raises(OSError):
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        holder.kill()
        holder.wait()


def test_fail_with_merges_the_details_of_each_error_kind():
    from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError

    class Module(object):
        failed = None

        def fail_json(self, msg, **kwargs):
            self.failed = dict(kwargs, msg=msg)
    for exc, key in ((pk.PackageError("no such version", available=["1.0"]), "available"),
                     (CommandError(["apt-get", "install"], 100, "", "E: broken"), "rc")):
        module, result = Module(), {"changed": False}
        pk.fail_with(module, result, exc)
        assert module.failed["msg"] == str(exc) and key in module.failed and module.failed["changed"] is False


def test_package_memo_one_query_of_every_expected_name_answers_each_stage():
    asked, offered = [], []

    def query(names):
        asked.append(list(names))
        return ({"a": "1", "c": "3"}, queries.Available(
            lambda: offered.append(list(names)) or {"a": ["1", "2"], "b": ["5"], "c": ["3"]}))
    memo = queries.PackageMemo()
    memo.expect(["c", "d"])
    first = memo.query(["a", "b"], query)
    second = memo.query(["c", "d", "a"], query)
    assert asked == [["a", "b", "c", "d"]] and offered == []  # nothing read the offered versions yet
    assert first == ({"a": "1"}, {"a": ["1", "2"], "b": ["5"]})
    assert second == ({"a": "1", "c": "3"}, {"a": ["1", "2"], "c": ["3"]})
    assert offered == [["a", "b", "c", "d"]]  # one repository query answered both stages
    memo.query(["e"], query)  # a name nobody announced: asked on its own
    assert asked[1] == ["e"]


class _AnsweringRunner(object):
    def __init__(self, answers):
        self.answers, self.argvs = answers, []

    def run(self, argv, check=True, **kw):
        self.argvs.append(argv[0])
        return Result(argv, 0, self.answers[argv[0]], "")

    def which(self, name, required=False):
        return "/opt/answering/" + name  # not the host's dpkg-query: it is asked (test__dpkg_status)


@pytest.mark.parametrize("backend,answers", [
    (pk.Apt, {"dpkg-query": "nvidia-fs-dkms\t2.28.2-1\tinstalled\n",
              "apt-cache": "nvidia-fs-dkms:\n  Installed: 2.28.2-1\n  Candidate: 2.28.3-1\n  Version table:\n"
                           "     2.28.3-1 500\n *** 2.28.2-1 500\n"}),
    (pk.Dnf, {"rpm": "nvidia-fs-dkms-2.28.2-1.x86_64\n",
              "dnf": "nvidia-fs-dkms\t2.28.3-1\nnvidia-fs-dkms\t2.28.2-1\n"}),
])
def test_the_repositories_are_asked_only_when_the_offered_versions_are_read(backend, answers):
    # a converged host: the package database answers; apt-cache policy / dnf repoquery (which
    # loads every repository's metadata) run only for a decision that needs another version
    runner = _AnsweringRunner(answers)
    installed, available = backend(runner).query(["nvidia-fs-dkms"])
    assert installed == {"nvidia-fs-dkms": "2.28.2-1"} and len(runner.argvs) == 1 and not available.fetched
    assert pk.plan_packages(installed, available, {"nvidia-fs-dkms": "2.28"})["ok"] == ["nvidia-fs-dkms"]
    assert len(runner.argvs) == 1
    assert pk.plan_packages(installed, available, {"nvidia-fs-dkms": "2.28.3"})["install"] == [
        ("nvidia-fs-dkms", "2.28.3-1", "upgrade")]
    assert available["nvidia-fs-dkms"] == ["2.28.3-1", "2.28.2-1"] and len(runner.argvs) == 2  # asked once
