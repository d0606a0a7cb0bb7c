# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Write the fleet report files on the controller (the gds_report action and the callback's
fallback). PRIVATE to the collection.

``changed`` ignores the generation time; files are replaced atomically, 0600 in a 0700 directory
reached through its descriptor; nothing is written in check mode or when unchanged."""

from __future__ import annotations

import json
import os
import secrets
import stat

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet as fr
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import markdown
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report.html import render_html

FILES = {"json": "gds-fleet.json", "md": "gds-fleet.md", "html": "gds-fleet.html"}
FORMATS = ("json", "md", "html")
ENV_DIR = "GDS_REPORT_DIR"


def project_dir(playbooks):
    """Directory of the run's first playbook file (its parent when it is a ``playbooks``
    directory, as in this collection), or None for a playbook named by collection name."""
    first = next(iter(playbooks or []), None)
    if not first or not (first.endswith((".yml", ".yaml")) or os.path.isfile(first)):
        return None
    base = os.path.dirname(os.path.abspath(first))
    return os.path.dirname(base) if os.path.basename(base) == "playbooks" else base


def inventory_path(inventories):
    """The first inventory source that is a file or directory (not a host list such as
    ``localhost,``), as an absolute path; None without one."""
    for source in inventories or ():
        if source and "," not in source and os.path.exists(source):
            return os.path.abspath(source)
    return None


def report_dir(dest, playbooks, environ, inventories=()):
    """Where the report goes, never depending on the current directory: ``dest``, else
    $GDS_REPORT_DIR, else ``reports/<inventory name>`` beside the first inventory (a relative ``dest``
    is taken there too); without an inventory on disk, the project directory, else ~/.ansible."""
    chosen = os.path.expanduser(dest or environ.get(ENV_DIR) or "") or None
    if chosen and os.path.isabs(chosen):
        return os.path.normpath(chosen)
    inventory = inventory_path(inventories)
    if inventory is not None:
        name = os.path.basename(inventory)
        if os.path.isfile(inventory):
            name = os.path.splitext(name)[0]
        return os.path.normpath(os.path.join(os.path.dirname(inventory), chosen or os.path.join("reports", name)))
    base = project_dir(playbooks)
    if base is None:
        home = environ.get("HOME") or os.path.expanduser("~")
        return os.path.normpath(os.path.join(home, ".ansible", chosen or "gds-reports"))
    return os.path.normpath(os.path.join(base, chosen or "reports"))


def render_all(report, formats=FORMATS):
    """{format: text}; the JSON document is always part of it (it decides ``changed``)."""
    out = {"json": fr.to_json(report)}
    if "md" in formats:
        out["md"] = markdown.render_markdown(report)
    if "html" in formats:
        out["html"] = render_html(report)
    return out


class ReportDirError(OSError):
    """A report directory the report must not be written into."""


def _read(name, dir_fd):
    """The text of ``name`` in the directory ``dir_fd`` (None when absent, a link or unreadable)."""
    if dir_fd is None:
        return None
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        with os.fdopen(fd, "r", encoding="utf-8") as f:
            return f.read() if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else None
    except (OSError, UnicodeDecodeError):
        return None


def _exists(name, dir_fd):
    try:
        return dir_fd is not None and stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_report_dir(dest, create=False):
    """A descriptor of the report directory (None when missing and not ``create``d). The report is the
    owner's alone: a directory another user owns or may write is refused; one of ours that others
    may read is made 0700. Everything after this goes through the descriptor."""
    if create and not os.path.isdir(dest):
        os.makedirs(dest, 0o700)
    try:
        fd = os.open(dest, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        if create:
            raise
        return None
    try:
        st = os.fstat(fd)
        mode = stat.S_IMODE(st.st_mode)
        if st.st_uid not in (os.geteuid(), 0) or mode & 0o022:
            raise ReportDirError("report directory %s (owner uid %d, mode %04o) may be changed by another user: "
                                 "use a directory only you can write" % (dest, st.st_uid, mode))
        if create and st.st_uid == os.geteuid() and mode & 0o077:
            os.fchmod(fd, 0o700)
        return fd
    except BaseException:
        os.close(fd)
        raise


def plan(report, formats=FORMATS, dir_fd=None):
    """(changed, texts, old_md): whether the files would change, the new texts, and the Markdown
    that is there now (for --diff). ``dir_fd``: the open report directory (None: it is missing)."""
    texts = render_all(report, formats)
    old_json = _read(FILES["json"], dir_fd)
    try:
        old = json.loads(old_json) if old_json else None
    except ValueError:
        old = None
    missing = [f for f in texts if not _exists(FILES[f], dir_fd)]
    changed = old_json is None or bool(missing) or not fr.same_report(old, report)
    return changed, texts, _read(FILES["md"], dir_fd)


def _atomic_write(dir_fd, name, text):
    """Replace ``name`` in the directory ``dir_fd`` with ``text``, readable by its owner only."""
    tmp = ".%s.%s" % (name, secrets.token_hex(8))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def write_report(dest, report, formats=FORMATS, check_mode=False):
    """Write the report files into ``dest`` (created when missing) unless nothing changed.
    Returns {changed, files, diff}."""
    dest = os.path.abspath(os.path.expanduser(dest))
    dir_fd = open_report_dir(dest, create=not check_mode)
    try:
        changed, texts, old_md = plan(report, formats, dir_fd)
        if changed and not check_mode:
            for fmt in ("html", "md", "json"):  # JSON last: it is what decides "changed" next time
                if fmt in texts:
                    _atomic_write(dir_fd, FILES[fmt], texts[fmt])
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    files = dict((f, os.path.join(dest, FILES[f])) for f in texts)
    diff = {"before_header": files.get("md", files["json"]), "after_header": files.get("md", files["json"]),
            "before": old_md or "", "after": texts.get("md", "") if changed else old_md or ""}
    return {"changed": changed, "dest": dest, "files": files, "diff": diff}
