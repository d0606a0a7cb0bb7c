# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gds_facts verdict: every mode, and never a bare error number."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import verdict as v
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import errors as _errors
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import fixture_text

STORAGE_LOOP = {"path": "/mnt/gds", "fstype": "ext4", "block_device": "loop0", "transport": "loop", "dev": "7:0",
                "udev": {"path": "/run/udev/data/b7:0", "present": True, "id_fs_usage": "filesystem"}}
STORAGE_ROOT = {"path": "/var/tmp", "fstype": "ext4", "block_device": "vda", "transport": "virtio", "dev": "254:0",
                "udev": {"path": "/run/udev/data/b254:0", "present": False, "id_fs_usage": None}}
STORAGE_NVME = {"path": "/mnt/nvme", "fstype": "xfs", "block_device": "nvme0n1", "transport": "nvme", "dev": "259:1",
                "udev": {"path": "/run/udev/data/b259:1", "present": True, "id_fs_usage": "filesystem"}}
OK_ENTRY = {"path": "/mnt/gds", "ok": True, "write_gbps": 1.3, "read_gbps": 5.1,
            "verify": {"ok": True, "verified_bytes": 268435456}, "nvfs_stats": [None, None, None]}
COMPAT_LOG = parse.parse_cufile_log(fixture_text("gds", "cufile-log-lmcache-795-dm0.txt"))[:1]


def facts(paths=None, storage=None, nvfs_loaded=False, log=None, params=None, props=None, **probe):
    base = {
        "nvidia": {"driver_loaded": True, "nvml_ok": True},
        "gpus": [{"name": "NVIDIA H100 80GB HBM3"}],
        "nvidia_fs": {"loaded": nvfs_loaded},
        "libcufile": {"path": "/usr/local/cuda/lib64/libcufile.so.0", "version": "1.15.1"},
        "cufile": {"effective": {}},
        "storage": {"probe_paths": storage if storage is not None else [STORAGE_LOOP]},
        "probe": {"enabled": True, "ran": True, "paths": paths if paths is not None else [copy.deepcopy(OK_ENTRY)],
                  "cufile_log": log if log is not None else COMPAT_LOG, "stdout_lines": [],
                  "cufile": {"params": params or {"allow_compat_mode": True, "use_pci_p2pdma": False},
                             "props": props or {"nvfs_major_version": 0, "fflags": 14}}},
    }
    base["probe"].update(probe)
    return base


def stats_text(writes_ok, reads_ok):
    return fixture_text("gds", "nvfs-stats-2.24-io-stats-enabled.head12.txt").replace(
        "Writes  : n=0 ok=0", "Writes  : n=%d ok=%d" % (writes_ok, writes_ok)).replace(
        "Reads   : n=1048576 ok=1048576", "Reads   : n=%d ok=%d" % (reads_ok, reads_ok))


def test_compat_names_missing_nvidia_fs_and_is_verified():
    out = v.verdict(facts())
    assert out["mode"] == "compat"
    assert out["reasons"][0].startswith("nvidia_fs kernel module not loaded")
    assert any("/dev/loop0, a loop device" in r for r in out["reasons"])
    assert "cufile.log: NOTICE running in compatible mode" in out["reasons"]
    assert out["verified"] is True and out["proven"] is True
    assert out["paths"][0]["write_gbps"] == 1.3


def test_gds_proven_by_writes_counter():
    entry = dict(OK_ENTRY, path="/mnt/nvme", nvfs_stats=[stats_text(0, 5), stats_text(16, 5), stats_text(16, 21)])
    out = v.verdict(facts([entry], [STORAGE_NVME], nvfs_loaded=True, log=[]))
    assert out["mode"] == "gds" and out["proven"] is True
    assert out["reason"] == "nvidia-fs Writes ok +16, Reads ok +16 during the probe (rw_stats_enabled=1)"


def test_nvidia_fs_loaded_but_counter_still_is_compat():
    entry = dict(OK_ENTRY, nvfs_stats=[stats_text(3, 3), stats_text(3, 3), stats_text(3, 3)])
    out = v.verdict(facts([entry], nvfs_loaded=True, log=[]))
    assert out["mode"] == "compat"
    assert "nvidia-fs Writes ok counter did not move during the probe write (+0)" in out["reasons"]
    assert out["proven"] is True


def test_gds_unproven_when_counters_off():
    disabled = fixture_text("gds", "nvfs-stats-2.25.7-io-stats-disabled.txt")
    entry = dict(OK_ENTRY, path="/mnt/nvme", nvfs_stats=[disabled] * 3)
    out = v.verdict(facts([entry], [STORAGE_NVME], nvfs_loaded=True, log=[]))
    assert out["mode"] == "gds" and out["proven"] is False
    assert "rw_stats_enabled=1" in out["reason"]


def test_handle_not_registered_quotes_udev_and_log_lines():
    log = parse.parse_cufile_log(fixture_text("gds", "cufile-log-lmcache-795-dm0.txt"))
    error = {"step": "cuFileHandleRegister", "kind": "cufile", "err": 5027, "cu_err": 0}
    entry = {"path": "/var/tmp", "ok": False, "error": error}
    out = v.verdict(facts([entry], [STORAGE_ROOT], log=log))
    assert out["mode"] == "failed"
    assert out["reasons"][0].startswith("cuFileHandleRegister failed: CU_FILE_HANDLE_NOT_REGISTERED (5027)")
    assert "no udev data for vda (/run/udev/data/b254:0 missing): libcufile cannot classify the device" in out["reasons"]
    assert "cufile.log: ERROR udev property not found: ID_FS_USAGE dm-0" in out["reasons"]
    assert "cufile.log: ERROR error getting volume attributes error for device: dev_no: 251:0" in out["reasons"]
    assert out["verified"] is False


def test_relevant_log_lines_come_first():
    noise = [{"level": "ERROR", "where": "cufio-dr:229", "count": 1,
              "message": "No matching pair for network device to closest GPU found in the platform"}] * 7
    log = noise + parse.parse_cufile_log(fixture_text("gds", "cufile-log-gds-nvidia-fs-62-handle-register.txt"))
    entry = {"path": "/var/tmp", "ok": False, "error": {"step": "cuFileHandleRegister", "kind": "cufile", "err": 5030}}
    out = v.verdict(facts([entry], [STORAGE_ROOT], log=log))
    assert out["reasons"][2].startswith("/var/tmp (ext4) is on /dev/vda (virtio device), not NVMe")  # its class
    assert out["reasons"][3] == "cufile.log: ERROR error creating udev_device for block device dev_no: 0:53"
    assert "cufile.log: ERROR unable to get volume attributes for fd 56" in out["reasons"]
    assert [r for r in out["reasons"] if "No matching pair" in r] == [out["reasons"][-1]]  # noise last, once


def test_config_rejected_quotes_stdout():
    lines = parse.stdout_lines(fixture_text("gds", "libcufile-stdout-config-error.txt"), "@@")
    out = v.verdict(facts([], stdout_lines=lines, log=[],
                          error={"step": "cuFileDriverOpen", "kind": "cufile", "err": -22, "cu_err": 0}))
    assert out["mode"] == "failed"
    assert out["reasons"][0].startswith("cuFileDriverOpen failed: -22 EINVAL")
    assert "libcufile printed: error reading config properties.posix_pool_slab_count" in out["reasons"]
    assert "5027" not in out["reason"]


def test_abort_is_reported_with_step_and_stdout():
    out = v.verdict(facts([], log=[], signal="SIGABRT", last_step="cuFileDriverOpen", rc=-6,
                          stdout_lines=["error reading config logging"],
                          stderr_tail="terminate called after throwing an instance of 'Json::LogicError'"))
    assert out["mode"] == "failed"
    assert out["reasons"][0] == "probe child killed by SIGABRT during cuFileDriverOpen"
    assert "libcufile printed: error reading config logging" in out["reasons"]
    assert any(r.startswith("stderr: terminate called") for r in out["reasons"])


def test_verify_mismatch_and_io_errors():
    bad = dict(OK_ENTRY, verify={"ok": False, "verified_bytes": 1048576},
               error={"step": "verify", "kind": "verify", "offset": 1048576, "expected": "aa", "got": "bb",
                      "verified_bytes": 1048576})
    out = v.verdict(facts([bad]))
    assert out["mode"] == "failed" and "data read back differs at offset 1048576" in out["reason"]
    io = {"step": "cuFileWrite", "kind": "io", "offset": 0, "size": 16, "ret": -1, "errno": 5}
    assert "EIO (Input/output error)" in _errors.describe_error(io)
    assert "CU_FILE_HANDLE_NOT_REGISTERED (5027)" in _errors.describe_error(dict(io, errno=5027))
    assert "CU_FILE_CUDA_DRIVER_ERROR (5011)" in _errors.describe_error(dict(io, ret=-5011, errno=None))
    assert "short transfer: 8 bytes" in _errors.describe_error(dict(io, ret=8))


def test_o_direct_refused():
    err = {"step": "open", "kind": "os", "errno": 22, "strerror": "Invalid argument", "file": "/dev/shm/x"}
    assert _errors.describe_error(err).endswith("the file system refused O_DIRECT")


# first: reasons[0] (None: not checked); words: in the reason
@pytest.mark.parametrize("change, mode, first, words", [
    ({"log": [], "params": {"use_pci_p2pdma": True}, "props": {"nvfs_major_version": 0, "fflags": 30}}, "p2pdma", None, []),
    ({"params": {"force_compat_mode": True, "use_pci_p2pdma": False}}, "compat", None, ["force_compat_mode"]),
    ({"paths": [], "log": [], "error": {"step": "cuFileDriverOpen", "kind": "cufile", "err": 5001, "cu_err": 0}}, "failed", None,
     ["CU_FILE_DRIVER_NOT_INITIALIZED (5001)", "allow_compat_mode"]),
    ({"paths": [], "timed_out": True, "signal": "SIGALRM", "timeout": 5, "last_step": "cuInit"}, "failed",
     "probe timed out after 5 s during cuInit", []),
    ({}, "compat", None, ["a loop device (a file on another file system)"]),
])
def test_mode_and_reason(change, mode, first, words):
    out = v.verdict(facts(**change))
    assert out["mode"] == mode and all(w in out["reason"] for w in words), out["reason"]
    assert first in (None, out["reasons"][0])


def test_worst_path_wins_and_each_path_is_named():
    bad = {"path": "/var/tmp", "ok": False, "error": {"step": "cuFileHandleRegister", "kind": "cufile", "err": 5027}}
    out = v.verdict(facts([copy.deepcopy(OK_ENTRY), bad], [STORAGE_LOOP, STORAGE_ROOT]))
    assert out["mode"] == "failed"
    assert out["reasons"][0].startswith("/mnt/gds: compat (")
    assert out["reasons"][1].startswith("/var/tmp: failed (cuFileHandleRegister failed: CU_FILE_HANDLE_NOT_REGISTERED")


@pytest.mark.parametrize("change, expect", [
    ({"nvidia": {"driver_loaded": False}, "gpus": [], "probe": {"enabled": True, "ran": False}},
     "no NVIDIA driver: the nvidia kernel module"),
    ({"nvidia": {"driver_loaded": False}, "probe": {"enabled": True, "ran": False}},  # GPUs listed: a driver is there
     "the probe did not run: the nvidia kernel module is not loaded and libcuda.so.1 was not found"),
    ({"probe": {"enabled": True, "ran": True, "error": {"step": "load libcuda", "kind": "dlopen",
                                                        "message": "libcuda.so.1: cannot open shared object file"}}},
     "no NVIDIA driver user space: load libcuda failed: libcuda.so.1: cannot open"),
    ({"probe": {"enabled": True, "ran": True, "error": {"step": "cuInit", "kind": "cuda", "code": 100,
                                                        "name": "CUDA_ERROR_NO_DEVICE"}}},
     "no usable NVIDIA GPU: cuInit failed: CUDA_ERROR_NO_DEVICE (100)"),
    ({"libcufile": {"path": None, "searched": ["/usr/local/cuda/lib64"]}, "probe": {"enabled": True, "ran": False}},
     "libcufile not found (searched /usr/local/cuda/lib64)"),
    ({"gpus": [], "probe": {"enabled": True, "ran": False}}, "no NVIDIA GPU: NVML reports 0 devices"),
])
def test_unavailable_says_which(change, expect):
    f = facts()
    f.update(change)
    out = v.verdict(f)
    assert out["mode"] == "unavailable"
    assert out["reason"].startswith(expect)


def test_a_host_without_a_gpu_hears_no_gpu_before_the_libcufile_link():
    """The lab's case: the driver is loaded, NVML cannot be loaded, no GPU is listed, and a
    libcufile without its link was found. The missing GPU is what the user must hear first."""
    f = facts()
    f.update(nvidia={"driver_loaded": True, "nvml_ok": False, "nvml_error": "libnvidia-ml.so.1 not found in the library path"},
             gpus=[], libcufile={"path": None, "searched": ["/usr/lib"],
                                 "skipped": [{"path": "/usr/lib/libcufile.so.1.15.1", "why": "no libcufile.so.0 link to it"}]},
             probe={"enabled": True, "ran": False})
    out = v.verdict(f)
    assert out["mode"] == "unavailable"
    assert out["reason"].startswith("no NVIDIA GPU found (libnvidia-ml.so.1 not found in the library path"), out["reason"]
    assert "create the link" in out["reason"]  # still said, after the GPU


def test_probe_disabled_infers():
    f = facts()
    f["probe"] = {"enabled": False, "ran": False}
    out = v.verdict(f)
    assert out["mode"] == "compat" and out["verified"] is False
    assert "inferred without a probe" in out["reason"]
    f["nvidia_fs"] = {"loaded": True}
    assert v.verdict(f)["mode"] == "gds"
    f["cufile"] = {"effective": {"force_compat_mode": True}}
    assert v.verdict(f)["mode"] == "compat"


@pytest.mark.parametrize("mode, required, ok", [
    ("gds", "gds", True), ("p2pdma", "gds", False), ("compat", "p2pdma", False), ("gds", "compat", True),
    ("failed", "compat", False), ("unavailable", "compat", False), ("compat", None, True)])
def test_meets(mode, required, ok):
    assert v.meets(mode, required) is ok


def test_error_names():
    assert _errors.cufile_error_name(5027) == "CU_FILE_HANDLE_NOT_REGISTERED (5027)"
    assert _errors.cufile_error_name(-5001) == "CU_FILE_DRIVER_NOT_INITIALIZED (5001)"
    assert _errors.cufile_error_name(5999) == "cuFile error 5999 (not in cufile.h 1.15)"
    assert _errors.cuda_error_name(35) == "CUDA_ERROR_INSUFFICIENT_DRIVER (35)"


def test_gate_names_both_modes_and_the_reason():
    verified = {"verified": True, "proven": True, "probe": {"enabled": True}}
    assert v.gate(dict(verified, mode="gds", reason="r"), "compat") == (True, None)
    assert v.gate(dict(verified, mode="compat", reason="r"), "") == (True, None)
    assert v.gate(dict(verified, mode="compat", reason="no nvidia_fs"), "gds") == \
        (False, "GDS verdict compat is weaker than the required gds: no nvidia_fs")


STORAGE_TMPFS = {"path": "/dev/shm", "fstype": "tmpfs", "device": "tmpfs", "mount_point": "/dev/shm",
                 "transport": "none", "dev": "0:25", "block_device": None, "exists": True}


def test_a_probe_on_tmpfs_says_tmpfs_and_o_direct_not_a_libcufile_classification_error():
    """On the H100 /dev/shm failed cuFileHandleRegister with 5027 and the reason blamed libcufile's
    block device classification."""
    error = {"step": "cuFileHandleRegister", "kind": "cufile", "err": 5027, "cu_err": 0}
    out = v.verdict(facts([{"path": "/dev/shm", "ok": False, "error": error}], [STORAGE_TMPFS], log=[]))
    assert out["mode"] == "failed"
    assert out["reasons"][0].startswith("/dev/shm is tmpfs: memory, no block device and no O_DIRECT")
    assert "could not classify" not in out["reason"]
    assert "CU_FILE_HANDLE_NOT_REGISTERED (5027)" in out["reason"]  # the error is still named


def test_an_o_direct_refusal_does_not_guess_the_file_system():
    err = {"step": "open", "kind": "os", "errno": 22, "strerror": "Invalid argument", "file": "/mnt/gds/x"}
    out = v.verdict(facts([{"path": "/mnt/gds", "ok": False, "error": err}], [STORAGE_LOOP], log=[]))
    assert "tmpfs" not in out["reason"] and "refused O_DIRECT" in out["reason"]
    assert "/mnt/gds (ext4) is on /dev/loop0, a loop device" in out["reason"]


def test_cufile_json_errors_join_a_failed_verdict_here_and_nowhere_else():
    failed = {"mode": "failed", "reasons": ["cuFileDriverOpen failed: -22"], "reason": "cuFileDriverOpen failed: -22"}
    out = v.with_config_errors(dict(failed), ["a", "b", "c", "d"])
    assert out["reasons"] == ["cuFileDriverOpen failed: -22", "cufile.json: a", "cufile.json: b", "cufile.json: c"]
    assert out["reason"] == "; ".join(out["reasons"])
    compat = {"mode": "compat", "reasons": ["nvidia_fs kernel module not loaded"], "reason": "nvidia_fs kernel module not loaded"}
    assert v.with_config_errors(dict(compat), ["a"]) == compat  # a working data path is not blamed on the file
