# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The reliability and security suite (issue 10): its pytest summary and the lab helpers its
tests share. Registered from tests/system/conftest.py (``from _reliability import pytest_configure``).

Summary: tests marked ``@pytest.mark.reliability_fault("what")`` count as injected faults
(survived = passed); tests anywhere in the session report bad inputs and check-mode results with
``record_property("reliability_bad_inputs", {"tried": n, "rejected": n, "written": n})`` and
``record_property("reliability_checkmode", {"runs": n, "hosts": n, "changed": n})``. The GPU Operator
CrashLoopBackOff fault is the gpu_operator integration test (counted, not duplicated).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import stat
import subprocess
import time

__all__ = ["pytest_configure"]

STATE_ROOT = "/var/lib/gpudirect-lab"
# Tests of other files that inject a fault this suite counts (nodeid prefix -> fault).
EXTERNAL_FAULTS = {
    "tests/integration/gpu_operator/test_gpu_operator.py::test_lifecycle":
        "nvidia-fs-ctr CrashLoopBackOff: fail naming node + reason, roll back (gpu_operator integration test)",
}
CUFILE_FUZZ = "tests/unit/plugins/module_utils/test__cufile_validate_bad.py::"


# --------------------------------------------------------------------------- pytest plugin
class _Tally(object):
    def __init__(self):
        self.faults = {}        # nodeid -> [name, outcome]
        self.bad = {"tried": 0, "rejected": 0, "written": 0, "tests": 0}
        self.cufile_fuzz = {"passed": 0, "failed": 0}
        self.checkmode = {"runs": 0, "hosts": 0, "changed": 0}


_TALLY = _Tally()


def pytest_configure(config):
    """Register the summary as a session-wide plugin: a conftest's own runtest hooks only see
    the tests under its directory, and the suite counts tests of tests/unit and tests/integration."""
    config.addinivalue_line("markers", "reliability_fault(name): a fault the reliability suite injects (issue 10)")
    if not config.pluginmanager.has_plugin("gpudirect-reliability-summary"):
        config.pluginmanager.register(SummaryPlugin(), "gpudirect-reliability-summary")


class SummaryPlugin(object):
    @staticmethod
    def pytest_collection_finish(session):
        for item in session.items:
            mark = item.get_closest_marker("reliability_fault")
            name = mark.args[0] if mark else None
            for prefix, fault in EXTERNAL_FAULTS.items():
                if item.nodeid.startswith(prefix):
                    callspec = getattr(item, "callspec", None)
                    name = fault + (" [helm %s]" % callspec.id if callspec else "")
            if name:
                _TALLY.faults[item.nodeid] = [name, "not run"]

    @staticmethod
    def pytest_runtest_logreport(report):
        entry = _TALLY.faults.get(report.nodeid)
        if entry is not None:
            if report.failed:
                entry[1] = "failed"
            elif report.skipped and entry[1] == "not run":
                entry[1] = "skipped"
            elif report.when == "call" and report.passed and entry[1] == "not run":
                entry[1] = "passed"
        if report.when == "call" and report.nodeid.startswith(CUFILE_FUZZ):
            _TALLY.cufile_fuzz["passed" if report.passed else "failed"] += 1
        if report.when != "call":
            return
        for key, value in getattr(report, "user_properties", ()):
            if key == "reliability_bad_inputs":
                _TALLY.bad["tests"] += 1
                for k in ("tried", "rejected", "written"):
                    _TALLY.bad[k] += int(value.get(k, 0))
            elif key == "reliability_checkmode":
                _TALLY.checkmode["runs"] += int(value.get("runs", 1))
                _TALLY.checkmode["hosts"] += int(value.get("hosts", 0))
                _TALLY.checkmode["changed"] += int(value.get("changed", 0))

    @staticmethod
    def pytest_terminal_summary(terminalreporter):
        _summary(terminalreporter)


def _summary(tr):
    t = _TALLY
    if not t.faults and not t.bad["tests"] and not t.checkmode["runs"] and not sum(t.cufile_fuzz.values()):
        return
    tr.section("reliability and security suite (issue 10)")
    injected = [f for f in t.faults.values() if f[1] in ("passed", "failed")]
    survived = [f for f in t.faults.values() if f[1] == "passed"]
    tr.write_line("faults injected: %d, survived: %d" % (len(injected), len(survived)))
    for name, outcome in sorted(t.faults.values()):
        tr.write_line("  %-8s %s" % ({"passed": "survived"}.get(outcome, outcome), name))
    seen = " ".join(name for name, _outcome in t.faults.values())
    for prefix, name in sorted(EXTERNAL_FAULTS.items()):
        if name not in seen:
            tr.write_line("  %-8s %s [not in this session: %s]" % ("not run", name, prefix.split("::")[0]))
    tr.write_line("bad inputs tried: %d, rejected: %d, written: %d (must be 0) [%d fuzz tests]"
                  % (t.bad["tried"], t.bad["rejected"], t.bad["written"], t.bad["tests"]))
    if sum(t.cufile_fuzz.values()):
        tr.write_line("cufile.json bad-input tests (cufile_config suite): %d passed, %d failed"
                      % (t.cufile_fuzz["passed"], t.cufile_fuzz["failed"]))
    tr.write_line("hosts changed in check mode: %d (must be 0) over %d site.yml --check runs, %d host checks"
                  % (t.checkmode["changed"], t.checkmode["runs"], t.checkmode["hosts"]))


# --------------------------------------------------------------------------- lab access
def lab_state(name):
    with open(os.path.join(STATE_ROOT, name, "state.json")) as f:
        return json.load(f)


def host_info(lab_name, host):
    return next(h for h in lab_state(lab_name)["hosts"] if h["name"] == host)


def host_root(lab_name, host):
    """The host's root file system as the controller sees it (the overlay's merged dir)."""
    return host_info(lab_name, host)["merged"]


def init_pid(lab_name, host):
    """PID (controller namespace) of the host's systemd: the child of its systemd-nspawn."""
    nspawn = host_info(lab_name, host)["pid"]
    with open("/proc/%d/task/%d/children" % (nspawn, nspawn)) as f:
        return int(f.read().split()[0])


def in_host(lab_name, host, argv, check=True, timeout=60, **kw):
    """Run argv inside the host (all its namespaces) from the controller."""
    res = subprocess.run(["nsenter", "-t", str(init_pid(lab_name, host)), "-a"] + list(argv), check=False,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout, **kw)
    if check:
        assert res.returncode == 0, "%s on %s -> rc=%d\n%s" % (argv, host, res.returncode, res.stdout[-3000:])
    return res


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for tid in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, tid)) as f:
                    kids = [int(x) for x in f.read().split()]
                out += kids
                todo += kids
        except (IOError, OSError):
            continue
    return out


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except (IOError, OSError):
        return ""


def cut_ssh(lab_name, host):
    """Make ``host`` unreachable: stop its sshd (no restart) and end every sshd session by PID,
    so Ansible's ControlMaster connection breaks and new connections are refused."""
    in_host(lab_name, host, ["systemctl", "stop", "ssh.service"])
    pids = [p for p in descendants(init_pid(lab_name, host)) if comm(p) == "sshd"]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return pids


def restore_ssh(lab_name, host):
    in_host(lab_name, host, ["systemctl", "start", "ssh.service"])


# --------------------------------------------------------------------------- host snapshots
# What check mode must leave alone on a lab host: /etc, the package database and apt's lists,
# the fake /proc + /sys tree (module state), the DKMS tree, installed sources and modules, and
# the shim call logs (read-only calls excepted, see snapshot_changes).
SNAPSHOT_TREES = ("etc", "var/lib/dpkg/status", "var/lib/dpkg/info", "var/lib/apt/lists", "srv/gds-fake",
                  "var/lib/dkms", "usr/src", "lib/modules", "opt/gds-shims", "var/log/gds-shims")
SHIM_LOGS = "var/log/gds-shims/"
READ_ONLY_SHIM_CALLS = re.compile(r"^(dkms status( |$)|modprobe (-n|--dry-run|--show-depends) )")
SKIP = re.compile(r"^var/lib/apt/lists/(lock|partial)(/|$)")


def _walk(root, rel):
    top = os.path.join(root, rel)
    if not os.path.lexists(top):
        yield rel, None
        return
    if os.path.isdir(top) and not os.path.islink(top):
        for d, dirs, files in os.walk(top):
            dirs.sort()
            for n in sorted(dirs + files):
                p = os.path.join(d, n)
                yield os.path.relpath(p, root), p
    else:
        yield rel, top


def snapshot(root, trees=SNAPSHOT_TREES):
    """{relative path: "mode:uid:gid:sha256|->target"} of every entry under ``trees``; shim logs
    keep their lines so that read-only calls can be told apart."""
    out = {}
    for rel in trees:
        for key, path in _walk(root, rel):
            if SKIP.match(key):
                continue
            if path is None:
                out[key] = "absent"
                continue
            st = os.lstat(path)
            meta = "%o:%d:%d" % (st.st_mode, st.st_uid, st.st_gid)
            if stat.S_ISLNK(st.st_mode):
                out[key] = meta + ":->" + os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    data = f.read()
                out[key] = (meta, data.decode("utf-8", "replace").splitlines()) if key.startswith(SHIM_LOGS) \
                    else meta + ":" + hashlib.sha256(data).hexdigest()
            else:
                out[key] = meta
    return out


def snapshot_changes(before, after):
    """Paths that differ. A shim log may only have grown by read-only calls (``dkms status``)."""
    changed = []
    for key in sorted(set(before) | set(after)):
        a, b = before.get(key, "absent"), after.get(key, "absent")
        if a == b:
            continue
        if key.startswith(SHIM_LOGS) or key.rstrip("/") + "/" == SHIM_LOGS:
            lines_a = a[1] if isinstance(a, tuple) else []
            lines_b = b[1] if isinstance(b, tuple) else []
            if lines_b[:len(lines_a)] == lines_a and all(READ_ONLY_SHIM_CALLS.match(ln) for ln in lines_b[len(lines_a):]):
                continue
            if key.rstrip("/") + "/" == SHIM_LOGS and a == "absent" and not isinstance(b, tuple):
                continue  # the log directory itself, created by a read-only call
        changed.append(key)
    return changed


def fleet_snapshot(lab):
    return dict((h["name"], snapshot(host_root(lab.name, h["name"]))) for h in lab.hosts)


# --------------------------------------------------------------------------- ansible output
RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)"
                   r"\s+rescued=(\d+)\s+ignored=(\d+)", re.M)
RESULT = re.compile(r"^(ok|changed|fatal|skipping): \[([^\]]+)\]", re.M)


def parse_recap(text):
    keys = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
    return dict((m.group(1), dict(zip(keys, (int(x) for x in m.groups()[1:])))) for m in RECAP.finditer(text))


def task_results(text):
    """[(task header, status, host, result dict or None)] from default-callback output with
    ANSIBLE_CALLBACK_RESULT_FORMAT=json."""
    out, task = [], None
    decoder = json.JSONDecoder()
    for line in text.splitlines():
        if line.startswith("TASK [") or line.startswith("RUNNING HANDLER ["):
            task = line[line.index("[") + 1:line.rindex("]")]
            continue
        m = RESULT.match(line)
        if not m:
            continue
        data = None
        if "=> {" in line:
            try:
                data = decoder.raw_decode(line[line.index("=> {") + 3:])[0]
            except ValueError:
                data = None
        out.append((task, m.group(1), m.group(2), data))
    return out


def fatal(text, host):
    """The result dicts of the host's failed / unreachable tasks."""
    return [(task, data or {}) for task, status, h, data in task_results(text) if status == "fatal" and h == host]


# --------------------------------------------------------------------------- playbook runs
def ansible_env(report_dir=None, extra=None):
    from conftest import ROOT, VENV_BIN
    env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
               ANSIBLE_CONFIG=os.path.join(ROOT, "lab", "ansible.cfg"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", PYTHONUNBUFFERED="1")
    if report_dir:
        env["GDS_REPORT_DIR"] = str(report_dir)
    env.update(extra or {})
    return env


class Playbook(object):
    """ansible-playbook in the background: ``wait_for`` a line, then ``finish``."""

    def __init__(self, lab, playbook, args=(), report_dir=None, env=None, log=None):
        from conftest import ROOT, VENV_BIN
        self.log = log or os.path.join(os.path.dirname(lab.inventory), "playbook-%d.log" % time.time())
        self._out = open(self.log, "w")
        argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", lab.inventory, os.path.join(ROOT, playbook)]
        self.proc = subprocess.Popen(argv + list(args), cwd=ROOT, env=ansible_env(report_dir, env),
                                     stdout=self._out, stderr=subprocess.STDOUT, start_new_session=True)

    def text(self):
        with open(self.log) as f:
            return f.read()

    def wait_until(self, predicate, timeout=180):
        """Wait until ``predicate(output so far)`` is true; returns the output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.text()
            if predicate(text):
                return text
            if self.proc.poll() is not None:
                raise AssertionError("ansible-playbook ended (rc=%s) before the awaited point:\n%s"
                                     % (self.proc.returncode, text[-4000:]))
            time.sleep(0.1)
        raise AssertionError("the awaited point did not come within %ss:\n%s" % (timeout, self.text()[-4000:]))

    def finish(self, timeout=600):
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)  # the process group this object started
                self.proc.wait()
            self._out.close()
        return self.proc.returncode, self.text()


def playbook(lab, path, *args, **kw):
    """Run a playbook to the end: (rc, output)."""
    return Playbook(lab, path, args, report_dir=kw.pop("report_dir", None), env=kw.pop("env", None)).finish(
        timeout=kw.pop("timeout", 600))


def prepared_lab(stem, n, tmpdir):
    """A lab (conftest.Lab) made to look like GPU hosts by lab/prepare.yml. Its name is ``stem``
    plus this process's id, so that two test sessions on one machine never share a lab."""
    from conftest import LABCTL, Lab, run
    name = "%s-%d" % (stem, os.getpid())
    try:
        lab = Lab(name, n, tmpdir)
    except BaseException:
        run([LABCTL, "down", "--name", name], check=False)  # a half-started lab
        raise
    try:
        rc, out = playbook(lab, "lab/prepare.yml")
        assert rc == 0, out[-4000:]
    except BaseException:
        lab.down()
        raise
    return lab
