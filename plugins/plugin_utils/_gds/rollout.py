# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The rollout settings of playbooks/site.yml, checked on the controller before any host is
touched: the hosts of the rolled-out group, and gds_serial, gds_max_fail_percentage and
gds_canary, which only play keywords read - templated before any host exists, with the play's
and the extra vars alone, so a value in the inventory would be ignored and the rollout would go
on with the defaults. Each check returns a message that names the setting, or None."""

from __future__ import annotations

import json
import os
import re

SETTINGS = ("gds_serial", "gds_max_fail_percentage", "gds_canary")
SERIAL_FORMS = 'a count of hosts (5), a percentage "N%" of them ("10%") or a list of them ([1, "10%", "25%"])'
_PERCENT = re.compile(r"^\s*[0-9]+\s*%\s*$")
_COUNT = re.compile(r"^\s*[0-9]+\s*$")
_VARS_DIRS = ("group_vars", "host_vars")
_SHOWN = 5


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _flow(value):
    """``value`` as JSON where it can be (what -e '{...}' takes), else as Python writes it."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _some(names):
    names = list(names)
    more = len(names) - _SHOWN
    return ", ".join(names[:_SHOWN]) + (" and %d more" % more if more > 0 else "")


def serial_problem(value):
    """Ansible reads each batch size as an int or "N%" (anything else ends the run with
    "Unexpected Exception ... invalid literal for int()")."""
    items = value if isinstance(value, list) else [value]
    for number, item in enumerate(items, 1):
        if isinstance(item, int) and not isinstance(item, bool) and item >= 0:
            continue
        if isinstance(item, str) and (_PERCENT.match(item) or _COUNT.match(item)):
            continue
        where = " (element %d of %s)" % (number, _flow(value)) if isinstance(value, list) else ""
        return "gds_serial: %r%s is not a batch size; use %s" % (item, where, SERIAL_FORMS)
    return None


def max_fail_problem(value):
    number = value
    if isinstance(value, str) and _PERCENT.match(value):
        number = int(value.strip().rstrip("%"))
    if _is_number(number) and 0 <= number <= 100:
        return None
    return "gds_max_fail_percentage: %r is not a percentage; use a number from 0 to 100 (20, or \"20%%\")" % (value,)


def canary_problem(value, group, hosts):
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return "gds_canary: %r is not a host name or a list of host names" % (value,)
    unknown = [n for n in names if n and n not in hosts]
    if not unknown:
        return None
    return ("gds_canary names %s, not a host of group %s (its hosts: %s); name one or more of its hosts"
            % (_some(unknown), group, _some(hosts) or "none"))


def no_hosts_problem(group, hosts, sources):
    if hosts:
        return None
    return ("playbooks/site.yml rolls out the hosts of group %s, and the inventory (%s) has none: list your GPU hosts "
            "under %s, or make your own group a child of it (all: {children: {%s: {children: {my_gpu_hosts: {}}}}})"
            % (group, _some(sources) or "none given", group, group))


def setting_files(name, bases):
    """The group_vars / host_vars files under ``bases`` (inventory and playbook directories) that
    set ``name`` at their top level, and the inventory files among ``bases`` that set it."""
    key = re.compile(r"""^\s*["']?%s["']?\s*:""" % re.escape(name), re.M)
    found = []
    for base in bases:
        candidates = [base] if os.path.isfile(base) else []
        for sub in _VARS_DIRS if os.path.isdir(base) else ():
            top = os.path.join(base, sub)
            for entry in sorted(os.listdir(top)) if os.path.isdir(top) else []:
                path = os.path.join(top, entry)
                inner = [os.path.join(path, f) for f in sorted(os.listdir(path))] if os.path.isdir(path) else [path]
                candidates += [p for p in inner if os.path.isfile(p)]
        for path in candidates:
            try:
                with open(path, errors="replace") as f:
                    if key.search(f.read()) and path not in found:
                        found.append(path)
            except (IOError, OSError):
                continue
    return found


def inventory_problem(name, hosts_with_value, files, example):
    """``name`` has a value on these hosts that did not come from the extra vars."""
    where = "in %s" % ", ".join(files) if files else "in the inventory (its hosts file or a vars plugin)"
    return ("%s is set %s (hosts %s), where Ansible never reads it: the play keyword that uses it is decided before "
            "any host variable exists, so the rollout would go on with the default. Remove it there and pass it as "
            "an extra var: -e '%s' (or -e @rollout.yml, a file outside the inventory)"
            % (name, where, _some(hosts_with_value), example))


def vars_bases(sources, playbook_dir):
    """The directories whose group_vars / host_vars Ansible reads, and the inventory files."""
    bases = []
    for source in list(sources or []) + ([playbook_dir] if playbook_dir else []):
        if not isinstance(source, str) or not os.path.exists(source):
            continue
        for base in ([source] if os.path.isdir(source) else [source, os.path.dirname(source) or "."]):
            if base not in bases:
                bases.append(base)
    return bases


def problems(group, hosts, extra_vars, inventory_values, sources=(), playbook_dir=None):
    """Every problem of the rollout settings, in the order a user fixes them.

    ``extra_vars``: the run's extra vars; ``inventory_values``: {setting: {host: value}} for the
    settings the hosts of ``group`` have from anywhere but the extra vars."""
    if not hosts:
        return [no_hosts_problem(group, hosts, sources)]
    found = []
    bases = vars_bases(sources, playbook_dir)
    for name in SETTINGS:
        per_host = inventory_values.get(name) or {}
        if name not in extra_vars and per_host:
            value = per_host[sorted(per_host)[0]]
            example = '{"%s": %s}' % (name, _flow(value))
            found.append(inventory_problem(name, [h for h in hosts if h in per_host], setting_files(name, bases), example))
    checks = (("gds_serial", serial_problem), ("gds_max_fail_percentage", max_fail_problem),
              ("gds_canary", lambda v: canary_problem(v, group, hosts)))
    for name, check in checks:
        if extra_vars.get(name) is not None:
            problem = check(extra_vars[name])
            if problem:
                found.append(problem)
    return found
