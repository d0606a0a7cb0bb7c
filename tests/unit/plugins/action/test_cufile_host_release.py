# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""cufile_config never changes what a user did not ask for, and never writes for a libcufile
release other than the host's: no option set keeps the host's file (or link) as it
is, validated and reported; settings start from the shipped file of the host's release, stated
in the result; an unknown release is a clear error that writes nothing."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import cufile_config as _cufile_config
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import loads
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_cufile_config import Harness, host_runs, sha

HAND_WRITTEN = b'// tuned by hand for our Lustre\n{ "properties": { "io_batchsize": 64,  "max_direct_io_size_kb": 8192 },\n  "logging": {"level": "ERROR"} }\n'


@pytest.fixture
def harness(tmp_path, monkeypatch):
    host_runs(monkeypatch, "1.15.1")
    return Harness(tmp_path, monkeypatch)


@pytest.mark.parametrize("check_mode", [False, True])
def test_no_option_keeps_a_hand_written_file_byte_for_byte(harness, tmp_path, check_mode):
    target = tmp_path / "cufile.json"
    target.write_bytes(HAND_WRITTEN)
    os.chmod(str(target), 0o600)  # not the role's 0644 either: attributes are kept too
    before = (sha(target), os.stat(str(target)).st_mode, os.listdir(str(tmp_path)))
    result = harness.run(check_mode=check_mode, path=str(target), backup=True, owner="root", group="root", mode="0644")
    assert not result.get("failed"), result
    assert result["changed"] is False and result["kept"] is True and result["base"] == "keep"
    assert harness.calls == ["plan"]
    assert (sha(target), os.stat(str(target)).st_mode, os.listdir(str(tmp_path))) == before
    assert result["valid"] is True and result["libcufile"]["release"] == "1.15"
    assert "left as it is" in result["msg"] and "no cufile option" in result["msg"]
    assert result["cufile"]["properties"]["io_batchsize"] == 64


def test_no_option_keeps_the_cuda_alternatives_link(harness, tmp_path):
    cuda = tmp_path / "cuda-13.0-gds-cufile.json"
    cuda.write_bytes(HAND_WRITTEN)
    link = tmp_path / "cufile.json"
    os.symlink(str(cuda), str(link))
    result = harness.run(path=str(link))
    assert result["changed"] is False and result["kept"] is True
    assert os.path.islink(str(link)) and os.readlink(str(link)) == str(cuda)
    assert "a symlink to %s" % cuda in result["msg"]


def test_no_option_reports_an_invalid_file_without_rewriting_it(harness, tmp_path):
    target = tmp_path / "cufile.json"
    target.write_text('{"execution": {"allow_compat_mode": false}}')
    before = sha(target)
    result = harness.run(path=str(target))
    assert not result.get("failed") and result["changed"] is False and result["valid"] is False
    assert any("properties.allow_compat_mode" in (f.get("suggestion") or "") for f in result["findings"])
    assert result["warnings"] and sha(target) == before


def test_no_option_and_no_file_creates_nothing(harness, tmp_path):
    result = harness.run(path=str(tmp_path / "cufile.json"))
    assert result["changed"] is False and result["kept"] is True and result["valid"] is None
    assert os.listdir(str(tmp_path)) == []


def test_settings_start_from_the_host_release_and_say_so(harness, tmp_path):
    target = tmp_path / "cufile.json"
    result = harness.run(path=str(target), settings={"properties": {"io_batchsize": 64}})
    assert result["changed"] and result["base"] == "shipped"
    assert result["base_release"] == "libcufile 1.15.1 (CUDA 13.0)"
    assert result["libcufile"] == {"path": "/usr/local/cuda/lib64/libcufile.so.0", "version": "1.15.1",
                                   "release": "1.15", "source": "host"}
    assert loads(target.read_text())["properties"]["io_batchsize"] == 64


@pytest.mark.parametrize("settings, base", [({"properties": {"io_batchsize": 64}}, None), (None, "empty"),
                                            ({"logging": {"level": "INFO"}}, "current")])
def test_a_release_unknown_to_the_collection_is_refused(tmp_path, monkeypatch, settings, base):
    host_runs(monkeypatch, "1.21.0")  # a release newer than the collection measured
    harness = Harness(tmp_path, monkeypatch)
    target = tmp_path / "cufile.json"
    target.write_bytes(HAND_WRITTEN)
    before = sha(target)
    args = dict(path=str(target), settings=settings, base=base)
    result = harness.run(**dict((k, v) for k, v in args.items() if v is not None))
    assert result["failed"] and result.get("changed") is not True
    assert ("the host's libcufile 1.21.0 is unknown to the collection (known releases: 1.13, 1.14, 1.15, 1.16, "
            "1.17, 1.18, 1.19, 1.20)") in result["msg"]
    assert "nothing was written" in result["msg"] and sha(target) == before and harness.calls == ["plan"]


def test_a_measured_release_without_a_shipped_file_needs_another_base(tmp_path, monkeypatch):
    """libcufile 1.13 (CUDA 12.8) is a measured release (its own validator view), but the collection
    has no cufile.json it ships: settings over base shipped are refused, base empty is written."""
    host_runs(monkeypatch, "1.13.1")
    harness = Harness(tmp_path, monkeypatch)
    target = tmp_path / "cufile.json"
    target.write_bytes(HAND_WRITTEN)
    before = sha(target)
    refused = harness.run(path=str(target), settings={"properties": {"io_batchsize": 64}})
    assert refused["failed"] and "no shipped file of libcufile 1.13 is known" in refused["msg"]
    assert "nothing was written" in refused["msg"] and sha(target) == before
    written = harness.run(path=str(target), base="empty", settings={"properties": {"io_batchsize": 64}})
    assert not written.get("failed") and written["changed"] and written["libcufile"]["release"] == "1.13"
    assert loads(target.read_text()) == {"properties": {"io_batchsize": 64}}


def test_a_release_other_than_the_host_is_refused(tmp_path, monkeypatch):
    host_runs(monkeypatch, "1.13.1")
    harness = Harness(tmp_path, monkeypatch)
    result = harness.run(path=str(tmp_path / "c.json"), cufile_version="1.15", settings={"logging": {"level": "INFO"}})
    assert result["failed"] and "cufile_version is 1.15, but the host's libcufile is 1.13.1" in result["msg"]
    assert os.listdir(str(tmp_path)) == []


def test_no_libcufile_on_the_host_fails_a_real_run_and_is_assumed_in_check_mode(tmp_path, monkeypatch):
    host_runs(monkeypatch, None, path=None)
    harness = Harness(tmp_path, monkeypatch)
    args = dict(path=str(tmp_path / "c.json"), settings={"logging": {"level": "INFO"}})
    result = harness.run(**args)
    assert result["failed"] and "no libcufile on the host" in result["msg"] and os.listdir(str(tmp_path)) == []
    checked = harness.run(check_mode=True, **args)
    assert checked["changed"] and checked["libcufile"]["source"] == "assumed"
    assert "checked again when the task runs" in checked["libcufile"]["note"]  # also a module warning
    # a release named explicitly is used where the host has no libcufile to contradict it
    named = harness.run(cufile_version="1.15", **args)
    assert named["changed"] and named["libcufile"]["source"] == "cufile_version"


def test_detection_reads_the_library_gds_facts_finds(tmp_path, monkeypatch):
    """host_libcufile: the soname link's target carries the release, as on the H100 host."""
    lib = tmp_path / "usr/local/cuda-13.0/lib64"
    lib.mkdir(parents=True)
    (lib / "libcufile.so.1.15.1").write_text("")
    os.symlink("libcufile.so.1.15.1", str(lib / "libcufile.so.0"))
    monkeypatch.setenv("GPUDIRECT_HOST_ROOT", str(tmp_path))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    found = _cufile_config.host_libcufile()
    assert found["version"] == "1.15.1" and found["path"].endswith("cuda-13.0/lib64/libcufile.so.0")
