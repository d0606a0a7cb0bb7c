# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The read-only checks of gpudirect.storage.gds_preflight, as pure functions of a host's
``ansible_facts.gds`` and the policy (the module's options). Each message names the variable a
user sets in the inventory (the role variable, VARIABLE_OF_OPTION) and a value that would pass,
as ``set <variable>: <value>`` (tests/unit/plugins/plugin_utils/test__preflight_vars.py checks
every message against the roles' argument specs)."""

from __future__ import annotations

import json
import re

from ansible_collections.gpudirect.storage.plugins.module_utils._common import os_policy
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel.secure_boot import secure_boot_problem
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import nvfs as _nvfs

# module option -> the inventory variable that sets it (roles/gds_preflight/tasks/main.yml); the
# one place to change when an option or a role variable is renamed
VARIABLE_OF_OPTION = dict((option, "gds_preflight_" + option) for option in (
    "supported_os", "unsupported_os", "supported_architectures", "min_free_mb",
    "require_driver", "fail_on_secure_boot"))
VARIABLE_OF_OPTION["mok_key"] = "nvidia_fs_mok_key"
VARIABLE_OF_OPTION["mok_cert"] = "nvidia_fs_mok_cert"
OPTION_OF_VARIABLE = dict((v, k) for k, v in VARIABLE_OF_OPTION.items())
# the switch that sets the OS policy of the whole bare-metal stack (gds_preflight's and nvidia_fs')
STACK_UNSUPPORTED_OS = "gds_unsupported_os"
# where Debian/Ubuntu's shim-signed keeps the MOK pair DKMS signs with
MOK_EXAMPLE = ("/var/lib/shim-signed/mok/MOK.priv", "/var/lib/shim-signed/mok/MOK.der")
CHECKS = ("os", "architecture", "free space", "driver", "secure boot")


def var(option):
    return VARIABLE_OF_OPTION[option]


def setting(option, value):
    """``set <variable>: <value>`` with the value in YAML flow form (what goes into group_vars)."""
    return "set %s: %s" % (var(option), _flow(value))


def _flow(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value) if re.search(r"[\s:#,\[\]{}]|^[0-9.]+$", value) else value
    return json.dumps(value)


def _os_supported(os_info, supported):
    """The collection's one table (or the user's, keyed by os-release ID; a distribution name such
    as "Ubuntu" matches too)."""
    return any(os_policy.os_supported(name, os_info.get("version_id"), supported)
               for name in (os_info.get("id"), os_info.get("distribution")) if name)


def _row(check, status, why):
    return {"check": check, "status": status, "why": why}


def _check_os(host, policy):
    os_info = host.get("os") or {}
    name = ("%s %s" % (os_info.get("distribution") or os_info.get("id") or "unknown OS",
                       os_info.get("version_id") or "")).strip()
    supported = policy.get("supported_os") or os_policy.supported_os("bare_metal")
    if _os_supported(os_info, supported):
        return _row("os", "passed", "%s is supported" % name)
    text = "%s is not a supported GDS host OS (%s: %s)" % (name, var("supported_os"), os_policy.supported_os_text(supported))
    if policy["unsupported_os"] == "fail":
        return _row("os", "failed", "%s; %s to go on anyway (or %s: warn for the whole stack)"
                    % (text, setting("unsupported_os", "warn"), STACK_UNSUPPORTED_OS))
    return _row("os", "warning", "%s; going on because %s is warn" % (text, var("unsupported_os")))


def _check_architecture(host, policy):
    arch = host.get("architecture")
    allowed = list(policy["supported_architectures"])
    if arch in allowed:
        return _row("architecture", "passed", "%s is supported" % arch)
    return _row("architecture", "failed", "architecture %s is not supported (%s: %s); %s to try anyway"
                % (arch, var("supported_architectures"), ", ".join(allowed),
                   setting("supported_architectures", allowed + [arch])))


def _check_free_space(host, policy):
    free = (host.get("free_mb") or {}).get("/")
    needed = policy["min_free_mb"]
    if needed <= 0:
        return _row("free space", "skipped", "%s is 0" % var("min_free_mb"))
    if free is None:
        return _row("free space", "skipped", "the free space on / is unknown")
    if free >= needed:
        return _row("free space", "passed", "%s MiB free on / (%s: %s)" % (free, var("min_free_mb"), needed))
    return _row("free space", "failed", "only %s MiB free on /, %s MiB needed for the packages and the DKMS build of "
                "nvidia-fs (%s); free some space, or %s (0 skips the check)"
                % (free, needed, var("min_free_mb"), setting("min_free_mb", _below(free))))


def _below(free_mb):
    """A min_free_mb the host passes now and still passes after the next run's first writes:
    the free space moves between two runs, so the suggestion leaves up to 100 MiB of room."""
    return max(1, (free_mb - 1) // 100 * 100) if free_mb > 100 else max(1, free_mb // 2)


def _check_driver(gds, policy):
    loaded = (gds.get("nvidia") or {}).get("driver_loaded")
    if not policy["require_driver"]:
        return _row("driver", "skipped", "%s is false" % var("require_driver"))
    if loaded:
        return _row("driver", "passed", "the NVIDIA driver is loaded")
    return _row("driver", "failed", "no NVIDIA driver loaded (%s); install the GPU driver first, or %s to provision "
                "GDS before the driver" % (gds.get("reason"), setting("require_driver", False)))


def _check_secure_boot(gds, policy):
    state = gds.get("secure_boot")
    if state != "enabled":
        return _row("secure boot", "passed", "Secure Boot %s" % (state or "unknown"))
    # the nvidia_fs module's own check, over what the facts asked mokutil (gds.mok)
    mok = dict(gds.get("mok") or {}, configured=bool(policy.get("mok_key")))
    problem = secure_boot_problem(True, mok)
    if not problem:
        return _row("secure boot", "passed", "Secure Boot enabled, the signing certificate is enrolled")
    problem = problem.replace("Set mok_key/mok_cert", "Set %s/%s" % (var("mok_key"), var("mok_cert")))
    text = "%s For example %s with %s: %s" % (
        problem.rstrip(), setting("mok_key", MOK_EXAMPLE[0]), var("mok_cert"), MOK_EXAMPLE[1])
    if policy["fail_on_secure_boot"]:
        return _row("secure boot", "failed", text + ", or %s to warn only" % setting("fail_on_secure_boot", False))
    return _row("secure boot", "warning", text + " (%s is false: going on)" % var("fail_on_secure_boot"))


def evaluate(gds, policy):
    """One row per check: {check, status (passed, failed, warning, skipped), why}."""
    host = gds.get("host") or {}
    return [_check_os(host, policy), _check_architecture(host, policy), _check_free_space(host, policy),
            _check_driver(gds, policy), _check_secure_boot(gds, policy)]


def checks(gds, policy):
    """(failures, warnings): lists of messages. ``policy`` holds the gds_preflight options."""
    rows = evaluate(gds, policy)
    return ([r["why"] for r in rows if r["status"] == "failed"], [r["why"] for r in rows if r["status"] == "warning"])


def table(rows):
    """The rows as aligned lines for a person: status, check, why."""
    width = max(len(r["check"]) for r in rows) if rows else 0
    return ["%-8s %-*s %s" % (r["status"], width, r["check"], r["why"]) for r in rows]


def warning_text(warning):
    """A task warning's message: a str, or (ansible-core 2.19+) a WarningSummary's event message."""
    return warning if isinstance(warning, str) else getattr(getattr(warning, "event", None), "msg", None) or ""


def record(result, gds, policy):
    """Run the checks into ``result``: ``preflight`` {failures, warnings, checks, table}, the
    warnings added to the task's; returns the failures."""
    rows = evaluate(gds, policy)
    failures = [r["why"] for r in rows if r["status"] == "failed"]
    warnings = [r["why"] for r in rows if r["status"] == "warning"]
    result["preflight"] = {"failures": failures, "warnings": warnings, "checks": rows, "table": table(rows)}
    if any(warning_text(w).endswith(_nvfs.UNSUPPORTED_OS_GOING_ON) for w in result.get("warnings") or []):
        # a plan's nvidia_fs stage said the same of the OS, in the words its rollout task will use
        # again: Ansible shows one text once per run, so that one is the only OS warning
        warnings = [r["why"] for r in rows if r["status"] == "warning" and r["check"] != "os"]
    if warnings:
        result["warnings"] = list(result.get("warnings") or []) + warnings
    return failures


def failed_result(result, msg):
    """A failed task's result as a person reads it: the message and, when the checks ran, their
    table and failures - not the facts, which would bury both (the table of every host that
    passed is shown by the play)."""
    out = {"failed": True, "changed": False, "msg": msg}
    checked = result.get("preflight")
    if checked:
        out["preflight"] = {"failures": checked["failures"], "table": checked["table"]}
    if result.get("warnings"):
        out["warnings"] = result["warnings"]
    return out


def summary(gds):
    """What the rollout starts from, in one line."""
    host = gds.get("host") or {}
    os_info = host.get("os") or {}
    versions = gds.get("versions") or {}
    now = "verified" if gds.get("verified") else ("probed" if (gds.get("probe") or {}).get("ran") else "inferred, no I/O")
    return ("%s %s %s, kernel %s, driver %s, nvidia_fs %s, OFED %s, Secure Boot %s; GDS now (%s) %s: %s" % (
        os_info.get("distribution") or os_info.get("id") or "-", os_info.get("version_id") or "-",
        host.get("architecture") or "-", versions.get("kernel") or "-", versions.get("nvidia_driver") or "none",
        versions.get("nvidia_fs") or "none", versions.get("ofed") or "none", gds.get("secure_boot"), now,
        gds.get("mode"), gds.get("reason")))
