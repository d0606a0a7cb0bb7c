# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The rooms of plugins/ and what each may import (docs/architecture.md, "Rooms").

Read from the source with ``ast`` (every import, also the lazy ones inside functions), so a
wrong import fails here before it fails on a GPU host without jsonschema:

* target-side code (``modules/``, ``module_utils/``) never imports controller-only code
  (``plugin_utils``, ``ansible.plugins``, ``ansible.errors``, any ``ansible`` outside
  ``ansible.module_utils``);
* an action plugin never imports a module file (``plugins/modules/*``): what both need lives
  in module_utils;
* module_utils imports the standard library, ``ansible.module_utils`` and itself; another
  library only inside ``try: ... except ImportError`` (reported with ``missing_required_lib``);
* every module_utils / plugin_utils file lives in a room (``_<domain>/``), none flat;
* a file under ``plugins/`` longer than 400 lines says why near its top: a comment line
  ``# long-file: <reason>`` within its first 30 lines (docs/architecture.md, "File size").
"""

from __future__ import annotations

import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREFIX = "ansible_collections.gpudirect.storage."
LONG_FILE_LINES = 400  # "files under ~400 lines"
LONG_FILE_HEAD = 30  # the reason must be this near the top
LONG_FILE_MARK = re.compile(r"^\s*#\s*long-file:\s*(\S.{19,})$")  # a reason of 20+ characters


def _py_files(root, sub):
    base = os.path.join(root, "plugins", sub)
    for d, dirs, files in os.walk(base):
        dirs.sort()
        for f in sorted(files):
            if f.endswith(".py"):
                yield os.path.join(d, f)


def _package(root, path):
    """The dotted package a file under ``root`` is imported in (for its relative imports)."""
    parts = os.path.relpath(path, root).split(os.sep)[:-1]
    return PREFIX + ".".join(parts)


def _dynamic_name(node):
    """"x" of ``importlib.import_module("x")`` / ``__import__("x")``, else None."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if called in ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
            and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def _imports(path, root=None):
    """(module name, guarded) for every import of a file (relative ones made absolute, imports by
    a constant name through importlib included); ``guarded``: inside a try whose handlers catch
    ImportError (or a parent of it)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            names = set()
            for h in node.handlers:
                for t in ([h.type] if not isinstance(h.type, ast.Tuple) else h.type.elts) if h.type else []:
                    names.add(getattr(t, "id", None))
            if names & {"ImportError", "ModuleNotFoundError", "Exception"}:
                for stmt in node.body:
                    guarded.update(id(n) for n in ast.walk(stmt))
    package = _package(root, path) if root else None
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, id(node) in guarded) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if not package:
                    continue
                base = package.split(".")
                base = ".".join(base[:len(base) - (node.level - 1)])
                module = base + ("." + node.module if node.module else "")
            elif node.module:
                module = node.module
            else:
                continue
            out.append((module, id(node) in guarded))
            # "from ...plugins.module_utils._x import y": y may itself be a module
            out += [(module + "." + a.name, id(node) in guarded) for a in node.names]
        elif isinstance(node, ast.Call) and _dynamic_name(node):
            out.append((_dynamic_name(node), id(node) in guarded))
    return out


def _is_stdlib(name):
    top = name.split(".")[0]
    return top in sys.stdlib_module_names or top == "__future__"


def violations(root):
    found = []

    def rel(p):
        return os.path.relpath(p, root)

    for sub in ("modules", "module_utils"):
        for path in _py_files(root, sub):
            for name, guarded in _imports(path, root):
                if name.startswith(PREFIX + "plugins.plugin_utils") or (
                        name.split(".")[0] == "ansible" and not name.startswith("ansible.module_utils")):
                    found.append("%s: target-side code imports controller-only %s" % (rel(path), name))
                elif name.startswith(PREFIX) and not name.startswith(PREFIX + "plugins.module_utils"):
                    found.append("%s: target-side code imports %s, which AnsiballZ does not ship (only "
                                 "plugins/module_utils)" % (rel(path), name))
    for path in _py_files(root, "action"):
        for name, _guarded in _imports(path, root):
            if name.startswith(PREFIX + "plugins.modules"):
                found.append("%s: action plugin imports the module file %s" % (rel(path), name))
    for sub, who in (("modules", "target-side code"), ("module_utils", "module_utils")):
        for path in _py_files(root, sub):
            for name, guarded in _imports(path, root):
                if name.split(".")[0] == "ansible" or name.startswith(PREFIX):
                    continue  # ansible.module_utils and module_utils; the rest is flagged above
                if not _is_stdlib(name) and not guarded:
                    found.append("%s: %s imports %s, not in the standard library, unguarded" % (rel(path), who, name))
    for sub in ("module_utils", "plugin_utils"):
        base = os.path.join(root, "plugins", sub)
        for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            if entry.endswith(".py"):
                found.append("plugins/%s/%s: not in a room (plugins/%s/_<domain>/)" % (sub, entry, sub))
    return found


def _plugin_lines(root):
    """(path relative to ``root``, its lines) of every file under ``root``/plugins (no caches)."""
    for d, dirs, files in os.walk(os.path.join(root, "plugins")):
        dirs[:] = sorted(x for x in dirs if not x.startswith((".", "__pycache__")))
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            path = os.path.join(d, name)
            with open(path, "rb") as f:
                yield os.path.relpath(path, root), f.read().decode("utf-8", "replace").splitlines()


def long_files(root):
    """Files under plugins/ over LONG_FILE_LINES lines without a ``# long-file: <reason>`` line
    in their first LONG_FILE_HEAD lines."""
    found = []
    for rel, lines in _plugin_lines(root):
        if len(lines) > LONG_FILE_LINES and not any(LONG_FILE_MARK.match(line) for line in lines[:LONG_FILE_HEAD]):
            found.append("%s: %d lines (over %d) and no '# long-file: <reason>' in its first %d lines"
                         % (rel, len(lines), LONG_FILE_LINES, LONG_FILE_HEAD))
    return found


def test_the_collection_keeps_its_rooms():
    assert violations(ROOT) == []


def _write(root, rel, text):
    path = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def test_each_rule_catches_its_violation(tmp_path):
    _write(tmp_path, "plugins/module_utils/_gds/facts.py", "import os\n\ndef f():\n"
           "    from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile import validate\n")
    _write(tmp_path, "plugins/modules/thing.py", "from ansible.plugins.action import ActionBase\n")
    _write(tmp_path, "plugins/action/thing.py",
           "from ansible_collections.gpudirect.storage.plugins.modules import thing\n"
           "from ansible_collections.gpudirect.storage.plugins.modules.other import argument_spec\n")
    _write(tmp_path, "plugins/module_utils/_k8s/lib.py",
           "import yaml\ntry:\n    import kubernetes\nexcept ImportError:\n    kubernetes = None\n")
    _write(tmp_path, "plugins/module_utils/_flat.py", "import json\n")
    found = violations(str(tmp_path))
    assert found == [
        "plugins/modules/thing.py: target-side code imports controller-only ansible.plugins.action",
        "plugins/modules/thing.py: target-side code imports controller-only ansible.plugins.action.ActionBase",
        "plugins/module_utils/_gds/facts.py: target-side code imports controller-only "
        "ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile",
        "plugins/module_utils/_gds/facts.py: target-side code imports controller-only "
        "ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate",
        "plugins/action/thing.py: action plugin imports the module file ansible_collections.gpudirect.storage.plugins.modules",
        "plugins/action/thing.py: action plugin imports the module file "
        "ansible_collections.gpudirect.storage.plugins.modules.thing",
        "plugins/action/thing.py: action plugin imports the module file "
        "ansible_collections.gpudirect.storage.plugins.modules.other",
        "plugins/action/thing.py: action plugin imports the module file "
        "ansible_collections.gpudirect.storage.plugins.modules.other.argument_spec",
        "plugins/module_utils/_k8s/lib.py: module_utils imports yaml, not in the standard library, unguarded",
        "plugins/module_utils/_flat.py: not in a room (plugins/module_utils/_<domain>/)",
    ]


def test_a_file_over_400_lines_says_why_near_its_top():
    assert long_files(ROOT) == []


def test_the_long_file_rule_catches_its_violations(tmp_path):
    body = "x = 1\n" * 400
    _write(tmp_path, "plugins/module_utils/_a/exactly_400.py", body)
    _write(tmp_path, "plugins/module_utils/_a/no_reason.py", body + "y = 2\n")
    _write(tmp_path, "plugins/module_utils/_a/reason.py",
           "# -*- coding: utf-8 -*-\n# long-file: one table of every libcufile key, kept whole\n" + body)
    _write(tmp_path, "plugins/module_utils/_a/short_reason.py", "# long-file: big\n" + body)
    _write(tmp_path, "plugins/module_utils/_a/reason_too_low.py",
           body[:6 * 40] + "# long-file: one table of every libcufile key, kept whole\n" + body)
    _write(tmp_path, "plugins/modules/__pycache__/cached.py", body * 2)
    assert long_files(str(tmp_path)) == [
        "plugins/module_utils/_a/no_reason.py: 401 lines (over 400) and no '# long-file: <reason>' in its first 30 lines",
        "plugins/module_utils/_a/reason_too_low.py: 441 lines (over 400) and no '# long-file: <reason>' in its first "
        "30 lines",
        "plugins/module_utils/_a/short_reason.py: 401 lines (over 400) and no '# long-file: <reason>' in its first "
        "30 lines",
    ]


def test_relative_dynamic_and_other_plugin_imports_are_checked_too(tmp_path):
    _write(tmp_path, "plugins/module_utils/_gds/facts.py",
           "from ...plugin_utils._cufile import validate\nfrom . import parse\n")
    _write(tmp_path, "plugins/module_utils/_gds/lazy.py",
           "import importlib\n\ndef f():\n    return importlib.import_module('jsonschema')\n\n"
           "def g():\n    try:\n        return __import__('yaml')\n    except ImportError:\n        return None\n")
    _write(tmp_path, "plugins/module_utils/_gds/reach.py",
           "from ansible_collections.gpudirect.storage.plugins.action import gds_facts\n")
    _write(tmp_path, "plugins/modules/thing.py", "from ..modules import other\nimport requests\n")
    _write(tmp_path, "plugins/action/thing.py", "from ..modules.thing import DOCUMENTATION\n")
    found = violations(str(tmp_path))
    assert found == [
        "plugins/modules/thing.py: target-side code imports ansible_collections.gpudirect.storage.plugins.modules, "
        "which AnsiballZ does not ship (only plugins/module_utils)",
        "plugins/modules/thing.py: target-side code imports ansible_collections.gpudirect.storage.plugins.modules.other, "
        "which AnsiballZ does not ship (only plugins/module_utils)",
        "plugins/module_utils/_gds/facts.py: target-side code imports controller-only "
        "ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile",
        "plugins/module_utils/_gds/facts.py: target-side code imports controller-only "
        "ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate",
        "plugins/module_utils/_gds/reach.py: target-side code imports "
        "ansible_collections.gpudirect.storage.plugins.action, which AnsiballZ does not ship (only plugins/module_utils)",
        "plugins/module_utils/_gds/reach.py: target-side code imports "
        "ansible_collections.gpudirect.storage.plugins.action.gds_facts, which AnsiballZ does not ship "
        "(only plugins/module_utils)",
        "plugins/action/thing.py: action plugin imports the module file ansible_collections.gpudirect.storage.plugins.modules.thing",
        "plugins/action/thing.py: action plugin imports the module file "
        "ansible_collections.gpudirect.storage.plugins.modules.thing.DOCUMENTATION",
        "plugins/modules/thing.py: target-side code imports requests, not in the standard library, unguarded",
        "plugins/module_utils/_gds/lazy.py: module_utils imports jsonschema, not in the standard library, unguarded",
    ]


ISSUE_NUMBER = re.compile(r"\bissues? #?\d+", re.IGNORECASE)


def issue_numbers(root):
    """``path:line`` of every issue number under ``root``/plugins: a docstring or comment says what
    and why; which issue asked for it is git's history."""
    return ["%s:%d" % (rel, number) for rel, lines in _plugin_lines(root)
            for number, line in enumerate(lines, 1) if ISSUE_NUMBER.search(line)]


def test_plugins_name_no_issue_numbers():
    assert issue_numbers(ROOT) == []


def test_an_issue_number_is_caught(tmp_path):
    _write(tmp_path, "plugins/module_utils/_gds/a.py", '"""Measured on the host (issue 20)."""\n')
    _write(tmp_path, "plugins/action/b.py", "# see Issue #7\nURL = 'https://github.com/o/r/issues/12'\n")
    assert issue_numbers(str(tmp_path)) == ["plugins/action/b.py:1", "plugins/module_utils/_gds/a.py:1"]
