#!/usr/bin/env python
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Generate the sweep's cases: one cufile.json text each, the same set for every release.

Keys come from three places: the 1.15 schema (schemas/cufile-1.15.schema.json: types, ranges,
shipped values), the string tables of every release (strings-keys.json, from strings_keys.py)
and a few keys named by hand (EXTRA_KEYS). A key a release does not know is silently ignored,
so a value of the wrong JSON type tells whether a release reads a key: ignored -> "ok", read ->
load_fails or aborts. Keys whose type the schema does not give get one probe per JSON kind
(bool, int, string, array, object): the kinds a release accepts are its type.

Tiers (run.py runs tier 0 of every release first, then tier 1, ...):
  0  per key: a wrong-type value and a valid one; per section: a string and an array; baseline {}
  1  per key: the other JSON kinds (type leniency); per section: {} and an unknown member;
     the file-format cases (comments, trailing comma, BOM, roots, duplicates)
  2  ranges, alignment, enums, 2^32, cross-field rules and host paths (from the 1.15 schema)

Usage: cases.py [--schema S] [--strings K] [--out cases.jsonl]   (stdlib only)
Each line: {"id", "tier", "group", "key", "probe", "kind", "text"}; kind = the JSON kind of the
probed value (bool|int|float|string|array|object|null|raw).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
SCHEMA = os.path.join(ROOT, "schemas", "cufile-1.15.schema.json")
STRINGS = os.path.join(HERE, "strings-keys.json")

# Keys measured by hand before the sweep, and paths the string tables only show
# as fragments (1.17+: 'properties.gpu_bounce_buffer_slab_config.slab_si' glued to the next string).
EXTRA_KEYS = (
    "properties.gpu_bounce_buffer_slab_config.slab_size_kb",
    "properties.gpu_bounce_buffer_slab_config.slab_count",
    "properties.vanilla_posix_io_mode",
    "properties.gds_fallback_io",
    "properties.rdma_transport_type",
    "properties.compat_odirect_unaligned_read_split",
    "block.raid1.use_pci_p2pdma",
    "miscellaneous.rdma_token_reset_timeout_secs",
    "logging.max_file_size_mb",
)
# Section-level probes: JSON kinds that are not an object (jsoncpp aborts on member access).
UNKNOWN_MEMBER = "zz_sweep_unknown"
GBB = "properties.gpu_bounce_buffer_slab_config"
EXISTING_DIR = "/tmp"                    # exists on the GPU host and in CI
MISSING_PATH = "/nonexistent-cufile-sweep"
KIND_VALUES = (("bool", True), ("int", 1), ("string", "x"), ("array", []), ("object", {}))
SYNTH_VALID = {"boolean": False, "string": "x", "array": [], "object": {}}


def kind_of(value):
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def nest(path, value):
    doc = value
    for part in reversed(path.split(".")):
        doc = {part: doc}
    return doc


class Schema(object):
    def __init__(self, raw):
        self.raw = raw
        self.leaves = {}    # dotted path -> resolved schema node
        self.sections = set()
        self._walk(raw, ())

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node:
            target = self.raw
            for part in node["$ref"][2:].split("/"):
                target = target[part]
            node = target
        return node

    def _walk(self, node, path):
        for key, child in sorted(self.resolve(node).get("properties", {}).items()):
            child = self.resolve(child)
            here = path + (key,)
            if child.get("type") == "object" and "properties" in child:
                self.sections.add(".".join(here))
                self._walk(child, here)
            else:
                self.leaves[".".join(here)] = child


def valid_value(path, node):
    """A value the 1.15 documentation calls correct for the key (shipped, default or synthesized)."""
    special = {
        "logging.dir": EXISTING_DIR,
        "properties.gpu_bounce_buffer_slab_config.slab_size_kb": [1024, 16384],
        "properties.gpu_bounce_buffer_slab_config.slab_count": [64, 8],
        "properties.rdma_dc_key": "0xffeeddcc",
        "properties.rdma_access_mask": "0x1f",
        "properties.rdma_dev_addr_list": ["10.0.0.1"],
    }
    if path in special:
        return special[path]
    if path.endswith(".mount_table"):
        return {EXISTING_DIR: {"rdma_dev_addr_list": ["10.0.0.1"]}}
    if path.endswith(".rdma_dev_addr_list"):
        return ["10.0.0.1"]
    for keyword in ("x-shipped", "default", "x-example"):
        if node.get(keyword) is not None and not (keyword == "default" and node.get("type") == "integer"
                                                  and node[keyword] > 2 ** 32):
            return node[keyword]
    kind = node.get("type")
    if kind == "integer":
        low = node.get("minimum", 0)
        step = node.get("multipleOf", 1)
        return max(low, 0) + (-max(low, 0)) % step
    if kind == "string" and node.get("enum"):
        return node["enum"][0]
    return SYNTH_VALID.get(kind, False)


def wrong_value(node):
    """A value of a JSON kind the key's documented type rejects."""
    return 12345 if node.get("type") == "string" else "x"


class Builder(object):
    def __init__(self):
        self.cases = []
        self.ids = set()

    def add(self, tier, group, key, probe, value=None, text=None, document=None):
        """One case: ``value`` at ``key``, or a whole ``document`` (kind still that of ``value``),
        or a raw ``text`` (kind "raw")."""
        case_id = "%s:%s" % (key or group, probe)
        if case_id in self.ids:
            return
        self.ids.add(case_id)
        if text is None:
            text = json.dumps(document if document is not None else nest(key, value) if key else value, sort_keys=True)
            kind = kind_of(value)
        else:
            kind = "raw"
        self.cases.append({"id": case_id, "tier": tier, "group": group, "key": key, "probe": probe,
                           "kind": kind, "text": text})


def key_inventory(schema, strings):
    """Every key to probe: schema leaves, string-table keys of all releases, EXTRA_KEYS."""
    keys = dict((path, node) for path, node in schema.leaves.items())
    for release in strings.get("releases", {}).values():
        for path in release["keys"]:
            keys.setdefault(path, None)
    for path in EXTRA_KEYS:
        keys.setdefault(path, None)
    # a string-table path whose parent is a leaf in the schema (mount_table members) is not a key
    return dict((p, n) for p, n in keys.items() if not any(p.startswith(q + ".") for q in schema.leaves))


def sections_of(keys, schema):
    found = set(schema.sections)
    for path in keys:
        parts = path.split(".")
        for i in range(1, len(parts)):
            found.add(".".join(parts[:i]))
    return sorted(found)


def key_cases(b, path, node):
    if node is None or not node.get("type"):  # type unknown: one probe per JSON kind, all in tier 0/1
        for i, (kind, value) in enumerate(KIND_VALUES):
            b.add(0 if i < 3 else 1, "key", path, "kind-" + kind, value)
        for probe, value in (("zero", 0), ("negative", -1), ("2^32", 2 ** 32)):  # integer semantics, if any
            b.add(2, "range", path, probe, value)
        return
    b.add(0, "key", path, "wrong-type", wrong_value(node))
    valid = valid_value(path, node)
    parent, _sep, leaf = path.rpartition(".")
    if parent == GBB:  # the two slab arrays are read together: a valid value needs both
        both = dict((k, valid_value(parent + "." + k, {})) for k in ("slab_size_kb", "slab_count"))
        b.add(0, "key", path, "valid", valid, document=nest(parent, both))
    else:
        b.add(0, "key", path, "valid", valid)
    kind = node["type"]
    lenient = {"boolean": (("int", 1), ("string", "true")), "integer": (("bool", True), ("float", 1.5), ("array", [])),
               "string": (("bool", True), ("array", [])), "array": (("int", 1), ("object", {})),
               "object": (("array", []), ("int", 1))}
    for probe, value in lenient.get(kind, ()):
        b.add(1, "key", path, "kind-" + probe, value)
    if kind == "integer":
        integer_cases(b, path, node)
    elif kind == "string" and node.get("enum"):
        b.add(2, "range", path, "enum-bogus", "bogus")
        b.add(2, "range", path, "enum-case", node["enum"][0].swapcase())
    elif kind == "array":
        items = node.get("items") or {}
        b.add(2, "range", path, "element-wrong-type", [12345] if items.get("type") == "string" else ["x"])
        if items.get("type") == "integer":
            b.add(2, "range", path, "element-float", [64.5])
        if items.get("enum"):
            b.add(2, "range", path, "element-bogus", ["BOGUS"])


def integer_cases(b, path, node):
    low, high, step = node.get("minimum"), node.get("maximum"), node.get("multipleOf")
    if low is not None:
        b.add(2, "range", path, "below-minimum", low - (step or 1))
        b.add(2, "range", path, "minimum", low + (-low) % (step or 1))
    if high is not None and high < 2 ** 32:
        b.add(2, "range", path, "above-maximum", high + (step or 1))
    if step:
        base = max(low or 0, step)
        b.add(2, "range", path, "not-multiple", base + step // 2 if step > 1 else base)
    b.add(2, "range", path, "negative", -1)
    b.add(2, "range", path, "2^32", 2 ** 32)


def section_cases(b, section):
    b.add(0, "section", section, "kind-string", "x")
    b.add(0, "section", section, "kind-array", [])
    b.add(1, "section", section, "kind-object", {})
    b.add(1, "section", section, "unknown-member", {UNKNOWN_MEMBER: "x"})


FORMAT_CASES = (  # (probe, text): how the parser reads the file (1.15 facts in docs/cufile.md)
    ("line-comment", '// c\n{"logging": {"level": "ERROR"} // c\n}'),
    ("block-comment", '/* c */ {/* c */ "logging": {"level": "ERROR"}}'),
    ("hash-comment", '# c\n{}'),
    ("trailing-comma", '{"logging": {"level": "ERROR"},}'),
    ("single-quote", "{'logging': {}}"),
    ("empty-file", ""),
    ("bom", "\ufeff{}"),
    ("unbalanced", '{"logging": {}'),
    ("root-null", "null"),
    ("root-array", "[]"),
    ("root-number", "42"),
    ("root-string", '"x"'),
    ("trailing-content", "{} x"),
    ("duplicate-key", '{"logging": {"level": "x"}, "logging": {"level": "ERROR"}}'),
    ("section-case", '{"Properties": {"io_batchsize": "x"}}'),
    ("unknown-top", '{"%s": "x"}' % UNKNOWN_MEMBER),
    ("flat-keys", '{"io_batchsize": "x", "max_io_threads": "x"}'),
    ("null-value", '{"properties": {"io_batchsize": null}}'),
    ("float-dot", '{"properties": {"io_batchsize": 1.}}'),
    ("hex-number", '{"properties": {"io_batchsize": 0x40}}'),
)

RULE_CASES = (  # (probe, document): cross-field rules and host paths of the 1.15 schema
    ("slab-length-mismatch", {"properties": {"posix_pool_slab_size_kb": [4, 1024], "posix_pool_slab_count": [1, 2, 3]}}),
    ("slab-sizes-without-counts", {"properties": {"posix_pool_slab_size_kb": [4, 1024]}}),
    ("direct-io-below-per-buffer", {"properties": {"max_direct_io_size_kb": 64, "per_buffer_cache_size_kb": 1024}}),
    ("direct-io-equal-per-buffer", {"properties": {"max_direct_io_size_kb": 64, "per_buffer_cache_size_kb": 64}}),
    ("compat-mode-false", {"properties": {"allow_compat_mode": False}}),
    ("logging-dir-missing", {"logging": {"dir": MISSING_PATH}}),
    ("logging-dir-empty", {"logging": {"dir": ""}}),
    ("denylist-device-missing", {"denylist": {"devices": [MISSING_PATH]}}),
    ("denylist-mount-missing", {"denylist": {"mounts": [MISSING_PATH]}}),
    ("denylist-mount-existing", {"denylist": {"mounts": [EXISTING_DIR]}}),
    ("mount-table-missing-dir", {"fs": {"lustre": {"mount_table": {MISSING_PATH: {"rdma_dev_addr_list": ["10.0.0.1"]}}}}}),
    ("gbb-counts-mismatch", {"properties": {"gpu_bounce_buffer_slab_config": {"slab_size_kb": [1024, 16384], "slab_count": [64]}}}),
    ("gbb-sizes-only", {"properties": {"gpu_bounce_buffer_slab_config": {"slab_size_kb": [1024]}}}),
    ("gbb-counts-only", {"properties": {"gpu_bounce_buffer_slab_config": {"slab_count": [64]}}}),
    ("gbb-not-increasing", {"properties": {"gpu_bounce_buffer_slab_config": {"slab_size_kb": [16384, 1024], "slab_count": [8, 64]}}}),
    ("gbb-unaligned", {"properties": {"gpu_bounce_buffer_slab_config": {"slab_size_kb": [1025], "slab_count": [64]}}}),
    ("gbb-with-legacy", {"properties": {"gpu_bounce_buffer_slab_config": {"slab_size_kb": [1024], "slab_count": [64]},
                                        "max_device_cache_size_kb": 131072}}),
)


def generate(schema_raw, strings):
    schema = Schema(schema_raw)
    keys = key_inventory(schema, strings)
    b = Builder()
    b.add(0, "baseline", None, "empty-object", {})
    for path in sorted(keys):
        key_cases(b, path, keys[path])
    for section in sections_of(keys, schema):
        section_cases(b, section)
    for probe, text in FORMAT_CASES:
        b.add(1, "format", None, probe, text=text)
    for probe, doc in RULE_CASES:
        b.add(2, "rule", None, probe, doc)
    return b.cases


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--schema", default=SCHEMA)
    p.add_argument("--strings", default=STRINGS)
    p.add_argument("--out", default="-")
    args = p.parse_args(argv)
    with open(args.schema) as f:
        schema_raw = json.load(f)
    strings = {}
    if os.path.isfile(args.strings):
        with open(args.strings) as f:
            strings = json.load(f)
    cases = generate(schema_raw, strings)
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    for case in cases:
        out.write(json.dumps(case, sort_keys=True) + "\n")
    if out is not sys.stdout:
        out.close()
    tiers = {}
    for case in cases:
        tiers[case["tier"]] = tiers.get(case["tier"], 0) + 1
    sys.stderr.write("%d cases (%s)\n" % (len(cases), ", ".join("tier %d: %d" % kv for kv in sorted(tiers.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
