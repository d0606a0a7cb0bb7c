# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The wrong cluster: a job runs in an AWX container-group pod whose service account belongs to
the AWX cluster (here an API emulator with its own CA and token, reachable through the pod's
KUBERNETES_SERVICE_HOST/PORT and service-account files), and the job's Kubernetes credential was
not attached. The cluster modules must fail saying so, and the AWX cluster must see no request:
they read its nodes, label them and install the GPU Operator there otherwise."""

from __future__ import annotations

import os
import sys
from unittest import mock

import pytest
from kubernetes.config import incluster_config

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import auth
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import wait as kw
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_node_probe as probe
from ansible_collections.gpudirect.storage.plugins.modules import gds_node_probe

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures"))
from k8s_emulator.fixture import Emulator  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def awx_pod(tmp_path, monkeypatch):
    """The pod's view: the AWX cluster's service account, no kubeconfig, no K8S_AUTH_*."""
    emu = Emulator(str(tmp_path / "awx-cluster"), nodes="gpu-a:ubuntu:22.04:gpu:labelled")
    emu.start()
    try:
        with open(emu.kubeconfig) as handle:
            token = [line.split()[-1] for line in handle if "token:" in line][0]
        (tmp_path / "token").write_text(token)
        monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
        monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", emu.ca)
        host, port = emu.url.split("//")[1].rsplit(":", 1)
        env = {k: v for k, v in os.environ.items() if not k.startswith("K8S_AUTH_") and k != "KUBECONFIG"}
        env.update(HOME=str(tmp_path / "home"), KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port)
        with mock.patch.dict(os.environ, env, clear=True):
            yield emu
    finally:
        emu.stop()


def _requests(emu):
    return [r for r in emu.requests() if not r["path"].startswith("/_emulator/")]


@pytest.mark.attack
def test_gds_node_probe_never_reaches_the_pods_cluster(awx_pod):
    params = {name: spec.get("default") for name, spec in gds_node_probe.argument_spec().items()}
    problem, result = probe.run(params, True)
    assert problem == auth.NO_CREDENTIALS and result["nodes"] == []
    assert _requests(awx_pod) == []


@pytest.mark.attack
def test_a_kubeconfig_only_client_never_reaches_the_pods_cluster(awx_pod):
    with pytest.raises(auth.AuthError):
        kw.api_client()  # gds_local_volumes' client
    assert _requests(awx_pod) == []


def test_in_cluster_true_is_the_way_to_use_the_pods_account(awx_pod):
    params = {name: spec.get("default") for name, spec in gds_node_probe.argument_spec().items()}
    problem, result = probe.run(dict(params, in_cluster=True), True)
    assert problem is None and result["msg"] == "check mode: would probe 1 node(s): gpu-a"
    assert _requests(awx_pod)[0]["path"].startswith("/api/v1/nodes?labelSelector=nvidia.com")
