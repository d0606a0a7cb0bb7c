# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A libcufile release's cufile.json schema: how it is built, navigation, known paths and key
suggestions. PRIVATE to the collection. Controller side (standard library only, but it needs the
collection's ``schemas/`` directory, which is not shipped to targets).

Two files in ``schemas/`` make every release's schema (JSON Schema draft 2020-12):
``cufile-1.15.schema.json``, the reviewed base (its ``$comment`` explains the vendor keywords
``x-effect``, ``x-since``, ``x-cufile-aliases``, ``x-cufile-rules``, ...), and
``cufile-releases.json``, what the sweep measured for each release 1.13-1.20. :func:`release_view`
joins them into the schema of one release; ``bin/cufile-lint --schema 1.20`` prints it. A release
with its own ``cufile-<release>.schema.json`` starts from that file instead of the base.
"""

from __future__ import annotations

import copy
import difflib
import json
import os

from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.findings import (
    config_error_code, known_releases, release_of)
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import format_path

DEFAULT_VERSION = "1.15"
# The reviewed schema file every release's view starts from, and the measured per-release data.
BASE_RELEASE = "1.15"
RELEASES_FILE = "cufile-releases.json"
SCHEMA_DIR = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "schemas"))
_CACHE = {}


def version_tuple(version):
    """"1.15" -> (1, 15); "1.15.1" -> (1, 15, 1)."""
    try:
        return tuple(int(part) for part in str(version).split("."))
    except ValueError:
        raise ValueError("invalid libcufile version %r (expected e.g. 1.15)" % (version,))


def available_versions(schema_dir=None):
    names = os.listdir(schema_dir or SCHEMA_DIR) if os.path.isdir(schema_dir or SCHEMA_DIR) else []
    found = [n[len("cufile-"):-len(".schema.json")] for n in names if n.startswith("cufile-") and n.endswith(".schema.json")]
    return sorted(found, key=version_tuple)


def schema_path(version=DEFAULT_VERSION, schema_dir=None):
    """Path of the schema for ``version`` ("1.15" or "1.15.1": the major.minor file is used)."""
    parts = version_tuple(version)
    short = "%d.%d" % parts[:2] if len(parts) >= 2 else str(version)
    path = os.path.join(schema_dir or SCHEMA_DIR, "cufile-%s.schema.json" % short)
    if not os.path.isfile(path):
        raise ValueError("no cufile.json schema for libcufile %s (available: %s)"
                         % (version, ", ".join(available_versions(schema_dir)) or "none"))
    return path


class CufileSchema(object):
    """One loaded schema plus the indexes built from it."""

    def __init__(self, raw, version):
        self.raw = raw
        self.version = version
        self.aliases = raw.get("x-cufile-aliases", {})
        self.rules = raw.get("x-cufile-rules", [])
        self.known = {}  # dotted path -> schema node, every named key (x-since ones included)
        self._index(raw, ())
        self._readable = {}  # target version -> (readable paths, leaf name -> the paths ending in it)

    # -- navigation ----------------------------------------------------------------------------
    def resolve(self, node):
        """Follow a local ``$ref`` (``#/$defs/...``)."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node and seen < 16:
            ref = node["$ref"]
            if not ref.startswith("#/"):
                raise ValueError("only local $ref supported: %s" % ref)
            target = self.raw
            for part in ref[2:].split("/"):
                target = target[part]
            node, seen = target, seen + 1
        return node

    def child(self, node, key):
        """Schema node for member ``key`` (str) or item ``key`` (int) of ``node``; None if unknown."""
        node = self.resolve(node)
        if not isinstance(node, dict):
            return None
        if isinstance(key, int):
            items = node.get("items")
            return self.resolve(items) if isinstance(items, dict) else None
        props = node.get("properties", {})
        if key in props:
            return self.resolve(props[key])
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            return self.resolve(extra)
        return None

    def node_at(self, path):
        node = self.raw
        for key in path:
            node = self.child(node, key)
            if node is None:
                return None
        return node

    def _index(self, node, path):
        node = self.resolve(node)
        for key, sub in node.get("properties", {}).items():
            child = path + (key,)
            self.known[".".join(child)] = self.resolve(sub)
            self._index(sub, child)

    # -- metadata --------------------------------------------------------------------------------
    def is_newer(self, node, target_version=None):
        """Why the target libcufile does not read ``node`` ("added in 1.16", measured, or the
        base schema's x-since), else None."""
        if not isinstance(node, dict):
            return None
        if node.get("x-not-read"):
            return node["x-not-read"]
        since = node.get("x-since")
        if since and version_tuple(since) > version_tuple(target_version or self.version)[:2]:
            return "added in %s" % since
        return None

    def readable_paths(self, target_version=None):
        """Dotted paths the target release reads (leaves and sections)."""
        return self._readable_index(target_version)[0]

    def _readable_index(self, target_version):
        """(readable paths, leaf name -> the readable paths ending in it), made once per target release."""
        key = target_version or self.version
        if key not in self._readable:
            out = []
            for path in self.known:
                parts = path.split(".")
                if not any(self.is_newer(self.known[".".join(parts[:i])], key) for i in range(1, len(parts) + 1)):
                    out.append(path)
            leaves = {}
            for path in sorted(out):
                leaves.setdefault(path.split(".")[-1], []).append(path)
            self._readable[key] = (sorted(out), leaves)
        return self._readable[key]

    def default_at(self, dotted):
        node = self.known.get(dotted)
        return node.get("default") if isinstance(node, dict) else None

    def must_exist_specs(self):
        """Where host paths must exist: list of (dotted pattern, what, kind); what is
        "value" (the string), "items" (each array element) or "keys" (each object key)."""
        specs = []
        for dotted, node in sorted(self.known.items()):
            if node.get("x-must-exist"):
                specs.append((dotted, "value", node["x-must-exist"]))
            items = self.resolve(node.get("items")) if isinstance(node.get("items"), dict) else None
            if items and items.get("x-must-exist"):
                specs.append((dotted, "items", items["x-must-exist"]))
            if node.get("x-keys-must-exist"):
                specs.append((dotted, "keys", node["x-keys-must-exist"]))
        return specs

    # -- suggestions -----------------------------------------------------------------------------
    def suggest(self, path, target_version=None):
        """(suggested dotted key or None, note or None) for an unknown key at ``path`` (tuple)."""
        key = path[-1]
        dotted = format_path(path)
        for probe in (dotted, key):
            if probe in self.aliases:
                alias = self.aliases[probe]
                if isinstance(alias, dict):
                    return alias.get("to"), alias.get("note")
                return alias, None
        if isinstance(key, str) and key.upper().startswith("CUFILE_"):
            return None, "environment variable names are not cufile.json keys"
        readable, leaves = self._readable_index(target_version)
        parent = self.node_at(path[:-1])
        siblings = sorted(parent.get("properties", {})) if isinstance(parent, dict) else []
        prefix = format_path(path[:-1])
        prefix = "" if prefix == "$" else prefix + "."
        lowered = [s for s in siblings if s.lower() == str(key).lower()]
        if lowered:
            return prefix + lowered[0], "keys are case-sensitive"
        same_leaf = leaves.get(key, [])
        if same_leaf:
            note = "it belongs in another section"
            if len(same_leaf) > 1:
                note += " (also: %s)" % ", ".join(same_leaf[1:4])
            return same_leaf[0], note
        close = difflib.get_close_matches(str(key), siblings, n=1, cutoff=0.75)
        if close:
            return prefix + close[0], None
        close = difflib.get_close_matches(str(key), sorted(leaves), n=1, cutoff=0.8)
        if close:
            return leaves[close[0]][0], None
        close = difflib.get_close_matches(dotted, readable, n=1, cutoff=0.8)
        if close:
            return close[0], None
        return None, None


def _read_json(path):
    if path not in _CACHE:
        with open(path, "r") as f:
            _CACHE[path] = json.load(f)
    return _CACHE[path]


def release_data(schema_dir=None):
    """``schemas/cufile-releases.json`` (the sweep's measurements), or None where it is absent."""
    path = os.path.join(schema_dir or SCHEMA_DIR, RELEASES_FILE)
    return _read_json(path) if os.path.isfile(path) else None


# The sweep's probe names for one value of each JSON kind -> the JSON type.
_PROBE_KINDS = {"kind-bool": "boolean", "kind-int": "integer", "kind-float": "number", "kind-string": "string",
                "kind-array": "array", "kind-object": "object"}


def _reaction_effect(reaction):
    """'load_fails:5002' -> 'load_fails'; 'aborts' -> 'aborts'; anything else -> None."""
    effect = str(reaction or "").split(":", maxsplit=1)[0]
    return effect if effect in ("load_fails", "aborts") else None


def not_read_reason(entry, release):
    """Why ``release`` does not read a key, from its measured first/last release and gaps."""
    first, last = entry.get("first"), entry.get("last")
    if not first:
        named = entry.get("strings") or []
        return "no measured release (%s) reads it%s" % (
            "-".join([known_releases()[0], known_releases()[-1]]),
            "; named in the string table of %s" % ", ".join(named) if named else "")
    if version_tuple(release) < version_tuple(first):
        return "added in %s" % first
    if version_tuple(release) > version_tuple(last):
        return "read up to %s only" % last
    return "not read in %s (read in %s-%s)" % (release, first, last)


def _node_for(view, dotted, section):
    """The schema node of ``dotted`` in ``view``, created (as the measurements describe it) when
    the base schema lacks it; (node, created)."""
    node, created = view, False
    parts = dotted.split(".")
    for i, key in enumerate(parts):
        props = node.setdefault("properties", {})
        if key not in props:
            is_section = section or i < len(parts) - 1
            props[key] = ({"type": "object", "additionalProperties": False, "properties": {},
                           "x-effects": {"additionalProperties": "ignored"}} if is_section else {})
            created = i == len(parts) - 1
        node = props[key]
    return node, created


def _apply_measured(node, created, entry, release, section):
    """Make ``node`` say what ``release`` does with its key, from the sweep's ``entry``."""
    node.pop("x-since", None)
    node.pop("x-since-note", None)
    measured = (entry.get("per_release") or {}).get(release) or {}
    if not measured.get("read"):
        if entry.get("first") or created:
            node["x-not-read"] = not_read_reason(entry, release)
        elif "type" in node:
            # in the base schema, yet no probe of any release changed the outcome: not an error
            node.setdefault("x-effects", {})["type"] = "accepted"
            node.setdefault("x-notes", {})["type"] = (
                "measured: no libcufile release from %s to %s reacts to a wrong value here"
                % (known_releases()[0], known_releases()[-1]))
        return
    node["x-read-since"] = entry["first"]
    crashes = sorted(_PROBE_KINDS[probe] for probe, reaction in (measured.get("probes") or {}).items()
                     if reaction == "crashed" and probe in _PROBE_KINDS)
    if crashes:
        node["x-crashes-on"] = crashes
    effect = _reaction_effect(measured.get("wrong_type"))
    if created:
        if not measured.get("type") and not section:
            # every probe value was refused: no type to check against; say which kinds were tried
            node["x-unsettled"] = sorted(_PROBE_KINDS.get(p, p) for p in measured.get("probes") or {})
        if measured.get("type") and not section:
            node["type"] = measured["type"]
            if measured["type"] == "integer" and "bool" in (measured.get("accepts") or []):
                node["x-int-lenient"] = True  # measured: true/false load (read as 1/0)
        if effect:
            node["x-effect"] = effect
        node["x-notes"] = {"type": (
            "measured: read by libcufile %s-%s; %s; ranges and values not measured" % (
                entry["first"], entry["last"],
                "type %s from the values it accepts" % measured["type"] if measured.get("type")
                else "it refused every probe value (one of each kind: %s), so the sweep does not settle its type"
                % ", ".join(sorted(_PROBE_KINDS.get(p, p) for p in measured.get("probes") or {})))) if not section else
            "measured: read by libcufile %s-%s; a value that is not an object %s" % (
                entry["first"], entry["last"], effect or "loads")}
    elif effect and effect != node.get("x-effect", "load_fails"):
        node.setdefault("x-effects", {})["type"] = effect


def release_view(raw, data, release):
    """The base schema ``raw`` as libcufile ``release`` reads it, from the measured ``data``
    (schemas/cufile-releases.json): keys it does not read get ``x-not-read`` (the reason),
    keys it reads that the base lacks are added with the measured type and reaction."""
    view = copy.deepcopy(raw)
    view["x-cufile-version"] = release
    view["x-cufile-base"] = raw.get("x-cufile-version", BASE_RELEASE)
    if release != view["x-cufile-base"]:
        view["$id"] = "urn:gpudirect-storage:cufile-json:libcufile-%s" % release
        view["title"] = "cufile.json for libcufile %s (schemas/cufile-%s.schema.json as the sweep measured %s)" % (
            release, view["x-cufile-base"], release)
    view["x-load-fail-code"] = config_error_code(release)
    if not data or release not in data.get("releases", {}):
        return view
    entries = [(dotted, entry, True) for dotted, entry in data.get("sections", {}).items()]
    entries += [(dotted, entry, False) for dotted, entry in data.get("keys", {}).items()]
    for dotted, entry, section in sorted(entries, key=lambda e: (e[0].count("."), e[0])):
        parent = view
        for key in dotted.split(".")[:-1]:
            parent = (parent.get("properties") or {}).get(key)
            if parent is None or parent.get("x-not-read"):
                break
        if parent is None or parent.get("x-not-read"):
            continue  # the section is not read: its keys are reported through it
        node, created = _node_for(view, dotted, section)
        _apply_measured(node, created, entry, release, section)
    return view


def load_schema(version=DEFAULT_VERSION, schema_dir=None):
    """The :class:`CufileSchema` for ``version`` ("1.17", or a full version "1.17.1.22"; cached):
    the release's own schema file where there is one, else the base (1.15) file, in the view of
    that release's measurements."""
    release = release_of(version)
    if release is None:
        raise ValueError("no cufile.json schema for libcufile %s (known releases: %s)"
                         % (version, ", ".join(known_releases())))
    key = ("view", schema_dir, release)
    if key not in _CACHE:
        own = os.path.join(schema_dir or SCHEMA_DIR, "cufile-%s.schema.json" % release)
        raw = _read_json(own if os.path.isfile(own) else schema_path(BASE_RELEASE, schema_dir))
        _CACHE[key] = CufileSchema(release_view(raw, release_data(schema_dir), release), release)
    return _CACHE[key]
