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
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import sys
import tempfile

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe as _gds_probe
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_io as _gds_probe_io
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_lib as _gds_probe_lib
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_nvml as _gds_probe_nvml
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_tune as _gds_probe_tune

SENTINEL = _gds_probe_lib.SENTINEL
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
    """(result dict or None, last step, error text) from the child's stdout."""
    result = None
    last_step = None
    problem = None
    for line in (stdout or "").splitlines():
        if not line.startswith(SENTINEL + " "):
            continue
        kind, _sep, payload = line[len(SENTINEL) + 1:].partition(" ")
        if kind == "step":
            last_step = payload
        elif kind == "result":
            try:
                result = json.loads(payload)
            except ValueError as exc:
                problem = "unreadable result line: %s" % exc
    if result is None and problem is None:
        problem = "no result line"
    return result, last_step, problem


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


def run_child(runner, args, tmp_root=None, environ=None, python=None):
    """Run the probe child with ``args`` (a JSON-able dict, see _gds.probe.main).

    Returns a dict: rc, signal, timed_out, last_step, result (the child's JSON or None),
    protocol_error, stdout_lines (libcufile's own), stderr_tail, cufile_log (parsed entries),
    cufile_log_raw_lines (count).
    """
    workdir = tempfile.mkdtemp(prefix="gds_probe_", dir=tmp_root)
    env = {"CUFILE_LOGFILE_PATH": os.path.join(workdir, "cufile.log")}
    env.update(environ or {})
    argv = [python or sys.executable, "-I", "-S", "-c", probe_source(), json.dumps(args, sort_keys=True)]
    try:
        res = runner.run(argv, check=False, environ=env, cwd=workdir)
        log_text = read_logs(workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    result, last_step, problem = parse_output(res.stdout)
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
    }
    return out
