# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_report.journal: how the gds_report action finds the journal of its run, with no
environment-variable hand-off. The callback registers the journal in the ansible-playbook
process; a worker forked from it (as Ansible forks one per task) sees it, any other process
does not, and the environment carries nothing."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys

import pytest

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import journal as run_journal

READ_IN_ANOTHER_PROCESS = (
    "import json\n"
    "from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import journal\n"
    "print(json.dumps(journal.read_for_report()))\n")


@pytest.fixture(autouse=True)
def no_current_run(monkeypatch):
    monkeypatch.setattr(run_journal, "_current", None)
    yield
    run_journal.end_run()


def _read_in_child(conn):
    conn.send(run_journal.read_for_report())
    conn.close()


def test_a_worker_forked_from_the_run_reads_its_journal_and_the_environment_carries_nothing():
    before = dict(os.environ)
    run = run_journal.start_run()
    run.append({"event": "unreachable", "host": "n2", "msg": "No route to host"})
    assert dict(os.environ) == before
    ctx = multiprocessing.get_context("fork")  # ansible.utils.multiprocessing: workers are forks
    parent, child = ctx.Pipe()
    worker = ctx.Process(target=_read_in_child, args=(child,))
    worker.start()
    path, events, note = parent.recv()
    worker.join(30)
    assert worker.exitcode == 0
    assert path == run.path and note is None
    assert [e["event"] for e in events] == ["start", "unreachable"] and events[0]["run_id"] == run.run_id


def test_a_process_that_is_not_a_fork_of_the_run_finds_no_journal():
    """A nested ansible-playbook started by a task inherits the environment, not the run."""
    run_journal.start_run()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    out = subprocess.run([sys.executable, "-c", READ_IN_ANOTHER_PROCESS], env=env, check=True,
                         stdout=subprocess.PIPE, universal_newlines=True, timeout=120).stdout
    assert json.loads(out) == [None, [], run_journal.NO_JOURNAL]


def test_ansible_still_forks_its_workers():
    """The hand-off rests on it: should ansible-core start workers another way, this fails first
    (the action would then find no journal - never another run's - and say so in the report)."""
    from ansible.utils.multiprocessing import context
    assert context.get_start_method() == "fork"


def test_start_and_end_of_a_run(tmp_path):
    run = run_journal.start_run()
    assert run.temporary and os.path.isfile(run.path) and run_journal.current() is run
    run_journal.end_run()
    assert run_journal.current() is None and not os.path.exists(run.path)
    kept = run_journal.start_run(str(tmp_path / "sub" / "journal.jsonl"))
    assert not kept.temporary and kept.path == str(tmp_path / "sub" / "journal.jsonl")
    run_journal.end_run()
    assert os.path.isfile(kept.path) and run_journal.current() is None


def test_a_journal_another_run_truncated_is_refused_and_a_named_one_is_read_as_it_is(tmp_path):
    path = str(tmp_path / "journal.jsonl")
    mine = run_journal.start_run(path)
    other = run_journal.RunJournal(path, "0" * 32)
    with open(path, "w") as f:  # a concurrent run with the same configured path
        f.write(json.dumps({"event": "start", "run_id": other.run_id}) + "\n")
    assert run_journal.current() is mine
    found, events, note = run_journal.read_for_report()
    assert found == path and events == [] and note == "run journal %s belongs to another run" % path
    found, events, note = run_journal.read_for_report(path)  # the user named it: read as it is
    assert note is None and events == [{"event": "start", "run_id": other.run_id}]


def test_journals_are_the_owners_alone(tmp_path):
    run = run_journal.start_run()
    assert os.stat(run.path).st_mode & 0o777 == 0o600
    assert os.stat(os.path.dirname(run.path)).st_mode & 0o777 == 0o700  # its own directory
    run_journal.end_run()
    assert not os.path.exists(os.path.dirname(run.path))
    kept = tmp_path / "logs" / "journal.jsonl"
    run_journal.start_run(str(kept))
    assert (kept.stat().st_mode & 0o777, kept.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    kept.chmod(0o644)
    run_journal.start_run(str(kept))  # the next run truncates it and makes it private again
    assert kept.stat().st_mode & 0o777 == 0o600


def test_a_configured_journal_that_is_a_link_is_refused(tmp_path):
    target = tmp_path / "elsewhere"
    target.write_text("keep me\n")
    (tmp_path / "journal.jsonl").symlink_to(target)
    with pytest.raises(OSError):
        run_journal.start_run(str(tmp_path / "journal.jsonl"))
    assert target.read_text() == "keep me\n"
