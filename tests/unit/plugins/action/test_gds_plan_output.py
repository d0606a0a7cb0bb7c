# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a failed plan shows a person: the message with "nothing was changed" said once, and the
preflight table and failing checks - not the host's whole facts."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gds_plan import module_result, run_action
from ansible_collections.gpudirect.storage.tests.unit.plugins.plugin_utils.test__preflight import facts


def test_a_failed_preflight_shows_the_message_and_the_table_without_the_facts():
    out = module_result(converged=False, gds=facts(host__free_mb={"/": 10}))
    result, _execute = run_action({"preflight": {}}, out)
    assert result["failed"] is True
    assert "ansible_facts" not in result and "stages" not in result
    assert [r.split()[0] for r in result["preflight"]["table"]] == ["passed", "passed", "failed", "skipped", "passed"]
    assert result["preflight"]["failures"][0] in result["msg"]


def test_nothing_was_changed_is_said_once():
    out = module_result({"nvidia_fs": {"changed": False, "failed": True,
                                       "msg": "nvidia-fs 0.0.1 is not in the repository. Nothing was changed."}},
                        converged=False)
    result, _execute = run_action({}, out)
    assert result["failed"] is True
    assert result["msg"].lower().count("nothing was changed") == 1, result["msg"]


def test_a_run_not_in_check_mode_hears_nothing_of_check_mode_from_the_plan():
    """The plan runs the stages in check mode; what that hides (the new repository's versions) is
    known when the rollout adds the repository, so a real run has nothing to be warned of."""
    out = module_result({"nvidia_fs": {"changed": True, "failed": False}}, converged=False)
    out["warnings"] = ["nvidia-fs versions of the new repository are unknown in check mode", "other"]
    result, _execute = run_action({}, out)
    assert result["warnings"] == ["other"]
