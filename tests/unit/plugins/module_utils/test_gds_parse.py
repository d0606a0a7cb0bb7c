# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_facts parsers against real captured inputs (tests/fixtures/gds/README.md says where
each one comes from)."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse as p
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.collectors import Collector
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import fixture_text


@pytest.mark.parametrize("name, version, flavor", [
    ("driver-nvidia-version-open-580.95.05.txt", "580.95.05", "open"),
    ("driver-nvidia-version-proprietary-515.76.txt", "515.76", "proprietary"),
])
def test_nvidia_version(name, version, flavor):
    info = p.parse_nvidia_version(fixture_text("captured", "proc", name))
    assert info["version"] == version
    assert info["flavor"] == flavor
    assert info["banner"].startswith("NVRM version: NVIDIA UNIX")


def test_nvidia_version_taint_fallback():
    assert p.parse_nvidia_version(None, "POE\n")["flavor"] == "proprietary"
    assert p.parse_nvidia_version("", "OE\n")["flavor"] == "open"
    assert p.parse_nvidia_version(None) == {"version": None, "flavor": None, "banner": None}


def test_nvfs_version():
    assert p.parse_nvfs_version(fixture_text("gds", "nvfs-version-2.26.constructed.txt")) == "2.26"
    assert p.parse_nvfs_version("") is None


def test_nvfs_stats_counters_disabled():
    stats = p.parse_nvfs_stats(fixture_text("gds", "nvfs-stats-2.25.7-io-stats-disabled.txt"))
    assert stats["gds_version"] == "1.14.0.31"
    assert stats["stats_version"] == "4.0"
    assert stats["driver_version"] == "2.25.7"
    assert stats["peerdirect_supported"] is True
    assert stats["rw_stats_enabled"] is False
    assert stats["writes"] == {"err": 0, "io_state_err": 0, "pg_cache": 0, "pg_cache_fail": 0, "pg_cache_eio": 0}
    assert "n" not in stats["reads"]
    assert stats["mmap"] == {"n": 1, "ok": 1, "err": 0, "munmap": 2}
    assert stats["bar1_map"]["delay_frees"] == 0
    assert stats["active_process"] == 0
    assert stats["gpus"] == [{"pci_bus_id": "0000:01:00.0", "uuid": "fb1e6550-2a78-d767-1f0d-7512eb8c552d",
                              "registered_mib": 0, "cache_mib": 0, "max_pinned_mib": 1}]


def test_nvfs_stats_counters_enabled_merges_repeated_labels():
    stats = p.parse_nvfs_stats(fixture_text("gds", "nvfs-stats-2.24-io-stats-enabled.head12.txt"))
    assert stats["rw_stats_enabled"] is True and stats["peer_stats_enabled"] is True
    assert stats["reads"]["n"] == 1048576 and stats["reads"]["ok"] == 1048576
    assert stats["reads"]["bandwidth_mib_s"] == 13224
    assert stats["reads"]["avg_latency_usec"] == 594
    assert stats["writes"]["ok"] == 0


def test_nvfs_stats_old_format_without_io_stats_line():
    stats = p.parse_nvfs_stats(fixture_text("gds", "nvfs-stats-1.9.0.20-old-format.txt"))
    assert stats["rw_stats_enabled"] is True  # n=/ok= printed
    assert stats["writes"]["writemb"] == 131072
    assert stats["active_shadow_buffer_mb"] == 0


def test_counter_delta():
    before = p.parse_nvfs_stats(fixture_text("gds", "nvfs-stats-1.9.0.20-old-format.txt"))
    after_text = fixture_text("gds", "nvfs-stats-1.9.0.20-old-format.txt").replace(
        "n=1024 ok=1024 err=0 writeMB=131072", "n=1040 ok=1040 err=0 writeMB=131328")
    delta = p.nvfs_counter_delta(before, p.parse_nvfs_stats(after_text))
    assert delta["writes_ok"] == 16 and delta["writes_n"] == 16 and delta["writes_mib"] == 256
    assert delta["reads_ok"] == 0


def test_counter_delta_none_when_counters_off():
    off = p.parse_nvfs_stats(fixture_text("gds", "nvfs-stats-2.25.7-io-stats-disabled.txt"))
    assert p.nvfs_counter_delta(off, off) is None
    assert p.nvfs_counter_delta(None, off) is None


def test_nvidia_smi_csv_and_memory():
    gpus = p.parse_nvidia_smi_csv(fixture_text("gds", "nvidia-smi-query-gpu-h100.constructed.csv"))
    assert gpus == [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-5a1d0000-0000-4000-8000-000000000001",
                     "pci_bus_id": "00000000:00:05.0", "driver_version": "580.159.04"}]
    mem = p.parse_nvidia_smi_memory(fixture_text("gds", "nvidia-smi-q-memory-h100.constructed.txt"))
    assert mem[None] == {"driver_version": "580.159.04", "cuda_version": "13.0"}
    assert mem["00000000:00:05.0"] == {"fb_total_mib": 81559, "bar1_total_mib": 131072}


@pytest.mark.parametrize("raw, norm", [
    ("00000000:00:05.0", "0000:00:05.0"), ("0000:3B:00.0", "0000:3b:00.0"), ("weird", "weird")])
def test_normalize_bus_id(raw, norm):
    assert p.normalize_bus_id(raw) == norm


def test_mounts_and_find_mount():
    mounts = p.parse_mounts(fixture_text("gds", "mounts-gpu-host.constructed.txt"))
    assert p.find_mount(mounts, "/mnt/gds/sub")["device"] == "/dev/loop0"
    assert "data=ordered" in p.find_mount(mounts, "/mnt/gds")["options"]
    assert p.find_mount(mounts, "/mnt/gdsx")["mount_point"] == "/"
    assert p.find_mount(mounts, "/var/tmp")["fstype"] == "ext4"
    assert p.find_mount(mounts, "/mnt/with space/x")["device"] == "/dev/loop1"


def test_udev_data_and_block_transport():
    props = p.parse_udev_data(fixture_text("gds", "udev-data-b259-31.txt"))
    assert props["ID_FS_USAGE"] == "filesystem" and props["ID_FS_TYPE"] == "ext4"
    assert [p.block_transport(n) for n in ("nvme0n1p2", "loop0", "vda", "dm-0", "sdb", "", None)] == [
        "nvme", "loop", "virtio", "dm", "scsi", None, None]


def test_iommu():
    none = p.parse_iommu(fixture_text("gds", "proc-cmdline-microvm-no-iommu.constructed.txt"), 0)
    assert none == {"mode": "off", "enabled": False, "groups": 0, "cmdline": []}
    pt = p.parse_iommu(fixture_text("gds", "proc-cmdline-intel-iommu-pt.constructed.txt"), 96)
    assert pt["mode"] == "passthrough" and pt["cmdline"] == ["intel_iommu=on", "iommu=pt"]
    assert p.parse_iommu("intel_iommu=on", 12)["mode"] == "translated"


@pytest.mark.parametrize("data, state", [
    (b"\x06\x00\x00\x00\x01", "enabled"), (b"\x06\x00\x00\x00\x00", "disabled"), (b"", "unknown"), (None, "unknown")])
def test_secure_boot(tmp_path, data, state):
    efivars = tmp_path / "sys/firmware/efi/efivars"
    efivars.mkdir(parents=True)
    if data is not None:
        (efivars / "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c").write_bytes(data)
    paths = HostPaths(root=str(tmp_path), proc_root=str(tmp_path))
    assert Collector(paths, runner=None, environ={}).secure_boot() == state


def test_versions():
    assert p.soname_version("/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcufile.so.1.15.1") == "1.15.1"
    assert p.soname_version("/x/libcufile.so.0") is None
    assert p.cuda_dir_version("/usr/local/cuda-12.8") == (12, 8)
    assert p.decode_cuda_version(13000) == "13.0" and p.decode_cuda_version(12080) == "12.8"
    assert p.decode_cuda_version(0) is None


def test_cufile_log_udev_missing():
    entries = p.parse_cufile_log(fixture_text("gds", "cufile-log-lmcache-795-dm0.txt"))
    assert [(e["level"], e["message"], e["count"]) for e in entries] == [
        ("NOTICE", "running in compatible mode", 1),
        ("ERROR", "udev property not found: ID_FS_USAGE dm-0", 2),
        ("ERROR", "error getting volume attributes error for device: dev_no: 251:0", 2),
        ("NOTICE", "cuFileHandleRegister GDS not supported or disabled by config, using cuFile posix read/write "
                   "with compat mode enabled", 2)]
    assert entries[1]["where"] == "cufio-udev:67"


def test_cufile_log_levels_filter():
    text = fixture_text("gds", "cufile-log-gds-nvidia-fs-62-handle-register.txt")
    errors = p.parse_cufile_log(text, levels=("ERROR",))
    assert errors[-1]["message"] == "cuFileHandleRegister error: internal error"
    assert "unable to get volume attributes for fd 56" in [e["message"] for e in errors]
    assert all(e["level"] == "ERROR" for e in errors)


def test_stdout_lines_drop_sentinels_and_duplicates():
    text = "@@GDS_PROBE@@ step cuFileDriverOpen\n" + fixture_text("gds", "libcufile-stdout-config-error.txt") * 2
    assert p.stdout_lines(text, "@@GDS_PROBE@@") == [
        "error reading config properties.posix_pool_slab_count",
        "failed to load user config: /tmp/w/slab_mis.json Invalid argument",
        "cuFile configuration load error", "cuFile initialization failed"]
