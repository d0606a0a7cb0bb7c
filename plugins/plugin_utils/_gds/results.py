# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Controller-side handling of the gds facts a host returned, shared by the gds_facts and
gds_preflight action plugins: validate the cufile.json texts with the collection's validator
(jsonschema lives on the controller, never on the GPU host) and say the verdict in one line."""

from __future__ import annotations

# imported here, not where used: the action plugins import this module in Ansible's main process
# before it forks a worker per host, and a module first imported in a worker is compiled again for
# every host (Ansible's collection loader keeps no compiled code)
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.verdict import libcufile_release, with_config_errors

MAX_FINDINGS = 50


def _validator():
    """(lint_text, lint_merged, None) or (None, None, reason)."""
    try:
        from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate import (
            jsonschema_available, lint_merged, lint_text)
    except ImportError as exc:
        return None, None, "validator unavailable: %s" % exc
    if not jsonschema_available():
        return None, None, "validator unavailable: the Python library jsonschema is not installed on the controller"
    return lint_text, lint_merged, None


def host_release(gds):
    """(release, note): the libcufile release the host's cufile.json is read by, as the host's
    verdict decided it (_gds/verdict.libcufile_release); None (with the reason) when unknown."""
    return libcufile_release(gds.get("libcufile") or {})


def validate_cufile(gds):
    """Validate the cufile.json texts in ``gds['cufile']['files']`` in place, against the host's
    libcufile release; the texts are dropped from the facts (paths and sha256 stay)."""
    cufile = gds.get("cufile")
    if not isinstance(cufile, dict):
        return
    texts = {}
    for entry in cufile.get("files") or []:
        if isinstance(entry, dict):
            texts[entry.get("role")] = (entry.get("path"), entry.pop("text", None))
    lint_text, lint_merged, problem = _validator()
    if problem:
        cufile.update(valid=None, findings=[], validator=problem)
        return
    release, note = host_release(gds)
    cufile["libcufile_release"] = release
    if release is None:
        cufile.update(valid=None, findings=[], validator=note)
        return
    if note:
        cufile["note"] = note
    etc_path, etc_text = texts.get("global", ("/etc/cufile.json", None))
    host = {"nvidia_fs": bool((gds.get("nvidia_fs") or {}).get("loaded"))}
    cufile["release"] = release  # the same decision as libcufile_release, made once above
    if note:
        cufile["release_note"] = note
    try:
        if "overlay" in texts:
            env_path, env_text = texts["overlay"]
            result = lint_merged(etc_text, env_text, etc_source=etc_path, env_source=env_path, host=host,
                                 version=release)
        elif etc_text is not None:
            result = lint_text(etc_text, source=etc_path, host=host, version=release)
        else:
            cufile.update(valid=True, findings=[], validator="ok",
                          note="no /etc/cufile.json: libcufile uses its built-in defaults")
            return
    except Exception as exc:  # pylint: disable=broad-except
        cufile.update(valid=None, findings=[], validator="validator failed: %r" % exc)
        return
    cufile.update(valid=result.ok, errors=result.count("error"), warnings=result.count("warning"),
                  findings=[f.as_dict() for f in result.findings][:MAX_FINDINGS], validator="ok")
    with_config_errors(gds, [f.message for f in result.errors])


def verdict_line(gds):
    """The one-line verdict a task reports as ``msg``: mode, verified I/O, throughput, versions, reason."""
    versions = gds.get("versions") or {}
    put = gds.get("throughput") or {}
    io = "(verified %s MiB)" % put.get("size_mb") if gds.get("verified") else "(no verified I/O)"
    return ("GDS mode %s %s write %s GB/s, read %s GB/s; driver %s (%s kernel module), libcufile %s, nvidia_fs %s: %s" % (
        gds.get("mode"), io, put.get("write_gbps") or "-", put.get("read_gbps") or "-",
        versions.get("nvidia_driver") or "-", versions.get("nvidia_kernel_module") or "-",
        versions.get("libcufile") or "-", versions.get("nvidia_fs") or "-", gds.get("reason")))


def warm():
    """Import the validator and jsonschema, and load the schema, in the importing process (see
    _cufile.validate.warm); silently nothing when they are missing."""
    try:
        from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate import warm as warm_validator
    except ImportError:
        return
    warm_validator()
