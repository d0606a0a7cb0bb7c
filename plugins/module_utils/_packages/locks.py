# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Waiting for the package manager's lock before a write, up to a bound; then the error names the
process that holds it (from ``/proc/locks``, or a scan of ``/proc/*/fd``). PRIVATE to the
collection."""

from __future__ import annotations

import os
import time

from ansible_collections.gpudirect.storage.plugins.module_utils._packages.apt_dnf import LockHeldError


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
