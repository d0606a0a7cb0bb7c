#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask
# long-file: documentation of 26 options and 11 return values; the code is the 20 lines at the end

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_operator
short_description: Install or upgrade the NVIDIA GPU Operator with GPUDirect Storage and wait until nvidia-fs is up
version_added: 0.1.0
description:
  - Runs C(helm upgrade --install) of the NVIDIA GPU Operator chart with GDS enabled, with helm 3 (3.19+) or
    helm 4 (detected from C(helm version)). Runs where C(kubectl)/C(helm) would run, the controller or a kube
    admin host; needs the C(kubernetes) and C(PyYAML) Python libraries there.
  - C(changed) is honest without the helm-diff plugin. The merged user values (O(values_files), O(values),
    O(gds), O(rdma), O(driver)) and the chart name/version are compared with C(helm get values) and
    C(helm history). A release that is not C(deployed) (failed, pending-*) needs action.
  - Values reach helm through one temporary file (mode 0600), never through C(--set) strings.
  - "Preflight, before anything changes, by chart version: GDS needs the operator-managed driver (fails with
    C(driver.enabled: false)) and is rejected by the operator with C(driver.usePrecompiled: true); GDS >= 2.17.5
    needs the open kernel module, so the module fails on C(driver.kernelModuleType: proprietary) (charts >=
    v25.3.0) or C(driver.useOpenKernelModules: false) (older charts; a no-op, only warned about, since v25.3.0).
    GPU nodes (labelled by the operator, or with an NVIDIA PCI device in their NFD labels) meant to get GDS whose
    OS the GPU Operator does not support for GDS are named in a warning, or a failure with O(unsupported_os=fail).
    A chart switch given as a string (C(gds.enabled: \"false\")) fails naming the value."
  - "Which nodes get GDS: every GPU node the ClusterPolicy's C(gds) in ClusterPolicy mode; in NVIDIADriver mode
    (C(driver.nvidiaDriverCRD.enabled)) the C(gds) of the one NVIDIADriver CR that selects the node, by the
    operator's rule (the non-default CR whose C(nodeSelector) matches, else the C(default: true) CR). So GDS may
    be on one node pool only; RV(nodes) and RV(gds_nodes) say which nodes are meant to get it."
  - After helm, with O(wait), it waits until the ClusterPolicy C(status.state) is C(ready) (not merely because it
    found no GPU node, reason C(NoGPUNodes)), at least one GPU node exists, and on every GPU node meant to get GDS the driver pod's
    (label C(app.kubernetes.io/component=nvidia-driver), so ClusterPolicy, NVIDIADriver and OpenShift Driver
    Toolkit pods alike) C(nvidia-fs-ctr) container (and C(nvidia-peermem-ctr) with RDMA) is ready and runs the
    image asked for. The operator labels GPU nodes itself (C(nvidia.com/gpu.present=true) from NFD's PCI labels),
    so on a fresh cluster the wait first waits for those labels; without any it fails saying why (no NVIDIA PCI
    device, NFD missing). helm's own C(--wait) returns before the operator has even created these containers. On
    timeout it fails and names the nodes, the containers and their waiting reasons (for example
    C(CrashLoopBackOff) and the last termination message).
  - "Before a change the chart is rendered (C(helm template), in check mode too): values it refuses fail the run,
    nothing changed, naming the value paths set."
  - "On failure, C(changed) and what is undone follow C(helm history) before and after. With
    O(rollback_on_failure), a revision this run created is rolled back to the previous good one, or a failed first
    install is uninstalled; the CRDs helm applied and the namespace it created stay (helm never removes them), so
    C(changed) is true and RV(left_in_cluster) and the message name them, with the commands to remove them."
  - "The run ends within O(wait_timeout), the rollback or uninstall included (see O(wait_timeout))."
  - "A GPU Operator the module did not install (O(install_method)): installed by OLM (OpenShift's OperatorHub, a
    Subscription or CSV of C(gpu-operator-certified)), or a ClusterPolicy no helm release owns. Then no helm runs: the
    options O(gds), O(rdma) and O(driver) are compared with the ClusterPolicy's C(spec.gds.enabled), C(spec.gds.version),
    C(spec.gds.repository), C(spec.gds.image), C(spec.driver.rdma.enabled), C(spec.driver.rdma.useHostMofed),
    C(spec.driver.kernelModuleType) and C(spec.driver.version), and only those that differ are written, by one JSON
    merge patch (no other field of the ClusterPolicy is touched). With GDS on and a version known, C(spec.gds.repository)
    and C(spec.gds.image) are set to the chart's defaults where the spec has none (OLM's operator has no default
    nvidia-fs image). The same preflight, readiness wait and node reports as with helm follow; the driver pods are looked
    up in the operator's namespace (the Subscription's, else the ClusterPolicy's C(status.namespace)). On a failed wait,
    with O(rollback_on_failure), the managed paths are patched back as they were. See C(docs/gpu_operator.md), OpenShift."
  - "A helm release owning a ClusterPolicy and an OLM install both present: the module fails naming both, nothing changed."
extends_documentation_fragment:
  - gpudirect.storage._attributes
  - gpudirect.storage._attributes.ACTIONGROUP_K8S
  - gpudirect.storage._k8s_auth
attributes:
  check_mode:
    support: full
    details: Only read-only helm commands (C(version), C(show chart), C(history), C(get values)) and API reads run;
      no ClusterPolicy patch.
  diff_mode:
    support: full
    details: The user values of the release before and after (YAML), with the chart name-version; credentials
      masked as described in O(show_values). Without helm (O(install_method)), the ClusterPolicy's managed spec paths
      before and after.
requirements:
  - helm 3 (3.19 or later tested) or helm 4 (4.1 tested)
  - kubernetes (Python library)
  - PyYAML (Python library, for O(values_files) and the diff)
options:
  install_method:
    description:
      - How the GPU Operator is (to be) installed. V(auto) finds out, before anything changes - OLM when a Subscription
        to C(gpu-operator-certified) or its CSV exists (any namespace); else V(olm)'s ClusterPolicy mode when a
        ClusterPolicy exists that no helm release owns (no C(meta.helm.sh/release-name) annotation); else helm.
      - V(helm) installs or upgrades the chart (fails when OLM installed the operator). V(olm) patches the existing
        ClusterPolicy (fails when a helm release owns one), O(state=absent), O(values) and O(values_files) are refused
        there.
      - V(auto) and V(olm) fail, nothing changed, when the credentials may not list OLM's C(subscriptions) and
        C(clusterserviceversions) (C(operators.coreos.com)); a cluster without OLM's CRDs has no OLM. V(helm) then goes
        on with a warning that it did not check for an OLM install.
    type: str
    choices: [auto, helm, olm]
    default: auto
    version_added: 0.1.0
  state:
    description: V(present) installs or upgrades the release; V(absent) uninstalls it (CRDs stay, as with helm).
    type: str
    choices: [present, absent]
    default: present
    aliases: [release_state]
  release_name:
    description: Helm release name.
    type: str
    default: gpu-operator
    aliases: [name]
  release_namespace:
    description: Namespace of the release and of the operator (driver pods are looked up there).
    type: str
    default: gpu-operator
    aliases: [namespace]
  create_namespace:
    description: Create O(release_namespace) if absent (C(helm --create-namespace)).
    type: bool
    default: true
  chart_ref:
    description:
      - The chart. A chart name with O(chart_repo_url) (for example V(gpu-operator)), a local chart directory,
        a packaged C(.tgz), or an C(oci://) reference.
      - Air-gapped sites use a directory or C(.tgz) fetched elsewhere with C(helm pull), a repository mirror
        served over HTTP(S), or an OCI registry mirror.
      - Required with O(state=present) for a helm install; ignored (with a warning) when the operator is managed
        through OLM or a ClusterPolicy no helm release owns (O(install_method)).
    type: str
  chart_repo_url:
    description: Chart repository URL (C(helm --repo)), used with a chart name in O(chart_ref).
    type: str
  chart_version:
    description:
      - Chart version (C(helm --version)); compared with the installed release's chart version.
      - Omitted, the version C(helm show chart) reports (latest for a repository) is the desired one.
    type: str
  values:
    description: Chart values, merged over O(values_files) like C(helm -f).
    type: dict
    default: {}
    aliases: [release_values]
  values_files:
    description:
      - Values files, merged in order before O(values).
      - Files on the controller (the default), looked up like M(ansible.builtin.copy)'s C(src) (the role's and
        the playbook's C(files/) directories, or an absolute path), may be vault-encrypted; they are sent to the
        host running the module for the run and removed afterwards. With O(remote_src=true), paths on that host.
    type: list
    elements: path
    default: []
  show_values:
    description:
      - Return the merged values applied in RV(applied_values). Chart values may hold registry passwords or
        NGC API keys, so by default no result carries them.
      - Where values are shown (RV(applied_values), and the diff in diff mode), the value of every key whose name
        says it holds a credential (C(password), C(token), C(secret), C(apiKey), C(accessKey), C(auth), C(ngc),
        C(dockerconfigjson), ...; not names of secrets such as C(secretName) or C(imagePullSecrets)) is shown as
        C(********), and credentials in strings (C(nvapi-...) keys, C(user:password@) in URLs, bearer tokens)
        are masked. A credential under a name that does not say so (an C(env) list's C(value)) is masked only in
        those forms; set C(no_log) on the task to keep the diff out of the output altogether.
      - helm itself always gets the values as given (through a 0600 file).
    type: bool
    default: false
    version_added: 0.1.0
  gds:
    description:
      - GPUDirect Storage settings, written to the chart's C(gds.*) values. An option set here must not
        contradict O(values) (the module fails naming both).
    type: dict
    default: {}
    suboptions:
      enabled:
        description: C(gds.enabled). Unset means V(true) unless O(values) or a values file says otherwise.
        type: bool
      version:
        description: C(gds.version), the nvidia-fs image tag without the OS suffix (for example V(2.29.4)); the operator appends C(-<os>).
        type: str
      repository:
        description: C(gds.repository).
        type: str
      image:
        description: C(gds.image).
        type: str
  rdma:
    description: GPUDirect RDMA settings (C(driver.rdma.*)); with RDMA on, C(nvidia-peermem-ctr) must be ready too.
    type: dict
    default: {}
    suboptions:
      enabled:
        description: C(driver.rdma.enabled).
        type: bool
      use_host_mofed:
        description: C(driver.rdma.useHostMofed), MOFED/DOCA-OFED installed on the hosts rather than by the Network Operator.
        type: bool
  driver:
    description: Driver settings (C(driver.*)).
    type: dict
    default: {}
    suboptions:
      version:
        description: C(driver.version).
        type: str
      kernel_module_type:
        description: C(driver.kernelModuleType). GDS >= 2.17.5 needs V(open) (or V(auto) choosing it).
        type: str
        choices: [auto, open, proprietary]
  kubeconfig:
    description:
      - The kubeconfig. A file on the controller (the default), looked up like O(values_files) (vault-encrypted
        allowed), sent to the host running the module in a 0600 file removed afterwards; with O(remote_src=true), a
        path on that host.
      - Omitted, the environment variable E(K8S_AUTH_KUBECONFIG) of the host running the module (a path there, as
        with M(kubernetes.core.helm)), else the kubernetes client's default (E(KUBECONFIG), C(~/.kube/config)). With
        none of them and no O(host), the module fails; it never falls back to the pod's service account on its own
        (see O(in_cluster)).
      - helm (C(--kubeconfig)) and the API client read the same file. With O(host) or O(in_cluster), that file is
        written from the options (mode 0600, removed afterwards).
    type: path
    aliases: [kubeconfig_path]
  kubeconfig_content:
    description:
      - A kubeconfig as a YAML string or a dict, for example from a vault. It is written to a temporary file
        (mode 0600, removed afterwards) and never logged.
      - Mutually exclusive with O(kubeconfig), O(host) and O(in_cluster).
    type: raw
  remote_src:
    description:
      - V(false) (default), O(kubeconfig) and O(values_files) are files on the controller, sent to the host running
        the module; V(true), they are paths on that host (for example a kube admin host's C(/etc/kubernetes/admin.conf)).
    type: bool
    default: false
  helm_binary:
    description: helm executable, a name looked up in C(PATH) or an absolute path.
    type: str
    default: helm
    aliases: [binary_path]
  wait:
    description:
      - Wait for helm (C(--wait) with helm 3, C(--wait=watcher) with helm 4) and then for GDS readiness
        (ClusterPolicy ready and C(nvidia-fs-ctr) ready on every GPU node).
      - Also applies when nothing changed, so a re-run verifies GDS is up.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds (or a duration like V(10m)) the whole run may take. helm and the readiness wait share it less a
        reserve (eight times the slowest read-only helm call, more on a loaded host; at least 3 s and a fifth, at most
        60 s or two thirds) in which a rollback or the uninstall of a failed first install runs, without C(--wait) so that
        it cannot time out and leave the release C(failed). The result's RV(elapsed) is the time taken.
      - When the reads before the upgrade leave no time within it, the run fails before helm changes anything.
    type: raw
    default: 600
  rollback_on_failure:
    description:
      - When helm fails or GDS is not ready in time after this run created a release revision, roll back to the
        previous deployed revision (C(helm rollback)), or uninstall a failed first install; then fail. A release
        found stuck in C(pending-*) is rolled back too. Nothing is undone when helm created no revision.
    type: bool
    default: true
  unsupported_os:
    description: What to do when GDS is enabled and GPU nodes run an OS the GPU Operator does not support for GDS.
    type: str
    choices: [warn, fail]
    default: warn
  expected_gpu_nodes:
    description:
      - How many GPU nodes (label C(nvidia.com/gpu.present=true), written by the operator) must exist and be
        ready, for example V(64). Without it every node the operator labels, or whose NFD labels show an NVIDIA
        PCI device, must be ready, and at least one must exist while GDS is enabled.
    type: int
  gpu_node_selector:
    description:
      - A label selector (V(key=value), V(key!=value), V(key), V(!key), comma-separated) of nodes that must all
        become GPU nodes with GDS ready, for example V(node-pool=gpu).
    type: str
notes:
  - Why not M(kubernetes.core.helm) - without the helm-diff plugin its C(changed) (C(default_check)) ignores
    C(set_values), it treats failed releases as absent, and helm's C(--wait) is no GDS readiness signal. It
    supports helm 4 since kubernetes.core 6.4, and its C(reset_values) still defaults to true (like this module's
    C(--reset-values)). See C(docs/gpu_operator.md).
  - Runs with its action plugin, which finds O(kubeconfig) and O(values_files) on the controller (decrypting vault
    files) and sends them to the host running the module for the run, as kubernetes.core's actions do.
  - C(changed) compares user-supplied values, not rendered manifests. A chart whose content changes without a new
    chart version is not detected.
seealso:
  - module: kubernetes.core.helm
author:
  - gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: GPU Operator with GDS from a local chart (air-gapped)
  gpudirect.storage.gpu_operator:
    chart_ref: /srv/charts/gpu-operator-v26.7.0.tgz
    kubeconfig: /etc/kubernetes/admin.conf
    remote_src: true  # the kubeconfig is a file of the host running the module
    gds:
      version: "2.29.4"
    driver:
      kernel_module_type: open
    wait_timeout: 15m

- name: From a chart repository, with GPUDirect RDMA and host MOFED
  gpudirect.storage.gpu_operator:
    chart_ref: gpu-operator
    chart_repo_url: "{{ gpu_operator_chart_repo_url }}"
    chart_version: v26.7.0
    rdma:
      enabled: true
      use_host_mofed: true
    values:
      operator:
        defaultRuntime: containerd
    unsupported_os: fail

- name: Kubeconfig from a vault, nothing logged
  gpudirect.storage.gpu_operator:
    chart_ref: oci://registry.example/nvidia/gpu-operator
    chart_version: v26.7.0
    kubeconfig_content: "{{ vault_admin_kubeconfig }}"

- name: On a kube admin host, with a values file from the playbook's files/ and the host's own kubeconfig
  gpudirect.storage.gpu_operator:
    chart_ref: /srv/charts/gpu-operator-v26.7.0.tgz
    values_files: [gpu-operator-site.yaml]  # files/gpu-operator-site.yaml on the controller
  delegate_to: kube-admin-1
  environment:
    K8S_AUTH_KUBECONFIG: /etc/kubernetes/admin.conf  # a path on kube-admin-1
    K8S_AUTH_CONTEXT: kubernetes-admin@cluster

- name: API server and token (for example from a vault) instead of a kubeconfig
  gpudirect.storage.gpu_operator:
    chart_ref: /srv/charts/gpu-operator-v26.7.0.tgz
    host: https://api.example:6443
    api_key: "{{ vault_gpu_operator_token }}"
    ca_cert: /etc/pki/cluster-ca.pem

- name: OpenShift, operator installed from OperatorHub (OLM) - GDS on by a patch of its ClusterPolicy
  gpudirect.storage.gpu_operator:
    kubeconfig: /etc/openshift/admin.kubeconfig
    remote_src: true
    gds:
      version: "2.29.4"
    rdma:
      enabled: false  # IOMMU strict, no peermem wanted
    driver:
      kernel_module_type: open

- name: Remove the release
  gpudirect.storage.gpu_operator:
    state: absent
"""

RETURN = r"""
install_method:
  description: V(helm), V(olm) (an OLM install found) or V(clusterpolicy) (a ClusterPolicy no helm release owns).
  returned: when the cluster could be read
  type: str
  sample: olm
operator:
  description: The GPU Operator the module patched instead of a helm release (OLM's Subscription, CSV and its phase).
  returned: when O(install_method) resolved to OLM or a ClusterPolicy
  type: dict
  sample: {method: olm, cluster_policy: gpu-cluster-policy, namespace: nvidia-gpu-operator,
           subscription: gpu-operator-certified, csv: gpu-operator-certified.v26.7.0, csv_phase: Succeeded,
           version: 26.7.0}
release:
  description:
    - The release after the run (before it in check mode). C(status) is V(absent) when not installed.
    - C(status) is V(none) (and C(name) null) when the operator is not a helm release (RV(install_method) V(olm) or
      V(clusterpolicy)).
  returned: always
  type: dict
  sample: {name: gpu-operator, namespace: gpu-operator, revision: 3, chart: gpu-operator-v26.7.0,
           chart_version: v26.7.0, app_version: v26.7.0, status: deployed}
applied_values:
  description:
    - The merged user-supplied values applied (desired ones in check mode), credentials masked as described in
      O(show_values); empty for O(state=absent).
  returned: when O(show_values=true)
  type: dict
  sample: {gds: {enabled: true, version: "2.29.4"}, driver: {kernelModuleType: open}, ngc: {apiKey: "********"}}
reasons:
  description: "Why the release (or the ClusterPolicy spec, for example C(spec.gds.enabled: false -> true)) needed
    action (empty when nothing changed)."
  returned: always
  type: list
  elements: str
  sample: ["values differ at gds.version"]
cluster_policy:
  description: ClusterPolicy name, C(status.state) and conditions as last seen (empty when not waited on).
  returned: always
  type: dict
  sample: {name: cluster-policy, state: ready, conditions: [{type: Ready, status: "True", reason: Reconciled, message: ""}]}
nodes:
  description:
    - GPU nodes with their OS (NFD labels), whether GDS supports it, and (after a wait) whether the driver pod's
      required containers are ready (C(ready)) and C(nvidia-fs-ctr) is (C(gds_ready)), with container details.
      C(gpu_labelled) is false for a node with an NVIDIA PCI device the operator has not labelled yet.
    - C(gds_expected) says whether the node is meant to get GDS, C(driver_config) which ClusterPolicy or
      NVIDIADriver decides that (for example V(NVIDIADriver storage)).
  returned: always
  type: list
  elements: dict
  sample: [{name: gpu-a, os: ubuntu 22.04, os_supported: true, gpu_labelled: true, ready: true, gds_ready: true,
            gds_expected: true, driver_config: ClusterPolicy cluster-policy,
            pod: nvidia-driver-daemonset-x7k2p,
            containers: [{name: nvidia-fs-ctr, ready: true, state: running, reason: "", restart_count: 0,
                          image: nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4-ubuntu22.04}]}]
helm_version:
  description: The helm version used.
  returned: always
  type: str
  sample: 3.19.0
commands:
  description: The helm commands run, shell-quoted. Kubeconfig contents never appear (only a file path).
  returned: always
  type: list
  elements: str
rolled_back_to:
  description: The revision the release was rolled back to after a failure (null when none).
  returned: failure
  type: int
gds_nodes:
  description:
    - The GPU nodes meant to get GDS (C(enabled)) and the others (C(disabled)), from the ClusterPolicy or the
      NVIDIADriver CR that selects each node.
  returned: with O(state=present)
  type: dict
  sample: {enabled: [gpu-a], disabled: [gpu-b]}
left_in_cluster:
  description:
    - What a failed first install left in the cluster after the uninstall, the CRDs (C(crds)) and the namespace
      (C(namespace), null when it existed before). Null when the API could not be read.
  returned: failure of a first install
  type: dict
  sample: {crds: [clusterpolicies.nvidia.com, nvidiadrivers.nvidia.com], namespace: gpu-operator}
elapsed:
  description: Seconds the module's run took (bounded by O(wait_timeout)).
  returned: always
  type: float
  sample: 42.7
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gpu_operator_policy import (
    MUTUALLY_EXCLUSIVE, REQUIRED_IF, GpuOperatorManager, ModuleFailure, argument_spec)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_if=REQUIRED_IF, mutually_exclusive=MUTUALLY_EXCLUSIVE)
    manager = GpuOperatorManager(module)
    failure = result = None
    started = time.monotonic()
    try:
        result = manager.run()
    except ModuleFailure as exc:
        failure = exc
    finally:
        manager.cleanup()
    if failure is not None:
        module.fail_json(msg=failure.msg, elapsed=round(time.monotonic() - started, 1), **failure.extra)
    module.exit_json(elapsed=round(time.monotonic() - started, 1), **result)


if __name__ == "__main__":
    main()
