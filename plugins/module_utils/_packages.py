# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""apt / dnf for the mofed and nvidia_fs modules. PRIVATE to the collection.

Parsers (``dpkg-query``, ``apt-cache policy``, ``rpm -q``, ``dnf repoquery``) and the package
plan are pure functions. The backends only build argv lists and run them through ``_runner``:
installs are always explicit pins (``name=version`` / ``name-version``), and signature checks are
never disabled (no ``--allow-unauthenticated``, no ``--nogpgcheck``, no ``trusted=yes``).
Before a transaction the package lock is waited for up to a bound; then the error names the
process that holds it (from ``/proc/locks``, or a scan of ``/proc/*/fd``).

Longer than most module_utils (~450 lines) because the two backends share the parsers, the
version comparison, the plan and the lock wait; splitting them would only add imports.
"""

from __future__ import annotations

import os
import re
import time

from ansible_collections.gpudirect.storage.plugins.module_utils._runner import CommandError

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


# --------------------------------------------------------------------------- versions
def _order(c):
    if c == "~":
        return -1
    if c.isalpha():
        return ord(c)
    return ord(c) + 256


def _cmp_part(a, b):
    """Debian's verrevcmp (also close enough to rpmvercmp for the versions we handle)."""
    ia = ib = 0
    while ia < len(a) or ib < len(b):
        first_diff = 0
        while (ia < len(a) and not a[ia].isdigit()) or (ib < len(b) and not b[ib].isdigit()):
            ac = _order(a[ia]) if ia < len(a) and not a[ia].isdigit() else 0
            bc = _order(b[ib]) if ib < len(b) and not b[ib].isdigit() else 0
            if ac != bc:
                return -1 if ac < bc else 1
            ia += 1
            ib += 1
        while ia < len(a) and a[ia] == "0":
            ia += 1
        while ib < len(b) and b[ib] == "0":
            ib += 1
        while ia < len(a) and a[ia].isdigit() and ib < len(b) and b[ib].isdigit():
            if not first_diff:
                first_diff = ord(a[ia]) - ord(b[ib])
            ia += 1
            ib += 1
        if ia < len(a) and a[ia].isdigit():
            return 1
        if ib < len(b) and b[ib].isdigit():
            return -1
        if first_diff:
            return -1 if first_diff < 0 else 1
    return 0


def compare_versions(a, b):
    """-1/0/1 comparing two package versions ``[epoch:]upstream[-revision]``."""
    def split(v):
        epoch, _sep, rest = v.partition(":") if ":" in v else ("0", "", v)
        up, _sep, rev = rest.rpartition("-") if "-" in rest else (rest, "", "")
        return int(epoch) if epoch.isdigit() else 0, up, rev
    ea, ua, ra = split(a)
    eb, ub, rb = split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _cmp_part(ua, ub) or _cmp_part(ra, rb)


def version_matches(version, wanted):
    """True if ``version`` is ``wanted`` or starts with it at a separator boundary:
    ``2.26.6`` matches ``2.26.6-1``; ``24.10`` matches ``24.10-4.1.4.0``; ``2.2`` does NOT
    match ``2.26.6``. A leading ``epoch:`` in ``version`` is ignored unless ``wanted`` has one."""
    if not version or not wanted:
        return False
    if ":" in version and ":" not in wanted:
        version = version.split(":", 1)[1]
    if version == wanted:
        return True
    return version.startswith(wanted) and version[len(wanted)] in ".-~+_"


def select_version(available, wanted):
    """Highest version in ``available`` that matches ``wanted`` (None: the highest of all)."""
    cands = [v for v in available if wanted is None or version_matches(v, wanted)]
    best = None
    for v in cands:
        if best is None or compare_versions(v, best) > 0:
            best = v
    return best


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
def plan_packages(installed, available, wanted, state="present", strict=True):
    """Pure: what to do with packages.

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
        target = select_version(available.get(name) or [], spec)
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
            kind = "downgrade" if compare_versions(target, have) < 0 else "upgrade"
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


# --------------------------------------------------------------------------- lock holders
def parse_proc_locks(text):
    """``/proc/locks`` -> [{pid, major, minor, inode, kind, blocked}] (major/minor are hex)."""
    out = []
    for line in (text or "").splitlines():
        f = line.split()
        if len(f) < 8:
            continue
        blocked = f[1] == "->"
        if blocked:
            f = f[:1] + f[2:]
        try:
            major, minor, inode = f[5].split(":")
            out.append({"pid": int(f[4]), "major": int(major, 16), "minor": int(minor, 16),
                        "inode": int(inode), "kind": f[1], "blocked": blocked})
        except ValueError:
            continue
    return out


def _describe_pid(paths, pid):
    base = os.path.join(paths.proc, str(pid))
    if not os.path.isdir(base) and os.path.realpath(paths.proc_locks) == "/proc/locks":
        base = os.path.join("/proc", str(pid))  # a re-rooted /proc whose locks file is the kernel's
    comm = (paths.read(os.path.join(base, "comm")) or "").strip()
    cmdline = (paths.read(os.path.join(base, "cmdline")) or "").replace("\0", " ").strip()
    return {"pid": pid, "comm": comm or "?", "cmdline": cmdline}


def lock_holders(paths, lock_path):
    """Processes holding ``lock_path``: /proc/locks by inode, then a /proc/*/fd scan."""
    try:
        st = os.stat(lock_path)
    except OSError:
        return []
    pids = []
    # Match by inode only: on overlayfs (lab hosts) /proc/locks names the upper layer's device.
    for lk in parse_proc_locks(paths.read("proc_locks")):
        if lk["inode"] == st.st_ino and not lk["blocked"] and lk["pid"] > 0:
            pids.append(lk["pid"])
    if not pids:
        targets = set([lock_path, os.path.realpath(lock_path)])
        try:
            entries = [e for e in os.listdir(paths.proc) if e.isdigit()]
        except OSError:
            entries = []
        for pid in entries:
            fd_dir = os.path.join(paths.proc, pid, "fd")
            try:
                fds = os.listdir(fd_dir)
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(os.path.join(fd_dir, fd)) in targets:
                        pids.append(int(pid))
                        break
                except OSError:
                    continue
    return [_describe_pid(paths, pid) for pid in sorted(set(pids)) if pid != os.getpid()]


def wait_for_locks(paths, lock_paths, timeout, interval=1.0, sleep=time.sleep, clock=time.monotonic):
    """Wait until no process holds any of ``lock_paths``; raise LockHeldError after ``timeout``
    seconds naming the holder. Returns the seconds waited."""
    start = clock()
    while True:
        held = [(p, h) for p in lock_paths for h in lock_holders(paths, p)]
        if not held:
            return clock() - start
        if clock() - start >= timeout:
            path, h = held[0]
            who = "pid %s (%s)" % (h["pid"], h["cmdline"] or h["comm"])
            raise LockHeldError(
                "package manager lock %s is held by %s; waited %ss (lock_timeout). Let that "
                "process finish, then run again. Nothing was changed." % (path, who, int(timeout)),
                lock=path, holder=h)
        sleep(interval)


# --------------------------------------------------------------------------- repositories
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


_PKG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9+._-]*\Z")
_PKG_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+~:_-]*\Z")
_REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_NO_SPACE = re.compile(r"\S+\Z")
_REPO_FIELD = re.compile(r"[A-Za-z0-9._/~+-]+\Z")


def input_problems(params, package_options=("packages", "extra_packages")):
    """Option values that must never reach an argv or a repository file: a package spec that
    apt/dnf would read as an option (``-o=...``), whitespace or newlines that would add fields to
    the deb822/.repo file (``Trusted: yes``), a repository name that leaves sources.list.d.
    Returns messages, each naming its option (empty: fine)."""
    out = []
    if (params.get("lock_timeout") or 0) < 0:
        out.append("lock_timeout must be 0 or more seconds, got %s" % params["lock_timeout"])
    if params.get("version") is not None and not _PKG_VERSION.match(params["version"]):
        out.append("version %r is not a package version (prefix)" % params["version"])
    for opt in package_options:
        for spec in params.get(opt) or []:
            name, sep, ver = spec.partition("=")
            if not _PKG_NAME.match(name) or (sep and not _PKG_VERSION.match(ver)):
                out.append("%s: %r is not a package name (or name=version)" % (opt, spec))
    repo = params.get("repo") or {}
    if repo.get("name") is not None and not _REPO_NAME.match(repo["name"]):
        out.append("repo.name %r must be a plain file name (letters, digits, '.', '_', '-')" % repo["name"])
    if repo.get("url") is not None and not re.match(r"(https?://|file:)\S+\Z", repo["url"]):
        out.append("repo.url %r must be one http://, https:// or file: URL without spaces" % repo["url"])
    for key in ("path", "signed_by"):
        if key == "signed_by" and str(repo.get(key) or "").lstrip().startswith(INLINE_KEY_BEGIN):
            continue  # an inline key: _repo_guard checks it is one armored block
        if repo.get(key) is not None and not (repo[key].startswith("/") and _NO_SPACE.match(repo[key])):
            out.append("repo.%s %r must be an absolute path without spaces" % (key, repo[key]))
    for key, value in [("suite", repo.get("suite"))] + [("components", c) for c in repo.get("components") or []]:
        if value is not None and not _REPO_FIELD.match(value):
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


# --------------------------------------------------------------------------- backends
def check_argv(argv):
    for a in argv:
        for bad in FORBIDDEN_ARGS:
            if bad in a:
                raise AssertionError("refusing to build an argv that disables signature checks: %s" % a)
    return argv


class Apt(object):
    family = "apt"
    lock_names = ("dpkg_lock", "dpkg_lock_backend")

    def __init__(self, runner, lock_timeout=120):
        self.runner = runner
        self.lock_timeout = int(lock_timeout)

    def query(self, names):
        names = sorted(set(names))
        res = self.runner.run(["dpkg-query", "-W", "-f=" + DPKG_QUERY_FORMAT] + names, check=False)
        installed = parse_dpkg_query(res.stdout or "")
        pol = parse_apt_cache_policy(self.runner.run(["apt-cache", "policy"] + names).stdout or "")
        available = dict((n, pol[n]["versions"]) for n in pol)
        return installed, available

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


class Dnf(object):
    family = "dnf"
    lock_names = ("rpm_lock",)
    environ = {}

    def __init__(self, runner, lock_timeout=120):
        self.runner = runner
        self.lock_timeout = int(lock_timeout)

    def query(self, names):
        names = sorted(set(names))
        res = self.runner.run(["rpm", "-q"] + names, check=False)
        installed = dict((k, v) for k, v in parse_rpm_q(res.stdout or "", names).items() if v)
        rq = self.runner.run(["dnf", "-q", "repoquery", "--available", "--qf", "%{name}\t%{evr}\n"] + names,
                             check=False)
        return installed, parse_dnf_repoquery(rq.stdout or "")

    def refresh(self):
        return self.runner.run(check_argv(["dnf", "-q", "makecache"]), mutates=True)

    def install_argv(self, plan):
        # "dnf install name-version" upgrades or downgrades to exactly that version.
        return check_argv(["dnf", "install", "-y", "-q"] + ["%s-%s" % (n, v) for n, v, _k in plan["install"]])

    def remove_argv(self, names):
        return check_argv(["dnf", "remove", "-y", "-q"] + list(names))


def get_backend(runner, lock_timeout=120):
    """apt on Debian/Ubuntu, dnf on RHEL; PackageError when neither is there."""
    if runner.which("apt-get") and runner.which("dpkg-query"):
        return Apt(runner, lock_timeout)
    if runner.which("dnf") and runner.which("rpm"):
        return Dnf(runner, lock_timeout)
    raise PackageError("neither apt-get nor dnf found on the target")


def apply_plan(backend, paths, plan, check_mode):
    """Run the transaction of ``plan`` (after waiting for the lock). Returns the argv lists run
    (or that would run in check mode)."""
    cmds = []
    if plan["install"]:
        cmds.append(backend.install_argv(plan))
    if plan["remove"]:
        cmds.append(backend.remove_argv(plan["remove"]))
    if not cmds or check_mode:
        return cmds
    wait_for_locks(paths, [getattr(paths, n) for n in backend.lock_names], backend.lock_timeout)
    for argv in cmds:
        try:
            backend.runner.run(argv, mutates=True, environ=backend.environ)
        except CommandError as exc:
            raise PackageError("package transaction failed: %s" % exc, **exc.to_fail_kwargs())
    return cmds
