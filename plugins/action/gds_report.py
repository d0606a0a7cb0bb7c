# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.gds_report: build the fleet report on the controller from every host's
``ansible_facts.gds`` and this run's journal, and write gds-fleet.{json,md,html}."""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping

from ansible import context
from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_report import argument_spec
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet as fr
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import journal as run_journal
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import repair
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report.write import report_dir, write_report

LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


def default_hosts(groups):
    """The hosts of group gds_hosts, or every inventory host but localhost."""
    groups = groups or {}
    if groups.get("gds_hosts"):
        return list(groups["gds_hosts"])
    return [h for h in groups.get("all") or [] if h not in LOCAL_NAMES]


def command_line_playbooks():
    """The playbooks given to ansible-playbook, as given (the report says which run wrote it)."""
    return list(context.CLIARGS.get("args") or [])


def command_line_inventories():
    """The run's inventory sources (-i, else ansible.cfg's): the report goes beside the first."""
    return list(context.CLIARGS.get("inventory") or [])


def raw_host_variables(hostvars, host):
    """The variables of ``host`` as Ansible built them, not templated (None for an unknown host):
    ``hostvars[host]`` would template the whole ansible_facts tree, whose values are final already."""
    raw_get = getattr(hostvars, "raw_get", None)
    try:
        found = raw_get(host) if raw_get is not None else hostvars[host]
    except KeyError:
        return None
    return found if isinstance(found, Mapping) else None


def read_hosts(hostvars, names, verified=False):
    """(names, {host: ansible_facts.gds}, {host: gds_reboot_pending}) reading each host's
    variables once: ``names`` in order and, when ``verified``, then every other inventory host with
    gds facts in this run (localhost too, when it was verified)."""
    hostvars = hostvars or {}
    names = list(names)
    wanted = set(names)
    candidates = names + ([h for h in hostvars if h not in wanted] if verified else [])
    facts, pending = {}, {}
    for host in candidates:
        hv = raw_host_variables(hostvars, host) or {}
        gds = (hv.get("ansible_facts") or {}).get("gds")
        has_facts = isinstance(gds, dict) and bool(gds.get("mode"))
        if host not in wanted:
            if not has_facts:
                continue
            names.append(host)
        if has_facts:
            facts[host] = gds
        if hv.get("gds_reboot_pending"):
            pending[host] = str(hv["gds_reboot_pending"])
    return names, facts, pending


class ActionModule(ActionBase):
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=argument_spec())
        hosts = args["hosts"] if args["hosts"] is not None else default_hosts(task_vars.get("groups"))
        journal_path, events, note = run_journal.read_for_report(args["journal"])
        journal_hosts = fr.fold_journal(events)
        names = list(hosts) + [h for h in sorted(journal_hosts) if h not in hosts and h not in LOCAL_NAMES]
        names, facts, pending = read_hosts(task_vars.get("hostvars"), names,
                                           verified=args["verified_hosts"] and args["facts"] is None)
        if args["facts"] is not None:
            facts = args["facts"]
        records = fr.build_records(names, facts, journal_hosts, journal_enabled=note is None, reboot_pending=pending,
                                   k8s_nodes=args["k8s_nodes"])
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        run = {"playbooks": command_line_playbooks() or [e.get("name") for e in events if e.get("event") == "playbook"],
               "journal": note is None}
        if note:
            run["note"] = note
        report = fr.build_report(records, title=args["title"], generated=now, run=run)
        dest = report_dir(args["dest"], command_line_playbooks(), os.environ, command_line_inventories())
        try:
            res = write_report(dest, report, args["formats"], check_mode=self._task.check_mode)
            repair_changed, repair_file = repair.write_repair(dest, report, check_mode=self._task.check_mode)
        except (IOError, OSError) as exc:
            result.update(failed=True, msg="cannot write the fleet report into %s: %s" % (dest, exc))
            return result
        result.update(changed=res["changed"] or repair_changed, dest=res["dest"], files=res["files"],
                      repair_file=repair_file, summary=report["summary"],
                      journal=journal_path if note is None else None)
        if note:
            result["msg"] = note
        if self._task.diff and res["changed"]:
            result["diff"] = res["diff"]
        return result
