# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_operator's cluster credentials as kubernetes.core takes them: the K8S_AUTH_* environment
variables as option fallbacks, and host / api_key / ca_cert / validate_certs turned into a
kubeconfig in a 0600 temp file (helm and the API client read the same file) that is removed."""

from __future__ import annotations

import json
import os
from unittest import mock

import pytest
import yaml

from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.test_gpu_operator import FakeHelm, run


def _kube_args(helm):
    """(--kubeconfig path, --kube-context) of the helm calls that reach the cluster (one set for the run)."""
    seen = {(c[c.index("--kubeconfig") + 1] if "--kubeconfig" in c else None,
             c[c.index("--kube-context") + 1] if "--kube-context" in c else None)
            for c in helm.calls if c[1] not in ("version", "show", "template")}
    assert len(seen) == 1, seen
    return seen.pop()


def test_k8s_auth_kubeconfig_and_context_are_fallbacks(tmp_path):
    kubeconfig = tmp_path / "admin.conf"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    helm = FakeHelm()
    with mock.patch.dict(os.environ, {"K8S_AUTH_KUBECONFIG": str(kubeconfig), "K8S_AUTH_CONTEXT": "prod"}):
        res = run(helm, {})
    assert not res.get("failed"), res
    assert _kube_args(helm) == (str(kubeconfig), "prod")


def test_options_win_over_k8s_auth_environment(tmp_path):
    (tmp_path / "mine").write_text("apiVersion: v1\nkind: Config\n")
    helm = FakeHelm()
    with mock.patch.dict(os.environ, {"K8S_AUTH_KUBECONFIG": "/nonexistent", "K8S_AUTH_CONTEXT": "prod"}):
        res = run(helm, {"kubeconfig": str(tmp_path / "mine"), "context": "lab"})
    assert not res.get("failed"), res
    assert _kube_args(helm) == (str(tmp_path / "mine"), "lab")


@pytest.mark.parametrize("env,args,cluster", [
    ({"K8S_AUTH_HOST": "https://api.example:6443", "K8S_AUTH_API_KEY": "t0ken-abc",
      "K8S_AUTH_SSL_CA_CERT": "/etc/ca.pem"}, {},
     {"server": "https://api.example:6443", "certificate-authority": "/etc/ca.pem"}),
    ({"K8S_AUTH_VERIFY_SSL": "no"}, {"host": "https://api.example:6443", "api_key": "t0ken-abc"},
     {"server": "https://api.example:6443", "insecure-skip-tls-verify": True}),
])
def test_host_and_token_become_a_0600_kubeconfig(env, args, cluster):
    helm = FakeHelm()
    with mock.patch.dict(os.environ, env):
        res = run(helm, args)
    assert not res.get("failed"), res
    path, context = _kube_args(helm)
    mode, text = helm.seen["kubeconfig"]
    config = yaml.safe_load(text)
    assert mode == 0o600 and not os.path.exists(path)
    assert config["clusters"][0]["cluster"] == cluster
    assert config["users"][0]["user"] == {"token": "t0ken-abc"}
    assert config["current-context"] == context == "gpudirect-storage"
    assert "t0ken-abc" not in json.dumps(res)


def test_host_with_a_kubeconfig_is_refused_naming_both():
    helm = FakeHelm()
    with mock.patch.dict(os.environ, {"K8S_AUTH_KUBECONFIG": "/etc/kubernetes/admin.conf"}):
        res = run(helm, {"host": "https://api.example:6443"})
    assert res["failed"] and "host" in res["msg"] and "kubeconfig" in res["msg"]
    assert helm.calls == []


def test_explicit_host_and_kubeconfig_are_mutually_exclusive():
    res = run(FakeHelm(), {"host": "https://api.example:6443", "kubeconfig": "/a"})
    assert res["failed"] and "mutually exclusive" in res["msg"]


def test_token_without_host_is_warned_about_not_silently_dropped(tmp_path):
    (tmp_path / "k").write_text("apiVersion: v1\nkind: Config\n")
    helm = FakeHelm()
    with mock.patch("ansible.module_utils.basic.AnsibleModule.warn") as warn:
        res = run(helm, {"kubeconfig": str(tmp_path / "k"), "api_key": "t0ken-abc"})
    assert not res.get("failed"), res
    warnings = [c.args[0] for c in warn.call_args_list]
    assert any("api_key" in w and "host" in w for w in warnings), warnings
