# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A module's options and constraints as one bundle: the module and gds_plan's stage of it
validate with the same one, so a stage refuses exactly what its module refuses."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_plan
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.argspec import ArgumentSpec


def test_validate_applies_the_options_and_every_constraint():
    spec = ArgumentSpec(dict(a=dict(type="str"), b=dict(type="str"), n=dict(type="int", default=1)),
                        mutually_exclusive=[("a", "b")])
    assert spec.validate({"a": "x"}).validated_parameters == {"a": "x", "b": None, "n": 1}
    assert "mutually exclusive: a|b" in " ".join(spec.validate({"a": "x", "b": "y"}).error_messages)
    assert spec.validate({"n": "many"}).error_messages


def test_merge_keeps_both_sides_options_and_constraints_and_changes_neither():
    one = ArgumentSpec(dict(a=dict(type="str"), b=dict(type="str")), required_together=[("a", "b")])
    two = ArgumentSpec(dict(c=dict(type="str"), d=dict(type="str")), mutually_exclusive=[("c", "d")],
                       required_together=[("c", "a")])
    both = one.merge(two)
    assert sorted(both.argument_spec) == ["a", "b", "c", "d"]
    assert both.constraints == {"required_together": [("a", "b"), ("c", "a")], "mutually_exclusive": [("c", "d")]}
    assert sorted(one.argument_spec) == ["a", "b"] and "mutually_exclusive" not in one.constraints


def test_an_unknown_constraint_is_refused():
    with pytest.raises(TypeError, match="required_wrongly"):
        ArgumentSpec({}, required_wrongly=[("a", "b")])


@pytest.mark.parametrize("stage, args, message", [
    ("nvidia_fs", {"mok_key": "/k"}, "parameters are required together: mok_key, mok_cert"),
    ("cufile", {"base": "/b.json", "src": "/s.json"}, "parameters are mutually exclusive: base|src"),
    ("mofed", {"flavour": "no-such"}, "flavour"),
])
def test_a_stage_refuses_what_its_module_refuses(stage, args, message):
    prepared = gds_plan.prepare_stage(stage, args, runner=None)
    assert isinstance(prepared, gds_plan.StageFailed) and message in prepared.msg, prepared


def test_the_cufile_stage_takes_the_file_attributes_its_module_takes():
    arguments, dummy = gds_plan.stage_spec("cufile")
    assert {"mode", "owner", "group", "setype"} <= set(arguments.argument_spec)
