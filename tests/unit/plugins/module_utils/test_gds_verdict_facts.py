# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Verdict order: every reason follows from the facts returned with it. A property
test over every combination of the fact fixtures (captured cufile.log, nvidia-fs stats and
libcufile stdout files of tests/fixtures/gds, and constructed driver, GPU, libcufile, nvidia_fs,
cufile.json, probe and storage states): no reason may name as missing a component that the same
facts show present."""

from __future__ import annotations

import copy
import itertools

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import verdict as v
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import fixture_text

H100 = {"name": "NVIDIA H100 80GB HBM3"}
LIB = "/usr/local/cuda/lib64/libcufile.so.0"


DRIVERS = [
    {"driver_loaded": True, "nvml_ok": True, "driver_version": "580.159.04"},
    # NVML answers (a driver version) but /proc/driver/nvidia is not visible: the report's no-libcufile host
    {"driver_loaded": False, "nvml_ok": True, "driver_version": "580.159.04"},
    {"driver_loaded": True, "nvml_ok": False, "driver_version": "580.159.04"},
    {"driver_loaded": False, "nvml_ok": False, "driver_version": None},
]
GPUS = [[], [H100]]
LIBS = [{"path": LIB, "version": "1.15.1"}, {"path": None, "searched": ["/usr/local/cuda/lib64", "/usr/lib64"]}]
NVFS = [{"loaded": False}, {"loaded": True}]
CONFIGS = [{}, {"force_compat_mode": True}, {"use_pci_p2pdma": True}]
STORAGE = {
    "loop": {"path": "/mnt/gds", "fstype": "ext4", "block_device": "loop0", "transport": "loop", "dev": "7:0",
             "udev": {"path": "/run/udev/data/b7:0", "present": True, "id_fs_usage": "filesystem"}},
    "root": {"path": "/var/tmp", "fstype": "ext4", "block_device": "vda", "transport": "virtio", "dev": "254:0",
             "udev": {"path": "/run/udev/data/b254:0", "present": False, "id_fs_usage": None}},
    "nvme": {"path": "/mnt/nvme", "fstype": "xfs", "block_device": "nvme0n1", "transport": "nvme", "dev": "259:1",
             "udev": {"path": "/run/udev/data/b259:1", "present": True, "id_fs_usage": "filesystem"}},
    "tmpfs": {"path": "/dev/shm", "fstype": "tmpfs", "device": "tmpfs", "transport": "none", "dev": "0:25"},
}
STATS = [None, fixture_text("gds", "nvfs-stats-2.25.7-io-stats-disabled.txt"), fixture_text("gds", "nvfs-stats-2.24-io-stats-enabled.head12.txt"),
         fixture_text("gds", "nvfs-stats-1.9.0.20-old-format.txt")]
LOGS = [[], parse.parse_cufile_log(fixture_text("gds", "cufile-log-lmcache-795-dm0.txt")),
        parse.parse_cufile_log(fixture_text("gds", "cufile-log-gds-nvidia-fs-62-handle-register.txt"))]
STDOUT = parse.stdout_lines(fixture_text("gds", "libcufile-stdout-config-error.txt"), "@@")


def ok_entry(path, stats):
    moved = stats.replace("Writes  : n=0 ok=0", "Writes  : n=16 ok=16") if stats else None
    return {"path": path, "ok": True, "write_gbps": 1.3, "read_gbps": 5.1,
            "verify": {"ok": True, "verified_bytes": 1 << 26}, "nvfs_stats": [stats, moved, moved]}


def probes(storage):
    path = storage["path"]
    yield {"enabled": False, "ran": False}
    yield {"enabled": True, "ran": False}
    for stats, log in itertools.product(STATS, LOGS):
        yield {"enabled": True, "ran": True, "paths": [ok_entry(path, stats)], "cufile_log": log}
    for log in LOGS:
        err = {"step": "cuFileHandleRegister", "kind": "cufile", "err": 5027, "cu_err": 0}
        yield {"enabled": True, "ran": True, "cufile_log": log, "paths": [{"path": path, "ok": False, "error": err}]}
    yield {"enabled": True, "ran": True, "paths": [], "error": {"step": "load libcuda", "kind": "dlopen",
                                                                "message": "libcuda.so.1: cannot open shared object"}}
    yield {"enabled": True, "ran": True, "paths": [], "error": {"step": "cuInit", "kind": "cuda", "code": 100}}
    yield {"enabled": True, "ran": True, "paths": [], "stdout_lines": STDOUT,
           "error": {"step": "cuFileDriverOpen", "kind": "cufile", "err": -22}}
    yield {"enabled": True, "ran": True, "paths": [], "signal": "SIGABRT", "last_step": "cuFileDriverOpen"}
    yield {"enabled": True, "ran": True, "cufile_log": [], "paths": [{"path": path, "ok": False, "error": {
        "step": "open", "kind": "os", "errno": 22, "strerror": "Invalid argument", "file": path + "/x"}}]}


def all_facts():
    for driver, gpus, lib, nvfs, cfg, storage in itertools.product(DRIVERS, GPUS, LIBS, NVFS, CONFIGS,
                                                                   STORAGE.values()):
        for probe in probes(storage):
            if probe["ran"] and not lib["path"]:
                continue  # gather never runs the probe without a libcufile
            probe = copy.deepcopy(probe)
            probe.setdefault("cufile", {"params": dict({"allow_compat_mode": True}, **cfg),
                                        "props": {"nvfs_major_version": 2 if nvfs["loaded"] else 0, "fflags": 30}})
            yield {"nvidia": dict(driver), "gpus": list(gpus), "libcufile": dict(lib), "nvidia_fs": dict(nvfs),
                   "cufile": {"effective": dict(cfg)}, "storage": {"probe_paths": [copy.deepcopy(storage)]},
                   "probe": probe}


def driver_present(facts):
    nvidia = facts["nvidia"]
    return bool(nvidia.get("driver_loaded") or nvidia.get("nvml_ok") or nvidia.get("driver_version") or facts["gpus"])


def config(facts):
    return dict(facts["cufile"]["effective"], **((facts["probe"].get("cufile") or {}).get("params") or {}))


# phrase in a reason -> the facts contradict it when this is true
CONTRADICTIONS = {
    "no NVIDIA driver:": driver_present,
    "nvidia kernel module is not loaded": lambda f: f["nvidia"]["driver_loaded"],
    "libcufile not found": lambda f: bool(f["libcufile"]["path"]),
    "nvidia_fs kernel module not loaded": lambda f: f["nvidia_fs"]["loaded"],
    "nvidia_fs not loaded": lambda f: f["nvidia_fs"]["loaded"],
    "nvidia_fs is loaded": lambda f: not f["nvidia_fs"]["loaded"],
    "no NVIDIA GPU:": lambda f: bool(f["gpus"]),
    "NVML reports 0 devices": lambda f: bool(f["gpus"]) or not f["nvidia"]["nvml_ok"],
    "no udev data for": lambda f: any((s.get("udev") or {}).get("present") for s in f["storage"]["probe_paths"]),
    "use_pci_p2pdma is off": lambda f: bool(config(f).get("use_pci_p2pdma")),
    "force_compat_mode": lambda f: not config(f).get("force_compat_mode"),
    "tmpfs": lambda f: not any(s.get("fstype") == "tmpfs" for s in f["storage"]["probe_paths"]),
}


def test_the_fixture_set_is_large_and_covers_every_mode():
    modes = set(v.verdict(f)["mode"] for f in all_facts())
    assert modes == {"gds", "p2pdma", "compat", "unavailable", "failed"}
    assert sum(1 for _f in all_facts()) > 2000


def test_no_reason_names_as_missing_what_the_same_facts_show_present():
    bad = []
    for facts in all_facts():
        out = v.verdict(facts)
        assert out["reasons"], facts
        for reason in out["reasons"]:
            for phrase, contradicted in CONTRADICTIONS.items():
                if phrase in reason and contradicted(facts):
                    bad.append((phrase, reason, facts["nvidia"], facts["gpus"], facts["libcufile"]["path"],
                                facts["nvidia_fs"], facts["probe"].get("enabled"), facts["probe"].get("ran")))
    assert bad == [], "%d contradictions, first: %r" % (len(bad), bad[:3])


def test_driver_seen_by_nvml_but_no_libcufile_says_libcufile_is_missing():
    """The host no-libcufile-03 of docs/images/gds-fleet-report.png: driver 580.159.04, no libcufile."""
    facts = {"nvidia": DRIVERS[1], "gpus": [H100], "libcufile": LIBS[1], "nvidia_fs": {"loaded": False},
             "cufile": {"effective": {}}, "probe": {"enabled": True, "ran": False}}
    out = v.verdict(facts)
    assert out["mode"] == "unavailable"
    assert out["reason"] == "libcufile not found (searched /usr/local/cuda/lib64, /usr/lib64)"
