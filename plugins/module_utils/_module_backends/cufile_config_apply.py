# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The apply phase of gpudirect.storage.cufile_config: write the document the controller
validated, backing up first when asked, atomically (cufile_config.py plans it). PRIVATE to the
collection. Standard library only (runs on bare GPU hosts)."""

from __future__ import annotations

import os
import tempfile
import time

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import CufileSyntaxError, parse
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.host_file import (
    attribute_problems, content_changes, CufileConfigError, read_state)
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.cufile_config import _from_action


def backup(module, path):
    """Back up what is at ``path``: a symlink is kept as a symlink with the same target (mv it back
    to restore the update-alternatives link), a regular file as a copy (named like
    module.backup_local). A backup that cannot be completed (disk full) is removed again."""
    dest = "%s.%s.%s" % (path, os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S~", time.localtime()))
    try:
        if os.path.islink(path):
            os.symlink(os.readlink(path), dest)
        else:
            module.preserved_copy(path, dest)
    except (IOError, OSError) as exc:
        if os.path.lexists(dest):
            os.unlink(dest)
        raise CufileConfigError("cannot back up %s to %s: %s; %s was left as it was" % (path, dest, exc, path))
    return dest


def write_atomic(module, path, text):
    """Write ``text`` to a temp file in the same directory, fsync, and atomic_move it over ``path``.
    The rename replaces a symlink at ``path`` itself, never the file it points to."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise CufileConfigError("directory %s does not exist" % directory)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cufile.json.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8", "surrogateescape"))
            f.flush()
            os.fsync(f.fileno())
        # a fresh file replaces a link: do not copy the attributes of the CUDA file behind it
        module.atomic_move(tmp, path, keep_dest_attrs=not os.path.islink(path))
    except (IOError, OSError) as exc:  # disk full, read-only: the temp file goes, the file stays
        raise CufileConfigError("cannot write %s: %s; %s was left as it was" % (path, exc, path))
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


def run_apply(module):
    """Apply phase: write the content the controller validated, if the file is still what the plan
    saw (same fingerprint); back up first when asked; then set owner/group/mode."""
    p = module.params
    internal = _from_action(module)
    path = p["path"]
    current = read_state(path)
    if current.fingerprint != internal.get("expect"):
        raise CufileConfigError("%s changed on the host after this task planned its change (planned against %s, found %s); "
                                "nothing was written, run the task again" % (path, internal.get("expect"), current.fingerprint))
    result = {"changed": False, "path": path, "backup_file": None, "link_target": current.link_target}
    if module.check_mode:
        return result
    present = current.exists or current.is_link
    if p["state"] == "absent":
        if present:
            if p["backup"]:
                result["backup_file"] = backup(module, path)
            os.unlink(path)
            result["changed"] = True
        return result
    content = internal.get("content")
    if not isinstance(content, str):
        raise CufileConfigError("internal error: the apply phase got no content")
    try:
        desired = parse(content).document
    except CufileSyntaxError as exc:
        raise CufileConfigError("internal error: planned content does not parse: %s" % exc)
    problems = attribute_problems(p)
    if problems:
        raise CufileConfigError("; ".join(problems) + "; nothing was written")
    reasons = content_changes(current, desired)
    if reasons:
        if p["backup"] and present:
            result["backup_file"] = backup(module, path)
        try:
            write_atomic(module, path, content)
        except CufileConfigError:
            if result["backup_file"]:  # nothing changed: no backup of it either
                os.unlink(result["backup_file"])
            raise
    file_args = module.load_file_common_arguments(p, path=path)
    result["changed"] = module.set_fs_attributes_if_different(file_args, bool(reasons))
    return result
