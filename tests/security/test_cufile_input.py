# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Bad cufile.json input costs seconds, not minutes, and says where it is: cufile_config's whole
flow (the action plugin with the module run in-process) against a temporary host directory.

Each bad input fails with a message that names the option or the position, writes nothing on the
host, and returns a result of bounded size (findings capped, echoed values truncated).
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import cufile_config as _cufile_config
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_cufile_config import Harness

MIB = 1024 * 1024
TARGET_TEXT = '{\n  "properties": {"max_direct_io_size_kb": 16384}\n}\n'
RESULT_BOUND = 64 * 1024  # bytes of the task result as JSON


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host directory with /etc/cufile.json in it, its libcufile 1.15.1."""
    found = {"path": "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcufile.so.0", "version": "1.15.1"}
    monkeypatch.setattr(_cufile_config, "host_libcufile", lambda paths=None: dict(found))
    (tmp_path / "files").mkdir()
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "cufile.json").write_text(TARGET_TEXT)
    return tmp_path


def snapshot(root):
    out = {}
    for where, dirs, names in os.walk(str(root)):
        for name in names:
            with open(os.path.join(where, name), "rb") as f:
                out[os.path.join(where, name)] = f.read()
    return out


def written(before, after):
    """Bytes of every file the run created or changed, plus those of every file it removed."""
    changed = sum(len(data) for path, data in after.items() if before.get(path) != data)
    return changed + sum(len(data) for path, data in before.items() if path not in after)


def run(record_property, host, monkeypatch, **args):
    """The task's result, after checking that nothing was written and the result stays small."""
    harness = Harness(host, monkeypatch)
    before = snapshot(host)
    result = harness.run(path=str(host / "etc" / "cufile.json"), **args)
    n = written(before, snapshot(host))
    record_property("written", n)
    assert n == 0
    assert len(json.dumps(result, default=str)) < RESULT_BOUND
    return result, harness.calls


def error_findings(result):
    return [f for f in result["findings"] if f["severity"] == "error"]


@pytest.mark.bad_input
def test_many_unknown_keys_are_counted_after_the_first_findings(record_property, host, monkeypatch):
    doc = {"properties": dict(("unknown_key_%d" % i, i) for i in range(2000))}
    (host / "files" / "many.json").write_text(json.dumps(doc, indent=1))
    result, calls = run(record_property, host, monkeypatch, src="many.json")
    assert result["failed"] and calls == ["plan"]
    assert "2000 errors, nothing was written" in result["msg"]
    shown = [f for f in result["findings"] if f["code"] == "unknown-key"]
    assert 0 < len(shown) <= 50 and shown[0]["path"] == "properties.unknown_key_0" and shown[0]["line"] == 3
    (more,) = [f for f in result["findings"] if f["code"] == "more-findings"]
    assert "%d more errors" % (2000 - len(shown)) in more["message"]


@pytest.mark.bad_input
def test_src_over_the_size_cap_is_refused_before_it_is_parsed(record_property, host, monkeypatch):
    (host / "files" / "big.json").write_text('{"properties": {"io_batchsize_typo": "%s"}}' % ("A" * (2 * MIB)))
    result, calls = run(record_property, host, monkeypatch, src="big.json")
    assert result["failed"] and calls == []
    assert result["msg"].startswith("src big.json: ") and "more than the 1 MiB" in result["msg"]


@pytest.mark.bad_input
def test_remote_src_over_the_size_cap_is_refused(record_property, host, monkeypatch):
    big = host / "etc" / "big.json"
    big.write_text('{"properties": {"io_batchsize_typo": "%s"}}' % ("A" * (2 * MIB)))
    result, calls = run(record_property, host, monkeypatch, src=str(big), remote_src=True)
    assert result["failed"] and calls == ["plan"]
    assert ("src %s: " % big) in result["msg"] and "more than the 1 MiB" in result["msg"]


@pytest.mark.bad_input
def test_settings_over_the_size_cap_are_refused(record_property, host, monkeypatch):
    result, calls = run(record_property, host, monkeypatch, settings={"properties": {"io_batchsize_typo": "A" * (2 * MIB)}})
    assert result["failed"] and calls == []
    assert result["msg"].startswith("settings: ") and "more than the 1 MiB" in result["msg"]


@pytest.mark.bad_input
def test_env_file_over_the_size_cap_is_refused(record_property, host, monkeypatch):
    env = host / "etc" / "app.json"
    env.write_text(" " * (2 * MIB) + "{}")
    result, calls = run(record_property, host, monkeypatch, base="empty", env_path_json=str(env))
    assert result["failed"] and calls == ["plan"]
    assert ("env_path_json %s: " % env) in result["msg"] and "more than the 1 MiB" in result["msg"]


@pytest.mark.bad_input
def test_a_host_file_over_the_size_cap_is_reported_not_echoed(record_property, host, monkeypatch):
    (host / "etc" / "cufile.json").write_text('{"properties": {"io_batchsize_typo": "%s"}}' % ("A" * (2 * MIB)))
    result, calls = run(record_property, host, monkeypatch)
    assert result["valid"] is False and calls == ["plan"] and not result.get("changed")
    (finding,) = error_findings(result)
    assert finding["message"].startswith("$: %d bytes, more than the 1 MiB" % (2 * MIB + 41))


@pytest.mark.bad_input
def test_a_number_too_long_for_python_is_a_finding_with_its_position(record_property, host, monkeypatch):
    (host / "files" / "long.json").write_text('{\n  "properties": {\n    "io_batchsize": %s\n  }\n}\n' % ("9" * 5000))
    result, calls = run(record_property, host, monkeypatch, src="long.json")
    assert result["failed"] and calls == []
    (finding,) = result["findings"]
    assert (finding["line"], finding["column"], finding["code"]) == (3, 21, "syntax")
    assert "number too long" in finding["message"] and "properties.io_batchsize" in finding["message"]


@pytest.mark.bad_input
def test_a_number_too_long_in_the_host_file_is_reported(record_property, host, monkeypatch):
    (host / "etc" / "cufile.json").write_text('{"properties": {"io_batchsize": %s}}' % ("9" * 5000))
    result, calls = run(record_property, host, monkeypatch)
    assert result["valid"] is False and calls == ["plan"]
    (finding,) = error_findings(result)
    assert "number too long" in finding["message"] and finding["line"] == 1


@pytest.mark.bad_input
def test_many_duplicate_keys_are_counted_after_the_first_findings(record_property, host, monkeypatch):
    members = ",\n".join('"unknown_%d": {"a": [%d]}' % (i % 1500, i) for i in range(3000))  # each key twice
    (host / "files" / "dup.json").write_text('{\n%s\n}\n' % members)
    result, calls = run(record_property, host, monkeypatch, src="dup.json")
    assert result["failed"] and calls == ["plan"] and "1500 errors, nothing was written" in result["msg"]
    *listed, more = result["findings"]
    assert len(listed) == 50 and (listed[0]["path"], listed[0]["line"]) == ("unknown_0", 1502)
    assert more["message"] == "$: 1450 more errors and 1500 more warnings not listed (the first 50 findings are)."
