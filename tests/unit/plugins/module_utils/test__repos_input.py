# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""repos.input_problems checks option values per character; it must accept exactly what the
patterns it used to compile accepted (they are kept here as the reference)."""

from __future__ import annotations

import random
import re

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repos

REFERENCE = {
    "package name": (re.compile(r"[A-Za-z0-9][A-Za-z0-9+._-]*\Z"), lambda v: repos.spelled_with(v, repos._PKG_NAME_CHARS)),
    "package version": (re.compile(r"[A-Za-z0-9][A-Za-z0-9.+~:_-]*\Z"),
                        lambda v: repos.spelled_with(v, repos._PKG_VERSION_CHARS)),
    "repository name": (re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z"), lambda v: repos.spelled_with(v, repos._REPO_NAME_CHARS)),
    "no space": (re.compile(r"\S+\Z"), repos.without_space),
    "suite or component": (re.compile(r"[A-Za-z0-9._/~+-]+\Z"),
                           lambda v: repos.spelled_with(v, repos._REPO_FIELD_CHARS, repos._REPO_FIELD_CHARS)),
    "url": (re.compile(r"(https?://|file:)\S+\Z"), repos.plain_url),
}
# letters, digits, every character the sets name, blanks and line ends of several kinds,
# non-ASCII letters and digits (the patterns' ranges are ASCII), and the URL schemes' letters
ALPHABET = list("aZ09+._-~:/=@ \t\n\r\x0b\x0c") + ["\u00a0", "\u2028", "\u3000", "\u00e9", "\u0663", "\uff21"]
PIECES = ALPHABET + ["http://", "https://", "file:", "http:/", "https", "nvidia-fs", "2.26.6-1", "-o"]


def strings(seed, count=4000):
    rng = random.Random(seed)
    yield ""
    yield from PIECES
    for _count in range(count):
        yield "".join(rng.choice(PIECES) for _piece in range(rng.randint(1, 6)))


@pytest.mark.parametrize("what", sorted(REFERENCE))
def test_each_check_accepts_what_its_pattern_accepted(what):
    pattern, check = REFERENCE[what]
    differ = [s for s in strings(what) if bool(pattern.match(s)) != bool(check(s))]
    assert differ == []


def test_the_messages_still_name_their_options():
    problems = repos.input_problems({
        "version": "-o=x", "packages": ["ok", "bad name"], "extra_packages": ["a=1 2"],
        "repo": {"name": "../x", "url": "ftp://h/", "path": None, "signed_by": "rel/key", "suite": "a b",
                 "components": ["main", "x\ny"]}})
    assert [p.split(" ", 1)[0] for p in problems] == [
        "version", "packages:", "extra_packages:", "repo.name", "repo.url", "repo.signed_by", "repo.suite",
        "repo.components"]
