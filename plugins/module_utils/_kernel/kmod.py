# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Kernel modules for nvidia_fs: loaded state, modprobe, persistence files, DKMS, modinfo.
PRIVATE to the collection.

Everything the host shows comes through ``_common.hostpaths.HostPaths`` (``/proc/modules``,
``/sys/module/<m>``, ``/etc/modules-load.d``, ``/etc/modprobe.d``, the DKMS tree) and every
command through ``_common.runner.Runner``, so a lab host without loadable modules can point both
elsewhere. Parsers, renderers and comparisons are pure; the persistence files are written by
``_common.managed_file``, which honours check mode.
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError, tail
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostparse import parse_proc_modules

MAKE_LOG_TAIL_LINES = 25
MANAGED_HEADER = "# Managed by gpudirect.storage.nvidia_fs; local changes are overwritten.\n"


def kname(name):
    """Kernel spelling of a module name (``nvidia-fs`` -> ``nvidia_fs``)."""
    return name.replace("-", "_")


# --------------------------------------------------------------------------- loaded state


def module_state(paths, name):
    """Loaded state of ``name``: /proc/modules, /sys/module/<m>/version and parameters."""
    mod = kname(name)
    loaded = parse_proc_modules(paths.read("proc_modules")).get(mod)
    sysdir = os.path.join(paths.sys_module, mod)
    version = (paths.read(os.path.join(sysdir, "version")) or "").strip() or None
    params = {}
    pdir = os.path.join(sysdir, "parameters")
    if os.path.isdir(pdir):
        for p in sorted(os.listdir(pdir)):
            val = paths.read(os.path.join(pdir, p))
            if val is not None:
                params[p] = val.strip()
    return {"name": mod, "loaded": loaded is not None, "refcount": (loaded or {}).get("refcount"),
            "used_by": (loaded or {}).get("used_by", []), "version": version if loaded else None,
            "params": params if loaded else {}}


def params_text(params):
    """``{"rw_stats_enabled": 1}`` -> ``["rw_stats_enabled=1"]`` (sorted, bools as 0/1)."""
    out = []
    for k in sorted(params or {}):
        v = params[k]
        if isinstance(v, bool):
            v = int(v)
        out.append("%s=%s" % (k, v))
    return out


def params_differ(loaded_params, wanted):
    """Names of wanted parameters whose value in /sys/module/<m>/parameters differs.
    Y/N booleans compare equal to 1/0."""
    norm = {"y": "1", "n": "0", "true": "1", "false": "0"}
    diff = []
    for item in params_text(wanted):
        k, v = item.split("=", 1)
        have = loaded_params.get(k)
        if have is None or norm.get(have.lower(), have) != norm.get(str(v).lower(), str(v)):
            diff.append(k)
    return diff


def modprobe_argv(name, params=None):
    return ["modprobe", name] + params_text(params)


def unload_argv(name):
    return ["modprobe", "-r", name]


# --------------------------------------------------------------------------- persistence
def modules_load_path(paths, name):
    return os.path.join(paths.modules_load_d, "%s.conf" % name)


def modprobe_conf_path(paths, name):
    return os.path.join(paths.modprobe_d, "%s.conf" % name)


def render_modules_load(name):
    return MANAGED_HEADER + name + "\n"


def render_modprobe_options(name, params):
    if not params:
        return None
    return MANAGED_HEADER + "options %s %s\n" % (name, " ".join(params_text(params)))


def _content_lines(text):
    return [ln.split("#", 1)[0].strip() for ln in (text or "").splitlines()
            if ln.split("#", 1)[0].strip()]


def modules_load_satisfied(current, name):
    """A modules-load.d file loads ``name`` (whatever its comments; the nvidia-fs package ships
    one with just ``nvidia-fs``, which must not count as a change)."""
    return current is not None and any(kname(ln) == kname(name) for ln in _content_lines(current))


def parse_modprobe_options(text, name):
    """``options <name> k=v ...`` lines of a modprobe.d file -> {k: v} for ``name``."""
    out = {}
    for ln in _content_lines(text):
        f = ln.split()
        if len(f) >= 2 and f[0] == "options" and kname(f[1]) == kname(name):
            for kv in f[2:]:
                k, _sep, v = kv.partition("=")
                out[k] = v
    return out


def modprobe_options_satisfied(current, name, params):
    if not params:
        return current is None
    if current is None:
        return False
    want = dict(p.split("=", 1) for p in params_text(params))
    return parse_modprobe_options(current, name) == want


# --------------------------------------------------------------------------- DKMS
_DKMS3 = re.compile(r"^(?P<m>[^/,\s]+)/(?P<v>[^,:\s]+)(?:, (?P<k>[^,:\s]+))?(?:, (?P<a>[^,:\s]+))?: (?P<rest>.*)$")
_DKMS2 = re.compile(r"^(?P<m>[^/,\s]+), (?P<v>[^,\s]+)(?:, (?P<k>[^,\s]+))?(?:, (?P<a>[^,:\s]+))?: (?P<rest>.*)$")


def parse_dkms_status(text):
    """``dkms status`` (2.x ``m, v, k, a: state`` and 3.x ``m/v, k, a: state (notes)``) ->
    [{module, version, kernel, arch, state, note}]. Lines with ``Error!``/``WARNING`` keep the
    message in ``note`` with state ``error``/the parsed state."""
    out = []
    for line in (text or "").splitlines():
        line = line.strip()
        m = _DKMS3.match(line) or _DKMS2.match(line)
        if not m:
            continue
        rest = m.group("rest").strip()
        note = ""
        if rest.startswith("Error!") or rest.startswith("Error:"):
            state, note = "error", rest
        else:
            state, _sep, note = rest.partition(" ")
            state = state.rstrip(",")
            note = note.strip().strip("()")
        out.append({"module": m.group("m"), "version": m.group("v"), "kernel": m.group("k"),
                    "arch": m.group("a"), "state": state, "note": note})
    return out


def dkms_entry(entries, module, version, kernel):
    """The status entry of module/version for ``kernel`` (or the kernel-less ``added`` one)."""
    best = None
    for e in entries:
        if e["module"] == module and e["version"] == version:
            if e["kernel"] == kernel:
                return e
            if e["kernel"] is None:
                best = e
    return best


def dkms_tree_args(paths):
    """``--dkmstree`` only when the host root is re-rooted (tests, lab fake trees)."""
    return [] if paths.root in ("/", "") else ["--dkmstree", paths.dkms_tree]


class DkmsBuildError(CommandError):
    """A DKMS build/install failed; ``make_log_tail`` is the end of make.log."""

    def __init__(self, cmd, rc, stdout, stderr, make_log, make_log_tail):
        self.make_log = make_log
        self.make_log_tail = make_log_tail
        hint = "make.log %s ends with:\n%s" % (make_log, make_log_tail) if make_log_tail else None
        super(DkmsBuildError, self).__init__(cmd, rc, stdout, stderr, hint=hint)

    def to_fail_kwargs(self):
        kw = super(DkmsBuildError, self).to_fail_kwargs()
        kw.update(make_log=self.make_log, make_log_tail=self.make_log_tail)
        return kw


def find_make_log(paths, module, version, kernel, arch, stderr=""):
    """The make.log DKMS points at in its error text, else the usual places."""
    m = re.search(r"Consult (\S+make\.log)", stderr or "")
    cands = [m.group(1)] if m else []
    base = os.path.join(paths.dkms_tree, module, version)
    cands += [os.path.join(base, "build", "make.log"),
              os.path.join(base, kernel or "", arch or "", "log", "make.log")]
    for c in cands:
        if os.path.isfile(c):
            return c
    return cands[0]


def dkms_run(runner, paths, action, module, version, kernel, arch=None, force=False, environ=None):
    """``dkms build|install -m M -v V -k K`` (mutates). A failure raises DkmsBuildError with the
    tail of make.log."""
    argv = ["dkms", action, "-m", module, "-v", version, "-k", kernel] + dkms_tree_args(paths)
    if force:
        argv.append("--force")
    res = runner.run(argv, check=False, mutates=True, environ=environ)
    if res.rc != 0 and not res.skipped:
        log = find_make_log(paths, module, version, kernel, arch or os.uname()[4], res.stderr + res.stdout)
        raise DkmsBuildError(res.cmd, res.rc, res.stdout, res.stderr, log,
                             tail(paths.read(log) or "", MAKE_LOG_TAIL_LINES))
    return res


def dkms_status(runner, paths, module=None):
    argv = ["dkms", "status"] + (["-m", module] if module else []) + dkms_tree_args(paths)
    res = runner.run(argv, check=False)
    if res.rc == 127:
        return None
    return parse_dkms_status(res.stdout)


def built_make_log(paths, module, version, kernel, arch):
    """make.log kept by DKMS for a successful build of module/version on kernel/arch."""
    p = os.path.join(paths.dkms_tree, module, version, kernel, arch, "log", "make.log")
    return p if os.path.isfile(p) else None


# --------------------------------------------------------------------------- modinfo
def parse_modinfo(text):
    """``modinfo`` -> {key: value}; repeated keys (alias, parm, firmware, ...) become lists;
    continuation lines (``signature``) are joined."""
    out = {}
    last = None
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        if line[0] in " \t" and last is not None:
            if isinstance(out[last], list):
                out[last][-1] += line.strip()
            else:
                out[last] += line.strip()
            continue
        key, sep, val = line.partition(":")
        if not sep or not key or key != key.strip():
            continue
        val = val.strip()
        last = key
        if key in out:
            if not isinstance(out[key], list):
                out[key] = [out[key]]
            out[key].append(val)
        else:
            out[key] = val
    return out


def modinfo_signed(info):
    return bool(info.get("sig_id") or info.get("signer"))
