# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gds_report action plugin, run in-process with a stand-in task."""

from __future__ import annotations

import json
import os
from unittest.mock import MagicMock

import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.gpudirect.storage.plugins.action import gds_report as action
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import journal as run_journal
from ansible_collections.gpudirect.storage.tests.unit.plugins.plugin_utils.test__fleet_report import (
    CAPTURED_COMPAT_FACTS, CAPTURED_JOURNAL, UNAVAILABLE_FACTS)

HOSTVARS = {
    "gpu-standin-01": {"ansible_facts": {"gds": CAPTURED_COMPAT_FACTS}},
    "require-gds-04": {"ansible_facts": {"gds": CAPTURED_COMPAT_FACTS}, "gds_reboot_pending": "mofed installed new "
                       "RDMA kernel modules (gds_allow_reboot is false)"},
    "no-libcufile-03": {"ansible_facts": {"gds": UNAVAILABLE_FACTS}},
    "unreachable-05": {"ansible_facts": {}},
    "localhost": {},
}
GROUPS = {"all": sorted(HOSTVARS), "gds_hosts": ["gpu-standin-01", "no-libcufile-03", "require-gds-04",
                                                 "unreachable-05"]}


def run_action(args, check_mode=False, diff=False, hostvars=None, groups=None):
    task = MagicMock(args=args, async_val=0, check_mode=check_mode, diff=diff, action="gpudirect.storage.gds_report")
    plugin = action.ActionModule(task, MagicMock(), MagicMock(), loader=None, templar=None, shared_loader_obj=None)
    return plugin.run(task_vars={"hostvars": HOSTVARS if hostvars is None else hostvars,
                                 "groups": GROUPS if groups is None else groups})


@pytest.fixture
def journal(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    path.write_text(CAPTURED_JOURNAL)
    monkeypatch.setattr(run_journal, "_current", run_journal.RunJournal(str(path), "d1cb13beff3342eeb9dbf2d7054a60ae"))
    return str(path)


def test_default_hosts():
    assert action.default_hosts(GROUPS) == GROUPS["gds_hosts"]
    assert action.default_hosts({"all": ["localhost", "a", "b"], "ungrouped": []}) == ["a", "b"]
    assert action.default_hosts(None) == []


def test_host_facts_and_pending_reboots_from_hostvars():
    names, facts, pending = action.read_hosts(HOSTVARS, ["gpu-standin-01", "unreachable-05", "not-in-inventory"])
    assert names == ["gpu-standin-01", "unreachable-05", "not-in-inventory"]
    assert list(facts) == ["gpu-standin-01"] and pending == {}
    assert action.read_hosts(HOSTVARS, ["require-gds-04"])[2]["require-gds-04"].startswith("mofed installed")
    # verified: the other hosts with gds facts follow, in inventory order; the named ones stay first
    names, facts, pending = action.read_hosts(HOSTVARS, ["unreachable-05"], verified=True)
    assert names == ["unreachable-05", "gpu-standin-01", "require-gds-04", "no-libcufile-03"]
    assert list(facts) == names[1:] and list(pending) == ["require-gds-04"]


def test_a_host_ansible_does_not_know_reads_as_no_variables():
    class Undefined(object):  # what HostVars.raw_get returns for a name not in the inventory
        pass

    class HostVarsStandIn(dict):
        def raw_get(self, host):
            return Undefined()

    assert action.raw_host_variables(HostVarsStandIn(a=1), "a") is None
    assert action.raw_host_variables({}, "a") is None


def test_read_journal_without_path_or_unreadable(tmp_path):
    assert "enable the gpudirect.storage.gds_report callback" in run_journal.read(None)[1]
    assert "unreadable" in run_journal.read(str(tmp_path / "missing"))[1]


def test_run_writes_the_report_with_the_journal_reasons(journal, tmp_path):
    res = run_action({"dest": str(tmp_path / "r")})
    assert res["changed"] and res["journal"] == journal and "msg" not in res
    report = json.load(open(res["files"]["json"]))
    recs = dict((r["host"], r) for r in report["hosts"])
    assert list(recs) == ["gpu-standin-01", "no-libcufile-03", "require-gds-04", "unreachable-05"]
    assert recs["unreachable-05"]["status"] == "unreachable"
    assert recs["require-gds-04"]["status"] == "failed" and recs["require-gds-04"]["reboot_pending"]
    assert report["run"] == {"journal": True, "playbooks": ["run.yml"]}
    assert res["summary"]["by_status"] == {"ok": 2, "failed": 1, "unreachable": 1, "unknown": 0}
    again = run_action({"dest": str(tmp_path / "r")})
    assert not again["changed"]


def test_run_without_the_callback_reports_unknown_hosts_and_says_why(tmp_path, monkeypatch):
    monkeypatch.setattr(run_journal, "_current", None)
    res = run_action({"dest": str(tmp_path), "hosts": ["unreachable-05", "gpu-standin-01"], "formats": ["md"],
                      "verified_hosts": False})
    assert res["journal"] is None and "enable the gpudirect.storage.gds_report callback" in res["msg"]
    assert sorted(os.listdir(str(tmp_path))) == ["gds-fleet-repair.txt", "gds-fleet.json", "gds-fleet.md"]
    rec = json.load(open(res["files"]["json"]))["hosts"][1]
    assert rec["host"] == "unreachable-05" and rec["status"] == "unknown"


def test_a_journal_named_in_the_environment_is_never_read(journal, tmp_path, monkeypatch):
    """os.environ reaches every child process: a nested run must not read the outer run's journal."""
    monkeypatch.setattr(run_journal, "_current", None)
    monkeypatch.setenv("GDS_FLEET_JOURNAL", journal)
    monkeypatch.setenv("GDS_FLEET_RUN_ID", "d1cb13beff3342eeb9dbf2d7054a60ae")
    res = run_action({"dest": str(tmp_path / "r"), "hosts": ["unreachable-05"], "verified_hosts": False})
    assert res["journal"] is None and "enable the gpudirect.storage.gds_report callback" in res["msg"]
    assert json.load(open(res["files"]["json"]))["hosts"][0]["status"] == "unknown"


def test_run_check_mode_and_diff(journal, tmp_path):
    res = run_action({"dest": str(tmp_path / "r")}, check_mode=True, diff=True)
    assert res["changed"] and not os.path.exists(str(tmp_path / "r"))
    assert res["diff"]["before"] == "" and "| unreachable-05 | ssh | unreachable |" in res["diff"]["after"]


def test_explicit_facts_and_a_journal_of_another_run(journal, tmp_path, monkeypatch):
    monkeypatch.setattr(run_journal, "_current", run_journal.RunJournal(journal, "another-run"))
    res = run_action({"dest": str(tmp_path), "hosts": ["x"], "facts": {"x": CAPTURED_COMPAT_FACTS}})
    assert "belongs to another run" in res["msg"]
    assert json.load(open(res["files"]["json"]))["hosts"][0]["mode"] == "compat"


def test_bad_arguments_and_unwritable_dest(tmp_path):
    with pytest.raises(AnsibleActionFail, match="value of formats must be one or more of: json, md, html"):
        run_action({"dest": str(tmp_path), "formats": ["pdf"]})
    blocker = tmp_path / "file"
    blocker.write_text("")
    res = run_action({"dest": str(blocker / "sub")})
    assert res["failed"] and res["msg"].startswith("cannot write the fleet report into")


def test_hosts_verified_in_the_run_are_reported_without_a_gds_hosts_group(tmp_path):
    hostvars = {"localhost": {"ansible_facts": {"gds": CAPTURED_COMPAT_FACTS}}}
    groups = {"all": ["localhost"], "ungrouped": ["localhost"]}
    res = run_action({"dest": str(tmp_path), "hosts": []}, hostvars=hostvars, groups=groups)
    assert res["summary"]["hosts"] == 1
    report = json.load(open(os.path.join(str(tmp_path), "gds-fleet.json")))
    assert [r["host"] for r in report["hosts"]] == ["localhost"] and report["hosts"][0]["mode"] == "compat"


def test_verified_hosts_join_the_group_hosts_unless_turned_off(tmp_path):
    hostvars = dict(HOSTVARS, **{"extra-gpu-09": {"ansible_facts": {"gds": CAPTURED_COMPAT_FACTS}}})
    groups = dict(GROUPS, all=sorted(hostvars))
    res = run_action({"dest": str(tmp_path), "hosts": ["gpu-standin-01"]}, hostvars=hostvars, groups=groups)
    assert res["summary"]["hosts"] == 4  # + the two other hosts with gds facts
    res = run_action({"dest": str(tmp_path), "hosts": ["gpu-standin-01"], "verified_hosts": False},
                     hostvars=hostvars, groups=groups)
    assert res["summary"]["hosts"] == 1


def test_default_dest_is_beside_the_playbooks_not_the_current_directory(tmp_path, monkeypatch):
    project = tmp_path / "proj"
    (project / "playbooks").mkdir(parents=True)
    (project / "playbooks" / "verify.yml").write_text("[]\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(str(elsewhere))
    monkeypatch.delenv("GDS_REPORT_DIR", raising=False)
    monkeypatch.setattr(action, "command_line_playbooks", lambda: [str(project / "playbooks" / "verify.yml")])
    res = run_action({"hosts": ["gpu-standin-01"]})
    assert res["dest"] == str(project / "reports") and os.path.isfile(str(project / "reports" / "gds-fleet.json"))
    assert os.listdir(str(elsewhere)) == []


def test_each_inventory_has_its_report_beside_it_saying_which_playbook_wrote_it(tmp_path, monkeypatch):
    inventory = tmp_path / "inventories" / "prod"
    inventory.mkdir(parents=True)
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.delenv("GDS_REPORT_DIR", raising=False)
    monkeypatch.setattr(action, "command_line_inventories", lambda: [str(inventory)])
    monkeypatch.setattr(action, "command_line_playbooks", lambda: ["gpudirect.storage.site"])
    res = run_action({"hosts": ["gpu-standin-01"]})
    dest = tmp_path / "inventories" / "reports" / "prod"
    assert res["dest"] == str(dest) and res["changed"] is True
    first = json.loads((dest / "gds-fleet.json").read_text())
    assert first["run"]["playbooks"] == ["gpudirect.storage.site"]
    assert run_action({"hosts": ["gpu-standin-01"]})["changed"] is False  # the same run again
    # another playbook's run writes the report again: its time and its playbook
    monkeypatch.setattr(action, "command_line_playbooks", lambda: ["gpudirect.storage.verify"])
    res = run_action({"hosts": ["gpu-standin-01"]})
    second = json.loads((dest / "gds-fleet.json").read_text())
    assert res["changed"] is True and second["run"]["playbooks"] == ["gpudirect.storage.verify"]
    assert second["generated"] >= first["generated"]
    assert "gpudirect.storage.verify" in (dest / "gds-fleet.md").read_text()


class CountingHostVars(dict):
    """Ansible's HostVars as the action sees it: ``hostvars[h]`` builds the host's variables AND
    templates each value read; ``raw_get(h)`` only builds them. Counts both."""

    def __init__(self, *args, **kwargs):
        super(CountingHostVars, self).__init__(*args, **kwargs)
        self.raw_reads, self.templated_reads = [], []

    def __getitem__(self, host):
        self.templated_reads.append(host)
        return super(CountingHostVars, self).__getitem__(host)

    def raw_get(self, host):
        self.raw_reads.append(host)
        return super(CountingHostVars, self).__getitem__(host)


def test_each_host_s_variables_are_built_once_and_never_templated(tmp_path):
    """``hostvars[h]`` templates the whole ansible_facts tree of the host."""
    hostvars = CountingHostVars(HOSTVARS)
    res = run_action({"dest": str(tmp_path)}, hostvars=hostvars)
    assert res["summary"]["hosts"] == 4
    assert sorted(hostvars.raw_reads) == sorted(HOSTVARS) and hostvars.templated_reads == []
    report = json.load(open(os.path.join(str(tmp_path), "gds-fleet.json")))
    pending = [r for r in report["hosts"] if r["host"] == "require-gds-04"][0]
    assert "mofed installed new RDMA kernel modules" in json.dumps(pending)
