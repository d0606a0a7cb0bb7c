# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The hosts to repair: the report's SSH hosts that are not at the mode they must reach, one per
line in ``gds-fleet-repair.txt`` beside the report, for ``ansible-playbook --limit @<file>``.
PRIVATE to the collection."""

from __future__ import annotations

import os

from ansible_collections.gpudirect.storage.plugins.plugin_utils._report.write import _atomic_write, _read, open_report_dir

FILE = "gds-fleet-repair.txt"
MISSED_MODE = "verdict meets require_mode="  # the failed check fleet._fact_checks names


def hosts_to_repair(report):
    """In report order: hosts that failed, were unreachable, gave no verdict, whose probe failed or
    whose verdict missed its require_mode. Kubernetes nodes are left out (no inventory host)."""
    out = []
    for rec in report.get("hosts") or []:
        if rec.get("source", "ssh") != "ssh":
            continue
        missed = any(str(c.get("check", "")).startswith(MISSED_MODE) for c in rec.get("failed_checks") or [])
        if rec.get("status") != "ok" or rec.get("mode") == "failed" or missed:
            out.append(rec["host"])
    return out


def render(report):
    return "".join(host + "\n" for host in hosts_to_repair(report))


def write_repair(dest, report, check_mode=False):
    """Write the file into the report directory (the same checks and atomic write as the report
    files) when its text changes. Returns (changed, path)."""
    dest = os.path.abspath(os.path.expanduser(dest))
    text = render(report)
    dir_fd = open_report_dir(dest, create=not check_mode)
    try:
        changed = _read(FILE, dir_fd) != text
        if changed and not check_mode:
            _atomic_write(dir_fd, FILE, text)
    finally:
        if dir_fd is not None:
            os.close(dir_fd)
    return changed, os.path.join(dest, FILE)
