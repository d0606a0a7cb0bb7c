"""gds_verify's verdict record: built from the validated facts (_gds/record.verdict_record), written
by gds_facts (option record_path) and read back by the monitoring collector."""

import json
import os
import stat

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._gds.record import verdict_record
from ansible_collections.gpudirect.storage.plugins.modules import gds_facts
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module
from ansible_collections.gpudirect.storage.tests.unit.test_gds_monitoring_collector import collector, values

FACTS = {"mode": "gds", "verified": True, "proven": True, "reason": "nvidia-fs Writes ok moved",
         "throughput": {"write_gbps": 3.5, "read_gbps": 5.3, "size_mb": 256},
         "versions": {"nvidia_fs": "2.26", "libcufile": "1.15.1"},
         "cufile": {"valid": True, "release": "1.15", "errors": 0, "findings": [{"message": "not recorded"}],
                    "files": [{"path": "/etc/cufile.json", "role": "global", "exists": True, "sha256": "ab" * 32,
                               "size": 3, "realpath": "/etc/cufile.json"}]}}


def record(tmp_path, **kw):
    path = str(tmp_path / "state" / "last_verdict.json")
    return path, run_module(gds_facts.main, {"record_path": path, "record": verdict_record(FACTS, "gds", 1700000000.12345)},
                            **kw)


def test_the_record_carries_the_verdict_and_the_collector_reads_it(tmp_path):
    path, result = record(tmp_path)
    assert result["changed"] is True and not result.get("failed") and "ansible_facts" not in result
    saved = json.loads(open(path).read())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644 and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o755
    assert saved["schema"] == 1 and saved["time"] == 1700000000.123
    assert saved["mode"] == "gds" and saved["require_mode"] == "gds" and saved["write_gbps"] == 3.5
    assert saved["versions"] == {"nvidia_fs": "2.26", "libcufile": "1.15.1"}
    assert saved["cufile"]["files"] == [{"path": "/etc/cufile.json", "role": "global", "exists": True, "sha256": "ab" * 32}]
    assert "reason" not in saved and "findings" not in saved["cufile"]  # no free text on the host
    got = values(collector.verdict_samples(saved) + collector.cufile_samples(saved, lambda path: "ab" * 32))
    assert got[("gds_verdict_mode", (("mode", "gds"),))] == 1 and got[("gds_verdict_read_bytes_per_second", ())] == 5.3e9
    assert got[("gds_cufile_valid", (("path", "/etc/cufile.json"), ("release", "1.15"), ("role", "global")))] == 1
    assert record(tmp_path)[1]["changed"] is False  # the same record again


def test_facts_without_a_probe_or_a_validator_record_nulls():
    saved = verdict_record({"mode": "unavailable", "cufile": None, "throughput": None}, "", 5)
    assert saved == {"schema": 1, "time": 5, "mode": "unavailable", "verified": False, "proven": False,
                     "write_gbps": None, "read_gbps": None, "require_mode": None,
                     "versions": {"nvidia_fs": None, "libcufile": None}, "cufile": {"valid": None, "release": None, "files": []}}


def test_check_mode_writes_nothing_and_shows_the_record_as_a_diff(tmp_path):
    path, result = record(tmp_path, check_mode=True, diff=True)
    assert result["changed"] is True and not os.path.exists(os.path.dirname(path))
    assert result["diff"]["before"] == "" and json.loads(result["diff"]["after"])["mode"] == "gds"


@pytest.mark.parametrize("planted", ["link", "group-writable"])
def test_a_directory_another_user_could_write_in_is_refused(tmp_path, planted):
    state = tmp_path / "state"
    if planted == "link":
        (tmp_path / "elsewhere").mkdir()
        state.symlink_to(tmp_path / "elsewhere")
    else:
        state.mkdir()
        state.chmod(0o775)
    path, result = record(tmp_path)
    assert result["failed"] and "nothing was recorded" in result["msg"] and str(state) in result["msg"]
    assert os.listdir(str(tmp_path / ("elsewhere" if planted == "link" else "state"))) == []
