# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The target side of gpudirect.storage.cufile_config: read the current file, compute the desired
document, decide ``changed`` (the plan phase; the apply phase, which writes, is
cufile_config_apply.py). PRIVATE to the collection.
Standard library only (runs on bare GPU hosts).

Validation is NOT done here: the action plugin validates the planned document on the controller
(jsonschema) and only then asks the module to write it (docs/cufile.md, "How a run works").

Symlinks: on CUDA 13 hosts /etc/cufile.json is an update-alternatives link into the CUDA tree
(/etc/alternatives/cufile.json -> /usr/local/cuda-13.0/gds/cufile.json). Writing through it would
edit a package-owned file that the next CUDA upgrade overwrites. The module therefore replaces the
link by a regular file of its own (the rename replaces the link itself, the CUDA file is left
untouched), reports the old target as ``link_target`` and, with ``backup``, keeps the old link as
a symlink backup. update-alternatives does not replace a real file with its link without
--force, so the managed file survives package upgrades.
"""

from __future__ import annotations

import os

from ansible.module_utils.basic import FILE_COMMON_ARGUMENTS

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import dumps
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile import shipped as _cufile_shipped
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.shipped import ReleaseError, host_libcufile
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common import managed_file
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.argspec import ArgumentSpec
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.host_file import (
    attribute_problems, content_changes, CufileConfigError, desired_document, diff_texts,
    host_path_facts, load_src, managed, read_state, _read_text, shipped_refusal)


def argument_spec():
    return dict(
        path=dict(type="path", default="/etc/cufile.json"),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        settings=dict(type="dict"),
        base=dict(type="str", choices=["shipped", "current", "empty"]),  # None: see managed()
        src=dict(type="path"),
        remote_src=dict(type="bool", default=False),
        backup=dict(type="bool", default=False),
        env_path_json=dict(type="path"),
        cufile_version=dict(type="str", default="auto"),
        mode=dict(type="raw", default="0644"),
        owner=dict(type="str", default="root"),
        group=dict(type="str", default="root"),
        _cufile=dict(type="dict"),  # set by the action plugin only
    )


def arguments():
    """The options with the file attributes every file module takes, and their constraint, as
    the module and gds_plan validate them."""
    return ArgumentSpec(dict(FILE_COMMON_ARGUMENTS, **argument_spec()), mutually_exclusive=[("base", "src")])


def nvidia_fs_loaded(paths=None):
    """True/False when the host says whether nvidia_fs is loaded, None when it cannot tell."""
    paths = paths or HostPaths()
    if os.path.exists(paths.nvidia_fs_proc):
        return True
    modules = paths.read("proc_modules")
    if modules is None:
        return None
    return any(line.split(" ", 1)[0] == "nvidia_fs" for line in modules.splitlines())


def _diff(module, current, desired_text):
    if not module._diff:
        return None
    before, after = diff_texts(current, desired_text)
    header = current.path + (" (symlink to %s)" % current.link_target if current.is_link else "")
    return {"before": before, "after": after, "before_header": header, "after_header": current.path}


def _attributes_differ(module, path):
    """Would owner/group/mode/SELinux/attributes change? A comparison that only reads."""
    return managed_file.attributes_differ(module, module.load_file_common_arguments(module.params, path=path))


def _from_action(module):
    """The action plugin's private arguments (option ``_cufile``)."""
    return module.params.get("_cufile") or {}


def run_plan(module):
    """Plan phase: compute current and desired, decide ``changed``; never writes."""
    p = module.params
    internal = _from_action(module)
    path = p["path"]
    current = read_state(path)
    result = {"changed": False, "path": path, "fingerprint": current.fingerprint, "link_target": current.link_target,
              "current_error": current.error}
    if p["state"] == "absent":
        present = current.exists or current.is_link
        result.update(changed=present, reasons=["remove"] if present else [], cufile=None)
        diff = _diff(module, current, "")
        if diff:
            result["diff"] = diff
        return result
    if not managed(p):
        return _keep(module, current, result)
    problems = attribute_problems(p)
    if problems:
        raise CufileConfigError("; ".join(problems) + "; nothing was written")
    host = host_libcufile()
    try:
        release, source, warning = _cufile_shipped.choose_release(p["cufile_version"], host, module.check_mode)
        _cufile_shipped.known_release(release, source, host)
    except ReleaseError as exc:
        raise CufileConfigError(str(exc))
    refusal = shipped_refusal(p["base"], p["src"] or internal.get("src_text"), release)
    if refusal:
        raise CufileConfigError(refusal)
    if warning:
        module.warn(warning)
    base = "src" if (p["src"] or internal.get("src_text") is not None) else (p["base"] or "shipped")
    result.update(base=base, libcufile=dict(host, release=release, source=source))
    if warning:
        result["libcufile"]["note"] = warning
    if base == "shipped":
        entry = _cufile_shipped.RELEASES[release]
        result["base_release"] = "libcufile %s (CUDA %s)" % (entry["libcufile"], entry["cuda"])
    src_document = None
    if internal.get("src_text") is not None:
        src_document = load_src(internal["src_text"], p["src"])
    elif p["src"]:
        if not p["remote_src"]:
            raise CufileConfigError("src %s is on the controller: run the module through its action plugin" % p["src"])
        data = _read_text(p["src"], "src")
        try:
            result["src_text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            raise CufileConfigError("src %s is not UTF-8 text" % p["src"])
        src_document = load_src(data, p["src"])
    desired = desired_document(p["base"] or "shipped", p["settings"], current, src_document, release)
    try:
        desired_text = dumps(desired)
    except ValueError as exc:
        raise CufileConfigError("settings hold a value JSON cannot write: %s" % exc)
    reasons = content_changes(current, desired)
    if not reasons and _attributes_differ(module, path):
        reasons.append("attributes")
    result.update(changed=bool(reasons), reasons=reasons, cufile=desired, desired_text=desired_text,
                  current=current.document, host={"nvidia_fs": nvidia_fs_loaded()},
                  path_facts=host_path_facts(desired, _path_checks(internal, release)))
    if p["env_path_json"]:
        env = p["env_path_json"]
        result["env_text"] = _read_text(env, "env_path_json").decode("utf-8", "replace") if os.path.isfile(env) else None
    diff = _diff(module, current, desired_text)
    if diff:
        result["diff"] = diff
    return result


def _path_checks(internal, release):
    """The schema's host-path specs for ``release``: the action sends them per release (it does
    not know the host's release before this plan) or, for one given release, as a list."""
    checks = internal.get("path_checks")
    return checks.get(release) if isinstance(checks, dict) else checks


def _keep(module, current, result):
    """No cufile option set: the file (or link, or its absence) stays as it is. The plan returns
    its text for the controller to validate against the host's release and report."""
    p = module.params
    host = host_libcufile()
    try:
        release, source, note = _cufile_shipped.choose_release("auto", host, True)
        _cufile_shipped.known_release(release, source, host)
        if source == "assumed":
            note = ("no libcufile on the host: validated against libcufile %s, the newest release the collection knows"
                    % release)
    except ReleaseError as exc:
        release, source, note = None, "unknown", str(exc).split("; nothing was written", maxsplit=1)[0] + ": not validated"
    result.update(changed=False, reasons=[], kept=True, base="keep", cufile=current.document,
                  current=current.document, current_text=current.text() if current.exists else None,
                  libcufile=dict(host, release=release, source=source), host={"nvidia_fs": nvidia_fs_loaded()},
                  path_facts=host_path_facts(current.document or {}, _path_checks(_from_action(module), release) if release else None))
    if note:
        result["validation_note"] = note
    if p["env_path_json"]:
        env = p["env_path_json"]
        result["env_text"] = _read_text(env, "env_path_json").decode("utf-8", "replace") if os.path.isfile(env) else None
    where = "a symlink to %s" % current.link_target if current.is_link else ("a file" if current.exists else "absent")
    result["msg"] = "%s left as it is (%s): no cufile option (settings, src, base) is set" % (current.path, where)
    return result
