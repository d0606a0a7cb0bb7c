"""The fleet report's hosts to repair: the SSH hosts not at the mode they must reach, one per line
in gds-fleet-repair.txt beside the report, for `ansible-playbook --limit @<file>`."""

from __future__ import annotations

import os

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import repair
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gds_report_action import (  # noqa: F401 pylint: disable=unused-import
    journal, run_action)


def record(host, status="ok", mode="gds", checks=(), source="ssh"):
    return {"host": host, "status": status, "mode": mode, "source": source,
            "failed_checks": [{"check": c, "detail": "x"} for c in checks]}


def test_the_hosts_that_failed_were_unreachable_gave_no_verdict_or_missed_their_mode():
    report = {"hosts": [
        record("ok-gds"), record("ok-compat-no-requirement", mode="compat"),
        record("missed", mode="compat", checks=["verdict meets require_mode=gds"]),
        record("failed-task", status="failed"), record("gone", status="unreachable"),
        record("no-facts", status="unknown", mode="unknown"), record("probe-failed", mode="failed"),
        record("k8s-node", status="failed", source="kubernetes")]}
    assert repair.hosts_to_repair(report) == ["missed", "failed-task", "gone", "no-facts", "probe-failed"]
    assert repair.render(report) == "missed\nfailed-task\ngone\nno-facts\nprobe-failed\n"
    assert repair.render({"hosts": [record("ok-gds")]}) == ""


def test_the_report_action_writes_the_limit_file_beside_the_report(journal, tmp_path):  # noqa: F811
    dest = tmp_path / "r"
    res = run_action({"dest": str(dest)}, check_mode=True)
    assert res["changed"] and not dest.exists()
    res = run_action({"dest": str(dest)})
    assert res["changed"] and res["repair_file"] == str(dest / "gds-fleet-repair.txt")
    lines = (dest / "gds-fleet-repair.txt").read_text().splitlines()
    # the journal's failed and unreachable hosts, and the host without a GDS verdict
    assert "require-gds-04" in lines and "unreachable-05" in lines and "gpu-standin-01" not in lines
    assert oct(os.stat(res["repair_file"]).st_mode & 0o777) == "0o600"
    assert not run_action({"dest": str(dest)})["changed"]
    (dest / "gds-fleet-repair.txt").unlink()
    again = run_action({"dest": str(dest)})
    assert again["changed"] and (dest / "gds-fleet-repair.txt").exists()
