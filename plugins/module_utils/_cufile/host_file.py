# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""cufile.json on the host as cufile_config sees it: what is at the path now (FileState), the
desired document, whether its content changes, the diff, the backup and the atomic write, and
the checks of the file options. Split from _module_backends/cufile_config.py (the module's sequence),
which imports it. PRIVATE to the collection. Standard library only (runs on bare GPU hosts).
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import re

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.limits import MAX_BYTES, read_capped, size_problem
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import (
    CufileSyntaxError, canonical, deep_merge, dumps, parse)
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.releases import release_of
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile import shipped as _cufile_shipped


class CufileConfigError(Exception):
    """A problem with the module's input or the host file; ``str()`` is the message for fail_json."""


class FileState(object):
    """What is at ``path`` now."""

    __slots__ = ("path", "exists", "is_link", "link_target", "resolved", "data", "document", "error", "checksum")

    def __init__(self, path):
        self.path = path
        self.exists = False
        self.is_link = False
        self.link_target = None
        self.resolved = None
        self.data = None
        self.document = None
        self.error = None
        self.checksum = None

    @property
    def fingerprint(self):
        """Identity of the current state, compared between the plan and the apply phase."""
        if not self.exists and not self.is_link:
            return "absent"
        kind = "link:%s" % self.link_target if self.is_link else "file"
        return "%s:%s" % (kind, self.checksum or "-")

    def text(self):
        if self.data is None:
            return ""
        return self.data.decode("utf-8", "replace")


def read_state(path):
    """Read ``path`` (following a symlink for the content). A file that does not parse, or is
    over the size cap (its content then not kept), is kept as ``error`` (a message with line and
    column, or the size), not raised."""
    state = FileState(path)
    if os.path.islink(path):
        state.is_link = True
        state.link_target = os.readlink(path)
        state.resolved = os.path.realpath(path)
    if os.path.isdir(path):
        raise CufileConfigError("path %s is a directory" % path)
    if not os.path.exists(path):
        return state  # absent, or a dangling link
    state.exists = True
    with open(path, "rb") as f:
        data, size = read_capped(f)
        stat = os.fstat(f.fileno())
    state.checksum = hashlib.sha256(data).hexdigest()
    if size > MAX_BYTES:  # the head, the size and the time of the last change identify it
        state.checksum += ":%d:%d" % (size, stat.st_mtime_ns)
        state.error = "%s: %s" % (path, size_problem(size))
        return state
    state.data = data
    try:
        state.document = parse(state.data).document
    except CufileSyntaxError as exc:
        state.error = "%s: %s" % (path, exc)
    return state


def load_src(text, name):
    """Parse a ``src`` file's text; a syntax error becomes a CufileConfigError naming the file."""
    try:
        return parse(text).document
    except CufileSyntaxError as exc:
        raise CufileConfigError("src %s is not valid cufile.json: %s" % (name, exc))


def shipped_refusal(base, src, version):
    """Why ``base: shipped`` cannot be used for libcufile ``version``, or None. The collection has
    the shipped file of one release only (CUDA 13.0, libcufile 1.15); none of the libcufile wheels
    of 1.13-1.20 carries a cufile.json (tests/gpu/cufile_sweep: unpack.py's manifest)."""
    if src or (base or "shipped") != "shipped":
        return None
    release = release_of(version) or str(version)
    if _cufile_shipped.release(release) is not None:
        return None
    have = ", ".join("libcufile %s (CUDA %s)" % (k, e["cuda"]) for k, e in sorted(_cufile_shipped.RELEASES.items()))
    return ("base: shipped is the cufile.json a CUDA release ships; the collection has that of %s, and no shipped "
            "file of libcufile %s is known to the collection (no libcufile %s wheel carries one); set base: current "
            "or base: empty, or give src; nothing was written" % (have, release, release))


def managed(params):
    """Did the user ask for a file? Without settings, src or base the host's file is kept as it
    is (validated and reported, never rewritten): nothing a user did not ask for changes."""
    return bool(params.get("settings") or params.get("src") or params.get("base"))


def desired_document(base, settings, current, src_document=None, release=_cufile_shipped.NEWEST):
    """The document to install: ``src_document`` or the base (``shipped`` - of libcufile
    ``release`` - / ``current`` / ``empty``), with ``settings`` merged over it (a null in
    settings removes the key)."""
    if src_document is not None:
        start = src_document
    elif base == "current":
        if current.error:
            raise CufileConfigError("base=current, but the current file does not parse: %s; "
                                    "use base=shipped, base=empty or src to replace it" % current.error)
        start = current.document if current.exists else {}
    elif base == "empty":
        start = {}
    else:
        start = _cufile_shipped.shipped(release)
    if settings:
        if not isinstance(start, dict):
            start = {}
        return deep_merge(start, settings, null_deletes=True)
    return start


def content_changes(current, desired):
    """Pure decision: the reasons the file must be (re)written, empty when it stays as it is.
    Parsed JSON is compared (type-exact), so comments and formatting alone are no change."""
    reasons = []
    if not current.exists:
        reasons.append("create")
    elif current.error:
        reasons.append("replace-unparsable")
    elif canonical(current.document) != canonical(desired):
        reasons.append("content")
    if current.is_link:
        reasons.append("replace-symlink")
    return reasons


def diff_texts(current, desired_text):
    """before/after texts for --diff: sorted JSON, or the raw text of an unparsable file."""
    if not current.exists:
        before = ""
    elif current.error:
        before = current.text()
    else:
        before = dumps(current.document)
    return before, desired_text


# the symbolic mode grammar, compiled (and kept by re) only for a mode that is not octal
_MODE_OPERATOR = r"[+=-]"
_MODE_USERS = r"[ugoa]*\Z"
_MODE_PERMS = r"[rwxXstugo]*\Z"


def attribute_problems(params):
    """owner / group / mode that cannot be applied, each naming its option. Checked before
    anything is written (AnsibleModule would only notice after the file was replaced)."""
    out = []
    owner, group, mode = params.get("owner"), params.get("group"), params.get("mode")
    if owner and not str(owner).isdigit():
        try:
            pwd.getpwnam(owner)
        except KeyError:
            out.append("owner: there is no user %r on the host" % owner)
    if group and not str(group).isdigit():
        try:
            grp.getgrnam(group)
        except KeyError:
            out.append("group: there is no group %r on the host" % group)
    if mode is not None and not isinstance(mode, int):
        try:
            int(str(mode), 8)
        except ValueError:  # the symbolic grammar AnsibleModule accepts (u=rw,g=r,o=r)
            for clause in str(mode).split(","):
                parts = re.split(_MODE_OPERATOR, clause)
                if not re.match(_MODE_USERS, parts[0]) or not all(re.match(_MODE_PERMS, x) for x in parts[1:]):
                    out.append("mode %r is neither octal (0644) nor symbolic (u=rw,g=r,o=r)" % (mode,))
                    break
    return out


def host_path_facts(document, specs):
    """Existence of the host paths a document names where libcufile requires them to exist.
    ``specs``: [{"path": "denylist.mounts", "what": "value"|"items"|"keys", "kind": ...}] (from the
    schema, sent by the action plugin). Returns {host_path: {"exists": bool, "is_dir": bool}}."""
    facts = {}
    for spec in specs or []:
        node = document
        for part in spec["path"].split("."):
            node = node.get(part) if isinstance(node, dict) else None
        if node is None:
            continue
        if spec["what"] == "value":
            candidates = [node]
        elif spec["what"] == "items":
            candidates = node if isinstance(node, list) else []
        else:
            candidates = list(node) if isinstance(node, dict) else []
        for candidate in candidates:
            if isinstance(candidate, str) and candidate:
                facts[candidate] = {"exists": os.path.exists(candidate), "is_dir": os.path.isdir(candidate)}
    return facts


def _read_text(path, what):
    """The bytes of ``path`` (the option ``what`` names it); over the size cap it is refused."""
    try:
        with open(path, "rb") as f:
            data, size = read_capped(f)
    except (IOError, OSError) as exc:
        raise CufileConfigError("cannot read %s %s: %s" % (what, path, exc))
    if size > MAX_BYTES:
        raise CufileConfigError("%s %s: %s; nothing was written" % (what, path, size_problem(size)))
    return data
