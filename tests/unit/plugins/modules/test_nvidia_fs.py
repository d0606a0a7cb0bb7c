# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.nvidia_fs run in-process against a fake host tree and a recording runner:
check mode runs no mutating command and writes nothing, the second run is unchanged, every
preflight failure leaves the tree and the package db as they were."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpudirect.storage.plugins.modules import nvidia_fs
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel.secure_boot import EFIVAR as SECURE_BOOT_EFIVAR
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.testhost_mofed_nvidia_fs import (
    KVER, PROPRIETARY_570, FakeHost)

CAPTURED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "captured")
ARGS = {"version": "match_driver", "params": {"rw_stats_enabled": 1}}


@pytest.fixture
def host(tmp_path, monkeypatch):
    h = FakeHost(tmp_path, monkeypatch)
    h.available = {"nvidia-fs-dkms": ["2.26.6-1", "2.28.2-1"], "nvidia-fs": ["2.26.6-1", "2.28.2-1"],
                   "libcufile-12-8": ["1.13.1.3-1"], "gds-tools-12-8": ["1.13.1.3-1"]}
    return h


def run(host, args=None, **kw):
    return host.run(nvidia_fs.main, dict(ARGS, **(args or {})), **kw)


def test_fresh_install_check_then_real_then_idempotent(host):
    before = host.snapshot()
    res = run(host, check_mode=True, diff=True)
    assert res["changed"] and not res.get("failed"), res
    assert host.mutating_calls() == [] and host.snapshot() == before
    assert "install nvidia-fs-dkms=2.28.2-1" in res["actions"]
    assert "modprobe nvidia_fs rw_stats_enabled=1" in res["actions"]
    pkg_diff = [d for d in res["diff"] if d["before_header"] == "packages"][0]
    assert pkg_diff["before"] == "" and "nvidia-fs-dkms=2.28.2-1\n" in pkg_diff["after"]
    file_diffs = dict((d["after_header"], d["after"]) for d in res["diff"] if d["before_header"] != "packages")
    assert file_diffs[str(host.root / "etc/modules-load.d/nvidia-fs.conf")].endswith("nvidia-fs\n")
    assert file_diffs[str(host.root / "etc/modprobe.d/nvidia-fs.conf")].endswith(
        "options nvidia_fs rw_stats_enabled=1\n")

    res = run(host, diff=True)
    assert res["changed"] and not res.get("failed"), res
    assert host.installed == {"nvidia-fs-dkms": "2.28.2-1", "nvidia-fs": "2.28.2-1"}
    assert res["nvidia_fs_version"] == "2.28.2-1"
    assert res["packages"] == {"before": {}, "after": {"nvidia-fs-dkms": "2.28.2-1", "nvidia-fs": "2.28.2-1"}}
    install = host.argvs("apt-get")[0]
    assert install[1] == "install" and "nvidia-fs-dkms=2.28.2-1" in install and "nvidia-fs=2.28.2-1" in install
    assert host.argvs("modprobe") == [["/usr/bin/modprobe", "nvidia_fs", "rw_stats_enabled=1"]]
    assert res["module"]["loaded"] and res["module"]["version"] == "2.28.2"
    assert res["module"]["params"]["rw_stats_enabled"] == "1"
    assert res["dkms"] == [{"module": "nvidia-fs", "version": "2.28.2", "kernel": KVER, "arch": "x86_64",
                            "state": "installed", "note": ""}]
    assert res["persisted"] == {"modules_load": str(host.root / "etc/modules-load.d/nvidia-fs.conf"),
                                "modprobe": str(host.root / "etc/modprobe.d/nvidia-fs.conf")}
    assert host.read("etc/modprobe.d/nvidia-fs.conf").endswith("options nvidia_fs rw_stats_enabled=1\n")

    after = host.snapshot()
    res = run(host)
    assert not res["changed"] and host.mutating_calls() == [] and res["actions"] == [], res
    res = run(host, check_mode=True, diff=True)
    assert not res["changed"] and "diff" not in res and host.snapshot() == after


def test_match_driver_keeps_a_working_installed_version(host):
    host.installed = {"nvidia-fs-dkms": "2.26.6-1", "nvidia-fs": "2.26.6-1"}
    host.dkms = {("nvidia-fs", "2.26.6"): {KVER: "installed"}}
    res = run(host)
    assert res["nvidia_fs_version"] == "2.26.6-1" and host.argvs("apt-get") == []


def test_explicit_version_upgrade_and_extras(host):
    host.installed = {"nvidia-fs-dkms": "2.26.6-1", "nvidia-fs": "2.26.6-1"}
    host.dkms = {("nvidia-fs", "2.26.6"): {KVER: "installed"}}
    res = run(host, {"version": "2.28", "extra_packages": ["libcufile-12-8", "gds-tools-12-8=1.13.1.3-1"]}, diff=True)
    assert not res.get("failed"), res
    assert "upgrade nvidia-fs-dkms=2.28.2-1" in res["actions"]
    assert host.installed["libcufile-12-8"] == "1.13.1.3-1" and host.installed["nvidia-fs"] == "2.28.2-1"


def _expect_preflight(host, check, args=None):
    before = host.snapshot()
    for check_mode in (True, False):
        res = run(host, args, check_mode=check_mode)
        assert res.get("failed"), res
        assert check in [f["check"] for f in res["preflight"]["failures"]], res["preflight"]
        assert "nothing was changed" in res["msg"]
        assert host.mutating_calls() == [] and host.snapshot() == before
    return res


def test_preflight_proprietary_module(host):
    host.write_proc("proc/driver/nvidia/version", PROPRIETARY_570.replace("570.86.15", "580.95.05"))
    res = _expect_preflight(host, "proprietary_module", {"version": "2.28"})
    assert "Unknown symbol nvidia_p2p_" in res["msg"]


def test_preflight_match_driver_with_proprietary_module_finds_nothing(host):
    host.write_proc("proc/driver/nvidia/version", PROPRIETARY_570)
    res = _expect_preflight(host, "nvidia_fs_version")
    assert "proprietary" in res["msg"] and "2.26.6-1" in res["msg"]


def test_preflight_driver_version_mismatch(host):
    host.write_proc("proc/driver/nvidia/version", PROPRIETARY_570.replace("x86_64 Kernel", "Open Kernel"))
    res = _expect_preflight(host, "driver_version", {"version": "2.26.6"})
    assert "CUDA 13.0" in res["msg"] and "580" in res["msg"]


def test_preflight_secure_boot_without_mok(host):
    host.write_proc("sys/firmware/efi/efivars/" + SECURE_BOOT_EFIVAR, "")
    (host.proc / "sys/firmware/efi/efivars" / SECURE_BOOT_EFIVAR).write_bytes(b"\x06\x00\x00\x00\x01")
    _expect_preflight(host, "secure_boot")


def test_preflight_missing_headers(host):
    os.rmdir(str(host.root / "lib/modules" / KVER / "build"))
    res = _expect_preflight(host, "kernel_headers")
    assert "linux-headers-%s" % KVER in res["msg"]


def test_preflight_mlnx_and_doca_mixed(host):
    host.installed = {"mlnx-ofed-all": "24.10-4.1.4.0", "doca-ofed": "3.1.0-091000-25.07-ubuntu2404"}
    _expect_preflight(host, "ofed_mixed")


def test_preflight_unsupported_os_and_override(host):
    host.write("etc/os-release", 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n')
    _expect_preflight(host, "unsupported_os")
    res = run(host, {"unsupported_os": "warn"})
    assert res["changed"] and not res.get("failed")


def test_dpkg_lock_held_waits_then_fails_naming_the_holder(host):
    lock = host.write("var/lib/dpkg/lock-frontend", "")
    pid = host.proc / "proc/4242"
    pid.mkdir(parents=True)
    (pid / "comm").write_text("apt-get\n")
    (pid / "cmdline").write_text("apt-get\0install\0foo\0")
    host.write_proc("proc/locks", "1: POSIX  ADVISORY  WRITE 4242 fe:01:%d 0 EOF\n" % lock.stat().st_ino)
    before = host.snapshot()
    res = run(host, {"lock_timeout": 0})
    assert res.get("failed") and "held by pid 4242 (apt-get install foo)" in res["msg"], res
    assert host.mutating_calls() == [] and host.snapshot() == before
    assert res["holder"]["pid"] == 4242


def test_dkms_build_failure_carries_make_log_tail(host):
    host.installed = {"nvidia-fs-dkms": "2.28.2-1", "nvidia-fs": "2.28.2-1"}
    host.dkms = {("nvidia-fs", "2.28.2"): {None: "added"}}
    log = host.write("var/lib/dkms/nvidia-fs/2.28.2/build/make.log",
                     open(os.path.join(CAPTURED, "dkms/make.log-gds-test-module-broken.txt")).read())
    host.fail["dkms build"] = (10, "Building module:\n", "Error! Bad return status for module build on kernel: %s "
                               "(x86_64)\nConsult %s for more information.\n" % (KVER, log))
    res = run(host)
    assert res.get("failed") and res["rc"] == 10 and res["make_log"] == str(log), res
    assert "implicit declaration of function" in res["make_log_tail"]
    assert "implicit declaration of function" in res["msg"] and res["cmd"][1] == "build"
    assert not (host.proc / "sys/module/nvidia_fs").exists()  # nothing loaded after a failed build


def _built(host, driver="580.95.05", when=1000):
    host.installed = {"nvidia-fs-dkms": "2.28.2-1", "nvidia-fs": "2.28.2-1"}
    host.dkms = {("nvidia-fs", "2.28.2"): {KVER: "installed"}}
    log = host.write("var/lib/dkms/nvidia-fs/2.28.2/%s/x86_64/log/make.log" % KVER,
                     "Picking NVIDIA driver sources from NVIDIA_SRC_DIR=/usr/src/nvidia-%s/nvidia. If that does "
                     "not meet your expectation, you might have a stale driver still around.\n" % driver)
    os.utime(str(log), (when, when))


def test_rebuild_when_mofed_installed_after_the_build(host):
    _built(host)
    host.write("usr/bin/ofed_info", "#!/bin/sh\necho OFED-internal-25.10-1.7.1:\n")  # ctime: now
    res = run(host, {"load": False, "persistent": False}, check_mode=True)
    assert res["changed"] and host.mutating_calls() == []
    res = run(host, {"load": False, "persistent": False})
    assert res["changed"] and any("PeerDirect" in r for r in res["rebuild_reasons"]), res
    dk = host.argvs("dkms")
    assert [a[1] for a in dk if a[1] in ("build", "install")] == ["build", "install"]
    assert all("--force" in a for a in dk if a[1] in ("build", "install"))
    res = run(host, {"load": False, "persistent": False})  # the new build is newer than MOFED
    assert not res["changed"] and res["rebuild_reasons"] == [], res


def test_rebuild_and_reload_when_driver_changed(host):
    _built(host, driver="570.86.15", when=4102444800)  # build log newer than anything else
    host.cmd_modprobe(["nvidia_fs", "rw_stats_enabled=1"])
    res = run(host)
    assert res["rebuild_reasons"] == ["nvidia-fs was built against NVIDIA driver 570.86.15, installed driver is 580.95.05"]
    assert host.argvs("modprobe") == [["/usr/bin/modprobe", "-r", "nvidia_fs"],
                                      ["/usr/bin/modprobe", "nvidia_fs", "rw_stats_enabled=1"]]
    assert any(a.startswith("reload nvidia_fs (module was rebuilt)") for a in res["actions"])
    assert not run(host)["changed"]


def test_reload_when_params_differ_and_in_use(host, monkeypatch):
    from ansible.module_utils import basic
    warnings = []
    # ansible-core keeps warnings in process-global state: capture them here, not from it
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, msg: warnings.append(msg))
    _built(host, when=4102444800)
    host.cmd_modprobe(["nvidia_fs", "rw_stats_enabled=0"])
    host.fail["modprobe -r"] = (1, "", "modprobe: FATAL: Module nvidia_fs is in use.\n")
    res = run(host, {"persistent": False})
    assert res["reload_required"] and not res["changed"], res
    assert any("in use" in w for w in warnings)
    del host.fail["modprobe -r"]
    res = run(host, {"persistent": False})
    assert res["changed"] and res["module"]["params"]["rw_stats_enabled"] == "1"


def test_package_shipped_modules_load_file_is_left_alone(host):
    _built(host, when=4102444800)
    host.write("etc/modules-load.d/nvidia-fs.conf", "nvidia-fs\n")
    res = run(host, {"params": {}})
    assert host.read("etc/modules-load.d/nvidia-fs.conf") == "nvidia-fs\n"
    assert not any("modules-load" in a for a in res["actions"])
    assert res["persisted"] == {"modules_load": str(host.root / "etc/modules-load.d/nvidia-fs.conf")}


def test_absent_check_then_real(host):
    _built(host, when=4102444800)
    run(host)
    before = host.snapshot()
    res = run(host, {"state": "absent"}, check_mode=True)
    assert res["changed"] and host.mutating_calls() == [] and host.snapshot() == before
    res = run(host, {"state": "absent"})
    assert res["changed"] and host.installed == {} and not res["module"]["loaded"]
    assert host.read("etc/modules-load.d/nvidia-fs.conf") is None and host.read("etc/modprobe.d/nvidia-fs.conf") is None
    assert res["persisted"] == {}
    assert not run(host, {"state": "absent"})["changed"]


def test_secure_boot_with_enrolled_mok_signs_builds(host):
    (host.proc / "sys/firmware/efi/efivars").mkdir(parents=True)
    (host.proc / "sys/firmware/efi/efivars" / SECURE_BOOT_EFIVAR).write_bytes(b"\x06\x00\x00\x00\x01")
    host.mok_enrolled.add("/var/lib/shim-signed/mok/MOK.der")
    args = {"mok_key": "/var/lib/shim-signed/mok/MOK.priv", "mok_cert": "/var/lib/shim-signed/mok/MOK.der",
            "mok_key_passphrase": "s3cret-pin"}
    res = run(host, args)
    assert not res.get("failed"), res
    dropin = host.read("etc/dkms/framework.conf.d/gpudirect-nvidia-fs.conf")
    assert 'mok_signing_key="/var/lib/shim-signed/mok/MOK.priv"' in dropin
    install_env = [e for a, e in host.calls if a[1:2] == ["install"]][0]
    assert install_env.get("KBUILD_SIGN_PIN") == "s3cret-pin"
    assert "s3cret-pin" not in repr(res)
    # Order: the drop-in exists before the package (and its DKMS build) is installed.
    assert res["actions"].index("create %s" % (host.root / "etc/dkms/framework.conf.d/gpudirect-nvidia-fs.conf")) < \
        res["actions"].index("install nvidia-fs-dkms=2.28.2-1")
    host.mok_enrolled.clear()
    res = run(host, args)
    assert res.get("failed") and "mokutil --import" in res["msg"]


def test_repo_is_written_signed_and_metadata_refreshed(host):
    args = {"repo": {"path": "/srv/cuda-local", "signed_by": "/etc/apt/keyrings/cuda.gpg"}}
    host.write("etc/apt/keyrings/cuda.gpg", "key\n")
    (host.root / "srv/cuda-local").mkdir(parents=True)
    before = host.snapshot()
    res = run(host, args, check_mode=True, diff=True)
    assert res["changed"] and host.snapshot() == before and host.mutating_calls() == []
    res = run(host, args)
    src = host.read("etc/apt/sources.list.d/gpudirect-cuda.sources")
    assert "URIs: file:/srv/cuda-local\n" in src and "Signed-By: /etc/apt/keyrings/cuda.gpg\n" in src
    assert ["/usr/bin/apt-get", "update", "-q"] in host.argvs("apt-get")
    assert not run(host, args)["changed"]


def test_bad_params_fail_before_anything(host):
    before = host.snapshot()
    res = run(host, {"params": {"rw stats": 1}})
    assert res.get("failed") and res["msg"].startswith("params:") and host.snapshot() == before
    assert host.calls == []


def test_dnf_host(tmp_path, monkeypatch):
    h = FakeHost(tmp_path, monkeypatch, family="dnf")
    h.write("etc/os-release", 'PRETTY_NAME="Red Hat Enterprise Linux 9.6 (Plow)"\nID="rhel"\nVERSION_ID="9.6"\n')
    h.available = {"nvidia-fs-dkms": ["2.24.2-1", "2.28.2-1"], "nvidia-fs": ["2.24.2-1", "2.28.2-1"]}
    res = h.run(nvidia_fs.main, {"version": "2.28", "persistent": False, "load": False})
    assert not res.get("failed"), res
    assert ["/usr/bin/dnf", "install", "-y", "-q", "nvidia-fs-2.28.2-1", "nvidia-fs-dkms-2.28.2-1"] in h.argvs("dnf")
    assert not h.run(nvidia_fs.main, {"version": "2.28", "persistent": False, "load": False})["changed"]
