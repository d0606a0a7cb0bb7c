"""Each lab host in a cgroup tree of its own.

systemd-nspawn with --keep-unit --register=no puts a container where its caller runs, so without
this every lab host's systemd manages the SAME <cgroup>/payload/system.slice tree: when one host's
unit finishes, its systemd removes the unit's cgroup while another host is starting the same unit
there ("Failed at step CGROUP spawning ...: No such file or directory") and that host comes up
degraded. Seen on a loaded 2-core machine in about one lab start in ten.

Each host's nspawn therefore starts in <hierarchy>/gpudirect-lab/<lab>/<host>, in every hierarchy
systemd places units by (the unified one, whose path nspawn reads on a hybrid host, and systemd's
named v1 one, which a legacy container's systemd manages); `labctl down` removes the lab's trees
once their processes are gone.
"""

from __future__ import annotations

import errno
import os
import time

TOP = "gpudirect-lab"
# (mount point, a file only that kind of hierarchy has)
CANDIDATES = (("/sys/fs/cgroup", "cgroup.controllers"),          # unified (v2) host
              ("/sys/fs/cgroup/unified", "cgroup.controllers"),  # hybrid host: its v2 part
              ("/sys/fs/cgroup/systemd", "cgroup.procs"))        # legacy or hybrid: systemd's v1 one


def hierarchies():
    return [root for root, marker in CANDIDATES
            if os.path.exists(os.path.join(root, marker)) and os.access(root, os.W_OK)]


def prepare(lab, host, log):
    """Create the host's cgroups; return a function for Popen's preexec_fn that moves the
    starting nspawn into them, or None (the hosts then share their caller's cgroup)."""
    procs = []
    for root in hierarchies():
        path = os.path.join(root, TOP, lab, host)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            log("could not create cgroup %s (%s): lab hosts share a cgroup tree there" % (path, exc))
            continue
        procs.append(os.path.join(path, "cgroup.procs"))
    if not procs:
        log("no writable cgroup hierarchy: lab hosts share one cgroup tree")
        return None

    def enter():
        for path in procs:
            with open(path, "w") as f:
                f.write("0")  # "0": the writing process itself, the child about to exec nspawn

    return enter


def remove(lab, timeout=5.0):
    """Remove the lab's cgroup trees, deepest first (a cgroup whose last process has just exited
    can be busy for a moment); return the directories left."""
    busy = []
    for root in hierarchies():
        top = os.path.join(root, TOP, lab)
        deadline = time.time() + timeout
        while os.path.isdir(top):
            left = []
            for dirpath, dummy_dirs, dummy_files in os.walk(top, topdown=False):
                try:
                    os.rmdir(dirpath)
                except OSError as exc:
                    if exc.errno != errno.ENOENT:
                        left.append(dirpath)
            if not left or time.time() > deadline:
                busy += left
                break
            time.sleep(0.1)
        try:
            os.rmdir(os.path.join(root, TOP))  # the last lab's: gone when empty
        except OSError:
            pass
    return busy


def labs():
    """(lab name, path) of every lab cgroup tree on this machine."""
    found = []
    for root in hierarchies():
        top = os.path.join(root, TOP)
        if os.path.isdir(top):
            found += [(name, os.path.join(top, name)) for name in sorted(os.listdir(top))
                      if os.path.isdir(os.path.join(top, name))]
    return found
