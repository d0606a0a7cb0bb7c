# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Parsers of what a host says about itself (/proc/modules, ofed_info, the NVIDIA driver version,
os-release, the Secure Boot efivar), pure, and the two readers that ask the host through a runner
(ofed_info, mok_enrolment): standard library only, and small on purpose - the
read-only gds_facts path imports this instead of the package and kernel-module logic, because
every module_utils file is compiled on the target at each run."""

from __future__ import annotations

import os
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


# The one table of the operating systems GDS supports (GDS release notes; GPU Operator: GDS on
# Ubuntu and RHCOS only), by os-release ID. ``versions`` match VERSION_ID in full or as its
# prefix ("9" matches "9.4"); None accepts any. ``bare_metal``: the nvidia_fs module and the
# gds_preflight checks; ``gpu_operator``: the operator's nvidia-fs-ctr on GPU nodes.
GDS_SUPPORTED_OS = {
    "ubuntu": {"name": "Ubuntu", "versions": ("22.04", "24.04"), "bare_metal": True, "gpu_operator": True},
    "rhel": {"name": "RHEL", "versions": ("9",), "bare_metal": True, "gpu_operator": False},
    "rocky": {"name": "Rocky Linux", "versions": ("9",), "bare_metal": True, "gpu_operator": False},
    "almalinux": {"name": "AlmaLinux", "versions": ("9",), "bare_metal": True, "gpu_operator": False},
    "rhcos": {"name": "RHCOS", "versions": None, "bare_metal": False, "gpu_operator": True},
}


def supported_os(where="bare_metal"):
    """{os-release ID: versions (tuple, or None for any)} of the table for ``where``."""
    return dict((os_id, entry["versions"]) for os_id, entry in GDS_SUPPORTED_OS.items() if entry[where])


def os_supported(os_id, version_id, supported):
    """Is ``os_id`` ``version_id`` in ``supported`` ({ID: versions or None})? IDs compare
    case-insensitively (a user's table may say "Ubuntu")."""
    wanted = dict((str(k).lower(), v) for k, v in (supported or {}).items())
    if str(os_id or "").lower() not in wanted:
        return False
    versions = wanted[str(os_id).lower()]
    vid = str(version_id or "")
    return versions is None or any(vid == str(v) or vid.startswith(str(v) + ".") for v in versions)


def supported_os_text(supported):
    """"Ubuntu 22.04/24.04, RHEL 9, ..." for messages."""
    names = dict((k, e["name"]) for k, e in GDS_SUPPORTED_OS.items())
    return ", ".join("%s%s" % (names.get(str(k).lower(), k), "" if v is None else " " + "/".join(str(x) for x in v))
                     for k, v in supported.items())


DEFAULT_MOK_CERTS = ("/var/lib/dkms/mok.pub", "/var/lib/shim-signed/mok/MOK.der")


def secure_boot_problem(secure_boot, mok):
    """Why Secure Boot would refuse the DKMS-built nvidia-fs.ko, or None. ``mok``: configured
    (a key pair is set), cert, enrolled (of that cert: True/False/None = unknown),
    default_enrolled (a DKMS default key is enrolled) - see mok_enrolment. Shared by the
    nvidia_fs module and the gds_preflight checks."""
    if not secure_boot:
        return None
    if not mok.get("configured") and not mok.get("default_enrolled"):
        return ("Secure Boot is enabled and the DKMS-built nvidia-fs.ko would not be signed with an enrolled key, "
                "so it would not load and GDS would silently fall back (gds-nvidia-fs #81). Set mok_key/mok_cert "
                "to an enrolled MOK key pair.")
    if mok.get("configured") and mok.get("enrolled") is False:
        return ("Secure Boot is enabled but the MOK certificate %s is not enrolled; run 'mokutil --import %s' and "
                "reboot to enroll it, then run again." % (mok.get("cert"), mok.get("cert")))
    return None


def mok_enrolment(runner, paths, cert):
    """What ``mokutil --test-key`` says: {cert, enrolled (of ``cert``; None when unknown or no
    cert), default_enrolled (a DKMS default key)}. Asks only where mokutil exists."""
    out = {"cert": cert, "enrolled": None, "default_enrolled": False}
    if not runner.which("mokutil"):
        return out
    if cert:
        res = runner.run(["mokutil", "--test-key", cert], check=False)
        out["enrolled"] = "is already enrolled" in (res.stdout + res.stderr)
    for default in DEFAULT_MOK_CERTS:
        if os.path.isfile(paths.under_root(default)):
            res = runner.run(["mokutil", "--test-key", default], check=False)
            if "is already enrolled" in (res.stdout + res.stderr):
                out["default_enrolled"] = True
    return out


def secure_boot_state(raw):
    """Contents of the SecureBoot efivar (4 attribute bytes + value) -> True/False/None."""
    if raw is None or len(raw) < 5:
        return None
    return bytearray(raw)[4] == 1
