#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: gds_preflight
short_description: Read-only checks of a host before a GPUDirect Storage rollout, in one round trip
version_added: 0.1.0
description:
  - Runs M(gpudirect.storage.gds_facts) on the host (one round trip; by default without the
    probe), sets C(ansible_facts.gds), and checks on the controller - the OS and architecture are
    supported, C(/) has room for the packages and the DKMS build, Secure Boot will not refuse the
    DKMS-built nvidia-fs module (the same check as M(gpudirect.storage.nvidia_fs) - a MOK key pair
    whose certificate is enrolled, or an enrolled DKMS default key), and, when asked for, an
    NVIDIA driver is loaded.
  - A failed check fails the host with a message that names the variable of role
    gpudirect.storage.gds_preflight to change (C(gds_preflight_<option>), or C(nvidia_fs_mok_key))
    and a value that would pass; a check that is set to warn adds a warning instead. Changes
    nothing on the host.
  - Runs through its action plugin; this file holds its documentation and argument specification.
extends_documentation_fragment:
  - gpudirect.storage._attributes
attributes:
  check_mode:
    support: full
    details: Read-only; with C(facts.probe=true) the probe file is written and deleted, as M(gpudirect.storage.gds_facts) does.
  diff_mode:
    support: none
options:
  supported_os:
    description:
      - os-release C(ID) (V(ubuntu), V(rhel), ...) to accepted C(VERSION_ID)s, full (V(22.04)) or a prefix (V(9)).
      - Unset, the collection's one GDS support table (Ubuntu 22.04/24.04, RHEL/Rocky/AlmaLinux 9), which
        M(gpudirect.storage.nvidia_fs) and M(gpudirect.storage.gpu_operator) use too.
    type: dict
  unsupported_os:
    description: A host whose OS is not supported - V(fail) it, or V(warn) and go on.
    type: str
    choices: [fail, warn]
    default: fail
  supported_architectures:
    description: Accepted machine architectures.
    type: list
    elements: str
    default: [x86_64, aarch64]
  min_free_mb:
    description: Free MiB needed on C(/) for the packages and the DKMS build of nvidia-fs (V(0) skips the check).
    type: int
    default: 2048
  require_driver:
    description: Fail a host without a loaded NVIDIA driver.
    type: bool
    default: false
  fail_on_secure_boot:
    description:
      - Fail a host with Secure Boot enabled where the DKMS-built nvidia-fs module would not load - no
        O(mok_key) and no enrolled DKMS default key, or the certificate O(mok_cert) not enrolled
        (C(mokutil --test-key) on the host); V(false) warns.
    type: bool
    default: false
  mok_key:
    description:
      - The MOK key nvidia-fs will be signed with (O(gpudirect.storage.nvidia_fs#module:mok_key));
        only whether it is set matters here.
    type: path
  mok_cert:
    description:
      - The MOK certificate of O(mok_key) (O(gpudirect.storage.nvidia_fs#module:mok_cert)); with Secure Boot
        on, the host is asked whether it is enrolled.
    type: path
  facts:
    description:
      - Options of the M(gpudirect.storage.gds_facts) call, for example C(probe=true) and
        C(probe_size_mb=256) to prove the data path as it is now. Its own option checks apply.
    type: dict
    default: {probe: false}
seealso:
  - module: gpudirect.storage.gds_facts
author: gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: Refuse hosts without a driver, warn on an unsupported OS
  gpudirect.storage.gds_preflight:
    require_driver: true
    unsupported_os: warn

- name: Check the host and prove the data path as it is now
  gpudirect.storage.gds_preflight:
    facts:
      probe: true
      probe_path: [/mnt/nvme0]
"""

RETURN = r"""
ansible_facts:
  description: C(gds), as M(gpudirect.storage.gds_facts) returns it.
  returned: success
  type: dict
preflight:
  description:
    - The failed checks and the warnings, one message each; C(checks), one row per check
      (C(check), C(status) - V(passed), V(failed), V(warning) or V(skipped) - and C(why)), and
      C(table), the rows as lines for a person.
    - A failed result holds C(failures) and C(table) only, beside C(msg), and no C(ansible_facts).
  returned: always
  type: dict
  sample: {failures: [], warnings: ["Debian 12 is not a supported GDS host OS (...)"],
           checks: [{check: os, status: warning, why: "Debian 12 is not a supported GDS host OS (...)"}],
           table: ["warning  os  Debian 12 is not a supported GDS host OS (...)"]}
msg:
  description: What the rollout starts from (OS, kernel, driver, nvidia_fs, OFED, Secure Boot, GDS now), or why the host failed.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_preflight import argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.fail_json(msg="gpudirect.storage.gds_preflight runs through its action plugin; this module file only documents it")


if __name__ == "__main__":
    main()
