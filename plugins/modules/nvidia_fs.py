#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: nvidia_fs
short_description: Install, build, load and persist the nvidia-fs (GPUDirect Storage) kernel module
version_added: 0.1.0
description:
  - Ensures C(nvidia-fs-dkms) and C(nvidia-fs) (optionally C(libcufile-<cuda>), C(gds-tools-<cuda>) or C(nvidia-gds))
    are installed at a version that works with the installed NVIDIA driver, that DKMS built the module for the
    running kernel (rebuilding it when the driver changed or MOFED was installed after the build), loads it with
    C(modprobe) and persists it in C(/etc/modules-load.d/nvidia-fs.conf) and C(/etc/modprobe.d/nvidia-fs.conf).
  - Before changing anything it runs preflight checks and fails with every problem found, leaving the host
    unchanged. proprietary NVIDIA module where the nvidia-fs version needs the open one; driver too old for
    the nvidia-fs / CUDA packages; Secure Boot on with no enrolled signing key; missing kernel headers;
    MLNX_OFED and DOCA-OFED mixed; unsupported OS.
  - Paths (C(/proc), C(/sys), C(/etc), the DKMS tree) can be re-rooted with the environment variables
    E(GPUDIRECT_PROC_ROOT) / E(GPUDIRECT_HOST_ROOT), and commands taken from E(GPUDIRECT_BIN_DIR) first (tests),
    on lab hosts only (the root-owned marker C(/etc/gpudirect-storage/lab-test-seams)); elsewhere they change nothing.
extends_documentation_fragment:
  - gpudirect.storage._package_repo
  - gpudirect.storage._attributes
attributes:
  check_mode:
    support: full
    details: No package change, no file written, no C(modprobe), no DKMS build.
  diff_mode:
    support: full
    details: Package versions before/after and the content of every managed file.
options:
  state:
    description: V(present) installs, builds, loads and persists; V(absent) unloads, removes the packages in O(packages) and the managed files.
    type: str
    choices: [present, absent]
    default: present
  version:
    description:
      - nvidia-fs version (prefix, e.g. V(2.26.6) or V(2.26)) for C(nvidia-fs-dkms) and C(nvidia-fs).
      - V(match_driver) picks the highest available version that works with the installed NVIDIA driver.
      - Omitted, an installed version is kept, otherwise the repository candidate is installed.
    type: str
  packages:
    description: nvidia-fs packages; O(version) applies to C(nvidia-fs-dkms) and C(nvidia-fs).
    type: list
    elements: str
    default: [nvidia-fs-dkms, nvidia-fs]
  extra_packages:
    description: Further packages, C(name) or C(name=version), e.g. C(libcufile-13-0), C(gds-tools-13-0), C(nvidia-gds).
    type: list
    elements: str
    default: []
  load:
    description: Load the module (C(modprobe nvidia_fs) with O(params)); reload it when version or parameters differ.
    type: bool
    default: true
  persistent:
    description: Write C(/etc/modules-load.d/nvidia-fs.conf) (and C(/etc/modprobe.d/nvidia-fs.conf) when O(params) is set). V(false) leaves them alone.
    type: bool
    default: true
  params:
    description: 'Module parameters, e.g. C({rw_stats_enabled: 1}).'
    type: dict
    default: {}
  mok_key:
    description: Private key DKMS signs nvidia-fs.ko with (written to C(/etc/dkms/framework.conf.d/gpudirect-nvidia-fs.conf)). Needed with Secure Boot.
    type: path
  mok_cert:
    description: The enrolled MOK certificate (DER) matching O(mok_key).
    type: path
  mok_key_passphrase:
    description: Passphrase of O(mok_key), given to the signing tool as C(KBUILD_SIGN_PIN).
    type: str
  unsupported_os:
    description:
      - What to do on an OS outside the GDS support table (Ubuntu 22.04/24.04, RHEL/Rocky/AlmaLinux 9; the
        same table as M(gpudirect.storage.gds_preflight) and M(gpudirect.storage.gpu_operator)) -
        V(fail) before anything changes, or V(warn) and go on (e.g. Debian 12 lab hosts).
    type: str
    choices: [fail, warn]
    default: fail
  lock_timeout:
    description: Seconds to wait for the package manager lock before failing with the name of the process holding it.
    type: int
    default: 120
seealso:
  - module: gpudirect.storage.mofed
  - module: gpudirect.storage.gds_facts
author: gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: Install nvidia-fs matching the driver, load it with I/O counters and persist it
  gpudirect.storage.nvidia_fs:
    version: match_driver
    extra_packages: [libcufile-13-0, gds-tools-13-0]
    params:
      rw_stats_enabled: 1

- name: Secure Boot host, sign with an enrolled MOK key
  gpudirect.storage.nvidia_fs:
    version: "2.28"
    mok_key: /var/lib/shim-signed/mok/MOK.priv
    mok_cert: /var/lib/shim-signed/mok/MOK.der

- name: Remove nvidia-fs
  gpudirect.storage.nvidia_fs:
    state: absent
"""

RETURN = r"""
actions:
  description: What was done (or would be done in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["install nvidia-fs-dkms=2.28.2-1", "modprobe nvidia_fs rw_stats_enabled=1", "create /etc/modules-load.d/nvidia-fs.conf"]
nvidia_fs_version:
  description: The nvidia-fs package version aimed at.
  returned: when state=present
  type: str
  sample: 2.28.2-1
packages:
  description: Package versions before and after (name -> version).
  returned: always
  type: dict
  sample: {before: {nvidia-fs-dkms: 2.26.6-1}, after: {nvidia-fs-dkms: 2.28.2-1}}
module:
  description: Kernel module state after the run (loaded, version from /sys/module, params, refcount).
  returned: always
  type: dict
  sample: {name: nvidia_fs, loaded: true, version: 2.28.2, params: {rw_stats_enabled: "1"}}
dkms:
  description: C(dkms status) entries of nvidia-fs after the run.
  returned: always
  type: list
  elements: dict
  sample: [{module: nvidia-fs, version: 2.28.2, kernel: 6.8.0-86-generic, arch: x86_64, state: installed, note: ""}]
persisted:
  description: Managed persistence files that exist after the run.
  returned: always
  type: dict
  sample: {modules_load: /etc/modules-load.d/nvidia-fs.conf, modprobe: /etc/modprobe.d/nvidia-fs.conf}
rebuild_reasons:
  description: Why DKMS had to (re)build nvidia-fs for the running kernel.
  returned: when state=present
  type: list
  elements: str
  sample: ["MOFED was installed or upgraded after nvidia-fs was built (PeerDirect support is decided at build time)"]
preflight:
  description: The facts the preflight checks used (driver, kernel, OS, Secure Boot) and the failures (on failure).
  returned: always
  type: dict
reload_required:
  description: The module is loaded in another version/parameters and could not be unloaded (in use).
  returned: always
  type: bool
"""

from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.nvidia_fs import (
    arguments, execute)
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner


def main():
    module = arguments().create_ansible_module(supports_check_mode=True)
    module.exit_json(**execute(module, HostPaths(), Runner(module)))


if __name__ == "__main__":
    main()
