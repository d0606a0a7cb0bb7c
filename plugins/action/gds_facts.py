# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Controller side of gpudirect.storage.gds_facts: run the module on the target, then validate
the cufile.json texts it returned with the collection's validator (jsonschema lives on the
controller, never on the GPU host) and add ``gds.cufile.valid`` / ``gds.cufile.findings``.

The module stays usable without this step: when jsonschema or the validator cannot be
imported, ``gds.cufile.validator`` says why and ``valid`` is null.

With ``record_path``, a verdict that met the gate is then recorded on the host by a second,
small call of the module (``record``): the record carries the cufile.json validity, which is
known only here, after the first call. Without it the task is one round trip.

As the one task of role gds_verify (verify.yml imports the role with ``rolespec_validate:
false``), the action first checks the role's variables against the role's
``meta/argument_specs.yml`` with Ansible's own validator, and looks for variables with one of the
collection's prefixes that nothing reads (a misspelled variable is named with the one it probably
meant; ``gds_plan_unknown_variables: warn`` or ``ignore`` goes on), before anything runs on the host.
"""

from __future__ import annotations

import time

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.storage.plugins.module_utils._gds.record import verdict_record
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_options, role_vars
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.results import validate_cufile, verdict_line, warm

MODULE = "gpudirect.storage.gds_facts"
ROLE = "gds_verify"  # the role whose one task this module is
ROLE_NAMES = (ROLE, "gpudirect.storage." + ROLE)  # ansible_role_name is the FQCN in ansible-core 2.19
NOTHING_RUN = " - nothing was run on the host"


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        args = dict(self._task.args)
        record_path = args.pop("record_path", None)
        if "record" in args:
            return dict(result, failed=True, changed=False, msg="record is set by the action plugin itself" + NOTHING_RUN)
        problem, warning = self._role_problem(task_vars) if task_vars.get("ansible_role_name") in ROLE_NAMES else (None, None)
        if problem:
            return dict(result, failed=True, changed=False, msg=problem + NOTHING_RUN)
        result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        if warning:
            result["warnings"] = list(result.get("warnings") or []) + [warning]
        gds = (result.get("ansible_facts") or {}).get("gds")
        if not isinstance(gds, dict):
            return result
        validate_cufile(gds)
        if result.get("failed"):
            return result
        result["msg"] = verdict_line(gds)
        if record_path:
            record = verdict_record(gds, args.get("require_mode"), time.time())
            written = self._execute_module(module_name=MODULE, module_args=dict(record_path=record_path, record=record),
                                           task_vars=task_vars)
            result.update(changed=bool(written.get("changed")), diff=written.get("diff", {}))
            if written.get("failed"):
                result.update(failed=True, msg="the verdict was not recorded: %s" % written.get("msg"))
        return result

    def _role_problem(self, task_vars):
        """(why the role's variables stop the task, a warning to give), either None."""
        values = role_options.role_values(self._templar, [ROLE], task_vars)
        errors = role_options.check(ROLE, values)
        if errors:
            return "the variables of role %s are invalid (its meta/argument_specs.yml): %s" % (ROLE, "; ".join(errors)), None
        unknown = role_vars.unknown_variables(task_vars)
        if not unknown:
            return None, None
        policy = self._templar.template(task_vars.get("gds_plan_unknown_variables", "fail"))
        if policy not in ("warn", "ignore"):
            return role_vars.describe_unknown(unknown), None
        return None, role_vars.describe_unknown(unknown) if policy == "warn" else None


# Ansible's strategy imports action plugins in its main process before it forks a worker per
# host: loading the validator and the role's files here once saves every host's worker from
# doing it again.
warm()
role_vars.warm()
role_options.warm()
