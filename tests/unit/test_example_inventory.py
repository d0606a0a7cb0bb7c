# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The example inventory documents the roles' variables as their argument specs define them:
every commented `# <variable>: <value>` line names a real variable with its real default, every
role variable is listed, and no inventory of this repository sets a variable nothing reads."""

from __future__ import annotations

import glob
import os
import re

import pytest
import yaml

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_vars as _role_vars

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "inventories", "example")
COMMENTED = re.compile(r"^# ((?:gds|cufile|mofed|nvidia_fs|gpu_operator|package_repo)_[a-z0-9_]+): (.*?)\s*(?:#\s*(.*))?$")
# roles whose variables are meant for another place than group_vars (set by site.yml itself)
NOT_IN_THE_INVENTORY = {"gds_reboot_required", "gds_reboot_reason"}


def options():
    out = {}
    for role, entry_points in _role_vars.role_specs().items():
        for spec in entry_points.values():
            for name, option in (spec.get("options") or {}).items():
                out[name] = (role, option)
    return out


def commented_lines():
    for path in sorted(glob.glob(os.path.join(EXAMPLE, "group_vars", "*.yml"))):
        with open(path) as f:
            lines = [line.rstrip("\n") for line in f]
        for number, line in enumerate(lines, 1):
            match = COMMENTED.match(line)
            if match:
                value = match.group(2)
                if not value:  # a block: the indented commented lines below
                    block = []
                    for below in lines[number:]:
                        if not below.startswith("#   "):
                            break
                        block.append(below[1:])
                    value = "\n".join(block)
                yield "%s:%d" % (os.path.basename(path), number), match.group(1), value, match.group(3) or ""


LINES = list(commented_lines())


def test_the_example_documents_variables():
    assert len(LINES) > 60


@pytest.mark.parametrize("where, name, value, comment", LINES, ids=[line[0] for line in LINES])
def test_a_commented_variable_exists_and_shows_its_default(where, name, value, comment):
    assert name in _role_vars.settable_variables(), "%s: %s is no variable of the roles or playbooks" % (where, name)
    spec = options().get(name, (None, {}))[1]
    if "default" not in spec or "{{" in value or value.startswith(("\"{{", "[\"{{")):
        return
    assert yaml.safe_load(value) == spec["default"], "%s: %s: %s, but the default is %r" % (
        where, name, value, spec["default"])


def test_every_role_variable_is_listed():
    text = "".join(open(p).read() for p in glob.glob(os.path.join(EXAMPLE, "group_vars", "*.yml")))
    text += open(os.path.join(EXAMPLE, "hosts.yml")).read()
    missing = [n for n, (role, dummy) in options().items()
               if role not in ("gds_plan",) and n not in NOT_IN_THE_INVENTORY and not re.search(r"\b%s\b" % n, text)]
    missing += [n for n in _role_vars.PLAYBOOK_VARIABLES if not re.search(r"\b%s\b" % n, text)]
    assert not missing, "not in inventories/example: %s" % missing


def inventory_variables():
    for path in sorted(glob.glob(os.path.join(ROOT, "inventories", "*", "group_vars", "*.yml")) +
                       glob.glob(os.path.join(ROOT, "inventories", "*", "hosts.yml")) +
                       glob.glob(os.path.join(ROOT, "molecule", "resources", "vars", "*.yml"))):
        with open(path) as f:
            data = yaml.safe_load(f) or {}
        names = set(data) if "all" not in data else set()
        stack = [data.get("all")] if "all" in data else []
        while stack:  # hosts.yml: vars of groups and hosts
            node = stack.pop() or {}
            names.update(node.get("vars") or {})
            for host_vars in (node.get("hosts") or {}).values():
                names.update(host_vars or {})
            stack.extend((node.get("children") or {}).values())
        yield os.path.relpath(path, ROOT), names


@pytest.mark.parametrize("path, names", list(inventory_variables()))
def test_no_inventory_of_this_repository_sets_a_variable_nothing_reads(path, names):
    assert _role_vars.unknown_variables(names) == [], path
