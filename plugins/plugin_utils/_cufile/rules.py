# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Cross-field rules of cufile.json (the schema's ``x-cufile-rules``), which JSON Schema cannot
express, evaluated over a cleaned document. PRIVATE to the collection. Standard library only.
With ``use_defaults`` an absent key counts with libcufile's built-in default, as libcufile does."""

from __future__ import annotations

_MISSING = object()


def _get(doc, dotted):
    node = doc
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _value(linter, doc, dotted, use_defaults, empty_is_unset=False):
    value = _get(doc, dotted)
    if (value is _MISSING or (empty_is_unset and value == [])) and use_defaults:
        default = linter.schema.default_at(dotted)
        return _MISSING if default is None else default
    return value


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _nonempty(value):
    return value is not _MISSING and value not in (None, [], {}, "")


def _path(dotted):
    return tuple(dotted.split("."))


def _blocked(linter, *dotted):
    """A rule is skipped when one of its inputs already has an error (no cascades)."""
    return any(_path(d) in linter.error_paths for d in dotted)


def _origin(doc, dotted):
    return "" if not _is_default(doc, dotted) else " (built-in default)"


def _report(linter, rule, dotted, value, problem, fix=None):
    effect = rule.get("effect", "load_fails")
    if rule.get("effect_text"):
        problem = "%s; %s" % (problem, rule["effect_text"])
    linter.add(_path(dotted), value, "rule:" + rule["id"], effect, problem, fix=fix, note=rule.get("note"),
               severity=rule.get("severity"), raw=bool(rule.get("effect_text")))


def _is_default(doc, dotted):
    value = _get(doc, dotted)
    return value is _MISSING or value == []


def _equal_length(linter, doc, rule, defaults):
    left, right = rule["paths"]
    a = _value(linter, doc, left, defaults, empty_is_unset=True)
    b = _value(linter, doc, right, defaults, empty_is_unset=True)
    if isinstance(a, list) and isinstance(b, list) and len(a) != len(b) and not _blocked(linter, left, right):
        report = rule.get("report", right)
        defaulted = [d for d in rule.get("effect_if_default", {}) if _is_default(doc, d)]
        if defaulted:
            rule = dict(rule, effect=rule["effect_if_default"][defaulted[0]], note=rule.get("note_if_default", rule.get("note")))
            report = left
        _report(linter, rule, report, _get(doc, report) if _get(doc, report) is not _MISSING else None,
                "%d entries in %s%s but %d in %s%s" % (len(b), right, _origin(doc, right), len(a), left, _origin(doc, left)),
                fix="give both arrays the same number of entries")


def _greater_equal(linter, doc, rule, defaults):
    left, right = rule["left"], rule["right"]
    a, b = _value(linter, doc, left, defaults), _value(linter, doc, right, defaults)
    if _is_int(a) and _is_int(b) and a < b and not _blocked(linter, left, right):
        report = rule.get("report", left)
        _report(linter, rule, report, _get(doc, report) if _get(doc, report) is not _MISSING else None,
                "%s %d%s is smaller than %s %d%s" % (left, a, _origin(doc, left), right, b, _origin(doc, right)),
                fix="raise %s or lower %s" % (left.split(".")[-1], right.split(".")[-1]))


def _ratio_at_least(linter, doc, rule, defaults):
    num, den, low = rule["numerator"], rule["denominator"], rule["minimum"]
    a, b, c = (_value(linter, doc, d, defaults) for d in (num, den, low))
    if not (_is_int(a) and _is_int(b) and _is_int(c)) or b <= 0 or _blocked(linter, num, den, low):
        return
    if a < b * c:
        report = rule.get("report", num)
        ratio = "%g" % (float(a) / b)
        problem = "%s / %s = %d / %d = %s, less than %s %d%s" % (
            num.split(".")[-1], den.split(".")[-1], a, b, ratio, low, c, _origin(doc, low))
        _report(linter, rule, report, _get(doc, report) if _get(doc, report) is not _MISSING else None, problem,
                fix="set max_device_cache_size_kb to at least %d or lower io_batchsize" % (b * c))


def _not_both(linter, doc, rule, defaults):
    for section in rule["sections"]:
        values = [_get(doc, section + "." + key) for key in rule["keys"]]
        if all(_nonempty(v) for v in values):
            _report(linter, rule, section + "." + rule["keys"][0], values[0],
                    "both %s are set in %s" % (" and ".join(rule["keys"]), section),
                    fix="keep one of them")


def _requires_any(linter, doc, rule, defaults):
    when = rule["when"]
    value = _get(doc, when["path"])
    if type(value) is not type(when["equals"]) or value != when["equals"]:
        return
    if not any(_nonempty(_get(doc, d)) for d in rule["any_nonempty"]):
        _report(linter, rule, rule.get("report", when["path"]), when["equals"],
                "is %s but no client NIC address is configured" % str(when["equals"]).lower(),
                fix="add properties.rdma_dev_addr_list or a fs.<dfs>.mount_table")


def _host_requires(linter, doc, rule, defaults):
    when = rule["when"]
    value = _get(doc, when["path"])
    if value is _MISSING or value != when["equals"] or type(value) is not type(when["equals"]):
        return
    fact = linter.host.get(rule["host_fact"])
    if fact is None or fact == rule["expect"]:
        return
    _report(linter, rule, rule.get("report", when["path"]), value,
            "is %s" % show_bool(value),
            fix="load nvidia_fs (gpudirect.storage.nvidia_fs) or set allow_compat_mode to true")


def show_bool(value):
    return "true" if value is True else "false" if value is False else str(value)


_KINDS = {
    "equal_length": _equal_length,
    "greater_equal": _greater_equal,
    "ratio_at_least": _ratio_at_least,
    "not_both": _not_both,
    "requires_any": _requires_any,
    "host_requires": _host_requires,
}


def evaluate_rules(linter, doc):
    """Run every rule of ``linter.schema`` over ``doc``; findings go through ``linter.add``."""
    for rule in linter.schema.rules:
        handler = _KINDS.get(rule.get("kind"))
        if handler is None:
            raise ValueError("unknown x-cufile-rules kind %r in the schema" % rule.get("kind"))
        handler(linter, doc, rule, bool(rule.get("use_defaults")))
