# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Secure Boot and the MOK keys a DKMS-built nvidia-fs.ko is signed with. PRIVATE to the collection.

With Secure Boot on, the kernel loads only modules signed with an enrolled key: an nvidia-fs.ko
that DKMS did not sign with one does not load, and GDS silently falls back (gds-nvidia-fs #81).
Read by the nvidia_fs module (its preflight), gds_facts and the gds_preflight checks."""

from __future__ import annotations

import os


# the SecureBoot variable of EFI_GLOBAL_VARIABLE (8be4df61-93ca-11d2-aa0d-00e098032b8c, UEFI spec)
EFIVAR = "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
# the signing certificates DKMS creates and uses when no key pair is configured
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


def secure_boot_enabled(paths):
    """Is Secure Boot on (the efivar under ``paths.efivars``)? True/False, or None where there is
    no such variable (BIOS boot, no efivarfs) or it is malformed."""
    try:
        with open(os.path.join(paths.efivars, EFIVAR), "rb") as f:
            return secure_boot_state(f.read())
    except (IOError, OSError):
        return None
