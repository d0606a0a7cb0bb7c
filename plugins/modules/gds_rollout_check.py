#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: gds_rollout_check
short_description: Check the rollout settings of playbooks/site.yml before any host is touched
version_added: 0.1.0
description:
  - Fails, naming the setting and what it accepts, when the rollout could not go as asked - before
    any host is touched, so C(playbooks/site.yml) runs it first, once, on the controller.
  - The group O(group) has no host (the play on it would "succeed" on none).
  - C(gds_serial) is not a count, a percentage C("N%") or a list of them; C(gds_max_fail_percentage)
    is not a number from 0 to 100; C(gds_canary) names a host that is not in O(group).
  - C(gds_serial), C(gds_max_fail_percentage) or C(gds_canary) is set in the inventory (group_vars,
    host_vars, the hosts file) rather than as an extra var. The play keywords that read them
    (C(serial), C(max_fail_percentage), C(hosts)) are templated before any host variable exists,
    from the play's variables and the extra vars only, so the rollout would go on with the
    defaults; the message names the files that set them and the C(-e) to pass instead.
  - Runs on the controller only (an action plugin); this file holds its documentation and
    argument specification.
options:
  group:
    description: The inventory group that is rolled out.
    type: str
    default: gds_hosts
extends_documentation_fragment:
  - gpudirect.storage._attributes
attributes:
  check_mode:
    support: full
    details: Reads the inventory and the extra vars only, in check mode as in a real run.
  diff_mode:
    support: none
  action:
    description: Runs as an action plugin on the controller.
    support: full
  platform:
    description: Where it runs.
    support: N/A
    platforms: posix
    details: Runs on the controller only; it never connects to the hosts.
seealso:
  - module: gpudirect.storage.gds_plan
author:
  - gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: Check the rollout settings before any host is touched
  gpudirect.storage.gds_rollout_check:
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
hosts:
  description: How many hosts O(group) has.
  returned: success
  type: int
  sample: 8
settings:
  description: The rollout settings in effect (from the extra vars; a missing one is its default).
  returned: success
  type: dict
  sample: {gds_serial: [1, "10%", "25%"], gds_max_fail_percentage: 20, gds_canary: []}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_rollout_check import argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.fail_json(msg="gpudirect.storage.gds_rollout_check runs on the controller through its action plugin; "
                         "this module file only documents it")


if __name__ == "__main__":
    main()
