# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Probe targets: every probe path classified before the probe, in plain words, and
probe_path=auto picking the mounted file systems GDS can serve."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import targets as t
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import fixture_text


def block_of(mnt):
    dev = mnt["device"]
    return {"/dev/mapper/vg0-data": "dm-0"}.get(dev, os.path.basename(dev) if dev.startswith("/dev/") else None)


def storage(path, fstype, block=None, mount_point=None, **extra):
    info = {"path": path, "fstype": fstype, "mount_point": mount_point or path, "block_device": block,
            "transport": parse.block_transport(block) if block else "none", "exists": True}
    info.update(extra)
    return info


@pytest.mark.parametrize("info, kind, capable, words", [
    (storage("/dev/shm", "tmpfs", device="tmpfs"), "tmpfs", False, ["tmpfs", "O_DIRECT", "no block device"]),
    (storage("/", "overlay", device="overlay"), "overlay", False, ["overlay", "O_DIRECT"]),
    (storage("/data", "xfs", "dm-0"), "device-mapper", False, ["device-mapper", "LVM", "gds-nvidia-fs#62"]),
    (storage("/raid", "ext4", "md0"), "md-raid", False, ["md software RAID", "gds-nvidia-fs#62"]),
    (storage("/mnt/gds", "ext4", "loop0"), "loop", False, ["loop device", "/dev/loop0"]),
    (storage("/var/tmp", "ext4", "vda", mount_point="/"), "root-non-nvme", False,
     ["the root file system", "/dev/vda (virtio device)", "not NVMe"]),
    (storage("/scratch", "ext4", "sdb1"), "non-nvme", False, ["/dev/sdb1 (scsi device)"]),
    (storage("/mnt/nvme1", "xfs", "nvme1n1"), "nvme", True, []),
    (storage("/mnt/nvme1", "btrfs", "nvme1n1"), "nvme-other-fs", False, ["ext4 and xfs", "btrfs"]),
    (storage("/lustre", "lustre", device="10.0.0.1@o2ib:/lfs"), "distributed", True, []),
    (storage("/n", "nfs4", options=["proto=rdma"]), "nfs-rdma", True, []),
    (storage("/home", "nfs4", options=["proto=tcp"]), "nfs-tcp", False, ["proto=rdma"]),
])
def test_classify_says_what_the_path_is(info, kind, capable, words):
    out = t.classify(info)
    assert (out["kind"], out["gds_capable"]) == (kind, capable)
    if capable:
        assert out["reason"] is None
    for word in words:
        assert word in out["reason"]


def test_classify_never_blames_libcufile_classification_for_tmpfs():
    reason = t.classify(storage("/dev/shm", "tmpfs", device="tmpfs"))["reason"]
    assert "could not classify" not in reason and reason.startswith("/dev/shm is tmpfs")


def test_auto_picks_the_gds_capable_data_mounts_and_says_why_not_the_others():
    picked, skipped = t.auto_targets(parse.parse_mounts(fixture_text("gds", "mounts-gds-data-host.constructed.txt")), block_of)
    assert picked == ["/var/tmp", "/mnt/nvme1", "/lustre", "/nfs-rdma"]  # / on NVMe: its /var/tmp
    why = dict((s["mount_point"], s["why"]) for s in skipped)
    assert sorted(why) == ["/data", "/home", "/mnt/nvme2", "/raid", "/scratch"]
    assert "read-only" in why["/mnt/nvme2"] and "device-mapper" in why["/data"] and "md software RAID" in why["/raid"]
    assert "proto=rdma" in why["/home"] and "scsi" in why["/scratch"]


def test_auto_on_the_h100_test_host_falls_back_to_var_tmp_with_a_warning_naming_why():
    """The microVM: root ext4 on virtio, the prepared loop ext4 at /mnt/gds, tmpfs."""
    paths, auto, warning = t.resolve(["auto"], parse.parse_mounts(fixture_text("gds", "mounts-gpu-host.constructed.txt")), block_of)
    assert paths == ["/var/tmp"] and auto["fallback"] is True and auto["picked"] == []
    assert "probe_path=auto found no mounted file system GDS can serve" in warning
    assert "/mnt/gds (ext4) is on /dev/loop0, a loop device" in warning
    assert "the root file system on /dev/vda (virtio device)" in warning
    assert auto["warning"] == warning


def test_listed_paths_are_kept_as_given():
    assert t.resolve(["/mnt/a", "/mnt/b"], [], block_of) == (["/mnt/a", "/mnt/b"], None, None)


def test_auto_is_bounded():
    many = [{"device": "/dev/nvme%dn1" % i, "mount_point": "/mnt/n%d" % i, "fstype": "xfs", "options": ["rw"]}
            for i in range(10)]
    picked, skipped = t.auto_targets(many, block_of)
    assert len(picked) == t.MAX_AUTO and len(skipped) == 2 and "name the ones" in skipped[0]["why"]


def test_a_missing_probe_path_is_missing_whatever_file_system_holds_its_parent():
    out = t.classify(storage("/data/nope", "ext4", None, mount_point="/", exists=False))
    assert out == {"kind": "missing", "gds_capable": False, "reason": None, "blocks_register": False}


@pytest.mark.parametrize("mode, refused", [
    ("0755", False), ("0700", False), ("1777", False), ("1770", False), ("0777", True), ("0775", True),
    ("0757", True), ("2777", True)])
def test_a_directory_others_can_write_without_the_sticky_bit_is_refused(mode, refused):
    why = t.shared_writable(storage("/data", "ext4", "nvme0n1", mode=mode))
    assert (why is not None) == refused
    if refused:
        assert why.startswith("probe_path /data (mode %s) can be written by other users and has no sticky bit" % mode)
    assert t.shared_writable({"path": "/gone", "exists": False}) is None
