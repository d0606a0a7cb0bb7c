# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the package stages ask the package manager. PRIVATE to the collection.

Two questions with very different costs: the installed versions (the package database:
``dpkg-query``, ``rpm -q``) and the versions the repositories offer (``apt-cache policy``, which
opens apt's whole cache; on EL 9 ``dnf repoquery``, which loads every repository's metadata). The
second is an :class:`Available` answered the first time a decision reads it, so a host whose
installed packages already satisfy every wanted version - a converged re-run - never pays for it,
and a decision that does read it gets the same answer it would have got up front.
"""

from __future__ import annotations

from collections.abc import Mapping


class Available(Mapping):
    """{name: [versions the repositories offer, highest first]} for some package names, fetched
    by ``fetch()`` when first read; every later read uses that one answer. A failure of the
    command (CommandError) is raised to the code that read it, inside the stage's own error
    handling. :meth:`fetch` reads it now (before a step that must be undone if it fails)."""

    def __init__(self, fetch):
        self._fetch = fetch
        self._answer = None

    @property
    def fetched(self):
        return self._answer is not None

    def fetch(self):
        if self._answer is None:
            self._answer = dict(self._fetch())
            self._fetch = None
        return self

    def __getitem__(self, name):
        return self.fetch()._answer[name]

    def __iter__(self):
        return iter(self.fetch()._answer)

    def __len__(self):
        return len(self.fetch()._answer)

    def __repr__(self):
        return "Available(%s)" % (repr(self._answer) if self.fetched else "not fetched")


class PackageMemo(object):
    """The package queries of one plan (gds_plan: every stage in check mode, nothing changes the
    host meanwhile), answered per name: the first query also asks every name the other stages
    will ask (:meth:`expect`), so one query - one ``dpkg-query`` and, if any stage reads it, one
    ``apt-cache policy`` (on EL 9 one ``rpm -q`` and one ``dnf repoquery``) - answers them all.
    The installed and offered versions of a name do not depend on the other names of a query."""

    def __init__(self):
        self.expected = set()
        self.known = set()
        self.installed = {}
        self.offered_by = {}  # name -> the Available of the query that asked it

    def expect(self, names):
        self.expected.update(names)

    def query(self, names, query):
        """``query(names) -> (installed, available)``, asked for every name not asked before
        (and every expected one); returns this call's names' (installed, Available)."""
        missing = set(names) - self.known
        if missing:
            ask = sorted(missing | (self.expected - self.known))
            installed, available = query(ask)
            self.known.update(ask)
            self.installed.update(installed)
            self.offered_by.update((n, available) for n in ask)
        sources = dict((n, self.offered_by[n]) for n in names)
        return (dict((n, self.installed[n]) for n in names if n in self.installed),
                Available(lambda: dict((n, src[n]) for n, src in sources.items() if n in src)))
