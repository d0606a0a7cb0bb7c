# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Faults injected into real lab hosts while playbooks/site.yml runs (issue 10).

Each test has its own lab (``fault-<x>``, torn down in ``finally``), injects one fault, checks
that the run fails loudly for that host only, that nothing is left half-configured, and that
the next run, with the fault gone, converges ("survived"). Faults of the GPU Operator (API
unreachable / answering 500s) are in test_faults_k8s.py.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import signal
import subprocess
import threading

import pytest

from _reliability import (Playbook, cut_ssh, fatal, host_root, in_host, init_pid, parse_recap, playbook, prepared_lab,
                          restore_ssh, snapshot, snapshot_changes)
from conftest import APTREPO

NVFS_PACKAGES = ("nvidia-fs-dkms", "nvidia-fs", "libcufile-13-0", "gds-tools-13-0")
KVER = "6.8.0-86-generic"


def _read(lab, host, path):
    p = os.path.join(host_root(lab.name, host), path.lstrip("/"))
    if not os.path.exists(p):
        return None
    with open(p, "rb") as f:
        return f.read().decode("utf-8", "replace")


def _dpkg_status(lab, host):
    """{package: Status} from the host's /var/lib/dpkg/status."""
    out, name = {}, None
    for line in (_read(lab, host, "/var/lib/dpkg/status") or "").splitlines():
        if line.startswith("Package: "):
            name = line.split(": ", 1)[1]
        elif line.startswith("Status: ") and name:
            out[name] = line.split(": ", 1)[1]
    return out


def _nvidia_fs_loaded(lab, host):
    return any(line.startswith("nvidia_fs ") for line in (_read(lab, host, "/srv/gds-fake/proc/modules") or "").splitlines())


def _msg(results):
    return " | ".join(str(data.get("msg", "")) for _task, data in results)


def _report(reports):
    with open(os.path.join(str(reports), "gds-fleet.json")) as f:
        return dict((r["host"], r) for r in json.load(f)["hosts"])


def _extra(**kw):
    return ["-e", json.dumps(kw)]


def _names(lab):
    return [h["name"] for h in lab.hosts]


# --------------------------------------------------------------------------- unreachable
RESULT_LINE = re.compile(r"^(?:ok|changed|skipping): \[([^\]]+)\]", re.M)


def _second_batch(text):
    return "".join(text.split("PLAY [Roll out GPUDirect Storage in batches]")[2:])


@pytest.mark.reliability_fault("host unreachable mid-run (sshd gone): the others finish, the report says why")
def test_host_unreachable_mid_run(tmp_path):
    lab = prepared_lab("fault-net", 3, tmp_path)
    try:
        reports = tmp_path / "reports"
        # batches [2, 1]: the host of the second batch is cut once its nvidia_fs step has started
        run = Playbook(lab, "playbooks/site.yml", _extra(gds_serial=2), report_dir=reports)
        try:
            text = run.wait_until(lambda t: re.search(r"TASK \[gpudirect\.storage\.nvidia_fs : Install, build, load",
                                                      _second_batch(t)))
            victim = RESULT_LINE.search(_second_batch(text)).group(1)
            cut_ssh(lab.name, victim)
        finally:
            rc, out = run.finish()
        first, second = [h for h in _names(lab) if h != victim]
        recap = parse_recap(out)
        assert rc != 0, out[-4000:]
        for host in (first, second):
            assert recap[host]["failed"] == 0 and recap[host]["unreachable"] == 0, (host, recap)
            assert _nvidia_fs_loaded(lab, host) and _read(lab, host, "/etc/cufile.json"), host
        assert recap[victim]["unreachable"] == 1, (recap, out[-4000:])
        report = _report(reports)
        assert sorted(report) == sorted(_names(lab))
        assert report[first]["status"] == "ok" and report[second]["status"] == "ok", report
        assert report[victim]["status"] == "unreachable", report[victim]
        assert re.search(r"ssh|[Cc]onnection", report[victim]["reason"]), report[victim]

        # survived: sshd back, the same site.yml finishes the victim from where it was cut
        restore_ssh(lab.name, victim)
        rc, out = playbook(lab, "playbooks/site.yml", report_dir=reports)
        assert rc == 0, out[-6000:]
        assert _nvidia_fs_loaded(lab, victim) and _read(lab, victim, "/etc/cufile.json")
        assert _report(reports)[victim]["status"] == "ok"
    finally:
        lab.down()


# --------------------------------------------------------------------------- dpkg lock
HOLD_LOCK = ("import fcntl, os, sys, time\n"
             "f = open('/var/lib/dpkg/lock-frontend', 'w')\n"
             "fcntl.lockf(f, fcntl.LOCK_EX)\n"
             "print('locked', os.getpid(), flush=True)\n"
             "time.sleep(600)\n")


@pytest.mark.reliability_fault("dpkg lock held by another process: bounded wait, then a failure naming the holder")
def test_dpkg_lock_held_by_another_process(tmp_path):
    lab = prepared_lab("fault-lock", 2, tmp_path)
    holder = None
    try:
        victim, other = _names(lab)
        holder = subprocess.Popen(["nsenter", "-t", str(init_pid(lab.name, victim)), "-a", "python3", "-c", HOLD_LOCK,
                                   "hold-dpkg-lock"], stdout=subprocess.PIPE, text=True, start_new_session=True)
        line = holder.stdout.readline().split()
        assert line[:1] == ["locked"], line
        holder_pid = int(line[1])  # in the host's PID namespace
        before = snapshot(host_root(lab.name, victim))
        bounded = _extra(gds_serial=2, gds_max_fail_percentage=50, mofed_lock_timeout=3, nvidia_fs_lock_timeout=3)
        rc, out = playbook(lab, "playbooks/site.yml", *bounded)
        assert rc != 0
        failures = fatal(out, victim)
        msg = _msg(failures)
        assert len(failures) == 1 and "gpudirect.storage.mofed" in failures[0][0], out[-4000:]
        assert "/var/lib/dpkg/lock-frontend is held by pid %d" % holder_pid in msg, msg
        assert "hold-dpkg-lock" in msg and "waited 3s (lock_timeout)" in msg and "Nothing was changed" in msg, msg
        assert snapshot_changes(before, snapshot(host_root(lab.name, victim))) == []
        assert parse_recap(out)[other]["failed"] == 0 and _nvidia_fs_loaded(lab, other)

        os.killpg(holder.pid, signal.SIGKILL)  # the holder's process group (nsenter and its child)
        holder.wait()
        holder = None
        rc, out = playbook(lab, "playbooks/site.yml", *_extra(gds_serial=2))
        assert rc == 0, out[-6000:]
        assert _nvidia_fs_loaded(lab, victim)
    finally:
        if holder is not None:
            os.killpg(holder.pid, signal.SIGKILL)
            holder.wait()
        lab.down()


# --------------------------------------------------------------------------- repository gone
class _Gone(Exception):
    pass


class FlakyRepo(object):
    """build/aptrepo over http on the lab gateway (loopback of the lab only). After it served
    ``serve_first`` .deb files matching ``pattern``, the next such request is cut off and the
    server stops listening: the repository disappears in the middle of a download."""

    def __init__(self, address, pattern, serve_first=1):
        self.pattern = re.compile(pattern)
        self.left = serve_first
        self.requests = []
        self.gone = threading.Event()
        repo = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server naming)
                name = self.path.rsplit("/", 1)[-1]
                repo.requests.append(name)
                if repo.pattern.match(name):
                    if repo.left <= 0:
                        repo.gone.set()
                        self.close_connection = True
                        threading.Thread(target=repo.stop, daemon=True).start()
                        return  # no response at all
                    repo.left -= 1
                return http.server.SimpleHTTPRequestHandler.do_GET(self)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(address, functools.partial(Handler, directory=APTREPO))
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def stop(self):
        """Stop serving and close the listening socket: new connections are refused."""
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.reliability_fault("package repository disappears mid-install: clean failure, nothing half-configured")
def test_package_repository_disappears_mid_install(tmp_path):
    lab = prepared_lab("fault-repo", 2, tmp_path)
    repo = None
    try:
        port = 8091
        url = "http://%s:%d/" % (lab.gateway, port)
        repo = FlakyRepo((lab.gateway, port), r"^(nvidia-fs|libcufile|gds-tools)")
        before = dict((h, snapshot(host_root(lab.name, h))) for h in _names(lab))
        reports = tmp_path / "reports"
        rc, out = playbook(lab, "playbooks/site.yml", *_extra(gds_serial=1, lab_repo_url=url), report_dir=reports)
        assert repo.gone.is_set(), repo.requests
        repo.thread.join(10)
        assert rc != 0
        # batches of one: the first host of the rollout (the canary) meets the outage
        failed = [h for h in _names(lab) if fatal(out, h)]
        assert len(failed) == 1, out[-4000:]
        canary, rest = failed[0], [h for h in _names(lab) if h != failed[0]][0]
        failures = fatal(out, canary)
        msg = _msg(failures)
        assert len(failures) == 1 and "gpudirect.storage.nvidia_fs" in failures[0][0], out[-4000:]
        assert "package transaction failed" in msg and "apt-get install" in msg, msg
        assert re.search(r"Failed to fetch http://%s:%d/pool/" % (re.escape(lab.gateway), port), msg), msg
        # nothing half-installed, nothing of the failed step configured
        status = _dpkg_status(lab, canary)
        bad = dict((n, s) for n, s in status.items() if not s.endswith((" installed", " not-installed", " config-files")))
        assert bad == {}, bad
        assert [p for p in NVFS_PACKAGES if p in status] == [], status
        assert in_host(lab.name, canary, ["dpkg", "--audit"]).stdout.strip() == ""
        assert status.get("doca-ofed", "").endswith(" installed")  # the step before it completed
        for path in ("/etc/modules-load.d/nvidia-fs.conf", "/etc/modprobe.d/nvidia-fs.conf", "/etc/cufile.json"):
            assert _read(lab, canary, path) is None, path
        assert not _nvidia_fs_loaded(lab, canary)
        # the canary's failure stopped the rollout: the other host was not touched
        assert snapshot_changes(before[rest], snapshot(host_root(lab.name, rest))) == []
        report = _report(reports)
        assert report[canary]["status"] == "failed" and "package transaction failed" in report[canary]["reason"]

        # survived: the repository is back, the next run converges both hosts
        repo = FlakyRepo((lab.gateway, port), r"^$")
        rc, out = playbook(lab, "playbooks/site.yml", *_extra(gds_serial=1, lab_repo_url=url))
        assert rc == 0, out[-6000:]
        assert all(_nvidia_fs_loaded(lab, h) for h in _names(lab))
    finally:
        if repo is not None:
            repo.stop()
        lab.down()


# --------------------------------------------------------------------------- DKMS build fails
FAILING_DKMS = r"""#!/bin/sh
# Test-only wrapper around the lab's dkms shim (test_faults.py): while /var/lib/gds-fault-dkms exists,
# "dkms build" fails the way DKMS 3 does and leaves a make.log; a successful build records the
# driver it used in make.log, as DKMS does.
set -eu
if [ "${1:-}" = "build" ]; then
  m=""; v=""; k=""
  while [ $# -gt 0 ]; do
    case "$1" in -m) m=$2; shift ;; -v) v=$2; shift ;; -k) k=$2; shift ;; esac
    shift
  done
  drv=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\.[0-9]+\.[0-9]+$/) {print $i; exit}}' \
        "$GPUDIRECT_PROC_ROOT/proc/driver/nvidia/version")
  echo "dkms build -m $m -v $v -k $k" >> /var/log/gds-shims/dkms.calls
  if [ -e /var/lib/gds-fault-dkms ]; then
    mkdir -p "/var/lib/dkms/$m/$v/build"
    cat > "/var/lib/dkms/$m/$v/build/make.log" <<EOF
DKMS make.log for $m-$v for kernel $k (x86_64)
make: Entering directory '/usr/src/linux-headers-$k'
  CC [M]  /var/lib/dkms/$m/$v/build/nvfs-core.o
/var/lib/dkms/$m/$v/build/nvfs-core.c:1123:17: error: implicit declaration of function 'nvidia_p2p_put_pages_persistent' [-Werror=implicit-function-declaration]
cc1: some warnings being treated as errors
make[1]: *** [scripts/Makefile.build:243: /var/lib/dkms/$m/$v/build/nvfs-core.o] Error 1
make: *** [Makefile:1919: /var/lib/dkms/$m/$v/build] Error 2
make: Leaving directory '/usr/src/linux-headers-$k'
EOF
    echo "Error! Bad return status for module build on kernel: $k (x86_64)" >&2
    echo "Consult /var/lib/dkms/$m/$v/build/make.log for more information." >&2
    exit 10
  fi
  mkdir -p "/var/lib/dkms/$m/$v/$k/x86_64/log"
  echo "Picking NVIDIA driver sources from NVIDIA_SRC_DIR=/usr/src/nvidia-$drv/nvidia." \
    > "/var/lib/dkms/$m/$v/$k/x86_64/log/make.log"
  exit 0
fi
exec /opt/gds-shims/dkms.lab "$@"
"""
DRIVER_590 = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  590.44.01  Release Build  (lab)  "
              "Tue Nov 18 09:55:41 UTC 2025\n")


def _write(lab, host, path, text, mode=0o644):
    p = os.path.join(host_root(lab.name, host), path.lstrip("/"))
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(text)
    os.chmod(p, mode)


@pytest.mark.reliability_fault("DKMS build fails: the error carries the make.log tail, the old module stays")
def test_dkms_build_failure_keeps_the_old_module(tmp_path):
    lab = prepared_lab("fault-dkms", 2, tmp_path)
    try:
        victim, other = _names(lab)
        nvfs = _extra(gds_serial=2, gds_max_fail_percentage=50)
        rc, out = playbook(lab, "playbooks/site.yml", *nvfs)
        assert rc == 0, out[-6000:]
        # the driver is upgraded under the built nvidia-fs: it must be rebuilt, and the build fails
        root = host_root(lab.name, victim)
        os.rename(os.path.join(root, "opt/gds-shims/dkms"), os.path.join(root, "opt/gds-shims/dkms.lab"))
        _write(lab, victim, "/opt/gds-shims/dkms", FAILING_DKMS, 0o755)
        _write(lab, victim, "/var/lib/dkms/nvidia-fs/2.28.2/%s/x86_64/log/make.log" % KVER,
               "Picking NVIDIA driver sources from NVIDIA_SRC_DIR=/usr/src/nvidia-580.95.05/nvidia.\n")
        _write(lab, victim, "/srv/gds-fake/proc/driver/nvidia/version", DRIVER_590)
        _write(lab, victim, "/var/lib/gds-fault-dkms", "")
        kept = ("/srv/gds-fake/proc/modules", "/srv/gds-fake/sys/module/nvidia_fs/version",
                "/etc/modules-load.d/nvidia-fs.conf", "/etc/modprobe.d/nvidia-fs.conf", "/var/log/gds-shims/modprobe.calls")
        before = dict((p, _read(lab, victim, p)) for p in kept)
        assert before["/srv/gds-fake/sys/module/nvidia_fs/version"].strip() == "2.28.2"

        rc, out = playbook(lab, "playbooks/site.yml", "--tags", "nvidia_fs", *nvfs)
        assert rc != 0
        failures = fatal(out, victim)
        assert len(failures) == 1 and "gpudirect.storage.nvidia_fs" in failures[0][0], out[-4000:]
        res = failures[0][1]
        assert "dkms build -m nvidia-fs -v 2.28.2 -k %s" % KVER in res["msg"], res["msg"]
        assert "make.log /var/lib/dkms/nvidia-fs/2.28.2/build/make.log ends with" in res["msg"], res["msg"]
        assert "implicit declaration of function 'nvidia_p2p_put_pages_persistent'" in res["msg"]
        assert res["make_log"] == "/var/lib/dkms/nvidia-fs/2.28.2/build/make.log"
        assert res["make_log_tail"].rstrip().endswith("Leaving directory '/usr/src/linux-headers-%s'" % KVER)
        assert dict((p, _read(lab, victim, p)) for p in kept) == before  # old module loaded, nothing unloaded
        assert parse_recap(out)[other]["changed"] == 0 and parse_recap(out)[other]["failed"] == 0

        # survived: the build works again; the next run rebuilds, reloads, and then has nothing to do
        os.unlink(os.path.join(root, "var/lib/gds-fault-dkms"))
        rc, out = playbook(lab, "playbooks/site.yml", "--tags", "nvidia_fs", *nvfs)
        assert rc == 0 and parse_recap(out)[victim]["changed"] >= 1, out[-6000:]
        assert "modprobe -r nvidia_fs" in _read(lab, victim, "/var/log/gds-shims/modprobe.calls")
        rc, out = playbook(lab, "playbooks/site.yml", "--tags", "nvidia_fs", *nvfs)
        assert rc == 0 and parse_recap(out)[victim]["changed"] == 0, out[-6000:]
    finally:
        lab.down()


# --------------------------------------------------------------------------- disk full
@pytest.mark.reliability_fault("disk full while writing cufile.json: clear failure, the old file byte-identical")
def test_disk_full_while_writing_cufile_json(tmp_path):
    lab = prepared_lab("fault-disk", 2, tmp_path)
    try:
        victim, other = _names(lab)
        target = "/srv/gds-cufile/cufile.json"
        for host in _names(lab):  # a tiny file system over the target directory, inside the host
            in_host(lab.name, host, ["mkdir", "-p", "/srv/gds-cufile"])
            in_host(lab.name, host, ["mount", "-t", "tmpfs", "-o", "size=32k,mode=0755", "tmpfs", "/srv/gds-cufile"])
        common = dict(gds_serial=2, gds_max_fail_percentage=50, cufile_path=target)
        rc, out = playbook(lab, "playbooks/site.yml", "--tags", "cufile", *_extra(**common))
        assert rc == 0, out[-6000:]
        in_host(lab.name, victim, ["dd", "if=/dev/zero", "of=/srv/gds-cufile/filler", "bs=4k", "count=64"], check=False)
        # (the tmpfs lives in the host's mount namespace: look at it from inside)
        state = ["sh", "-c", "sha256sum /srv/gds-cufile/cufile.json; ls -A /srv/gds-cufile"]
        before = in_host(lab.name, victim, state).stdout

        change = dict(common, cufile_settings={"properties": {"io_batchsize": 64, "max_direct_io_size_kb": 8192}})
        # with a backup (the role's default) the copy fails first; without one, the write itself
        for extra, words in (({}, "cannot back up %s" % target), ({"cufile_backup": False}, "cannot write %s" % target)):
            rc, out = playbook(lab, "playbooks/site.yml", "--tags", "cufile", *_extra(**dict(change, **extra)))
            assert rc != 0
            failures = fatal(out, victim)
            assert len(failures) == 1 and "gpudirect.storage.cufile" in failures[0][0], out[-4000:]
            msg = _msg(failures)
            assert words in msg and "No space left on device" in msg and "left as it was" in msg, msg
            assert "Traceback" not in out and "exception" not in failures[0][1], msg
            assert in_host(lab.name, victim, state).stdout == before  # same bytes, no temp file, no partial backup
            assert parse_recap(out)[other]["failed"] == 0

        # survived: room again, the same change goes through
        in_host(lab.name, victim, ["rm", "-f", "/srv/gds-cufile/filler"])
        rc, out = playbook(lab, "playbooks/site.yml", "--tags", "cufile", *_extra(**change))
        assert rc == 0 and parse_recap(out)[victim]["changed"] >= 1, out[-6000:]
        assert '"io_batchsize": 64' in in_host(lab.name, victim, ["cat", target]).stdout
    finally:
        lab.down()
