# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Probe targets of gds_facts: which file systems GDS can serve, and what each probe path is.
PRIVATE to the collection. Pure functions (no host access; _gds_facts.Collector reads the host).

``classify(storage)`` says plainly, before the probe, what a probe path sits on - tmpfs or
overlay (no O_DIRECT to storage), device-mapper/LVM or md RAID (libcufile cannot classify them,
NVIDIA/gds-nvidia-fs#62), a loop device, the root file system on a non-NVMe disk - so the
verdict's reason names the cause instead of the libcufile error it leads to.
``auto_targets(mounts, block_of)`` picks the mounted data file systems GDS can serve for
``probe_path: auto``: ext4/xfs on NVMe or NVMe-oF, Lustre, GPFS, WekaFS, BeeGFS, NFS over RDMA.
"""

from __future__ import annotations

AUTO = "auto"
FALLBACK = "/var/tmp"
LOCAL_FS = ("ext4", "xfs")
DISTRIBUTED_FS = ("lustre", "gpfs", "wekafs", "beegfs")
NFS_FS = ("nfs", "nfs4")
MEMORY_FS = ("tmpfs", "ramfs", "devtmpfs", "hugetlbfs")
UNION_FS = ("overlay", "overlayfs", "aufs", "fuse.fuse-overlayfs")
# mount points never probed by auto (system, boot, container plumbing)
SKIPPED_PREFIXES = ("/boot", "/efi", "/proc", "/sys", "/dev", "/run", "/snap", "/var/lib/docker",
                    "/var/lib/containerd", "/var/lib/kubelet")
MAX_AUTO = 8
BLOCKS_REGISTER = ("tmpfs", "overlay", "device-mapper", "md-raid", "no-block-device")


def _nfs_over_rdma(options):
    return "proto=rdma" in (options or []) or "rdma" in (options or [])


def _device(storage):
    dev = storage.get("block_device")
    return "/dev/" + dev if dev else storage.get("device") or "?"


def classify(storage):
    """{kind, gds_capable, blocks_register, reason} of one probe path's storage facts
    (``Collector.storage``): ``reason`` is the plain sentence for the verdict when GDS cannot serve
    the path, else None; ``blocks_register`` is true where that is also why libcufile fails
    cuFileHandleRegister (then it is the reason, not the libcufile error's generic hint)."""
    out = _classify(storage)
    out["blocks_register"] = out["kind"] in BLOCKS_REGISTER
    return out


def _classify(storage):
    fstype = storage.get("fstype") or ""
    path = storage.get("path")
    transport = storage.get("transport")
    mount_point = storage.get("mount_point")
    on = " on " + mount_point if mount_point not in (None, path) else ""
    where = "%s (%s%s)" % (path, fstype or "file system", on)
    if not storage.get("exists", True):  # preflight says so; the parent's file system would mislead
        return {"kind": "missing", "gds_capable": False, "reason": None}
    if fstype in MEMORY_FS:
        return {"kind": "tmpfs", "gds_capable": False, "reason": (
            "%s is %s: memory, no block device and no O_DIRECT to storage - GDS cannot serve it; probe a "
            "directory on ext4/xfs on NVMe or a GDS-capable distributed file system" % (path, fstype))}
    if fstype in UNION_FS:
        return {"kind": "overlay", "gds_capable": False, "reason": (
            "%s is %s (a container or union file system): no O_DIRECT to a block device GDS can use - probe "
            "a directory on the data file system (in a container, a hostPath or bind mount of it)" % (path, fstype))}
    if fstype in DISTRIBUTED_FS:
        return {"kind": "distributed", "gds_capable": True, "reason": None}
    if fstype in NFS_FS:
        if _nfs_over_rdma(storage.get("options")):
            return {"kind": "nfs-rdma", "gds_capable": True, "reason": None}
        return {"kind": "nfs-tcp", "gds_capable": False, "reason": (
            "%s is NFS without proto=rdma: GDS serves NFS only over RDMA (mount -o proto=rdma)" % where)}
    if transport == "dm":
        return {"kind": "device-mapper", "gds_capable": False, "reason": (
            "%s is on %s, a device-mapper (LVM, dm-crypt, multipath) volume: libcufile cannot classify it "
            "(NVIDIA/gds-nvidia-fs#62) - use a plain NVMe partition or namespace" % (where, _device(storage)))}
    if transport == "md":
        return {"kind": "md-raid", "gds_capable": False, "reason": (
            "%s is on %s, an md software RAID: libcufile cannot classify it (NVIDIA/gds-nvidia-fs#62)" % (
                where, _device(storage)))}
    if transport == "loop":
        return {"kind": "loop", "gds_capable": False, "reason": (
            "%s is on %s, a loop device (a file on another file system): nvidia-fs cannot DMA to it, "
            "libcufile can at best use its compat path" % (where, _device(storage)))}
    if transport == "none" or (not storage.get("block_device") and fstype):
        return {"kind": "no-block-device", "gds_capable": False, "reason": (
            "%s has no block device (%s): not a file system GDS serves" % (where, storage.get("device") or fstype))}
    if transport == "nvme":
        if fstype in LOCAL_FS:
            return {"kind": "nvme", "gds_capable": True, "reason": None}
        return {"kind": "nvme-other-fs", "gds_capable": False, "reason": (
            "%s: nvidia-fs serves ext4 and xfs on NVMe, not %s" % (where, fstype or "this file system"))}
    root = storage.get("mount_point") == "/"
    return {"kind": "root-non-nvme" if root else "non-nvme", "gds_capable": False, "reason": (
        "%s is %son %s (%s device), not NVMe: nvidia-fs serves local ext4/xfs on NVMe/NVMe-oF" % (
            where, "the root file system " if root else "", _device(storage), transport or "unknown"))}


def shared_writable(storage):
    """Why the probe refuses the directory of ``storage`` (Collector.storage: path, mode), or
    None: one that users other than its owner can write without the sticky bit lets them rename
    or replace what the probe creates there."""
    mode = int(storage.get("mode") or "0", 8)
    if not storage.get("exists", True) or not mode & 0o022 or mode & 0o1000:
        return None
    return ("probe_path %s (mode %s) can be written by other users and has no sticky bit: another user could "
            "replace the probe's file; probe a directory only root can write, or set its sticky bit" % (
                storage["path"], storage["mode"]))


def auto_targets(mounts, block_of):
    """The mount points GDS can serve, in /proc/self/mounts order (at most MAX_AUTO), with why each
    other data mount was left out. ``mounts``: parsed /proc/self/mounts; ``block_of``: function
    mount -> kernel block device name (``nvme0n1p1``, ``dm-0``) or None.
    Returns (paths, [{mount_point, fstype, why}])."""
    from ansible_collections.gpudirect.storage.plugins.module_utils._gds.parse import block_transport

    picked, skipped = [], []
    for mnt in mounts:
        mp, fstype, opts = mnt["mount_point"], mnt["fstype"], mnt.get("options") or []
        if fstype not in LOCAL_FS + DISTRIBUTED_FS + NFS_FS:
            continue
        if mp != "/" and any(mp == p or mp.startswith(p + "/") for p in SKIPPED_PREFIXES):
            continue
        if mp in picked or (mp == "/" and FALLBACK in picked):
            continue
        info = {"path": mp, "mount_point": mp, "fstype": fstype, "options": opts, "device": mnt["device"]}
        if fstype in LOCAL_FS:
            dev = block_of(mnt)
            info.update(block_device=dev, transport=block_transport(dev) if dev else None)
        why = classify(info)["reason"]
        if why is None and "ro" in opts:
            why = "%s is mounted read-only: the probe must write" % mp
        if why is None and len(picked) >= MAX_AUTO:
            why = "more than %d GDS-capable mounts: name the ones to prove in probe_path" % MAX_AUTO
        if why is None:
            picked.append(FALLBACK if mp == "/" else mp)  # never a probe file in / itself
        else:
            skipped.append({"mount_point": mp, "fstype": fstype, "why": why})
    return picked, skipped


def resolve(probe_path, mounts, block_of):
    """(paths to probe, auto facts or None, warning or None) for the probe_path option: the
    listed directories, or for ``auto`` the GDS-capable mounts, else FALLBACK with a warning."""
    if list(probe_path or []) != [AUTO]:
        return list(probe_path), None, None
    picked, skipped = auto_targets(mounts, block_of)
    auto = {"picked": picked, "skipped": skipped, "fallback": not picked}
    if picked:
        return picked, auto, None
    why = "; ".join(s["why"] for s in skipped) or "no ext4/xfs, Lustre, GPFS, WekaFS, BeeGFS or NFS mount"
    warning = ("probe_path=auto found no mounted file system GDS can serve (%s): probing %s instead, which "
               "proves the libcufile stack but not the data path - name the data directory in probe_path" % (
                   why, FALLBACK))
    return [FALLBACK], dict(auto, warning=warning), warning
