# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The operating systems GDS supports, one table for the nvidia_fs module, the gds_preflight
checks and the GPU Operator's preflight. PRIVATE to the collection. Pure."""

from __future__ import annotations


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
