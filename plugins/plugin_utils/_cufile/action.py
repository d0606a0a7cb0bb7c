# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The controller half of cufile_config's plan, shared by the cufile_config and gds_plan action
plugins: read a controller-side ``src`` and refuse one that does not parse (before the host is
touched), and validate the document the module planned (and its ``env_path_json`` overlay)."""

from __future__ import annotations

import json

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.limits import read_capped, size_problem
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.releases import known_releases
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.cufile_config import argument_spec, shipped_refusal
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.schema import available_versions, load_schema
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.findings import Finding, LintResult, how_many
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate import (
    jsonschema_available, lint_document, lint_merged, lint_text)

INTERNAL = "_cufile"


def option(args, name):
    """``args[name]``, or when it is unset the module's default: the spec states each default once."""
    return args.get(name) or argument_spec()[name].get("default")


def summarize(findings, path, limit=20):
    """One failure message: the count and one line per error (of the first ``limit``)."""
    errors = [f for f in findings if f.severity == "error" and f.code != "more-findings"]
    count = how_many(findings, "error")
    lines = ["%s: %d error%s, nothing was written:" % (path, count, "" if count == 1 else "s")]
    lines += ["  - " + (("%s: " % f.source) if f.source and f.source != path else "") + f.message for f in errors[:limit]]
    if count > limit:
        lines.append("  - ... and %d more (see findings)" % (count - min(limit, len(errors))))
    return "\n".join(lines)


def failed(findings, path):
    return {"failed": True, "changed": False, "msg": summarize(findings, path), "findings": [f.as_dict() for f in findings]}


def prepare(args, find_needle):
    """(module_args for the plan phase, src_text, version, None) or (None, None, None, failure dict).

    ``find_needle(dirname, name)`` finds a controller file (ActionBase._find_needle)."""
    if INTERNAL in args:
        return None, None, None, {"failed": True, "msg": "option %s is internal: the action plugin sets it" % INTERNAL}
    state = option(args, "state")
    version = str(option(args, "cufile_version"))
    internal = {"phase": "plan"}
    src_text = None
    if state == "present":
        if not jsonschema_available():
            return None, None, None, {"failed": True, "msg": "cufile_config validates on the controller and needs the "
                                                             "Python library jsonschema there (pip install jsonschema)"}
        # the host's release is known after the plan only: the host-path checks of every release
        try:
            releases = list(known_releases()) if version == "auto" else [version]
            internal["path_checks"] = dict(
                (schema.version, [{"path": d, "what": w, "kind": k} for d, w, k in schema.must_exist_specs()])
                for schema in (load_schema(v) for v in releases))
        except ValueError as exc:
            return None, None, None, {"failed": True, "msg": "cufile_version: %s" % exc}
        refusal = shipped_refusal(args.get("base"), args.get("src"), version) if version != "auto" else None
        if refusal:  # with auto, the host's release is known after the plan: the module refuses there
            return None, None, None, {"failed": True, "msg": refusal}
        too_big = settings_problem(args.get("settings"))
        if too_big:
            return None, None, None, {"failed": True, "msg": "settings: %s; nothing was written" % too_big}
        src = args.get("src")
        if src and not boolean(option(args, "remote_src"), strict=False):
            try:
                with open(find_needle("files", src), "rb") as f:
                    data, size = read_capped(f)
            except (AnsibleError, IOError, OSError) as exc:
                return None, None, None, {"failed": True, "msg": "src %s: %s" % (src, to_text(exc))}
            if size_problem(size):
                return None, None, None, {"failed": True, "msg": "src %s: %s; nothing was written" % (src, size_problem(size))}
            early = lint_text(data, source=src, version=_newest() if version == "auto" else version)
            if early.document is None:  # does not parse: nothing to send
                return None, None, None, failed(early.findings, src)
            src_text = to_text(data, errors="surrogate_or_strict")
            internal["src_text"] = src_text
    return dict(args, **{INTERNAL: internal}), src_text, version, None


def settings_problem(settings):
    """Why ``settings`` are refused for their size (as JSON text), or None."""
    try:
        return size_problem(len(json.dumps(settings or {}, separators=(",", ":"))))
    except (TypeError, ValueError):
        return None  # the module says what JSON cannot write


def _newest():
    return available_versions()[-1]


def lint_plan(plan, args, src_text, version):
    """Validate what libcufile will read: the planned document (with line numbers when it is an
    unmodified src file) and, with env_path_json, the env file and the overlay - against the
    release the plan chose (the host's). A kept file (no cufile option set) is validated as it is;
    None when there is nothing to validate (no file kept, no env file)."""
    version = (plan.get("libcufile") or {}).get("release") or (None if plan.get("kept") else version)
    if plan.get("kept") and plan.get("current_error") and not plan.get("current_text"):  # e.g. too big to read
        path = option(args, "path")
        error = plan["current_error"]
        error = error[len(path) + 2:] if error.startswith(path + ": ") else error
        return LintResult([Finding("$", None, "error", None, "$: %s; not checked." % error, line=1, column=1,
                                   code="unreadable", source=path)], None, path)
    if plan.get("kept"):
        if version is None or (plan.get("current_text") is None and not args.get("env_path_json")):
            return None
        plan = dict(plan, cufile=plan.get("current_text") or {})
    facts = plan.get("path_facts") or {}
    host = dict((k, v) for k, v in (plan.get("host") or {}).items() if v is not None)
    text = src_text if src_text is not None else plan.get("src_text")
    source = args.get("src") if text is not None and not args.get("settings") else option(args, "path")
    target = text if text is not None and not args.get("settings") else plan["cufile"]
    if args.get("env_path_json"):
        return lint_merged(target, plan.get("env_text"), etc_source=source, env_source=args["env_path_json"],
                           version=version, check_paths=facts, host=host)
    if isinstance(target, (str, bytes)):
        return lint_text(target, source=source, version=version, check_paths=facts, host=host)
    return lint_document(target, source=source, version=version, check_paths=facts, host=host)
