# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Every host path the collection's modules read or write, in one re-rootable object.
PRIVATE to the collection.

The real paths are the defaults. Tests (and chroot/nspawn provisioning) point them elsewhere:
``HostPaths(root=..., proc_root=...)`` or the environment variables ``GPUDIRECT_HOST_ROOT``
(files under /etc, /usr, /var, /lib, /run) and ``GPUDIRECT_PROC_ROOT`` (/proc and /sys, which
cannot be bind-mounted on hosts without loadable modules). See docs/testing.md.
"""

from __future__ import annotations

import os

# name -> (kind, absolute path on a real host). kind "proc" is re-rooted by proc_root.
PATHS = {
    "proc_modules": ("proc", "/proc/modules"),
    "proc_mounts": ("proc", "/proc/self/mounts"),
    "proc_cmdline": ("proc", "/proc/cmdline"),
    "proc_osrelease": ("proc", "/proc/sys/kernel/osrelease"),
    "nvidia_fs_proc": ("proc", "/proc/driver/nvidia-fs"),
    "nvidia_proc": ("proc", "/proc/driver/nvidia"),
    "sys_module": ("proc", "/sys/module"),
    "sys_block": ("proc", "/sys/block"),
    "sys_dev_block": ("proc", "/sys/dev/block"),
    "sys_class_nvme": ("proc", "/sys/class/nvme"),
    "sys_iommu_groups": ("proc", "/sys/kernel/iommu_groups"),
    "efivars": ("proc", "/sys/firmware/efi/efivars"),
    "udev_data": ("file", "/run/udev/data"),
    "modules_load_d": ("file", "/etc/modules-load.d"),
    "modprobe_d": ("file", "/etc/modprobe.d"),
    "cufile_json": ("file", "/etc/cufile.json"),
    "os_release": ("file", "/etc/os-release"),
    "dkms_tree": ("file", "/var/lib/dkms"),
    "lib_modules": ("file", "/lib/modules"),
    "dpkg_lock": ("file", "/var/lib/dpkg/lock-frontend"),
    # mofed / nvidia_fs (issue 6)
    "proc": ("proc", "/proc"),
    "proc_locks": ("proc", "/proc/locks"),
    "dpkg_lock_backend": ("file", "/var/lib/dpkg/lock"),
    "rpm_lock": ("file", "/var/lib/rpm/.rpm.lock"),
    "apt_sources_d": ("file", "/etc/apt/sources.list.d"),
    "yum_repos_d": ("file", "/etc/yum.repos.d"),
    "dkms_framework_d": ("file", "/etc/dkms/framework.conf.d"),
    "ofed_info_bin": ("file", "/usr/bin/ofed_info"),
}


def _join(root, path):
    if not root or root == "/":
        return path
    return os.path.join(root, path.lstrip("/"))


class HostPaths(object):
    """Attribute access gives the effective path: ``HostPaths().proc_modules``."""

    def __init__(self, root=None, proc_root=None, environ=None):
        env = os.environ if environ is None else environ
        self.root = root if root is not None else env.get("GPUDIRECT_HOST_ROOT", "/") or "/"
        if proc_root is None:
            proc_root = env.get("GPUDIRECT_PROC_ROOT") or self.root
        self.proc_root = proc_root

    def __getattr__(self, name):
        try:
            kind, path = PATHS[name]
        except KeyError:
            raise AttributeError(name)
        return _join(self.proc_root if kind == "proc" else self.root, path)

    def under_root(self, path):
        """An arbitrary absolute host path under the file root."""
        return _join(self.root, path)

    def read(self, name_or_path, default=None):
        """Text of a host file (by PATHS name or absolute path), or ``default`` if unreadable."""
        path = getattr(self, name_or_path) if name_or_path in PATHS else name_or_path
        try:
            with open(path, "r") as f:
                return f.read()
        except (IOError, OSError):
            return default

    def kernel_release(self):
        """Running kernel release; the proc file wins so tests can fake it."""
        text = self.read("proc_osrelease")
        return text.strip() if text else os.uname()[2]
