# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of gpudirect.storage.cufile_config: the controller half.

1. read ``src`` from the controller (unless ``remote_src``) and reject a file that does not parse;
2. run the module in its plan phase (reads the host, computes the desired document, decides
   ``changed``, writes nothing);
3. validate the desired document (and its overlay with ``env_path_json``) with jsonschema here;
   on any error fail with every finding, nothing written;
4. if something changes and this is not check mode, run the module in its apply phase with the
   validated content and the fingerprint of the file it planned against.
"""

from __future__ import annotations

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile_schema import load_schema
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile_validate import (
    jsonschema_available, lint_document, lint_merged, lint_text, warm)

MODULE = "gpudirect.storage.cufile_config"
INTERNAL = "_cufile"
FORWARD = ("path", "cufile", "link_target", "reasons", "backup_file", "diff")


def summarize(findings, path, limit=20):
    """One failure message: the count and one line per error."""
    errors = [f for f in findings if f.severity == "error"]
    lines = ["%s: %d error%s, nothing was written:" % (path, len(errors), "" if len(errors) == 1 else "s")]
    lines += ["  - " + (("%s: " % f.source) if f.source and f.source != path else "") + f.message for f in errors[:limit]]
    if len(errors) > limit:
        lines.append("  - ... and %d more (see findings)" % (len(errors) - limit))
    return "\n".join(lines)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if INTERNAL in args:
            return dict(result, failed=True, msg="option %s is internal: the action plugin sets it" % INTERNAL)
        state = args.get("state") or "present"
        version = str(args.get("cufile_version") or "1.15")
        path = args.get("path") or "/etc/cufile.json"
        module_args = dict(args)
        internal = {"phase": "plan"}
        src_text = None
        if state == "present":
            if not jsonschema_available():
                return dict(result, failed=True, msg="cufile_config validates on the controller and needs the Python "
                                                     "library jsonschema there (pip install jsonschema)")
            try:
                schema = load_schema(version)
            except ValueError as exc:
                return dict(result, failed=True, msg="cufile_version: %s" % exc)
            internal["path_checks"] = [{"path": d, "what": w, "kind": k} for d, w, k in schema.must_exist_specs()]
            src = args.get("src")
            if src and not boolean(args.get("remote_src", False), strict=False):
                try:
                    src_file = self._find_needle("files", src)
                    with open(src_file, "rb") as f:
                        data = f.read()
                except (AnsibleError, IOError, OSError) as exc:
                    return dict(result, failed=True, msg="src %s: %s" % (src, to_text(exc)))
                early = lint_text(data, source=src, version=version)
                if early.document is None:  # does not parse: nothing to send
                    return self._failed(result, early.findings, src)
                src_text = to_text(data, errors="surrogate_or_strict")
                internal["src_text"] = src_text
        module_args[INTERNAL] = internal
        plan = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        if plan.get("failed"):
            return dict(result, **dict((k, v) for k, v in plan.items() if k not in ("invocation",)))
        warnings = list(plan.get("warnings", []))
        findings = []
        if state == "present":
            lint = self._lint(plan, args, src_text, version)
            findings = lint.findings
            if not lint.ok:
                return self._failed(result, findings, path)
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

    def _lint(self, plan, args, src_text, version):
        """Validate what libcufile will read: the planned document (with line numbers when it is an
        unmodified src file) and, with env_path_json, the env file and the overlay."""
        facts = plan.get("path_facts") or {}
        host = dict((k, v) for k, v in (plan.get("host") or {}).items() if v is not None)
        text = src_text if src_text is not None else plan.get("src_text")
        source = args.get("src") if text is not None and not args.get("settings") else (args.get("path") or "/etc/cufile.json")
        target = text if text is not None and not args.get("settings") else plan["cufile"]
        if args.get("env_path_json"):
            return lint_merged(target, plan.get("env_text"), etc_source=source, env_source=args["env_path_json"],
                               version=version, check_paths=facts, host=host)
        if isinstance(target, (str, bytes)):
            return lint_text(target, source=source, version=version, check_paths=facts, host=host)
        return lint_document(target, source=source, version=version, check_paths=facts, host=host)

    @staticmethod
    def _failed(result, findings, path):
        return dict(result, failed=True, changed=False, msg=summarize(findings, path), findings=[f.as_dict() for f in findings])


warm()
