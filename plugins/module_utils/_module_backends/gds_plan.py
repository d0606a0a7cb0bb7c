# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_plan on the target: in ONE process, what each install stage would do in check mode -
the same code as the mofed and nvidia_fs modules and the plan phase of cufile_config - then the
gds facts, with the verify probe only when no stage would change anything.

Each stage runs against a :class:`StageModule` and a :class:`PlanRunner` over it: the stage's own
validated parameters, check mode that is a constant, no write path at all (no writer method is
reachable; file attributes are only compared by a function that reads), and ``fail_json``
raising :class:`StageFailed` instead of exiting, so one stage's failure is reported and the
others are still planned; a read-only command two stages ask is run once. The real module is
never switched into check mode, nor any flag forwarded.
PRIVATE to the collection. Target-side code: standard library only, Python 3.8+.
"""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_facts
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.argspec import ArgumentSpec
from ansible_collections.gpudirect.storage.plugins.module_utils._packages.queries import PackageMemo

STAGES = ("mofed", "nvidia_fs", "cufile")


def host_options():
    """The options the host's part reads (what the action sends)."""
    return dict(
        mofed=dict(type="dict"),
        nvidia_fs=dict(type="dict"),
        cufile=dict(type="dict"),
        facts=dict(type="dict", default={"probe": False}),
    )


def controller_options():
    """The options the gds_plan action consumes on the controller; never sent to the host."""
    return dict(
        preflight=dict(type="dict"),
        require_mode=dict(type="str", default="", choices=["", "gds", "p2pdma", "compat"]),
        require_proven=dict(type="bool", default=True),
        rollout_group=dict(type="str", default="gds_rollout"),
        converged_group=dict(type="str", default="gds_converged"),
        unknown_variables=dict(type="str", default="fail", choices=["fail", "warn", "ignore"]),
        roles=dict(type="list", elements="str", default=[],
                   choices=["gds_plan", "mofed", "nvidia_fs", "cufile", "gds_preflight", "gds_verify"]),
        select_from_variables=dict(type="bool", default=False),
    )


def argument_spec():
    """Every option of the module (its documentation): each stated once, in the half that reads it."""
    return dict(host_options(), **controller_options())


class StageFailed(Exception):
    def __init__(self, msg, details=None):
        super(StageFailed, self).__init__(msg)
        self.msg = msg
        self.details = details or {}


class StageModule(object):
    """What a stage's code sees as its module (see the module docstring). It has no write path:
    ``check_mode`` is always True (setting it False fails the stage), the writers (atomic_move,
    backup_local, preserved_copy, set_fs_attributes_if_different) fail the stage and forward
    nothing, and only the real module's read-only helpers are reachable; whether a file's attributes would change is a comparison that only
    reads (managed_file.attributes_differ)."""

    READS = ("_diff", "tmpdir", "warn", "deprecate", "debug", "get_bin_path", "run_command",
             "load_file_common_arguments", "selinux_enabled", "selinux_context", "get_file_attributes")

    def __init__(self, module, params):
        self._module = module
        self.params = params

    @property
    def check_mode(self):
        return True

    @check_mode.setter
    def check_mode(self, value):
        if not value:
            raise StageFailed("a stage tried to leave check mode while planning")

    def fail_json(self, msg, **kwargs):
        raise StageFailed(msg, kwargs)

    def exit_json(self, **kwargs):
        raise StageFailed("a stage tried to exit the plan", kwargs)

    def _refuse(self, what):
        raise StageFailed("a stage tried to write while planning (%s); nothing was written" % what)

    # the writers of AnsibleModule, refused here (never forwarded): a stage that reached one
    # fails its plan instead of crashing it
    def atomic_move(self, *args, **kwargs):
        self._refuse("atomic_move")

    def backup_local(self, *args, **kwargs):
        self._refuse("backup_local")

    def preserved_copy(self, *args, **kwargs):
        self._refuse("preserved_copy")

    def set_fs_attributes_if_different(self, *args, **kwargs):
        self._refuse("set_fs_attributes_if_different; compare with managed_file.attributes_differ")

    def __getattr__(self, name):
        if name in self.READS:
            return getattr(self._module, name)
        raise AttributeError("%s: not available to a stage while planning (a plan has no write path)" % name)


class PlanRunner(object):
    """The stages' runner: the real one over a :class:`StageModule` (so a command marked
    ``mutates`` is skipped), each distinct read-only command run once per plan - nothing writes
    while planning, so the host's answer cannot change between two stages asking the same thing
    (``ofed_info -s``, ``dkms status``), nor before the facts read after them. The cuFile probe
    child runs in a new directory each time, so it is never answered from memory."""

    def __init__(self, runner):
        self._runner = runner
        self._answers = {}
        self._paths = {}  # which(): the programs found
        self.package_memo = PackageMemo()  # the package queries (apt_dnf.Backend.query)

    def for_stage(self, stage):
        other = PlanRunner(self._runner.for_module(stage))
        other._answers, other._paths = self._answers, self._paths  # shared by the stages of one plan
        other.package_memo = self.package_memo
        return other

    def which(self, name, required=False):
        if self._paths.get(name) is None:  # a missing program is looked for again: required raises
            self._paths[name] = self._runner.which(name, required=required)
        return self._paths[name]

    def run(self, argv, check=True, mutates=False, data=None, environ=None, cwd=None, hint=None):
        if mutates or data is not None:
            return self._runner.run(argv, check=check, mutates=mutates, data=data, environ=environ, cwd=cwd, hint=hint)
        key = (tuple(str(a) for a in argv), tuple(sorted((environ or {}).items())), cwd)
        if key not in self._answers:
            self._answers[key] = self._runner.run(argv, check=False, environ=environ, cwd=cwd)
        res = self._answers[key]
        if check and res.rc != 0:
            raise CommandError(res.cmd, res.rc, res.stdout, res.stderr, hint=hint)
        return res

    def __getattr__(self, name):
        return getattr(self._runner, name)


def stage_flow(name):
    """The flow module of a package stage (mofed, nvidia_fs), or None; imported here so that only
    the stages asked for are compiled on the target."""
    if name == "mofed":
        from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import mofed as flow
        return flow
    if name == "nvidia_fs":
        from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import nvidia_fs as flow
        return flow
    return None


# what cufile_config's plan returns for its own action's apply phase: the file's text as it would
# be written and the current document - each a copy of cufile.json the gds_plan action never reads
APPLY_ONLY_KEYS = ("desired_text", "current")


def stage_spec(name):
    """(ArgumentSpec, execute(module, paths, runner)) of a stage: its module's own options and constraints."""
    flow = stage_flow(name)
    if flow is not None:
        return flow.arguments(), flow.execute
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import cufile_config as cfg

    def execute(module, paths, runner):
        try:
            planned = cfg.run_plan(module)
        except cfg.CufileConfigError as exc:
            raise StageFailed(str(exc), {"path": module.params["path"]})
        # for cufile_config's apply phase only; the diff already holds both texts
        return dict((k, v) for k, v in planned.items() if k not in APPLY_ONLY_KEYS)
    return cfg.arguments(), execute


def validate(arguments, args):
    """The stage's parameters with defaults, or StageFailed naming the option. A null value
    means "not set", as an omitted task option does."""
    res = arguments.validate(dict((k, v) for k, v in (args or {}).items() if v is not None))
    if res.error_messages:
        raise StageFailed("; ".join(res.error_messages))
    return res.validated_parameters


def prepare_stage(name, args, runner):
    """(validated parameters, execute) of a stage, or the StageFailed naming a bad option; the
    packages it will query are announced to the plan's package memo (one query for all stages)."""
    try:
        arguments, execute = stage_spec(name)
        params = validate(arguments, args)
    except StageFailed as exc:
        return exc
    flow = stage_flow(name)
    if flow is not None:
        runner.package_memo.expect(flow.package_names(params))
    return params, execute


def plan_stage(module, prepared, paths, runner):
    """One stage's check-mode result, with ``failed`` and ``msg`` when it failed (``prepared``:
    what :func:`prepare_stage` returned; ``runner``: a :class:`PlanRunner`)."""
    try:
        if isinstance(prepared, StageFailed):
            raise prepared
        params, execute = prepared
        stage = StageModule(module, params)
        return dict(execute(stage, paths, runner.for_stage(stage)), failed=False)
    except StageFailed as exc:
        return dict(exc.details, failed=True, changed=False, msg=exc.msg)


def is_converged(stages):
    """True when every planned stage succeeded and would change nothing."""
    return bool(stages) and all(not s.get("failed") and not s.get("changed") for s in stages.values())


def plan(module, params, paths, runner):
    """{stages: {name: result}, converged, facts}; never changes the host."""
    stage_runner = PlanRunner(runner)
    prepared = dict((name, prepare_stage(name, params[name], stage_runner))
                    for name in STAGES if params.get(name) is not None)
    stages = dict((name, plan_stage(module, prepared[name], paths, stage_runner))
                  for name in STAGES if name in prepared)
    converged = is_converged(stages)
    try:
        facts_params = validate(ArgumentSpec(gds_facts.argument_spec()), params.get("facts"))
    except StageFailed as exc:
        raise StageFailed("facts: " + exc.msg)
    problem = gds_facts.check_params(facts_params)
    if problem:
        raise StageFailed("facts: " + problem)
    probe_asked = facts_params["probe"]
    # the probe is the verify of a converged host; a host about to change is probed after the change
    facts_params["probe"] = bool(probe_asked and converged)
    facts = gds_facts.gather(facts_params, paths, stage_runner, tmp_root=module.tmpdir)
    facts["probe"]["deferred"] = bool(probe_asked and not facts_params["probe"])
    return {"stages": stages, "converged": converged, "facts": facts}
