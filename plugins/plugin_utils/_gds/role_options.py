# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The stage roles' variables as the options of the one gds_plan task: the mapping of each role's
variables to its module's options (:data:`STAGES`), the check of those variables against the
role's ``meta/argument_specs.yml`` and the choice of stages from the switches and the run's tags.
Each role's own task (``roles/<role>/tasks/main.yml``) passes the same options from the same
variables; tests/unit/test_role_options.py holds the two to agreement. Controller-side."""

from __future__ import annotations

import os
import re

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.parsing.dataloader import DataLoader
from ansible.utils.vars import combine_vars

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.role_vars import ROLES_DIR, role_specs

# role: (the gds_plan option it fills, {module option: role variable}), as the role's task passes
# them. Left out on purpose: nvidia_fs's mok_key_passphrase (planning never signs), gds_preflight's
# facts (the plan gathers the facts with gds_verify's options) and gds_verify's gate (GATE below).
STAGES = {
    "mofed": ("mofed", {
        "flavour": "mofed_flavour", "version": "mofed_version", "extra_packages": "mofed_extra_packages",
        "lock_timeout": "mofed_lock_timeout", "repo": "mofed_repo"}),
    "nvidia_fs": ("nvidia_fs", {
        "state": "nvidia_fs_state", "version": "nvidia_fs_version", "packages": "nvidia_fs_packages",
        "extra_packages": "nvidia_fs_extra_packages", "load": "nvidia_fs_load",
        "persistent": "nvidia_fs_persistent", "params": "nvidia_fs_params", "mok_key": "nvidia_fs_mok_key",
        "mok_cert": "nvidia_fs_mok_cert", "unsupported_os": "nvidia_fs_unsupported_os",
        "lock_timeout": "nvidia_fs_lock_timeout", "repo": "nvidia_fs_repo"}),
    "cufile": ("cufile", {
        "path": "cufile_path", "state": "cufile_state", "settings": "cufile_settings", "base": "cufile_base",
        "src": "cufile_src", "remote_src": "cufile_remote_src", "backup": "cufile_backup",
        "env_path_json": "cufile_env_path_json", "cufile_version": "cufile_version", "owner": "cufile_owner",
        "group": "cufile_group", "mode": "cufile_mode"}),
    "gds_preflight": ("preflight", {
        "supported_os": "gds_preflight_supported_os", "unsupported_os": "gds_preflight_unsupported_os",
        "supported_architectures": "gds_preflight_supported_architectures",
        "min_free_mb": "gds_preflight_min_free_mb", "require_driver": "gds_preflight_require_driver",
        "fail_on_secure_boot": "gds_preflight_fail_on_secure_boot", "mok_key": "nvidia_fs_mok_key",
        "mok_cert": "nvidia_fs_mok_cert"}),
    "gds_verify": ("facts", {
        "probe": "gds_verify_probe", "probe_path": "gds_verify_probe_path",
        "probe_size_mb": "gds_verify_probe_size_mb", "probe_threads": "gds_verify_probe_threads",
        "probe_throughput": "gds_verify_probe_throughput", "probe_device": "gds_verify_probe_device",
        "probe_timeout": "gds_verify_probe_timeout", "cufile_lib": "gds_verify_cufile_lib",
        "cufile_env_path_json": "gds_verify_cufile_env_path_json", "gather_cuda": "gds_verify_gather_cuda"}),
}
# gds_plan's own options from gds_verify's variables: the verdict a converged host must reach
GATE = {"require_mode": "gds_verify_require_mode", "require_proven": "gds_verify_require_proven"}
# the variables whose empty value leaves the option out ("{{ var | default(omit, true) }}" in the task)
OMITTED_WHEN_EMPTY = frozenset([
    "mofed_version", "mofed_repo", "nvidia_fs_version", "nvidia_fs_mok_key", "nvidia_fs_mok_cert",
    "nvidia_fs_repo", "cufile_settings", "cufile_base", "cufile_src", "cufile_env_path_json",
    "gds_preflight_supported_os", "gds_verify_cufile_lib", "gds_verify_cufile_env_path_json",
    "gds_verify_require_mode"])
SELECTABLE_STAGES = ("mofed", "nvidia_fs", "cufile")  # each also a tag of site.yml

_FILES = {}


def role_files(role):
    """(the options of the role's argument spec ``main``, the role's defaults), read once per process.
    The argument spec is plain data (role_vars reads it); the defaults may be templates."""
    if role not in _FILES:
        path = os.path.join(ROLES_DIR, role, "defaults", "main.yml")
        defaults = DataLoader().load_from_file(path, trusted_as_template=True) if os.path.exists(path) else None
        options = ((role_specs().get(role) or {}).get("main") or {}).get("options") or {}
        _FILES[role] = (options, defaults or {})
    return _FILES[role]


def role_values(templar, roles, task_vars):
    """The variables of ``roles`` (their argument specs' options) that are set, templated: the
    host's variables over the roles' defaults, as the roles themselves would see them."""
    defaults, names = {}, set()
    for role in roles:
        options, role_defaults = role_files(role)
        defaults.update(role_defaults)
        names.update(options)
    variables = combine_vars(defaults, task_vars)
    templar = templar.copy_with_new_env(available_variables=variables)
    return templar.template(dict((name, variables[name]) for name in names if name in variables))


def validated(role, values):
    """(``role``'s variables in ``values`` with its argument spec's defaults, the error messages as
    Ansible's role argument validation gives them: they name the variable)."""
    options = role_files(role)[0]
    provided = dict((name, values[name]) for name in options if name in values)
    checked = ArgumentSpecValidator(options).validate(provided)
    return checked.validated_parameters, [named_empty_choice(e) for e in checked.error_messages]


def check(role, values):
    """The error messages of ``role``'s variables in ``values`` against its argument spec."""
    return validated(role, values)[1]


def named_empty_choice(message):
    """Ansible lists an empty choice as nothing before a comma ("must be one of: , compat, ..."):
    name it instead."""
    return re.sub(r"must be one of: , (.*?), got: ", r'must be one of: \1 or "" (empty), got: ', message)


def invalid(errors):
    return ("the role variables are invalid (the argument specs of the roles): %s - nothing was changed"
            % "; ".join(errors))


def stage_options(role, values):
    """The module options of ``role``'s stage: each mapped variable's value, less the empty ones
    the role's task leaves out."""
    return dict((option, values[name]) for option, name in STAGES[role][1].items()
                if name in values and (values[name] or name not in OMITTED_WHEN_EMPTY))


def from_roles(templar, roles, task_vars):
    """(gds_plan options filled from ``roles``, error message or None). Every role's variables
    are checked before any option is built, so one run names every bad variable; a role that is
    no stage (gds_plan) is only checked."""
    values = role_values(templar, roles, task_vars)
    errors = ["%s: %s" % (role, e) for role in roles for e in check(role, values)]
    if errors:
        return {}, invalid(errors)
    options = dict((STAGES[role][0], stage_options(role, values)) for role in roles if role in STAGES)
    if "gds_verify" in roles:
        options.update((option, values[name]) for option, name in GATE.items()
                       if name in values and (values[name] or name not in OMITTED_WHEN_EMPTY))
    return options, None


def selection(templar, task_vars):
    """(the options site.yml's plan task takes from the gds_plan role's variables and the run's
    tags: ``roles``, ``rollout_group``, ``converged_group``, ``unknown_variables`` and
    ``preflight_only``; an error message or None). The role's variables are checked against its
    argument spec first, as Ansible's role argument validation would (the play turns that off: it
    is a task per host). Unset, gds_plan_stages, gds_plan_preflight, gds_plan_verify and
    gds_plan_preflight_only follow gds_<stage>_enabled, --tags and --skip-tags."""
    plan, errors = validated("gds_plan", role_values(templar, ["gds_plan"], task_vars))
    if errors:
        return {}, invalid(["gds_plan: " + e for e in errors])
    run_tags = set(task_vars.get("ansible_run_tags") or ["all"])
    skip_tags = set(task_vars.get("ansible_skip_tags") or [])

    def switch(name, default):
        value = task_vars.get(name)
        return boolean(templar.template(value), strict=False) if value is not None else default

    def chosen(name, default):
        return plan[name] if plan[name] is not None else default

    if plan["gds_plan_stages"] is not None:
        stages = [s for s in SELECTABLE_STAGES if s in plan["gds_plan_stages"]]
    else:
        tagged = SELECTABLE_STAGES if "all" in run_tags else run_tags
        stages = [s for s in SELECTABLE_STAGES
                  if switch("gds_%s_enabled" % s, True) and s in tagged and s not in skip_tags]
    preflight = chosen("gds_plan_preflight", switch("gds_preflight_enabled", True) and "preflight" not in skip_tags)
    verify = chosen("gds_plan_verify", switch("gds_verify_enabled", True) and "verify" not in skip_tags)
    preflight_only = chosen("gds_plan_preflight_only",
                            not stages and "preflight" in run_tags and "verify" not in run_tags)
    roles = stages + (["gds_preflight"] if preflight else []) + (["gds_verify"] if verify else [])
    return dict(roles=roles, preflight_only=preflight_only,
                rollout_group="" if preflight_only else plan["gds_plan_rollout_group"],
                converged_group="" if preflight_only else plan["gds_plan_converged_group"],
                unknown_variables=plan["gds_plan_unknown_variables"]), None


def warm():
    """Read the roles' files in the importing process: Ansible imports action plugins in its main
    process and forks a worker per host from it, so no worker reads them again."""
    try:
        for role in ("gds_plan",) + tuple(STAGES):
            role_files(role)
    except Exception:  # pylint: disable=broad-except
        _FILES.clear()  # read again (and then reported) when a host is planned
