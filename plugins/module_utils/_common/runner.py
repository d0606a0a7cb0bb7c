# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one command runner of the collection. PRIVATE to the collection.

Every command a module runs goes through :class:`Runner`: argv lists only (never a shell
string), ``LC_ALL=C`` so parsers see stable output, binaries resolved with
``get_bin_path`` (optionally from ``GPUDIRECT_BIN_DIR`` first, so tests can put shims ahead of
the real tools - on lab hosts only, see ``_hostpaths.seams_enabled``), commands that change the host skipped in check mode, and failures raised as
:class:`CommandError` carrying the command, rc and the tail of stderr.
"""

from __future__ import annotations

import copy
import os

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostpaths as _hostpaths

STDERR_TAIL_LINES = 20


def tail(text, lines=STDERR_TAIL_LINES):
    """Last ``lines`` lines of ``text`` (empty string for None)."""
    if not text:
        return ""
    return "\n".join(text.rstrip("\n").splitlines()[-lines:])


class CommandError(Exception):
    """A command failed. ``str()`` names the command, its rc and the tail of its stderr."""

    def __init__(self, cmd, rc, stdout="", stderr="", hint=None):
        self.cmd = list(cmd)
        self.rc = rc
        self.stdout = stdout or ""
        self.stderr = stderr or ""
        self.hint = hint
        msg = "command %s failed with rc=%s" % (" ".join(self.cmd), rc)
        detail = tail(self.stderr) or tail(self.stdout)
        if detail:
            msg += ": " + detail
        if hint:
            msg += " (" + hint + ")"
        super(CommandError, self).__init__(msg)

    def to_fail_kwargs(self):
        """Keyword arguments for ``module.fail_json`` (besides ``msg``)."""
        return {"cmd": self.cmd, "rc": self.rc, "stdout": self.stdout, "stderr": self.stderr}


class Result(object):
    """What a command returned. ``skipped`` is True when check mode kept it from running."""

    __slots__ = ("cmd", "rc", "stdout", "stderr", "skipped")

    def __init__(self, cmd, rc, stdout, stderr, skipped=False):
        self.cmd = list(cmd)
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.skipped = skipped

    @property
    def ok(self):
        return self.rc == 0


class Runner(object):
    """Run commands for ``module`` (an AnsibleModule or a test double with ``run_command``,
    ``get_bin_path`` and ``check_mode``)."""

    def __init__(self, module, environ=None):
        self.module = module
        self.environ = {"LC_ALL": "C", "LANG": "C", "LANGUAGE": "C"}
        if environ:
            self.environ.update(environ)
        extra = _hostpaths.seam("GPUDIRECT_BIN_DIR")  # lab hosts only
        self.bin_dirs = [d for d in (extra or "").split(os.pathsep) if d]
        self.bin_dirs += ["/usr/local/sbin", "/usr/sbin", "/sbin", "/usr/local/bin", "/usr/bin", "/bin"]
        self.history = []

    def for_module(self, module):
        """This runner (same environment, binaries and history) for another module: gds_plan
        gives each stage a runner over its check-mode StageModule."""
        other = copy.copy(self)
        other.module = module
        return other

    def which(self, name, required=False):
        """Absolute path of ``name`` or None; shims in ``GPUDIRECT_BIN_DIR`` win."""
        if os.path.isabs(name):
            return name if os.access(name, os.X_OK) else None
        # get_bin_path searches opt_dirs before PATH, so GPUDIRECT_BIN_DIR shims win.
        return self.module.get_bin_path(name, required=required, opt_dirs=self.bin_dirs)

    def run(self, argv, check=True, mutates=False, data=None, environ=None, cwd=None, hint=None):
        """Run ``argv`` (a list). ``mutates=True`` commands are skipped in check mode.

        The first element is resolved with :meth:`which`; a missing binary raises CommandError
        with rc=127. Returns :class:`Result`; raises CommandError when ``check`` and rc != 0.
        """
        if isinstance(argv, (str, bytes)):
            raise TypeError("Runner.run takes an argv list, never a shell string")
        argv = [str(a) for a in argv]
        if mutates and getattr(self.module, "check_mode", False):
            res = Result(argv, 0, "", "", skipped=True)
            self.history.append(res)
            return res
        exe = self.which(argv[0])
        if exe is None:
            res = Result(argv, 127, "", "%s: command not found" % argv[0])
            self.history.append(res)
            if check:
                raise CommandError(argv, 127, "", res.stderr, hint=hint)
            return res
        full = [exe] + argv[1:]
        env = dict(self.environ)
        if environ:
            env.update(environ)
        kwargs = {"check_rc": False, "environ_update": env}
        if data is not None:
            kwargs["data"] = data
            kwargs["binary_data"] = True
        if cwd is not None:
            kwargs["cwd"] = cwd
        rc, out, err = self.module.run_command(full, **kwargs)
        res = Result(full, rc, out, err)
        self.history.append(res)
        if check and rc != 0:
            raise CommandError(full, rc, out, err, hint=hint)
        return res
