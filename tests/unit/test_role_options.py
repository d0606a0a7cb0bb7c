# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The one gds_plan task per host takes each stage's options from the stage role's variables:
one table (role_options.STAGES) that agrees with each role's own task, the roles' variables
checked against their argument specs before the host is touched (errors name the variable), and
the plan play of site.yml one task per host (the action checks gds_plan's own variables too,
gds_environment is the play's environment)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from unittest.mock import patch

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from ansible_collections.gpudirect.storage.plugins.action import gds_plan as action
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_facts as _gds_facts
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_plan as _gds_plan
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_preflight as _gds_preflight
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.argspec import ArgumentSpec
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_options as _role_options
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.action_harness import run_with_module_result
from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gds_plan import module_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROLES = os.path.join(ROOT, "roles")
ALL = ["mofed", "nvidia_fs", "cufile", "gds_preflight", "gds_verify"]
MODULES = {"mofed": "gpudirect.storage.mofed", "nvidia_fs": "gpudirect.storage.nvidia_fs",
           "cufile": "gpudirect.storage.cufile_config", "gds_preflight": "gpudirect.storage.gds_preflight",
           "gds_verify": "gpudirect.storage.gds_facts"}
# what a role's task passes and the plan does not: planning never signs; the plan gathers the
# facts itself; gds_verify's gate is gds_plan's own require_mode / require_proven (GATE); the plan
# records no verdict on the host
NOT_PLANNED = {"nvidia_fs": {"mok_key_passphrase"}, "gds_preflight": {"facts"},
               "gds_verify": {"require_mode", "require_proven", "record_path"}}
PLAIN = re.compile(r"^\{\{ (\w+) \}\}$")
OMIT_EMPTY = re.compile(r"^\{\{ (\w+) \| default\(omit, true\) \}\}$")


def load(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return yaml.safe_load(f)


def trusted(value):
    """A template as an inventory file gives it (trusted); other values as they are."""
    return trust_as_template(value) if isinstance(value, str) and "{{" in value else value


def host_vars(**overrides):
    """A host of site.yml's plan play: gds_plan's role defaults, the magic tag variables, the
    inventory's overrides (the stage roles' defaults are the action's to add)."""
    out = dict(load("roles", "gds_plan", "defaults", "main.yml"), ansible_run_tags=["all"], ansible_skip_tags=[])
    out.update((k, trusted(v)) for k, v in overrides.items())
    return out


def run_roles(roles=None, select=False, **overrides):
    """(result, execute mock) of the action with ``roles`` or, with ``select``, as roles/gds_plan
    calls it (select_from_variables), with a real templar."""
    task_vars = host_vars(**overrides)
    args = {"select_from_variables": True} if select else {"roles": roles or ALL}
    with patch.object(action, "load_extra_vars", return_value={}):
        return run_with_module_result(action, "gpudirect.storage.gds_plan", args, module_result(), task_vars,
                                      templar=Templar(loader=DataLoader(), variables=task_vars))


def from_roles(roles, **overrides):
    task_vars = host_vars(**overrides)
    return _role_options.from_roles(Templar(loader=DataLoader(), variables=task_vars), roles, task_vars)


def sent(execute):
    return execute.call_args.kwargs["module_args"]


@pytest.mark.parametrize("role", ALL)
def test_the_table_is_what_the_roles_own_task_passes(role):
    task = next(t for t in load("roles", role, "tasks", "main.yml") if MODULES[role] in t)[MODULES[role]]
    mapping = dict(_role_options.STAGES[role][1], **(_role_options.GATE if role == "gds_verify" else {}))
    assert set(task) == set(mapping) | NOT_PLANNED.get(role, set()), role
    for option, variable in mapping.items():
        plain, omitted = PLAIN.match(task[option]), OMIT_EMPTY.match(task[option])
        assert (plain or omitted) and (plain or omitted).group(1) == variable, (role, option, task[option])
        assert bool(omitted) == (variable in _role_options.OMITTED_WHEN_EMPTY), (role, option)
    spec = load("roles", role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]
    assert set(mapping.values()) - {"nvidia_fs_mok_key", "nvidia_fs_mok_cert"} <= set(spec)


def stage_spec(option):
    if option in _gds_plan.STAGES:
        return _gds_plan.stage_spec(option)[0]
    if option == "preflight":
        return ArgumentSpec(dict((k, v) for k, v in _gds_preflight.argument_spec().items() if k != "facts"))
    return ArgumentSpec(_gds_facts.argument_spec())


@pytest.mark.parametrize("role", ALL)
def test_the_options_built_from_the_role_defaults_are_valid_for_the_stage(role):
    option = _role_options.STAGES[role][0]
    options, problem = from_roles([role])
    assert problem is None
    checked = stage_spec(option).validate(options[option])
    assert not checked.error_messages, (role, checked.error_messages)


@pytest.mark.parametrize("variable, value", [
    ("mofed_flavour", "bogus"), ("nvidia_fs_state", "gone"), ("cufile_state", "maybe"),
    ("gds_preflight_min_free_mb", "lots"), ("gds_verify_probe_size_mb", "big"), ("gds_plan_unknown_variables", "shout")])
def test_a_bad_role_variable_fails_naming_it_before_the_host_is_touched(variable, value):
    result, execute = run_roles(["gds_plan"] + ALL, **{variable: value})
    assert result["failed"] is True and execute.call_count == 0
    assert variable in result["msg"] and "nothing was changed" in result["msg"]


def test_every_role_is_checked_before_the_failure_is_reported():
    result, execute = run_roles(mofed_flavour="bogus", cufile_state="maybe")
    assert execute.call_count == 0
    assert "mofed: " in result["msg"] and "mofed_flavour" in result["msg"]
    assert "cufile: " in result["msg"] and "cufile_state" in result["msg"]


def test_a_variable_with_jinja_is_rendered_before_it_is_checked():
    options, problem = from_roles(["gds_verify"], gds_verify_probe_size_mb="{{ 64 * 4 }}")
    assert problem is None and options["facts"]["probe_size_mb"] == 256
    options, problem = from_roles(["mofed"], mofed_flavour="{{ 'bo' ~ 'gus' }}")
    assert "mofed_flavour" in problem and "bogus" in problem


def test_the_host_variables_win_over_the_role_defaults_and_empty_means_omitted():
    result, execute = run_roles(mofed_version="24.10", nvidia_fs_version="", cufile_settings={"logging": {"level": "ERROR"}},
                                nvidia_fs_mok_key_passphrase="secret")
    assert not result.get("failed"), result.get("msg")
    args = sent(execute)
    assert args["mofed"]["version"] == "24.10" and "version" not in args["nvidia_fs"]
    assert args["cufile"]["settings"] == {"logging": {"level": "ERROR"}}
    assert "mok_key_passphrase" not in args["nvidia_fs"] and "secret" not in repr(args)  # planning never signs
    assert "facts" not in (args.get("preflight") or {})


@pytest.mark.parametrize("inventory, expected", [({}, "fail"), ({"gds_unsupported_os": "warn"}, "warn"),
                                                 ({"gds_unsupported_os": "{{ 'wa' ~ 'rn' }}"}, "warn")])
def test_role_defaults_that_name_another_variable_are_rendered_with_the_hosts_variables(inventory, expected):
    options, problem = from_roles(["nvidia_fs", "gds_preflight"], **inventory)
    assert problem is None
    assert options["nvidia_fs"]["unsupported_os"] == options["preflight"]["unsupported_os"] == expected
    assert options["nvidia_fs"]["extra_packages"] == ["libcufile-13-0", "gds-tools-13-0"]


def test_one_expression_two_roles_share_gives_each_stage_the_same_value():
    options, problem = from_roles(ALL, mofed_repo="{{ site_repo }}", nvidia_fs_repo="{{ site_repo }}",
                                  site_repo="{{ {'name': 'site', 'url': 'http://mirror/' ~ 'gds/'} }}")
    assert problem is None
    assert options["mofed"]["repo"] == options["nvidia_fs"]["repo"] == {"name": "site", "url": "http://mirror/gds/"}


def test_the_verify_role_gives_the_facts_and_the_gate():
    options, problem = from_roles(["gds_verify"], gds_verify_require_mode="gds", gds_verify_probe_size_mb=8)
    assert problem is None
    assert options["require_mode"] == "gds" and options["require_proven"] is True
    assert options["facts"]["probe_size_mb"] == 8 and "require_mode" not in options["facts"]


def test_only_the_roles_asked_for_are_planned():
    result, execute = run_roles(["gds_plan", "cufile"], mofed_flavour="bogus")
    assert not result.get("failed"), result.get("msg")
    args = sent(execute)
    assert "cufile" in args and "mofed" not in args and args["facts"] == {"probe": False}


def plan_play():
    return [p for p in load("playbooks", "site.yml") if p["name"].startswith("Plan")][0]


def test_the_plan_play_is_one_role_import_and_one_task_per_host():
    play = plan_play()
    imports = [t["ansible.builtin.import_role"] for t in play["tasks"]]
    assert [i["name"] for i in imports] == ["gpudirect.storage.gds_plan"]
    assert imports[0]["rolespec_validate"] is False  # the action checks gds_plan's own variables
    rollout = [p for p in load("playbooks", "site.yml") if p["name"].startswith("Roll out")][0]
    assert play["environment"] == rollout["environment"] == "{{ gds_environment | default({}) }}"


@pytest.fixture(scope="module")
def plan_play_run(tmp_path_factory):
    """site.yml's plan play, as ansible-playbook runs it, on local hosts with bad gds_plan
    variables: (the output, the return code)."""
    tmp = tmp_path_factory.mktemp("plan_play")
    (tmp / "play.yml").write_text(yaml.safe_dump([dict(plan_play(), hosts="all")]))
    (tmp / "hosts.yml").write_text(textwrap.dedent("""
        all:
          vars: {ansible_connection: local, ansible_python_interpreter: %s}
          hosts:
            stages: {gds_plan_stages: [mofed, nvidia-fs]}
            verify: {gds_plan_verify: maybe}
            unknown: {gds_plan_unknown_variables: loud}
        """ % sys.executable))
    (tmp / "ansible_collections" / "gpudirect").mkdir(parents=True)
    (tmp / "ansible_collections" / "gpudirect" / "storage").symlink_to(ROOT)
    (tmp / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(tmp),
               ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", str(tmp / "hosts.yml"),
                           str(tmp / "play.yml")], cwd=str(tmp), env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    return proc.stdout + proc.stderr, proc.returncode


@pytest.mark.parametrize("host, needle", [("stages", "gds_plan_stages"), ("verify", "gds_plan_verify"),
                                          ("unknown", "gds_plan_unknown_variables")])
def test_a_bad_gds_plan_variable_is_named_by_the_plan_task_before_the_host_is_touched(plan_play_run, host, needle):
    output, rc = plan_play_run
    assert rc != 0
    assert "Validating arguments" not in output  # one task per host
    recap = [line for line in output.splitlines() if line.startswith(host + " ")][0]
    assert "ok=0" in recap and "failed=1" in recap
    block = output[output.index("fatal: [%s]" % host):].split("fatal: [", 2)[1]
    assert needle in block and "nothing was changed" in block and "Traceback" not in block
