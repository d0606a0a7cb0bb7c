# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gds_facts verdict of a probe that ran: its errors, crashes, cufile.log and the verdict of
each probed path. Imported by verdict.verdict only when the probe ran. Pure. PRIVATE to the
collection."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.errors import NO_GPU_CUDA_ERRORS, describe_error
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.targets import classify
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.verdict import (
    RANK, _inferred, _missing, _result, libcufile_release)

# CUfileFeatureFlags bit 4 (P2P_SUPPORTED, CUDA 12.8+): PCI P2PDMA available.
FFLAG_P2P = 1 << 4


# cufile.log words that explain a failed step; lines with them are quoted first.
RELEVANT_WORDS = {
    "cuFileHandleRegister": ("udev", "volume", "mount", "HandleRegister", "file object", "block device", "fs"),
    "cuFileDriverOpen": ("config", "json", "compat", "driver", "nvidia-fs", "nvfs"),
}


def _log_text(entries, limit=6, step=None):
    entries = list(entries or [])
    words = RELEVANT_WORDS.get(step or "")
    if words:
        hit = [e for e in entries if any(w in e["message"] for w in words)]
        entries = hit + [e for e in entries if e not in hit]
    return ["%s %s" % (e["level"], e["message"]) for e in entries[:limit]]


def _compat_logged(entries):
    return [e for e in entries or [] if "compat" in e["message"].lower()]


def storage_class(storage):
    """The probe path's class (_gds_targets.classify), as Collector.storage stored it or computed now."""
    if not storage:
        return {}
    return storage.get("class") or classify(storage)


def _udev_reason(storage):
    if not storage or storage.get("udev") is None:
        return None
    udev = storage["udev"]
    if not udev.get("present"):
        return "no udev data for %s (%s missing): libcufile cannot classify the device" % (
            storage.get("block_device") or storage.get("dev"), udev.get("path"))
    if not udev.get("id_fs_usage"):
        return "udev data for %s has no ID_FS_USAGE" % storage.get("block_device")
    return None


def path_verdict(entry, storage, context):
    """Verdict for one probed path. ``context``: nvfs_loaded, params, props, log (parsed
    cufile.log entries)."""
    log = context.get("log") or []
    params = context.get("params") or {}
    props = context.get("props") or {}
    out = {"path": entry.get("path"), "write_gbps": entry.get("write_gbps"), "read_gbps": entry.get("read_gbps"),
           "verified_bytes": (entry.get("verify") or {}).get("verified_bytes", 0), "proven": False}
    err = entry.get("error")
    cls = storage_class(storage)
    not_gds = cls.get("reason")
    if err:
        cause = not_gds if cls.get("blocks_register") else None  # tmpfs, overlay, LVM, md: the real cause
        reasons = [cause] if cause else []
        reasons.append(describe_error(err, hint=not cause))
        if err.get("step") == "cuFileHandleRegister" and not cause:
            udev = _udev_reason(storage)
            if udev:
                reasons.append(udev)
        if not_gds and not cause:
            reasons.append(not_gds)
        reasons += ["cufile.log: " + t for t in _log_text([e for e in log if e["level"] in ("ERROR", "WARN")],
                                                          step=err.get("step"))]
        out.update(mode="failed", reasons=reasons, error=dict(err, text=describe_error(err)))
        return out
    stats = entry.get("nvfs_stats") or [None, None, None]
    parsed = [parse.parse_nvfs_stats(s) if s else None for s in stats]
    wdelta = parse.nvfs_counter_delta(parsed[0], parsed[1])
    rdelta = parse.nvfs_counter_delta(parsed[1], parsed[2]) if len(parsed) > 2 else None
    out["nvfs_delta"] = {"write": wdelta, "read": rdelta}
    compat_lines = _compat_logged(log)
    nvfs = context.get("nvfs_loaded") or props.get("nvfs_major_version", 0) > 0
    if wdelta is not None and wdelta.get("writes_ok", 0) > 0:
        out.update(mode="gds", proven=True, reasons=[
            "nvidia-fs Writes ok +%d, Reads ok +%d during the probe (rw_stats_enabled=1)" % (
                wdelta.get("writes_ok", 0), (rdelta or {}).get("reads_ok", 0))])
        return out
    reasons = []
    p2p = params.get("use_pci_p2pdma") and (props.get("fflags", 0) & FFLAG_P2P)
    if params.get("force_compat_mode"):
        reasons.append("properties.force_compat_mode (or CUFILE_FORCE_COMPAT_MODE) forces compat mode")
    if nvfs and wdelta is not None:
        reasons.append("nvidia-fs Writes ok counter did not move during the probe write (+0)")
    if nvfs and wdelta is None and not compat_lines and not reasons:
        out.update(mode="gds", reasons=[
            "nvidia_fs is loaded and libcufile logged no compat-mode fallback; not proven: "
            "nvidia-fs I/O counters are off (load nvidia_fs with rw_stats_enabled=1 to prove the path)"])
        return out
    if not nvfs and p2p and not compat_lines and not reasons:
        out.update(mode="p2pdma", reasons=[
            "nvidia_fs not loaded, properties.use_pci_p2pdma is on and libcufile reports P2PDMA support; "
            "no counters exist to prove the P2PDMA path"])
        return out
    if not nvfs:
        reasons.insert(0, "nvidia_fs kernel module not loaded" + (
            "" if params.get("use_pci_p2pdma") else " (and properties.use_pci_p2pdma is off)"))
    if not_gds:
        reasons.append(not_gds)
    reasons += ["cufile.log: " + t for t in _log_text(compat_lines, 3)]
    out.update(mode="compat", proven=not nvfs or wdelta is not None, reasons=reasons or [
        "libcufile used its POSIX compat path"])
    return out


def _crash_reasons(probe):
    reasons = []
    step = probe.get("last_step") or "start-up"
    if probe.get("timed_out"):
        reasons.append("probe timed out after %s s during %s" % (probe.get("timeout"), step))
    elif probe.get("signal"):
        reasons.append("probe child killed by %s during %s" % (probe["signal"], step))
    elif probe.get("protocol_error"):
        reasons.append("probe child (rc=%s) printed no result during %s: %s" % (
            probe.get("rc"), step, probe["protocol_error"]))
    return reasons


def _evidence(probe, levels=("ERROR", "WARN", "NOTICE"), step=None):
    out = ["libcufile printed: " + line for line in (probe.get("stdout_lines") or [])[:6]]
    out += ["cufile.log: " + t for t in _log_text([e for e in probe.get("cufile_log") or [] if e["level"] in levels],
                                                  step=step)]
    if probe.get("stderr_tail"):
        out.append("stderr: " + probe["stderr_tail"])
    return out


def verdict(facts):
    """The host's mode from facts whose probe ran (``facts["probe"]["ran"]``)."""
    probe = facts["probe"]
    lib = facts.get("libcufile") or {}
    err = probe.get("error") or {}
    if err.get("kind") == "dlopen" and err.get("step") == "load libcuda":
        return _result("unavailable", ["no NVIDIA driver user space: " + describe_error(err)])
    if err.get("kind") == "cuda" and err.get("code") in NO_GPU_CUDA_ERRORS:
        return _result("unavailable", ["no usable NVIDIA GPU: " + describe_error(err)])
    missing = [] if lib.get("path") else _missing(facts)
    if missing:
        return _result("unavailable", missing)
    if err.get("kind") == "dlopen":
        return _result("unavailable", ["libcufile cannot be loaded: " + describe_error(err)])
    if not probe.get("enabled"):
        return _inferred(facts)
    crash = _crash_reasons(probe)
    if crash:
        return _result("failed", crash + _evidence(probe))
    if err:
        api = (probe.get("cufile") or {}).get("api_version")
        release = libcufile_release(lib if api is None else dict(lib, api_version=api))[0]
        return _result("failed", [describe_error(err, release=release)] + _evidence(probe, ("ERROR", "WARN"), err.get("step")),
                       error=err)
    context = {"nvfs_loaded": (facts.get("nvidia_fs") or {}).get("loaded"), "log": probe.get("cufile_log"),
               "params": (probe.get("cufile") or {}).get("params"), "props": (probe.get("cufile") or {}).get("props")}
    storage = {s.get("path"): s for s in (facts.get("storage") or {}).get("probe_paths") or []}
    paths = [path_verdict(e, storage.get(e.get("path")), context) for e in probe.get("paths") or []]
    if not paths:
        return _result("failed", ["the probe ran on no path"] + _evidence(probe))
    worst = min(paths, key=lambda p: RANK.get(p["mode"], 0))
    if len(paths) == 1:
        reasons = worst["reasons"]
    else:
        reasons = ["%s: %s (%s)" % (p["path"], p["mode"], "; ".join(p["reasons"])) for p in paths]
    out = _result(worst["mode"], reasons, paths=paths)
    out["verified"] = all(p["verified_bytes"] and p["mode"] != "failed" for p in paths)
    out["proven"] = all(p["proven"] for p in paths)
    return out
