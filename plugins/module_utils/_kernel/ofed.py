# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""MLNX_OFED / DOCA-OFED / inbox RDMA: what is installed, what to do. PRIVATE to the collection.

Pure functions only: the module collects ``ofed_info -s`` and the package database and calls
:func:`detect` and :func:`decide`. MLNX_OFED (legacy, last standalone release 24.10 LTS) and
DOCA-OFED must never be installed together: :func:`decide` refuses instead of mixing.
"""

from __future__ import annotations

import re

from ansible_collections.gpudirect.storage.plugins.module_utils._packages.versions import version_matches

DOCA_PROFILES = ("doca-ofed", "doca-roce", "doca-networking")
# Meta packages that identify a DOCA-OFED install (profiles + the umbrella ones).
DOCA_METAS = DOCA_PROFILES + ("doca-all", "doca-ofed-userspace")
# Meta packages of MLNX_OFED repositories / ISOs (mlnxofedinstall installs the same sets).
MLNX_METAS = ("mlnx-ofed-all", "mlnx-ofed-basic", "mlnx-ofed-hpc", "mlnx-ofed-dpdk",
              "mlnx-ofed-dpdk-upstream-libs", "mlnx-ofed-kernel-only", "mlnx-ofed-vma",
              "mlnx-ofed-guest", "mlnx-ofed-hypervisor", "mlnx-ofed-eth-only")
# Distribution RDMA stack ("inbox"), per package family.
INBOX_PACKAGES = {
    "apt": ("rdma-core", "ibverbs-providers", "ibverbs-utils", "infiniband-diags"),
    "dnf": ("rdma-core", "libibverbs", "libibverbs-utils", "infiniband-diags"),
}
FLAVOURS = DOCA_PROFILES + ("mlnx-ofed", "inbox")


def family_of(flavour):
    if flavour in DOCA_PROFILES:
        return "doca"
    if flavour == "mlnx-ofed":
        return "mlnx"
    return "inbox"


def meta_package(flavour):
    return {"mlnx-ofed": "mlnx-ofed-all"}.get(flavour, flavour)


def query_names(pkg_family):
    """Every package name :func:`detect` needs from the package database."""
    return sorted(set(DOCA_METAS + MLNX_METAS + INBOX_PACKAGES[pkg_family]))


def ofed_release(version):
    """``24.10-4.1.4.0`` -> ``24.10`` (the year.month release)."""
    m = re.match(r"^(\d+\.\d+)", version or "")
    return m.group(1) if m else None


def detect(installed, ofed_info):
    """What is on the host. ``installed`` {package: version}; ``ofed_info`` parse result/None.

    family: ``doca`` (a DOCA meta package), ``mlnx`` (an MLNX_OFED meta package, or
    ``MLNX_OFED_LINUX`` / a bare ``OFED-internal`` without DOCA metas), ``inbox`` (rdma-core,
    no vendor OFED), ``mixed`` (DOCA and MLNX_OFED metas at once), or None.
    """
    doca = sorted(n for n in DOCA_METAS if n in installed)
    mlnx = sorted(n for n in MLNX_METAS if n in installed)
    if doca and mlnx:
        family = "mixed"
    elif doca:
        family = "doca"
    elif mlnx or (ofed_info and ofed_info["distribution"] in ("MLNX_OFED_LINUX", "OFED-internal", "OFED")):
        family = "mlnx"
    elif "rdma-core" in installed:
        family = "inbox"
    else:
        family = None
    profiles = [n for n in DOCA_PROFILES if n in installed]
    if family == "mlnx":
        profiles = ["mlnx-ofed"]
    elif family == "inbox":
        profiles = ["inbox"]
    version = ofed_info["version"] if ofed_info else None
    if version is None and family == "inbox":
        version = installed.get("rdma-core")
    return {"family": family, "profiles": profiles, "version": version,
            "ofed_info": ofed_info["raw"] if ofed_info else None,
            "doca_packages": dict((n, installed[n]) for n in doca),
            "mlnx_packages": dict((n, installed[n]) for n in mlnx)}


def _describe(current):
    if current["family"] == "doca":
        return "DOCA-OFED (%s%s)" % (", ".join(sorted(current["doca_packages"])),
                                     ", " + current["ofed_info"] if current["ofed_info"] else "")
    if current["family"] == "mlnx":
        return "MLNX_OFED (%s)" % (current["ofed_info"] or ", ".join(sorted(current["mlnx_packages"])))
    return "the distribution RDMA stack (rdma-core %s)" % (current["version"] or "")


def installed_matches(current, installed, flavour, version):
    """Is the desired flavour (and version, if any) already there?"""
    if flavour == "inbox":
        return current["family"] in ("inbox",) and (not version or version_matches(current["version"], version))
    meta = meta_package(flavour)
    have = installed.get(meta)
    if have is None:
        return False
    if not version:
        return True
    return version_matches(have, version) or version_matches(current["version"] or "", version)


def decide(current, installed, desired, pkg_family="apt"):
    """Pure: current state + desired {flavour, version, extra_packages} -> decision.

    Returns {conflict: message or None, wanted: {package: version prefix or None},
    changes_kernel_stack: bool, reason}. ``wanted`` lists every package that must be present;
    the caller resolves versions against the repositories with ``_packages.apt_dnf.plan_packages``.
    """
    flavour = desired["flavour"]
    version = desired.get("version") or None
    fam = family_of(flavour)
    cur = current["family"]
    out = {"conflict": None, "wanted": {}, "changes_kernel_stack": False, "reason": ""}
    if cur == "mixed":
        out["conflict"] = (
            "both MLNX_OFED (%s) and DOCA-OFED (%s) packages are installed; this is unsupported. "
            "Remove one of them (ofed_uninstall.sh or the package manager) and run again."
            % (", ".join(sorted(current["mlnx_packages"])), ", ".join(sorted(current["doca_packages"]))))
        return out
    if fam == "doca" and cur == "mlnx":
        out["conflict"] = ("%s is installed; installing DOCA-OFED (%s) next to it would mix MLNX_OFED "
                           "and DOCA-OFED. Uninstall MLNX_OFED first (ofed_uninstall.sh --force), then "
                           "run again." % (_describe(current), flavour))
    elif fam == "mlnx" and cur == "doca":
        out["conflict"] = ("%s is installed; installing MLNX_OFED next to it would mix DOCA-OFED and "
                           "MLNX_OFED. Remove the DOCA packages first, then run again." % _describe(current))
    elif fam == "inbox" and cur in ("doca", "mlnx"):
        out["conflict"] = ("flavour=inbox asked for the distribution RDMA stack but %s is installed; "
                           "this module does not uninstall a vendor OFED. Remove it first."
                           % _describe(current))
    if out["conflict"]:
        return out
    matches = installed_matches(current, installed, flavour, version)
    # Already there (also when the version matched through ofed_info -s): no pin, no change.
    pin = None if matches else version
    if fam == "inbox":
        for name in INBOX_PACKAGES[pkg_family]:
            out["wanted"][name] = pin if name == "rdma-core" else None
    else:
        out["wanted"][meta_package(flavour)] = pin
    for extra in desired.get("extra_packages") or []:
        name, _sep, ver = extra.partition("=")
        out["wanted"][name] = ver or None
    if not matches:
        out["changes_kernel_stack"] = fam != "inbox"
        out["reason"] = "%s%s is not installed" % (flavour, " " + version if version else "")
    return out


def outcome(decision, plan, current, nvidia_fs_installed):
    """What the caller must tell the user after ``plan`` (from plan_packages) ran."""
    kernel_change = bool(plan["install"]) and decision["changes_kernel_stack"]
    return {
        # New kernel modules replace the ones in use: openibd restart or a reboot.
        "modules_reload_required": kernel_change,
        "reboot_required": kernel_change and current["family"] in ("mlnx", "doca", "inbox"),
        # PeerDirect support in nvidia-fs is decided when it is BUILT.
        "nvidia_fs_rebuild_required": kernel_change and nvidia_fs_installed,
    }
