# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.mofed in-process against the fake host: detection, pinned installs,
refusal to mix MLNX_OFED and DOCA-OFED, check mode, idempotence, lock waiting."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.modules import mofed
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.testhost_mofed_nvidia_fs import FakeHost

DOCA_321 = "3.2.1-044000-25.10-ubuntu2404"   # named like the DOCA-Host repository's packages (constructed)


def _ofed_info(name, version):
    if name == "mlnx-ofed-all":
        return "MLNX_OFED_LINUX-%s:" % version
    return "OFED-internal-25.10-1.7.1:" if version == DOCA_321 else "OFED-internal-25.07-0.9.7:"


@pytest.fixture
def host(tmp_path, monkeypatch):
    h = FakeHost(tmp_path, monkeypatch)
    h.available = {"doca-ofed": ["3.1.0-091000-25.07-ubuntu2404", DOCA_321], "doca-roce": [DOCA_321],
                   "mlnx-ofed-all": ["24.10-1.1.4.0", "24.10-4.1.4.0"], "rdma-core": ["50.0-2build2"],
                   "ibverbs-providers": ["50.0-2build2"], "ibverbs-utils": ["50.0-2build2"],
                   "infiniband-diags": ["50.0-2build2"], "mlnx-fw-updater": [DOCA_321]}
    h.ofed_version_for = _ofed_info
    return h


def test_doca_install_check_real_idempotent(host):
    args = {"flavour": "doca-ofed", "version": "3.2.1", "extra_packages": ["mlnx-fw-updater"]}
    before = host.snapshot()
    res = host.run(mofed.main, args, check_mode=True, diff=True)
    assert res["changed"] and host.mutating_calls() == [] and host.snapshot() == before
    assert res["diff"][0]["after"] == "doca-ofed=%s\nmlnx-fw-updater=%s\n" % (DOCA_321, DOCA_321)
    res = host.run(mofed.main, args)
    assert res["changed"] and not res.get("failed"), res
    assert host.argvs("apt-get")[0][-2:] == ["doca-ofed=" + DOCA_321, "mlnx-fw-updater=" + DOCA_321]
    assert res["installed_version"] is None and res["version"] == "25.10-1.7.1"
    assert res["modules_reload_required"] and not res["nvidia_fs_rebuild_required"]
    res = host.run(mofed.main, args)
    assert not res["changed"] and host.mutating_calls() == [] and res["current"]["family"] == "doca", res
    assert not res["reboot_required"] and not res["modules_reload_required"]
    # The OFED version works as well as the DOCA version.
    assert not host.run(mofed.main, {"flavour": "doca-ofed", "version": "25.10"})["changed"]


def test_mlnx_upgrade_pins_and_flags_nvidia_fs_rebuild(host):
    host.installed = {"mlnx-ofed-all": "24.10-1.1.4.0", "nvidia-fs-dkms": "2.28.2-1"}
    host.ofed_info = "MLNX_OFED_LINUX-24.10-1.1.4.0:"
    res = host.run(mofed.main, {"flavour": "mlnx-ofed", "version": "24.10-4.1.4.0"})
    assert res["actions"] == ["upgrade mlnx-ofed-all=24.10-4.1.4.0"], res
    assert res["installed_version"] == "24.10-1.1.4.0" and res["version"] == "24.10-4.1.4.0"
    assert res["reboot_required"] and res["modules_reload_required"] and res["nvidia_fs_rebuild_required"]


@pytest.mark.parametrize("installed,info,flavour", [
    ({"mlnx-ofed-all": "24.10-4.1.4.0"}, "MLNX_OFED_LINUX-24.10-4.1.4.0:", "doca-ofed"),
    ({"doca-ofed": DOCA_321}, "OFED-internal-25.10-1.7.1:", "mlnx-ofed"),
    ({"doca-ofed": DOCA_321, "mlnx-ofed-all": "24.10-4.1.4.0"}, None, "doca-ofed"),
    ({"doca-roce": DOCA_321}, "OFED-internal-25.10-1.7.1:", "inbox"),
])
def test_refuses_to_mix_and_changes_nothing(host, installed, info, flavour):
    host.installed = dict(installed)
    host.ofed_info = info
    before = host.snapshot()
    for check_mode in (True, False):
        res = host.run(mofed.main, {"flavour": flavour}, check_mode=check_mode)
        assert res.get("failed") and "Nothing was changed" in res["msg"], res
        assert host.mutating_calls() == [] and host.snapshot() == before


def test_inbox_install(host):
    res = host.run(mofed.main, {"flavour": "inbox"})
    assert sorted(host.installed) == ["ibverbs-providers", "ibverbs-utils", "infiniband-diags", "rdma-core"]
    assert not res["reboot_required"] and not res["modules_reload_required"]
    assert not host.run(mofed.main, {"flavour": "inbox"})["changed"]


def test_unavailable_version_fails_listing_what_exists(host):
    res = host.run(mofed.main, {"flavour": "mlnx-ofed", "version": "23.10"})
    assert res.get("failed") and "24.10-4.1.4.0" in res["msg"] and host.mutating_calls() == []


def test_repo_from_mounted_iso_and_lock(host):
    args = {"flavour": "mlnx-ofed", "repo": {"path": "/mnt/mlnx_ofed/DEBS", "signed_by": "/etc/apt/keyrings/mellanox.gpg"}}
    host.write("etc/apt/keyrings/mellanox.gpg", "key\n")
    (host.root / "mnt/mlnx_ofed/DEBS").mkdir(parents=True)
    res = host.run(mofed.main, args, check_mode=True, diff=True)
    assert res["changed"] and host.read("etc/apt/sources.list.d/gpudirect-ofed.sources") is None
    lock = host.write("var/lib/dpkg/lock-frontend", "")
    (host.proc / "proc/999").mkdir(parents=True)
    (host.proc / "proc/999/comm").write_text("dpkg\n")
    host.write_proc("proc/locks", "1: POSIX  ADVISORY  WRITE 999 08:02:%d 0 EOF\n" % lock.stat().st_ino)
    before = host.snapshot()
    res = host.run(mofed.main, dict(args, lock_timeout=0))
    assert res.get("failed") and "held by pid 999 (dpkg)" in res["msg"] and host.snapshot() == before
    host.write_proc("proc/locks", "")
    res = host.run(mofed.main, args)
    assert "Signed-By: /etc/apt/keyrings/mellanox.gpg" in host.read("etc/apt/sources.list.d/gpudirect-ofed.sources")
    assert res["actions"][-1] == "install mlnx-ofed-all=24.10-4.1.4.0"
    assert not host.run(mofed.main, args)["changed"]


def test_a_repository_query_failing_after_the_repository_write_leaves_the_host_as_found(host):
    # the offered versions are read right after the new repository is in place, inside the step
    # that takes the write back if anything fails (they are otherwise read only when needed)
    args = {"flavour": "mlnx-ofed", "repo": {"path": "/mnt/mlnx_ofed/DEBS", "signed_by": "/etc/apt/keyrings/mellanox.gpg"}}
    host.write("etc/apt/keyrings/mellanox.gpg", "key\n")
    (host.root / "mnt/mlnx_ofed/DEBS").mkdir(parents=True)
    host.fail["apt-cache policy"] = (100, "", "E: The package cache file is corrupted\n")
    before = host.snapshot()
    res = host.run(mofed.main, args)
    assert res.get("failed") and "corrupted" in (res["msg"] + res.get("stderr", ""))
    assert host.read("etc/apt/sources.list.d/gpudirect-ofed.sources") is None and host.snapshot() == before
