#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

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
  - gpudirect.storage._attributes.ACTIONGROUP_GDS
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

import copy
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.storage.plugins.module_utils import _kmod as kmod
from ansible_collections.gpudirect.storage.plugins.module_utils import _ofed as ofed
from ansible_collections.gpudirect.storage.plugins.module_utils import _packages as pk
from ansible_collections.gpudirect.storage.plugins.module_utils._hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._runner import CommandError, Runner


def argument_spec():
    return dict(
        flavour=dict(type="str", required=True, choices=list(ofed.FLAVOURS)),
        version=dict(type="str"),
        extra_packages=dict(type="list", elements="str", default=[]),
        state=dict(type="str", choices=["present"], default="present"),
        lock_timeout=dict(type="int", default=120),
        repo=copy.deepcopy(pk.REPO_ARG_SPEC),
    )


def ofed_info(runner):
    if not runner.which("ofed_info"):
        return None
    return ofed.parse_ofed_info(runner.run(["ofed_info", "-s"], check=False).stdout)


def repo_change(module, paths, backend):
    repo = module.params["repo"]
    if not repo:
        return None
    if backend.family == "apt":
        fname, text = pk.render_apt_source(repo, "gpudirect-ofed")
        path = os.path.join(paths.apt_sources_d, fname)
    else:
        fname, text = pk.render_dnf_repo(repo, "gpudirect-ofed")
        path = os.path.join(paths.yum_repos_d, fname)
    ch = kmod.plan_file(path, text)
    return None if ch["action"] == "none" else ch


def run(module, paths, runner, backend, result):
    p = module.params
    names = ofed.query_names(backend.family) + ["nvidia-fs-dkms"] + \
        [e.partition("=")[0] for e in p["extra_packages"]]
    installed, available = backend.query(names)
    current = ofed.detect(installed, ofed_info(runner))
    result.update(current=current, installed_version=current["version"], version=current["version"])
    decision = ofed.decide(current, installed, {"flavour": p["flavour"], "version": p["version"],
                                                "extra_packages": p["extra_packages"]}, backend.family)
    if decision["conflict"]:
        module.fail_json(msg=decision["conflict"] + " Nothing was changed.", **result)
    wanted = decision["wanted"]
    result["packages"]["before"] = dict((n, installed[n]) for n in wanted if n in installed)
    diffs = []
    ch = repo_change(module, paths, backend)
    if ch:
        if not module.check_mode:
            pk.wait_for_locks(paths, [getattr(paths, n) for n in backend.lock_names], backend.lock_timeout)
        diffs.append(kmod.file_diff(ch))
        kmod.apply_file(module, ch, backup=False)
        backend.refresh()
        result["actions"] += ["%s %s" % (ch["action"], ch["path"]), "refresh package metadata"]
        result["changed"] = True
        if not module.check_mode:
            installed, available = backend.query(names)
    plan = pk.plan_packages(installed, available, wanted, strict=not (module.check_mode and ch))
    if plan["errors"]:
        if ch and not module.check_mode:  # leave the host as found
            kmod.apply_file(module, dict(ch, current=ch["desired"], desired=ch["current"],
                                         action="remove" if ch["current"] is None else "update"), backup=False)
        module.fail_json(msg="; ".join(plan["errors"]) + ". Nothing was changed.", **result)
    after = dict(result["packages"]["before"])
    if plan["install"]:
        diffs.append(pk.package_diff(installed, plan))
        pk.apply_plan(backend, paths, plan, module.check_mode)
        result["changed"] = True
        for name, ver, kind in plan["install"]:
            result["actions"].append("%s %s=%s" % (kind, name, ver))
            after[name] = ver
        if not module.check_mode:
            info = ofed_info(runner)
            result["version"] = info["version"] if info else result["version"]
    result["packages"]["after"] = after
    result.update(ofed.outcome(decision, plan, current, "nvidia-fs-dkms" in installed))
    if module._diff and diffs:
        result["diff"] = diffs


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    paths = HostPaths()
    runner = Runner(module)
    result = {"changed": False, "actions": [], "desired_version": module.params["version"],
              "installed_version": None, "version": None, "current": {},
              "packages": {"before": {}, "after": {}}, "reboot_required": False,
              "modules_reload_required": False, "nvidia_fs_rebuild_required": False}
    problems = pk.input_problems(module.params, package_options=("extra_packages",))
    if problems:
        module.fail_json(msg="; ".join(problems) + ". Nothing was changed.", **result)
    try:
        backend = pk.get_backend(runner, module.params["lock_timeout"])
        run(module, paths, runner, backend, result)
    except CommandError as exc:
        result.update(exc.to_fail_kwargs())
        module.fail_json(msg=str(exc), **result)
    except pk.PackageError as exc:
        result.update(exc.details)
        module.fail_json(msg=str(exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
