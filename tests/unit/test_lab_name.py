# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The Makefile's lab is named after the checkout: a second checkout's `make demo` or
`make lab-down` never touches the first one's lab (labctl names are machine-wide)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAKE = shutil.which("make")


def make_dry_run(directory, target):
    out = subprocess.run([MAKE, "-n", "-s", target], cwd=directory, capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def lab_name(command_lines):
    names = set(re.findall(r"labctl (?:up|down) --name (\S+)", command_lines))
    assert len(names) == 1, command_lines
    return names.pop()


@pytest.mark.skipif(MAKE is None, reason="make missing")
def test_two_checkouts_get_two_lab_names(tmp_path):
    names = []
    for checkout in ("first", "second"):
        directory = tmp_path / checkout
        directory.mkdir()
        shutil.copy(os.path.join(ROOT, "Makefile"), str(directory))
        down = lab_name(make_dry_run(str(directory), "lab-down"))
        assert re.match(r"^[a-z0-9][a-z0-9-]{0,30}$", down), down  # what labctl accepts
        names.append(down)
    assert names[0] != names[1]
    assert lab_name(make_dry_run(str(tmp_path / "first"), "lab-down")) == names[0]  # stable


@pytest.mark.skipif(MAKE is None, reason="make missing")
def test_lab_up_and_down_use_the_same_name():
    up = subprocess.run([MAKE, "-n", "-s", "-W", "aptrepo", "-o", "deps", "-o", "aptrepo", "lab-up"], cwd=ROOT,
                        capture_output=True, text=True, timeout=60, check=False).stdout
    assert lab_name(up) == lab_name(make_dry_run(ROOT, "lab-down"))
