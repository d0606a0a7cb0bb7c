#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: mofed
short_description: Ensure DOCA-OFED, MLNX_OFED or the distribution RDMA stack is installed
version_added: 0.1.0
description:
  - Detects what is installed (C(ofed_info -s) and the package database), compares it with the desired
    O(flavour) and O(version) in a pure function and installs the missing packages with explicit version pins
    from a configured repository (apt on Debian/Ubuntu, dnf on RHEL 9), optionally one this module writes
    (O(repo)) pointing at a mirror, a local directory or a mounted ISO.
  - Refuses to install MLNX_OFED next to DOCA-OFED (or the reverse) and never uninstalls an OFED itself.
  - Never reboots and never restarts the driver stack; it returns RV(reboot_required) /
    RV(modules_reload_required), and RV(nvidia_fs_rebuild_required) when nvidia-fs (whose PeerDirect support is
    decided at build time) is installed and the RDMA stack changed.
  - Package signature checks are never disabled. Before a transaction the package lock is waited for up to
    O(lock_timeout) seconds; then the error names the process holding it.
extends_documentation_fragment:
  - gpudirect.storage._package_repo
  - gpudirect.storage._attributes
attributes:
  check_mode:
    support: full
    details: No package change and no file written; with a new O(repo) the versions it offers are unknown.
  diff_mode:
    support: full
    details: Package versions before/after and the repository file.
options:
  flavour:
    description:
      - V(doca-ofed), V(doca-roce), V(doca-networking) are DOCA-OFED profiles (meta packages of the same name).
      - V(mlnx-ofed) is the legacy MLNX_OFED (meta package C(mlnx-ofed-all)); its last release is 24.10 LTS.
      - V(inbox) is the distribution's RDMA stack (C(rdma-core) and tools).
    type: str
    required: true
    choices: [doca-ofed, doca-roce, doca-networking, mlnx-ofed, inbox]
  version:
    description:
      - Version prefix of the flavour's meta package (V(3.2.1) for DOCA, V(24.10-4.1.4.0) for MLNX_OFED) or of the
        OFED version C(ofed_info -s) reports (V(25.10)). Omitted, any installed version is kept.
    type: str
  extra_packages:
    description: More packages from the same repository, C(name) or C(name=version) (e.g. C(mlnx-fw-updater), C(perftest)).
    type: list
    elements: str
    default: []
  state:
    description: Only V(present); removing an OFED is left to its own uninstaller.
    type: str
    choices: [present]
    default: present
  lock_timeout:
    description: Seconds to wait for the package manager lock before failing with the holder's name.
    type: int
    default: 120
seealso:
  - module: gpudirect.storage.nvidia_fs
author: gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: DOCA-OFED (doca-ofed profile) from the DOCA host repository already configured on the host
  gpudirect.storage.mofed:
    flavour: doca-ofed
    version: "3.2.1"
  register: ofed

- name: Reboot when the RDMA kernel stack changed
  ansible.builtin.reboot:
  when: ofed.reboot_required

- name: MLNX_OFED 24.10 LTS from a mounted ISO
  gpudirect.storage.mofed:
    flavour: mlnx-ofed
    version: 24.10-4.1.4.0
    repo:
      path: /mnt/mlnx_ofed/DEBS
      suite: ./
      signed_by: /etc/apt/keyrings/mellanox.gpg
"""

RETURN = r"""
installed_version:
  description: OFED version before the run (C(ofed_info -s), or rdma-core's version for inbox); null when none.
  returned: always
  type: str
  sample: 24.10-1.1.4.0
desired_version:
  description: O(version) as given.
  returned: always
  type: str
  sample: 24.10-4.1.4.0
version:
  description: OFED version after the run (check mode - the version before).
  returned: always
  type: str
  sample: 24.10-4.1.4.0
current:
  description: What was detected before the run (family doca/mlnx/inbox/mixed/null, profiles, ofed_info).
  returned: always
  type: dict
  sample: {family: mlnx, profiles: [mlnx-ofed], version: 24.10-1.1.4.0, ofed_info: MLNX_OFED_LINUX-24.10-1.1.4.0}
packages:
  description: Versions of the packages this flavour needs, before and after.
  returned: always
  type: dict
  sample: {before: {mlnx-ofed-all: 24.10-1.1.4.0}, after: {mlnx-ofed-all: 24.10-4.1.4.0}}
actions:
  description: What was done (or would be done in check mode).
  returned: always
  type: list
  elements: str
  sample: ["upgrade mlnx-ofed-all=24.10-4.1.4.0"]
reboot_required:
  description: The RDMA kernel modules changed; reboot to use them (the module never reboots).
  returned: always
  type: bool
modules_reload_required:
  description: New RDMA kernel modules are installed; C(/etc/init.d/openibd restart) or a reboot loads them.
  returned: always
  type: bool
nvidia_fs_rebuild_required:
  description: nvidia-fs is installed and must be rebuilt (gpudirect.storage.nvidia_fs does it) to get PeerDirect.
  returned: always
  type: bool
"""

from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.mofed import arguments, execute
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner


def main():
    module = arguments().create_ansible_module(supports_check_mode=True)
    module.exit_json(**execute(module, HostPaths(), Runner(module)))


if __name__ == "__main__":
    main()
