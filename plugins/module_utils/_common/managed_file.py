# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Files a module owns on the host (modules-load.d, modprobe.d, DKMS drop-ins, apt/dnf repository
files): plan a file against its desired text, show the diff, write or remove it. PRIVATE to the
collection. The plan is a read; :func:`apply_file` is the only writer and does nothing in check
mode."""

from __future__ import annotations

import os
import tempfile


def plan_file(path, desired):
    """Pure-ish: {path, current, desired, action: create|update|remove|none}."""
    try:
        with open(path) as f:
            current = f.read()
    except (IOError, OSError):
        current = None
    if desired is None:
        action = "remove" if current is not None else "none"
    elif current is None:
        action = "create"
    else:
        action = "none" if current == desired else "update"
    return {"path": path, "current": current, "desired": desired, "action": action}


def file_diff(change):
    return {"before_header": change["path"], "after_header": change["path"],
            "before": change["current"] or "", "after": change["desired"] or ""}


def apply_file(module, change, backup=True, mode=0o644):
    """Write/remove a planned file unless check mode: temp file in the same directory +
    ``module.atomic_move``; a backup when a file existed. Returns the backup path or None."""
    if change["action"] == "none" or module.check_mode:
        return None
    path = change["path"]
    backup_file = None
    if backup and change["current"] is not None:
        backup_file = module.backup_local(path)
    if change["action"] == "remove":
        os.unlink(path)
        return backup_file
    d = os.path.dirname(path)
    if not os.path.isdir(d):
        os.makedirs(d, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(change["desired"])
        os.chmod(tmp, mode)
        module.atomic_move(tmp, path, unsafe_writes=False)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return backup_file
