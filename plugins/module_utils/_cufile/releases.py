# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The libcufile releases the collection knows, as measured on the GPU host. PRIVATE to the collection.
Target-safe (standard library only): the facts' verdicts and the cufile_config module read it on
the host; the controller's validator (plugin_utils/_cufile) imports it from here."""

from __future__ import annotations


# The libcufile releases measured on the H100 host (schemas/cufile-releases.json holds the
# measurements, a unit test keeps this table equal to it): release, the libcufile measured, and the
# code cuFileDriverOpen returns for a config it refuses (-22 up to 1.18, 5002 =
# CU_FILE_DRIVER_INVALID_PROPS from 1.19). Target-safe: the module's cufile_version choices and the
# facts' verdicts read it; ``cufile_version: auto`` maps a host's libcufile version with release_of().
RELEASES = (
    ("1.13", "1.13.1.3", -22),
    ("1.14", "1.14.1.1", -22),
    ("1.15", "1.15.1.6", -22),
    ("1.16", "1.16.1.26", -22),
    ("1.17", "1.17.1.22", -22),
    ("1.18", "1.18.1.6", -22),
    ("1.19", "1.19.1.55", 5002),
    ("1.20", "1.20.0.107", 5002),
)
# The release whose shipped cufile.json the collection has (CUDA 13.0, _cufile/shipped.py).
SHIPPED_RELEASE = "1.15"


def known_releases():
    """The releases the validator has a measured view of, oldest first ("1.13" .. "1.20")."""
    return tuple(row[0] for row in RELEASES)


def release_of(version):
    """The known release ("1.17") of a libcufile version ("1.17", "1.17.1.22", "1.17.1", 1170 as
    cuFileGetVersion reports it); None when it is not a known release."""
    if isinstance(version, int) and not isinstance(version, bool):
        version = "%d.%d" % (version // 1000, (version % 1000) // 10)
    parts = str(version or "").strip().split(".")
    if len(parts) < 2 or not all(part.isdigit() for part in parts[:2]):
        return None
    short = "%d.%d" % (int(parts[0]), int(parts[1]))
    return short if short in known_releases() else None


def config_error_code(release):
    """What cuFileDriverOpen returns for a refused config in ``release`` (-22 when unknown)."""
    for name, _measured, code in RELEASES:
        if name == release_of(release):
            return code
    return -22
