# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Parsers of what a host says about itself (/proc/modules, ofed_info, the NVIDIA driver version,
os-release, the Secure Boot efivar): pure, standard library only, and small on purpose - the
read-only gds_facts path imports this instead of the package and kernel-module logic, because
every module_utils file is compiled on the target at each run."""

from __future__ import annotations

import re


def parse_proc_modules(text):
    """``/proc/modules`` -> {name: {size, refcount, used_by, state, taint}}.

    ``refcount`` is None where the kernel prints ``-`` (built without CONFIG_MODULE_UNLOAD, as
    on the H100 test host: ``nvidia 14299136 - - Live 0xffffffffc0400000 (O)``).
    """
    out = {}
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) < 6:
            continue
        used_by = [u for u in f[3].split(",") if u and u != "-"]
        taint = f[6].strip("()") if len(f) > 6 else ""
        try:
            out[f[0]] = {"size": int(f[1]), "refcount": None if f[2] == "-" else int(f[2]), "used_by": used_by,
                         "state": f[4], "taint": taint}
        except ValueError:
            continue
    return out


def parse_ofed_info(text):
    """``ofed_info -s`` -> {distribution, version, raw} or None.

    ``MLNX_OFED_LINUX-24.10-4.1.4.0:`` -> (MLNX_OFED_LINUX, 24.10-4.1.4.0);
    ``OFED-internal-25.10-1.7.1:`` (DOCA-OFED, also DGX builds of MLNX_OFED) ->
    (OFED-internal, 25.10-1.7.1). The trailing colon is optional (seen both ways).
    """
    for line in (text or "").splitlines():
        line = line.strip().rstrip(":").strip()
        m = re.match(r"^(MLNX_OFED_LINUX|OFED-internal|OFED)-(\d[\w.\-]*)$", line)
        if m:
            return {"distribution": m.group(1), "version": m.group(2), "raw": line}
    return None


def parse_driver_version(text):
    """``/proc/driver/nvidia/version`` -> {version, open} or None."""
    for line in (text or "").splitlines():
        m = re.match(r"^NVRM version: NVIDIA UNIX (Open )?.*?Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", line)
        if m:
            return {"version": m.group(2), "open": bool(m.group(1)), "source": "proc"}
    return None


def parse_os_release(text):
    out = {}
    for line in (text or "").splitlines():
        k, sep, v = line.partition("=")
        if sep:
            out[k.strip()] = v.strip().strip('"').strip("'")
    return {"id": out.get("ID", ""), "version_id": out.get("VERSION_ID", ""),
            "pretty": out.get("PRETTY_NAME", "")}


def secure_boot_state(raw):
    """Contents of the SecureBoot efivar (4 attribute bytes + value) -> True/False/None."""
    if raw is None or len(raw) < 5:
        return None
    return bytearray(raw)[4] == 1
