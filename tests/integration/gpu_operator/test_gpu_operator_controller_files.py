# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_operator with kubernetes.core's conventions, end to end (real ansible-playbook, real helm,
the API emulator): a vault-encrypted kubeconfig and a values file from the playbook's files/
reach the module through its action plugin; then the K8S_AUTH_HOST / K8S_AUTH_API_KEY /
K8S_AUTH_SSL_CA_CERT environment alone reaches the same cluster (an idempotent re-run)."""

from __future__ import annotations

import json
import os
import sys

from ansible.parsing.vault import VaultLib, VaultSecret

from gpu_operator_rig import CHART, helm_bins, rig  # noqa: F401 pylint: disable=import-error,unused-import
from k8s_emulator.suite import admin_token, run_playbook  # pylint: disable=import-error

PLAYBOOK = """---
- name: Gpu_operator with files from the controller
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Run gpudirect.storage.gpu_operator
      gpudirect.storage.gpu_operator:
        chart_ref: {chart}
        helm_binary: {helm}
        kubeconfig: "{{{{ go_kubeconfig | default(omit) }}}}"
        values_files: [site-values.yaml]
        wait_timeout: 60
"""


def _play(rig, env=None, **extra):
    rc, tasks, stdout, stderr = run_playbook(
        ["-i", "localhost,", os.path.join(rig.tmp, "site.yml"), "--vault-password-file", os.path.join(rig.tmp, "vault-pw"),
         "-e", json.dumps(dict(extra, ansible_python_interpreter=sys.executable))], rig.tmp, dict(rig.env, **(env or {})))
    return rc, [hosts for name, hosts in tasks if "gpu_operator" in name][0]["localhost"], stdout + stderr


def test_vault_kubeconfig_and_values_from_files_then_k8s_auth_environment(rig):
    files = os.path.join(rig.tmp, "files")
    os.makedirs(files)
    with open(os.path.join(rig.tmp, "vault-pw"), "w") as handle:
        handle.write("integration-pw\n")
    with open(rig.emu.kubeconfig) as handle:
        kubeconfig = handle.read()
    with open(os.path.join(files, "admin.conf"), "wb") as handle:
        handle.write(VaultLib([("default", VaultSecret(b"integration-pw"))]).encrypt(kubeconfig))
    with open(os.path.join(files, "site-values.yaml"), "w") as handle:
        handle.write("gds:\n  version: 2.29.4\n")
    with open(os.path.join(rig.tmp, "site.yml"), "w") as handle:
        handle.write(PLAYBOOK.format(chart=CHART, helm=rig.helm))

    # relative names: the playbook's files/; the kubeconfig is vault-encrypted there
    rc, res, out = _play(rig, go_kubeconfig="admin.conf")
    assert rc == 0, out[-4000:]
    assert res["changed"] is True and "applied_values" not in res
    assert res["cluster_policy"]["state"] == "ready"
    assert rig.user_values() == {"gds": {"enabled": True, "version": "2.29.4"}}
    assert "s3cr3t" not in out and "token:" not in out
    # the files sent for the run are gone from the remote temporary directory
    remote_tmp = os.path.join(rig.tmp, "ansible-remote")
    assert not [f for _d, _s, names in os.walk(remote_tmp) for f in names if f.startswith("gpu-operator-")]

    # no kubeconfig at all: host, token and CA from the environment (kubernetes.core's names)
    token = admin_token(rig.emu.kubeconfig)
    rc, res, out = _play(rig, env={"K8S_AUTH_HOST": rig.emu.url, "K8S_AUTH_API_KEY": token,
                                   "K8S_AUTH_SSL_CA_CERT": rig.emu.ca})
    assert rc == 0, out[-4000:]
    assert res["changed"] is False and res["release"]["revision"] == 1, res.get("reasons")
    assert res["cluster_policy"]["state"] == "ready"
    assert token not in out
