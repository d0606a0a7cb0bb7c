#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: gds_node_probe
short_description: Prove GPUDirect Storage on every Kubernetes GPU node with a cuFile probe pod
version_added: 0.1.0
description:
  - Runs where C(kubectl)/C(helm) run (the controller or a kube admin host) and, for every node matching
    O(node_selector), runs a short-lived probe pod pinned to that node. The pod runs the collection's own
    gds_facts code (collectors, the cuFile write/read/verify probe and the verdict) from a ConfigMap, so there is no
    image to build. Each node gets the verdict C(gds_facts) gives a host - C(gds), C(p2pdma), C(compat), C(unavailable) or
    C(failed) with the reason, verified bytes, write/read GB/s and the nvidia-fs counter delta when available.
  - The pod is a GDS workload - one O(gpu_resource) (or O(runtime_class) with every GPU visible), C(NVIDIA_GDS=enabled)
    so the NVIDIA container toolkit injects C(/dev/nvidia-fs*), the probe directories as hostPath, C(/run/udev)
    read-only, the node's O(cufile_json), tolerations for the GPU taint, C(activeDeadlineSeconds), unprivileged
    (seccomp C(RuntimeDefault), every capability dropped, no privilege escalation).
  - The probe code is carried in an immutable ConfigMap named after the run and the code's sha256; the pod's command
    (in the pod spec) checks that sha256 before it runs anything and fails the node with C(failure.kind=bundle)
    when the ConfigMap was replaced.
  - "A failed or refused API call does not end the run with a traceback - it fails its node (C(failure.kind=api)) or
    the run, naming the verb and the resource (for example C(patch nodes/gpu-b: 403 Forbidden)), and the result
    keeps every verdict and every label already set. C(docs/rbac/gds_node_probe.yaml) is the least RBAC it needs."
  - Pods run in parallel (at most O(parallel) at a time). A pod that cannot run is named per node from its own status -
    Pending with the scheduler's message, C(ErrImagePull)/C(ImagePullBackOff) with the image, C(OOMKilled), a
    non-zero exit with the log tail, a NotReady node - and the module fails naming each such node.
  - Every pod and the ConfigMap it creates are deleted before it returns, also on failure or SIGTERM/SIGINT; they carry
    the label C(app.kubernetes.io/managed-by=gpudirect.storage.gds_node_probe) and a later run deletes leftovers of
    runs past their deadline.
  - The O(image) needs C(/bin/sh), C(python3) and C(libcufile.so.0); the module fails with a clear message when it lacks
    either. See C(docs/gds_node_probe.md) for how to check an image.
extends_documentation_fragment:
  - gpudirect.storage._attributes
  - gpudirect.storage._attributes.ACTIONGROUP_K8S
  - gpudirect.storage._k8s_auth
attributes:
  check_mode:
    support: full
    details:
      - Lists the nodes only; no pod or ConfigMap is created and no label changes. With O(labels), RV(labels_removed)
        names the nodes outside the selection whose labels a real run would remove (the selected nodes' labels depend
        on their verdicts, unknown without a probe).
  diff_mode:
    support: full
    details: With O(labels), the module's labels and annotations of every node changed (or to be removed in check mode), before and after.
requirements:
  - kubernetes (Python library)
options:
  namespace:
    description:
      - Namespace of the probe pods and their ConfigMap. It must allow hostPath volumes (Pod Security level
        C(privileged)); the GPU Operator's namespace does.
    type: str
    default: gpu-operator
  node_selector:
    description:
      - Label selector of the nodes to probe. The GPU Operator labels GPU nodes C(nvidia.com/gpu.present=true).
      - With this default and no O(nodes), only the GPU nodes the GPU Operator is asked to give GDS are probed, by
        the rule M(gpudirect.storage.gpu_operator) waits by (the ClusterPolicy, or the NVIDIADriver CR that selects
        the node); the others are listed in RV(not_meant_for_gds). Without a ClusterPolicy every GPU node is probed.
    type: str
    default: nvidia.com/gpu.present=true
  nodes:
    description: Probe only these node names (among those the selector matches).
    type: list
    elements: str
  image:
    description: Container image with C(/bin/sh), C(python3) and C(libcufile.so.0) (air-gapped sites use a mirror).
    type: str
    default: nvcr.io/nvidia/pytorch:25.12-py3
  image_pull_policy:
    description: The pod's C(imagePullPolicy).
    type: str
    choices: [Always, IfNotPresent, Never]
    default: IfNotPresent
  image_pull_secrets:
    description: Names of Secrets in O(namespace) to pull O(image) with.
    type: list
    elements: str
    default: []
  probe_path:
    description:
      - Directories on the node (the NVMe data mount) the probe writes to; each is mounted into the pod at the same path.
      - Not used with O(storage_class).
    type: list
    elements: path
    default: [/var/tmp]
  storage_class:
    description:
      - Prove GDS on the volume a pod of this StorageClass is given, instead of O(probe_path) - each probe pod gets a
        PersistentVolumeClaim of its own (1Mi, ReadWriteOnce, owned by the run's ConfigMap) mounted at
        C(/gds-volume). The class must bind with C(volumeBindingMode=WaitForFirstConsumer), so the claim is bound to a
        PV the node can mount (local PVs with node affinity - M(gpudirect.storage.gds_local_volumes) creates them).
      - The node's record names the PV and its path on the node (C(volume)); the verdict's reasons name that path.
        The claims are deleted after the probe, and a PV with reclaim policy C(Retain) that a claim bound gets its
        C(claimRef) removed so it is C(Available) again, as before the probe.
      - A node without a PV of the class it can mount fails with C(failure.kind=unschedulable) and the scheduler's message.
    type: str
  probe_size_mb:
    description: MiB written, read back and compared per path.
    type: int
    default: 64
  probe_threads:
    description: Parallel I/O threads of the probe (0 = one call).
    type: int
    default: 0
  probe_timeout:
    description: Seconds the probe child may run inside the pod.
    type: int
    default: 60
  cufile_lib:
    description: Path of libcufile inside the image when it is not in the usual places.
    type: path
  cufile_json:
    description:
      - The node's cufile.json, mounted read-only at C(/etc/cufile.json) in the pod (hostPath of type File). Empty
        to keep what the image and the container toolkit provide (the driver root's C(/etc/cufile.json)).
    type: str
    default: /etc/cufile.json
  gpu_resource:
    description:
      - Extended resource requested (one). Empty requests none and sets C(NVIDIA_VISIBLE_DEVICES=all) instead; use it
        with O(runtime_class) on nodes whose GPUs are all allocated (the probe then shares GPUs with running jobs).
    type: str
    default: nvidia.com/gpu
  runtime_class:
    description: The pod's C(runtimeClassName) (for example C(nvidia)).
    type: str
  memory:
    description: Memory request and limit of the probe container.
    type: str
    default: 2Gi
  privileged:
    description:
      - Run the probe container privileged, with every capability and no seccomp profile. Not needed where the toolkit
        injects the GDS devices and the probe writes to a local file system; distributed file systems over RDMA need
        more (C(docs/gds_node_probe.md)).
    type: bool
    default: false
  tolerations:
    description: Tolerations added to the one for the C(nvidia.com/gpu) taint.
    type: list
    elements: dict
    default: []
  parallel:
    description: At most this many probe pods at a time.
    type: int
    default: 32
  pod_timeout:
    description: The pod's C(activeDeadlineSeconds); a pod not done by then is reported with its status.
    type: int
    default: 300
  schedule_timeout:
    description: Seconds a pod may stay unschedulable before its node is reported with the scheduler's message.
    type: int
    default: 60
  require_mode:
    description: Fail naming every node whose verdict is weaker (the gate of gds_facts' O(require_mode)).
    type: str
    choices: [gds, p2pdma, compat]
  require_proven:
    description: With O(require_mode=gds), passed to the gds_facts gate (nvidia-fs counters must prove the path).
    type: bool
    default: true
  labels:
    description:
      - Label each node proven by this run C(node-restriction.kubernetes.io/gpudirect.storage.gds-mode=<mode>) and
        C(node-restriction.kubernetes.io/gpudirect.storage.gds-verified=true|false), with the reason and GB/s in the
        annotation C(gpudirect.storage/gds-probe) and the time of the proof (RFC 3339, UTC) in
        C(gpudirect.storage/gds-proven-at). A node is patched (and C(changed)) when one of the labels changes or its proof time is more than a day old.
      - The labels are under C(node-restriction.kubernetes.io/), which Kubernetes' NodeRestriction admission forbids a
        kubelet to change on its own Node, so a node cannot label itself proven.
      - After the run exactly the nodes this run proved carry them - every other node carrying any of these labels or
        annotations loses them all - a node that left O(node_selector) or O(nodes), and a node whose probe pod gave no
        verdict (C(failure) set). A node whose verdict changed gets the new one.
    type: bool
    default: false
seealso:
  - module: gpudirect.storage.gds_facts
  - module: gpudirect.storage.gpu_operator
author:
  - gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: Prove GDS on every GPU node and label the nodes
  gpudirect.storage.gds_node_probe:
    kubeconfig: /etc/kubernetes/admin.conf
    probe_path: [/mnt/nvme]
    labels: true
    require_mode: compat
  register: gds_nodes

- name: From an AWX job with a Kubernetes bearer-token credential (K8S_AUTH_HOST, K8S_AUTH_API_KEY, ...)
  gpudirect.storage.gds_node_probe:
    probe_path: [/mnt/nvme]
"""

RETURN = r"""
nodes:
  description:
    - One record per node, sorted by name - C(name), C(mode), C(reason), C(reasons), C(verified), C(proven),
      C(verified_bytes), C(throughput), C(versions), C(nvfs_delta), C(pod), C(source) (C(kubernetes)), with
      O(storage_class) C(volume) (C(storage_class), C(claim), C(pv), C(path) on the node, C(mount_path), C(reclaim_policy),
      C(released) - the PV is Available again) and
      C(failure) (C(kind), C(message)) when the pod could not give a verdict (C(kind) C(bundle) - the probe code was
      not the module's; C(api) - an API call for this node failed).
  returned: always
  type: list
  elements: dict
not_meant_for_gds:
  description: GPU nodes left out of the default selection because their ClusterPolicy / NVIDIADriver has GDS off.
  returned: success
  type: list
  elements: str
summary:
  description: Counts by mode, the nodes that failed to probe and those below O(require_mode).
  returned: always
  type: dict
labels_changed:
  description: Nodes that were given (or got a new) verdict's labels.
  returned: always
  type: list
  elements: str
labels_removed:
  description:
    - Nodes whose labels and annotations of the module were removed (in check mode - would be removed) because this
      run did not prove them.
  returned: always
  type: list
  elements: str
diff:
  description: The module's labels and annotations of each node changed, before and after (with C(--diff) and O(labels)).
  returned: when diff mode is on and O(labels=true)
  type: dict
  sample: {before: {gpu-b: {"node-restriction.kubernetes.io/gpudirect.storage.gds-mode": gds}}, after: {gpu-b: {}}}
cleaned_leftovers:
  description: Pods and ConfigMaps of earlier runs that were deleted first.
  returned: always
  type: list
  elements: str
deleted:
  description: How many pods and ConfigMaps (and with O(storage_class) claims) of this run were deleted (all it created).
  returned: when pods were created
  type: dict
  sample: {pods: 8, configmaps: 1}
problem:
  description:
    - "The failure message when a node could not be probed, is below O(require_mode) or an API call failed (naming
      the verb and the resource, for example C(patch nodes/gpu-b: 403 Forbidden)); the module then fails with it.
      Else null. Lets a caller that ignores the failure tell it from other errors."
  returned: always
  type: str
run_id:
  description: The run label value of this run's pods and ConfigMap.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_node_probe as main_mod
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_node_probe import argument_spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    if not main_mod.HAS_KUBERNETES:
        module.fail_json(msg=missing_required_lib("kubernetes"), exception=main_mod.IMPORT_ERROR)
    failure, result = main_mod.run(module.params, module.check_mode, diff=module._diff)
    result["problem"] = failure
    if failure:
        result.pop("msg", None)  # the verdict line; the failure message says more
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
