# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Run the cuFile probe (_gds/probe.py) as a child process and read what it left. PRIVATE.

Why ``python -I -S -c <source> <json>`` and not ``-m`` or a file: under AnsiballZ the module
utilities live in a zip (a temp file whose path differs with and without pipelining, and which
``-m`` could only reach through PYTHONPATH and the ``ansible_collections`` namespace
package). The probe's source is read from the loaded module itself (its loader's
``get_source``, else the file), so the child needs nothing but the interpreter the module
runs under; ``-I -S`` keeps the host's PYTHONPATH and site packages out of it. The program is
five files (``PROBE_PARTS``) joined into one source of ~40 KB, below the 128 KiB limit of one
argv string (a unit test keeps it there).

The child runs with its own working directory (libcufile writes cufile.log into the cwd unless
``logging.dir`` is set) and ``CUFILE_LOGFILE_PATH`` pointing there (the variable wins over
``logging.dir``), so its log is found and read afterwards. The timeout is ``signal.alarm`` in
the child: SIGALRM's default action ends it even inside a C call. A child that dies (SIGABRT
from libcufile, the alarm) is reported with its signal, the last step it announced, what it
printed and the log: the module always returns.

The probe's files: the child makes its private directory in each probe path named
``.gds_facts_probe.<module pid>.<random>.<mkdtemp's>`` and unlinks its file as soon as libcufile
has registered it; it dies with the module (PR_SET_PDEATHSIG). After the child, whatever way it
ended, the module removes its own private directories; before it, the private directories and
files of runs whose module is gone (a module killed with SIGKILL cleans nothing up). Both look at
entries with lstat through directory descriptors, remove only this user's regular files and
directories, and never follow a link.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import stat
import sys
import tempfile

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe as _gds_probe
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_io as _gds_probe_io
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_lib as _gds_probe_lib
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_nvml as _gds_probe_nvml
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_tune as _gds_probe_tune

SENTINEL = _gds_probe_lib.SENTINEL
PRIVATE_PREFIX = _gds_probe_lib.PRIVATE_PREFIX
# the probe program's parts, in the order the joined source defines them (main last)
PROBE_PARTS = (_gds_probe_lib, _gds_probe_nvml, _gds_probe_io, _gds_probe_tune, _gds_probe)


def module_source(module):
    """The text of a module, wherever it was imported from (zip or file)."""
    loader = getattr(module, "__loader__", None)
    src = None
    if loader is not None and hasattr(loader, "get_source"):
        try:
            src = loader.get_source(module.__name__)
        except (ImportError, OSError):
            src = None
    if isinstance(src, bytes):  # Ansible's collection loader returns bytes
        src = src.decode("utf-8")
    if not src:
        with open(module.__file__, "r") as f:
            src = f.read()
    return src


def _without_imports_of_parts(src):
    """``src`` without its ``from __future__`` and collection imports (the parts' names are
    globals of the joined program); the lines are blanked so line numbers in a traceback of the
    child still point at the part's own line minus the part's offset."""
    lines = src.split("\n")
    for node in ast.parse(src).body:
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("__future__", "ansible_collections"):
            for i in range(node.lineno - 1, getattr(node, "end_lineno", node.lineno)):
                lines[i] = ""
    return "\n".join(lines)


def probe_source():
    """The probe program: its parts joined into one source (see _gds/probe.py), ``__future__``
    first, the part with ``main`` last."""
    parts = ["from __future__ import annotations"]
    for module in PROBE_PARTS:
        parts.append("# ---- %s\n%s" % (module.__name__.rsplit(".", 1)[-1], _without_imports_of_parts(module_source(module))))
    return "\n".join(parts)


def parse_output(stdout):
    """(result dict or None, last step, error text, libcufile's cuFileGetVersion or None) from
    the child's stdout."""
    result = None
    last_step = None
    problem = None
    version = None
    for line in (stdout or "").splitlines():
        if not line.startswith(SENTINEL + " "):
            continue
        kind, _sep, payload = line[len(SENTINEL) + 1:].partition(" ")
        if kind == "step":
            last_step = payload
        elif kind == "version" and payload.isdigit():
            version = int(payload)
        elif kind == "result":
            try:
                result = json.loads(payload)
            except ValueError as exc:
                problem = "unreadable result line: %s" % exc
    if result is None and problem is None:
        problem = "no result line"
    return result, last_step, problem, version


def signal_name(rc):
    if rc is None or rc >= 0:
        return None
    try:
        return signal.Signals(-rc).name
    except ValueError:
        return "signal %d" % -rc


def read_logs(workdir):
    """cufile.log text(s) the child left in its working directory."""
    texts = []
    for name in sorted(os.listdir(workdir)):
        if name.startswith("cufile") and ".log" in name:
            try:
                with open(os.path.join(workdir, name), "r", errors="replace") as f:
                    texts.append(f.read())
            except (IOError, OSError):
                continue
    return "\n".join(texts)


def _pid_gone(name):
    """True when the module that named the entry ``name`` (its pid follows PRIVATE_PREFIX) is gone."""
    pid = name[len(PRIVATE_PREFIX):].split(".")[0]
    if not pid.isdigit() or int(pid) in (0, os.getpid()):
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False


def _remove_own(dfd, name):
    """Remove the entry ``name`` of the directory ``dfd`` if this user owns it: a regular file,
    or a directory with the files in it; another user's entry, a link or anything else stays."""
    st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
    if st.st_uid != os.geteuid():
        return
    if stat.S_ISREG(st.st_mode):
        os.unlink(name, dir_fd=dfd)
    elif stat.S_ISDIR(st.st_mode):
        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dfd)
        try:
            now = os.fstat(sub)
            if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                return  # replaced since it was looked at
            for entry in os.listdir(sub):
                os.unlink(entry, dir_fd=sub)  # never follows a link; a directory in it stays (error)
        finally:
            os.close(sub)
        os.rmdir(name, dir_fd=dfd)


def remove_leftovers(directory, wanted):
    """Remove the probe's entries of ``directory`` (named PRIVATE_PREFIX...) that ``wanted(name)``
    picks and this user owns; returns the paths that could not be removed."""
    try:
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return []
    left = []
    try:
        for name in os.listdir(dfd):
            if name.startswith(PRIVATE_PREFIX) and wanted(name):
                try:
                    _remove_own(dfd, name)
                except OSError:
                    left.append(os.path.join(directory, name))
    finally:
        os.close(dfd)
    return left


def run_child(runner, args, tmp_root=None, environ=None, python=None):
    """Run the probe child with ``args`` (a JSON-able dict, see _gds.probe.main).

    Returns a dict: rc, signal, timed_out, last_step, result (the child's JSON or None),
    protocol_error, stdout_lines (libcufile's own), stderr_tail, cufile_log (parsed entries),
    left_behind (probe entries that could not be removed), and ``cufile`` ({api_version}) when
    the child printed libcufile's version (also when it died after that).
    """
    paths = list(args.get("paths") or []) if args.get("probe") else []
    for path in paths:  # what runs killed with their module left
        remove_leftovers(path, _pid_gone)
    prefix = "%s%d.%s." % (PRIVATE_PREFIX, os.getpid(), os.urandom(4).hex())
    args = dict(args, dir_prefix=prefix, parent=os.getpid())
    workdir = tempfile.mkdtemp(prefix="gds_probe_", dir=tmp_root)
    env = {"CUFILE_LOGFILE_PATH": os.path.join(workdir, "cufile.log")}
    env.update(environ or {})
    argv = [python or sys.executable, "-I", "-S", "-c", probe_source(), json.dumps(args, sort_keys=True)]
    try:
        res = runner.run(argv, check=False, environ=env, cwd=workdir)
        log_text = read_logs(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        left = [p for path in paths for p in remove_leftovers(path, lambda name: name.startswith(prefix))]
    result, last_step, problem, version = parse_output(res.stdout)
    sig = signal_name(res.rc)
    out = {
        "rc": res.rc,
        "signal": sig,
        "timed_out": sig == "SIGALRM",
        "timeout": args.get("timeout"),
        "last_step": last_step,
        "result": result,
        "protocol_error": problem if result is None else None,
        "stdout_lines": parse.stdout_lines(res.stdout, SENTINEL),
        "stderr_tail": "\n".join((res.stderr or "").strip().splitlines()[-5:]) or None,
        "cufile_log": parse.parse_cufile_log(log_text),
        "left_behind": left,
    }
    if version is not None:
        out["cufile"] = {"api_version": version}
    return out
