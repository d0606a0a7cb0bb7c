# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Parsers of what any host says about itself: /proc/modules, ``ofed_info -s``, the NVIDIA driver
version, os-release. PRIVATE to the collection. Pure, except :func:`ofed_info`, which asks the
host through a runner; small, so that the read-only gds_facts path need not import the package
and kernel-module logic."""

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


_OFED_LINE = re.compile(r"(MLNX_OFED_LINUX|OFED-internal|OFED)-(\d[\w.-]*)")


def parse_ofed_info(text):
    """``ofed_info -s`` -> {distribution, version, raw} or None.

    ``MLNX_OFED_LINUX-24.10-4.1.4.0:`` -> (MLNX_OFED_LINUX, 24.10-4.1.4.0);
    ``OFED-internal-25.10-1.7.1:`` (DOCA-OFED, also DGX builds of MLNX_OFED) ->
    (OFED-internal, 25.10-1.7.1). The trailing colon is optional (seen both ways).
    """
    for line in (text or "").splitlines():
        line = line.strip().rstrip(":").strip()
        m = _OFED_LINE.fullmatch(line)
        if m:
            return {"distribution": m.group(1), "version": m.group(2), "raw": line}
    return None


def ofed_info(runner):
    """``ofed_info -s`` parsed, or None when ofed_info is missing, fails or names no OFED."""
    if not runner.which("ofed_info"):
        return None
    res = runner.run(["ofed_info", "-s"], check=False)
    return parse_ofed_info(res.stdout) if res.rc == 0 else None


# NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs@U22)
# NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 2023
_NVRM = re.compile(r"NVRM version: NVIDIA UNIX (Open )?.*?Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)")


def parse_driver_version(text):
    """``/proc/driver/nvidia/version`` -> {version, open} or None."""
    for line in (text or "").splitlines():
        m = _NVRM.match(line)
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
