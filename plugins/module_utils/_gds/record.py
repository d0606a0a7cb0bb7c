# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The verdict record gds_facts leaves on the host for the textfile collector of role
gds_monitoring: mode, verified, proven, GB/s, when, and the cufile.json validity the controller
found (the collector never validates a cufile.json itself). No reason text, no findings.

The controller builds it (:func:`verdict_record`, once the action has validated the cufile.json
texts) and the module writes it (:func:`write`). PRIVATE to the collection; standard library only.
"""

from __future__ import annotations

import json
import os
import stat

from ansible_collections.gpudirect.storage.plugins.module_utils._common import managed_file

SCHEMA = 1
FILE_KEYS = ("path", "role", "exists", "sha256")  # no text, size or realpath of a cufile.json


def verdict_record(gds, require_mode, now):
    """The record of the gds facts ``gds`` (validated), the gate ``require_mode`` (None: none)
    and the time ``now`` (Unix seconds). Pure."""
    cufile = gds.get("cufile") or {}
    put = gds.get("throughput") or {}
    versions = gds.get("versions") or {}
    return {
        "schema": SCHEMA, "time": round(now, 3), "mode": gds.get("mode"),
        "verified": gds.get("verified", False), "proven": gds.get("proven", False),
        "write_gbps": put.get("write_gbps"), "read_gbps": put.get("read_gbps"), "require_mode": require_mode or None,
        "versions": {"nvidia_fs": versions.get("nvidia_fs"), "libcufile": versions.get("libcufile")},
        "cufile": {"valid": cufile.get("valid"), "release": cufile.get("release"),
                   "files": [dict((k, v) for k, v in entry.items() if k in FILE_KEYS)
                             for entry in cufile.get("files") or []]},
    }


def unsafe_directory(directory):
    """Why ``directory`` must not hold the record, or None: another user who can write in it
    could plant a link at the record's name (its old text is read for the diff)."""
    try:
        st = os.lstat(directory)
    except FileNotFoundError:
        return None  # created 0755 by this module
    if not stat.S_ISDIR(st.st_mode):
        return "%s is not a directory (a link or a file)" % directory
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return "%s is owned by uid %d with mode %04o: only its owner (this module's user) may write in it" % (
            directory, st.st_uid, stat.S_IMODE(st.st_mode))
    return None


def write(module, path, record):
    """Replace ``path`` with ``record`` (JSON, 0644) atomically, unless check mode; its directory
    is created 0755. (changed, diff)."""
    problem = unsafe_directory(os.path.dirname(path))
    if problem:
        module.fail_json(msg="record_path %s: %s - nothing was recorded" % (path, problem))
    change = managed_file.plan_file(path, json.dumps(record, indent=4, sort_keys=True) + "\n")
    managed_file.apply_file(module, change, backup=False)
    changed = change["action"] != "none"
    if os.path.exists(path):  # not yet in check mode
        changed = module.set_mode_if_different(path, "0644", changed)
    return changed, managed_file.file_diff(change)
