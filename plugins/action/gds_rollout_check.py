# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.gds_rollout_check: the rollout settings of playbooks/site.yml, checked on
the controller before any host is touched (plugins/plugin_utils/_gds/rollout.py)."""

from __future__ import annotations

from collections.abc import Mapping

from ansible.plugins.action import ActionBase
from ansible.utils.vars import load_extra_vars

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_rollout_check import argument_spec
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import rollout

DEFAULTS = {"gds_serial": "25%", "gds_max_fail_percentage": 25, "gds_canary": []}


def inventory_values(hostvars, hosts, extra_vars):
    """{setting: {host: value}} of the settings that the hosts have but the extra vars do not:
    read from each host's variables as Ansible built them (not templated)."""
    raw_get = getattr(hostvars, "raw_get", None)
    found = {}
    for host in hosts:
        try:
            variables = raw_get(host) if raw_get is not None else hostvars[host]
        except KeyError:
            continue
        if not isinstance(variables, Mapping):
            continue
        for name in rollout.SETTINGS:
            if name in variables and name not in extra_vars:
                found.setdefault(name, {})[host] = variables[name]
    return found


class ActionModule(ActionBase):
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=argument_spec())
        group = args["group"]
        hosts = list((task_vars.get("groups") or {}).get(group) or [])
        extra_vars = load_extra_vars(self._loader)
        found = rollout.problems(group, hosts, extra_vars,
                                 inventory_values(task_vars.get("hostvars") or {}, hosts, extra_vars),
                                 sources=task_vars.get("ansible_inventory_sources") or [],
                                 playbook_dir=task_vars.get("playbook_dir"))
        if found:
            return dict(result, failed=True, msg="; ".join(found) + " - nothing was changed")
        settings = dict((name, extra_vars.get(name, default)) for name, default in DEFAULTS.items())
        return dict(result, changed=False, hosts=len(hosts), settings=settings,
                    msg="%d hosts in %s; gds_serial %s, gds_max_fail_percentage %s, gds_canary %s"
                        % (len(hosts), group, settings["gds_serial"], settings["gds_max_fail_percentage"],
                           settings["gds_canary"] or "none (the inventory order)"))
