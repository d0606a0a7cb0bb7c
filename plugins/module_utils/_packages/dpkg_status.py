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
import re

DPKG_QUERY_PROGRAMS = ("/usr/bin/dpkg-query", "/bin/dpkg-query")
DATABASE_ENVIRON = ("DPKG_ADMINDIR", "DPKG_ROOT")
_PLAIN_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")  # Debian policy 5.6.1


def parse_dpkg_status(text, names):
    """{name: version} of the ``names`` whose stanza in dpkg's status file ``text`` says they
    are installed: the third word of ``Status`` is ``installed``, as dpkg-query's
    ``${db:Status-Status}``. Field lines start a line; continuation lines start with a space."""
    if not names:
        return {}
    out = {}
    pattern = re.compile(r"^Package: (%s)$" % "|".join(re.escape(n) for n in names), re.M)
    for match in pattern.finditer(text):
        end = text.find("\n\n", match.end())
        stanza = text[match.end():end if end >= 0 else len(text)]
        status = re.search(r"^Status: (.*)$", stanza, re.M)
        version = re.search(r"^Version: (.*)$", stanza, re.M)
        words = status.group(1).split() if status else []
        if len(words) == 3 and words[2] == "installed" and version:
            out[match.group(1)] = version.group(1).strip()
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
    if not all(_PLAIN_NAME.match(name) for name in names):
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
