# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Versions ordered by the package manager's own library (python3-apt's apt_pkg, rpm's bindings)
where the host's Python imports it, and by verrevcmp where it does not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._packages import apt_dnf as pk
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import versions

HERE = os.path.dirname(os.path.abspath(__file__))
VERSIONS_PY = os.path.join(HERE, "..", "..", "..", "..", "plugins", "module_utils", "_packages", "versions.py")


@pytest.fixture
def libraries(monkeypatch):
    """Fake apt_pkg and rpm modules that record their calls; the comparer cache starts empty."""
    calls = []
    apt_pkg = types.ModuleType("apt_pkg")
    apt_pkg.init_system = lambda: calls.append(("init_system",))
    apt_pkg.version_compare = lambda a, b: calls.append(("apt", a, b)) or 7  # any positive int: newer
    rpm = types.ModuleType("rpm")
    rpm.labelCompare = lambda a, b: calls.append(("rpm", a, b)) or -1
    monkeypatch.setitem(sys.modules, "apt_pkg", apt_pkg)
    monkeypatch.setitem(sys.modules, "rpm", rpm)
    monkeypatch.setattr(versions, "_LIBRARY_COMPARE", {})
    return calls


def test_apt_versions_are_compared_by_apt_pkg(libraries):
    assert versions.compare_versions("2.0_1", "2.0.1", "apt") == 1
    assert libraries == [("init_system",), ("apt", "2.0_1", "2.0.1")]


def test_dnf_versions_are_compared_by_rpm_label_compare_with_epoch_version_release(libraries):
    assert versions.compare_versions("1:2.28.2-1.el9", "2.28.10-1", "dnf") == -1
    assert libraries == [("rpm", ("1", "2.28.2", "1.el9"), ("0", "2.28.10", "1"))]


def test_without_a_family_or_a_library_verrevcmp_decides(libraries, monkeypatch):
    assert versions.compare_versions("2.9.0-1", "2.10.0-1") == -1
    monkeypatch.setitem(sys.modules, "rpm", None)  # "import rpm" raises ImportError
    monkeypatch.setattr(versions, "_LIBRARY_COMPARE", {})
    assert versions.library_compare("dnf") is None
    assert versions.compare_versions("2.9.0-1", "2.10.0-1", "dnf") == -1
    assert libraries == []


def test_the_plan_orders_by_the_family_given(libraries):
    # the fake rpm says every left version is older: 2.28.2 is then a downgrade from 2.26.6
    plan = pk.plan_packages({"nvidia-fs": "2.26.6-1"}, {"nvidia-fs": ["2.28.2-1"]}, {"nvidia-fs": "2.28"},
                            family="dnf")
    assert plan["install"] == [("nvidia-fs", "2.28.2-1", "downgrade")]
    assert ("rpm", ("0", "2.28.2", "1"), ("0", "2.26.6", "1")) in libraries
    plan = pk.plan_packages({"nvidia-fs": "2.26.6-1"}, {"nvidia-fs": ["2.28.2-1"]}, {"nvidia-fs": "2.28"})
    assert plan["install"] == [("nvidia-fs", "2.28.2-1", "upgrade")]


def test_select_version_picks_the_highest_as_the_family_orders(libraries):
    # the fake rpm says every left version is older, so the first one stays the highest
    assert versions.select_version(["2.0-1", "3.0-1"], None, "dnf") == "2.0-1"
    assert versions.select_version(["2.0-1", "3.0-1"], None) == "3.0-1"


PAIRS = [("2.28.2-1", "2.26.6-1"), ("2.19.7~12.4.1", "2.19.7"), ("1:1.0-1", "2.0-1"),
         ("24.10-4.1.4.0", "24.10-1.1.4.0"), ("2.0_1", "2.0.1"), ("1.0a", "1.0.1"), ("1.0^git1", "1.0")]


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no system python")
def test_the_real_libraries_where_this_machine_has_them():
    """On the system python (python3-apt here; python3-rpm where installed) the library's answer
    is the one returned, and it differs from verrevcmp exactly where the tools differ."""
    script = ("import importlib.util, json, sys\n"
              "spec = importlib.util.spec_from_file_location('versions', sys.argv[1])\n"
              "v = importlib.util.module_from_spec(spec); spec.loader.exec_module(v)\n"
              "print(json.dumps({f: [v.compare_versions(a, b, f) for a, b in %r] if v.library_compare(f) else None"
              " for f in ('apt', 'dnf')}))" % (PAIRS,))
    res = subprocess.run(["/usr/bin/python3", "-c", script, VERSIONS_PY], capture_output=True, text=True, check=True)
    got = json.loads(res.stdout)
    if got["apt"] is None and got["dnf"] is None:
        pytest.skip("neither python3-apt nor python3-rpm on the system python")
    verrevcmp = [versions.compare_versions(a, b) for a, b in PAIRS]
    assert verrevcmp == [1, -1, 1, 1, 1, -1, 1]
    if got["apt"] is not None:  # dpkg: '_' sorts after '.', '^' after the end
        assert got["apt"] == [1, -1, 1, 1, 1, -1, 1]
    if got["dnf"] is not None:  # rpmvercmp: separators are equal, '^' sorts after the end too
        assert got["dnf"] == [1, -1, 1, 1, 0, -1, 1]
