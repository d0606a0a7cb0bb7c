# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The variables a user of this collection can set, read from the roles' own files
(``meta/argument_specs.yml``, ``defaults/main.yml``, ``vars/main.yml``) plus the documented
playbook-level variables; and the check of a host's variables against them: a variable with one
of our prefixes that nothing reads is a typo, reported with the name it probably meant.
Controller-side."""

from __future__ import annotations

import difflib
import functools
import json
import os
import re
from collections.abc import Mapping

import yaml

ROLES_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "roles")
PREFIXES = ("gds_", "cufile_", "mofed_", "nvidia_fs_", "gpu_operator_", "package_repo_")
# Read by the playbooks, not by a role (README "Playbook-level", playbooks/*.yml)
PLAYBOOK_VARIABLES = {
    "gds_serial": "rollout batch sizes (extra var only)",
    "gds_max_fail_percentage": "failure budget of a batch (extra var only)",
    "gds_canary": "the hosts of the first batch (extra var only)",
    "gds_allow_reboot": "reboots allowed where a module reports one is needed",
    "gds_environment": "the environment of every task on the GDS hosts",
    "gds_verify_hosts": "the hosts of playbooks/verify.yml",
    "gds_unsupported_os": "OS policy of the bare-metal stack: fail or warn (nvidia_fs and gds_preflight)",
    "gds_k8s_ssh_verify": "playbooks/k8s.yml also verifies the GPU nodes over SSH (extra var only)",
    "gds_preflight_enabled": "stage switch", "gds_mofed_enabled": "stage switch",
    "gds_nvidia_fs_enabled": "stage switch", "gds_cufile_enabled": "stage switch",
    "gds_verify_enabled": "stage switch", "gds_report_enabled": "stage switch",
}
# Registered or set by the roles' tasks (results, not settings); tests/unit/test_role_vars_registered.py
# keeps the list complete
REGISTERED = ("mofed_result", "nvidia_fs_result", "cufile_result", "gpu_operator_result", "gds_report_result",
              "gds_plan_result", "package_repo_apt_source", "package_repo_dnf_source", "package_repo_dnf_enabled",
              "package_repo_dnf_streams", "gds_reboot_pending",
              "gds_node_probe_result", "gds_node_probe_k8s_nodes", "gds_node_probe_failure")
# Only a play-level keyword reads them, before any inventory variable exists
EXTRA_VARS_ONLY = ("gds_serial", "gds_max_fail_percentage", "gds_canary", "gds_k8s_ssh_verify")


def _load(path):
    try:
        with open(path) as f:
            return yaml.safe_load(f) or {}
    except (IOError, OSError):
        return {}


@functools.lru_cache(maxsize=1)
def role_specs():
    """{role: {entry point: argument spec}} of every role of the collection."""
    out = {}
    for role in sorted(os.listdir(ROLES_DIR)):
        specs = _load(os.path.join(ROLES_DIR, role, "meta", "argument_specs.yml")).get("argument_specs") or {}
        if specs:
            out[role] = specs
    return out


@functools.lru_cache(maxsize=1)
def settable_variables():
    """Every variable a user sets: the options of the roles' argument specs and the playbook variables."""
    names = set(PLAYBOOK_VARIABLES)
    for entry_points in role_specs().values():
        for spec in entry_points.values():
            names.update(spec.get("options") or {})
    return frozenset(names)


@functools.lru_cache(maxsize=1)
def known_variables():
    """Everything the collection reads or sets: settable variables, role defaults and vars, results."""
    names = set(settable_variables()) | set(REGISTERED)
    for role in os.listdir(ROLES_DIR):
        for sub in ("defaults", "vars"):
            data = _load(os.path.join(ROLES_DIR, role, sub, "main.yml"))
            if isinstance(data, dict):
                names.update(data)
    return frozenset(names)


def did_you_mean(name):
    """The settable variable closest to ``name``, or None."""
    close = difflib.get_close_matches(name, sorted(settable_variables()), n=1, cutoff=0.75)
    return close[0] if close else None


def registered_result(value):
    """True for a task result a play registered: Ansible registers every result as a dict with
    ``changed``, which no setting of ours has. The user's own ``register: gds_smi`` is no typo."""
    return isinstance(value, Mapping) and "changed" in value


def unknown_variables(variables):
    """[(name, suggestion or None)] for the variables with one of our prefixes that nothing reads
    (``variables``: a host's variables, or only their names)."""
    values = variables if isinstance(variables, Mapping) else {}
    out = []
    for name in sorted(variables):
        if name.startswith(PREFIXES) and name not in known_variables() and not registered_result(values.get(name)):
            out.append((name, did_you_mean(name)))
    return out


def describe_unknown(unknown):
    """One message for the unknown variables of a host."""
    parts = []
    for name, meant in unknown:
        parts.append("%s (did you mean %s?)" % (name, meant) if meant else "%s (no such variable)" % name)
    text = "unknown variable%s %s: no role of gpudirect.storage reads %s" % (
        "s" if len(unknown) > 1 else "", ", ".join(parts), "them" if len(unknown) > 1 else "it")
    return text + "; fix the name in the inventory, or set gds_plan_unknown_variables: warn to go on"


def misplaced_extra_vars(task_vars, extra_vars, play_vars):
    """Warnings for the variables only a play keyword reads (gds_serial, ...) that the host has
    but the extra vars and the play do not: they come from the inventory, where Ansible never
    reads them for ``serial`` / ``max_fail_percentage`` / ``hosts``."""
    out = []
    for name in EXTRA_VARS_ONLY:
        if name in task_vars and name not in extra_vars and name not in play_vars:
            out.append("%s is set in the inventory, where Ansible does not read it (a play keyword is decided before "
                       "any host variable exists): pass it as an extra var, e.g. -e '{\"%s\": %s}'"
                       % (name, name, _flow(task_vars[name])))
    return out


def _flow(value):
    if isinstance(value, (list, dict, int, float)) and not isinstance(value, bool):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            pass
    return '"%s"' % value


def _role_options(role):
    options = set()
    for spec in (role_specs().get(role) or {}).values():
        options.update(spec.get("options") or {})
    return options


def inventory_names(role, text):
    """``text`` (a stage module's message) with each module option that has a role variable
    (``<role>_<option>`` in the role's argument spec) named as that variable: a message from the
    plan then names what the user sets in the inventory. Options without an underscore are
    renamed only as ``option=value``, where they cannot be an ordinary word."""
    prefix = role + "_"
    options = sorted((v[len(prefix):] for v in _role_options(role) if v.startswith(prefix)), key=len, reverse=True)
    for option in options:
        tail = r"\b" if "_" in option else r"(?==)"
        text = re.sub(r"(?<![\w.])%s%s" % (re.escape(option), tail), prefix + option, text)
    return text


def warm():
    """Read the roles' files once in the importing process (the controller's main process, before
    it forks a worker per host; see plugins/action/gds_facts.py)."""
    try:
        known_variables()
    except Exception:  # pylint: disable=broad-except
        pass  # read again (and then reported) when a host is checked
