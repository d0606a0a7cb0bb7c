# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Files a module owns on the host (modules-load.d, modprobe.d, DKMS drop-ins, apt/dnf repository
files): plan a file against its desired text, show the diff, write or remove it. PRIVATE to the
collection. The plan is a read; :func:`apply_file` is the only writer and does nothing in check
mode."""

from __future__ import annotations

import grp
import os
import pwd
import re
import stat
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


def _uid(owner):
    if owner is None or str(owner).isdigit():
        return None if owner is None else int(owner)
    try:
        return pwd.getpwnam(owner).pw_uid
    except KeyError:
        return -1  # no such user: it would have to change (and the apply fails naming it)


def _gid(group):
    if group is None or str(group).isdigit():
        return None if group is None else int(group)
    try:
        return grp.getgrnam(group).gr_gid
    except KeyError:
        return -1


def _wanted_mode(path_stat, mode):
    if isinstance(mode, int):
        return mode
    if re.match(r"^[0-7]+$", str(mode)):
        return int(str(mode), 8)
    from ansible.module_utils.basic import AnsibleModule  # its parser of u+rw,g-w (a classmethod: no module state)
    return AnsibleModule._symbolic_mode_to_octal(path_stat, str(mode))


def _flags_differ(current, wanted):
    """chattr semantics as AnsibleModule applies them: +adds, -removes, =/bare sets exactly."""
    op, flags = (wanted[0], set(wanted[1:])) if wanted[:1] in ("+", "-", "=") else ("=", set(wanted))
    current = set(current or "")
    if op == "+":
        return not flags <= current
    if op == "-":
        return bool(flags & current)
    return flags != current


def attributes_differ(module, file_args):
    """Would the owner, group, mode, SELinux context or file attributes of ``file_args["path"]``
    (``module.load_file_common_arguments``) change? Only reads - stat, user/group lookups, the
    module's own read helpers - so a plan asks it without any switch: there is no write to skip."""
    path = file_args["path"]
    try:
        st = os.lstat(path)  # as AnsibleModule's set_*_if_different look at it
    except OSError:
        return True
    uid, gid = _uid(file_args.get("owner")), _gid(file_args.get("group"))
    if (uid is not None and uid != st.st_uid) or (gid is not None and gid != st.st_gid):
        return True
    if file_args.get("mode") is not None and _wanted_mode(st, file_args["mode"]) != stat.S_IMODE(st.st_mode):
        return True
    secontext = file_args.get("secontext") or [None, None, None, None]
    if any(part is not None for part in secontext) and module.selinux_enabled():
        current = module.selinux_context(path)
        wanted = [w if w is not None else c for w, c in zip(secontext, current)]
        if list(wanted) != list(current):
            return True
    if file_args.get("attributes"):
        current = module.get_file_attributes(path, include_version=False).get("attr_flags")
        if _flags_differ(current, file_args["attributes"]):
            return True
    return False
