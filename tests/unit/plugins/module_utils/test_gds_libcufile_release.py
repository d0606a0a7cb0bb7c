# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The host's libcufile release is decided in one place (_gds/verdict.libcufile_release): the
verdict on the host and the cufile.json validation on the controller read the same answer, also
for a libcufile whose file name carries no version (a pip wheel's nvidia/cu13/lib/libcufile.so.0),
where the loaded library's cuFileGetVersion says it."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import verdict
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import results

WHEEL = "/opt/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcufile.so.0"
LIBS = {
    "name says it": {"path": "/usr/local/cuda/lib64/libcufile.so.0", "version": "1.15.1", "api_version": 1150},
    "wheel, library answered": {"path": WHEEL, "version": None, "api_version": 1200},
    "wheel, not asked": {"path": WHEEL, "version": None},
    "name and library disagree": {"path": "/x/libcufile.so.1.16.1", "version": "1.16.1", "api_version": 1200},
    "unknown release": {"path": "/usr/local/cuda-11.8/lib64/libcufile.so.0", "version": "1.9.1"},
    "unknown release, library answered": {"path": WHEEL, "version": None, "api_version": 1090},
    "none": {},
}


def failed_driver_open(lib):
    """Facts of a probe whose cuFileDriverOpen refused the config with 5002 (from 1.19 on)."""
    return {"nvidia": {"driver_loaded": True}, "gpus": [{}], "libcufile": lib,
            "probe": {"enabled": True, "ran": True, "error": {"step": "cuFileDriverOpen", "kind": "cufile", "err": 5002}}}


@pytest.mark.parametrize("name", sorted(LIBS))
def test_the_verdict_and_the_validator_read_one_release(name):
    lib = LIBS[name]
    release, note = verdict.libcufile_release(lib)
    assert results.host_release({"libcufile": lib}) == (release, note)
    if lib.get("path"):  # the verdict's hint for a refused config names the same release
        reason = verdict.verdict(failed_driver_open(lib))["reason"]
        assert ("libcufile %s rejected its configuration" % release in reason) == (release in ("1.19", "1.20"))


def test_release_from_the_name_else_from_the_loaded_library():
    assert verdict.libcufile_release(LIBS["name says it"]) == ("1.15", None)
    assert verdict.libcufile_release(LIBS["wheel, library answered"]) == ("1.20", None)
    release, note = verdict.libcufile_release(LIBS["wheel, not asked"])
    assert release is None
    assert note == ("not validated: the host's libcufile %s carries no version in its file name and the probe did "
                    "not reach its cuFileGetVersion (run the probe)" % WHEEL)
    release, note = verdict.libcufile_release(LIBS["unknown release, library answered"])
    assert release is None and note.startswith("not validated: the host's libcufile 1.9 (cuFileGetVersion 1090) is "
                                               "unknown to the collection")
    release, note = verdict.libcufile_release({})
    assert release == "1.15" and note.startswith("no libcufile found on the host: validated against libcufile 1.15")


def test_a_slab_config_string_is_checked_against_the_wheels_1_20_not_1_15():
    gds = {"libcufile": dict(LIBS["wheel, library answered"]), "nvidia_fs": {"loaded": False}, "mode": "failed",
           "reason": "probe child killed by SIGABRT during cuFileDriverOpen",
           "reasons": ["probe child killed by SIGABRT during cuFileDriverOpen"],
           "cufile": {"files": [{"role": "global", "path": "/etc/cufile.json",
                                 "text": '{"properties": {"gpu_bounce_buffer_slab_config": "x"}}'}]}}
    results.validate_cufile(gds)
    cufile = gds["cufile"]
    assert cufile["release"] == cufile["libcufile_release"] == "1.20" and "note" not in cufile
    assert cufile["valid"] is False and cufile["errors"] == 1
    assert "libcufile 1.20 aborts the whole process (SIGABRT)" in cufile["findings"][0]["message"]
    assert gds["reasons"][-1].startswith("cufile.json: properties.gpu_bounce_buffer_slab_config")


def test_the_facts_count_every_error_also_those_past_the_listed_ones():
    text = "{\"properties\": {%s}}" % ", ".join("\"no_such_key_%d\": 1" % i for i in range(300))
    gds = {"libcufile": dict(LIBS["name says it"]), "nvidia_fs": {"loaded": False},
           "cufile": {"files": [{"role": "global", "path": "/etc/cufile.json", "text": text}]}}
    results.validate_cufile(gds)
    assert gds["cufile"]["valid"] is False
    assert gds["cufile"]["errors"] == 300
    assert len(gds["cufile"]["findings"]) <= results.MAX_FINDINGS
