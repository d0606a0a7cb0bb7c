# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Controller side of gpudirect.storage.gds_facts: run the module on the target, then validate
the cufile.json texts it returned with the collection's validator (jsonschema lives on the
controller, never on the GPU host) and add ``gds.cufile.valid`` / ``gds.cufile.findings``.

The module stays usable without this step: when jsonschema or the validator cannot be
imported, ``gds.cufile.validator`` says why and ``valid`` is null.

As the task of role gds_verify, the action first checks the role's variables against the role's
``meta/argument_specs.yml`` (``role_options.check``, as gds_plan does for the stage roles), so a
playbook can turn Ansible's own check - a second task per host - off (verify.yml does) and an
error still names the variable the user sets.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_options
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.results import validate_cufile, verdict_line, warm

MODULE = "gpudirect.storage.gds_facts"
ROLE = "gds_verify"  # the role whose one task this module is


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        if self._role_name() == ROLE:
            errors = role_options.check(ROLE, role_options.role_values(self._templar, [ROLE], task_vars or {}))
            if errors:
                return dict(result, failed=True, changed=False, msg=(
                    "the variables of role %s are invalid (its meta/argument_specs.yml): %s - nothing was run on the host"
                    % (ROLE, "; ".join(errors))))
        result.update(self._execute_module(module_name=MODULE, module_args=self._task.args, task_vars=task_vars))
        gds = (result.get("ansible_facts") or {}).get("gds")
        if isinstance(gds, dict):
            validate_cufile(gds)
            if not result.get("failed"):
                result["msg"] = verdict_line(gds)
        return result

    def _role_name(self):
        """The short name of the role this task belongs to, or None."""
        role = getattr(self._task, "_role", None)
        return role.get_name(include_role_fqcn=False) if role is not None else None


# Ansible's strategy imports action plugins in its main process before it forks a worker per
# host: loading the validator and the role's files here once saves every host's worker from
# doing it again.
warm()
role_options.warm()
