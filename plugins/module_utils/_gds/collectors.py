# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_facts collectors: read the host through HostPaths and Runner only. PRIVATE.

Everything here reads files through :class:`_common.hostpaths.HostPaths` (re-rootable with
GPUDIRECT_HOST_ROOT / GPUDIRECT_PROC_ROOT) and runs commands through :class:`_common.runner.Runner`;
the parsing is in _gds.parse, the verdict in _gds.verdict, the probe child in _gds.probe_child /
_gds.probe, and _module_backends.gds_facts puts them together. No GPU library is ever loaded in this process.
"""

from __future__ import annotations

import glob
import hashlib
import os
import re
import stat
import sys

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.targets import classify
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostparse import (
    ofed_info, parse_os_release, parse_proc_modules)
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import secure_boot

MODULES_OF_INTEREST = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_fs", "nvidia_peermem", "nvme",
                       "nvme_core", "nvme_rdma", "nvme_fabrics", "ib_core", "ib_uverbs", "rdma_cm",
                       "rdma_ucm", "mlx5_core", "mlx5_ib")
MAX_CONFIG_BYTES = 256 * 1024
STANDARD_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
                     "/usr/lib64", "/lib64", "/usr/lib", "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib")
LIBS = {"libcufile": ("libcufile.so.0", "libcufile.so"), "libcuda": ("libcuda.so.1",),
        "libnvidia_ml": ("libnvidia-ml.so.1",)}


def names_starting(directory, prefix):
    """The sorted paths of the entries of ``directory`` whose name starts with ``prefix`` ([] when
    it cannot be listed). A prefix test per name: a library directory holds thousands."""
    try:
        with os.scandir(directory) as entries:
            return sorted(os.path.join(directory, e.name) for e in entries if e.name.startswith(prefix))
    except OSError:
        return []


class Collector(object):
    """Reads one host. ``paths``: HostPaths; ``runner``: Runner; ``environ``: the module's
    environment (LD_LIBRARY_PATH, CUFILE_ENV_PATH_JSON)."""

    def __init__(self, paths, runner, environ=None):
        self.paths = paths
        self.runner = runner
        self.environ = os.environ if environ is None else environ

    def read(self, path, default=None):
        return self.paths.read(path, default)

    def host_info(self):
        """OS, architecture, Python and free space on / (what preflight checks need)."""
        try:
            root = os.statvfs(self.paths.under_root("/"))
        except OSError:
            root = None
        return {"os": parse.host_os(parse_os_release(self.read("os_release", ""))),
                "architecture": os.uname()[4],
                "python": "%d.%d.%d" % sys.version_info[:3],
                "free_mb": {"/": parse.free_mb(root)}}

    def host(self, path):
        return self.paths.under_root(path)

    # -- kernel ------------------------------------------------------------------------------
    def kernel_modules(self):
        text = self.read("proc_modules")
        loaded = parse_proc_modules(text) if text is not None else None
        out = {"source": "/proc/modules" if loaded is not None else "/sys/module"}
        for name in MODULES_OF_INTEREST:
            if loaded is not None:
                out[name] = name in loaded
            else:  # CONFIG_MODULES off: built-in drivers still show up in /sys/module
                out[name] = os.path.isdir(os.path.join(self.paths.sys_module, name))
        return out

    def nvidia_driver(self, modules):
        proc_dir = self.paths.nvidia_proc
        text = self.read(os.path.join(proc_dir, "version"))
        taint = self.read(os.path.join(self.paths.sys_module, "nvidia", "taint"))
        info = parse.parse_nvidia_version(text, taint)
        loaded = bool(modules.get("nvidia") or text is not None)
        return {"driver_loaded": loaded, "driver_version": info["version"],
                "kernel_module_flavor": info["flavor"] if loaded else None, "banner": info["banner"]}

    def nvidia_fs(self, modules):
        base = self.paths.nvidia_fs_proc
        version = parse.parse_nvfs_version(self.read(os.path.join(base, "version")))
        stats_text = self.read(os.path.join(base, "stats"))
        stats = parse.parse_nvfs_stats(stats_text) if stats_text else None
        params = {}
        pdir = os.path.join(self.paths.sys_module, "nvidia_fs", "parameters")
        for name in ("rw_stats_enabled", "peer_stats_enabled"):
            val = self.read(os.path.join(pdir, name))
            if val is not None:
                params[name] = val.strip()
        return {"loaded": bool(modules.get("nvidia_fs") or version), "version": version,
                "stats_path": os.path.join(base, "stats") if stats_text is not None else None,
                "rw_stats_enabled": (stats or {}).get("rw_stats_enabled", params.get("rw_stats_enabled") == "1"),
                "stats": stats, "parameters": params}

    def iommu(self):
        groups = self.paths.sys_iommu_groups
        try:
            count = len(os.listdir(groups))
        except OSError:
            count = 0
        return parse.parse_iommu(self.read("proc_cmdline", ""), count)

    def secure_boot(self):
        """``enabled``, ``disabled``, or ``unknown`` (no such efivar: BIOS boot, no efivarfs)."""
        enabled = secure_boot.secure_boot_enabled(self.paths)
        return "unknown" if enabled is None else ("enabled" if enabled else "disabled")

    def nvme(self):
        base = self.paths.sys_class_nvme
        out = []
        try:
            names = sorted(os.listdir(base))
        except OSError:
            return out
        for name in names:
            d = os.path.join(base, name)
            dev = {"name": name}
            for attr in ("model", "serial", "firmware_rev", "transport", "address"):
                val = self.read(os.path.join(d, attr))
                if val is not None:
                    dev[attr] = val.strip()
            try:
                dev["namespaces"] = sorted(n for n in os.listdir(d) if re.match(r"^nvme\d+(c\d+)?n\d+$", n))
            except OSError:
                dev["namespaces"] = []
            out.append(dev)
        return out

    # -- storage of a probe path ---------------------------------------------------------------
    def storage(self, path, mounts):
        info = {"path": path, "exists": os.path.isdir(path)}
        real = os.path.realpath(path)
        info["realpath"] = real
        mnt = parse.find_mount(mounts, real)
        if mnt:
            info.update(mount_point=mnt["mount_point"], fstype=mnt["fstype"], device=mnt["device"],
                        options=mnt["options"])
        if not info["exists"]:
            return info
        st = os.stat(real)
        info.update(mode="%04o" % stat.S_IMODE(st.st_mode), owner_uid=st.st_uid)
        major, minor = os.major(st.st_dev), os.minor(st.st_dev)
        info["dev"] = "%d:%d" % (major, minor)
        link = os.path.join(self.paths.sys_dev_block, info["dev"])
        try:
            info["block_device"] = os.path.basename(os.path.realpath(link)) if os.path.exists(link) else None
        except OSError:
            info["block_device"] = None
        if info["block_device"] is None and mnt and mnt["device"].startswith("/dev/"):
            info["block_device"] = os.path.basename(mnt["device"])
        info["transport"] = parse.block_transport(info["block_device"]) if major != 0 else "none"
        if major != 0:
            udev_path = os.path.join(self.paths.udev_data, "b" + info["dev"])
            text = self.read(udev_path)
            props = parse.parse_udev_data(text) if text is not None else {}
            info["udev"] = {"path": udev_path, "present": text is not None, "id_fs_usage": props.get("ID_FS_USAGE")}
        try:
            vfs = os.statvfs(real)
            info["free_bytes"] = vfs.f_bavail * vfs.f_frsize
            info["size_bytes"] = vfs.f_blocks * vfs.f_frsize
        except OSError:
            pass
        info["class"] = classify(info)
        return info

    def block_of(self, mnt):
        """Kernel block device name (``nvme0n1p1``, ``dm-0``) of a mount, or None: the device
        named in /proc/self/mounts when /sys/block knows it, else (on the real host only) the
        one /sys/dev/block names for the mount point's st_dev (/dev/root, /dev/mapper/...),
        else the name in /proc/self/mounts as it stands."""
        dev = mnt.get("device") or ""
        name = None
        if dev.startswith("/dev/"):
            name = os.path.basename(os.path.realpath(dev) if self.paths.root == "/" else dev)
        block = self.paths.sys_block
        if name and (os.path.exists(os.path.join(block, name)) or glob.glob(os.path.join(block, "*", name))):
            return name
        if self.paths.proc_root == "/":
            try:
                st = os.stat(mnt["mount_point"])
                link = os.path.join(self.paths.sys_dev_block, "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev)))
                if os.path.exists(link):
                    return os.path.basename(os.path.realpath(link))
            except OSError:
                pass
        return name  # the name /proc/self/mounts gives (a re-rooted /sys does not know it)

    # -- libraries and cufile.json ---------------------------------------------------------------
    def library_dirs(self):
        dirs = [d for d in (self.environ.get("LD_LIBRARY_PATH") or "").split(":") if d]
        cuda = self.host("/usr/local/cuda")
        versioned = sorted(glob.glob(self.host("/usr/local/cuda-*")), key=lambda p: parse.cuda_dir_version(p) or (0, 0),
                           reverse=True)
        for base in [cuda] + versioned:
            dirs += [os.path.join(base, "lib64"), os.path.join(base, "targets", "x86_64-linux", "lib")]
        dirs += self.ld_so_conf_dirs()
        dirs += [self.host(d) for d in STANDARD_LIB_DIRS]
        seen = []
        for d in dirs:
            if d not in seen:
                seen.append(d)
        return seen

    def ld_so_conf_dirs(self, conf="/etc/ld.so.conf", depth=0):
        out = []
        text = self.read(self.host(conf)) or ""
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("include") and depth < 3:
                pattern = line.split(None, 1)[1] if len(line.split(None, 1)) > 1 else ""
                for inc in sorted(glob.glob(self.host(pattern if pattern.startswith("/") else "/etc/" + pattern))):
                    rel = "/" + os.path.relpath(inc, self.paths.root) if self.paths.root != "/" else inc
                    out += self.ld_so_conf_dirs(rel, depth + 1)
            elif line.startswith("/"):
                out.append(self.host(line))
        return out

    def libraries(self, cufile_lib=None):
        dirs = self.library_dirs()
        out = {}
        for key, names in LIBS.items():
            found = []
            for d in dirs:
                for name in names:
                    p = os.path.join(d, name)
                    if os.path.exists(p) and os.path.realpath(p) not in [os.path.realpath(f) for f in found]:
                        found.append(p)
            out[key] = found
        cands = out["libcufile"]
        if cufile_lib:
            chosen = cufile_lib if os.path.exists(cufile_lib) else None
        else:
            chosen = cands[0] if cands else None
        real = os.path.realpath(chosen) if chosen else None
        used = [os.path.realpath(c) for c in cands]
        skipped = [{"path": p, "why": "no %s link to it" % " or ".join(LIBS["libcufile"])}
                   for d in dirs for p in names_starting(d, "libcufile.so.")
                   if os.path.basename(p) not in LIBS["libcufile"] and os.path.realpath(p) not in used
                   and not os.path.islink(p)]
        return {
            "libcufile": {"path": chosen, "realpath": real, "version": parse.soname_version(real),
                          "candidates": [{"path": c, "version": parse.soname_version(os.path.realpath(c))} for c in cands],
                          "searched": dirs if not chosen else None, "override": cufile_lib,
                          "override_missing": bool(cufile_lib) and not chosen, "skipped": skipped},
            "libcuda": out["libcuda"][0] if out["libcuda"] else None,
            "libnvidia_ml": out["libnvidia_ml"][0] if out["libnvidia_ml"] else None,
        }

    def cufile_configs(self, env_path=None):
        env_path = env_path or self.environ.get("CUFILE_ENV_PATH_JSON") or None
        files = [("global", self.paths.cufile_json, "/etc/cufile.json")]
        if env_path:
            files.append(("overlay", env_path, env_path))
        out = {"env_path_json": env_path, "files": []}
        for role, path, shown in files:
            entry = {"path": shown, "role": role, "exists": os.path.isfile(path)}
            if entry["exists"]:
                entry["realpath"] = os.path.realpath(path)
                try:
                    with open(path, "rb") as f:
                        data = f.read(MAX_CONFIG_BYTES + 1)
                    entry["size"] = len(data)
                    entry["sha256"] = hashlib.sha256(data).hexdigest()
                    entry["truncated"] = len(data) > MAX_CONFIG_BYTES
                    entry["text"] = data[:MAX_CONFIG_BYTES].decode("utf-8", "replace")
                except (IOError, OSError) as exc:
                    entry["error"] = str(exc)
            elif role == "overlay":
                entry["note"] = "missing: libcufile silently uses /etc/cufile.json alone"
            out["files"].append(entry)
        out["effective"] = static_effective(out["files"])
        return out

    def ofed(self):
        return ofed_info(self.runner)

    def gpus_from_smi(self):
        res = self.runner.run(["nvidia-smi", "--query-gpu=index,name,uuid,pci.bus_id,driver_version",
                               "--format=csv,noheader"], check=False)
        if res.rc != 0:
            return None
        gpus = parse.parse_nvidia_smi_csv(res.stdout)
        mem = self.runner.run(["nvidia-smi", "-q", "-d", "MEMORY"], check=False)
        if mem.rc == 0:
            sizes = parse.parse_nvidia_smi_memory(mem.stdout)
            by_bus = dict((parse.normalize_bus_id(k), v) for k, v in sizes.items() if k)
            for gpu in gpus:
                gpu.update(by_bus.get(parse.normalize_bus_id(gpu["pci_bus_id"]), {}))
        return gpus


def static_effective(files):
    """The few keys the verdict needs from the cufile.json files (global, then the overlay), as
    libcufile merges them; used when no probe reads the effective values back."""
    try:
        from ansible_collections.gpudirect.storage.plugins.module_utils._cufile import parser as cfp
    except ImportError:
        return {}
    doc = {}
    for entry in files:
        if entry.get("text") is None:
            continue
        try:
            doc = cfp.deep_merge(doc, cfp.loads(entry["text"]), null_deletes=False)
        except ValueError:
            return {"parse_error": entry["path"]}
    props = doc.get("properties") if isinstance(doc.get("properties"), dict) else {}
    return dict((k, props[k]) for k in ("allow_compat_mode", "force_compat_mode", "use_pci_p2pdma") if k in props)
