#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: gds_local_volumes
short_description: A StorageClass and one local PersistentVolume per GPU node on the data mounts GDS can serve
version_added: 0.1.0
description:
  - Runs where C(kubectl) runs (the controller or a kube admin host) and creates the StorageClass O(storage_class)
    (C(kubernetes.io/no-provisioner), C(volumeBindingMode=WaitForFirstConsumer), C(reclaimPolicy=Retain)) and a
    C(local) PersistentVolume for each volume - one directory on one node, with node affinity to that node
    (its C(kubernetes.io/hostname) label), C(ReadWriteOnce), reclaim policy C(Retain).
  - The volumes come from the hosts' gds facts (O(node_facts), what M(gpudirect.storage.gds_facts) found with
    C(probe_path=auto)) - every probe path that is ext4/xfs on NVMe (C(class.kind=nvme)), not the root file system,
    with the file system's size as capacity - or are listed in O(volumes).
  - Each PV is named C(<storage_class>-<node>-<6 hex digits of node and path>) and carries the label
    C(app.kubernetes.io/managed-by=gpudirect.storage.gds_local_volumes) and the annotations C(gpudirect.storage/node),
    C(gpudirect.storage/path) (and C(gpudirect.storage/source) from facts). A PV of that name without the label is
    not the module's - the run is refused naming it, and nothing is changed. A StorageClass of that name made
    elsewhere is used as it is when it binds the same way (no provisioner, WaitForFirstConsumer), else refused.
  - A PV the module created is patched only in its capacity, reclaim policy and annotations; nothing is deleted.
  - M(gpudirect.storage.gds_node_probe) with O(gpudirect.storage.gds_node_probe#module:storage_class) proves GDS through
    a claim of this class on every node (C(docs/gds_node_probe.md), "GDS storage for pods").
extends_documentation_fragment:
  - gpudirect.storage._attributes
  - gpudirect.storage._attributes.ACTIONGROUP_K8S
  - gpudirect.storage._k8s_auth
attributes:
  check_mode:
    support: full
    details: Reads the nodes, the StorageClass and the PVs and reports what would be created or patched; writes nothing.
  diff_mode:
    support: full
    details: The StorageClass and each PV created or patched, before and after (labels, annotations, spec).
requirements:
  - kubernetes (Python library)
options:
  storage_class:
    description: Name of the StorageClass, and of the PVs' C(storageClassName).
    type: str
    default: nvme-gds
  node_facts:
    description:
      - Kubernetes node name -> that host's gds facts (C(ansible_facts.gds) of M(gpudirect.storage.gds_facts), best with
        C(probe_path=auto)). Each probe path GDS can serve as a local file system becomes a volume; the others are
        listed in RV(left_out) with why.
      - Mutually exclusive with O(volumes).
    type: dict
  volumes:
    description:
      - The volumes, listed - each with C(node) (the Kubernetes node name), C(path) (the absolute directory on the
        node, its data mount) and C(capacity) (a Kubernetes quantity, for example C(3576Gi)), all three required.
      - Mutually exclusive with O(node_facts).
    type: list
    elements: dict
seealso:
  - module: gpudirect.storage.gds_facts
  - module: gpudirect.storage.gds_node_probe
author:
  - gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: Local PVs of class nvme-gds on the data mounts gds_facts found on the GPU hosts
  gpudirect.storage.gds_local_volumes:
    kubeconfig: /etc/kubernetes/admin.conf
    storage_class: nvme-gds
    # inventory host name = Kubernetes node name here; map them if yours differ
    node_facts: "{{ dict(groups['gds_hosts'] | zip(groups['gds_hosts'] | map('extract', hostvars, ['ansible_facts', 'gds']))) }}"

- name: Or name the volumes
  gpudirect.storage.gds_local_volumes:
    storage_class: nvme-gds
    volumes:
      - {node: gpu-a, path: /mnt/nvme0, capacity: 3576Gi}
"""

RETURN = r"""
storage_class:
  description: The StorageClass's C(name) and C(action) (C(created), C(unchanged), C(refused); in check mode C(would create)).
  returned: always
  type: dict
  sample: {name: nvme-gds, action: unchanged}
volumes:
  description: One record per volume - C(name) (the PV), C(node), C(path), C(capacity), C(action) (C(created), C(updated),
    C(unchanged); in check mode C(would create), C(would update)).
  returned: always
  type: list
  elements: dict
left_out:
  description: With O(node_facts), each probe path that did not become a volume - C(node), C(path), C(why).
  returned: always
  type: list
  elements: dict
diff:
  description: Each StorageClass and PV created or patched (C(storageclass/<name>), C(persistentvolume/<name>)), before and after.
  returned: when diff mode is on
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_local_volumes as backend
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_local_volumes import argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           mutually_exclusive=backend.MUTUALLY_EXCLUSIVE, required_one_of=backend.REQUIRED_ONE_OF)
    if not backend.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=backend.IMPORT_ERROR)
    failure, result = backend.run(module.params, module.check_mode, diff=module._diff)
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
