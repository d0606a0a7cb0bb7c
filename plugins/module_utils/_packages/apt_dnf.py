# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""apt / dnf for the mofed and nvidia_fs modules. PRIVATE to the collection.

Parsers (``dpkg-query``, ``apt-cache policy``, ``rpm -q``, ``dnf repoquery``) and the package
plan are pure functions. The backends only build argv lists and run them through ``_common.runner``:
installs are always explicit pins (``name=version`` / ``name-version``), and signature checks are
never disabled (no ``--allow-unauthenticated``, no ``--nogpgcheck``, no ``trusted=yes``).
Before a transaction the package lock is waited for up to a bound (``_packages.locks``).

The version comparison is in ``_packages.versions``, the repository files and option checks
in ``_packages.repos``, and the apt backend's installed versions come from dpkg's status file
(``_packages.dpkg_status``) where that file alone is dpkg-query's answer.
"""

from __future__ import annotations

import re

from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import dpkg_status
from ansible_collections.gpudirect.storage.plugins.module_utils._packages.queries import Available
from ansible_collections.gpudirect.storage.plugins.module_utils._packages.versions import (
    compare_versions, select_version, version_matches)

# Never put these in an argv: asserted by the unit tests over every argv we build.
FORBIDDEN_ARGS = ("--allow-unauthenticated", "--nogpgcheck", "--no-gpgcheck", "--force-yes",
                  "trusted=yes", "AllowUnauthenticated", "--allow-insecure-repositories")


def fail_with(module, result, exc):
    """Fail ``module`` with ``exc``'s message and details (CommandError, DkmsBuildError: their
    fail kwargs; PackageError: its details) merged into ``result``."""
    result.update(exc.to_fail_kwargs() if hasattr(exc, "to_fail_kwargs") else getattr(exc, "details", None) or {})
    module.fail_json(msg=str(exc), **result)


class PackageError(Exception):
    """A package operation cannot proceed. ``details`` go to fail_json."""

    def __init__(self, msg, **details):
        super(PackageError, self).__init__(msg)
        self.details = details


class LockHeldError(PackageError):
    """The package manager lock stayed held for longer than the bound."""


# --------------------------------------------------------------------------- parsers
DPKG_QUERY_FORMAT = "${Package}\t${Version}\t${db:Status-Status}\n"


def parse_dpkg_query(stdout):
    """``dpkg-query -W -f=DPKG_QUERY_FORMAT`` -> {name: version} of installed packages."""
    out = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[2].strip() == "installed":
            out[parts[0].split(":")[0]] = parts[1]
    return out


def parse_apt_cache_policy(stdout):
    """``apt-cache policy NAME...`` -> {name: {installed, candidate, versions}} (versions in
    the order apt lists them, highest first). ``(none)`` becomes None."""
    out = {}
    cur = None
    in_table = False
    for line in stdout.splitlines():
        if line and not line[0].isspace() and line.rstrip().endswith(":"):
            cur = {"installed": None, "candidate": None, "versions": []}
            out[line.rstrip()[:-1].split(":")[0]] = cur
            in_table = False
            continue
        if cur is None:
            continue
        s = line.strip()
        if s.startswith("Installed:"):
            v = s.split(":", 1)[1].strip()
            cur["installed"] = None if v == "(none)" else v
        elif s.startswith("Candidate:"):
            v = s.split(":", 1)[1].strip()
            cur["candidate"] = None if v == "(none)" else v
        elif s.startswith("Version table:"):
            in_table = True
        elif in_table:
            # " *** 2.26.6-1 500" / "     2.28.2-1 500"; origin lines are indented deeper.
            m = re.match(r"^( *)(?:\*\*\* +)?(\S+) +(-?\d+)\s*$", line)
            if m and len(m.group(1)) <= 5:
                cur["versions"].append(m.group(2))
    return out


def parse_rpm_q(stdout, names):
    """Default ``rpm -q NAME...`` output -> {name: "version-release" or None}."""
    out = dict((n, None) for n in names)
    for line in stdout.splitlines():
        line = line.strip()
        if not line or line.startswith("package ") and line.endswith(" is not installed"):
            continue
        for n in sorted(names, key=len, reverse=True):
            if line.startswith(n + "-"):
                rest = line[len(n) + 1:]
                # rest = version-release.arch ; version never contains '-'
                if re.match(r"^[^-]+-[^-]+$", rest):
                    vr = rest.rsplit(".", 1)[0] if "." in rest.split("-", 1)[1] else rest
                    if out.get(n) is None:
                        out[n] = vr
                    break
    return out


def parse_dnf_repoquery(stdout):
    """``dnf repoquery --qf '%{name}\\t%{evr}\\n'`` -> {name: [evr, ...]} (epoch 0 dropped)."""
    out = {}
    for line in stdout.splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 2 and parts[0]:
            evr = parts[1][2:] if parts[1].startswith("0:") else parts[1]
            lst = out.setdefault(parts[0], [])
            if evr not in lst:
                lst.append(evr)
    return out


# --------------------------------------------------------------------------- plan
def plan_packages(installed, available, wanted, state="present", strict=True, family=None):
    """Pure: what to do with packages, versions ordered as the package manager ``family`` orders
    them (``versions.compare_versions``).

    ``installed`` {name: version}; ``available`` {name: [versions]}; ``wanted`` {name: version
    prefix or None}. Returns {"install": [(name, version, "install"|"upgrade"|"downgrade")],
    "remove": [names], "ok": [names], "errors": [messages]}. With ``strict=False`` (check mode
    before a repository is added) a missing candidate plans the install with the wanted text.
    """
    plan = {"install": [], "remove": [], "ok": [], "errors": []}
    for name in sorted(wanted):
        spec = wanted[name]
        have = installed.get(name)
        if state == "absent":
            (plan["remove"] if have else plan["ok"]).append(name)
            continue
        if have and (spec is None or version_matches(have, spec)):
            plan["ok"].append(name)
            continue
        target = select_version(available.get(name) or [], spec, family)
        if target is None:
            if strict:
                avail = available.get(name) or []
                plan["errors"].append(
                    "package %s%s is not available from the configured repositories (available: %s)"
                    % (name, "" if spec is None else " version " + spec, ", ".join(avail) or "none"))
                continue
            target = spec or "(candidate)"
        kind = "install"
        if have:
            kind = "downgrade" if compare_versions(target, have, family) < 0 else "upgrade"
        plan["install"].append((name, target, kind))
    return plan


def package_diff(installed, plan):
    """``--diff`` before/after as sorted ``name=version`` lines."""
    before = dict(installed)
    after = dict(installed)
    for name, version, _kind in plan["install"]:
        after[name] = version
    for name in plan["remove"]:
        after.pop(name, None)
    names = sorted(set(before) | set(after))

    def fmt(d):
        return "".join("%s=%s\n" % (n, d[n]) for n in names if n in d)
    return {"before_header": "packages", "after_header": "packages",
            "before": fmt(before), "after": fmt(after)}


# --------------------------------------------------------------------------- backends
def check_argv(argv):
    for a in argv:
        for bad in FORBIDDEN_ARGS:
            if bad in a:
                raise AssertionError("refusing to build an argv that disables signature checks: %s" % a)
    return argv


class Backend(object):
    """What apt and dnf share: the runner, the lock timeout and the (memoized) query."""

    def __init__(self, runner, lock_timeout=120, paths=None):
        self.runner = runner
        self.lock_timeout = int(lock_timeout)
        self.paths = paths if paths is not None else HostPaths()

    def query(self, names):
        """({name: installed version}, :class:`Available` {name: [versions offered]}) for the
        names; the runner's ``package_memo`` (a plan's :class:`PackageMemo`) answers when it has
        one. The repositories are asked only if the offered versions are read."""
        names = sorted(set(names))
        memo = getattr(self.runner, "package_memo", None)
        return memo.query(names, self.query_now) if memo is not None else self.query_now(names)

    def query_now(self, names):
        return self.installed_now(names), Available(lambda: self.available_now(names))

    def wait_for_lock(self):
        """Wait for the package manager's lock (LockHeldError after ``lock_timeout``)."""
        # imported here: only a write waits for the lock
        from ansible_collections.gpudirect.storage.plugins.module_utils._packages.locks import wait_for_locks
        return wait_for_locks(self.paths, [getattr(self.paths, n) for n in self.lock_names], self.lock_timeout)


class Apt(Backend):
    family = "apt"
    lock_names = ("dpkg_lock", "dpkg_lock_backend")

    def installed_now(self, names):
        known = dpkg_status.installed(self.runner, self.paths, names)
        if known is not None:
            return known
        res = self.runner.run(["dpkg-query", "-W", "-f=" + DPKG_QUERY_FORMAT] + names, check=False)
        return parse_dpkg_query(res.stdout or "")

    def available_now(self, names):
        pol = parse_apt_cache_policy(self.runner.run(["apt-cache", "policy"] + names).stdout or "")
        return dict((n, pol[n]["versions"]) for n in pol)

    def refresh(self):
        return self.runner.run(check_argv(["apt-get", "update", "-q"]), mutates=True)

    def install_argv(self, plan):
        argv = ["apt-get", "install", "-y", "-q", "-o", "DPkg::Lock::Timeout=%d" % self.lock_timeout,
                "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"]
        if any(k == "downgrade" for _n, _v, k in plan["install"]):
            argv.append("--allow-downgrades")
        return check_argv(argv + ["%s=%s" % (n, v) for n, v, _k in plan["install"]])

    def remove_argv(self, names):
        return check_argv(["apt-get", "remove", "-y", "-q", "-o",
                           "DPkg::Lock::Timeout=%d" % self.lock_timeout] + list(names))

    environ = {"DEBIAN_FRONTEND": "noninteractive"}


class Dnf(Backend):
    family = "dnf"
    lock_names = ("rpm_lock",)
    environ = {}

    def installed_now(self, names):
        res = self.runner.run(["rpm", "-q"] + names, check=False)
        return dict((k, v) for k, v in parse_rpm_q(res.stdout or "", names).items() if v)

    def available_now(self, names):
        rq = self.runner.run(["dnf", "-q", "repoquery", "--available", "--qf", "%{name}\t%{evr}\n"] + names,
                             check=False)
        return parse_dnf_repoquery(rq.stdout or "")

    def refresh(self):
        # -y: a repo_gpgcheck=1 repository's key (its gpgkey=) is imported without a prompt
        return self.runner.run(check_argv(["dnf", "makecache", "-y", "-q"]), mutates=True)

    def install_argv(self, plan):
        # "dnf install name-version" upgrades or downgrades to exactly that version.
        return check_argv(["dnf", "install", "-y", "-q"] + ["%s-%s" % (n, v) for n, v, _k in plan["install"]])

    def remove_argv(self, names):
        return check_argv(["dnf", "remove", "-y", "-q"] + list(names))


def get_backend(runner, lock_timeout=120, paths=None):
    """apt on Debian/Ubuntu, dnf on RHEL; PackageError when neither is there."""
    if runner.which("apt-get") and runner.which("dpkg-query"):
        return Apt(runner, lock_timeout, paths)
    if runner.which("dnf") and runner.which("rpm"):
        return Dnf(runner, lock_timeout, paths)
    raise PackageError("neither apt-get nor dnf found on the target")


def apply_plan(backend, plan, check_mode):
    """Run the transaction of ``plan`` (after waiting for the lock). Returns the argv lists run
    (or that would run in check mode)."""
    cmds = []
    if plan["install"]:
        cmds.append(backend.install_argv(plan))
    if plan["remove"]:
        cmds.append(backend.remove_argv(plan["remove"]))
    if not cmds or check_mode:
        return cmds
    backend.wait_for_lock()
    for argv in cmds:
        try:
            backend.runner.run(argv, mutates=True, environ=backend.environ)
        except CommandError as exc:
            raise PackageError("package transaction failed: %s" % exc, **exc.to_fail_kwargs())
    return cmds
