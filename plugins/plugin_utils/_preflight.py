# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The read-only checks of gpudirect.storage.gds_preflight, as pure functions of a host's
``ansible_facts.gds`` and the policy (the module's options). Each message names the option to
change."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.module_utils import _hostparse


def _os_supported(os_info, supported):
    """The collection's table (or the user's, keyed by os-release ID; a distribution name such as
    "Ubuntu" matches too)."""
    return any(_hostparse.os_supported(name, os_info.get("version_id"), supported)
               for name in (os_info.get("id"), os_info.get("distribution")) if name)


def checks(gds, policy):
    """(failures, warnings): lists of messages. ``policy`` holds the gds_preflight options."""
    failures, warnings = [], []
    host = gds.get("host") or {}
    os_info = host.get("os") or {}
    name = "%s %s" % (os_info.get("distribution") or os_info.get("id") or "unknown OS", os_info.get("version_id") or "")
    supported = policy.get("supported_os") or _hostparse.supported_os("bare_metal")
    if not _os_supported(os_info, supported):
        text = "%s is not a supported GDS host OS (%s only, see supported_os)" % (name.strip(), _hostparse.supported_os_text(supported))
        if policy["unsupported_os"] == "fail":
            failures.append(text + "; set unsupported_os=warn to go on anyway")
        else:
            warnings.append(text + "; going on because unsupported_os=warn")
    arch = host.get("architecture")
    if arch not in policy["supported_architectures"]:
        failures.append("architecture %s is not supported (supported_architectures: %s)"
                        % (arch, ", ".join(policy["supported_architectures"])))
    free = (host.get("free_mb") or {}).get("/")
    if policy["min_free_mb"] > 0 and free is not None and free < policy["min_free_mb"]:
        failures.append("only %s MiB free on /, %s MiB needed for the packages and the DKMS build of nvidia-fs "
                        "(min_free_mb; 0 skips the check)" % (free, policy["min_free_mb"]))
    if policy["require_driver"] and not (gds.get("nvidia") or {}).get("driver_loaded"):
        failures.append("no NVIDIA driver loaded (%s); install the GPU driver first, or set require_driver=false to "
                        "provision GDS before the driver" % gds.get("reason"))
    # the nvidia_fs module's own check, over what the facts asked mokutil (gds.mok)
    mok = dict(gds.get("mok") or {}, configured=bool(policy.get("mok_key")))
    text = _hostparse.secure_boot_problem(gds.get("secure_boot") == "enabled", mok)
    if text:
        if policy["fail_on_secure_boot"]:
            failures.append(text + " Or set fail_on_secure_boot=false to go on anyway.")
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
