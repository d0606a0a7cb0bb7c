# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_plan on the target: in ONE process, what each install stage would do in check mode -
the same code as the mofed and nvidia_fs modules and the plan phase of cufile_config - then the
gds facts, with the verify probe only when no stage would change anything.

Each stage runs against a :class:`StageModule`: the real module with the stage's own validated
parameters, check mode forced on, and ``fail_json`` raising :class:`StageFailed` instead of
exiting, so one stage's failure is reported and the others are still planned.
PRIVATE to the collection. Target-side code: standard library only, Python 3.8+.
"""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpudirect.storage.plugins.module_utils._flows import gds_facts

STAGES = ("mofed", "nvidia_fs", "cufile")


# Options the gds_plan action plugin consumes on the controller; never sent to the host.
ACTION_ONLY = ("preflight", "require_mode", "rollout_group", "converged_group")


def argument_spec():
    return dict(
        mofed=dict(type="dict"),
        nvidia_fs=dict(type="dict"),
        cufile=dict(type="dict"),
        facts=dict(type="dict", default={"probe": False}),
        preflight=dict(type="dict"),
        require_mode=dict(type="str", default="", choices=["", "gds", "p2pdma", "compat"]),
        rollout_group=dict(type="str", default="gds_rollout"),
        converged_group=dict(type="str", default="gds_converged"),
    )


class StageFailed(Exception):
    def __init__(self, msg, details=None):
        super(StageFailed, self).__init__(msg)
        self.msg = msg
        self.details = details or {}


class StageModule(object):
    """What a stage's code sees as its module (see the module docstring)."""

    def __init__(self, module, params):
        self._module = module
        self.params = params
        self.check_mode = True
        self._diff = module._diff

    def fail_json(self, msg, **kwargs):
        raise StageFailed(msg, kwargs)

    def exit_json(self, **kwargs):
        raise StageFailed("a stage tried to exit the plan", kwargs)

    def __getattr__(self, name):
        return getattr(self._module, name)


def stage_spec(name):
    """(argument_spec, validator keyword arguments, execute(module, paths, runner)) of a stage;
    imported here so that only the stages asked for are compiled on the target."""
    if name == "mofed":
        from ansible_collections.gpudirect.storage.plugins.module_utils._flows import mofed as flow
        return flow.argument_spec(), {}, flow.execute
    if name == "nvidia_fs":
        from ansible_collections.gpudirect.storage.plugins.module_utils._flows import nvidia_fs as flow
        return flow.argument_spec(), {"required_together": flow.REQUIRED_TOGETHER}, flow.execute
    from ansible.module_utils.basic import FILE_COMMON_ARGUMENTS
    from ansible_collections.gpudirect.storage.plugins.module_utils._flows import cufile_config as cfg

    def execute(module, paths, runner):
        try:
            return cfg.run_plan(module)
        except cfg.CufileConfigError as exc:
            raise StageFailed(str(exc), {"path": module.params["path"]})
    return dict(FILE_COMMON_ARGUMENTS, **cfg.argument_spec()), {"mutually_exclusive": cfg.MUTUALLY_EXCLUSIVE}, execute


def validate(spec, kwargs, args):
    """The stage's parameters with defaults, or StageFailed naming the option. A null value
    means "not set", as an omitted task option does."""
    res = ArgumentSpecValidator(spec, **kwargs).validate(dict((k, v) for k, v in (args or {}).items() if v is not None))
    if res.error_messages:
        raise StageFailed("; ".join(res.error_messages))
    return res.validated_parameters


def plan_stage(name, module, args, paths, runner):
    """One stage's check-mode result, with ``failed`` and ``msg`` when it failed."""
    try:
        spec, kwargs, execute = stage_spec(name)
        params = validate(spec, kwargs, args)
        return dict(execute(StageModule(module, params), paths, runner), failed=False)
    except StageFailed as exc:
        return dict(exc.details, failed=True, changed=False, msg=exc.msg)


def is_converged(stages):
    """True when every planned stage succeeded and would change nothing."""
    return bool(stages) and all(not s.get("failed") and not s.get("changed") for s in stages.values())


def plan(module, params, paths, runner):
    """{stages: {name: result}, converged, facts}; never changes the host."""
    module.check_mode = True  # what the stages delegate to the real module must not write either
    stages = {}
    for name in STAGES:
        if params.get(name) is not None:
            stages[name] = plan_stage(name, module, params[name], paths, runner)
    converged = is_converged(stages)
    try:
        facts_params = validate(gds_facts.argument_spec(), {}, params.get("facts"))
    except StageFailed as exc:
        raise StageFailed("facts: " + exc.msg)
    problem = gds_facts.check_params(facts_params)
    if problem:
        raise StageFailed("facts: " + problem)
    probe_asked = facts_params["probe"]
    # the probe is the verify of a converged host; a host about to change is probed after the change
    facts_params["probe"] = bool(probe_asked and converged)
    facts = gds_facts.gather(facts_params, paths, runner, tmp_root=module.tmpdir)
    facts["probe"]["deferred"] = bool(probe_asked and not facts_params["probe"])
    return {"stages": stages, "converged": converged, "facts": facts}
