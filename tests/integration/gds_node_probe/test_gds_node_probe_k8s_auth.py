# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_node_probe reaches the cluster the way AWX's Kubernetes bearer-token credential says:
K8S_AUTH_HOST / K8S_AUTH_API_KEY / K8S_AUTH_SSL_CA_CERT only - no kubeconfig anywhere (HOME is
empty), and a pod's service-account environment present but never used. The emulator checks
bearer tokens (401 for an unknown one), so a wrong key failing proves the key is what is sent."""

from __future__ import annotations

import os

from np_cluster import admin_token, cluster_factory, standin_libs  # noqa: F401  pylint: disable=unused-import


def _awx_env(cluster, token):
    home = os.path.join(cluster.tmp, "empty-home")
    os.makedirs(home, exist_ok=True)
    host, port = cluster.emu.url.split("//")[1].rsplit(":", 1)
    env = dict(cluster.env, HOME=home, K8S_AUTH_HOST=cluster.emu.url, K8S_AUTH_API_KEY=token,
               K8S_AUTH_SSL_CA_CERT=cluster.emu.ca, K8S_AUTH_VERIFY_SSL="True",
               # inside an AWX container-group pod: the AWX cluster's service account, not the GPU cluster
               KUBERNETES_SERVICE_HOST=host, KUBERNETES_SERVICE_PORT=port)
    env.pop("KUBECONFIG", None)
    return env


def test_awx_bearer_token_environment_alone(cluster_factory):
    cluster = cluster_factory()
    token = admin_token(cluster.emu.kubeconfig)
    cluster.env = _awx_env(cluster, token)
    rc, res, out = cluster.probe(np_kubeconfig=None, np_labels=True)
    assert rc == 0, out[-4000:]
    assert [n["name"] for n in res["nodes"]] == ["gpu-a", "gpu-b"]
    assert all(n["mode"] == "compat" and n["failure"] is None for n in res["nodes"])
    assert res["labels_changed"] == ["gpu-a", "gpu-b"]
    assert token not in out

    # the same environment with a key the API server does not know: 401, the key never shown
    cluster.env = _awx_env(cluster, "0" * 32)
    rc, res, out = cluster.probe(np_kubeconfig=None)
    assert rc != 0 and "401" in res["msg"], res.get("msg")
    assert "0" * 32 not in out
    assert cluster.left_behind() == []


def test_no_credentials_is_a_clear_failure_not_the_pods_account(cluster_factory):
    cluster = cluster_factory()
    env = _awx_env(cluster, "unused")
    for name in ("K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_SSL_CA_CERT", "K8S_AUTH_VERIFY_SSL"):
        env.pop(name)
    cluster.env = env
    rc, res, out = cluster.probe(np_kubeconfig=None)
    assert rc != 0
    assert "no cluster credentials" in res["msg"] and "in_cluster" in res["msg"], res["msg"]
    assert [r for r in cluster.emu.requests() if not r["path"].startswith("/_emulator/")] == []
