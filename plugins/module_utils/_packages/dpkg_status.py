# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The installed versions of some Debian packages, read from dpkg's status file where that file
alone is the answer ``dpkg-query -W`` would give. PRIVATE to the collection.

dpkg-query reads ``/var/lib/dpkg/status`` and then applies the entries of dpkg's journal
(``updates/NNNN``, left by a dpkg run that did not finish). So the file is read only when the
journal is empty, the dpkg-query the runner would start is the host's own (not a wrapper or a
lab shim in front of it), nothing points dpkg at another database (``DPKG_ADMINDIR``,
``DPKG_ROOT``) and every name is a plain package name (no pattern, no ``:arch``). In every other
case :func:`installed` returns None and the caller runs dpkg-query: one process less per package
query on a converged host, the same answer everywhere.
"""

from __future__ import annotations

import os

from ansible_collections.gpudirect.storage.plugins.module_utils._packages.repos import spelled_with

DPKG_QUERY_PROGRAMS = ("/usr/bin/dpkg-query", "/bin/dpkg-query")
DATABASE_ENVIRON = ("DPKG_ADMINDIR", "DPKG_ROOT")
# Debian policy 5.6.1: lower case letters, digits, "+", "-", "."; at least two characters,
# starting with a letter or digit
_NAME_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_NAME_CHARS = _NAME_FIRST | frozenset("+-.")
_STANZA = "\nPackage: "


def plain_name(name):
    """Whether ``name`` is a package name as Debian policy spells it (no pattern, no ``:arch``)."""
    return len(name) >= 2 and spelled_with(name, _NAME_CHARS, _NAME_FIRST)


def _field(stanza, name):
    """The value of field ``name`` in ``stanza`` (which starts with a newline), or None."""
    start = stanza.find("\n%s: " % name)
    if start < 0:
        return None
    start += len(name) + 3
    end = stanza.find("\n", start)
    return stanza[start:end if end >= 0 else len(stanza)].strip()


def parse_dpkg_status(text, names):
    """{name: version} of the ``names`` whose stanza in dpkg's status file ``text`` says they
    are installed: the third word of ``Status`` is ``installed``, as dpkg-query's
    ``${db:Status-Status}``. A field starts a line; continuation lines start with a space, so a
    ``Package:`` inside another field's text is never taken for a stanza. One pass over the
    stanzas (a Multi-Arch: same package has one per architecture)."""
    wanted = set(names)
    text = "\n" + text
    out = {}
    at = text.find(_STANZA)
    while at >= 0:
        line_end = text.find("\n", at + len(_STANZA))
        if line_end < 0:
            line_end = len(text)
        name = text[at + len(_STANZA):line_end]
        following = text.find(_STANZA, line_end)
        if name in wanted:
            end = text.find("\n\n", line_end)
            stanza = text[line_end:end if end >= 0 else len(text)]
            words = (_field(stanza, "Status") or "").split()
            version = _field(stanza, "Version")
            if len(words) == 3 and words[2] == "installed" and version:
                out[name] = version
        at = following
    return out


def journal_pending(updates_dir):
    """Whether dpkg's journal holds entries dpkg-query would apply (files named by a number;
    ``tmp.i`` is one still being written, which dpkg skips). Unreadable: True."""
    try:
        return any(name.isdigit() for name in os.listdir(updates_dir))
    except FileNotFoundError:
        return False
    except OSError:
        return True


def installed(runner, paths, names):
    """{name: installed version} for ``names`` from the status file, or None where the file alone
    cannot give dpkg-query's answer (see the module docstring): then run dpkg-query."""
    environ = dict(os.environ, **(getattr(runner, "environ", None) or {}))
    if any(environ.get(name) for name in DATABASE_ENVIRON):
        return None
    if not all(plain_name(name) for name in names):
        return None
    if runner.which("dpkg-query") not in DPKG_QUERY_PROGRAMS:
        return None
    admindir = paths.dpkg_admindir
    if journal_pending(os.path.join(admindir, "updates")):
        return None
    try:
        with open(os.path.join(admindir, "status"), "rb") as f:
            text = f.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None
    return parse_dpkg_status(text, names)
