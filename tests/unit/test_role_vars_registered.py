# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Every variable with our prefixes that a role or playbook registers or sets is known to the
unknown-variable check of gds_plan (a result of an earlier play is no typo), and every
variable the playbooks read is a settable one."""

from __future__ import annotations

import glob
import os
import re

import yaml

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_vars as _role_vars

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OURS = re.compile(r"^(?:gds|cufile|mofed|nvidia_fs|gpu_operator|package_repo)_[a-z0-9_]+$")


def tasks(node):
    if isinstance(node, list):
        for item in node:
            yield from tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("block", "rescue", "always", "tasks"):
            yield from tasks(node.get(key))


def files():
    return sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")) +
                  glob.glob(os.path.join(ROOT, "playbooks", "*.yml")))


def test_registered_and_set_variables_are_known():
    found = set()
    for path in files():
        with open(path) as f:
            for task in tasks(yaml.safe_load(f)):
                if isinstance(task.get("register"), str):
                    found.add(task["register"])
                for module in ("ansible.builtin.set_fact", "set_fact"):
                    found.update(k for k in (task.get(module) or {}) if k != "cacheable")
    ours = sorted(n for n in found if OURS.match(n))
    assert ours and not [n for n in ours if n not in _role_vars.known_variables()]


def test_the_playbook_variables_are_read_by_the_playbooks():
    defaults = glob.glob(os.path.join(ROOT, "roles", "*", "defaults", "main.yml"))  # gds_unsupported_os
    text = "".join(open(p).read() for p in files() + defaults)
    unread = [n for n in _role_vars.PLAYBOOK_VARIABLES if n not in text]
    assert not unread, unread


def test_a_result_the_user_registered_under_our_prefix_is_no_typo():
    # Ansible registers every task result as a dict with "changed"; a setting is never one
    host_vars = {"gds_smi": {"changed": False, "failed": False, "rc": 0, "stdout": "GPU 0: H100"},
                 "gds_checks": {"changed": True, "msg": "All items completed", "results": []},
                 "gds_verify_probe_sise_mb": 64}
    assert _role_vars.unknown_variables(host_vars) == [("gds_verify_probe_sise_mb", "gds_verify_probe_size_mb")]


def test_a_setting_under_our_prefix_that_nothing_reads_is_still_a_typo_when_it_is_a_dict():
    assert _role_vars.unknown_variables({"cufile_setings": {"properties": {"allow_compat_mode": False}}}) == [
        ("cufile_setings", "cufile_settings")]
