# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""ansible-test sanity passes with no ignore file (galaxy-importer warns about any, even an empty
one). Two of its rules, checked here in a second rather than in the slow sanity run:
validate-modules wants the GNU General Public License version 3 named in the first 20 lines of
every file it validates (ours say that their Apache-2.0 licence is compatible with it), and the
shebang rule allows a short list of interpreters in bin/, where every file is also Python to
ansible-test (compile, pep8, pylint)."""

import glob
import os
import py_compile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
# what ansible-test's shebang rule allows outside modules and integration targets
STANDARD_SHEBANGS = ("#!/bin/bash -eu", "#!/bin/bash -eux", "#!/bin/sh", "#!/usr/bin/env bash",
                     "#!/usr/bin/env fish", "#!/usr/bin/env pwsh", "#!/usr/bin/env python", "#!/usr/bin/make -f")


def _documented_plugins():
    """The files validate-modules validates: modules and plugins with their own DOCUMENTATION."""
    out = []
    for path in glob.glob(os.path.join(ROOT, "plugins", "*", "*.py")):
        if "/doc_fragments/" in path:
            continue
        with open(path) as f:
            if any(line.startswith("DOCUMENTATION") for line in f):
                out.append(path)
    return sorted(out)


def test_there_is_no_sanity_ignore_file():
    assert not glob.glob(os.path.join(ROOT, "tests", "sanity", "ignore-*.txt"))


def test_every_documented_plugin_names_its_licence_and_gplv3_compatibility_in_its_first_20_lines():
    plugins = _documented_plugins()
    assert len(plugins) >= 10
    for path in plugins:
        with open(path) as f:
            header = "".join(f.readline() for dummy in range(20))
        assert "Apache License 2.0" in header, path
        assert "GNU General Public License version 3" in header and header.count("GNU General Public License") == 1, path


def test_bin_holds_python_with_a_shebang_sanity_accepts(tmp_path):
    for path in glob.glob(os.path.join(ROOT, "bin", "*")):
        with open(path) as f:
            assert f.readline().rstrip("\n") in STANDARD_SHEBANGS, path
        py_compile.compile(path, cfile=str(tmp_path / "out.pyc"), doraise=True)
