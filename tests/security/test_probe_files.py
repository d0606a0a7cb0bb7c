# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The probe's file in the probe directory, attacked and interrupted.

gds_facts runs for real (collectors, preflight, the probe child) against the C stand-ins of
libcuda/libcufile (tests/fixtures/cuda_standin), so the child really creates, writes, reads and
removes its file. Attacks: a second, unprivileged user who can write the probe directory.
Interruptions: the probe's timeout, SIGKILL of the child, SIGKILL of the module; each ends with
nothing left in the probe directory (``bytes_left``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

import ansible_collections
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_facts import gather
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner
from ansible_collections.gpudirect.storage.tests.fixtures.cuda_standin import standin
from controller_users import local_user

pytestmark = [pytest.mark.skipif(standin.gcc() is None, reason="needs a C compiler for the libcufile stand-in"),
              pytest.mark.skipif(os.geteuid() != 0, reason="a second user and root's files need root")]
MIB = 1 << 20
PREFIX = ".gds_facts_probe."


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return standin.build(str(tmp_path_factory.mktemp("standin")))


@pytest.fixture
def shared(tmp_path):
    """A directory another user can reach (pytest's tmp_path is 0700), removed afterwards."""
    base = tempfile.mkdtemp(prefix="gds-probe-files-", dir="/var/tmp")
    os.chmod(base, 0o755)
    yield base
    subprocess.run(["rm", "-rf", "--one-file-system", base], check=False)


def params(path, **kw):
    base = {"probe": True, "probe_path": [path], "probe_size_mb": 8, "probe_threads": 0, "probe_device": 0,
            "probe_timeout": 30, "cufile_lib": None, "cufile_env_path_json": None, "gather_cuda": True}
    base.update(kw)
    return base


def environment(libs, mode=None, **extra):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("GDS_STANDIN_"))
    env["LD_LIBRARY_PATH"] = libs
    if mode:
        env["GDS_STANDIN_CUFILE"] = mode
    env.update(extra)
    return env


def facts_of(tmp_path, libs, probe_dir, mode=None, env_extra=None, **kw):
    host, proc = standin.fake_host(str(tmp_path))
    env = environment(libs, mode, **(env_extra or {}))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return gather(params(probe_dir, **kw), HostPaths(root=host, proc_root=proc), Runner(standin.SubprocessModule(env)),
                  environ=env, tmp_root=str(work), python=sys.executable)


def left_in(directory):
    """(bytes in regular files, every entry) under ``directory``, symlinks not followed."""
    size, entries = 0, []
    for root, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(root, name)
            entries.append(os.path.relpath(path, directory))
            st = os.lstat(path)
            if not os.path.islink(path) and os.path.isfile(path):
                size += st.st_size
    return size, sorted(entries)


def sha(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def dead_pid():
    with open("/proc/sys/kernel/pid_max") as f:
        pid = int(f.read()) - 1
    while os.path.exists("/proc/%d" % pid):
        pid -= 1
    return pid


# -- attacks --------------------------------------------------------------------------------------

SWAPPER = r'''
import os, sys, time
probe_dir, target, stop = sys.argv[1:4]
swapped = set()
end = time.time() + 60
while time.time() < end and not os.path.exists(stop):
    for name in os.listdir(probe_dir):
        if not name.startswith(".gds_facts_probe.") or name.endswith(".moved") or name in swapped:
            continue
        path = os.path.join(probe_dir, name)
        try:
            os.rename(path, path + ".moved")
            os.symlink(target, path)
            swapped.add(name)
        except OSError:
            pass
print(len(swapped))
'''


@pytest.mark.attack
def test_probe_file_swapped_for_a_symlink_to_roots_file(tmp_path, libs, shared):
    """Another user can write the probe directory (0777, no sticky bit) and swaps each probe
    entry for a symlink to a root-owned 0600 file while the probe runs: root's file stays as it
    was, and the probe refuses the directory, naming it and its mode, before writing anything."""
    probe_dir = os.path.join(shared, "data")
    os.mkdir(probe_dir)
    os.chmod(probe_dir, 0o777)
    secret = os.path.join(shared, "root-secret")
    with open(secret, "wb") as f:
        f.write(b"root only\n" * (4 * MIB))  # longer than the probe: a read of it would not stop short
    os.chmod(secret, 0o600)
    before = sha(secret)
    stop = os.path.join(shared, "stop")
    with local_user("gdsprobeattacker") as user:
        attacker = subprocess.Popen(
            ["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--clear-groups",
             "/usr/bin/python3", "-I", "-c", SWAPPER, probe_dir, secret, stop],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
        try:
            time.sleep(0.3)  # the attacker is watching
            facts = facts_of(tmp_path, libs, probe_dir, probe_size_mb=32)
        finally:
            open(stop, "w").close()
            out, err = attacker.communicate(timeout=30)
    assert sha(secret) == before, "root's file was overwritten through the swapped probe file"
    assert os.stat(secret).st_uid == 0 and oct(os.stat(secret).st_mode & 0o777) == "0o600"
    assert facts["mode"] == "failed", facts["reason"]
    assert probe_dir in facts["reason"] and "0777" in facts["reason"] and "sticky" in facts["reason"]
    assert facts["probe"]["paths"][0]["error"]["step"] == "preflight"
    assert left_in(probe_dir) == (0, []), "written into a refused directory (attacker swapped %s)" % out.strip()


PLANTER = r'''
import os, sys
probe_dir, secret, root_dir, pid = sys.argv[1:5]
link_file = os.path.join(probe_dir, ".gds_facts_probe.%s.aaaa" % pid)
link_dir = os.path.join(probe_dir, ".gds_facts_probe.%s.bbbb" % pid)
own_dir = os.path.join(probe_dir, ".gds_facts_probe.%s.cccc" % pid)
os.symlink(secret, link_file)
os.symlink(root_dir, link_dir)
os.mkdir(own_dir)
os.symlink(secret, os.path.join(own_dir, "probe"))
'''


@pytest.mark.attack
def test_sweep_of_dead_runs_never_follows_another_users_entries(tmp_path, libs, shared):
    """In a sticky world-writable directory (allowed, like /var/tmp), another user plants entries
    named like a dead run's leftovers: symlinks to root's file and to a root directory, and a
    directory of their own. The run's sweep of dead runs removes none of them and touches
    nothing they point at; the probe itself runs."""
    probe_dir = os.path.join(shared, "scratch")
    os.mkdir(probe_dir)
    os.chmod(probe_dir, 0o1777)
    secret = os.path.join(shared, "root-secret")
    with open(secret, "wb") as f:
        f.write(b"root only\n" * 1000)
    os.chmod(secret, 0o600)
    root_dir = os.path.join(shared, "root-dir")
    os.mkdir(root_dir)
    with open(os.path.join(root_dir, "keep"), "w") as f:
        f.write("keep\n")
    before = sha(secret)
    with local_user("gdsprobeattacker") as user:
        res = subprocess.run(["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--clear-groups",
                              "/usr/bin/python3", "-I", "-c", PLANTER, probe_dir, secret, root_dir, str(dead_pid())],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/", check=False)
        assert res.returncode == 0, res.stderr
        planted = left_in(probe_dir)[1]
        facts = facts_of(tmp_path, libs, probe_dir)
        assert facts["mode"] == "compat" and facts["verified"], facts["reason"]
        assert sha(secret) == before and os.path.exists(os.path.join(root_dir, "keep"))
        assert left_in(probe_dir)[1] == planted  # another user's entries are not ours to remove


# -- interruptions --------------------------------------------------------------------------------

MODULE = r'''
import json, os, sys
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_facts import gather
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner
from ansible_collections.gpudirect.storage.tests.fixtures.cuda_standin import standin
params, host, proc, work = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
facts = gather(params, HostPaths(root=host, proc_root=proc), Runner(standin.SubprocessModule(os.environ)),
               environ=os.environ, tmp_root=work, python=sys.executable)
print(json.dumps(facts))
'''


def start_module(tmp_path, libs, probe_dir, mark, **kw):
    """gds_facts in a process of its own (the module), its probe stuck in cuFileWrite once the
    data is written (the stand-in's hang_write): returns (module process, probe child pid)."""
    host, proc = standin.fake_host(str(tmp_path))
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    base = os.path.dirname(list(ansible_collections.__path__)[0])
    env = environment(libs, "hang_write", GDS_STANDIN_HANG_MARK=mark, PYTHONPATH=base)
    module = subprocess.Popen([sys.executable, "-c", MODULE, json.dumps(params(probe_dir, **kw)), host, proc, str(work)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 30
    while not os.path.exists(mark):
        assert time.time() < deadline and module.poll() is None, module.communicate()
        time.sleep(0.05)
    return module, children_of(module.pid)[0]


def children_of(pid):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def gone(pid, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def data_dir(tmp_path):
    probe_dir = tmp_path / "data"
    probe_dir.mkdir()
    return str(probe_dir)


@pytest.mark.interruption
def test_timeout_leaves_nothing(tmp_path, libs, record_property):
    probe_dir = data_dir(tmp_path)
    facts = facts_of(tmp_path, libs, probe_dir, mode="hang_write",
                     env_extra={"GDS_STANDIN_HANG_MARK": str(tmp_path / "mark")}, probe_timeout=5)
    assert facts["mode"] == "failed" and facts["probe"]["timed_out"] is True
    assert facts["reasons"][0] == "probe timed out after 5 s during cuFileWrite %s" % probe_dir
    assert os.path.exists(str(tmp_path / "mark"))  # the data was written before the timeout
    size, entries = left_in(probe_dir)
    record_property("bytes_left", size)
    assert (size, entries) == (0, [])


@pytest.mark.interruption
def test_sigkill_of_the_child_leaves_nothing(tmp_path, libs, record_property):
    probe_dir = data_dir(tmp_path)
    module, child = start_module(tmp_path, libs, probe_dir, str(tmp_path / "mark"))
    os.kill(child, signal.SIGKILL)
    out, err = module.communicate(timeout=60)
    facts = json.loads(out)
    assert facts["mode"] == "failed"
    assert facts["reasons"][0] == "probe child killed by SIGKILL during cuFileWrite %s" % probe_dir
    size, entries = left_in(probe_dir)
    record_property("bytes_left", size)
    assert (size, entries) == (0, [])


@pytest.mark.interruption
def test_sigkill_of_the_module_leaves_nothing(tmp_path, libs, record_property):
    """The module dies with no chance to clean up: its child goes with it (no probe runs on
    unowned), the probe file was already unlinked (no bytes stay on the disk), and the next run
    removes the dead run's empty private directory."""
    probe_dir = data_dir(tmp_path)
    module, child = start_module(tmp_path, libs, probe_dir, str(tmp_path / "mark"), probe_timeout=10)
    module.kill()
    module.communicate(timeout=30)
    assert gone(child, 5), "the probe child outlived the module"
    size, _entries = left_in(probe_dir)
    assert size == 0
    facts = facts_of(tmp_path, libs, probe_dir)  # a later run
    assert facts["mode"] == "compat", facts["reason"]
    size, entries = left_in(probe_dir)
    record_property("bytes_left", size)
    assert (size, entries) == (0, [])
