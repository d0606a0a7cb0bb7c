# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Each role's <role>_plan_args (vars/main.yml, for the one gds_plan call of site.yml) passes
the same module options, from the same variables, as the role's own task in tasks/main.yml."""

from __future__ import annotations

import os
import re

import pytest
import yaml

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")
# role -> (module of tasks/main.yml, options the plan leaves out on purpose)
CASES = {
    "mofed": ("gpudirect.storage.mofed", set()),
    "nvidia_fs": ("gpudirect.storage.nvidia_fs", {"mok_key_passphrase"}),  # planning never signs
    "cufile": ("gpudirect.storage.cufile_config", set()),
    "gds_preflight": ("gpudirect.storage.gds_preflight", {"facts"}),  # gds_plan gathers the facts itself
    "gds_verify": ("gpudirect.storage.gds_facts", {"require_mode", "require_proven"}),  # gds_plan's own
}


def load(role, *parts):
    with open(os.path.join(ROLES, role, *parts)) as f:
        return yaml.safe_load(f)


def variables(text):
    return set(re.findall(r"\b((?:mofed|nvidia_fs|cufile|gds_preflight|gds_verify)_[a-z_]+)", str(text)))


@pytest.mark.parametrize("role", sorted(CASES))
def test_plan_args_match_the_role_task(role):
    module, left_out = CASES[role]
    task = next(t for t in load(role, "tasks", "main.yml") if module in t)
    plan = load(role, "vars", "main.yml")["%s_plan_args" % role]
    assert set(task[module]) - left_out == set(plan), role
    for option, value in plan.items():
        assert variables(value) == variables(task[module][option]), (role, option)


@pytest.mark.parametrize("role", sorted(CASES))
def test_plan_entry_point_validates_like_main_and_has_no_task(role):
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml")) as f:
        specs = yaml.safe_load(f)["argument_specs"]
    assert specs["plan"] == specs["main"]
    assert load(role, "tasks", "plan.yml") == []
