#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: gds_plan
short_description: Plan the GPUDirect Storage rollout of a host in one round trip
version_added: 0.1.0
description:
  - In one module run on the host, what M(gpudirect.storage.mofed), M(gpudirect.storage.nvidia_fs)
    and M(gpudirect.storage.cufile_config) would do in check mode - the same code, with each stage's
    own options and checks - then the GDS facts (C(ansible_facts.gds), as
    M(gpudirect.storage.gds_facts) gathers them). The verify probe runs only when no stage would
    change anything, so a converged host is verified by this one call.
  - On the controller - the planned C(cufile.json) is validated, the preflight checks of
    M(gpudirect.storage.gds_preflight) run on the facts (O(preflight)), and the host is added to the
    group O(rollout_group) when a stage would change it, else to O(converged_group), where
    O(require_mode) is enforced. A failed check or stage fails the host with a message naming
    the stage and the role variable to set in the inventory (C(<role>_<option>)).
  - Before the host is touched, the host's variables are checked (O(unknown_variables)), and
    C(gds_serial), C(gds_max_fail_percentage) and C(gds_canary) set in the inventory rather than
    as extra vars are reported as warnings (Ansible reads them before any inventory variable).
  - Changes nothing on the host (the probe file is written and deleted, as gds_facts does).
  - C(playbooks/site.yml) runs it once per host before the rolling batches, in a play whose
    C(environment) is C(gds_environment) like the other plays, with O(select_from_variables) - the
    stage options come from the roles' variables and defaults.
extends_documentation_fragment:
  - gpudirect.storage._attributes
attributes:
  check_mode:
    support: full
    details: It never changes the host; check mode changes nothing either.
  diff_mode:
    support: none
options:
  mofed:
    description: Options of M(gpudirect.storage.mofed) to plan; omitted, the stage is not planned.
    type: dict
  nvidia_fs:
    description:
      - Options of M(gpudirect.storage.nvidia_fs) to plan; omitted, the stage is not planned.
      - C(mok_key_passphrase) is not sent to the host (planning never signs).
    type: dict
  cufile:
    description:
      - Options of M(gpudirect.storage.cufile_config) to plan (its plan phase; C(src) is read on the
        controller); omitted, the stage is not planned.
    type: dict
  facts:
    description:
      - Options of the gds facts gathering (those of M(gpudirect.storage.gds_facts)). C(probe=true)
        probes a host that is converged; on a host about to change the probe is deferred
        (C(gds.probe.deferred)) to the verify after the change.
    type: dict
    default: {probe: false}
  preflight:
    description:
      - Options of the preflight checks (those of M(gpudirect.storage.gds_preflight) but C(facts)),
        run on the controller on the gathered facts; omitted, no preflight check runs.
    type: dict
  require_mode:
    description:
      - Fail a converged host unless its probe verified the data (written, read back, compared)
        and its verdict is at least this (V(gds) > V(p2pdma) > V(compat)); empty, report only.
        The same gate as M(gpudirect.storage.gds_facts) - an inferred verdict (C(facts.probe=false))
        never meets it; V(gds) also needs the nvidia-fs counters (O(require_proven)).
    type: str
    default: ""
    choices: ["", gds, p2pdma, compat]
  require_proven:
    description:
      - With O(require_mode=gds), also require the nvidia-fs Writes/Reads counters to prove the
        path. V(false) is weaker (a verified probe with nvidia_fs loaded and no compat fallback logged).
    type: bool
    default: true
  rollout_group:
    description: Group of the hosts a stage would change; empty, the host joins no group.
    type: str
    default: gds_rollout
  converged_group:
    description: Group of the hosts no stage would change; empty, the host joins no group.
    type: str
    default: gds_converged
  unknown_variables:
    description:
      - What to do, before the host is touched, when the host has a variable with one of the
        collection's prefixes (C(gds_), C(cufile_), C(mofed_), C(nvidia_fs_), C(gpu_operator_),
        C(package_repo_)) that no role or playbook of the collection reads - usually a typo, named
        with the variable it probably meant.
      - V(fail) fails the host, V(warn) warns, V(ignore) does not check.
    type: str
    default: fail
    choices: [fail, warn, ignore]
  roles:
    description:
      - Roles of the collection whose variables this task reads, on the controller, before the host
        is touched. Each role's variables (the host's over the role's defaults) are checked against
        its C(meta/argument_specs.yml) (entry point C(main), with Ansible's argument validator; an
        error names the variable), all roles before any failure is reported.
      - For the stage roles, the stage option not given in the task is built from the role's
        variables as the role's own task passes them - V(mofed) gives O(mofed), V(nvidia_fs)
        O(nvidia_fs), V(cufile) O(cufile), V(gds_preflight) O(preflight) (less C(facts)),
        V(gds_verify) O(facts) and, from its C(require_mode) and C(require_proven), O(require_mode)
        and O(require_proven). V(gds_plan) is only checked.
    type: list
    elements: str
    default: []
    choices: [gds_plan, mofed, nvidia_fs, cufile, gds_preflight, gds_verify]
  select_from_variables:
    description:
      - Plan as C(playbooks/site.yml) does (the gds_plan role's task) - O(roles) are the roles the
        gds_plan role's variables select, and O(rollout_group), O(converged_group) and
        O(unknown_variables) not given in the task come from C(gds_plan_rollout_group),
        C(gds_plan_converged_group) and C(gds_plan_unknown_variables).
      - The stages are C(gds_plan_stages), by default those with C(gds_<stage>_enabled) true that
        C(--tags) selects and C(--skip-tags) does not skip; the preflight checks and the verify
        follow C(gds_plan_preflight) and C(gds_plan_verify), by default C(gds_preflight_enabled) and
        C(gds_verify_enabled) unless their tag is skipped. A preflight-only run
        (C(gds_plan_preflight_only), by default C(--tags preflight) without a stage or C(verify) tag)
        joins no group.
      - The gds_plan role's own variables are checked by Ansible when the role is imported (its
        argument spec), not by this task.
      - Mutually exclusive with O(roles).
    type: bool
    default: false
seealso:
  - module: gpudirect.storage.gds_preflight
  - module: gpudirect.storage.gds_facts
author: gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: Plan DOCA-OFED, nvidia-fs and cufile.json in one round trip
  gpudirect.storage.gds_plan:
    mofed: {flavour: doca-ofed}
    nvidia_fs: {state: present}
    cufile: {settings: {properties: {allow_compat_mode: true}}}
    facts: {probe: true, probe_path: [/mnt/nvme0]}
    preflight: {require_driver: true}

- name: Roll out only where something changes
  ansible.builtin.debug:
    msg: "{{ groups['gds_rollout'] | default([]) }}"
  run_once: true
"""

RETURN = r"""
stages:
  description:
    - Per planned stage, the stage module's check-mode result (C(changed), C(actions), C(reasons),
      versions ...), with C(failed) and C(msg) when the stage failed. The cufile stage also says what
      its document is based on (C(base), C(base_release), C(libcufile)) or, with no cufile option set,
      that the host's file is kept (C(kept), C(valid), C(findings)).
  returned: always
  type: dict
  sample: {mofed: {changed: false, failed: false, actions: []}, cufile: {changed: true, reasons: [content]}}
converged:
  description: At least one stage was planned, and every planned stage succeeded and would change nothing.
  returned: always
  type: bool
ansible_facts:
  description: C(gds), as M(gpudirect.storage.gds_facts) returns it.
  returned: success
  type: dict
preflight:
  description:
    - The failed preflight checks and the warnings; C(checks) and C(table), the row of each check
      (as M(gpudirect.storage.gds_preflight) returns them).
    - A failed plan holds C(failures) and C(table) only, beside C(msg) and the failed C(stages), and
      no C(ansible_facts) (a converged host that misses O(require_mode) keeps its whole result).
  returned: when O(preflight) is set
  type: dict
preflight_only:
  description: A preflight-only run - the host joined no group (O(select_from_variables)).
  returned: when O(select_from_variables) is true
  type: bool
check_mode_verify:
  description:
    - In check mode, for a host that would change (nothing was installed, so nothing to prove) - what
      its verify would require after the install, and that nothing is proven. With O(require_mode),
      C(ansible_facts.gds.require_mode.met) is null (not judged).
  returned: in check mode, when a stage would change the host
  type: str
  sample: "check mode: would require gds after installing mofed, nvidia_fs, cufile; not proven"
msg:
  description: The plan in one line (stages that would change, GDS now), or why the host failed.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_plan import StageFailed, argument_spec, plan
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    try:
        out = plan(module, module.params, HostPaths(), Runner(module))
    except StageFailed as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    for warning in out["facts"].get("warnings") or []:
        module.warn(warning)
    module.exit_json(changed=False, stages=out["stages"], converged=out["converged"],
                     ansible_facts={"gds": out["facts"]})


if __name__ == "__main__":
    main()
