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


# chmod's symbolic modes: each class's rwx bits with its special bit (setuid, setgid, sticky)
_CLASS_BITS = {"u": 0o4700, "g": 0o2070, "o": 0o1007}
_PERM_BITS = {"r": 0o444, "w": 0o222, "x": 0o111, "s": 0o6000, "t": 0o1000}
_CLAUSE = re.compile(r"^([ugoa]*)((?:[-+=](?:[rwxXst]*|[ugo]))+)$")
_ACTION = re.compile(r"([-+=])([ugo]|[rwxXst]*)")


def wanted_mode(path_stat, mode):
    """The mode ``mode`` (an int, octal text or chmod's symbolic form such as ``u=rw,g=r,o=``)
    gives the file of ``path_stat``, as the file module applies it (the same reading of a
    missing class: all three, less the umask). ValueError when it is none of these."""
    if isinstance(mode, int):
        return mode
    text = str(mode)
    if re.match(r"^[0-7]+$", text):
        return int(text, 8)
    result = stat.S_IMODE(path_stat.st_mode)
    for clause in text.split(","):
        match = _CLAUSE.match(clause)
        if not match:
            raise ValueError("mode %r is neither octal nor symbolic (chmod's u=rw,g+r,o-rwx): %r" % (text, clause))
        classes = sum(_CLASS_BITS[c] for c in set(match.group(1).replace("a", "ugo") or "ugo"))
        allowed = classes & ~_umask() if not match.group(1) else classes
        for op, perms in _ACTION.findall(match.group(2)):
            if perms in _CLASS_BITS:  # g=u: the bits another class has now
                bits = ((result & _CLASS_BITS[perms] & 0o777) >> {"u": 6, "g": 3, "o": 0}[perms]) * 0o111
            else:
                searchable = stat.S_ISDIR(path_stat.st_mode) or result & 0o111
                bits = sum(_PERM_BITS["x" if p == "X" else p] for p in set(perms) if p != "X" or searchable)
            bits &= allowed
            if op == "+":
                result |= bits
            elif op == "-":
                result &= ~bits
            else:
                result = (result & ~classes) | bits
    return result


def _umask():
    current = os.umask(0)
    os.umask(current)
    return current


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
    if file_args.get("mode") is not None and wanted_mode(st, file_args["mode"]) != stat.S_IMODE(st.st_mode):
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
