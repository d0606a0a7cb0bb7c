# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Nothing under plugins/ leans on what ansible-core or Python do not promise to keep: ansible-core's
private and experimental code (``_internal``, ``finalize_task_arg``), zipimport's private fields
(``_get_files``), the layout of AnsiballZ's zip or of marshalled code, or a bytecode cache of our own.
Matched where a word starts, in the text of every file: a comment or docstring that names one fails
too, ``apply_internal`` or ``sys.dont_write_bytecode`` (the switch that stops Python writing any) do not.
Nor does any file call a private method of a module object (``module._symbolic_mode_to_octal(...)``,
``AnsibleModule._x(...)``, ``self.m._x(...)``); the ``_diff`` attribute every module reads is no call."""

from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORBIDDEN = ("_internal", "finalize_task_arg", "_get_files", "zipimport", "marshal", "bytecode")
WORDS = re.compile(r"\b(%s)" % "|".join(re.escape(w) for w in FORBIDDEN))
# the names this collection gives an AnsibleModule (or the plan's stand-in for one)
PRIVATE_MODULE_CALL = re.compile(r"\b(?:AnsibleModule|module|self\.module|self\._module|self\.m)\.(_\w+)\s*\(")


def forbidden_names(root):
    """``path:line: word`` for every forbidden word in a file under ``root``/plugins."""
    found = []
    for d, dirs, files in os.walk(os.path.join(root, "plugins")):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        for name in sorted(files):
            path = os.path.join(d, name)
            with open(path, "rb") as f:
                text = f.read().decode("utf-8", "replace")
            for number, line in enumerate(text.splitlines(), 1):
                for word in WORDS.findall(line) + PRIVATE_MODULE_CALL.findall(line):
                    found.append("%s:%d: %s" % (os.path.relpath(path, root), number, word))
    return found


def test_plugins_use_public_apis_only():
    assert forbidden_names(ROOT) == []


def test_each_forbidden_name_is_caught(tmp_path):
    files = {
        "plugins/action/a.py": "from ansible._internal._templating import _engine\n",
        "plugins/plugin_utils/_gds/b.py": "value = ActionBase.finalize_task_arg(name, value, templar, None)\n",
        "plugins/module_utils/_common/c.py": "import marshal, zipimport\nfiles = loader._get_files()\n",
        "plugins/module_utils/_common/d.py": "# keeps a bytecode cache under ~/.ansible\n",
        "plugins/module_utils/_k8s/e.py": "sys.dont_write_bytecode = True\napply_internal = {}\n",
        "plugins/modules/__pycache__/f.py": "import marshal\n",
        "plugins/module_utils/_common/g.py": "m = AnsibleModule._symbolic_mode_to_octal(st, mode)\n",
        "plugins/module_utils/_module_backends/h.py": "if module._diff:\n    self.m._load_params ()\n",
    }
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert forbidden_names(str(tmp_path)) == [
        "plugins/action/a.py:1: _internal",
        "plugins/module_utils/_common/c.py:1: marshal",
        "plugins/module_utils/_common/c.py:1: zipimport",
        "plugins/module_utils/_common/c.py:2: _get_files",
        "plugins/module_utils/_common/d.py:1: bytecode",
        "plugins/module_utils/_common/g.py:1: _symbolic_mode_to_octal",
        "plugins/module_utils/_module_backends/h.py:2: _load_params",
        "plugins/plugin_utils/_gds/b.py:1: finalize_task_arg",
    ]
