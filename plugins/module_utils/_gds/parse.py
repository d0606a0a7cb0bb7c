# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Pure parsers for what gds_facts reads off a host. PRIVATE to the collection.

Every function takes text (or bytes) and returns plain data; nothing here touches the host,
so each one is unit-tested with real captured inputs (tests/fixtures/gds/).
Target-side code: standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostparse as _hostparse

# ---------------------------------------------------------------------------------------------
# /proc/driver/nvidia/version (+ /sys/module/nvidia/taint)


def parse_nvidia_version(text, taint=None):
    """``/proc/driver/nvidia/version`` -> {version, flavor, banner}.

    The banner is parsed by ``_common.hostparse.parse_driver_version`` (the nvidia_fs module needs the same
    answer): ``flavor`` is ``open`` for "Open Kernel Module", else ``proprietary``. With no
    banner, ``taint`` (``/sys/module/nvidia/taint``) decides: the proprietary module taints the
    kernel with ``P``, the open one does not.
    """
    info = _hostparse.parse_driver_version(text)
    banner = next((ln.strip() for ln in (text or "").splitlines() if ln.startswith("NVRM version:")), None)
    if info:
        return {"version": info["version"], "flavor": "open" if info["open"] else "proprietary", "banner": banner}
    flavor = None
    if taint is not None:
        flavor = "proprietary" if "P" in taint.strip() else "open"
    return {"version": None, "flavor": flavor, "banner": banner}


# ---------------------------------------------------------------------------------------------
# /proc/driver/nvidia-fs/{version,stats}


def parse_nvfs_version(text):
    """``/proc/driver/nvidia-fs/version`` ("version: 2.26") -> "2.26" or None."""
    m = re.search(r"version:\s*([0-9][0-9.]*)", text or "")
    return m.group(1) if m else None


def _key(label):
    return re.sub(r"[^a-z0-9]+", "_", label.strip().lower()).strip("_")


def _num(value):
    value = value.strip()
    if re.match(r"^-?\d+$", value):
        return int(value)
    return value


_GPU_LINE = r"^GPU\s+(\S+)\s+uuid:(\S+)\s*:\s*(.*)$"  # compiled (and kept by re) when first used


def parse_nvfs_stats(text):
    """``/proc/driver/nvidia-fs/stats`` -> dict.

    Header fields (``gds_version``, ``stats_version``, ``driver_version``,
    ``peerdirect_supported``, ``rw_stats_enabled``, ``peer_stats_enabled``, ``logging_level``),
    one dict per counter line keyed by its normalised label (``reads``, ``writes``, ``mmap``,
    ``bar1_map``, ``error``, ``ops``, ``sparse_reads``; repeated labels such as the two "Reads"
    lines merge), scalar lines (``active_shadow_buffer_mib``, ``active_process``) and ``gpus``.
    ``n=``/``ok=`` appear under ``reads``/``writes`` only when nvidia-fs runs with
    ``rw_stats_enabled=1``.
    """
    out = {"gpus": []}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        m = re.match(r"^GDS Version:\s*(\S+)", line)
        if m:
            out["gds_version"] = m.group(1)
            continue
        m = re.match(r"^NVFS statistics\s*\(ver:\s*([^)]+)\)", line)
        if m:
            out["stats_version"] = m.group(1).strip()
            continue
        m = re.match(r"^NVFS Driver\s*\(version:\s*([^)]+)\)", line)
        if m:
            out["driver_version"] = m.group(1).strip()
            continue
        m = re.match(r"^Mellanox PeerDirect Supported:\s*(\S+)", line)
        if m:
            out["peerdirect_supported"] = m.group(1).lower() == "true"
            continue
        m = re.match(r"^IO stats:\s*(\w+),\s*peer IO stats:\s*(\w+)", line)
        if m:
            out["rw_stats_enabled"] = m.group(1).lower() == "enabled"
            out["peer_stats_enabled"] = m.group(2).lower() == "enabled"
            continue
        m = re.match(r"^Logging level:\s*(\S+)", line)
        if m:
            out["logging_level"] = m.group(1)
            continue
        m = re.match(_GPU_LINE, line)
        if m:
            gpu = {"pci_bus_id": m.group(1), "uuid": m.group(2)}
            for k, v in re.findall(r"([A-Za-z_()%]+)=(\S+)", m.group(3)):
                gpu[_key(k)] = _num(v)
            out["gpus"].append(gpu)
            continue
        if ":" not in line:
            continue
        label, _sep, rest = line.partition(":")
        key = _key(label)
        pairs = re.findall(r"([^\s=]+)=(\S+)", rest)
        if pairs:
            section = out.setdefault(key, {})
            for k, v in pairs:
                section[_key(k)] = _num(v)
        elif rest.strip():
            out[key] = _num(rest)
    if "rw_stats_enabled" not in out:
        # Old formats have no "IO stats:" line: counters are on when n=/ok= are printed.
        out["rw_stats_enabled"] = "n" in out.get("writes", {})
    return out


def nvfs_counter_delta(before, after):
    """Counter movement between two parsed stats (reads/writes n and ok, MiB moved).

    None when either side is missing or the counters are off (``rw_stats_enabled=0``), because
    then nvidia-fs prints no ``n=``/``ok=`` and nothing can be proven from it.
    """
    if not before or not after:
        return None
    delta = {}
    for section in ("writes", "reads"):
        b = before.get(section) or {}
        a = after.get(section) or {}
        for field in ("n", "ok", "err"):
            if isinstance(a.get(field), int) and isinstance(b.get(field), int):
                delta["%s_%s" % (section, field)] = a[field] - b[field]
        for field in ("writemib", "readmib", "writemb", "readmb"):
            if isinstance(a.get(field), int) and isinstance(b.get(field), int):
                delta["%s_mib" % section] = a[field] - b[field]
    if "writes_ok" not in delta and "reads_ok" not in delta:
        return None
    return delta


# ---------------------------------------------------------------------------------------------
# nvidia-smi


def parse_nvidia_smi_csv(text):
    """``nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version --format=csv,noheader``."""
    gpus = []
    for line in (text or "").splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) < 5 or not cols[0].isdigit():
            continue
        gpus.append({
            "index": int(cols[0]),
            "name": cols[1],
            "uuid": cols[2],
            "pci_bus_id": cols[3],
            "driver_version": cols[4],
        })
    return gpus


def parse_nvidia_smi_memory(text):
    """``nvidia-smi -q -d MEMORY`` -> {pci bus id: {fb_total_mib, bar1_total_mib}} plus the
    ``driver_version``/``cuda_version`` header under the key ``None``."""
    out = {None: {}}
    gpu = None
    section = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = re.match(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])$", line)
        if m:
            gpu = out.setdefault(m.group(1), {})
            section = None
            continue
        if ":" not in line:
            section = line.lower()
            continue
        label, _sep, value = line.partition(":")
        label = label.strip()
        value = value.strip()
        if gpu is None:
            if label == "Driver Version":
                out[None]["driver_version"] = value
            elif label == "CUDA Version":
                out[None]["cuda_version"] = value
            continue
        mib = re.match(r"^(\d+)\s*MiB$", value)
        if label == "Total" and mib and section:
            if section.startswith("fb memory"):
                gpu["fb_total_mib"] = int(mib.group(1))
            elif section.startswith("bar1"):
                gpu["bar1_total_mib"] = int(mib.group(1))
    return out


def normalize_bus_id(bus_id):
    """``00000000:00:05.0`` and ``0000:00:05.0`` -> ``0000:00:05.0`` (lower case)."""
    if not bus_id:
        return bus_id
    m = re.match(r"^([0-9A-Fa-f]+):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-9A-Fa-f])$", bus_id.strip())
    if not m:
        return bus_id.strip().lower()
    return "%04x:%s:%s.%s" % (int(m.group(1), 16) & 0xFFFF, m.group(2).lower(), m.group(3).lower(), m.group(4).lower())


# ---------------------------------------------------------------------------------------------
# mounts, udev, block devices


def _unescape_mount(field):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mounts(text):
    """``/proc/self/mounts`` -> [{device, mount_point, fstype, options: [...]}]."""
    mounts = []
    for line in (text or "").splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        mounts.append({
            "device": _unescape_mount(parts[0]),
            "mount_point": _unescape_mount(parts[1]),
            "fstype": parts[2],
            "options": parts[3].split(","),
        })
    return mounts


def find_mount(mounts, path):
    """The mount holding absolute ``path`` (longest mount point prefix; the last one mounted
    wins among equals, as the kernel stacks them)."""
    best = None
    for mnt in mounts:
        mp = mnt["mount_point"]
        if path == mp or path.startswith(mp.rstrip("/") + "/") or mp == "/":
            if best is None or len(mp) >= len(best["mount_point"]):
                best = mnt
    return best


def parse_udev_data(text):
    """A ``/run/udev/data/b<maj>:<min>`` file -> {property: value} of its ``E:`` lines."""
    props = {}
    for line in (text or "").splitlines():
        if line.startswith("E:") and "=" in line:
            k, _sep, v = line[2:].partition("=")
            props[k] = v
    return props


def block_transport(devname):
    """A coarse kind of block device from its kernel name: nvme, loop, virtio, md, dm, scsi."""
    name = devname or ""
    for prefix, kind in (("nvme", "nvme"), ("loop", "loop"), ("vd", "virtio"), ("xvd", "xen"),
                         ("md", "md"), ("dm-", "dm"), ("sd", "scsi"), ("nbd", "nbd"),
                         ("rbd", "rbd"), ("zram", "zram"), ("pmem", "pmem")):
        if name.startswith(prefix):
            return kind
    return "other" if name else None


# ---------------------------------------------------------------------------------------------
# IOMMU, Secure Boot, library versions


def parse_iommu(cmdline, group_count):
    """IOMMU state from ``/proc/cmdline`` and the number of ``/sys/kernel/iommu_groups``.

    ``mode``: ``off`` (no IOMMU groups), ``passthrough`` (``iommu=pt`` or
    ``iommu.passthrough=1``), ``translated`` (groups exist, DMA remapped: GDS through
    nvidia-fs wants the IOMMU off or in passthrough).
    """
    flags = [t for t in (cmdline or "").split()
             if re.match(r"^(intel_iommu|amd_iommu|iommu|iommu\.passthrough|iommu\.strict)=", t)]
    values = dict(t.split("=", 1) for t in flags)
    passthrough = values.get("iommu") == "pt" or values.get("iommu.passthrough") in ("1", "on", "y")
    if not group_count:
        mode = "off"
    elif passthrough:
        mode = "passthrough"
    else:
        mode = "translated"
    return {"mode": mode, "enabled": bool(group_count), "groups": group_count or 0, "cmdline": flags}


def soname_version(path):
    """``/usr/local/cuda-13.0/.../libcufile.so.1.15.1`` -> ``1.15.1``; None when the file name
    carries no full version (e.g. a bare ``libcufile.so.0``)."""
    m = re.search(r"\.so\.(\d+\.\d+(?:\.\d+)*)$", os.path.basename(path or ""))
    return m.group(1) if m else None


def cuda_dir_version(path):
    """``/usr/local/cuda-13.0`` -> (13, 0); None for other names."""
    m = re.search(r"cuda-(\d+)\.(\d+)", path or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def decode_cuda_version(value):
    """CUDA driver/NVML integer versions (13000) -> ``13.0``."""
    if not isinstance(value, int) or value <= 0:
        return None
    return "%d.%d" % (value // 1000, (value % 1000) // 10)


# ---------------------------------------------------------------------------------------------
# cufile.log and what libcufile prints on stdout

_LOG_LINE = (  # compiled (and kept by re) when first used: only a probe's log is parsed
    r"^\s*(?P<ts>\d{2}-\d{2}-\d{4} \d{2}:\d{2}:\d{2}:\d+)\s+\[pid=(?P<pid>\d+) tid=(?P<tid>\d+)\]\s+"
    r"(?P<level>[A-Z]+)\s+(?P<where>\S+?:\d+)\s+(?P<message>.*?)\s*$")
LOG_LEVELS_KEPT = ("ERROR", "NOTICE", "WARN")


def parse_cufile_log(text, levels=LOG_LEVELS_KEPT, limit=40):
    """cufile.log -> [{level, where, message, count}] for the given levels, first occurrence
    order, identical messages (the same check repeated per thread or per call) folded into one
    entry with a ``count``. Lines not in cufile.log's format are ignored."""
    seen = {}
    out = []
    for line in (text or "").splitlines():
        m = re.match(_LOG_LINE, line)
        if not m or (levels and m.group("level") not in levels):
            continue
        key = (m.group("level"), m.group("message"))
        if key in seen:
            seen[key]["count"] += 1
            continue
        entry = {"level": m.group("level"), "where": m.group("where"), "message": m.group("message"), "count": 1}
        seen[key] = entry
        out.append(entry)
    return out[:limit]


def stdout_lines(text, sentinel, limit=20):
    """What the probe child printed on stdout that is not its own sentinel lines: libcufile
    prints config errors there (``error reading config properties.x``). Deduplicated, in order."""
    out = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line or line.startswith(sentinel) or line in out:
            continue
        out.append(line)
    return out[:limit]


# ---------------------------------------------------------------------------------------------
# the host itself (what the preflight checks need, so they need no `setup` round trip)

# os-release ID -> the distribution name Ansible's setup module reports
DISTRIBUTION_NAMES = {"ubuntu": "Ubuntu", "debian": "Debian", "rhel": "RedHat", "rocky": "Rocky",
                      "almalinux": "AlmaLinux", "centos": "CentOS", "fedora": "Fedora", "ol": "OracleLinux",
                      "sles": "SLES", "opensuse-leap": "openSUSE Leap"}


def host_os(os_release):
    """``_common.hostparse.parse_os_release`` output -> {id, version_id, major, distribution, pretty}."""
    os_id = (os_release or {}).get("id", "")
    version = (os_release or {}).get("version_id", "")
    return {"id": os_id, "version_id": version, "major": version.split(".")[0] if version else "",
            "distribution": DISTRIBUTION_NAMES.get(os_id, os_id.capitalize()),
            "pretty": (os_release or {}).get("pretty", "")}


def free_mb(statvfs_result):
    """MiB available to unprivileged users from an ``os.statvfs`` result (None if unknown)."""
    if statvfs_result is None:
        return None
    return int(statvfs_result.f_bavail * statvfs_result.f_frsize // 1048576)
