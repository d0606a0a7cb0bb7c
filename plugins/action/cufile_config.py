# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of gpudirect.storage.cufile_config: read ``src`` on the controller, run the module's
plan phase (writes nothing), validate the planned document here (failing with every finding), then
run the apply phase with the validated content when something changes and this is not check mode."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate import warm
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.action import (
    INTERNAL, failed, lint_plan, option, prepare)

MODULE = "gpudirect.storage.cufile_config"
FORWARD = ("path", "cufile", "link_target", "reasons", "backup_file", "diff", "base", "base_release", "libcufile",
           "kept", "validation_note", "msg")


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        state = option(args, "state")
        path = option(args, "path")
        module_args, src_text, version, problem = prepare(args, self._find_needle)
        if problem:
            return dict(result, **problem)
        plan = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        if plan.get("failed"):
            return dict(result, **dict((k, v) for k, v in plan.items() if k not in ("invocation",)))
        warnings = list(plan.get("warnings", []))
        findings = []
        if state == "present":
            lint = lint_plan(plan, args, src_text, version)
            findings = lint.findings if lint else []
            if plan.get("kept"):  # the host's own file: reported, never failed over, never rewritten
                result["valid"] = lint.ok if lint else None
            elif not lint.ok:
                return dict(result, **failed(findings, path))
            warnings += [f.message for f in findings]
        result.update((k, plan.get(k)) for k in FORWARD if k in plan)
        result.update(changed=bool(plan.get("changed")), findings=[f.as_dict() for f in findings])
        if result["changed"] and not self._task.check_mode:
            apply_internal = {"phase": "apply", "expect": plan["fingerprint"]}
            if state == "present":
                apply_internal["content"] = plan["desired_text"]
            apply_args = dict(args, **{INTERNAL: apply_internal})
            applied = self._execute_module(module_name=MODULE, module_args=apply_args, task_vars=task_vars)
            if applied.get("failed"):
                return dict(result, changed=False, **dict((k, v) for k, v in applied.items() if k not in ("invocation",)))
            warnings += applied.get("warnings", [])
            result.update(changed=bool(applied.get("changed")), backup_file=applied.get("backup_file"))
        if warnings:
            result["warnings"] = warnings
        return result


warm()
