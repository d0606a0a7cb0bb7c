# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Controller side of gpudirect.storage.gds_facts: run the module on the target, then validate
the cufile.json texts it returned with the collection's validator (jsonschema lives on the
controller, never on the GPU host) and add ``gds.cufile.valid`` / ``gds.cufile.findings``.

The module stays usable without this step: when jsonschema or the validator cannot be
imported, ``gds.cufile.validator`` says why and ``valid`` is null.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

MODULE = "gpudirect.storage.gds_facts"
MAX_FINDINGS = 50


def _validator():
    """(lint_text, lint_merged, None) or (None, None, reason)."""
    try:
        from ansible_collections.gpudirect.storage.plugins.module_utils._cufile_validate import (
            jsonschema_available, lint_merged, lint_text)
    except ImportError as exc:
        return None, None, "validator unavailable: %s" % exc
    if not jsonschema_available():
        return None, None, "validator unavailable: the Python library jsonschema is not installed on the controller"
    return lint_text, lint_merged, None


def validate_cufile(gds):
    """Validate the cufile.json texts in ``gds['cufile']['files']`` in place; the texts are
    dropped from the facts (paths and sha256 stay)."""
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
    etc_path, etc_text = texts.get("global", ("/etc/cufile.json", None))
    host = {"nvidia_fs": bool((gds.get("nvidia_fs") or {}).get("loaded"))}
    try:
        if "overlay" in texts:
            env_path, env_text = texts["overlay"]
            result = lint_merged(etc_text, env_text, etc_source=etc_path, env_source=env_path, host=host)
        elif etc_text is not None:
            result = lint_text(etc_text, source=etc_path, host=host)
        else:
            cufile.update(valid=True, findings=[], validator="ok",
                          note="no /etc/cufile.json: libcufile uses its built-in defaults")
            return
    except Exception as exc:  # pylint: disable=broad-except
        cufile.update(valid=None, findings=[], validator="validator failed: %r" % exc)
        return
    cufile.update(valid=result.ok, errors=len(result.errors), warnings=len(result.warnings),
                  findings=[f.as_dict() for f in result.findings][:MAX_FINDINGS], validator="ok")
    if gds.get("mode") == "failed" and result.errors:
        gds["reasons"] = list(gds.get("reasons") or []) + ["cufile.json: " + f.message for f in result.errors[:3]]
        gds["reason"] = "; ".join(gds["reasons"])


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        result.update(self._execute_module(module_name=MODULE, module_args=self._task.args, task_vars=task_vars))
        gds = (result.get("ansible_facts") or {}).get("gds")
        if isinstance(gds, dict):
            validate_cufile(gds)
        return result
