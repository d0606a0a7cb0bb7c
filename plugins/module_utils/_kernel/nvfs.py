# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""nvidia-fs rules: driver matching, preflight checks, rebuild decisions. PRIVATE to the
collection.

Pure functions over facts the module collects (see ``collect_*`` helpers, which only read
through ``HostPaths``). Sources of the rules:

* gds-nvidia-fs ChangeLog, 2.17.5: "nvidia-fs is restricted to NVIDIA UNIX Open Kernel Module
  for x86_64" (proprietary module -> ``Unknown symbol nvidia_p2p_*``, gds-nvidia-fs #34/#41/#48).
* CUDA 13.x needs an NVIDIA driver >= 580 and CUDA 12.x >= 525 (CUDA minor-version
  compatibility); nvidia-fs 2.26 is the first series published with CUDA 13.0.
* nvidia-fs is built against the driver's nv-p2p.h (make.log ``NVIDIA_SRC_DIR=``) and detects
  MOFED PeerDirect at build time (``ofed_info -s`` in its dkms.conf): a driver change or a MOFED
  installed after the build means a rebuild.
* DKMS-built nvidia-fs.ko is not signed with an enrolled MOK key by default: with Secure Boot
  it does not load and GDS silently falls back (gds-nvidia-fs #81).
"""

from __future__ import annotations

import os
import re

from ansible_collections.gpudirect.storage.plugins.module_utils._packages.versions import compare_versions, select_version, version_matches
from ansible_collections.gpudirect.storage.plugins.module_utils._common import os_policy
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel.secure_boot import secure_boot_problem

OPEN_MODULE_REQUIRED_FROM = "2.17.5"
# nvidia-fs series -> CUDA release it shipped with (the newest series wins for later CUDA).
NVFS_CUDA = (("2.16", "12.2"), ("2.22", "12.6"), ("2.24", "12.8"), ("2.25", "12.9"),
             ("2.26", "13.0"), ("2.27", "13.1"), ("2.28", "13.2"), ("2.29", "13.3"))
CUDA_MIN_DRIVER = {"12": "525.60.13", "13": "580.65.06"}


class PreflightError(Exception):
    def __init__(self, failures):
        self.failures = failures
        super(PreflightError, self).__init__(
            "nvidia_fs preflight failed, nothing was changed: " + " | ".join(
                "[%s] %s" % (f["check"], f["msg"]) for f in failures))


# --------------------------------------------------------------------------- parsers
_MAKE_LOG_DRIVER = re.compile(r"NVIDIA_SRC_DIR=\S*/nvidia(?:-open)?-(\d+\.\d+(?:\.\d+)?)")
_SERIES = re.compile(r"(\d+)\.(\d+)")
_CUDA_PACKAGE = re.compile(r"(?:libcufile|libcufile-dev|gds-tools|nvidia-gds)-(\d+)-(\d+)$")


def driver_from_modinfo(info):
    """modinfo of ``nvidia`` -> {version, open}: the open module is ``Dual MIT/GPL``."""
    if not info or not info.get("version"):
        return None
    lic = info.get("license") or ""
    return {"version": info["version"], "open": "GPL" in lic if lic else None, "source": "modinfo"}


def driver_from_make_log(text):
    """The driver version an nvidia-fs build used: ``NVIDIA_SRC_DIR=/usr/src/nvidia-580.95.05/...``."""
    m = _MAKE_LOG_DRIVER.search(text or "")
    return m.group(1) if m else None


# --------------------------------------------------------------------------- rules
def nvfs_series(version):
    m = _SERIES.match(version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def cuda_of_nvfs(version):
    """CUDA release an nvidia-fs version was published with (nearest lower known series)."""
    s = nvfs_series(version)
    best = None
    for series, cuda in NVFS_CUDA:
        if s and nvfs_series(series) <= s:
            best = cuda
    return best


def cuda_of_package(name):
    """``libcufile-12-8`` / ``gds-tools-13-0`` / ``nvidia-gds-12-9`` -> ``12.8`` ..."""
    m = _CUDA_PACKAGE.match(name)
    return "%s.%s" % (m.group(1), m.group(2)) if m else None


def driver_supports_cuda(driver_version, cuda):
    need = CUDA_MIN_DRIVER.get((cuda or "").split(".", maxsplit=1)[0])
    return need is None or compare_versions(driver_version, need) >= 0


def nvfs_driver_problems(nvfs_version, driver, arch="x86_64"):
    """Reasons why ``nvfs_version`` cannot work with ``driver`` ({version, open})."""
    out = []
    if not nvfs_version or not driver:
        return out
    if arch == "x86_64" and driver.get("open") is False \
            and compare_versions(nvfs_version, OPEN_MODULE_REQUIRED_FROM) >= 0:
        out.append(("proprietary_module",
                    "nvidia-fs %s needs the NVIDIA open kernel module (since %s), but driver %s is the "
                    "proprietary one: loading would fail with 'Unknown symbol nvidia_p2p_*'. Install the "
                    "open flavour of the driver (e.g. nvidia-open / nvidia-driver-<branch>-open)."
                    % (nvfs_version, OPEN_MODULE_REQUIRED_FROM, driver["version"])))
    cuda = cuda_of_nvfs(nvfs_version)
    if cuda and not driver_supports_cuda(driver["version"], cuda):
        out.append(("driver_version",
                    "nvidia-fs %s belongs to CUDA %s, which needs NVIDIA driver >= %s; installed driver is %s."
                    % (nvfs_version, cuda, CUDA_MIN_DRIVER[cuda.split(".", maxsplit=1)[0]], driver["version"])))
    return out


def match_driver(available, driver, arch="x86_64"):
    """``version: match_driver``: the highest available nvidia-fs with no driver problem."""
    ok = [v for v in available if not nvfs_driver_problems(v, driver, arch)]
    return select_version(ok, None)


def preflight(facts, opts):
    """Pure: every failed check as {check, msg}. ``facts`` keys: os, arch, kernel,
    headers_present, driver, secure_boot, mok, ofed_family, nvfs_version, extra_packages."""
    fails = []

    def fail(check, msg):
        fails.append({"check": check, "msg": msg})

    os_problem = unsupported_os(facts.get("os") or {})
    if os_problem and opts.get("unsupported_os", "fail") == "fail":
        fail("unsupported_os", os_problem + "; set unsupported_os=warn to try anyway.")
    if facts.get("ofed_family") == "mixed":
        fail("ofed_mixed", "MLNX_OFED and DOCA-OFED packages are both installed; nvidia-fs would be built "
             "against an undefined RDMA stack. Remove one of them first.")
    if not facts.get("headers_present"):
        fail("kernel_headers", "kernel headers for the running kernel %s are missing (%s); install "
             "linux-headers-%s (apt) or kernel-devel-%s (dnf) so DKMS can build nvidia-fs."
             % (facts.get("kernel"), facts.get("headers_path"), facts.get("kernel"), facts.get("kernel")))
    driver = facts.get("driver")
    if not driver:
        fail("driver_missing", "no NVIDIA kernel driver found (/proc/driver/nvidia/version, modinfo nvidia); "
             "install the NVIDIA driver first.")
    else:
        for check, msg in nvfs_driver_problems(facts.get("nvfs_version"), driver, facts.get("arch", "x86_64")):
            fail(check, msg)
        for name in facts.get("extra_packages") or []:
            cuda = cuda_of_package(name)
            if cuda and not driver_supports_cuda(driver["version"], cuda):
                fail("driver_version", "%s (CUDA %s) needs NVIDIA driver >= %s; installed driver is %s."
                     % (name, cuda, CUDA_MIN_DRIVER[cuda.split(".", maxsplit=1)[0]], driver["version"]))
    if facts.get("nvfs_version_error"):
        fail("nvidia_fs_version", facts["nvfs_version_error"])
    sb_problem = secure_boot_problem(facts.get("secure_boot"), facts.get("mok") or {})
    if sb_problem:
        fail("secure_boot", sb_problem)
    return fails


# how the nvidia_fs stage ends its warning about an unsupported OS (gds_preflight, which says
# the same in a plan, recognizes it by this)
UNSUPPORTED_OS_GOING_ON = "; going on because unsupported_os=warn"


def unsupported_os(osr):
    """Why ``osr`` (parse_os_release) is outside the GDS OS table, or None when it is in it."""
    table = os_policy.supported_os("bare_metal")
    if os_policy.os_supported(osr.get("id"), osr.get("version_id"), table):
        return None
    return "%s is not an OS GDS supports (%s)" % (osr.get("pretty") or osr.get("id") or "unknown OS",
                                                  os_policy.supported_os_text(table))


def rebuild_reasons(facts):
    """Why the DKMS nvidia-fs build must be redone for the running kernel.
    facts: dkms_state (installed/built/added/None), built_driver, driver, built_at (mtime of
    the build's make.log), ofed_changed_at (ctime of ofed_info)."""
    out = []
    state = facts.get("dkms_state")
    if state != "installed":
        out.append("nvidia-fs %s is %s for kernel %s" % (facts.get("nvfs_version"), state or "not built",
                                                         facts.get("kernel")))
        return out
    drv = (facts.get("driver") or {}).get("version")
    if facts.get("built_driver") and drv and facts["built_driver"] != drv:
        out.append("nvidia-fs was built against NVIDIA driver %s, installed driver is %s"
                   % (facts["built_driver"], drv))
    if facts.get("built_at") and facts.get("ofed_changed_at") and facts["ofed_changed_at"] > facts["built_at"]:
        out.append("MOFED was installed or upgraded after nvidia-fs was built (PeerDirect support is "
                   "decided at build time)")
    return out


# --------------------------------------------------------------------------- collectors
def mtime(path, ctime=False):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ctime if ctime else st.st_mtime


def dkms_version_for(entries, pkg_version, module="nvidia-fs"):
    """DKMS version of nvidia-fs that belongs to the package version ``2.28.2-1``."""
    versions = sorted(set(e["version"] for e in entries if e["module"] == module))
    for v in versions:
        if pkg_version and (pkg_version == v or version_matches(pkg_version, v)):
            return v
    return versions[0] if len(versions) == 1 else None
