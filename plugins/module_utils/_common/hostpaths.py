# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Every host path the collection's modules read or write, in one re-rootable object.
PRIVATE to the collection.

The real paths are the defaults. Tests (and chroot/nspawn provisioning) point them elsewhere:
``HostPaths(root=..., proc_root=...)`` or the environment variables ``GPUDIRECT_HOST_ROOT``
(files under /etc, /usr, /var, /lib, /run) and ``GPUDIRECT_PROC_ROOT`` (/proc and /sys, which
cannot be bind-mounted on hosts without loadable modules). See docs/testing.md.

The environment variables (and ``GPUDIRECT_BIN_DIR``, read by ``_runner``) are test seams: a
root-run module that honoured them anywhere would read, write and execute whatever a task's
``environment:`` names. They are honoured only on a host that carries the lab marker
(:data:`LAB_MARKER`, a regular file owned by root and writable by nobody else), which lab/labctl
creates on every lab host; everywhere else they change nothing.
"""

from __future__ import annotations

import os
import stat

# Created by lab/labctl on lab hosts only. Not re-rootable and not configurable: a task cannot
# switch the seams on by its environment alone.
LAB_MARKER = "/etc/gpudirect-storage/lab-test-seams"
SEAM_VARIABLES = ("GPUDIRECT_HOST_ROOT", "GPUDIRECT_PROC_ROOT", "GPUDIRECT_BIN_DIR")
_MARKER_UID = 0


def seams_enabled(marker=None):
    """True only when the lab marker is a regular file owned by root that neither group nor
    others may write (a marker an unprivileged user could create would defeat the point)."""
    try:
        st = os.lstat(marker or LAB_MARKER)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == _MARKER_UID and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def seam(name, environ=None):
    """The value of test seam ``name`` from ``environ`` (default ``os.environ``), or None when it
    is unset or this host is no lab host."""
    value = (os.environ if environ is None else environ).get(name)
    return value if value and seams_enabled() else None


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
    "dpkg_admindir": ("file", "/var/lib/dpkg"),
    # mofed / nvidia_fs
    "proc": ("proc", "/proc"),
    "proc_locks": ("proc", "/proc/locks"),
    "dpkg_lock_backend": ("file", "/var/lib/dpkg/lock"),
    "rpm_lock": ("file", "/var/lib/rpm/.rpm.lock"),
    "apt_sources_d": ("file", "/etc/apt/sources.list.d"),
    "apt_lists": ("file", "/var/lib/apt/lists"),
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
        self.root = root if root is not None else seam("GPUDIRECT_HOST_ROOT", environ) or "/"
        if proc_root is None:
            proc_root = seam("GPUDIRECT_PROC_ROOT", environ) or self.root
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
