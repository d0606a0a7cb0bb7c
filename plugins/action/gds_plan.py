# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpudirect.storage.gds_plan: one module run on the host plans every stage and gathers the gds
facts; here, on the controller, the planned cufile.json is validated, the preflight checks run,
the host joins the rollout or the converged group (as group_by does) and a converged host's
verdict is held to ``require_mode``. One task per host instead of a facts call, three check-mode
stage calls, a group_by and a second facts call for the verify."""

from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.utils.vars import load_extra_vars

from ansible_collections.gpudirect.storage.plugins.module_utils._gds.verdict import gate

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_plan import argument_spec, host_options
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_preflight import argument_spec as preflight_spec
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import preflight as _preflight
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.preflight import warning_text
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_options as _role_options
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_vars as _role_vars
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.action import lint_plan, option, prepare, summarize
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.results import validate_cufile, warm

MODULE = "gpudirect.storage.gds_plan"
STAGE_KEYS = ("changed", "failed", "msg", "actions", "reasons", "version", "installed_version", "reboot_required",
              "reload_required", "nvidia_fs_rebuild_required", "path", "findings", "preflight", "diff",
              "base", "base_release", "libcufile", "kept", "valid", "validation_note")


def plan_line(stages, converged, gds):
    """What the plan found, in one line; it says "converged" exactly when ``converged`` is true."""
    would = ["%s (%s)" % (name, ", ".join(s.get("actions") or s.get("reasons") or ["changes"]))
             for name, s in stages.items() if s.get("changed")]
    now = "verified" if gds.get("verified") else ("probe deferred to after the rollout"
                                                  if (gds.get("probe") or {}).get("deferred") else "no I/O")
    if not stages:
        head = "no stage planned (--tags / gds_<stage>_enabled)"
    elif would:
        head = "would change: " + "; ".join(would)
    else:
        head = "converged: no stage would change anything" if converged else "not converged"
    return "%s; GDS now (%s) %s: %s" % (head, now, gds.get("mode"), gds.get("reason"))


def check_mode_verify(stages, require_mode):
    """What the verify of a host that would change says in check mode, where nothing was installed
    to prove: the requirement it would hold the host to afterwards, and that nothing is proven."""
    installs = ", ".join(name for name, s in stages.items() if s.get("changed")) or "nothing"
    what = "would require %s" % require_mode if require_mode else "would verify the data path"
    return "check mode: %s after installing %s; not proven" % (what, installs)


def stage_failures(stages):
    return ["%s: %s" % (name, _role_vars.inventory_names(name, s.get("msg") or "")) for name, s in stages.items()
            if s.get("failed")]


class ActionModule(ActionBase):

    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        task_args = dict(self._task.args)
        first = ("roles", "select_from_variables")
        picked = self._validated(dict((k, v) for k, v in task_args.items() if k in first), first)
        roles = picked["roles"]
        if picked["select_from_variables"]:
            if roles:
                raise AnsibleActionFail("roles and select_from_variables are mutually exclusive", obj=self._task.args)
            selected, problem = _role_options.selection(self._templar, task_vars or {})
            if problem:
                return dict(result, failed=True, msg=problem)
            result["preflight_only"] = selected.pop("preflight_only")
            roles = selected.pop("roles")
            task_args = dict(selected, **task_args)
        filled = {}
        if roles:
            # the roles' variables checked and mapped to the stages' options (role_options.py), before
            # the task's other options, which come from those variables (an error names them)
            filled, problem = _role_options.from_roles(self._templar, roles, task_vars or {})
            if problem:
                return dict(result, failed=True, msg=problem)
        args = self._validated(dict(filled, **task_args))
        warnings, problem = self._check_variables(task_vars or {}, args["unknown_variables"])
        if problem:
            return dict(result, failed=True, msg=problem, warnings=warnings)
        policy = None
        if args["preflight"] is not None:
            spec = dict((k, v) for k, v in preflight_spec().items() if k != "facts")
            checked = ArgumentSpecValidator(spec).validate(dict(args["preflight"]))
            if checked.error_messages:
                raise AnsibleActionFail("preflight: " + "; ".join(checked.error_messages))
            policy = checked.validated_parameters
        module_args = dict((k, v) for k, v in args.items() if k in host_options() and v is not None)
        if policy is not None and policy.get("mok_cert"):  # as gds_preflight: is the MOK cert enrolled?
            module_args["facts"] = dict(module_args.get("facts") or {}, mok_cert=policy["mok_cert"])
        if module_args.get("nvidia_fs"):
            module_args["nvidia_fs"] = dict((k, v) for k, v in module_args["nvidia_fs"].items()
                                            if k != "mok_key_passphrase")  # planning never signs
        cufile, src_text, version = args["cufile"], None, None
        if cufile is not None:
            module_args["cufile"], src_text, version, problem = prepare(dict(cufile), self._find_needle)
            if problem:
                return dict(result, failed=True, msg="cufile: " + problem["msg"], findings=problem.get("findings", []))
        out = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
        if out.get("failed"):
            return dict(result, **dict((k, v) for k, v in out.items() if k != "invocation"))
        stages = dict((name, dict((k, v) for k, v in s.items() if k in STAGE_KEYS))
                      for name, s in (out.get("stages") or {}).items())
        planned = stages.get("cufile") if cufile is not None else None
        if planned and not planned["failed"] and option(cufile, "state") == "present":
            # what cufile_config's action does after its plan phase: validate before anything is written
            lint = lint_plan(out["stages"]["cufile"], cufile, src_text, version)
            planned["findings"] = [f.as_dict() for f in lint.findings] if lint else []
            if planned.get("kept"):  # the host's own file, kept as it is: reported, not failed over
                planned["valid"] = lint.ok if lint else None
            elif not lint.ok:
                planned.update(failed=True, changed=False, msg=summarize(lint.findings, option(cufile, "path")))
        gds = out["ansible_facts"]["gds"]
        validate_cufile(gds)
        converged = bool(out.get("converged")) and not stage_failures(stages)
        result.update(changed=False, stages=stages, converged=converged, ansible_facts=out["ansible_facts"])
        # the stages ran in check mode here; what that leaves unknown is known when a real run installs
        said = [w for w in out.get("warnings") or []
                if self._task.check_mode or not warning_text(w).endswith("unknown in check mode")]
        if said or warnings:
            result["warnings"] = warnings + said
        failures = []
        if policy is not None:
            failures += ["preflight: " + f for f in _preflight.record(result, gds, policy)]
        failures += stage_failures(stages)
        if converged and not failures and args["require_mode"]:
            met, unmet = gate(gds, args["require_mode"], args["require_proven"])
            gds["require_mode"] = {"mode": args["require_mode"], "proven": args["require_proven"], "met": met}
            if unmet:  # the verify of a converged host: its facts are the fleet report's, as gds_verify's
                result.update(failed=True, msg=unmet)
                return result
        elif not converged and self._task.check_mode:
            result["check_mode_verify"] = check_mode_verify(stages, args["require_mode"])
            if args["require_mode"]:  # not judged: the host's verdict is the one before the install
                gds["require_mode"] = {"mode": args["require_mode"], "proven": args["require_proven"], "met": None}
        if failures:
            msg = "; ".join(failures)
            if not converged and "nothing was changed" not in msg.lower():
                msg += " - nothing was changed"
            # short: the message, the preflight table and the failed stages, not the facts
            short = _preflight.failed_result(result, msg)
            failed_stages = dict((name, s) for name, s in stages.items() if s.get("failed"))
            if failed_stages:
                short["stages"] = failed_stages
            return short
        group = args["converged_group"] if converged else args["rollout_group"]
        if group:
            result.update(add_group=group, parent_groups=["all"])
        result["msg"] = plan_line(stages, converged, gds)
        return result

    def _validated(self, args, only=None):
        """``args`` checked against gds_plan's argument spec (``only`` these options), with its defaults."""
        spec = dict((k, v) for k, v in argument_spec().items() if only is None or k in only)
        checked = ArgumentSpecValidator(spec).validate(args)
        if checked.error_messages:
            raise AnsibleActionFail("; ".join(checked.error_messages), obj=self._task.args)
        return checked.validated_parameters

    def _check_variables(self, task_vars, unknown_policy):
        """(warnings, failure message or None): our variables that nothing reads (typos), and
        extra-vars-only variables that come from the inventory."""
        play = self._task.get_play()
        warnings = _role_vars.misplaced_extra_vars(task_vars, load_extra_vars(self._loader),
                                                   getattr(play, "vars", None) or {})
        unknown = _role_vars.unknown_variables(task_vars) if unknown_policy != "ignore" else []
        if not unknown:
            return warnings, None
        message = _role_vars.describe_unknown(unknown)
        if unknown_policy == "warn":
            return warnings + [message], None
        return warnings, message + " - nothing was changed"


warm()  # see plugins/action/gds_facts.py
_role_vars.warm()
_role_options.warm()
