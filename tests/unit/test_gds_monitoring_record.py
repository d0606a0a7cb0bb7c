"""gds_verify's verdict record (roles/gds_verify/tasks/record_verdict.yml) written by a real
ansible-playbook run, read back by the monitoring collector."""

import json
import os
import subprocess
import sys

import yaml

from ansible_collections.gpudirect.storage.tests.unit.test_gds_monitoring_collector import ROOT, collector, values

FACTS = {"mode": "gds", "verified": True, "proven": True, "reason": "nvidia-fs Writes ok moved",
         "throughput": {"write_gbps": 3.5, "read_gbps": 5.3, "size_mb": 256},
         "versions": {"nvidia_fs": "2.26", "libcufile": "1.15.1"},
         "cufile": {"valid": True, "release": "1.15", "errors": 0, "findings": [{"message": "not recorded"}],
                    "files": [{"path": "/etc/cufile.json", "role": "global", "exists": True, "sha256": "ab" * 32,
                               "size": 3, "realpath": "/etc/cufile.json"}]}}


def test_the_record_carries_the_verdict_and_the_collector_reads_it(tmp_path):
    record = tmp_path / "state" / "last_verdict.json"
    book = tmp_path / "record.yml"
    book.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "vars": {"gds_verify_record_path": str(record), "gds_verify_require_mode": "gds"},
        "tasks": [{"ansible.builtin.set_fact": {"ansible_facts": {"gds": FACTS}}},
                  {"ansible.builtin.include_tasks": os.path.join(ROOT, "roles", "gds_verify", "tasks", "record_verdict.yml")}]}]))
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", "ansible_python_interpreter=" + sys.executable, str(book)]
    res = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-3000:]
    saved = json.loads(record.read_text())
    assert oct(os.stat(str(record)).st_mode & 0o777) == "0o644"
    assert saved["mode"] == "gds" and saved["require_mode"] == "gds" and saved["write_gbps"] == 3.5
    assert saved["cufile"]["files"] == [{"path": "/etc/cufile.json", "role": "global", "exists": True, "sha256": "ab" * 32}]
    assert "reason" not in saved and "findings" not in saved["cufile"]  # no free text on the host
    got = values(collector.verdict_samples(saved) + collector.cufile_samples(saved, lambda path: "ab" * 32))
    assert got[("gds_verdict_mode", (("mode", "gds"),))] == 1 and got[("gds_verdict_read_bytes_per_second", ())] == 5.3e9
    assert got[("gds_cufile_valid", (("path", "/etc/cufile.json"), ("release", "1.15"), ("role", "global")))] == 1
