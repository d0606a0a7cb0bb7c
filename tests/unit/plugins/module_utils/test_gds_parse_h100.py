# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The parsers against files captured on the real H100 test host by tests/gpu/device-run.sh
(2026-11-23; tests/gpu/evidence/2026-11-23-h100-captures.txt)."""
from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse as p
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostparse import parse_proc_modules
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import fixture_text


def test_driver_version_open_module():
    info = p.parse_nvidia_version(fixture_text("gds", "nvidia-version-h100-580.159.04.txt"))
    assert info["version"] == "580.159.04"
    assert info["flavor"] == "open"
    assert info["banner"].startswith("NVRM version: NVIDIA UNIX Open Kernel Module")


def test_nvidia_smi_query_gpu():
    gpus = p.parse_nvidia_smi_csv(fixture_text("gds", "nvidia-smi-query-gpu-h100.csv"))
    assert gpus == [{"index": 0, "name": "NVIDIA H100 80GB HBM3",
                     "uuid": "GPU-ea8200a1-18a0-734b-bbc7-01b32150f5f5",
                     "pci_bus_id": "00000000:00:06.0", "driver_version": "580.159.04"}]


def test_nvidia_smi_memory_bar1():
    mem = p.parse_nvidia_smi_memory(fixture_text("gds", "nvidia-smi-q-memory-h100.txt"))
    gpu = mem["00000000:00:06.0"]
    assert gpu["bar1_total_mib"] == 131072  # BAR1 128 GiB
    assert gpu["fb_total_mib"] == 81559


def test_mounts_and_probe_path_fs():
    mounts = p.parse_mounts(fixture_text("gds", "mounts-gpu-host.txt"))
    m = p.find_mount(mounts, "/mnt/gds/probe")
    assert m["fstype"] == "ext4" and m["device"] == "/dev/loop0" and "data=ordered" in m["options"]
    root = p.find_mount(mounts, "/var/tmp")
    assert root["fstype"] == "ext4" and root["device"] == "/dev/vda"


def test_iommu_off_in_the_microvm():
    iommu = p.parse_iommu(fixture_text("gds", "proc-cmdline-h100-microvm.txt"), 0)
    assert iommu["mode"] == "off" and iommu["enabled"] is False


def test_proc_modules_no_nvidia_fs():
    mods = parse_proc_modules(fixture_text("gds", "proc-modules-h100.txt"))
    assert set(mods) == {"nvidia", "nvidia_uvm"}
    assert mods["nvidia"]["refcount"] is None and mods["nvidia"]["taint"] == "O"
    assert mods["nvidia_uvm"]["state"] == "Live"


def test_host_os_maps_os_release_to_setup_distribution_names():
    from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostparse import parse_os_release
    ubuntu = p.host_os(parse_os_release('NAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nPRETTY_NAME="Ubuntu 24.04.3 LTS"\n'))
    assert ubuntu == {"id": "ubuntu", "version_id": "24.04", "major": "24", "distribution": "Ubuntu",
                      "pretty": "Ubuntu 24.04.3 LTS"}
    rhel = p.host_os(parse_os_release('ID="rhel"\nVERSION_ID="9.6"\n'))
    assert rhel["distribution"] == "RedHat" and rhel["major"] == "9"
    assert p.host_os({})["distribution"] == "" and p.host_os(None)["major"] == ""
    assert p.host_os({"id": "arch", "version_id": ""})["distribution"] == "Arch"


def test_free_mb():
    class Vfs(object):
        f_bavail = 2048
        f_frsize = 1048576
    assert p.free_mb(Vfs()) == 2048
    assert p.free_mb(None) is None
