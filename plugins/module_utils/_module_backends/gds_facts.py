# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_facts orchestration: collectors, the probe child and the verdict into one facts dict.
PRIVATE to the collection. Target-side code: standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import time

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import targets
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel.secure_boot import mok_enrolment
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import verdict as verdict_mod
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.collectors import Collector

CHUNK = 16 << 20


LIMITS = {"probe_size_mb": (1, 65536), "probe_threads": (0, 64), "probe_device": (0, 1023), "probe_timeout": (5, 3600)}


def argument_spec():
    return dict(
        probe=dict(type="bool", default=True),
        probe_path=dict(type="list", elements="path", default=[targets.AUTO]),
        probe_size_mb=dict(type="int", default=64),
        probe_threads=dict(type="int", default=0),
        probe_throughput=dict(type="bool", default=False),
        probe_device=dict(type="int", default=0),
        probe_timeout=dict(type="int", default=60),
        require_mode=dict(type="str", choices=["gds", "p2pdma", "compat"]),
        require_proven=dict(type="bool", default=True),
        cufile_lib=dict(type="path"),
        cufile_env_path_json=dict(type="path"),
        gather_cuda=dict(type="bool", default=True),
        mok_cert=dict(type="path"),
    )


def check_params(params):
    """Error text for bad options (naming the option), or None."""
    for name, (low, high) in LIMITS.items():
        if not low <= params[name] <= high:
            return "%s=%s is out of range: it must be between %d and %d" % (name, params[name], low, high)
    if params["probe"] and not params["probe_path"]:
        return "probe_path must name at least one directory when probe=true"
    if params["probe_path"] == [targets.AUTO]:
        return None
    for path in params["probe_path"]:
        if path == targets.AUTO:
            return "probe_path: auto stands alone (it picks the directories itself), not beside other paths"
        if not path.startswith("/"):
            return "probe_path entry %r must be an absolute path (or probe_path: auto)" % path
    return None


def _child_env(libs, env_path, environ):
    env = {}
    if env_path:
        env["CUFILE_ENV_PATH_JSON"] = env_path
    lib = libs["libcufile"].get("path")
    if lib:
        old = environ.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = os.path.dirname(lib) + (":" + old if old else "")
    return env


def merge_path_verdicts(probe, verdicts):
    """Put each path's verdict (mode, reasons, proven, nvfs counter delta) into its probe entry
    and drop the raw nvidia-fs stats texts the child returned (the delta says what they showed)."""
    by_path = dict((v["path"], v) for v in verdicts)
    for entry in probe.get("paths") or []:
        entry.pop("nvfs_stats", None)
        v = by_path.get(entry.get("path"))
        if v:
            entry.update(mode=v["mode"], reasons=v["reasons"], proven=v["proven"], nvfs_delta=v.get("nvfs_delta"))


def preflight_paths(storage, size):
    """(paths to probe, error entries for the others): a missing directory, one other users can
    write without the sticky bit, or too little free space is reported without writing anything."""
    ok = []
    skipped = []
    for info in storage:
        problem = None
        if not info.get("exists"):
            problem = "probe_path %s does not exist or is not a directory" % info["path"]
        elif targets.shared_writable(info):
            problem = targets.shared_writable(info)
        elif info.get("free_bytes") is not None and info["free_bytes"] < size + (size >> 4) + (16 << 20):
            problem = "only %d MiB free on %s, the probe needs %d MiB" % (
                info["free_bytes"] >> 20, info.get("mount_point") or info["path"], size >> 20)
        if problem:
            skipped.append({"path": info["path"], "ok": False,
                            "error": {"step": "preflight", "kind": "preflight", "message": problem}})
        else:
            ok.append(info["path"])
    return ok, skipped


def throughput_summary(entry, size_mb):
    """``gds.throughput`` from the probe entry of the weakest path: the default probe's GB/s,
    the storage's own O_DIRECT GB/s into host memory (same file, same run) and their ratio, and
    the throughput mode's figures when it ran (``tuned``, else None)."""
    entry = entry or {}
    direct = entry.get("host_direct") or {}
    ratios = entry.get("storage_ratio") or {}
    out = {"write_gbps": entry.get("write_gbps"), "read_gbps": entry.get("read_gbps"), "size_mb": size_mb,
           "storage_write_gbps": direct.get("write_gbps"), "storage_read_gbps": direct.get("read_gbps"),
           "write_ratio": ratios.get("write"), "read_ratio": ratios.get("read"), "tuned": None}
    tuned = entry.get("tuned")
    if tuned:
        t_direct = tuned.get("host_direct") or {}
        t_ratios = tuned.get("storage_ratio") or {}
        out["tuned"] = {"write_gbps": tuned.get("write_gbps"), "read_gbps": tuned.get("read_gbps"),
                        "write_plan": tuned.get("write_label"), "read_plan": tuned.get("read_label"),
                        "storage_write_gbps": t_direct.get("write_gbps"), "storage_read_gbps": t_direct.get("read_gbps"),
                        "write_ratio": t_ratios.get("write"), "read_ratio": t_ratios.get("read"),
                        "verified": bool((tuned.get("verify") or {}).get("ok")), "error": tuned.get("error")}
    return out


def _probe_args(params, libs, nvfs, want_probe, want_nvml, paths):
    return {
        "cuda_lib": libs.get("libcuda") or "libcuda.so.1",
        "nvml_lib": (libs.get("libnvidia_ml") or "libnvidia-ml.so.1") if want_nvml else None,
        "cufile_lib": libs["libcufile"].get("path") if want_probe else None,
        "probe": want_probe,
        "paths": paths,
        "size": params["probe_size_mb"] << 20,
        "threads": params["probe_threads"],
        "throughput": bool(params.get("probe_throughput")),
        "chunk": CHUNK,
        "device": params["probe_device"],
        "nvfs_stats": nvfs.get("stats_path"),
        "timeout": params["probe_timeout"],
    }


def gather(params, paths, runner, environ=None, tmp_root=None, python=None):
    """All gds facts of this host (the value of ``ansible_facts.gds``), verdict included.

    ``params``: probe, probe_path (list), probe_size_mb, probe_threads, probe_device,
    probe_timeout, cufile_lib, cufile_env_path_json, gather_cuda.
    """
    t0 = time.time()
    environ = os.environ if environ is None else environ
    col = Collector(paths, runner, environ)
    modules = col.kernel_modules()
    nvidia = col.nvidia_driver(modules)
    nvfs = col.nvidia_fs(modules)
    libs = col.libraries(params.get("cufile_lib"))
    cufile = col.cufile_configs(params.get("cufile_env_path_json"))
    mounts = parse.parse_mounts(col.read("proc_mounts", ""))
    probe_paths, auto, auto_warning = targets.resolve(params["probe_path"], mounts, col.block_of)
    facts = {
        "host": col.host_info(),
        "kernel": {"release": paths.kernel_release(), "modules": modules},
        "nvidia": nvidia,
        "gpus": [],
        "nvidia_fs": nvfs,
        "libcufile": libs["libcufile"],
        "cufile": cufile,
        "storage": {"nvme": col.nvme(), "iommu": col.iommu(),
                    "probe_paths": [col.storage(p, mounts) for p in probe_paths], "auto": auto},
        "secure_boot": col.secure_boot(),
        "ofed": col.ofed(),
        "warnings": [auto_warning] if auto_warning else [],
    }
    if facts["secure_boot"] == "enabled":  # would the DKMS-built nvidia-fs load? (gds_preflight asks)
        facts["mok"] = mok_enrolment(runner, paths, params.get("mok_cert"))
    driver_evidence = nvidia["driver_loaded"] or libs["libcuda"] is not None
    want_probe = bool(params["probe"] and libs["libcufile"].get("path") and driver_evidence)
    # NVML is read in the child only when libnvidia-ml is on the library path: the child is a
    # second Python process, and dlopen would not find the library either (then nvidia-smi is asked)
    want_nvml = bool(params["gather_cuda"] and driver_evidence and libs["libnvidia_ml"])
    probe = {"enabled": bool(params["probe"]), "ran": False, "size_mb": params["probe_size_mb"],
             "threads": params["probe_threads"], "throughput_mode": bool(params.get("probe_throughput")), "paths": []}
    t1 = time.time()
    result = {}
    paths_ok, skipped = preflight_paths(facts["storage"]["probe_paths"], params["probe_size_mb"] << 20)
    if want_probe and not paths_ok:
        want_probe = False
        probe.update(ran=True, paths=skipped)
    if want_probe or want_nvml:
        # imported here: the probe program is compiled on the target only when a child runs
        from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_child as child
        run = child.run_child(runner, _probe_args(params, libs, nvfs, want_probe, want_nvml, paths_ok), tmp_root,
                              _child_env(libs, params.get("cufile_env_path_json"), environ), python)
        result = run.pop("result") or {}
        if want_probe:
            probe.update(run)
            probe["ran"] = True
            done = result.get("probe") or {}
            for key in ("cuda", "cufile", "paths", "error", "timing"):
                if done.get(key) is not None:
                    probe[key] = done[key]
            probe["paths"] = list(probe.get("paths") or []) + skipped
            if result.get("error") and not probe.get("error"):
                probe["error"] = result["error"]
    probe["child_s"] = round(time.time() - t1, 4)
    nvml = result.get("nvml") or {}
    nvidia["nvml_ok"] = bool(nvml) and not nvml.get("error")
    if nvml.get("error"):
        nvidia["nvml_error"] = nvml["error"]
    elif params["gather_cuda"] and driver_evidence and not want_nvml:
        nvidia["nvml_error"] = "libnvidia-ml.so.1 not found in the library path"
    if nvml.get("cuda_driver_version"):
        nvidia["cuda_driver_version"] = parse.decode_cuda_version(nvml["cuda_driver_version"])
    elif (probe.get("cuda") or {}).get("driver_version"):
        nvidia["cuda_driver_version"] = parse.decode_cuda_version(probe["cuda"]["driver_version"])
    if nvidia["nvml_ok"]:
        facts["gpus"] = nvml.get("gpus") or []
        nvidia["driver_version"] = nvidia["driver_version"] or nvml.get("driver_version")
    elif nvidia["driver_loaded"]:
        facts["gpus"] = col.gpus_from_smi() or []
    if (probe.get("cufile") or {}).get("api_version") is not None:
        facts["libcufile"]["api_version"] = probe["cufile"]["api_version"]
    facts["probe"] = probe
    verdict = verdict_mod.verdict(facts)
    facts.update(mode=verdict["mode"], reason=verdict["reason"], reasons=verdict["reasons"],
                 verified=verdict["verified"], proven=verdict["proven"])
    merge_path_verdicts(probe, verdict.get("paths") or [])
    worst = next((p for p in probe["paths"] if p.get("mode") == verdict["mode"]), None)
    facts["throughput"] = throughput_summary(worst, params["probe_size_mb"] if probe["ran"] else None)
    facts["versions"] = {
        "kernel": facts["kernel"]["release"], "nvidia_driver": nvidia.get("driver_version"),
        "nvidia_kernel_module": nvidia.get("kernel_module_flavor"), "cuda_driver": nvidia.get("cuda_driver_version"),
        "libcufile": facts["libcufile"].get("version"), "nvidia_fs": nvfs.get("version"),
        "ofed": (facts["ofed"] or {}).get("version"),
    }
    facts["timing"] = {"collect_s": round(t1 - t0, 4), "child_s": probe["child_s"], "total_s": round(time.time() - t0, 4)}
    return facts
