# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
name: gds_report
type: aggregate
short_description: Record why hosts failed or were unreachable, for the GDS fleet report
version_added: 0.1.0
description:
  - Records, for every host, the task that failed or found the host unreachable, its role and
    its message, in a run journal (JSON lines). The M(gpudirect.storage.gds_report)
    action (role C(gpudirect.storage.gds_report), C(playbooks/report.yml)) reads it, so hosts
    that never produced GDS facts appear in C(gds-fleet.json), C(gds-fleet.md) and
    C(gds-fleet.html) with the reason.
  - The action finds the journal of its own run through the collection's journal API
    (C(plugins/plugin_utils/_report/journal.py)) - registered in the C(ansible-playbook) process
    and seen by the worker processes Ansible forks from it, never published in the environment -
    and a journal from another run is never read. One journal serves every playbook of the run
    (C(ansible-playbook a.yml b.yml) sends the stats after each); it is removed after the last one.
  - When the playbook has a C(gpudirect.storage.gds_report) play but the run ended before that
    play started (C(max_fail_percentage) reached, C(any_errors_fatal)), the callback writes the
    report itself at the end, from the facts and failures it saw, into O(report_dir); hosts of
    the aborted play that never had their turn are marked C(not reached). A run stopped by
    M(gpudirect.storage.gds_rollout_check) touched no host and writes none (the last report stays).
  - Prints nothing; use it next to the normal stdout callback.
requirements:
  - enable it, for example C(ANSIBLE_CALLBACKS_ENABLED=gpudirect.storage.gds_report), or
    C(callbacks_enabled = gpudirect.storage.gds_report) in the C([defaults]) section of ansible.cfg.
options:
  journal:
    description:
      - Where to keep the run journal (a C(0600) file; credentials in failure messages are masked).
        Default - a temporary file in a private directory, both removed at the end of the run.
    type: path
    env:
      - name: GDS_REPORT_JOURNAL
    ini:
      - section: callback_gds_report
        key: journal
  report_dir:
    description:
      - Directory of the fallback report. Default - the directory the
        M(gpudirect.storage.gds_report) action uses (C(reports/<inventory name>) beside the
        inventory, never the current directory; see its O(gpudirect.storage.gds_report#module:dest)).
        Keep it equal to the role's C(gds_report_dir), which defaults to the same environment variable.
    type: str  # not path: Ansible would read an empty GDS_REPORT_DIR as the current directory
    env:
      - name: GDS_REPORT_DIR
    ini:
      - section: callback_gds_report
        key: report_dir
  write_on_abort:
    description: Write the fallback report when the run ended before its report play.
    type: bool
    default: true
    env:
      - name: GDS_REPORT_WRITE_ON_ABORT
    ini:
      - section: callback_gds_report
        key: write_on_abort
"""

import datetime
import os

from ansible import context
from ansible.plugins.callback import CallbackBase

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet as fr
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import journal as run_journal
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report.write import report_dir, write_report

REPORT_NAMES = ("gpudirect.storage.gds_report", "gds_report")  # the report's action and its role
# The collection's actions whose results carry ansible_facts.gds (short names: a play's
# ``collections:`` keyword).
FACT_MODULES = ("gds_facts", "gds_plan", "gds_preflight")
# checks that fail a run before any host is touched: no fallback report replaces the last one
BEFORE_ANY_HOST = frozenset(("gds_rollout_check", "gpudirect.storage.gds_rollout_check"))
FACT_ACTIONS = frozenset(FACT_MODULES + tuple("gpudirect.storage." + m for m in FACT_MODULES))
# Results kept per host for the fallback report; the newest with gds facts is used.
KEPT_RESULTS = 4


def may_carry_facts(task):
    """True for a task of one of FACT_ACTIONS (its resolved name when Ansible resolved it)."""
    return any(getattr(task, attr, None) in FACT_ACTIONS for attr in ("resolved_action", "action"))


def task_info(task, play_name=None):
    """play, task, role, action of a Task object, as plain strings."""
    role = getattr(task, "_role", None)
    name = task.get_name(include_role_fqcn=False) if task is not None else None
    if role is not None and name and name.startswith(role.get_name(include_role_fqcn=False) + " : "):
        name = name.split(" : ", 1)[1]  # the role is its own field; the name is as the console shows it
    return {"play": play_name, "task": name, "role": role.get_name() if role is not None else None,
            "action": getattr(task, "action", None)}


def is_report_play(play):
    """True when the play runs the gds_report role in its roles: section (playbooks/report.yml)."""
    for role in play.get_roles() or []:
        if role.get_name() in REPORT_NAMES or role.get_name(include_role_fqcn=False) == "gds_report":
            return True
    return False


def playbook_has_report(plays):
    return any(is_report_play(play) for play in plays)


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpudirect.storage.gds_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self.journal = None  # _report.journal.RunJournal of this run
        self.play_name = None
        self.play_all_hosts = []
        self.playbooks = []
        self.failed = set()
        # host -> newest last: slim facts (a failure's) or an ok result of FACT_ACTIONS not read
        # yet. Reading a result converts all of it to native types (a copy per callback), so an ok
        # result is read only when the fallback report is written - in most runs never.
        self.fact_sources = {}
        self.hosts = []
        self.has_report_play = False
        self.play_hosts = {}  # play name -> hosts that produced a result in it
        self.report_ran = False
        self.report_play_started = False
        self.playbooks_started = 0
        self.stopped_before_any_host = False

    # -- journal --------------------------------------------------------------------------------
    @property
    def journal_path(self):
        return self.journal.path if self.journal is not None else None

    def _append(self, event):
        if self.journal is None:
            return
        try:
            self.journal.append(event)
        except (IOError, OSError) as exc:
            self._display.warning("gds_report: cannot write the run journal %s: %s" % (self.journal.path, exc))

    def _open_journal(self):
        # registered in _report.journal: the gds_report action, in a worker forked from this
        # process, finds it there (journal.current()); nothing goes into the environment
        self.journal = run_journal.start_run(self.get_option("journal"))

    # -- playbook events -------------------------------------------------------------------------
    def v2_playbook_on_start(self, playbook):
        if self.journal is None:
            self._open_journal()
        self.playbooks_started += 1
        name = os.path.basename(getattr(playbook, "_file_name", "") or "playbook")
        self.playbooks.append(name)
        self._append({"event": "playbook", "name": name})
        try:
            self.has_report_play = self.has_report_play or playbook_has_report(playbook.get_plays())
        except Exception:  # pylint: disable=broad-except  # a detection aid, never a run breaker
            pass

    def v2_playbook_on_play_start(self, play):
        self.play_name = play.get_name()
        if is_report_play(play):  # started: a run with --tags that skip it did not abort
            self.report_play_started = True
        try:  # the play's hosts beyond the current serial batch (for the fallback report)
            inventory = play.get_variable_manager()._inventory
            names = [h.name for h in inventory.get_hosts(play.hosts, ignore_restrictions=True)]
        except Exception:  # pylint: disable=broad-except
            names = []
        self.play_all_hosts = names
        for name in names:
            if name not in self.hosts:
                self.hosts.append(name)

    # -- task results ----------------------------------------------------------------------------
    def _seen(self, host):
        if host not in self.hosts:
            self.hosts.append(host)
        self.play_hosts.setdefault(self.play_name, set()).add(host)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        host = result.host.get_name()
        self._seen(host)
        if ignore_errors:
            return
        self.failed.add(host)
        self.stopped_before_any_host |= getattr(result.task, "action", None) in BEFORE_ANY_HOST
        self._append(fr.journal_event("failed", host, task_info(result.task, self.play_name), result.result))
        facts = fr.slim_facts((result.result.get("ansible_facts") or {}).get("gds"))
        if facts:
            self._keep(host, facts)

    def v2_runner_on_unreachable(self, result):
        host = result.host.get_name()
        self._seen(host)
        if getattr(result.task, "ignore_unreachable", False):
            return
        self._append(fr.journal_event("unreachable", host, task_info(result.task, self.play_name), result.result))

    def v2_runner_on_ok(self, result):
        host = result.host.get_name()
        self._seen(host)
        if host in self.failed:  # a rescued failure: the host goes on
            self.failed.discard(host)
            self._append(fr.journal_event("recovered", host, task_info(result.task, self.play_name)))
        if may_carry_facts(result.task):
            self._keep(host, result)
        if getattr(result.task, "action", None) in REPORT_NAMES:
            self.report_ran = True

    def _keep(self, host, source):
        kept = self.fact_sources.setdefault(host, [])
        kept.append(source)
        del kept[:-KEPT_RESULTS]

    def seen_facts(self):
        """{host: slim gds facts}: per host the newest failure's facts or ok result's that has them."""
        out = {}
        for host, kept in self.fact_sources.items():
            for source in reversed(kept):
                facts = source if isinstance(source, dict) else fr.slim_facts(
                    (source.result.get("ansible_facts") or {}).get("gds"))
                if facts:
                    out[host] = facts
                    break
        return out

    def _last_playbook(self):
        """Ansible sends the stats after EVERY playbook of ``ansible-playbook a.yml b.yml``: the
        journal must outlive all but the last, or b.yml's report loses what a.yml recorded. A run
        that stops early (a failed host ends the playbook loop) leaves it to the atexit removal."""
        return self.playbooks_started >= len(context.CLIARGS.get("args") or ())

    def fallback_report_dir(self):
        return report_dir(self.get_option("report_dir"), context.CLIARGS.get("args") or (), os.environ,
                          context.CLIARGS.get("inventory") or ())

    def v2_playbook_on_stats(self, stats):
        last = self._last_playbook()
        try:
            aborted = (self.has_report_play and not self.report_play_started and not self.report_ran
                       and not self.stopped_before_any_host)
            if aborted and self.get_option("write_on_abort") and not context.CLIARGS.get("check"):
                self._write_fallback()
        finally:
            if last:
                self._end_journal()

    def _end_journal(self):
        """Unregister this run's journal and remove it if it is temporary."""
        if self.journal is not None and run_journal.current() is self.journal:
            run_journal.end_run()
        elif self.journal is not None:
            self.journal.remove()

    def _write_fallback(self):
        text = self.journal.text() if self.journal is not None else ""
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        report = fr.fallback_report(text, self.hosts, self.seen_facts(), self.play_name, self.play_all_hosts,
                                    self.play_hosts.get(self.play_name) or set(),
                                    list(context.CLIARGS.get("args") or ()) or self.playbooks, now)
        dest = self.fallback_report_dir()
        try:
            res = write_report(dest, report)
        except (IOError, OSError) as exc:
            self._display.warning("gds_report: cannot write the fallback report into %s: %s" % (dest, exc))
            return
        self._display.display("gds_report: the run ended before its report play; report written to %s"
                              % res["files"]["html"])
