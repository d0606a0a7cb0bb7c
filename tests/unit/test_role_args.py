# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One mapping per role: the gds_plan action builds each stage's options from the role's OWN
task (tasks/main.yml) and checks the role's variables against the role's own argument spec, in
one task per host - the errors name the variables the user sets, every role is checked before
the host is touched, and no role keeps a second mapping (no plan entry point, no *_plan_args)."""

from __future__ import annotations

import contextlib
import os
from unittest.mock import patch

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpudirect.storage.plugins.action import gds_plan as action
from ansible_collections.gpudirect.storage.plugins.module_utils._flows import gds_facts as _gds_facts
from ansible_collections.gpudirect.storage.plugins.module_utils._flows import gds_plan as _gds_plan
from ansible_collections.gpudirect.storage.plugins.module_utils._flows import gds_preflight as _gds_preflight
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_args as _role_args
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.action_harness import run_with_module_result
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gds_plan import module_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = os.path.join(ROOT, "roles")
ALL = ["gds_plan", "mofed", "nvidia_fs", "cufile", "gds_preflight", "gds_verify"]


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return yaml.safe_load(f)


def host_vars(**overrides):
    """A host of site.yml's first play: gds_plan's role defaults, the magic tag variables, the
    inventory's overrides (the stage roles' defaults are the action's to add)."""
    loader = DataLoader()
    out = dict(loader.load_from_file(os.path.join(ROLES, "gds_plan", "defaults", "main.yml"), trusted_as_template=True),
               ansible_run_tags=["all"], ansible_skip_tags=[])
    out.update(overrides)
    return out


def run_roles(roles=None, select=False, **overrides):
    """(result, execute mock) of the action with ``roles`` (its other options templated from the
    same variables, as Ansible does before the action runs) or, with ``select``, as roles/gds_plan
    calls it (select_from_variables), with a real templar."""
    loader = DataLoader()
    task_vars = host_vars(**overrides)
    args = {"select_from_variables": True} if select else {
        "roles": roles or ALL,
        "unknown_variables": Templar(loader=loader, variables=task_vars).template(task_vars["gds_plan_unknown_variables"])}
    with patch.object(action, "load_extra_vars", return_value={}):
        return run_with_module_result(action, "gpudirect.storage.gds_plan", args,
                                      module_result(), task_vars, templar=Templar(loader=loader))


def sent(execute):
    return execute.call_args.kwargs["module_args"]


def stage_spec(option):
    if option in _gds_plan.STAGES:
        spec, kwargs, dummy = _gds_plan.stage_spec(option)
        return spec, kwargs
    if option == "preflight":
        return dict((k, v) for k, v in _gds_preflight.argument_spec().items() if k != "facts"), {}
    return _gds_facts.argument_spec(), {}


@pytest.mark.parametrize("role", sorted(_role_args.STAGE_ROLES))
def test_the_options_built_from_the_role_defaults_are_valid_for_the_stage(role):
    option = _role_args.STAGE_ROLES[role][0]
    options, problem = _role_args.from_roles([role], Templar(loader=DataLoader()), host_vars())
    assert problem is None
    spec, kwargs = stage_spec(option)
    checked = ArgumentSpecValidator(spec, **kwargs).validate(options[option])
    assert not checked.error_messages, (role, checked.error_messages)
    task = next(t for t in load("roles", role, "tasks", "main.yml") if _role_args.STAGE_ROLES[role][1] in t)
    # the role's own task is the mapping: every option the plan sends is one the task passes
    assert set(options[option]) <= set(task[_role_args.STAGE_ROLES[role][1]]), role


@pytest.mark.parametrize("variable, value", [
    ("mofed_flavour", "bogus"), ("nvidia_fs_state", "gone"), ("cufile_state", "maybe"),
    ("gds_preflight_min_free_mb", "lots"), ("gds_verify_probe_size_mb", "big"), ("gds_plan_unknown_variables", "shout")])
def test_a_bad_role_variable_fails_naming_it_before_the_host_is_touched(variable, value):
    result, execute = run_roles(**{variable: value})
    assert result["failed"] is True and execute.call_count == 0
    assert variable in result["msg"] and "nothing was changed" in result["msg"]


def test_every_role_is_checked_before_the_failure_is_reported():
    result, execute = run_roles(mofed_flavour="bogus", cufile_state="maybe")
    assert execute.call_count == 0
    assert "mofed: " in result["msg"] and "mofed_flavour" in result["msg"]
    assert "cufile: " in result["msg"] and "cufile_state" in result["msg"]


def test_the_host_variables_win_over_the_role_defaults_and_empty_means_omitted():
    result, execute = run_roles(mofed_version="24.10", nvidia_fs_version="", cufile_settings={"logging": {"level": "ERROR"}},
                                nvidia_fs_mok_key_passphrase="secret")
    assert not result.get("failed"), result.get("msg")
    args = sent(execute)
    assert args["mofed"]["version"] == "24.10" and "version" not in args["nvidia_fs"]
    assert args["cufile"]["settings"] == {"logging": {"level": "ERROR"}}
    assert "mok_key_passphrase" not in args["nvidia_fs"] and "secret" not in repr(args)  # planning never signs
    assert "facts" not in (args.get("preflight") or {})


def test_the_verify_role_gives_the_facts_and_the_gate():
    options, problem = _role_args.from_roles(["gds_verify"], Templar(loader=DataLoader()),
                                             host_vars(gds_verify_require_mode="gds", gds_verify_probe_size_mb=8))
    assert problem is None
    assert options["require_mode"] == "gds" and options["require_proven"] is True
    assert options["facts"]["probe_size_mb"] == 8 and "require_mode" not in options["facts"]


def test_only_the_roles_asked_for_are_planned():
    result, execute = run_roles(["gds_plan", "cufile"], mofed_flavour="bogus")
    assert not result.get("failed"), result.get("msg")
    args = sent(execute)
    assert "cufile" in args and "mofed" not in args and args["facts"] == {"probe": False}


@pytest.mark.parametrize("role", sorted(_role_args.STAGE_ROLES))
def test_no_role_keeps_a_second_mapping(role):
    specs = load("roles", role, "meta", "argument_specs.yml")["argument_specs"]
    assert list(specs) == ["main"]
    assert not os.path.exists(os.path.join(ROLES, role, "tasks", "plan.yml"))
    assert "%s_plan_args" % role not in (load("roles", role, "vars", "main.yml") or {}
                                         if os.path.exists(os.path.join(ROLES, role, "vars", "main.yml")) else {})


def test_the_plan_play_is_one_task_per_host():
    plan_play = [p for p in load("playbooks", "site.yml") if p["name"].startswith("Plan")][0]
    assert [t["ansible.builtin.import_role"]["name"] for t in plan_play["tasks"]] == ["gpudirect.storage.gds_plan"]
    # its own role check is done by the task, with the others
    assert plan_play["tasks"][0]["ansible.builtin.import_role"]["rolespec_validate"] is False


SET = {"mofed_version": "24.10", "mofed_repo": {"url": "https://r/x"}, "nvidia_fs_version": "2.28", "nvidia_fs_repo": {"url": "https://r/y"},
       "nvidia_fs_mok_key": "/k", "nvidia_fs_mok_cert": "/c", "nvidia_fs_mok_key_passphrase": "p",
       "cufile_settings": {"logging": {"level": "ERROR"}}, "cufile_env_path_json": "/e.json",
       "gds_preflight_supported_os": {"ubuntu": ["24.04"]}, "gds_verify_cufile_lib": "/l.so", "gds_verify_require_mode": "gds"}


@pytest.mark.parametrize("overrides", [{}, SET], ids=["defaults", "every-option-set"])
@pytest.mark.parametrize("role", sorted(_role_args.STAGE_ROLES))
def test_the_options_read_without_jinja_are_what_jinja_gives(role, overrides):
    templar = Templar(loader=DataLoader()).copy_with_new_env(available_variables=_role_args.variables(host_vars(**overrides)))
    resolved = {}
    for checked in _role_args.STAGE_ROLES:
        assert _role_args.check(checked, templar, _role_args.variables(host_vars(**overrides)), resolved) == []
    assert _role_args.module_args(role, templar, resolved) == _role_args.module_args(role, templar, {})


def test_the_validator_gets_a_plain_copy_that_judges_as_the_tagged_values_do():
    # templated variables carry Ansible's tags; the validator deep-copies what it is given, which
    # for tagged values cost more than the rest of the check: it gets the same values untagged
    from ansible._internal._datatag._tags import Origin
    from ansible.module_utils._internal._datatag import AnsibleTagHelper
    import datetime
    tagged = Origin(path="/inventory/group_vars/all.yml", line_num=3).tag(
        {"gds_cufile_config": Origin(path="/x").tag({"properties": {"max_direct_io_size_kb": 16384}}),
         "gds_mofed_extra_packages": Origin(path="/x").tag([Origin(path="/y").tag("perftest"), 2, 2.5, True, None]),
         "when": datetime.date(2026, 11, 26), "pair": (1, 2)})
    plain = _role_args.native_copy(tagged)
    assert plain == tagged and plain.__class__ is dict and plain["gds_mofed_extra_packages"].__class__ is list
    assert [type(v) for v in plain["gds_mofed_extra_packages"]] == [str, int, float, bool, type(None)]
    assert not AnsibleTagHelper.tags(plain["gds_mofed_extra_packages"][0])
    assert plain["when"] == datetime.date(2026, 11, 26) and plain["pair"] == (1, 2)  # other types: deep copies
    spec = {"gds_mofed_extra_packages": {"type": "list", "elements": "str"}, "gds_cufile_config": {"type": "dict"},
            "n": {"type": "int"}}
    bad = {"n": Origin(path="/z").tag("many")}
    assert (ArgumentSpecValidator(spec).validate(_role_args.native_copy(bad)).error_messages
            == ArgumentSpecValidator(spec).validate(bad).error_messages)
    bad = {"gds_mofed_extra_packages": Origin(path="/z").tag({"a": 1})}  # the message says dict, not the tagged class
    tagged_msgs = ArgumentSpecValidator(spec).validate(bad).error_messages
    assert tagged_msgs[0].replace("ansible.module_utils._internal._datatag._AnsibleTaggedDict", "dict") == (
        ArgumentSpecValidator(spec).validate(_role_args.native_copy(bad)).error_messages[0])


def test_only_values_with_jinja_go_through_the_templar_and_they_are_still_rendered_and_checked():
    # the templar costs most of the check: plain values (the roles' defaults hold no Jinja) are
    # checked as they are, a variable the inventory sets to a Jinja expression is rendered first
    from ansible._internal._datatag._tags import TrustedAsTemplate
    trusted = TrustedAsTemplate().tag
    templar = Templar(loader=DataLoader())
    rendered = []
    real = templar.copy_with_new_env

    def spying_env(**kwargs):
        copy = real(**kwargs)
        template = copy.template
        copy.template = lambda value, **kw: rendered.append(sorted(value)) or template(value, **kw)
        return copy
    templar.copy_with_new_env = spying_env
    variables = _role_args.variables(host_vars(gds_verify_probe_size_mb=trusted("{{ 64 * 4 }}"),
                                               mofed_flavour=trusted("{{ 'bo' ~ 'gus' }}")))
    scoped = templar.copy_with_new_env(available_variables=variables)
    resolved = {}
    assert _role_args.check("gds_verify", scoped, variables, resolved) == []
    assert resolved["gds_verify_probe_size_mb"] == 256 and rendered == [["gds_verify_probe_size_mb"]]
    errors = _role_args.check("mofed", scoped, variables, resolved)
    assert rendered[-1] == ["mofed_flavour"] and len(errors) == 1 and "mofed_flavour" in errors[0] and "bogus" in errors[0]
    assert not _role_args.may_render(["a", {"b": 1, "c": None}, 2.5, True]) and _role_args.may_render({"k": ["{% if x %}"]})
    assert _role_args.may_render(object())  # a type the check does not know: templated as before


@contextlib.contextmanager
def compilations():
    """The sources Jinja compiles inside the block (a list, filled as they are compiled)."""
    import jinja2.environment
    compiled = []
    real = jinja2.environment.Environment.compile

    def counting(self, source, *args, **kwargs):
        compiled.append(source if isinstance(source, str) else "<tree>")
        return real(self, source, *args, **kwargs)
    with patch.object(jinja2.environment.Environment, "compile", counting):
        yield compiled


def test_an_expression_several_roles_share_is_rendered_once_per_host():
    """Issue 21: Ansible compiles a template anew at every rendering (~1 ms each, in every
    host's worker). The lab inventory gives mofed_repo and nvidia_fs_repo the same expression and
    the nvidia_fs and gds_preflight defaults share "{{ gds_unsupported_os | default('fail') }}":
    10 compilations per host where 5 expressions were distinct."""
    from ansible._internal._datatag._tags import TrustedAsTemplate
    trusted = TrustedAsTemplate().tag
    repo = trusted("{{ site_repo }}")
    task_vars = host_vars(mofed_repo=repo, nvidia_fs_repo=trusted("{{ site_repo }}"), gds_unsupported_os="warn",
                          site_repo=trusted("{{ {'name': 'site', 'url': 'http://mirror/' ~ 'gds/'} }}"))
    with compilations() as compiled:
        options, problem = _role_args.from_roles(ALL, Templar(loader=DataLoader()), task_vars)
    assert problem is None
    assert options["mofed"]["repo"] == options["nvidia_fs"]["repo"] == {"name": "site", "url": "http://mirror/gds/"}
    assert options["mofed"]["repo"] is not options["nvidia_fs"]["repo"]  # each stage its own copy
    assert options["nvidia_fs"]["unsupported_os"] == "warn"
    assert len(compiled) == len(set(compiled)), compiled


@pytest.mark.parametrize("inventory, expected", [({}, "fail"), ({"gds_unsupported_os": "warn"}, "warn"),
                                                 ({"gds_unsupported_os": "{{ 'wa' ~ 'rn' }}"}, "warn")])
def test_a_role_default_that_names_a_variable_with_a_literal_default_needs_no_jinja(inventory, expected):
    """Issue 21: "{{ gds_unsupported_os | default('fail') }}" (the nvidia_fs and gds_preflight
    defaults) cost a template compilation per host (~1 ms in every host's worker) to look up one
    variable. Over a plain variable, or none, it is read as Jinja would; a variable that holds
    Jinja itself is still rendered by the templar."""
    from ansible._internal._datatag._tags import TrustedAsTemplate
    trusted = TrustedAsTemplate().tag
    task_vars = host_vars(**dict((k, trusted(v)) for k, v in inventory.items()))
    with compilations() as compiled:
        options, problem = _role_args.from_roles(["nvidia_fs", "gds_preflight"], Templar(loader=DataLoader()), task_vars)
    assert problem is None
    assert options["nvidia_fs"]["unsupported_os"] == options["preflight"]["unsupported_os"] == expected
    jinja = "{{" in inventory.get("gds_unsupported_os", "")
    assert any("default('fail')" in c for c in compiled) == jinja, compiled
    assert any("'wa' ~ 'rn'" in c for c in compiled) == jinja


@pytest.mark.parametrize("value, found", [
    ("{{ x | default('a') }}", ("x", "a")), ('{{x|default("b c")}}', ("x", "b c")),
    ("{{ x | default('a', true) }}", None), ("{{ x | default(y) }}", None), ("{{ x.y | default('a') }}", None),
    ("{{ x | default('a') }} ", None), ("{{ x | default('it\\'s') }}", None), ("x", None), (3, None)])
def test_the_default_form_is_matched_exactly(value, found):
    assert _role_args.default_form(value) == found
