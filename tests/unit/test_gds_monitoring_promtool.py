"""The shipped Prometheus rules and the collector's output through Prometheus' own promtool
(Debian package prometheus; tests/utils/install-system-deps.sh installs it). Without promtool these
tests skip, except under CI=true, where they fail."""

import json
import os
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.gpudirect.storage.tests.unit.test_gds_monitoring_collector import FIXTURES, ROOT, collector

RULES = os.path.join(ROOT, "prometheus", "rules", "gds.rules.yml")
RULE_TESTS = [os.path.join(ROOT, "prometheus", "tests", name) for name in ("gds.rules.test.yml", "gds.rules.days.test.yml")]
STATS = sorted(f for f in os.listdir(FIXTURES) if f.startswith("nvfs-stats-"))


@pytest.fixture(scope="module")
def promtool():
    path = shutil.which("promtool")
    if path is None:
        if os.environ.get("CI") == "true":
            pytest.fail("promtool is missing (Debian package prometheus: tests/utils/install-system-deps.sh)")
        pytest.skip("promtool is missing (Debian package prometheus)")
    return path


def run(argv, stdin=None):
    res = subprocess.run(argv, input=stdin, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=120, check=False)
    return res.returncode, res.stdout


def test_promtool_check_rules(promtool):
    rc, out = run([promtool, "check", "rules", RULES])
    assert rc == 0 and "SUCCESS" in out, out


def test_promtool_test_rules(promtool):
    rc, out = run([promtool, "test", "rules"] + RULE_TESTS)
    assert rc == 0 and out.count("SUCCESS") == len(RULE_TESTS), out


def test_every_alert_is_tested_firing_and_not_firing():
    with open(RULES) as f:
        alerts = set(r["alert"] for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r)
    cases = []
    for path in RULE_TESTS:
        with open(path) as f:
            cases += [c for t in yaml.safe_load(f)["tests"] for c in t.get("alert_rule_test", [])]
    firing = set(c["alertname"] for c in cases if c.get("exp_alerts"))
    quiet = set(c["alertname"] for c in cases if not c.get("exp_alerts"))
    assert alerts and alerts == firing == quiet


def test_every_alert_names_the_playbook_run_that_repairs_it():
    with open(RULES) as f:
        rules = [r for g in yaml.safe_load(f)["groups"] for r in g["rules"] if "alert" in r]
    for rule in rules:
        assert "ansible-playbook playbooks/" in rule["annotations"]["runbook"], rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical")


@pytest.mark.parametrize("stats", STATS)
def test_promtool_check_metrics_on_the_collectors_output(promtool, tmp_path, stats):
    root = tmp_path / "root"
    (root / "proc" / "driver" / "nvidia-fs").mkdir(parents=True)
    (root / "proc" / "modules").write_text("nvidia_fs 323584 0 - Live 0x0000000000000000 (OE)\n")
    shutil.copy(os.path.join(FIXTURES, stats), str(root / "proc" / "driver" / "nvidia-fs" / "stats"))
    (root / "proc" / "driver" / "nvidia-fs" / "version").write_text("version: 2.26\n")
    record = {"schema": 1, "time": 1764262800.5, "mode": "gds", "verified": True, "proven": True, "write_gbps": 3.5,
              "read_gbps": 5.3, "cufile": {"valid": True, "release": "1.15", "files": [
                  {"path": "/etc/cufile.json", "role": "global", "sha256": "0" * 64}]}}
    (tmp_path / "last_verdict.json").write_text(json.dumps(record))
    text = collector.render(collector.collect(str(root), str(tmp_path / "last_verdict.json"), "gds"))
    rc, out = run([promtool, "check", "metrics"], stdin=text)
    assert rc == 0 and out.strip() == "", out
    assert "gds_nvidia_fs_errors_total{counter=" in text and "gds_verdict_mode{mode=\"gds\"} 1" in text
