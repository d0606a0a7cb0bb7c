# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Validate cufile.json the way a given libcufile release (1.13-1.20) reads it. PRIVATE to the
collection. CONTROLLER side (action plugins, bin/cufile-lint); needs ``jsonschema`` (imported
lazily) and the collection's ``schemas/``.

``check_paths``: host paths libcufile requires (logging.dir, denylist entries, mount_table keys)
are checked only when asked: ``True`` on this machine, a callable ``f(path, kind)`` or a dict
``{path: {"exists": bool, "is_dir": bool}}`` (the module's plan) for a remote host."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import (
    CufileSyntaxError, CufileTooLarge, deep_merge, parse)
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.schema import (
    DEFAULT_VERSION, load_schema)
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.findings import (
    Finding, LintResult, show, sort_findings)
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.linter import DROP, Linter
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.rules import evaluate_rules

__all__ = ["Finding", "LintResult", "lint_text", "lint_document", "lint_merged", "jsonschema_available"]


def jsonschema_available():
    try:
        import jsonschema  # noqa: F401  pylint: disable=unused-import
        return True
    except ImportError:
        return False


def warm():
    """Import jsonschema and load the default schema now: action plugins are imported before Ansible
    forks a worker per host, so the workers inherit this instead of repeating it."""
    try:
        lint_text("{}", source="<warm-up>")
    except Exception:  # pylint: disable=broad-except
        pass  # the real call reports the problem, with its context


def _text_findings(linter, parsed):
    """Findings about the text itself: duplicates, content after the document, encoding."""
    for dup in parsed.duplicates:
        linter.add(dup["path"], None, "duplicate-key", "accepted",
                   "duplicate key (first at line %s); libcufile %s uses the last one and ignores the earlier ones"
                   % (dup["first_line"], linter.version), fix="keep one", severity="warning", raw=True)
    if parsed.trailing:
        linter.add((), None, "trailing-content", "ignored",
                   "content after the end of the JSON document (line %d column %d)" % parsed.trailing,
                   note="jsoncpp stops reading after the root value", fix="remove it or move it into the document",
                   severity="error", where=parsed.trailing)
    if parsed.invalid_utf8:
        line, column, byte = parsed.invalid_utf8
        linter.add((), None, "encoding", "accepted", "byte 0x%02x at line %d column %d is not UTF-8" % (byte, line, column),
                   note="it does not check the encoding", fix="save the file as UTF-8", severity="warning",
                   where=(line, column))


def _lint(doc, source, version, positions=None, check_paths=None, host=None, rules=True):
    linter = Linter(version, source, positions, check_paths, host)
    root = linter.schema.raw
    if positions is not None:
        _text_findings(linter, positions)
    unset_roots = root.get("x-unset-roots", [])
    if not isinstance(doc, dict) and doc in unset_roots:
        linter.add((), doc, "root-unset", "accepted", "the root is %s" % show(doc),
                   note="it treats it as 'not set' and uses its built-in defaults", fix="write an object ({...})",
                   severity="warning")
        return LintResult(sort_findings(linter.findings, linter.unlisted, source), doc, source)
    cleaned = linter.walk(doc, root, ())
    if cleaned is DROP:
        cleaned = {}
    linter.run_jsonschema(cleaned)
    if rules and isinstance(cleaned, dict):
        evaluate_rules(linter, cleaned)
    return LintResult(sort_findings(linter.findings, linter.unlisted, source), doc, source)


def lint_document(doc, source=None, version=DEFAULT_VERSION, check_paths=None, host=None, rules=True):
    """Validate a parsed document (e.g. the module's merged settings). No line numbers."""
    return _lint(doc, source, version, None, check_paths, host, rules)


def lint_text(text, source="<string>", version=DEFAULT_VERSION, check_paths=None, host=None, rules=True):
    """Parse ``text`` (str or bytes) as libcufile does and validate it. Never raises for bad input:
    a syntax error or a text over the size cap is a finding (path ``$``, line and column set) and
    ``document`` is None."""
    try:
        parsed = parse(text)
    except CufileTooLarge as exc:
        finding = Finding("$", None, "error", None, "$: %s; not checked." % exc.message, None, 1, 1,
                          "too-large", source)
        return LintResult([finding], None, source)
    except CufileSyntaxError as exc:
        message = ("$: JSON syntax error at line %d column %d: %s; libcufile %s prints 'parsing error, invalid json config' "
                   "and refuses to load the config (cuFileDriverOpen returns -22)."
                   % (exc.line, exc.column, exc.message, load_schema(version).version))
        finding = Finding("$", None, "error", "load_fails", message, None, exc.line, exc.column, "syntax", source)
        return LintResult([finding], None, source)
    return _lint(parsed.document, source, version, parsed, check_paths, host, rules)


def _as_result(text_or_doc, source, version, check_paths, host, rules):
    if isinstance(text_or_doc, (str, bytes)):
        return lint_text(text_or_doc, source, version, check_paths, host, rules)
    return lint_document(text_or_doc, source, version, check_paths, host, rules)


def lint_merged(etc_text_or_doc, env_text_or_doc, etc_source="/etc/cufile.json", env_source="CUFILE_ENV_PATH_JSON",
                version=DEFAULT_VERSION, check_paths=None, host=None):
    """Validate what libcufile sees with CUFILE_ENV_PATH_JSON: /etc/cufile.json, the env file and the
    env file overlaid on it (a null counts as not set). Either may be None (libcufile's defaults / no
    overlay); a broken one is fatal on its own. ``source`` of a finding: etc_source, env_source or "merged"."""
    findings = []
    docs = []
    for value, source, rules in ((etc_text_or_doc, etc_source, True), (env_text_or_doc, env_source, False)):
        if value is None:
            docs.append(None)
            continue
        result = _as_result(value, source, version, check_paths, host, rules)
        findings.extend(result.findings)
        docs.append(result.document if result.document is not None else DROP)
    if env_text_or_doc is None:
        findings.append(Finding("$", None, "warning", "ignored",
                                "$: no %s file; libcufile %s silently uses %s alone." % (env_source, load_schema(version).version, etc_source),
                                code="env-missing", source=env_source))
    if DROP in docs:
        return LintResult(sort_findings(findings, source="merged"), None, "merged")
    merged = deep_merge(docs[0] if isinstance(docs[0], dict) else {}, docs[1], null_deletes=False)
    seen = set((f.path, f.code) for f in findings)
    merged_result = lint_document(merged, "merged", version, check_paths, host, rules=True)
    findings.extend(f for f in merged_result.findings if (f.path, f.code) not in seen)
    return LintResult(sort_findings(findings, source="merged"), merged, "merged")
