# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gds_report callback: run journal, hand-over to the action, fallback report.

The callback is fed the same calls ansible-core makes (v2_playbook_on_start, ..._on_failed,
..._on_stats) with small stand-ins for Task/Host/Play objects; tests/system/test_report.py runs
it for real inside ansible-playbook."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from ansible import context
from ansible.module_utils.common.collections import ImmutableDict

from ansible_collections.gpudirect.storage.plugins.callback import gds_report as cbmod
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet as fr
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import journal as run_journal
from ansible_collections.gpudirect.storage.tests.unit.plugins.plugin_utils.test__fleet_report import (
    CAPTURED_COMPAT_FACTS)


class Named(object):
    def __init__(self, name):
        self.name = name

    def get_name(self, include_role_fqcn=True):
        return self.name if include_role_fqcn else self.name.rsplit(".", 1)[-1]


class Task(object):
    """Task.get_name() as ansible-core 2.19 builds it: "<role> : <name>"."""

    def __init__(self, name, role=None, action="ansible.builtin.assert", ignore_unreachable=False):
        self.name, self._role, self.action, self.ignore_unreachable = name, role, action, ignore_unreachable

    def get_name(self, include_role_fqcn=True):
        if self._role:
            return "%s : %s" % (self._role.get_name(include_role_fqcn), self.name)
        return self.name


class Result(object):
    def __init__(self, host, task, result):
        self.host, self.task, self.result = Named(host), task, result


class Play(object):
    def __init__(self, name, roles=(), hosts=()):
        self.name, self.roles, self.hosts = name, [Named(r) for r in roles], "gds_hosts"
        inventory = SimpleNamespace(get_hosts=lambda pattern, ignore_restrictions=False: [Named(n) for n in hosts])
        self._vm = SimpleNamespace(_inventory=inventory)

    def get_name(self):
        return self.name

    def get_roles(self):
        return self.roles

    def get_variable_manager(self):
        return self._vm


def playbook(file_name, plays):
    return SimpleNamespace(_file_name=file_name, get_plays=lambda: plays)


VERIFY = Named("gpudirect.storage.gds_verify")
FACTS_TASK = Task("Gather GDS facts and prove the data path with a cuFile write and read", VERIFY,
                  "gpudirect.storage.gds_facts")
ASSERT_TASK = Task("Assert the GDS verdict is at least gds", VERIFY)


@pytest.fixture
def callback(tmp_path, monkeypatch):
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(check=False))
    monkeypatch.setattr(run_journal, "_current", None)
    cb = cbmod.CallbackModule()
    cb._plugin_options = {"journal": None, "report_dir": str(tmp_path / "reports"), "write_on_abort": True}
    yield cb
    cb._end_journal()


def journal_lines(cb):
    with open(cb.journal_path) as f:
        return [json.loads(line) for line in f]


def run_verify(cb, report_play=True, hosts=("n1", "n2", "n3", "n4")):
    plays = [Play("Verify GPUDirect Storage", ["gpudirect.storage.gds_verify"], hosts)]
    if report_play:
        plays.append(Play("Write the GDS fleet report on the controller", ["gpudirect.storage.gds_report"], ["localhost"]))
    cb.v2_playbook_on_start(playbook("/x/playbooks/verify.yml", plays))
    cb.v2_playbook_on_play_start(plays[0])
    cb.v2_runner_on_ok(Result("n1", FACTS_TASK, {"ansible_facts": {"gds": CAPTURED_COMPAT_FACTS}}))
    cb.v2_runner_on_unreachable(Result("n2", FACTS_TASK, {"unreachable": True, "msg": "Task failed: Failed to connect "
                                                          "to the host via ssh: ssh: connect to host 10.77.250.250 "
                                                          "port 22: No route to host"}))
    cb.v2_runner_on_ok(Result("n3", FACTS_TASK, {"ansible_facts": {"gds": CAPTURED_COMPAT_FACTS}}))
    cb.v2_runner_on_failed(Result("n3", ASSERT_TASK, {"failed": True, "msg": "n3: GDS verdict compat is weaker than "
                                                      "the required gds"}))
    return plays


def test_journal_records_failures_and_unreachables_and_publishes_its_path(callback):
    run_verify(callback)
    assert run_journal.current().path == callback.journal_path and callback.journal.temporary
    assert "GDS_FLEET_JOURNAL" not in os.environ and "GDS_FLEET_RUN_ID" not in os.environ
    lines = journal_lines(callback)
    assert lines[0]["event"] == "start" and lines[0]["run_id"] == run_journal.current().run_id
    assert lines[1] == {"event": "playbook", "name": "verify.yml"}
    assert lines[2] == {"event": "unreachable", "host": "n2", "play": "Verify GPUDirect Storage",
                        "task": FACTS_TASK.name, "role": "gpudirect.storage.gds_verify",
                        "action": "gpudirect.storage.gds_facts",
                        "msg": "Failed to connect to the host via ssh: ssh: connect to host 10.77.250.250 port 22: "
                               "No route to host"}
    assert lines[3]["event"] == "failed" and lines[3]["task"] == "Assert the GDS verdict is at least gds"
    assert callback.seen_facts()["n1"]["mode"] == "compat" and callback.has_report_play


def test_ignored_failures_and_ignored_unreachables_are_not_recorded(callback):
    callback.v2_playbook_on_start(playbook("site.yml", []))
    callback.v2_runner_on_failed(Result("n1", ASSERT_TASK, {"failed": True, "msg": "x"}), ignore_errors=True)
    callback.v2_runner_on_unreachable(Result("n1", Task("t", ignore_unreachable=True), {"msg": "gone"}))
    assert [e["event"] for e in journal_lines(callback)] == ["start", "playbook"]


def test_a_rescued_host_is_recorded_as_recovered(callback):
    callback.v2_playbook_on_start(playbook("site.yml", []))
    callback.v2_runner_on_failed(Result("n1", Task("Build nvidia-fs"), {"failed": True, "msg": "dkms build failed"}))
    callback.v2_runner_on_ok(Result("n1", Task("Rescue: collect the make.log"), {}))
    callback.v2_runner_on_ok(Result("n1", Task("Next"), {}))
    state = fr.fold_journal(fr.parse_journal(open(callback.journal_path).read()))["n1"]
    assert [e["event"] for e in journal_lines(callback)][-2:] == ["failed", "recovered"]
    assert state["status"] is None and state["recovered"]


def test_the_action_reads_this_runs_journal_only(callback):
    run_verify(callback)
    events, note = run_journal.read(run_journal.current().path, run_journal.current().run_id)
    assert note is None and len(events) == 4
    events, note = run_journal.read(run_journal.current().path, "another-run")
    assert events == [] and "belongs to another run" in note


def test_stats_removes_the_temporary_journal_and_writes_no_report_when_the_report_play_ran(callback, tmp_path):
    run_verify(callback)
    callback.v2_runner_on_ok(Result("localhost", Task("Write", Named("gpudirect.storage.gds_report"),
                                                      "gpudirect.storage.gds_report"), {"changed": True}))
    path = callback.journal_path
    callback.v2_playbook_on_stats(None)
    assert not os.path.exists(path) and run_journal.current() is None
    assert not os.path.exists(str(tmp_path / "reports"))


def test_fallback_report_when_the_run_ended_before_its_report_play(callback, tmp_path):
    run_verify(callback, hosts=("n1", "n2", "n3", "n4"))
    callback.v2_playbook_on_stats(None)
    report = json.load(open(str(tmp_path / "reports" / "gds-fleet.json")))
    recs = dict((r["host"], r) for r in report["hosts"])
    assert sorted(recs) == ["n1", "n2", "n3", "n4"]
    assert recs["n1"]["status"] == "ok" and recs["n1"]["mode"] == "compat"
    assert recs["n2"]["status"] == "unreachable" and "No route to host" in recs["n2"]["reason"]
    assert recs["n3"]["status"] == "failed" and recs["n3"]["mode"] == "compat"
    assert recs["n4"]["status"] == "unknown"  # never reached: a later batch of an aborted run
    assert recs["n4"]["reason"] == ("not reached: the run ended (max_fail_percentage or any_errors_fatal) before "
                                    "this host's batch of play 'Verify GPUDirect Storage'")
    assert report["run"]["writer"] == "callback fallback" and report["run"]["playbooks"] == ["verify.yml"]
    assert os.path.isfile(str(tmp_path / "reports" / "gds-fleet.html"))


@pytest.mark.parametrize("report_play, check, write_on_abort, started", [
    (False, False, True, False), (True, True, True, False), (True, False, False, False),
    (True, False, True, True),  # --tags that skip the report tasks: the report play started, no abort
])
def test_no_fallback_without_abort_in_check_mode_or_when_disabled(callback, tmp_path, monkeypatch, report_play,
                                                                  check, write_on_abort, started):
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(check=check))
    callback._plugin_options["write_on_abort"] = write_on_abort
    plays = run_verify(callback, report_play=report_play)
    if started:
        callback.v2_playbook_on_play_start(plays[1])
    callback.v2_playbook_on_stats(None)
    assert not os.path.exists(str(tmp_path / "reports"))


def test_a_run_stopped_by_the_rollout_check_touched_no_host_and_keeps_the_last_report(callback, tmp_path):
    plays = [Play("Check the rollout settings", ["gpudirect.storage.gds_rollout_check"], ["n1", "n2"]),
             Play("Write the GDS fleet report on the controller", ["gpudirect.storage.gds_report"], ["localhost"])]
    callback.v2_playbook_on_start(playbook("/x/playbooks/site.yml", plays))
    callback.v2_playbook_on_play_start(plays[0])
    callback.v2_runner_on_failed(Result("n1", Task("Check", action="gpudirect.storage.gds_rollout_check"),
                                        {"failed": True, "msg": "gds_canary names gpu-z99, not a host of group gds_hosts"}))
    callback.v2_playbook_on_stats(None)
    assert not os.path.exists(str(tmp_path / "reports"))


def test_a_configured_journal_is_kept_and_truncated_at_the_next_run(callback, tmp_path):
    callback._plugin_options["journal"] = str(tmp_path / "keep" / "journal.jsonl")
    run_verify(callback, report_play=False)
    callback.v2_playbook_on_stats(None)
    assert len(open(str(tmp_path / "keep" / "journal.jsonl")).readlines()) == 4
    second = cbmod.CallbackModule()
    second._plugin_options = dict(callback._plugin_options)
    second.v2_playbook_on_start(playbook("verify.yml", []))
    assert [e["event"] for e in journal_lines(second)] == ["start", "playbook"]


def test_an_unwritable_fallback_report_dir_is_a_warning_not_a_crash(callback, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    callback._plugin_options["report_dir"] = str(blocker / "reports")
    warnings = []
    monkeypatch.setattr(callback._display, "warning", warnings.append)
    run_verify(callback)
    callback.v2_playbook_on_stats(None)
    assert len(warnings) == 1 and "cannot write the fallback report" in warnings[0]
    assert run_journal.current() is None


def test_two_playbooks_of_one_run_share_one_journal(callback, monkeypatch):
    """`verify.yml playbooks/report.yml`: Ansible sends the stats after each playbook."""
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(check=False, args=("verify.yml", "report.yml")))
    run_verify(callback)
    path, run_id = callback.journal_path, run_journal.current().run_id
    callback.v2_playbook_on_stats(None)
    assert os.path.exists(path) and run_journal.current().path == path
    callback.v2_playbook_on_start(playbook("/x/playbooks/report.yml", []))
    assert callback.journal_path == path and run_journal.current().run_id == run_id
    journal_path, events, note = run_journal.read_for_report()
    assert note is None and [e["host"] for e in events if e.get("host")] == ["n2", "n3"] and journal_path == path
    callback.v2_playbook_on_stats(None)  # the last playbook of the run
    assert not os.path.exists(path) and run_journal.current() is None


def test_the_fallback_report_dir_follows_the_playbook_not_the_current_directory(callback, tmp_path, monkeypatch):
    monkeypatch.chdir(str(tmp_path))
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(check=False, args=("/srv/gds/playbooks/verify.yml",)))
    callback._plugin_options["report_dir"] = None
    assert callback.fallback_report_dir() == "/srv/gds/reports"


def test_the_fallback_report_goes_beside_the_inventory_as_the_action_s(callback, tmp_path, monkeypatch):
    (tmp_path / "inventories" / "prod").mkdir(parents=True)
    monkeypatch.setattr(context, "CLIARGS", ImmutableDict(check=False, args=("gpudirect.storage.site",),
                                                          inventory=(str(tmp_path / "inventories" / "prod"),)))
    callback._plugin_options["report_dir"] = None
    assert callback.fallback_report_dir() == str(tmp_path / "inventories" / "reports" / "prod")


class LazyResult(Result):
    """A CallbackTaskResult that counts the reads of ``result`` (each one a copy in ansible-core)."""

    def __init__(self, host, task, result):
        super(LazyResult, self).__init__(host, task, None)
        self._data, self.reads = result, 0

    @property
    def result(self):
        self.reads += 1
        return self._data

    @result.setter
    def result(self, value):
        pass


def test_a_result_is_read_only_when_a_fallback_report_needs_its_facts(callback, tmp_path):
    """Each read of a result copies it to native types; only an aborted run's fallback report needs facts."""
    plays = [Play("Verify GPUDirect Storage", ["gpudirect.storage.gds_verify"], ("n1", "n2")),
             Play("Write the GDS fleet report on the controller", ["gpudirect.storage.gds_report"], ["localhost"])]
    callback.v2_playbook_on_start(playbook("/x/playbooks/verify.yml", plays))
    callback.v2_playbook_on_play_start(plays[0])
    older = LazyResult("n1", FACTS_TASK, {"ansible_facts": {"gds": dict(CAPTURED_COMPAT_FACTS, mode="unavailable")}})
    facts = LazyResult("n1", FACTS_TASK, {"ansible_facts": {"gds": CAPTURED_COMPAT_FACTS}})
    other = LazyResult("n1", ASSERT_TASK, {"msg": "All assertions passed"})
    plan = LazyResult("n2", Task("Plan", None, "gpudirect.storage.gds_plan"), {"ansible_facts": {}})
    for result in (older, facts, other, plan):
        callback.v2_runner_on_ok(result)
    assert [r.reads for r in (older, facts, other, plan)] == [0, 0, 0, 0]
    callback.v2_playbook_on_stats(None)  # no report play ran: the fallback report reads them now
    report = json.load(open(str(tmp_path / "reports" / "gds-fleet.json")))
    recs = dict((r["host"], r) for r in report["hosts"])
    assert recs["n1"]["mode"] == "compat" and recs["n2"]["mode"] == "unknown"
    assert other.reads == 0 and facts.reads == 1 and older.reads == 0 and plan.reads == 1
