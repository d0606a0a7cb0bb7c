# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gds_facts verdict: which data path a host really uses, and why. PRIVATE to the collection.

Pure functions over the collected facts and the probe result (no host access), so every
outcome (gds, p2pdma, compat, unavailable, failed) is unit-tested. Error numbers are always
turned into names (errors.py: cufile.h CUfileOpError, CUDA driver CUresult, errno): a verdict
never says just "5027".
"""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.releases import (
    SHIPPED_RELEASE, known_releases, release_of)

MODES = ("gds", "p2pdma", "compat", "unavailable", "failed")
RANK = {"gds": 3, "p2pdma": 2, "compat": 1, "failed": 0, "unavailable": 0}
REQUIRABLE = ("gds", "p2pdma", "compat")


def libcufile_release(lib):
    """(release, note): THE libcufile release of a host, for its verdict and for the controller's
    cufile.json validation. ``lib``: the facts' ``libcufile``. The release its file name carries
    (``libcufile.so.1.15.1``), else the one the loaded library answered (``api_version``, its
    cuFileGetVersion in the probe child: a pip wheel's ``libcufile.so.0`` has no version in its
    name). None, with the note, when that release is unknown to the collection or nothing said
    it; the release with a shipped file, with the note, when no libcufile was found."""
    version, api = lib.get("version"), lib.get("api_version")
    if version or api is not None:
        release = release_of(version) if version else release_of(api)
        if release:
            return release, None
        shown = version or "%d.%d (cuFileGetVersion %d)" % (api // 1000, (api % 1000) // 10, api)
        return None, ("not validated: the host's libcufile %s is unknown to the collection (known releases: %s)"
                      % (shown, ", ".join(known_releases())))
    if lib.get("path"):
        return None, ("not validated: the host's libcufile %s carries no version in its file name and the probe did "
                      "not reach its cuFileGetVersion (run the probe)" % lib["path"])
    return SHIPPED_RELEASE, ("no libcufile found on the host: validated against libcufile %s, the newest release the "
                             "collection has a shipped file of" % SHIPPED_RELEASE)


def with_config_errors(facts, messages):
    """A failed verdict with the cufile.json errors the controller's validator found (the likely
    cause of the failure) as its last reasons: how they join the verdict is decided here, with
    the rest of the verdict, not by the validator's caller."""
    if facts.get("mode") == "failed" and messages:
        facts["reasons"] = list(facts.get("reasons") or []) + ["cufile.json: " + m for m in messages[:3]]
        facts["reason"] = "; ".join(facts["reasons"])
    return facts


def meets(mode, required):
    """True when ``mode`` is at least ``required`` (gds > p2pdma > compat). The mode only: a
    requirement is held with :func:`gate`, which also asks for the I/O."""
    if not required:
        return True
    return RANK.get(mode, 0) >= RANK[required] and mode in REQUIRABLE


NOTHING_WRITTEN = "nothing was written, read back and compared"


def gate(facts, require_mode, require_proven=True):
    """(ok, why): is the verdict in ``facts`` (the gds facts: mode, verified, proven, reason,
    probe) good enough for ``require_mode``? THE gate of the collection (gds_facts, gds_plan,
    the gds_verify role, the fleet report's ready count, the Kubernetes node probe).

    A requirement is met only by a verified probe (bytes written, read back, compared equal);
    ``gds`` also needs the path proven by the nvidia-fs Writes/Reads counters, unless
    ``require_proven`` is false (weaker: trusts "nvidia_fs loaded, no compat fallback logged").
    An inferred verdict (probe=false) never meets a requirement. ``why`` is None when met."""
    if not require_mode:
        return True, None
    if require_mode not in REQUIRABLE:
        raise ValueError("require_mode must be one of %s, not %r" % (", ".join(REQUIRABLE), require_mode))
    mode = facts.get("mode")
    reason = facts.get("reason") or "no reason given"
    probe = facts.get("probe") if isinstance(facts.get("probe"), dict) else {}
    inferred = probe.get("enabled") is False
    if not meets(mode, require_mode):
        why = "GDS verdict %s is weaker than the required %s: %s" % (mode, require_mode, reason)
        if not facts.get("verified") and "nothing was written" not in why:
            why += " (%s)" % ("inferred without a probe (probe=false): nothing was written" if inferred
                              else NOTHING_WRITTEN)
        return False, why
    if inferred:
        return False, ("GDS verdict %s was inferred without a probe (probe=false): nothing was written, so it "
                       "cannot meet require_mode=%s; run the probe (probe=true)" % (mode, require_mode))
    if not facts.get("verified"):
        return False, "GDS verdict %s is not verified (%s): %s" % (mode, NOTHING_WRITTEN, reason)
    if require_mode == "gds" and require_proven and not facts.get("proven"):
        return False, ("GDS verdict gds is not proven: the nvidia-fs Writes/Reads counters did not show the probe's "
                       "I/O (load nvidia_fs with rw_stats_enabled=1), or set require_proven=false to accept an "
                       "unproven gds (weaker): %s" % reason)
    return True, None


def _result(mode, reasons, **extra):
    out = {"mode": mode, "reasons": [r for r in reasons if r], "verified": False, "proven": False}
    out["reason"] = "; ".join(out["reasons"])
    out.update(extra)
    return out


def _inferred(facts):
    """Mode without a probe (probe=false): from loaded modules and the static cufile.json."""
    nvfs = (facts.get("nvidia_fs") or {}).get("loaded")
    cfg = (facts.get("cufile") or {}).get("effective") or {}
    note = "inferred without a probe (probe=false): nothing was written or read"
    if cfg.get("force_compat_mode"):
        return _result("compat", ["properties.force_compat_mode is true", note])
    if nvfs:
        return _result("gds", ["nvidia_fs is loaded", note])
    if cfg.get("use_pci_p2pdma"):
        return _result("p2pdma", ["nvidia_fs not loaded, properties.use_pci_p2pdma is true", note])
    return _result("compat", ["nvidia_fs kernel module not loaded", note])


def driver_seen(facts):
    """Any sign of the NVIDIA driver: the kernel module, NVML answering, a driver version, GPUs."""
    nvidia = facts.get("nvidia") or {}
    return bool(nvidia.get("driver_loaded") or nvidia.get("nvml_ok") or nvidia.get("driver_version")
                or facts.get("gpus"))


def libcufile_missing(lib):
    """Why no libcufile was used: a missing override, the files found but not used (and why), the
    directories searched; with the variable that points the probe at a library."""
    if lib.get("override_missing"):
        return ("libcufile not found: gds_verify_cufile_lib is %s, which does not exist on the host; fix the path or "
                "set gds_verify_cufile_lib: \"\" to search the usual places" % lib.get("override"))
    text = "libcufile not found"
    skipped = lib.get("skipped") or []
    if skipped:
        text += ": found %s but did not use %s; create the link (ldconfig, or install the libcufile package) or " \
                "set gds_verify_cufile_lib: %s" % (", ".join("%s (%s)" % (s["path"], s["why"]) for s in skipped),
                                                   "it" if len(skipped) == 1 else "them", skipped[0]["path"])
    return text + " (searched %s)" % ", ".join(lib.get("searched") or [])


def _missing(facts):
    """Every missing component the facts show missing (never one they show present), driver first."""
    nvidia = facts.get("nvidia") or {}
    lib = facts.get("libcufile") or {}
    reasons = []
    if not driver_seen(facts):
        reasons.append("no NVIDIA driver: the nvidia kernel module is not loaded and /proc/driver/nvidia is missing")
    elif facts.get("gpus") == [] and nvidia.get("nvml_ok"):
        reasons.append("no NVIDIA GPU: NVML reports 0 devices")
    if not lib.get("path"):
        if not reasons and facts.get("gpus") == []:  # unavailable anyway: a missing GPU is said first
            reasons.append("no NVIDIA GPU found (%s)" % (nvidia.get("nvml_error") or "NVML unavailable"))
        reasons.append(libcufile_missing(lib))
    return reasons


def verdict(facts):
    """The host's mode from the gathered facts (see _module_backends.gds_facts.gather for their shape)."""
    probe = facts.get("probe") or {}
    if probe.get("ran"):
        # imported here: only a probe that ran left errors, logs and paths to judge
        from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_verdict
        return probe_verdict.verdict(facts)
    missing = _missing(facts)
    if missing:
        return _result("unavailable", missing)
    if probe.get("enabled"):
        return _result("unavailable", ["the probe did not run: " + (
            "no result from the probe child" if (facts.get("nvidia") or {}).get("driver_loaded") else
            "the nvidia kernel module is not loaded and libcuda.so.1 was not found in the library path")])
    return _inferred(facts)
