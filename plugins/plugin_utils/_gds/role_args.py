# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The roles' variables as the gds_plan action reads them, in-process: each role's variables are
checked against its own ``meta/argument_specs.yml`` (entry point ``main``) with the rules
Ansible's role argument validation applies, and a stage's module options are the role's OWN task
in ``tasks/main.yml`` (the one mapping of role variables to module options) templated with the
host's variables over the roles' defaults. So playbooks/site.yml's plan costs one task per host,
and an error still names the variable the user sets. Controller-side."""

from __future__ import annotations

import copy
import os
import re

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.parsing.dataloader import DataLoader
from ansible.template import is_trusted_as_template
from ansible.utils.vars import combine_vars

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.role_vars import ROLES_DIR

# role -> (gds_plan option it fills, module of the role's task, options of that task the plan
# leaves out: planning never signs; gds_plan gathers the facts itself; the verify's gate options
# become gds_plan's own require_mode / require_proven)
STAGE_ROLES = {
    "mofed": ("mofed", "gpudirect.storage.mofed", ()),
    "nvidia_fs": ("nvidia_fs", "gpudirect.storage.nvidia_fs", ("mok_key_passphrase",)),
    "cufile": ("cufile", "gpudirect.storage.cufile_config", ()),
    "gds_preflight": ("preflight", "gpudirect.storage.gds_preflight", ("facts",)),
    "gds_verify": ("facts", "gpudirect.storage.gds_facts", ("require_mode", "require_proven")),
}
GATE_OPTIONS = ("require_mode", "require_proven")
SELECTABLE_STAGES = ("mofed", "nvidia_fs", "cufile")  # each also a tag of site.yml
_FILES = {}


def _role_files(role):
    """(argument spec options of ``main``, defaults, the role's module task args or None), read
    once per process with templates trusted as the role's own files are."""
    if role not in _FILES:
        loader = DataLoader()

        def load(*parts):
            path = os.path.join(ROLES_DIR, role, *parts)
            return loader.load_from_file(path, trusted_as_template=True) if os.path.exists(path) else None
        specs = (load("meta", "argument_specs.yml") or {}).get("argument_specs") or {}
        task_args = None
        if role in STAGE_ROLES:
            module = STAGE_ROLES[role][1]
            task_args = next(t[module] for t in load("tasks", "main.yml") if module in t)
        _FILES[role] = ((specs.get("main") or {}).get("options") or {}, load("defaults", "main.yml") or {}, task_args)
    return _FILES[role]


def defaults():
    """The stage roles' defaults, one layer (below every variable of the host)."""
    out = {}
    for role in STAGE_ROLES:
        out.update(_role_files(role)[1])
    return out


def variables(task_vars):
    """The host's variables over the stage roles' defaults, as the roles themselves see them."""
    return combine_vars(defaults(), task_vars)


def check(role, templar, role_variables, resolved, rendered=None):
    """The error messages of ``role``'s variables against its argument spec (``main``), as
    Ansible's role argument validation says them (they name the variable). The values, templated
    once, are added to ``resolved`` for the option mapping; ``rendered``: see :func:`render`."""
    options = _role_files(role)[0]
    if not options:
        return []
    provided = dict((name, role_variables[name]) for name in options if name in role_variables)
    jinja = [name for name, value in provided.items() if may_render(value)]
    if jinja:  # the templar only for what it would change: it costs most of the check otherwise
        provided.update(render(templar, dict((name, provided[name]) for name in jinja), rendered))
    resolved.update(provided)
    res = ArgumentSpecValidator(options).validate(native_copy(provided), validate_role_argument_spec=True)
    return list(res.error_messages)


def render(templar, values, rendered=None):
    """``values`` ({name: value}) templated in one call, where a string equal to one already
    rendered with the same variables (``rendered``: {(string, trusted): result}, kept by the
    caller for one host) - or to another of ``values`` - is rendered once: Ansible compiles a
    template anew at every rendering, about 1 ms each in every host's worker, and inventories and
    role defaults repeat expressions across roles (two roles' repositories from one variable).
    A role default of the form "{{ name | default('literal') }}" over a plain variable is read
    without Jinja (:func:`default_form`). Each name gets its own copy of a shared result."""
    rendered = {} if rendered is None else rendered
    todo, first, out = {}, {}, {}
    for name, value in values.items():
        key = _render_key(value)
        looked_up = _default_lookup(value, templar.available_variables)
        if looked_up is not None:
            out[name] = looked_up[0]
        elif key is None:
            todo[name] = value
        elif key not in rendered and key not in first:
            first[key] = name
            todo[name] = value
    out.update(templar.template(todo) if todo else {})
    rendered.update((key, out[name]) for key, name in first.items())
    for name, value in values.items():
        if name not in out:
            out[name] = copy.deepcopy(rendered[_render_key(value)])
    return out


def _render_key(value):
    return (str(value), is_trusted_as_template(value)) if isinstance(value, str) else None


def may_render(value):
    """Whether templating ``value`` could change it: a string with Jinja in it, a container
    holding one, or a value of another type than str, list, tuple, dict, number, bool, None."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value or "{#" in value or value.startswith("#jinja2:")
    if isinstance(value, dict):
        return any(may_render(k) or may_render(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(may_render(v) for v in value)
    return not (value is None or isinstance(value, (bool, int, float)))


def native_copy(value):
    """A plain copy of templated values - dicts, lists, strings, numbers, booleans and None as
    their own types, without Ansible's tags - for the validator, which deep-copies what it is
    given: a deep copy of tagged values cost more than the rest of the check. Anything else is
    deep-copied as it is."""
    if isinstance(value, dict):
        return dict((native_copy(k), native_copy(v)) for k, v in value.items())
    if isinstance(value, list):
        return [native_copy(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    for plain in (str, int, float):
        if isinstance(value, plain):
            return plain.__new__(plain, value)  # the plain type: tags dropped
    return copy.deepcopy(value)


# The forms of the roles' tasks that only pass a variable on, or leave the option out when it is
# empty: read from the values already templated for the check instead of compiling one more Jinja
# template per option and host (a compile costs more than the rest of the check). Anything else,
# and a variable that was not checked, is templated by Ansible as the task would be.
_NAME = r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)"
_FORMS = (
    (re.compile(r"^%s\s*\}\}$" % _NAME), lambda v: (True, v)),
    (re.compile(r"^%s\s*\|\s*default\(omit,\s*true\)\s*\}\}$" % _NAME), lambda v: (bool(v), v)),
    (re.compile(r"^%s\s+if\s+(\w+)\s+else\s+omit\s*\}\}$" % _NAME), lambda v: (bool(v), v)),
    (re.compile(r"^%s\s+if\s+(\w+)\s*\|\s*length\s*>\s*0\s+else\s+omit\s*\}\}$" % _NAME),
     lambda v: (len(v) > 0, v) if isinstance(v, (str, list, dict)) else None),
)


# "{{ name | default('literal') }}" - how role defaults fall back to a shared variable
_DEFAULT_FORM = re.compile("^" + _NAME + r"""\s*\|\s*default\(\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*\)\s*\}\}$""")


def default_form(value):
    """(name, literal) of a string that is exactly "{{ name | default('literal') }}", else None."""
    match = _DEFAULT_FORM.match(value) if isinstance(value, str) else None
    if match is None:
        return None
    return match.group(1), match.group(2) if match.group(2) is not None else match.group(3)


def _default_lookup(value, variables):
    """(what Jinja makes of ``value``,) for the default form over a variable that is unset or
    plain (a string without Jinja, a number, a bool), else None: looked up without compiling a
    template (~1 ms per host). Anything else - None, a container, Jinja - goes to the templar."""
    form = default_form(value)
    if form is None:
        return None
    name, literal = form
    if name not in variables:
        return (literal,)
    found = variables[name]
    if isinstance(found, (str, bool, int, float)) and not may_render(found):
        return (found,)
    return None


def _known_form(value, resolved):
    """(present, value) for a task option of a known form over a resolved variable, else None."""
    if not isinstance(value, str):
        return None
    for form, decide in _FORMS:
        match = form.match(value)
        if match and all(name == match.group(1) for name in match.groups()) and match.group(1) in resolved:
            return decide(resolved[match.group(1)])
    return None


def module_args(role, templar, resolved=None):
    """(the module options of ``role``'s own task, templated with the host's variables - an
    option the task omits is absent - less those the plan leaves out; the left-out ones)."""
    resolved = resolved or {}
    left_out = STAGE_ROLES[role][2]
    raw, known, args = _role_files(role)[2], {}, {}
    for option, value in raw.items():
        decided = _known_form(value, resolved)
        if decided is None:
            args[option] = value
        elif decided[0]:
            known[option] = decided[1]
    args = dict(templar.template(args) if args else {}, **known)
    return dict((k, v) for k, v in args.items() if k not in left_out), dict((k, args[k]) for k in left_out if k in args)


def _invalid(errors):
    return ("the role variables are invalid (the argument specs of the roles): %s - nothing was changed"
            % "; ".join(errors))


def selection(templar, task_vars):
    """(the options site.yml's plan task takes from the gds_plan role's variables - ``roles``,
    ``rollout_group``, ``converged_group``, ``unknown_variables`` - and ``preflight_only``; an
    error message or None). Unset, gds_plan_stages / _preflight / _verify / _preflight_only are
    derived here from gds_<stage>_enabled and --tags / --skip-tags, not by Jinja defaults, which
    Ansible would compile again at every reference, on every host."""
    role_variables = variables(task_vars)
    templar = templar.copy_with_new_env(available_variables=role_variables)
    resolved = {}
    errors = ["gds_plan: %s" % e for e in check("gds_plan", templar, role_variables, resolved)]
    if errors:
        return None, _invalid(errors)
    run_tags = set(task_vars.get("ansible_run_tags") or ["all"])
    skip_tags = set(task_vars.get("ansible_skip_tags") or [])

    def switch(name, default):
        value = resolved[name] if name in resolved else templar.template(role_variables.get(name, default))
        return boolean(value, strict=False)

    if resolved.get("gds_plan_stages") is not None:
        stages = [s for s in SELECTABLE_STAGES if s in resolved["gds_plan_stages"]]
    else:
        chosen = SELECTABLE_STAGES if "all" in run_tags else run_tags
        stages = [s for s in SELECTABLE_STAGES
                  if switch("gds_%s_enabled" % s, True) and s in chosen and s not in skip_tags]
    preflight, verify, preflight_only = (
        switch("gds_plan_preflight", True) if resolved.get("gds_plan_preflight") is not None
        else switch("gds_preflight_enabled", True) and "preflight" not in skip_tags,
        switch("gds_plan_verify", True) if resolved.get("gds_plan_verify") is not None
        else switch("gds_verify_enabled", True) and "verify" not in skip_tags,
        switch("gds_plan_preflight_only", False) if resolved.get("gds_plan_preflight_only") is not None
        else not stages and "preflight" in run_tags and "verify" not in run_tags)
    roles = ["gds_plan"] + stages + (["gds_preflight"] if preflight else []) + (["gds_verify"] if verify else [])
    return dict(roles=roles, preflight_only=preflight_only,
                rollout_group="" if preflight_only else resolved.get("gds_plan_rollout_group", "gds_rollout"),
                converged_group="" if preflight_only else resolved.get("gds_plan_converged_group", "gds_converged"),
                unknown_variables=resolved.get("gds_plan_unknown_variables", "fail")), None


def from_roles(roles, templar, task_vars):
    """(gds_plan options filled from ``roles``, error message or None). The roles' variables are
    all checked before any option is built, so one run names every bad variable."""
    role_variables = variables(task_vars)
    templar = templar.copy_with_new_env(available_variables=role_variables)
    errors, resolved, rendered = [], {}, {}
    for role in roles:
        errors += ["%s: %s" % (role, e) for e in check(role, templar, role_variables, resolved, rendered)]
    if errors:
        return {}, _invalid(errors)
    options = {}
    for role in roles:
        if role in STAGE_ROLES:
            args, left_out = module_args(role, templar, resolved)
            options[STAGE_ROLES[role][0]] = args
            if role == "gds_verify":
                options.update((k, v) for k, v in left_out.items() if k in GATE_OPTIONS)
    return options, None


def warm(roles=("gds_plan",) + tuple(STAGE_ROLES)):
    """Read ``roles``' files (default: every role from_roles and selection read) once in the
    importing process (the controller's main process, before it forks a worker per host)."""
    try:
        for role in roles:
            _role_files(role)
    except Exception:  # pylint: disable=broad-except
        _FILES.clear()  # read again (and then reported) when a host is planned
