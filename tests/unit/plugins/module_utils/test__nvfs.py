# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_nvfs: driver <-> nvidia-fs version matching, every preflight check and the rebuild rules,
over real captured /proc/driver/nvidia/version and modinfo output."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostparse
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import kmod
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import nvfs, secure_boot
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import captured

OPEN = {"version": "580.95.05", "open": True}
PROPRIETARY = {"version": "515.76", "open": False}
PROPRIETARY_535 = {"version": "535.54.03", "open": False}


def test_parse_driver_version_real():
    assert hostparse.parse_driver_version(captured("proc/driver-nvidia-version-open-580.95.05.txt")) == \
        {"version": "580.95.05", "open": True, "source": "proc"}
    assert hostparse.parse_driver_version(captured("proc/driver-nvidia-version-proprietary-515.76.txt")) == \
        {"version": "515.76", "open": False, "source": "proc"}
    assert hostparse.parse_driver_version("") is None


def test_driver_from_modinfo_real():
    d = nvfs.driver_from_modinfo(kmod.parse_modinfo(captured("modinfo/nvidia-590.44.01-open.txt")))
    assert d == {"version": "590.44.01", "open": True, "source": "modinfo"}
    assert nvfs.driver_from_modinfo({"version": "550.54.14", "license": "NVIDIA"})["open"] is False
    assert nvfs.driver_from_modinfo({}) is None


@pytest.mark.parametrize("nvfs_version,cuda", [
    ("2.16.1-1", "12.2"), ("2.20.5", "12.2"), ("2.24.2-1", "12.8"), ("2.26.6-1", "13.0"),
    ("2.28.2-1", "13.2"), ("2.30.2", "13.3"), ("2.15.3", None),
])
def test_cuda_of_nvfs(nvfs_version, cuda):
    assert nvfs.cuda_of_nvfs(nvfs_version) == cuda


@pytest.mark.parametrize("nvfs_version,driver,checks", [
    ("2.28.2-1", OPEN, []),
    ("2.16.1-1", PROPRIETARY_535, []),                          # before 2.17.5 symbol_get still worked
    ("2.17.5", PROPRIETARY_535, ["proprietary_module"]),         # gds-nvidia-fs ChangeLog 2.17.5
    ("2.16.1-1", PROPRIETARY, ["driver_version"]),               # 515 is older than CUDA 12's minimum
    ("2.24.2-1", {"version": "570.86.15", "open": True}, []),    # CUDA 12.8 on 570
    ("2.26.6-1", {"version": "570.86.15", "open": True}, ["driver_version"]),  # CUDA 13 needs >= 580
    ("2.26.6-1", {"version": "570.86.15", "open": False}, ["proprietary_module", "driver_version"]),
    ("2.26.6-1", {"version": "580.65.06", "open": None}, []),   # unknown flavour: no claim
])
def test_nvfs_driver_problems(nvfs_version, driver, checks):
    assert [c for c, _m in nvfs.nvfs_driver_problems(nvfs_version, driver)] == checks


def test_proprietary_rule_is_x86_only():
    assert nvfs.nvfs_driver_problems("2.28.2-1", dict(PROPRIETARY, version="580.95.05"), arch="aarch64") == []


def test_match_driver_picks_highest_that_works():
    avail = ["2.24.2-1", "2.25.7-1", "2.26.6-1", "2.28.2-1"]
    assert nvfs.match_driver(avail, {"version": "570.86.15", "open": True}) == "2.25.7-1"
    assert nvfs.match_driver(avail, OPEN) == "2.28.2-1"
    assert nvfs.match_driver(avail, PROPRIETARY) is None
    assert nvfs.match_driver(["2.16.1-1", "2.28.2-1"], dict(PROPRIETARY, version="535.54.03")) == "2.16.1-1"


def _facts(**over):
    facts = {"os": {"id": "ubuntu", "version_id": "24.04", "pretty": "Ubuntu 24.04.1 LTS"}, "arch": "x86_64",
             "kernel": "6.8.0-86-generic", "headers_path": "/lib/modules/6.8.0-86-generic/build",
             "headers_present": True, "driver": OPEN, "secure_boot": False, "mok": {"configured": False},
             "ofed_family": "doca", "nvfs_version": "2.28.2-1", "extra_packages": ["libcufile-13-2"]}
    facts.update(over)
    return facts


def checks(facts, **opts):
    return [f["check"] for f in nvfs.preflight(facts, opts)]


def test_preflight_passes_on_a_supported_host():
    assert checks(_facts()) == []
    assert checks(_facts(os={"id": "rhel", "version_id": "9.6"})) == []
    assert checks(_facts(os={"id": "ubuntu", "version_id": "22.04"})) == []


@pytest.mark.parametrize("over,expected", [
    ({"driver": PROPRIETARY, "nvfs_version": "2.28.2-1", "extra_packages": []}, ["proprietary_module", "driver_version"]),
    ({"driver": dict(PROPRIETARY, version="580.95.05")}, ["proprietary_module"]),
    ({"driver": {"version": "570.86.15", "open": True}}, ["driver_version", "driver_version"]),  # nvfs + libcufile-13-2
    ({"secure_boot": True}, ["secure_boot"]),
    ({"headers_present": False}, ["kernel_headers"]),
    ({"ofed_family": "mixed"}, ["ofed_mixed"]),
    ({"os": {"id": "debian", "version_id": "12", "pretty": "Debian GNU/Linux 12 (bookworm)"}}, ["unsupported_os"]),
    ({"os": {"id": "ubuntu", "version_id": "20.04"}}, ["unsupported_os"]),
    ({"os": {"id": "rhel", "version_id": "8.10"}}, ["unsupported_os"]),
    ({"driver": None}, ["driver_missing"]),
    ({"nvfs_version_error": "no nvidia-fs-dkms version works"}, ["nvidia_fs_version"]),
])
def test_preflight_failures(over, expected):
    assert checks(_facts(**over)) == expected


def test_preflight_messages_are_actionable():
    msgs = dict((f["check"], f["msg"]) for f in nvfs.preflight(
        _facts(headers_present=False, secure_boot=True, driver=dict(PROPRIETARY, version="580.95.05")), {}))
    assert "linux-headers-6.8.0-86-generic" in msgs["kernel_headers"]
    assert "mok_key" in msgs["secure_boot"] and "#81" in msgs["secure_boot"]
    assert "Unknown symbol nvidia_p2p_" in msgs["proprietary_module"] and "open" in msgs["proprietary_module"]


def test_preflight_unsupported_os_warn_and_secure_boot_with_mok():
    assert checks(_facts(os={"id": "debian", "version_id": "12"}), unsupported_os="warn") == []
    fails = nvfs.preflight(_facts(os={"id": "debian", "version_id": "12"}), {"unsupported_os": "fail"})
    assert fails[0]["msg"].endswith("set unsupported_os=warn to try anyway.")
    assert checks(_facts(secure_boot=True, mok={"configured": True, "enrolled": True, "cert": "/k.der"})) == []
    assert checks(_facts(secure_boot=True, mok={"configured": True, "enrolled": None, "cert": "/k.der"})) == []
    assert checks(_facts(secure_boot=True, mok={"configured": False, "default_enrolled": True})) == []
    fails = nvfs.preflight(_facts(secure_boot=True, mok={"configured": True, "enrolled": False, "cert": "/k.der"}), {})
    assert fails[0]["check"] == "secure_boot" and "mokutil --import /k.der" in fails[0]["msg"]


@pytest.mark.parametrize("raw,state", [
    (b"\x06\x00\x00\x00\x01", True), (b"\x06\x00\x00\x00\x00", False), (None, None), (b"\x06", None)])
def test_secure_boot_efivar(raw, state):
    assert secure_boot.secure_boot_state(raw) is state


def test_collect_secure_boot_from_fake_efivars(tmp_path):
    from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
    ev = tmp_path / "sys/firmware/efi/efivars"
    ev.mkdir(parents=True)
    # the variable's name: SecureBoot and EFI_GLOBAL_VARIABLE's GUID (UEFI spec), as efivarfs shows it
    (ev / "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c").write_bytes(b"\x06\x00\x00\x00\x01")
    assert secure_boot.secure_boot_enabled(HostPaths(root=str(tmp_path), proc_root=str(tmp_path))) is True
    assert secure_boot.secure_boot_enabled(HostPaths(root=str(tmp_path), proc_root=str(tmp_path / "x"))) is None


def test_os_release():
    text = 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n'
    assert hostparse.parse_os_release(text) == {"id": "ubuntu", "version_id": "24.04", "pretty": "Ubuntu 24.04.1 LTS"}


def test_driver_from_make_log():
    # The line gds-nvidia-fs's Makefile prints (target nv_symbols).
    line = ("Picking NVIDIA driver sources from NVIDIA_SRC_DIR=/usr/src/nvidia-580.95.05/nvidia. If that does not "
            "meet your expectation, you might have a stale driver still around and that might cause problems.\n")
    assert nvfs.driver_from_make_log(line) == "580.95.05"
    assert nvfs.driver_from_make_log("NVIDIA_SRC_DIR=/usr/src/nvidia-open-595.71.05/nvidia\n") == "595.71.05"
    assert nvfs.driver_from_make_log(captured("dkms/make.log-gds-test-module-broken.txt")) is None


def test_rebuild_reasons():
    base = {"dkms_state": "installed", "nvfs_version": "2.28.2", "kernel": "6.8.0-86-generic", "driver": OPEN,
            "built_driver": "580.95.05", "built_at": 100.0, "ofed_changed_at": 50.0}
    assert nvfs.rebuild_reasons(base) == []
    assert "not built" in nvfs.rebuild_reasons(dict(base, dkms_state=None))[0]
    assert "is added" in nvfs.rebuild_reasons(dict(base, dkms_state="added"))[0]
    r = nvfs.rebuild_reasons(dict(base, built_driver="570.86.15"))
    assert r == ["nvidia-fs was built against NVIDIA driver 570.86.15, installed driver is 580.95.05"]
    r = nvfs.rebuild_reasons(dict(base, ofed_changed_at=150.0))
    assert "PeerDirect" in r[0]
    assert nvfs.rebuild_reasons(dict(base, ofed_changed_at=None, built_driver=None)) == []
