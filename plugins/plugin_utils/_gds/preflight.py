# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The read-only checks of gpudirect.storage.gds_preflight, as pure functions of a host's
``ansible_facts.gds`` and the policy (the module's options). Each message names the option to
change."""

from __future__ import annotations

import re


def _version_tuple(text):
    return tuple(int(p) for p in re.findall(r"\d+", str(text or ""))[:3])


def _os_supported(os_info, supported):
    accepted = [str(v) for v in (supported.get(os_info.get("distribution")) or [])]
    return str(os_info.get("version_id")) in accepted or str(os_info.get("major")) in accepted


def _os_list(supported):
    return ", ".join("%s %s" % (name, "/".join(str(v) for v in versions)) for name, versions in supported.items())


def checks(gds, policy):
    """(failures, warnings): lists of messages. ``policy`` holds the gds_preflight options."""
    failures, warnings = [], []
    host = gds.get("host") or {}
    os_info = host.get("os") or {}
    name = "%s %s" % (os_info.get("distribution") or os_info.get("id") or "unknown OS", os_info.get("version_id") or "")
    if not _os_supported(os_info, policy["supported_os"]):
        text = ("%s is not a supported GDS host OS (%s only, see supported_os)" % (name.strip(), _os_list(policy["supported_os"])))
        if policy["fail_on_unsupported_os"]:
            failures.append(text + "; set fail_on_unsupported_os=false to go on anyway")
        else:
            warnings.append(text + "; going on because fail_on_unsupported_os=false")
    arch = host.get("architecture")
    if arch not in policy["supported_architectures"]:
        failures.append("architecture %s is not supported (supported_architectures: %s)"
                        % (arch, ", ".join(policy["supported_architectures"])))
    python = host.get("python")
    if _version_tuple(python) < _version_tuple(policy["min_python"]):
        failures.append("Python %s on the host is too old: the modules need %s or later (min_python)"
                        % (python, policy["min_python"]))
    free = (host.get("free_mb") or {}).get("/")
    if policy["min_free_mb"] > 0 and free is not None and free < policy["min_free_mb"]:
        failures.append("only %s MiB free on /, %s MiB needed for the packages and the DKMS build of nvidia-fs "
                        "(min_free_mb; 0 skips the check)" % (free, policy["min_free_mb"]))
    if policy["require_driver"] and not (gds.get("nvidia") or {}).get("driver_loaded"):
        failures.append("no NVIDIA driver loaded (%s); install the GPU driver first, or set require_driver=false to "
                        "provision GDS before the driver" % gds.get("reason"))
    if gds.get("secure_boot") == "enabled" and not policy.get("mok_key"):
        text = ("Secure Boot is enabled and no MOK key is set (mok_key): the DKMS-built nvidia-fs module would be "
                "refused at load time; enroll a MOK key")
        if policy["fail_on_secure_boot"]:
            failures.append(text + " or set fail_on_secure_boot=false")
        else:
            warnings.append(text)
    return failures, warnings


def record(result, gds, policy):
    """Run the checks into ``result``: ``preflight`` {failures, warnings}, the warnings added to
    the task's; returns the failures."""
    failures, warnings = checks(gds, policy)
    result["preflight"] = {"failures": failures, "warnings": warnings}
    if warnings:
        result["warnings"] = list(result.get("warnings") or []) + warnings
    return failures


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
