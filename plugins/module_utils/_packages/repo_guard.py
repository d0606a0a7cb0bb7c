# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The package repository a stage (mofed, nvidia_fs) writes: checked before it is written, and
put back - file and package index - when a later step of the stage fails. Imported by a stage
only when its repository file changes (``repos.planned_file``). PRIVATE to the collection.
Standard library only.

A repository file that cannot work (a mirror left at its example value, a key file that is not
on the host) would make every later ``apt-get update`` on the host fail; so the key file (or an
inline key), a local directory and the URL (its host resolves and answers) are checked first,
each problem naming its option, and nothing is written. When the stage fails after writing (the
refresh fails, the repository lacks what the stage needs), :class:`RepoWrite` restores the old
file (or removes the new one) and ``/var/lib/apt/lists`` from a hard-link snapshot taken before
the refresh, and takes its actions back out of the result.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
from urllib import parse as urlparse

from ansible_collections.gpudirect.storage.plugins.module_utils._common import managed_file
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError

KEY_BEGIN = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
# patterns, compiled (and kept by re) when first used: most runs never need them
_ARMORED = (r"-----BEGIN PGP PUBLIC KEY BLOCK-----\n(?:[A-Za-z0-9+/=:.,_ ()-]*\n)*"
            r"-----END PGP PUBLIC KEY BLOCK-----\Z")
_APT_PROXY = r'^Acquire::(https?)::Proxy "([^"]+)";$'
LISTS_KEEP = ("lock", "partial")


def is_inline_key(value):
    return str(value or "").lstrip().startswith(KEY_BEGIN)


def inline_key_problem(value):
    """None for one ASCII-armored public key block (what deb822 ``Signed-By`` may hold)."""
    text = "\n".join(line.strip() for line in str(value).strip().splitlines())
    return None if re.match(_ARMORED, text) else "repo.signed_by: an inline key must be one ASCII-armored public key block"


def deb822_key_field(value):
    """The inline key as a deb822 multi-line field value (every line indented, blank lines " .")."""
    lines = [line.strip() for line in str(value).strip().splitlines()]
    return "\n" + "\n".join(" " + (line or ".") for line in lines)


def apt_proxies(runner):
    """{scheme: proxy} apt itself would use (``apt-config dump``), for the URL check."""
    if runner is None or not runner.which("apt-config"):
        return {}
    res = runner.run(["apt-config", "dump"], check=False)
    return dict((scheme, proxy) for scheme, proxy in re.findall(_APT_PROXY, res.stdout or "", re.M)
                if proxy.upper() not in ("DIRECT", "FALSE"))


def url_problem(url, timeout=10, proxies=None):
    """None when the host of ``url`` resolves (unless a proxy resolves it) and answers - any
    HTTP status counts, a directory listing may well be refused; else why not."""
    # imported here: urllib.request pulls in http.client, email and ssl, which every mofed /
    # nvidia_fs run (and gds_plan) would otherwise load for a check only a new repository makes
    from urllib import error as urlerror
    from urllib import request as urlrequest
    parsed = urlparse.urlparse(url)
    proxies = dict(urlrequest.getproxies(), **(proxies or {}))
    proxy = proxies.get(parsed.scheme)
    if not proxy:
        try:
            socket.getaddrinfo(parsed.hostname, parsed.port or (443 if parsed.scheme == "https" else 80))
        except (socket.gaierror, UnicodeError) as exc:
            return "%s does not resolve (%s)" % (parsed.hostname, exc)
    opener = urlrequest.build_opener(urlrequest.ProxyHandler({parsed.scheme: proxy} if proxy else {}))
    try:
        opener.open(urlrequest.Request(url, method="HEAD"), timeout=timeout).close()
    except urlerror.HTTPError:
        return None  # it answered
    except (urlerror.URLError, socket.timeout, OSError) as exc:
        return "%s does not answer (%s)" % (url, getattr(exc, "reason", exc))
    return None


def repo_problems(repo, paths, family, runner=None, check_url=url_problem):
    """Why ``repo`` (the module's ``repo`` option) cannot work on this host; each message names
    its option. Empty when it can be written."""
    out = []
    key = repo.get("signed_by")
    if is_inline_key(key):
        problem = inline_key_problem(key)
        if problem:
            out.append(problem)
        elif family != "apt":
            out.append("repo.signed_by: an inline key works with apt only; give the path of the key file on the host")
    elif key and not os.path.isfile(paths.under_root(key)):
        out.append("repo.signed_by: the key file %s does not exist on the host; copy the repository's public key "
                   "there first (or give the key inline)" % key)
    if repo.get("path") and not os.path.isdir(paths.under_root(repo["path"])):
        out.append("repo.path: the directory %s does not exist on the host (mount or copy the repository first)"
                   % repo["path"])
    url = repo.get("url")
    if url and url.startswith("file:"):
        local = "/" + url[len("file:"):].lstrip("/")
        if not os.path.isdir(paths.under_root(local)):
            out.append("repo.url: the directory %s does not exist on the host" % local)
    elif url:
        problem = check_url(url, proxies=apt_proxies(runner) if family == "apt" else None)
        if problem:
            out.append("repo.url: %s; set it to a mirror the host reaches" % problem)
    return out


class ListsSnapshot(object):
    """Hard links of the files in the apt lists directory: apt replaces list files by rename,
    so the linked inodes keep the index as it was, at no copying cost."""

    def __init__(self, lists):
        self.lists = lists
        self.saved = None
        if os.path.isdir(lists):
            self.saved = tempfile.mkdtemp(prefix=".gpudirect-lists-", dir=os.path.dirname(lists))
            for name in self._files():
                try:
                    os.link(os.path.join(lists, name), os.path.join(self.saved, name))
                except OSError:
                    shutil.copy2(os.path.join(lists, name), os.path.join(self.saved, name))

    def _files(self):
        if not os.path.isdir(self.lists):
            return []
        return [n for n in os.listdir(self.lists) if n not in LISTS_KEEP and os.path.isfile(os.path.join(self.lists, n))]

    def restore(self):
        saved = set(os.listdir(self.saved)) if self.saved else set()
        for name in self._files():
            if name not in saved:
                os.unlink(os.path.join(self.lists, name))
        for name in saved:
            os.rename(os.path.join(self.saved, name), os.path.join(self.lists, name))
        self.discard()

    def discard(self):
        if self.saved:
            shutil.rmtree(self.saved, ignore_errors=True)
            self.saved = None


class RepoWrite(object):
    """One stage's repository change (``managed_file.plan_file`` of the source file): write it, refresh
    the index, and undo both while the stage has not committed to it."""

    def __init__(self, module, paths, backend, change, result):
        self.m = module
        self.paths = paths
        self.backend = backend
        self.change = change
        self.result = result
        self.actions = ["%s %s" % (change["action"], change["path"]), "refresh package metadata"]
        self.snapshot = None
        self.written = False

    def apply(self):
        if not self.m.check_mode and self.backend.family == "apt":
            self.snapshot = ListsSnapshot(self.paths.apt_lists)
        try:
            managed_file.apply_file(self.m, self.change, backup=False)
            self.written = True
            self.result["actions"] += self.actions
            self.result["changed"] = True
            self.backend.refresh()
        except CommandError as exc:
            self.undo()
            from ansible_collections.gpudirect.storage.plugins.module_utils._packages.apt_dnf import PackageError
            raise PackageError("repo: refreshing the package index with the new repository failed (%s); the repository "
                               "file and the package index were put back. Nothing was changed." % exc,
                               **exc.to_fail_kwargs())
        except BaseException:
            self.undo()
            raise

    def undo(self):
        """Leave the host (and the result) as before: the old file or none, the old index."""
        if self.written and not self.m.check_mode:
            back = dict(self.change, current=self.change["desired"], desired=self.change["current"],
                        action="remove" if self.change["current"] is None else "update")
            managed_file.apply_file(self.m, back, backup=False)
        if self.snapshot:
            self.snapshot.restore()
            self.snapshot = None
        if self.written:
            for action in self.actions:
                if action in self.result["actions"]:
                    self.result["actions"].remove(action)
            self.result["changed"] = bool(self.result["actions"])
            self.written = False

    def commit(self):
        """The stage goes on with this repository: a later failure leaves it configured."""
        if self.snapshot:
            self.snapshot.discard()
            self.snapshot = None
