# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Task options that only name a variable, read without Jinja. Controller-side.

The roles' tasks pass their variables on as ``option: "{{ role_variable }}"`` (gds_verify's one
task has 14 such options). Ansible compiles a template anew at every rendering, in every host's
worker: a quarter of a millisecond or more per option and host, for what is a lookup.
:class:`PlainReferences`, mixed into an action plugin, answers such an option from the variables
when the variable's value is one Jinja gives back unchanged (None, a bool, a number, a string
without Jinja, or lists and dicts of those, copied) and leaves everything else - other
expressions, a variable that is itself a template, an undefined one, ``omit``, a string not
trusted as a template - to Ansible's own templating, through the hook Ansible offers action
plugins for it (``ActionBase.finalize_task_arg``, as ``assert`` uses it)."""

from __future__ import annotations

import copy
import re

from ansible.template import is_trusted_as_template

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.role_args import _NAME, may_render

# exactly "{{ name }}" (spaces inside the braces allowed), with role_args' name pattern
_REFERENCE = re.compile("^" + _NAME + r"\s*\}\}$")
# the variable Ansible turns into "leave this option out": always its own
_SPECIAL = ("omit",)


def plain(value):
    """Whether Jinja gives ``value`` back unchanged when a template only names it."""
    if value is None or isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, str):
        return not may_render(value)
    if isinstance(value, list):
        return all(plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and not may_render(key) and plain(item) for key, item in value.items())
    return False


def reference(value, variables):
    """(the variable's value,) for a trusted "{{ name }}" over a plain variable, else None."""
    if not isinstance(value, str) or not is_trusted_as_template(value):
        return None
    match = _REFERENCE.match(value)
    if match is None or match.group(1) in _SPECIAL or match.group(1) not in variables:
        return None
    found = variables[match.group(1)]
    if not plain(found):
        return None
    return (copy.deepcopy(found) if isinstance(found, (list, dict)) else found,)


def resolved(value, templar):
    """``value`` as templating gives it back: a copy of itself when it is plain (:func:`plain`,
    no template compiled), else templated by ``templar``."""
    if plain(value):
        return copy.deepcopy(value)
    return templar.template(value)


class PlainReferences(object):
    """Mixed into an action plugin (before ActionBase): its options that only name a plain
    variable are that variable's value; the others are templated by Ansible."""

    @classmethod
    def finalize_task_arg(cls, name, value, templar, context):
        try:
            found = reference(value, templar.available_variables)
        except Exception:  # pylint: disable=broad-except  # whatever it is, Ansible's templating decides
            found = None
        if found is not None:
            return found[0]
        return super(PlainReferences, cls).finalize_task_arg(name, value, templar, context)
