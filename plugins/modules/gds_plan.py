#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)

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
    the stage or option.
  - Changes nothing on the host (the probe file is written and deleted, as gds_facts does).
  - C(playbooks/site.yml) runs it once per host before the rolling batches; the stage options come
    from the roles' C(tasks/plan.yml) entry points, so the roles stay the one place of their defaults.
extends_documentation_fragment:
  - gpudirect.storage._attributes
  - gpudirect.storage._attributes.ACTIONGROUP_GDS
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
      - Fail a converged host whose verdict is weaker than this (V(gds) > V(p2pdma) > V(compat));
        empty, report only.
    type: str
    default: ""
    choices: ["", gds, p2pdma, compat]
  rollout_group:
    description: Group of the hosts a stage would change.
    type: str
    default: gds_rollout
  converged_group:
    description: Group of the hosts no stage would change.
    type: str
    default: gds_converged
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
  description: Every planned stage succeeded and would change nothing.
  returned: always
  type: bool
ansible_facts:
  description: C(gds), as M(gpudirect.storage.gds_facts) returns it.
  returned: success
  type: dict
preflight:
  description: The failed preflight checks and the warnings.
  returned: when O(preflight) is set
  type: dict
msg:
  description: The plan in one line (stages that would change, GDS now), or why the host failed.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.storage.plugins.module_utils._gds_plan import StageFailed, plan
from ansible_collections.gpudirect.storage.plugins.module_utils._hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._runner import Runner

ACTION_ONLY = ("preflight", "require_mode", "rollout_group", "converged_group")


def argument_spec():
    return dict(
        mofed=dict(type="dict"),
        nvidia_fs=dict(type="dict"),
        cufile=dict(type="dict"),
        facts=dict(type="dict", default={"probe": False}),
        preflight=dict(type="dict"),
        require_mode=dict(type="str", default="", choices=["", "gds", "p2pdma", "compat"]),
        rollout_group=dict(type="str", default="gds_rollout"),
        converged_group=dict(type="str", default="gds_converged"),
    )


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    try:
        out = plan(module, module.params, HostPaths(), Runner(module))
    except StageFailed as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    module.exit_json(changed=False, stages=out["stages"], converged=out["converged"],
                     ansible_facts={"gds": out["facts"]})


if __name__ == "__main__":
    main()
