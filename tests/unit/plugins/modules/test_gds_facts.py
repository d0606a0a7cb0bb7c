# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.gds_facts as a whole module: a GPU-less host (what CI and the lab hosts
are), check mode, require_mode, bad options, and a probe against the C stand-ins."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpudirect.storage.plugins.modules import gds_facts
from ansible_collections.gpudirect.storage.tests.fixtures.cuda_standin import standin
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module


@pytest.fixture
def gpu_less(tmp_path, monkeypatch):
    host, proc = standin.fake_host(str(tmp_path), nvidia=False)
    monkeypatch.setenv("GPUDIRECT_HOST_ROOT", host)
    monkeypatch.setenv("GPUDIRECT_PROC_ROOT", proc)
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    monkeypatch.delenv("CUFILE_ENV_PATH_JSON", raising=False)
    data = tmp_path / "data"
    data.mkdir()
    return str(data)


@pytest.mark.parametrize("check_mode", [False, True])
def test_gpu_less_host_is_unavailable_with_reason(gpu_less, check_mode):
    res = run_module(gds_facts.main, {"probe_path": [gpu_less]}, check_mode=check_mode)
    assert res["changed"] is False and not res.get("failed")
    gds = res["ansible_facts"]["gds"]
    assert gds["mode"] == "unavailable"
    assert gds["reasons"][0] == "no NVIDIA driver: the nvidia kernel module is not loaded and /proc/driver/nvidia is missing"
    assert gds["reasons"][1].startswith("libcufile not found (searched ")  # every missing component is named
    assert gds["probe"]["ran"] is False and gds["verified"] is False
    assert gds["kernel"]["release"] == "6.18.44-standin"
    assert gds["cufile"]["files"][0] == {"path": "/etc/cufile.json", "role": "global", "exists": False}
    assert os.listdir(gpu_less) == []


def test_require_mode_fails_with_reason_and_facts(gpu_less):
    res = run_module(gds_facts.main, {"probe_path": [gpu_less], "require_mode": "compat"})
    assert res["failed"] is True
    assert res["msg"].startswith("GDS verdict unavailable is weaker than the required compat: no NVIDIA driver")
    assert res["ansible_facts"]["gds"]["require_mode"] == {"mode": "compat", "proven": True, "met": False}


def test_overlay_config_is_returned_for_validation(gpu_less, tmp_path):
    overlay = tmp_path / "user.json"
    overlay.write_text('{"properties": {"allow_compat_mode": false}}\n')
    res = run_module(gds_facts.main, {"probe_path": [gpu_less], "cufile_env_path_json": str(overlay)})
    cufile = res["ansible_facts"]["gds"]["cufile"]
    assert cufile["env_path_json"] == str(overlay)
    assert cufile["files"][1]["role"] == "overlay" and cufile["files"][1]["text"].startswith('{"properties"')
    assert cufile["effective"] == {"allow_compat_mode": False}


@pytest.mark.parametrize("args, msg", [
    ({"probe_size_mb": 0}, "probe_size_mb=0 is out of range: it must be between 1 and 65536"),
    ({"probe_timeout": 1}, "probe_timeout=1 is out of range"),
    ({"probe_threads": 65}, "probe_threads=65 is out of range"),
    ({"probe_path": ["relative/dir"]}, "probe_path entry 'relative/dir' must be an absolute path"),
    ({"probe_path": []}, "probe_path must name at least one directory when probe=true"),
])
def test_bad_options_name_the_option(gpu_less, args, msg):
    res = run_module(gds_facts.main, args)
    assert res["failed"] is True and res["msg"].startswith(msg)


@pytest.mark.skipif(standin.gcc() is None, reason="needs a C compiler for the libcufile stand-in")
def test_probe_through_the_module(tmp_path, monkeypatch):
    libs = standin.build(str(tmp_path / "libs"))
    host, proc = standin.fake_host(str(tmp_path))
    monkeypatch.setenv("GPUDIRECT_HOST_ROOT", host)
    monkeypatch.setenv("GPUDIRECT_PROC_ROOT", proc)
    monkeypatch.setenv("LD_LIBRARY_PATH", libs)
    monkeypatch.delenv("GDS_STANDIN_CUFILE", raising=False)
    data = tmp_path / "data"
    data.mkdir()
    res = run_module(gds_facts.main, {"probe_path": str(data), "probe_size_mb": 4, "require_mode": "compat"},
                     check_mode=True)
    gds = res["ansible_facts"]["gds"]
    assert not res.get("failed") and gds["mode"] == "compat" and gds["require_mode"]["met"] is True
    assert gds["probe"]["paths"][0]["verify"]["verified_bytes"] == 4 << 20
    assert gds["libcufile"]["path"] == os.path.join(libs, "libcufile.so.0")
    assert list(data.iterdir()) == []


@pytest.mark.skipif(standin.gcc() is None, reason="needs a C compiler for the libcufile stand-in")
@pytest.mark.parametrize("required", ["gds", "compat"])
def test_an_inferred_verdict_never_meets_require_mode(tmp_path, monkeypatch, required):
    """Issue 14: probe=false with nvidia_fs loaded inferred gds, and require_mode=gds passed."""
    libs = standin.build(str(tmp_path / "libs"))
    host, proc = standin.fake_host(str(tmp_path), nvfs=True)
    monkeypatch.setenv("GPUDIRECT_HOST_ROOT", host)
    monkeypatch.setenv("GPUDIRECT_PROC_ROOT", proc)
    monkeypatch.setenv("LD_LIBRARY_PATH", libs)
    res = run_module(gds_facts.main, {"probe": False, "require_mode": required, "gather_cuda": False})
    gds = res["ansible_facts"]["gds"]
    assert gds["mode"] == "gds" and gds["verified"] is False
    assert res["failed"] is True and "nothing was written" in res["msg"] and "probe=false" in res["msg"]
    assert gds["require_mode"] == {"mode": required, "proven": True, "met": False}


def fake_mounts(proc, text, blocks):
    with open(os.path.join(proc, "proc/self/mounts"), "w") as f:
        f.write(text)
    for name in blocks:
        os.makedirs(os.path.join(proc, "sys/block", name), exist_ok=True)


def test_probe_path_auto_is_the_default_and_picks_the_nvme_data_mounts(tmp_path, monkeypatch):
    host, proc = standin.fake_host(str(tmp_path))
    data = tmp_path / "nvme-data"
    data.mkdir()
    fake_mounts(proc, "/dev/vda / ext4 rw 0 0\n/dev/nvme0n1 %s xfs rw 0 0\ntmpfs /dev/shm tmpfs rw 0 0\n" % data,
                ["vda", "nvme0n1"])
    monkeypatch.setenv("GPUDIRECT_HOST_ROOT", host)
    monkeypatch.setenv("GPUDIRECT_PROC_ROOT", proc)
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    res = run_module(gds_facts.main, {"probe": False})
    gds = res["ansible_facts"]["gds"]
    assert gds["storage"]["auto"]["picked"] == [str(data)] and gds["storage"]["auto"]["fallback"] is False
    assert [p["path"] for p in gds["storage"]["probe_paths"]] == [str(data)]
    assert gds["storage"]["probe_paths"][0]["class"]["kind"] == "nvme"
    assert gds["warnings"] == []


def test_probe_path_auto_without_a_gds_mount_falls_back_to_var_tmp_with_a_warning(tmp_path, monkeypatch):
    host, proc = standin.fake_host(str(tmp_path))
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__)))),
                           "fixtures", "gds", "mounts-gpu-host.constructed.txt")) as f:
        fake_mounts(proc, f.read(), ["vda", "loop0", "loop1"])
    monkeypatch.setenv("GPUDIRECT_HOST_ROOT", host)
    monkeypatch.setenv("GPUDIRECT_PROC_ROOT", proc)
    res = run_module(gds_facts.main, {"probe": False, "probe_path": ["auto"]})
    gds = res["ansible_facts"]["gds"]
    assert [p["path"] for p in gds["storage"]["probe_paths"]] == ["/var/tmp"]
    assert gds["storage"]["auto"]["fallback"] is True
    assert gds["warnings"][0].startswith("probe_path=auto found no mounted file system GDS can serve")
    assert "a loop device" in gds["warnings"][0] and "the root file system on /dev/vda" in gds["warnings"][0]


def test_probe_path_auto_does_not_mix_with_paths(gpu_less):
    res = run_module(gds_facts.main, {"probe_path": ["auto", gpu_less]})
    assert res["failed"] is True and res["msg"].startswith("probe_path: auto stands alone")


def test_secure_boot_host_reports_mok_enrolment(gpu_less, tmp_path, monkeypatch):
    """gds.mok: what mokutil says of the signing certificate, so gds_preflight can check
    enrolment as the nvidia_fs module does (issue 18)."""
    proc = os.environ["GPUDIRECT_PROC_ROOT"]
    efivars = os.path.join(proc, "sys/firmware/efi/efivars")
    os.makedirs(efivars, exist_ok=True)
    with open(os.path.join(efivars, "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"), "wb") as f:
        f.write(b"\x06\x00\x00\x00\x01")
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "mokutil").write_text("#!/bin/sh\ncase \"$2\" in */enrolled.der) echo \"$2 is already enrolled\";; "
                                   "*) echo \"$2 is not enrolled\";; esac\n")
    (shims / "mokutil").chmod(0o755)
    monkeypatch.setenv("GPUDIRECT_BIN_DIR", str(shims))
    for cert, enrolled in (("/etc/mok/enrolled.der", True), ("/etc/mok/other.der", False)):
        gds = run_module(gds_facts.main, {"probe_path": [gpu_less], "mok_cert": cert})["ansible_facts"]["gds"]
        assert gds["secure_boot"] == "enabled"
        assert gds["mok"] == {"cert": cert, "enrolled": enrolled, "default_enrolled": False}
    plain = run_module(gds_facts.main, {"probe_path": [gpu_less]})["ansible_facts"]["gds"]
    assert plain["mok"] == {"cert": None, "enrolled": None, "default_enrolled": False}
