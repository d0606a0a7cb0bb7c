# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A fake GPU host for the mofed / nvidia_fs module tests (not collected by pytest).

The host is a directory tree (HostPaths re-rooted through GPUDIRECT_HOST_ROOT/PROC_ROOT) plus
an in-memory package database, DKMS state and loaded-module table. ``run_command`` answers
dpkg-query / apt-cache / apt-get / rpm / dnf / dkms / modprobe / ofed_info / modinfo / mokutil
in their real output formats and records every argv, so tests can assert that check mode ran
no mutating command and that a failed preflight left the tree and the package db unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from unittest import mock

from ansible.module_utils import basic

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostpaths as _hostpaths
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module

KVER = "6.8.0-86-generic"
OPEN_580 = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
            "(dvs-builder@U22-I3-B17-02-5)  Tue Sep 23 09:55:41 UTC 2025\n")
PROPRIETARY_570 = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  Wed Jan 22 2025\n"
MUTATING = {("apt-get", "install"), ("apt-get", "remove"), ("apt-get", "update"), ("dnf", "install"),
            ("dnf", "remove"), ("dnf", "makecache"), ("dkms", "build"), ("dkms", "install"), ("modprobe", None)}


class FakeHost(object):
    def __init__(self, tmp_path, monkeypatch, family="apt"):
        self.root = tmp_path / "host"
        self.proc = tmp_path / "proc-root"
        self.family = family
        self.installed = {}
        self.available = {}
        self.dkms = {}          # (module, version) -> {kernel: state}
        self.calls = []
        self.fail = {}          # command word -> (rc, stdout, stderr)
        self.ofed_info = None
        self.mok_enrolled = set()
        self.postinst_dkms = True
        self.missing = set(["dnf", "rpm"] if family == "apt" else ["apt-get", "dpkg-query"])
        # a test host: the GPUDIRECT_* seams are honoured, as on a lab host with the lab marker
        marker = tmp_path / "lab-test-seams"
        marker.write_text("FakeHost\n")
        marker.chmod(0o644)
        monkeypatch.setattr(_hostpaths, "LAB_MARKER", str(marker))
        monkeypatch.setattr(_hostpaths, "_MARKER_UID", os.stat(str(marker)).st_uid)
        monkeypatch.setenv("GPUDIRECT_HOST_ROOT", str(self.root))
        monkeypatch.setenv("GPUDIRECT_PROC_ROOT", str(self.proc))
        monkeypatch.delenv("GPUDIRECT_BIN_DIR", raising=False)
        self.write("etc/os-release", 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n')
        self.write_proc("proc/sys/kernel/osrelease", KVER + "\n")
        self.write_proc("proc/driver/nvidia/version", OPEN_580)
        self.write_proc("proc/modules", "nvidia 8822784 43 nvidia_uvm, Live 0x0000000000000000 (OE)\n")
        self.write_proc("proc/locks", "")
        (self.root / "lib/modules" / KVER / "build").mkdir(parents=True)
        (self.root / "var/lib/dpkg").mkdir(parents=True)

    # ---------------------------------------------------------------- tree
    def write(self, rel, text):
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    def write_proc(self, rel, text):
        p = self.proc / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return p

    def read(self, rel):
        p = self.root / rel
        return p.read_text() if p.exists() else None

    def snapshot(self):
        """Every file of both trees (hash) + package db + dkms + loaded modules."""
        files = {}
        for base in (self.root, self.proc):
            for d, _dirs, names in os.walk(str(base)):
                for n in names:
                    p = os.path.join(d, n)
                    if os.path.islink(p):
                        files[p] = "link:" + os.readlink(p)
                    else:
                        with open(p, "rb") as f:
                            files[p] = hashlib.sha256(f.read()).hexdigest()
        return {"files": files, "installed": dict(self.installed),
                "dkms": dict((k, dict(v)) for k, v in self.dkms.items())}

    def mutating_calls(self):
        out = []
        for argv, _env in self.calls:
            word = os.path.basename(argv[0])
            sub = argv[1] if len(argv) > 1 else None
            if (word, sub) in MUTATING or (word == "modprobe"):
                out.append(argv)
        return out

    def argvs(self, word):
        return [a for a, _e in self.calls if os.path.basename(a[0]) == word]

    # ---------------------------------------------------------------- commands
    def get_bin_path(self, name, required=False, opt_dirs=None):
        return None if name in self.missing else "/usr/bin/" + name

    def run_command(self, args, **kw):
        argv = [str(a) for a in args]
        self.calls.append((argv, dict(kw.get("environ_update") or {})))
        word = os.path.basename(argv[0])
        rest = argv[1:]
        key = word + (" " + rest[0] if rest else "")
        if key in self.fail:
            return self.fail[key]
        handler = getattr(self, "cmd_" + word.replace("-", "_"), None)
        if handler is None:
            return 127, "", "%s: command not found" % word
        return handler(rest)

    def cmd_dpkg_query(self, rest):
        names = [a for a in rest if not a.startswith("-")]
        out = "".join("%s\t%s\tinstalled\n" % (n, self.installed[n]) for n in names if n in self.installed)
        err = "".join("dpkg-query: no packages found matching %s\n" % n for n in names if n not in self.installed)
        return (1 if err else 0), out, err

    def cmd_apt_cache(self, rest):
        out = []
        for n in rest[1:]:
            vers = sorted(set(self.available.get(n, [])) | (set([self.installed[n]]) if n in self.installed else set()),
                          key=_vkey, reverse=True)
            if not vers:
                continue
            out.append("%s:\n  Installed: %s\n  Candidate: %s\n  Version table:\n" % (
                n, self.installed.get(n, "(none)"), vers[0]))
            for v in vers:
                mark = " *** " if self.installed.get(n) == v else "     "
                out.append("%s%s 500\n        500 file:/srv/repo ./ Packages\n" % (mark, v))
                if mark.strip():
                    out.append("        100 /var/lib/dpkg/status\n")
        return 0, "".join(out), ""

    def _install(self, pairs):
        for n, v in pairs:
            if v not in self.available.get(n, []) and self.installed.get(n) != v:
                return 100, "", "E: Version '%s' for '%s' was not found\n" % (v, n)
        for n, v in pairs:
            self.installed[n] = v
            if n == "nvidia-fs-dkms" and self.postinst_dkms:
                dver = v.split("-")[0]
                for key in [k for k in self.dkms if k[0] == "nvidia-fs"]:
                    del self.dkms[key]
                self.dkms[("nvidia-fs", dver)] = {KVER: "installed"}
            if n.startswith(("doca-", "mlnx-ofed-")) and self.ofed_version_for:
                self.ofed_info = self.ofed_version_for(n, v)
        return 0, "installed\n", ""

    ofed_version_for = None

    def cmd_apt_get(self, rest):
        verb = rest[0]
        pkgs = [a for a in rest[1:] if not a.startswith("-") and "::" not in a and "Lock" not in a]
        if verb == "install":
            return self._install([p.split("=", 1) for p in pkgs])
        if verb == "remove":
            for p in pkgs:
                self.installed.pop(p, None)
                if p == "nvidia-fs-dkms":
                    for key in [k for k in self.dkms if k[0] == "nvidia-fs"]:
                        del self.dkms[key]
            return 0, "", ""
        if verb == "update":  # fetch each configured source's index into /var/lib/apt/lists
            return self._apt_update()
        return 0, "", ""

    def _apt_update(self):
        sources = self.root / "etc/apt/sources.list.d"
        lists = self.root / "var/lib/apt/lists"
        lists.mkdir(parents=True, exist_ok=True)
        for src in sorted(sources.glob("*.sources")) if sources.is_dir() else []:
            for line in src.read_text().splitlines():
                if line.startswith("URIs: "):
                    name = line[6:].split(":", 1)[-1].strip("/").replace("/", "_") + "_._Packages"
                    (lists / name).write_text("Package: from %s\n" % line[6:])
        return 0, "", ""

    def cmd_rpm(self, rest):
        names = [a for a in rest if not a.startswith("-")]
        lines = ["%s-%s.x86_64" % (n, self.installed[n]) if n in self.installed
                 else "package %s is not installed" % n for n in names]
        return sum(1 for n in names if n not in self.installed), "\n".join(lines) + "\n", ""

    def cmd_dnf(self, rest):
        if rest[:2] == ["-q", "repoquery"]:
            names = [a for a in rest if not a.startswith("-") and "%" not in a][1:]
            return 0, "".join("%s\t%s\n" % (n, v) for n in names for v in self.available.get(n, [])), ""
        if rest[0] == "install":
            pairs = []
            for spec in [a for a in rest[1:] if not a.startswith("-")]:
                for n in sorted(self.available, key=len, reverse=True):
                    if spec.startswith(n + "-"):
                        pairs.append((n, spec[len(n) + 1:]))
                        break
            return self._install(pairs)
        return 0, "", ""

    def cmd_dkms(self, rest):
        verb = rest[0]
        if verb == "status":
            lines = []
            for (m, v), kernels in sorted(self.dkms.items()):
                for k, st in sorted(kernels.items()):
                    lines.append("%s/%s, %s, x86_64: %s" % (m, v, k, st) if k else "%s/%s: %s" % (m, v, st))
            return 0, "\n".join(lines) + ("\n" if lines else ""), ""
        m = rest[rest.index("-m") + 1]
        v = rest[rest.index("-v") + 1]
        k = rest[rest.index("-k") + 1]
        self.dkms.setdefault((m, v), {})[k] = "built" if verb == "build" else "installed"
        if verb == "build":  # DKMS keeps the make.log of a successful build per kernel/arch
            drv = (self.proc / "proc/driver/nvidia/version").read_text().split("  ")[1].strip()
            self.write("var/lib/dkms/%s/%s/%s/x86_64/log/make.log" % (m, v, k),
                       "Picking NVIDIA driver sources from NVIDIA_SRC_DIR=/usr/src/nvidia-%s/nvidia.\n" % drv)
        return 0, "", ""

    def cmd_modprobe(self, rest):
        mods = self.proc / "proc/modules"
        lines = [ln for ln in mods.read_text().splitlines() if not ln.startswith("nvidia_fs ")]
        sysd = self.proc / "sys/module/nvidia_fs"
        if rest[0] == "-r":
            mods.write_text("".join(ln + "\n" for ln in lines))
            if sysd.exists():
                for p in sorted(sysd.rglob("*"), reverse=True):
                    p.unlink() if p.is_file() else p.rmdir()
                sysd.rmdir()
            return 0, "", ""
        lines.insert(0, "nvidia_fs 323584 0 - Live 0x0000000000000000 (OE)")
        mods.write_text("".join(ln + "\n" for ln in lines))
        (sysd / "parameters").mkdir(parents=True, exist_ok=True)
        ver = [v for (m, v) in self.dkms if m == "nvidia-fs"]
        (sysd / "version").write_text((ver[0] if ver else "0") + "\n")
        (sysd / "parameters" / "rw_stats_enabled").write_text("0\n")
        for kv in rest[1:]:
            k, _sep, v = kv.partition("=")
            (sysd / "parameters" / k).write_text(v + "\n")
        return 0, "", ""

    def cmd_ofed_info(self, rest):
        return (0, self.ofed_info + "\n", "") if self.ofed_info else (127, "", "not found")

    def cmd_modinfo(self, rest):
        return 1, "", "modinfo: ERROR: Module nvidia not found.\n"

    def cmd_mokutil(self, rest):
        cert = rest[-1]
        if cert in self.mok_enrolled:
            return 0, "%s is already enrolled\n" % cert, ""
        return 1, "%s is not enrolled\n" % cert, ""

    # ---------------------------------------------------------------- run
    @contextlib.contextmanager
    def patched(self):
        with mock.patch.object(basic.AnsibleModule, "run_command", lambda _m, a, **kw: self.run_command(a, **kw)), \
                mock.patch.object(basic.AnsibleModule, "get_bin_path",
                                  lambda _m, name, required=False, opt_dirs=None: self.get_bin_path(name)):
            yield

    def run(self, main, args, check_mode=False, diff=False):
        self.calls = []
        with self.patched():
            return run_module(main, args, check_mode=check_mode, diff=diff)


def _vkey(v):
    import re
    return [int(x) if x.isdigit() else x for x in re.split(r"[.\-~+:]", v)]
