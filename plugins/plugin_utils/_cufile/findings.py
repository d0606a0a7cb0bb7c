# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Finding / LintResult value objects and message helpers of the cufile.json validator.
PRIVATE to the collection. Standard library only."""

from __future__ import annotations

import json
import os

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.releases import (  # noqa: F401 pylint: disable=unused-import
    RELEASES, SHIPPED_RELEASE, config_error_code, known_releases, release_of)

EFFECTS = ("ignored", "load_fails", "aborts", "crashes", "accepted")
# Findings a result lists (errors first); the others are counted in one "more-findings" finding.
MAX_FINDINGS = 50
MAX_VALUE_CHARS = 200  # a finding's value longer than this as JSON is returned as cut JSON text

EFFECT_TEXT = {
    "ignored": "libcufile %s ignores it silently, so it has no effect",
    "load_fails": "libcufile %s refuses to load the config (cuFileDriverOpen returns %s and no cuFile I/O works)",
    "aborts": "libcufile %s aborts the whole process (SIGABRT) when it reads this",
    "crashes": "the process crashes with libcufile %s (measured: killed by a signal other than SIGABRT)",
    "accepted": "libcufile %s loads it",
}

JSON_TYPES = (
    (bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
    (list, "array"), (dict, "object"), (type(None), "null"),
)


def json_type(value):
    for py, name in JSON_TYPES:
        if isinstance(value, py):
            return name
    return type(value).__name__


def show(value, limit=80):
    """Compact JSON text of a value for messages."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def printable(text):
    """Bytes that were not UTF-8 (kept as surrogates by the parser) shown as U+FFFD."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def path_checker(check_paths):
    if not check_paths:
        return None
    if callable(check_paths):
        return check_paths
    if isinstance(check_paths, dict):
        def lookup(path, kind):
            info = check_paths.get(path)
            if info is None:
                return True  # not asked about: do not guess
            return bool(info.get("is_dir") if kind == "dir" else info.get("exists"))
        return lookup
    return lambda path, kind: os.path.isdir(path) if kind == "dir" else os.path.exists(path)


def effect_text(effect, version):
    if effect == "load_fails":
        return EFFECT_TEXT[effect] % (version, config_error_code(version))
    return EFFECT_TEXT.get(effect, "libcufile %s: " + str(effect)) % version


class Finding(object):
    """One problem: ``path`` a JSON path (``$`` the root), ``severity`` error|warning, ``effect`` what
    libcufile does with it (EFFECTS), ``suggestion`` the real key for an unknown one, ``code`` a
    stable category, ``source`` the file (or "merged")."""

    __slots__ = ("path", "value", "severity", "effect", "message", "suggestion", "line", "column", "code", "source")

    def __init__(self, path, value, severity, effect, message, suggestion=None, line=None, column=None,
                 code=None, source=None):
        self.path = path
        self.value = value
        self.severity = severity
        self.effect = effect
        self.message = message
        self.suggestion = suggestion
        self.line = line
        self.column = column
        self.code = code
        self.source = source

    @property
    def is_error(self):
        return self.severity == "error"

    def as_dict(self):
        out = dict((name, getattr(self, name)) for name in self.__slots__)
        if self.code != "more-findings" and len(show(self.value, MAX_VALUE_CHARS + 1)) > MAX_VALUE_CHARS:
            out["value"] = show(self.value, MAX_VALUE_CHARS)
        return out

    def location(self):
        where = self.source or ""
        if self.line:
            where += ":%s:%s" % (self.line, self.column or 1)
        return where

    def text(self):
        where = self.location()
        return "%s%s: %s" % (where + ": " if where else "", self.severity, self.message)

    def __repr__(self):
        return "Finding(%s)" % self.text()


class LintResult(object):
    """All findings of one lint run, and the (merged) document that was checked (None when the
    text could not be parsed)."""

    def __init__(self, findings, document, source=None):
        self.findings = list(findings)
        self.document = document
        self.source = source

    @property
    def errors(self):
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self):
        return [f for f in self.findings if f.severity != "error"]

    @property
    def ok(self):
        return not self.errors

    def count(self, severity):
        """Findings of ``severity``, listed or not."""
        return how_many(self.findings, severity)

    def as_dict(self):
        return {
            "source": self.source,
            "ok": self.ok,
            "errors": self.count("error"),
            "warnings": self.count("warning"),
            "findings": [f.as_dict() for f in self.findings],
        }

    def text(self):
        return "\n".join(f.text() for f in self.findings)

    def __repr__(self):
        return "LintResult(ok=%s, errors=%d, warnings=%d)" % (self.ok, self.count("error"), self.count("warning"))


def more_findings(counts, source=None):
    """The finding that stands for ``counts`` ({"error": n, "warning": m}) findings not listed;
    its ``value`` holds the counts. None when there are none."""
    if not any(counts.values()):
        return None
    parts = ["%d more %s%s" % (n, severity, "" if n == 1 else "s") for severity, n in sorted(counts.items()) if n]
    return Finding("$", dict(counts), "error" if counts.get("error") else "warning", None,
                   "$: %s not listed (the first %d findings are)." % (" and ".join(parts), MAX_FINDINGS),
                   code="more-findings", source=source)


def how_many(findings, severity):
    """Findings of ``severity`` among ``findings``, those a "more-findings" finding stands for included."""
    return sum(f.value.get(severity, 0) if f.code == "more-findings" else int(f.severity == severity) for f in findings)


def sort_findings(findings, unlisted=None, source=None):
    """Findings in file order, duplicates dropped, at most MAX_FINDINGS (errors first); the rest,
    ``unlisted`` ({"error": n, ...}) and earlier "more-findings" counts go into one last finding."""
    seen = set()
    counts = dict(unlisted or {})
    out = []
    for f in findings:
        key = (f.source, f.path, f.code, f.message)
        if f.code == "more-findings":
            for severity, n in f.value.items():
                counts[severity] = counts.get(severity, 0) + n
            continue
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    errors = [f for f in out if f.is_error]
    others = [f for f in out if not f.is_error]
    room = max(0, MAX_FINDINGS - len(errors))
    listed = errors[:MAX_FINDINGS] + others[:room]
    for f in errors[MAX_FINDINGS:] + others[room:]:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    big = float("inf")
    listed = sorted(listed, key=lambda f: (str(f.source or ""), f.line if f.line else big, f.column or 0, f.path))
    more = more_findings(counts, source)
    return listed + [more] if more else listed
