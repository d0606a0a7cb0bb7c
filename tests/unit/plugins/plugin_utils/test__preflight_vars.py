# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Every preflight failure and warning names a variable the user can set in the inventory (a
role variable of the roles' argument specs), and a failure's suggested value makes it pass."""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.gpudirect.storage.plugins.modules.gds_preflight import argument_spec
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import preflight as _preflight
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_vars as _role_vars
from ansible_collections.gpudirect.storage.tests.unit.plugins.plugin_utils.test__preflight import POLICY, UBUNTU

DEBIAN = {"id": "debian", "version_id": "12", "major": "12", "distribution": "Debian"}
# every check failing or warning at once, with the policy that makes each one fail
WORST = dict(UBUNTU, host=dict(UBUNTU["host"], os=DEBIAN, architecture="ppc64le", python="3.6.8", free_mb={"/": 100}),
             nvidia={"driver_loaded": False}, secure_boot="enabled")
STRICT = dict(POLICY, require_driver=True, fail_on_secure_boot=True)
OUR_NAME = re.compile(r"\b(?:gds|cufile|mofed|nvidia_fs|gpu_operator|package_repo)_[a-z0-9_]+")
# "set NAME: VALUE" with VALUE a YAML flow scalar, list or mapping
SUGGESTION = re.compile(r"\bset (?P<name>[a-z][a-z0-9_]*): (?P<value>\{[^}]*\}|\[[^\]]*\]|\"[^\"]*\"|[^\s;,)]+)")


def role_options():
    out = {}
    for role, entry_points in _role_vars.role_specs().items():
        for spec in entry_points.values():
            out.update(spec.get("options") or {})
    return out


OPTIONS = role_options()


def suggestions(message):
    return [(m.group("name"), yaml.safe_load(m.group("value"))) for m in SUGGESTION.finditer(message)]


def valid_for_spec(name, value):
    spec = dict((k, v) for k, v in OPTIONS[name].items() if k in ("type", "elements", "choices"))
    return not ArgumentSpecValidator({name: spec}).validate({name: value}).error_messages


def all_messages():
    """Failures and warnings of the worst host, strict and lenient, each once."""
    failures, warnings = _preflight.checks(WORST, STRICT)
    lenient = dict(POLICY, fail_on_unsupported_os=False)
    more_failures, more_warnings = _preflight.checks(WORST, lenient)
    return sorted(set(failures + more_failures)), sorted(set(warnings + more_warnings))


def test_the_worst_host_fails_every_check():
    failures, warnings = _preflight.checks(WORST, STRICT)
    assert len(failures) == 5 and warnings == [], failures  # every check (python has none)


@pytest.mark.parametrize("message", sum(all_messages(), []))
def test_every_message_names_only_variables_of_the_role_argument_specs(message):
    names = OUR_NAME.findall(message)
    assert names, "names no variable the user can set: %s" % message
    # role variables, or the documented stack-wide ones (gds_unsupported_os)
    unknown = [n for n in names if n not in OPTIONS and n not in _role_vars.PLAYBOOK_VARIABLES]
    assert not unknown, "%s are not role variables: %s" % (unknown, message)
    for name, value in suggestions(message):
        assert name in OPTIONS and valid_for_spec(name, value), (name, value, message)


@pytest.mark.parametrize("message", all_messages()[0])
def test_every_failure_suggests_a_value_and_that_value_passes(message):
    found = [(n, v) for n, v in suggestions(message) if n in _preflight.OPTION_OF_VARIABLE]
    assert found, "no 'set <variable>: <value>' for a preflight option in: %s" % message
    for name, value in found:
        fixed = dict(STRICT, **{_preflight.OPTION_OF_VARIABLE[name]: value})
        failures, dummy = _preflight.checks(WORST, fixed)
        assert message not in failures, "%s: %r does not make it pass" % (name, value)
        assert len(failures) == 4


def test_no_message_names_a_bare_module_option():
    for message in sum(all_messages(), []):
        for option in argument_spec():
            bare = re.search(r"(?<![a-z_])%s(?![a-z_])" % option, message)
            assert not bare or "_" not in option, "bare option %s in: %s" % (option, message)


def test_the_option_table_covers_every_option_and_names_existing_variables():
    assert set(_preflight.VARIABLE_OF_OPTION) == set(argument_spec()) - {"facts"}
    for option, variable in _preflight.VARIABLE_OF_OPTION.items():
        assert variable in OPTIONS, (option, variable)


def test_a_warning_for_secure_boot_names_the_key_variables():
    dummy, warnings = _preflight.checks(dict(UBUNTU, secure_boot="enabled"), POLICY)
    assert len(warnings) == 1 and "nvidia_fs_mok_key" in warnings[0] and "nvidia_fs_mok_cert" in warnings[0]


def test_each_check_has_a_row_with_its_status_and_why():
    rows = _preflight.evaluate(copy.deepcopy(UBUNTU), POLICY)
    assert [r["check"] for r in rows] == ["os", "architecture", "free space", "driver", "secure boot"]
    assert [r["status"] for r in rows] == ["passed", "passed", "passed", "skipped", "passed"]
    assert "gds_preflight_require_driver" in rows[3]["why"]
    lines = _preflight.table(rows)
    assert lines[0].split() == ["passed", "os", "Ubuntu", "24.04", "is", "supported"]
    assert all(len(line) < 160 for line in lines)
