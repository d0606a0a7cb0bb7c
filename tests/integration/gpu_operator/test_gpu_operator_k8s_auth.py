# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The cluster modules as AWX and kubernetes.core users drive them (real ansible-playbook, real
helm, the API emulator over HTTPS, which answers 401 to a bearer token it does not know):

* ``module_defaults`` for ``group/gpudirect.storage.k8s`` carries host / api_key / ca_cert to
  gpu_operator and gds_node_probe, while a host module in the same play (cufile_config, with its
  own defaults) runs untouched; gpu_operator under kubernetes.core.helm's option names;
* no kubeconfig anywhere (HOME is empty) and a pod's service-account environment: without
  credentials the run fails saying so, before helm or the API is asked anything."""

from __future__ import annotations

import json
import os
import sys

from gpu_operator_rig import CHART, helm_bins, rig  # noqa: F401 pylint: disable=import-error,unused-import
from k8s_emulator.suite import admin_token, run_playbook  # pylint: disable=import-error

PLAYBOOK = """---
- name: Module defaults for each action group of the collection
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/gpudirect.storage.k8s:
      host: "{{ k8s_host }}"
      api_key: "{{ k8s_token }}"
      ca_cert: "{{ k8s_ca }}"
      validate_certs: true
    gpudirect.storage.cufile_config:
      cufile_version: "1.15"
  tasks:
    - name: Run gpudirect.storage.gpu_operator
      gpudirect.storage.gpu_operator:
        chart_ref: "{{ chart }}"
        binary_path: "{{ helm }}"  # kubernetes.core.helm's names
        release_values:
          gds:
            version: 2.29.4
        wait_timeout: 60
    - name: Run gpudirect.storage.gds_node_probe
      gpudirect.storage.gds_node_probe:
        probe_path: [/var/tmp]
      check_mode: true  # lists the nodes it would probe
    - name: Run gpudirect.storage.cufile_config
      gpudirect.storage.cufile_config:
        path: "{{ cufile_path }}"
        settings:
          logging:
            level: ERROR
"""


def _pod_env(rig):
    """An AWX container-group pod without kubeconfig: HOME empty, its service account's variables set."""
    home = os.path.join(rig.tmp, "empty-home")
    os.makedirs(home, exist_ok=True)
    env = dict(rig.env, HOME=home, KUBERNETES_SERVICE_HOST="127.0.0.1", KUBERNETES_SERVICE_PORT="1")
    for name in [n for n in env if n.startswith("K8S_AUTH_")] + ["KUBECONFIG"]:
        env.pop(name, None)
    return env


def _play(rig, env, playbook, **extra):
    path = os.path.join(rig.tmp, "play-%d.yml" % len(os.listdir(rig.tmp)))
    with open(path, "w") as handle:
        handle.write(playbook)
    rc, tasks, stdout, stderr = run_playbook(
        ["-i", "localhost,", path, "-e", json.dumps(dict(extra, ansible_python_interpreter=sys.executable))], rig.tmp, env)
    return rc, {name.split(".")[-1]: hosts["localhost"] for name, hosts in tasks}, stdout + stderr


def test_module_defaults_per_group_and_kubernetes_core_names(rig):
    token = admin_token(rig.emu.kubeconfig)
    cufile = os.path.join(rig.tmp, "cufile.json")
    rc, tasks, out = _play(rig, _pod_env(rig), PLAYBOOK, k8s_host=rig.emu.url, k8s_token=token, k8s_ca=rig.emu.ca,
                           chart=CHART, helm=rig.helm, cufile_path=cufile)
    assert rc == 0, out[-4000:]
    assert tasks["gpu_operator"]["changed"] is True and tasks["gpu_operator"]["cluster_policy"]["state"] == "ready"
    assert rig.user_values() == {"gds": {"enabled": True, "version": "2.29.4"}}
    assert "would probe 2 node(s)" in tasks["gds_node_probe"]["msg"], tasks["gds_node_probe"]
    assert tasks["cufile_config"]["changed"] is True and os.path.exists(cufile)
    assert token not in out

    # a key the API server does not know: 401, named, the key never shown
    rc, tasks, out = _play(rig, _pod_env(rig), PLAYBOOK, k8s_host=rig.emu.url, k8s_token="0" * 32, k8s_ca=rig.emu.ca,
                           chart=CHART, helm=rig.helm, cufile_path=cufile)
    msg = tasks["gpu_operator"]["msg"]
    assert rc != 0 and ("Unauthorized" in msg or "401" in msg), msg
    assert "0" * 32 not in out


def test_no_credentials_fail_before_helm_or_the_api_is_asked(rig):
    playbook = PLAYBOOK.split("  module_defaults:", maxsplit=1)[0] + "  tasks:" + PLAYBOOK.split("  tasks:")[1]
    rc, tasks, out = _play(rig, _pod_env(rig), playbook, chart=CHART, helm=rig.helm,
                           cufile_path=os.path.join(rig.tmp, "cufile.json"))
    assert rc != 0
    msg = tasks["gpu_operator"]["msg"]
    assert "no cluster credentials" in msg and "in_cluster: true" in msg, msg
    assert not tasks["gpu_operator"].get("commands")
    assert [r for r in rig.emu.requests() if not r["path"].startswith("/_emulator/")] == []
