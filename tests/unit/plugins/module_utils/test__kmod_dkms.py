# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A REAL ``dkms build`` through _kmod (pytest -m dkms).

Builds tests/fixtures/dkms/gds-test-module against an installed kernel-headers tree (Debian's
``linux-headers-*-amd64``; this machine's own kernel has none and no loadable modules), and the
failing variant, whose error must carry the tail of make.log. Nothing is loaded or installed:
the DKMS tree is a temporary directory (``--dkmstree``) and DKMS's automatic module signing
uses a throw-away key (``mok_signing_key``/``mok_certificate`` in the environment), so
/var/lib/dkms is not touched.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import kmod
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "dkms")


def _kernels_with_headers():
    try:
        names = sorted(os.listdir("/lib/modules"))
    except OSError:
        return []
    return [k for k in names if os.path.isfile(os.path.join("/lib/modules", k, "build", "Makefile"))]


KERNELS = _kernels_with_headers()
pytestmark = [
    pytest.mark.dkms,
    pytest.mark.skipif(shutil.which("dkms") is None, reason="dkms is not installed (apt-get install dkms)"),
    pytest.mark.skipif(not KERNELS, reason="no kernel headers under /lib/modules/*/build "
                       "(apt-get install linux-headers-amd64 gcc make)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="dkms build needs root"),
]


class SubprocessModule(object):
    """The three things Runner needs from an AnsibleModule, backed by subprocess (test side)."""

    def __init__(self, check_mode=False):
        self.check_mode = check_mode

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return shutil.which(name, path=os.pathsep.join((opt_dirs or []) + [os.environ.get("PATH", "")]))

    def run_command(self, argv, check_rc=False, environ_update=None, **kw):
        env = dict(os.environ, **(environ_update or {}))
        p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=600, check=False)
        return p.returncode, p.stdout, p.stderr


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    src = tmp_path / "src"
    keys = tmp_path / "keys"
    for d in (root / "var/lib/dkms", src, keys):
        d.mkdir(parents=True)
    for name in ("gds-test-module", "gds-test-module-broken"):
        shutil.copytree(os.path.join(FIXTURES, name), str(src / ("%s-0.1.0" % name)))
    env = {"mok_signing_key": str(keys / "mok.key"), "mok_certificate": str(keys / "mok.pub")}
    paths = HostPaths(root=str(root), proc_root=str(tmp_path / "proc"))
    default_key_existed = os.path.exists("/var/lib/dkms/mok.key")
    yield paths, src, env
    assert os.path.exists("/var/lib/dkms/mok.key") == default_key_existed, "the test touched /var/lib/dkms"


def _add(runner, paths, src, name, env):
    runner.run(["dkms", "add", "-m", name, "-v", "0.1.0", "--sourcetree", str(src)] + kmod.dkms_tree_args(paths),
               environ=env)


def test_real_dkms_build_of_the_test_module(tree):
    paths, src, env = tree
    kver = KERNELS[-1]
    arch = os.uname()[4]
    runner = Runner(SubprocessModule())
    _add(runner, paths, src, "gds-test-module", env)
    assert kmod.dkms_entry(kmod.dkms_status(runner, paths, "gds-test-module"), "gds-test-module", "0.1.0",
                           kver)["state"] == "added"
    res = kmod.dkms_run(runner, paths, "build", "gds-test-module", "0.1.0", kver, arch, environ=env)
    assert res.rc == 0 and "--dkmstree" in res.cmd
    entry = kmod.dkms_entry(kmod.dkms_status(runner, paths, "gds-test-module"), "gds-test-module", "0.1.0", kver)
    assert entry["state"] == "built" and entry["arch"] == arch
    assert kmod.built_make_log(paths, "gds-test-module", "0.1.0", kver, arch)
    ko = os.path.join(paths.dkms_tree, "gds-test-module/0.1.0", kver, arch, "module", "gds_test.ko")
    info = kmod.parse_modinfo(runner.run(["modinfo", ko]).stdout)
    assert info["version"] == "0.1.0" and info["vermagic"].startswith(kver + " ")
    assert info["parm"].startswith("rw_stats_enabled:")


def test_real_dkms_build_failure_carries_make_log_tail(tree):
    paths, src, env = tree
    kver = KERNELS[-1]
    runner = Runner(SubprocessModule())
    _add(runner, paths, src, "gds-test-module-broken", env)
    with pytest.raises(kmod.DkmsBuildError) as exc:
        kmod.dkms_run(runner, paths, "build", "gds-test-module-broken", "0.1.0", kver, os.uname()[4], environ=env)
    err = exc.value
    assert err.rc != 0 and err.make_log.startswith(paths.dkms_tree) and err.make_log.endswith("make.log")
    assert "gds_this_symbol_does_not_exist" in err.make_log_tail
    assert "gds_this_symbol_does_not_exist" in str(err)
    assert kmod.dkms_entry(kmod.dkms_status(runner, paths, "gds-test-module-broken"), "gds-test-module-broken",
                           "0.1.0", kver)["state"] == "added"


def test_check_mode_builds_nothing(tree):
    paths, src, env = tree
    kver = KERNELS[-1]
    _add(Runner(SubprocessModule()), paths, src, "gds-test-module", env)
    runner = Runner(SubprocessModule(check_mode=True))
    res = kmod.dkms_run(runner, paths, "build", "gds-test-module", "0.1.0", kver, os.uname()[4], environ=env)
    assert res.skipped
    assert not os.path.exists(os.path.join(paths.dkms_tree, "gds-test-module/0.1.0", kver))
