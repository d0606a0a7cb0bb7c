# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.gds_preflight: one gds_facts call, then the read-only checks on the controller
(plugin_utils/_gds/preflight.py), one task instead of a facts call and an assert per check."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_preflight import argument_spec
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import preflight as _preflight
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.results import validate_cufile, warm

FACTS_MODULE = "gpudirect.storage.gds_facts"


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=argument_spec())
        facts_args = dict(args["facts"])
        if args["mok_cert"]:  # with Secure Boot on, the host is asked whether it is enrolled
            facts_args["mok_cert"] = args["mok_cert"]
        facts = self._execute_module(module_name=FACTS_MODULE, module_args=facts_args, task_vars=task_vars)
        result.update(facts)
        gds = (result.get("ansible_facts") or {}).get("gds")
        if result.get("failed") or not isinstance(gds, dict):
            result["failed"] = True
            result["msg"] = "gds_facts failed, nothing was checked: %s" % result.get("msg", "no gds facts returned")
            return result
        validate_cufile(gds)
        failures = _preflight.record(result, gds, args)
        if failures:
            return _preflight.failed_result(result, "preflight failed, nothing was changed: " + "; ".join(failures))
        result["msg"] = _preflight.summary(gds)
        return result


warm()  # see plugins/action/gds_facts.py
