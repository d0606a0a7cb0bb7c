# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""repos.input_problems keeps option values out of an argv or a repository file: what each
option accepts, and the near misses it refuses (an option, a blank, a line end, a non-ASCII
letter or digit where only ASCII is allowed)."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repos

REFUSED_EVERYWHERE = ["", "a b", "a\n", "a\tb", "a\u00a0b", "a\u2028b", "\u00e9", "a\u0663"]
CASES = {
    "version": (lambda v: {"version": v}, ["2.26.6-1", "1:2.26.6-1~deb12", "2.26", "25.10", "a_b+c"],
                ["-o=x", ".1", "~1", ":1", "2.26/1", "2.26,1"]),
    "packages": (lambda v: {"packages": [v]}, ["nvidia-fs", "g++", "libcufile-12-8", "nvidia-fs=2.26.6-1", "a.b_c"],
                 ["-o=x", "-y", ".x", "nvidia-fs=-o", "nvidia-fs=", "a/b", "a:b"]),
    "repo.name": (lambda v: {"repo": {"name": v}}, ["gpudirect-ofed", "doca_3.2", "a"],
                  ["../x", "a/b", ".hidden", "a+b", "-x"]),
    "repo.url": (lambda v: {"repo": {"url": v}}, ["http://h/x", "https://h/x/", "file:/srv/repo", "file:///srv/repo"],
                 ["ftp://h/", "http://", "http://h/a b", "h/x", " http://h/x", "http://h/x\nTrusted: yes"]),
    "repo.signed_by": (lambda v: {"repo": {"signed_by": v}}, ["/etc/apt/keyrings/x.gpg", "/k"],
                       ["rel/key", "/a b"]),
    "repo.suite": (lambda v: {"repo": {"suite": v}}, ["./", "bookworm", "x/y", "a~b+c", "_x", ".hidden"],
                   ["a:b", "a,b", "Trusted: yes"]),
    "repo.components": (lambda v: {"repo": {"components": [v]}}, ["main", "non-free/x"], ["a:b", "x\ny"]),
}


def _named(option, params):
    return [p for p in repos.input_problems(params) if p.startswith((option + " ", option + ":"))]


@pytest.mark.parametrize("option", sorted(CASES))
def test_each_option_accepts_its_values(option):
    params_of, accepted, _refused = CASES[option]
    assert [(v, _named(option, params_of(v))) for v in accepted if _named(option, params_of(v))] == []


@pytest.mark.parametrize("option", sorted(CASES))
def test_each_option_refuses_the_near_misses(option):
    params_of, _accepted, refused = CASES[option]
    assert [v for v in refused + REFUSED_EVERYWHERE if not _named(option, params_of(v))] == []


def test_the_messages_still_name_their_options():
    problems = repos.input_problems({
        "version": "-o=x", "packages": ["ok", "bad name"], "extra_packages": ["a=1 2"],
        "repo": {"name": "../x", "url": "ftp://h/", "path": None, "signed_by": "rel/key", "suite": "a b",
                 "components": ["main", "x\ny"]}})
    assert [p.split(" ", 1)[0] for p in problems] == [
        "version", "packages:", "extra_packages:", "repo.name", "repo.url", "repo.signed_by", "repo.suite",
        "repo.components"]
