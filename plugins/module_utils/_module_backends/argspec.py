# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A module's options and the constraints between them as one value, the way community.crypto
bundles them: the module builds its AnsibleModule from it, and gds_plan validates a stage's
options with the very same bundle, so a constraint added to a backend holds in the plan too.
PRIVATE to the collection. Target-side code: standard library and ansible.module_utils only.
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

CONSTRAINTS = ("mutually_exclusive", "required_together", "required_one_of", "required_if", "required_by")


class ArgumentSpec(object):
    """``argument_spec`` (option name -> spec) and the constraints AnsibleModule takes beside it."""

    def __init__(self, argument_spec, **constraints):
        unknown = sorted(set(constraints) - set(CONSTRAINTS))
        if unknown:
            raise TypeError("not a constraint of an argument spec: %s" % ", ".join(unknown))
        self.argument_spec = dict(argument_spec)
        self.constraints = dict((name, value) for name, value in constraints.items() if value)

    def merge(self, other):
        """A new bundle with the options and constraints of both (``other``'s option wins a name)."""
        constraints = dict(self.constraints)
        for name, value in other.constraints.items():
            if name == "required_by":
                constraints[name] = dict(constraints.get(name, {}), **value)
            else:
                constraints[name] = list(constraints.get(name, [])) + list(value)
        return ArgumentSpec(dict(self.argument_spec, **other.argument_spec), **constraints)

    def create_ansible_module(self, **kwargs):
        """The AnsibleModule of these options; ``kwargs`` are its other arguments (supports_check_mode, ...)."""
        return AnsibleModule(argument_spec=self.argument_spec, **dict(kwargs, **self.constraints))

    def validate(self, params):
        """ansible-core's validation of ``params`` against the options and constraints (a ValidationResult)."""
        return ArgumentSpecValidator(self.argument_spec, **self.constraints).validate(params)
