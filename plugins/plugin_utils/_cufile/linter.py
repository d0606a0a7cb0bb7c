# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One validation pass over one cufile.json document: the findings. PRIVATE to the collection.
CONTROLLER side (``validate`` is the public API; this is its engine).

:class:`Linter` first checks what jsonschema cannot see (null means "not set", keys newer than the
target libcufile, unknown keys, lenient integers, host paths), then runs jsonschema and turns each
error into a finding that says what libcufile does with the value."""

from __future__ import annotations

import math

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.limits import brief
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import format_path
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.schema import load_schema
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.findings import (
    MAX_FINDINGS, Finding, effect_text, is_int as _is_int, json_type, path_checker as _path_checker,
    printable as _printable, show)

DROP = object()  # what a pass returns for a value libcufile treats as not set


def validator_class():
    try:
        from jsonschema import Draft202012Validator
    except ImportError:
        raise RuntimeError("cufile.json validation needs the Python library jsonschema (>= 4) on the controller: "
                           "pip install jsonschema")
    return Draft202012Validator


class Linter(object):
    """One pass over one document."""

    def __init__(self, version, source, positions=None, check_paths=None, host=None):
        self.schema = load_schema(version)
        self.version = self.schema.version
        self.source = source
        self.positions = positions
        self.check = _path_checker(check_paths)
        self.host = host or {}
        self.findings = []
        self.listed = {}         # severity -> findings made; past MAX_FINDINGS they are only counted:
        self.unlisted = {}       # severity -> findings counted, not made
        self.handled = set()     # paths with a finding that supersedes jsonschema's
        self.originals = {}      # path -> value before integer coercion
        self.error_paths = set()  # every path at or above an error

    # -- findings ----------------------------------------------------------------------------
    def add(self, path, value, code, effect, problem, fix=None, note=None, severity=None, suggestion=None, raw=False,
            where=None):
        if severity is None:
            severity = "warning" if effect == "accepted" else "error"
        if severity == "error":
            self.error_paths.update(tuple(path[:i]) for i in range(len(path) + 1))
        if self.full(severity):
            self.unlisted[severity] = self.unlisted.get(severity, 0) + 1
            return
        self.listed[severity] = self.listed.get(severity, 0) + 1
        dotted = brief(format_path(path), 200)
        if raw:
            message = "%s: %s" % (dotted, problem)
        else:
            message = "%s: %s; %s" % (dotted, problem, effect_text(effect, self.version))
            if note:
                message += " (%s)" % note
        if fix:
            message += "; " + fix
        line = column = None
        if where is not None:
            line, column = where
        elif self.positions is not None:
            line, column = self.positions.position(path)
        if not message.endswith(("?", ".")):
            message += "."
        message, dotted = _printable(message), _printable(dotted)
        self.findings.append(Finding(dotted, value, severity, effect, message, suggestion, line, column, code, self.source))

    def full(self, severity):
        """Are MAX_FINDINGS findings of ``severity`` made? (More are only counted.)"""
        return self.listed.get(severity, 0) >= MAX_FINDINGS

    # -- pass 1: what jsonschema cannot see (null, newer keys, unknown keys, lenient ints, paths)
    def walk(self, value, node, path, in_array=False):
        schema = self.schema
        if value is None and not in_array:
            return DROP  # null means "not set" to libcufile
        why = schema.is_newer(node, self.version)
        if why:
            fix = "remove it"
            if why.startswith("added in "):
                fix += " or target libcufile >= %s" % why[len("added in "):]
            self.add(path, value, "newer-release" if why.startswith("added in ") else "not-read", "ignored",
                     "ignored by libcufile %s: %s, so it has no effect there%s" % (
                         self.version, why, " (%s)" % node["x-since-note"] if node.get("x-since-note") else ""),
                     severity="warning", raw=True, fix=fix)
            return DROP
        if node.get("x-unsettled"):
            self.add(path, value, "unmeasured", "load_fails",
                     "libcufile %s reads this key, but refused every value the sweep tried (one of each kind: %s), "
                     "so its valid values are not known to the validator; check that libcufile loads the file"
                     % (self.version, ", ".join(node["x-unsettled"])),
                     severity="warning", raw=True)
        if json_type(value) in node.get("x-crashes-on", ()):
            self.add(path, value, "crash", "crashes", "%s is %s %s" % (
                show(value), "an" if json_type(value)[0] in "aeio" else "a", json_type(value)),
                fix=("write %d" % int(value)) if node.get("type") == "integer" and isinstance(value, (bool, float))
                and math.isfinite(value) else None)
            self.handled.add(tuple(path))
            return value
        if node.get("x-int-lenient") and isinstance(value, (bool, float)):
            value = self.coerce(value, path)
        low, high = self.schema.raw.get("x-json-integer-range", (None, None))
        if node.get("type") == "integer" and _is_int(value) and low is not None and not low <= value <= high:
            self.add(path, value, "type", "load_fails", "%s is outside the integers jsoncpp can hold" % value,
                     note="it reads it as a floating-point number: 'json type mismatch'", fix=self.range_fix(node))
            self.handled.add(tuple(path))
            return value
        limit = node.get("x-abort-above")
        if limit is not None and _is_int(value) and value > limit and tuple(path) not in self.originals:
            self.add(path, value, "abort-uint", "aborts", "%s is above %d (2^32-1)" % (value, limit),
                     note="jsoncpp 'LargestUInt out of UInt range'", fix=self.range_fix(node))
            self.handled.add(tuple(path))
        if node.get("x-strict-integer") and isinstance(value, float):
            self.add(path, value, "type", "load_fails", "%s is a number with a fraction part, array elements must be integers" % show(value),
                     fix="write %d" % int(value) if math.isfinite(value) else None)
            self.handled.add(tuple(path))
        if isinstance(value, dict) and node.get("type") == "object":
            return self.walk_object(value, node, path)
        if isinstance(value, list) and isinstance(node.get("items"), dict):
            items = schema.resolve(node["items"])
            return [self.walk(v, items, path + (i,), in_array=True) for i, v in enumerate(value)]
        if isinstance(value, str) and value and node.get("x-must-exist"):
            self.check_host_path(path, value, node["x-must-exist"])
        return value

    def walk_object(self, value, node, path):
        schema = self.schema
        out = {}
        for key, member in value.items():
            child = schema.child(node, key)
            if child is None:
                self.unknown_key(path + (key,), member, node)
                continue
            result = self.walk(member, child, path + (key,))
            if result is not DROP:
                out[key] = result
        if node.get("x-keys-must-exist"):
            member = node.get("x-keys-must-exist-certain-when")
            for key, entry in value.items():
                sometimes = bool(member) and not (isinstance(entry, dict) and entry.get(member))
                self.check_host_path(path + (key,), key, node["x-keys-must-exist"], is_key=True, sometimes=sometimes)
        return out

    def unknown_key(self, path, value, parent):
        effect = parent.get("x-effects", {}).get("additionalProperties", "ignored")
        if self.full("error"):  # only counted: no suggestion to look for, no message to make
            self.add(path, value, "unknown-key", effect, None, severity="error")
            return
        suggestion, note = self.schema.suggest(path, self.version)
        where = format_path(path[:-1])
        problem = "unknown key%s (value %s)" % (" at the top level" if where == "$" else " in " + where, show(value, 40))
        fix = ("did you mean %s?" % suggestion) if suggestion else "remove it"
        self.add(path, value, "unknown-key", effect, problem, fix=fix, note=note, suggestion=suggestion,
                 severity="error")

    def coerce(self, value, path):
        self.originals[tuple(path)] = value
        if isinstance(value, bool):
            as_int = int(value)
            problem, fix = "%s is a boolean, expected an integer" % show(value), "write %d" % as_int
        elif not math.isfinite(value):
            return value
        else:
            as_int = int(value)
            if float(as_int) == value:
                problem = "%s is written as a decimal number, expected an integer" % show(value)
            else:
                problem = "%s has a fraction part, expected an integer" % show(value)
            fix = "write %d" % as_int
        self.add(path, value, "lenient-int", "accepted", problem, note="it reads it as %d" % as_int, fix=fix)
        return as_int

    def check_host_path(self, path, host_path, kind, is_key=False, sometimes=False):
        if self.check is None:
            return
        if self.check(host_path, kind):
            return
        what = "an existing directory" if kind == "dir" else "an existing path"
        note = None
        if sometimes:
            note = ("measured: for an entry without addresses it does so only in some combinations with the other "
                    "entries; such an entry has no effect anyway")
        self.add(path, host_path, "path-missing", "load_fails",
                 "%s %s is not %s on the host" % ("mount point" if is_key else "path", show(host_path), what),
                 note=note, fix="create it first or remove the entry")

    # -- pass 2: jsonschema -----------------------------------------------------------------------
    def run_jsonschema(self, doc):
        validator = getattr(self.schema, "_validator", None)
        if validator is None:
            cls = validator_class()
            validator = self.schema._validator = cls(self.schema.raw, format_checker=cls.FORMAT_CHECKER)
        errors = list(validator.iter_errors(doc))
        # a value out of range gets one finding whose fix is a valid value, not a second one for its alignment
        out_of_range = set(tuple(e.absolute_path) for e in errors if e.validator in ("minimum", "maximum"))
        for error in errors:
            path = tuple(error.absolute_path)
            if path in self.handled or (error.validator == "multipleOf" and path in out_of_range):
                continue
            self.schema_error(error, path)

    def schema_error(self, error, path):
        node = error.schema if isinstance(error.schema, dict) else {}
        kw = error.validator
        effect = node.get("x-effects", {}).get(kw) or node.get("x-effect") or "load_fails"
        note = node.get("x-notes", {}).get(kw)
        value = self.originals.get(path, error.instance)
        shown = show(value)
        fix = None
        code = {"type": "type", "minimum": "range", "maximum": "range", "multipleOf": "alignment", "enum": "enum",
                "pattern": "pattern", "format": "format", "minLength": "length"}.get(kw, kw)
        if kw == "type":
            problem, fix = self.type_problem(node, value, path)
        elif kw in ("minimum", "maximum"):
            word = "below the minimum" if kw == "minimum" else "above the maximum"
            problem = "%s is %s %s%s" % (shown, word, error.validator_value, self.unit(path))
            fix = self.range_fix(node, value, path)
        elif kw == "multipleOf":
            step = error.validator_value
            problem = "%s is not a multiple of %s%s" % (shown, step, self.unit(path))
            lower, upper = (value // step) * step, (value // step + 1) * step
            valid = [v for v in (lower, upper) if v > 0 and node.get("minimum", v) <= v <= node.get("maximum", v)]
            fix = "use %s" % " or ".join(str(v) for v in valid) if valid else self.range_fix(node, value, path)
        elif kw == "enum":
            allowed = error.validator_value
            problem = "%s is not one of %s" % (shown, ", ".join(str(v) for v in allowed))
            if isinstance(value, str):
                match = [v for v in allowed if str(v).lower() == value.lower()]
                if match:
                    problem += " (values are case-sensitive)"
                    fix = "write %s" % show(match[0])
            fix = fix or "use one of %s" % ", ".join(str(v) for v in allowed)
        elif kw == "pattern":
            problem = "%s is not %s" % (shown, node.get("x-pattern-description", "matching " + str(error.validator_value)))
        elif kw == "format":
            problem = "%s is not an %s address" % (shown, "IPv4" if error.validator_value == "ipv4" else error.validator_value)
            fix = "list client IPv4 addresses"
        elif kw == "minLength":
            problem = "empty string"
        elif kw == "not":
            problem = "%s is not allowed for this key" % shown
        else:
            problem = error.message
        self.add(path, value, code, effect, problem, fix=fix, note=note)

    def type_problem(self, node, value, path):
        expected = node.get("type")
        found = json_type(value)
        shown = show(value)
        if expected == "object":
            example = node.get("x-example")
            what = "the root" if not path else "this section" if "properties" in node else "this key"
            problem = "%s is %s %s, but %s must be an object" % (shown, "an" if found[0] in "aeio" else "a", found, what)
            return problem, "write an object%s" % (", e.g. " + show(example) if example else " ({...})")
        problem = "%s is %s %s, expected %s" % (shown, "an" if found[0] in "aeio" else "a", found,
                                                {"integer": "an integer", "array": "an array", "boolean": "a boolean (true/false)",
                                                 "string": "a string"}.get(expected, expected))
        fix = None
        if expected == "boolean" and isinstance(value, (str, int)) and str(value).lower() in ("true", "false", "1", "0", "yes", "no"):
            fix = "write %s without quotes" % ("true" if str(value).lower() in ("true", "1", "yes") else "false")
        elif expected == "integer" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
            fix = "write %s without quotes" % value.strip()
        elif expected == "array" and isinstance(value, (str, int, float)) and not isinstance(value, bool):
            fix = "write [%s]" % shown
        elif expected == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
            fix = 'write it in double quotes: "%s"' % value
        return problem, fix

    @staticmethod
    def unit(path):
        key = path[-2] if path and isinstance(path[-1], int) and len(path) > 1 else (path[-1] if path else "")
        return " KB" if isinstance(key, str) and key.endswith("_kb") else ""

    def range_fix(self, node, value=None, path=()):
        low, high = node.get("minimum"), node.get("maximum")
        text = None
        step = node.get("multipleOf")
        if step and isinstance(value, int) and not isinstance(value, bool) and (
                (high is not None and value > high) or (low is not None and value < low)):
            text = "use %d" % ((high // step) * step if high is not None and value > high else -(-low // step) * step)
        elif low is not None and high is not None:
            text = "use a value in %s..%s" % (low, high)
        elif low is not None:
            text = "use a value >= %s" % low
        if (isinstance(value, int) and high is not None and value > high and value % 1024 == 0
                and self.unit(path) and (low or 0) <= value // 1024 <= high):
            text = "the key is in KB, not bytes: %d bytes = %d KB" % (value, value // 1024)
        return text
