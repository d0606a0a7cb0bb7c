# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Issue 21: the task options of the collection's per-host actions that only name a variable
("{{ gds_verify_probe }}": gds_verify's task has 14 of them) are read from the variables, not
compiled as Jinja templates - Ansible compiles a template anew at every rendering, in every host's
worker - and give exactly what Ansible's templating gives."""

from __future__ import annotations

import pytest
from ansible._internal._templating._engine import TemplateEngine
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase
from ansible.template import trust_as_template

from ansible_collections.gpudirect.storage.plugins.action import cufile_config, gds_facts, gds_preflight
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import task_args
from ansible_collections.gpudirect.storage.tests.unit.test_role_args import compilations

ACTIONS = (gds_facts.ActionModule, gds_preflight.ActionModule, cufile_config.ActionModule)
PLAIN = {"text": "auto", "spaced": " a b\n", "empty": "", "digits": "0012", "word": "yes", "json": "[1, 2]",
         "none": None, "number": 256, "ratio": 1.5, "flag": False, "paths": ["/mnt/a", "/mnt/b"],
         "table": {"mode": "gds", "sizes": [1, 2], "off": None}, "unicode": "h\u00e9llo"}


def finalize(action, value, variables):
    return action.finalize_task_arg("option", value, TemplateEngine(variables=variables), None)


def ansible_result(value, variables):
    return ActionBase.finalize_task_arg("option", value, TemplateEngine(variables=variables), None)


@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("name", sorted(PLAIN))
def test_an_option_that_names_a_plain_variable_is_its_value_without_a_template(action, name):
    value = trust_as_template("{{ %s }}" % name)
    expected = ansible_result(value, PLAIN)
    with compilations() as compiled:
        got = finalize(action, value, PLAIN)
    assert compiled == []
    assert got == expected and type(got) is type(expected)


def test_a_container_is_a_copy_of_the_variable():
    variables = {"paths": ["/a"], "table": {"k": ["v"]}}
    paths = finalize(gds_facts.ActionModule, trust_as_template("{{ paths }}"), variables)
    table = finalize(gds_facts.ActionModule, trust_as_template("{{ table }}"), variables)
    paths.append("/b")
    table["k"].append("w")
    assert variables == {"paths": ["/a"], "table": {"k": ["v"]}}


@pytest.mark.parametrize("value, variables", [
    ("{{ text | upper }}", {"text": "auto"}),                          # more than a name
    ("{{ text }}/sub", {"text": "auto"}),                              # a name inside a longer string
    ("{{ nested }}", {"nested": trust_as_template("{{ 1 + 1 }}")}),    # a variable that is itself Jinja
    ("{{ deep }}", {"deep": [trust_as_template("{{ 2 }}")]}),          # ... or holds Jinja
    ("{{ text }}", {"text": trust_as_template("{% raw %}x{% endraw %}")}),
])
def test_anything_else_is_templated_as_ansible_does(value, variables):
    value = trust_as_template(value)
    with compilations() as compiled:
        got = finalize(gds_facts.ActionModule, value, variables)
    assert compiled
    assert got == ansible_result(value, variables)


def test_a_string_not_trusted_as_a_template_stays_as_it_is():
    """`!unsafe` and strings from outside the playbook are never templated: not looked up either."""
    assert finalize(gds_facts.ActionModule, "{{ text }}", {"text": "auto"}) == "{{ text }}"


def test_an_undefined_variable_is_ansibles_error():
    with pytest.raises(AnsibleError) as fast:
        finalize(gds_facts.ActionModule, trust_as_template("{{ missing }}"), {})
    with pytest.raises(AnsibleError) as slow:
        ansible_result(trust_as_template("{{ missing }}"), {})
    assert type(fast.value) is type(slow.value) and "missing" in str(fast.value)


def test_omit_is_left_to_ansible():
    assert task_args.reference("{{ omit }}", {"omit": "x"}) is None
    assert task_args.reference(trust_as_template("{{ omit }}"), {"omit": "x"}) is None


def test_the_reference_form_is_matched_exactly():
    variables = {"name": "v", "other": "w"}
    for form in ("{{ name }}", "{{name}}", "{{  name  }}"):
        assert task_args.reference(trust_as_template(form), variables) == ("v",)
    for form in ("{{ name }} ", " {{ name }}", "{{ name }}{{ other }}", "{{ name.attr }}", "{{ name['k'] }}",
                 "{{ name | default('x') }}", "{{ name if other else omit }}", "{{- name -}}", "{% if name %}x{% endif %}"):
        assert task_args.reference(trust_as_template(form), variables) is None, form
