# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Controller side of gpudirect.storage.gds_facts: run the module on the target, then validate
the cufile.json texts it returned with the collection's validator (jsonschema lives on the
controller, never on the GPU host) and add ``gds.cufile.valid`` / ``gds.cufile.findings``.

The module stays usable without this step: when jsonschema or the validator cannot be
imported, ``gds.cufile.validator`` says why and ``valid`` is null.

As the task of role gds_verify, the action first looks for variables with one of the
collection's prefixes that nothing reads (``role_vars.unknown_variables``, as gds_plan does for
site.yml): a misspelled variable fails before anything runs on the host, named with the one it
probably meant (``gds_plan_unknown_variables: warn`` or ``ignore`` to go on). Ansible checks the
role's arguments against its ``meta/argument_specs.yml`` before this task.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_vars
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.results import validate_cufile, verdict_line, warm

MODULE = "gpudirect.storage.gds_facts"
ROLE = "gds_verify"  # the role whose one task this module is


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        unknown = role_vars.unknown_variables(task_vars or {}) if self._role_name() == ROLE else []
        policy = self._templar.template((task_vars or {}).get("gds_plan_unknown_variables", "fail")) if unknown else None
        if unknown and policy not in ("warn", "ignore"):
            return dict(result, failed=True, changed=False,
                        msg=role_vars.describe_unknown(unknown) + " - nothing was run on the host")
        result.update(self._execute_module(module_name=MODULE, module_args=self._task.args, task_vars=task_vars))
        if policy == "warn":
            result["warnings"] = list(result.get("warnings") or []) + [role_vars.describe_unknown(unknown)]
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
role_vars.warm()
