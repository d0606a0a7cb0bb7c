#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: gds_report
short_description: Write the GDS fleet readiness report (JSON, Markdown, HTML) on the controller
version_added: 0.1.0
description:
  - Builds one record per host from the C(ansible_facts.gds) of every host (gathered by
    M(gpudirect.storage.gds_facts)) - status, mode, reason, driver, nvidia_fs, libcufile and
    MOFED versions, probe write/read GB/s and failed checks - and writes C(gds-fleet.json),
    C(gds-fleet.md) (a table to paste into a ticket) and C(gds-fleet.html) (one self-contained
    page - counts by mode, a sortable table, a throughput bar chart in inline SVG, the reason
    for every host that is not C(gds)) into O(dest).
  - Hosts that failed or were unreachable earlier in the run are in the report too, with the
    failing task and its message, when the C(gpudirect.storage.gds_report) callback is
    enabled (it keeps the run journal this action reads).
  - Runs on the controller only (an action plugin); this file holds its documentation and
    argument specification.
  - C(changed) is true only when the report says something new - about the hosts, or that
    another playbook's run wrote it (C(run.playbooks), as given to C(ansible-playbook)); the
    generation time alone is ignored, and an unchanged report is not rewritten.
options:
  hosts:
    description:
      - Inventory hosts that belong in the report, in this order. Hosts only found in the run
        journal (they failed or were unreachable) are added.
      - Default - the hosts of group C(gds_hosts), or every inventory host but C(localhost).
    type: list
    elements: str
  verified_hosts:
    description:
      - Also report every inventory host that has C(ansible_facts.gds) in this run (the hosts the
        play verified, C(localhost) included), whatever O(hosts) says - so C(verify.yml -i localhost,)
        reports C(localhost). Not with O(facts), which names the hosts' facts itself.
    type: bool
    default: true
  dest:
    description:
      - Directory of the report files; created when missing. It never depends on the current
        directory - default C($GDS_REPORT_DIR), else one directory per inventory beside it,
        C(reports/<inventory name>) in the directory that holds the first inventory source
        (C(-i inventories/prod) - C(inventories/reports/prod); C(-i fleet/hosts.yml) -
        C(fleet/reports/hosts)); a relative path is taken in that directory too.
      - Without an inventory on disk (C(-i localhost,)) - C(reports) beside C(playbooks/) of the first
        playbook on the command line, or C(~/.ansible/gds-reports) for a playbook named by its
        collection name (C(gpudirect.storage.verify)).
      - The files are readable by their owner only (C(0600)) in a C(0700) directory; a directory of
        yours that others could read is made C(0700). A directory another user owns or may write
        is refused. Credentials in the failure messages (passwords in URLs, bearer tokens, NGC API
        keys, C(--password=...), C(token=...)) are masked.
    type: path
  formats:
    description: Files to write besides C(gds-fleet.json), which is always written.
    type: list
    elements: str
    choices: [json, md, html]
    default: [json, md, html]
  title:
    description: Title of the report.
    type: str
    default: GDS fleet readiness
  facts:
    description:
      - The C(gds) facts per host name. Default - C(hostvars[host].ansible_facts.gds) of each host.
    type: dict
  journal:
    description:
      - Run journal of the C(gpudirect.storage.gds_report) callback. Default - the journal the
        callback registered for the current run (never one of another run); without it, hosts without facts
        are reported with status C(unknown).
    type: path
  k8s_nodes:
    description:
      - The C(nodes) returned by M(gpudirect.storage.gds_node_probe). Each becomes a record with
        C(source=kubernetes) next to the SSH hosts (C(source=ssh)).
    type: list
    elements: dict
    default: []
extends_documentation_fragment:
  - gpudirect.storage._attributes
attributes:
  check_mode:
    support: full
    details: Computes C(changed) and writes nothing.
  diff_mode:
    support: full
    details: Shows the change of C(gds-fleet.md).
  action:
    description: Runs as an action plugin on the controller.
    support: full
  platform:
    description: Where it runs.
    support: N/A
    platforms: posix
    details: Runs on the controller only; it never connects to the hosts.
seealso:
  - module: gpudirect.storage.gds_facts
author:
  - gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: Write the fleet report for the GDS hosts into reports/<inventory name> beside the inventory
  gpudirect.storage.gds_report:
    hosts: "{{ groups['gds_hosts'] }}"

- name: Only the JSON and the Markdown table
  gpudirect.storage.gds_report:
    dest: /srv/www/gds
    formats: [json, md]
"""

RETURN = r"""
dest:
  description: Absolute directory of the report.
  returned: always
  type: str
  sample: /home/ops/gds/reports
files:
  description: Path of each written (or, unchanged, existing) file by format.
  returned: always
  type: dict
  sample: {json: /home/ops/gds/reports/gds-fleet.json, md: /home/ops/gds/reports/gds-fleet.md}
repair_file:
  description:
    - The hosts to repair, one per line, for C(ansible-playbook --limit @<file>) - hosts that failed,
      were unreachable, gave no verdict, whose probe failed or whose verdict missed its require_mode
      (empty when there are none). Written beside the report, also with O(formats) that leave out a format.
  returned: always
  type: str
  sample: /home/ops/gds/reports/gds-fleet-repair.txt
summary:
  description: Host count, counts by mode and by status, hosts ready for GDS, hosts that are not.
  returned: always
  type: dict
  sample: {hosts: 3, gds_ready: 1, by_mode: {gds: 1, unavailable: 1, unknown: 1}, not_gds: [node-b, node-c]}
journal:
  description: The run journal read, or null when the callback was not enabled.
  returned: always
  type: str
  sample: /tmp/gds-report-journal.k2j3x9q1/journal.jsonl
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_report import argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    module.fail_json(msg="gpudirect.storage.gds_report runs on the controller through its action plugin; "
                         "this module file only documents it")


if __name__ == "__main__":
    main()
