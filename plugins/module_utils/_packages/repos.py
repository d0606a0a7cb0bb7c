# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Package repositories the modules write (a signed deb822 apt source, a gpgcheck=1 dnf .repo),
the change of that file on the host, and the checks that keep option values out of an argv or a
repository file. PRIVATE to the collection. Standard library only."""

from __future__ import annotations

import os

from ansible_collections.gpudirect.storage.plugins.module_utils._common import managed_file


REPO_ARG_SPEC = dict(
    type="dict",
    options=dict(
        name=dict(type="str"),
        url=dict(type="str"),
        path=dict(type="path"),
        suite=dict(type="str", default="./"),
        components=dict(type="list", elements="str", default=[]),
        signed_by=dict(type="path", required=True),
    ),
    mutually_exclusive=[("url", "path")],
    required_one_of=[("url", "path")],
)


# What an option value may hold: ASCII letters and digits first, then these characters.
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_PKG_NAME_CHARS = _ALNUM.union("+._-")
_PKG_VERSION_CHARS = _ALNUM.union(".+~:_-")
_REPO_NAME_CHARS = _ALNUM.union("_.-")
_REPO_FIELD_CHARS = _ALNUM.union("._/~+-")
_URL_SCHEMES = ("http://", "https://", "file:")


def spelled_with(value, chars, first=_ALNUM):
    """Whether ``value`` is a non-empty string whose first character is in ``first`` and every
    other in ``chars``."""
    return bool(value) and value[0] in first and chars.issuperset(value[1:])


def without_space(value):
    """Whether ``value`` is a non-empty string without whitespace (what ``\\S+\\Z`` matches)."""
    return bool(value) and not any(c.isspace() for c in value)


def plain_url(value):
    """An http://, https:// or file: URL without whitespace."""
    return any(value.startswith(s) and without_space(value[len(s):]) for s in _URL_SCHEMES)


def input_problems(params, package_options=("packages", "extra_packages")):
    """Option values that must never reach an argv or a repository file: a package spec that
    apt/dnf would read as an option (``-o=...``), whitespace or newlines that would add fields to
    the deb822/.repo file (``Trusted: yes``), a repository name that leaves sources.list.d.
    Returns messages, each naming its option (empty: fine)."""
    out = []
    if (params.get("lock_timeout") or 0) < 0:
        out.append("lock_timeout must be 0 or more seconds, got %s" % params["lock_timeout"])
    if params.get("version") is not None and not spelled_with(params["version"], _PKG_VERSION_CHARS):
        out.append("version %r is not a package version (prefix)" % params["version"])
    for opt in package_options:
        for spec in params.get(opt) or []:
            name, sep, ver = spec.partition("=")
            if not spelled_with(name, _PKG_NAME_CHARS) or (sep and not spelled_with(ver, _PKG_VERSION_CHARS)):
                out.append("%s: %r is not a package name (or name=version)" % (opt, spec))
    repo = params.get("repo") or {}
    if repo.get("name") is not None and not spelled_with(repo["name"], _REPO_NAME_CHARS):
        out.append("repo.name %r must be a plain file name (letters, digits, '.', '_', '-')" % repo["name"])
    if repo.get("url") is not None and not plain_url(repo["url"]):
        out.append("repo.url %r must be one http://, https:// or file: URL without spaces" % repo["url"])
    for key in ("path", "signed_by"):
        if key == "signed_by" and str(repo.get(key) or "").lstrip().startswith(INLINE_KEY_BEGIN):
            continue  # an inline key: repo_guard checks it is one armored block
        if repo.get(key) is not None and not (repo[key].startswith("/") and without_space(repo[key])):
            out.append("repo.%s %r must be an absolute path without spaces" % (key, repo[key]))
    for key, value in [("suite", repo.get("suite"))] + [("components", c) for c in repo.get("components") or []]:
        if value is not None and not spelled_with(value, _REPO_FIELD_CHARS, _REPO_FIELD_CHARS):
            out.append("repo.%s %r may only hold letters, digits and . _ / ~ + -" % (key, value))
    return out


INLINE_KEY_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"


def render_apt_source(repo, default_name):
    """(file name, deb822 text) of a signed apt source. A flat repository (``suite`` ending in
    ``/``) has no Components."""
    uri = repo.get("url") or "file:" + repo["path"]
    suite = repo.get("suite") or "./"
    lines = ["# Managed by gpudirect.storage (%s)" % (repo.get("name") or default_name),
             "Types: deb", "URIs: %s" % uri, "Suites: %s" % suite]
    if not suite.endswith("/"):
        lines.append("Components: %s" % " ".join(repo.get("components") or ["main"]))
    key = repo["signed_by"]
    if key.lstrip().startswith(INLINE_KEY_BEGIN):  # deb822 multi-line field: indented, blank lines " ."
        key = "\n" + "\n".join(" " + (line.strip() or ".") for line in key.strip().splitlines())
    else:
        key = " " + key
    lines.append("Signed-By:%s" % key)
    return (repo.get("name") or default_name) + ".sources", "\n".join(lines) + "\n"


def render_dnf_repo(repo, default_name):
    """(file name, .repo text) with gpgcheck=1 and the given key."""
    name = repo.get("name") or default_name
    url = repo.get("url") or "file://" + repo["path"]
    text = ("# Managed by gpudirect.storage\n[%s]\nname=%s\nbaseurl=%s\nenabled=1\ngpgcheck=1\n"
            "gpgkey=file://%s\n" % (name, name, url, repo["signed_by"]))
    return name + ".repo", text


def planned_file(repo, stem, paths, family):
    """The change of the repository file ``<stem>`` that the ``repo`` option asks for, or None
    when there is nothing to write (no option, the file as wanted). A change is written only after
    repo_guard's checks."""
    if not repo:
        return None
    if family == "apt":
        fname, text = render_apt_source(repo, stem)
        path = os.path.join(paths.apt_sources_d, fname)
    else:
        fname, text = render_dnf_repo(repo, stem)
        path = os.path.join(paths.yum_repos_d, fname)
    change = managed_file.plan_file(path, text)
    return None if change["action"] == "none" else change
