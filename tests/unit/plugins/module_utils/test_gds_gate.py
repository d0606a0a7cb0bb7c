# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one gate: a requirement is met only by a verified probe, and gds also needs the
nvidia-fs counters to prove the path unless require_proven is false."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import verdict as v


def gds_facts(mode, verified, proven, probe=True, reason="r"):
    return {"mode": mode, "verified": verified, "proven": proven, "reason": reason,
            "probe": {"enabled": probe, "ran": probe}}


@pytest.mark.parametrize("mode, verified, proven, required", [
    ("failed", False, False, ""), ("failed", False, False, None),  # no requirement
    ("gds", True, True, "gds"), ("gds", True, True, "p2pdma"), ("gds", True, True, "compat"), ("compat", True, True, "compat")])
def test_a_verified_verdict_meets_what_it_is_at_least(mode, verified, proven, required):
    assert v.gate(gds_facts(mode, verified, proven), required) == (True, None)


@pytest.mark.parametrize("required", ["gds", "p2pdma", "compat"])
def test_an_inferred_verdict_never_meets_a_requirement_and_says_nothing_was_written(required):
    ok, why = v.gate(gds_facts("gds", False, False, probe=False, reason="nvidia_fs is loaded"), required)
    assert ok is False
    assert "nothing was written" in why and "probe=false" in why and required in why


def test_inferred_gds_with_nvidia_fs_loaded_does_not_pass_require_gds():
    """probe=false with nvidia_fs loaded infers gds; that must not pass require_mode=gds."""
    facts = {"nvidia": {"driver_loaded": True}, "nvidia_fs": {"loaded": True}, "cufile": {"effective": {}},
             "libcufile": {"path": "/usr/lib/libcufile.so.0"}, "probe": {"enabled": False, "ran": False}}
    facts.update(v.verdict(facts))
    assert facts["mode"] == "gds"
    ok, why = v.gate(facts, "gds")
    assert ok is False and "nothing was written" in why


def test_unproven_gds_fails_require_gds_unless_require_proven_is_false():
    """Probe on, nvidia-fs counters off: verified but not proven."""
    facts = gds_facts("gds", True, False)
    ok, why = v.gate(facts, "gds")
    assert ok is False
    assert "not proven" in why and "rw_stats_enabled=1" in why and "require_proven" in why
    assert v.gate(facts, "gds", require_proven=False) == (True, None)
    assert v.gate(facts, "compat") == (True, None)  # only gds needs the counters


def test_verified_compat_does_not_meet_gds():
    ok, why = v.gate(gds_facts("compat", True, True, reason="no nvidia_fs"), "gds")
    assert ok is False and why == "GDS verdict compat is weaker than the required gds: no nvidia_fs"


def test_a_probe_that_verified_nothing_does_not_meet_compat():
    ok, why = v.gate(gds_facts("compat", False, False, reason="x"), "compat")
    assert ok is False and "not verified" in why and "nothing was written, read back and compared" in why


def test_weaker_and_unverified_says_both():
    ok, why = v.gate(gds_facts("unavailable", False, False, reason="libcufile not found"), "compat")
    assert ok is False
    assert why.startswith("GDS verdict unavailable is weaker than the required compat: libcufile not found")
    assert "nothing was written" in why


def test_unknown_requirement_is_an_error():
    with pytest.raises(ValueError):
        v.gate(gds_facts("gds", True, True), "fast")
