# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_k8s.auth: kubernetes.core's connection options (names, aliases, K8S_AUTH_* fallbacks) and
how they become the one kubeconfig helm and the kubernetes client both use; never the pod's
service account unless in_cluster is set."""

from __future__ import annotations

import os
from unittest import mock

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from kubernetes.config import incluster_config

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import auth

AWX = {"K8S_AUTH_HOST": "https://api.gpu.example:6443/", "K8S_AUTH_API_KEY": "t0ken-abc",
       "K8S_AUTH_SSL_CA_CERT": "/runner/ca.crt", "K8S_AUTH_VERIFY_SSL": "True"}
POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def validated(args, env):
    with mock.patch.dict(os.environ, env, clear=True):
        result = ArgumentSpecValidator(auth.argument_spec()).validate(args)
    assert not result.error_messages, result.error_messages
    return result


def never_in_cluster():
    raise AssertionError("the pod's service account was used without in_cluster")


def test_kubernetes_core_names_aliases_and_environment():
    env = dict(AWX, K8S_AUTH_CERT_FILE="/c.crt", K8S_AUTH_KEY_FILE="/c.key", K8S_AUTH_PROXY="http://u:pw@proxy:3128",
               K8S_AUTH_CONTEXT="prod")
    result = validated({}, env)
    params = result.validated_parameters
    assert (params["host"], params["api_key"], params["ca_cert"], params["validate_certs"]) == (
        "https://api.gpu.example:6443/", "t0ken-abc", "/runner/ca.crt", True)
    assert (params["client_cert"], params["client_key"], params["proxy"], params["context"]) == (
        "/c.crt", "/c.key", "http://u:pw@proxy:3128", "prod")
    assert params["in_cluster"] is False
    assert {"t0ken-abc", "/c.key", "http://u:pw@proxy:3128"} <= set(result._no_log_values)
    aliased = validated({"kubeconfig_path": "/k", "kube_context": "c", "verify_ssl": False, "ssl_ca_cert": "/ca",
                         "cert_file": "/c", "key_file": "/k2"}, {}).validated_parameters
    assert (aliased["kubeconfig"], aliased["context"], aliased["validate_certs"], aliased["ca_cert"],
            aliased["client_cert"], aliased["client_key"]) == ("/k", "c", False, "/ca", "/c", "/k2")


def test_awx_environment_alone_is_a_host_kubeconfig_and_no_pod_account():
    params = validated({}, dict(AWX, **POD)).validated_parameters
    access = auth.cluster_access(params, environ=dict(POD, HOME="/nonexistent"), in_cluster=never_in_cluster)
    assert access.kubeconfig is None and access.context == auth.CONTEXT and access.warnings == []
    assert access.config["clusters"][0]["cluster"] == {"server": "https://api.gpu.example:6443",
                                                       "certificate-authority": "/runner/ca.crt"}
    assert access.config["users"][0]["user"] == {"token": "t0ken-abc"}
    assert access.config["current-context"] == auth.CONTEXT


def test_client_certificate_proxy_and_no_verification(tmp_path):
    os.chdir(tmp_path)
    config = auth.cluster_access({"host": "https://api", "client_cert": "c.crt", "client_key": "c.key",
                                  "proxy": "http://proxy:3128", "validate_certs": False, "ca_cert": "ca.crt"}).config
    assert config["clusters"][0]["cluster"] == {"server": "https://api", "insecure-skip-tls-verify": True,
                                                "proxy-url": "http://proxy:3128"}
    # helm reads the kubeconfig from a temporary directory: relative paths are made absolute
    assert config["users"][0]["user"] == {"client-certificate": str(tmp_path / "c.crt"),
                                          "client-key": str(tmp_path / "c.key")}


@pytest.mark.parametrize("params,needles", [
    ({"host": "https://api", "kubeconfig": "/k"}, ["host (K8S_AUTH_HOST)", "kubeconfig (K8S_AUTH_KUBECONFIG)"]),
    ({"host": "https://api", "in_cluster": True}, ["host", "in_cluster"]),
    ({"kubeconfig": "/k", "in_cluster": True}, ["kubeconfig", "in_cluster"]),
    ({"host": "https://api", "client_cert": "/c"}, ["client_cert", "client_key"]),
])
def test_conflicts_and_missing_files_are_named(params, needles):
    with pytest.raises(auth.AuthError) as err:
        auth.cluster_access(params, environ={}, in_cluster=never_in_cluster)
    assert all(n in str(err.value) for n in needles), str(err.value)


def test_nothing_found_fails_instead_of_using_the_pods_account(tmp_path):
    for environ in (dict(POD, HOME=str(tmp_path)), dict(POD, HOME=str(tmp_path), KUBECONFIG=str(tmp_path / "gone"))):
        with pytest.raises(auth.AuthError) as err:
            auth.cluster_access({}, environ=environ, in_cluster=never_in_cluster)
        assert str(err.value) == auth.NO_CREDENTIALS and "in_cluster: true" in str(err.value)


def test_the_clients_default_kubeconfig_and_ignored_host_options(tmp_path):
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text("apiVersion: v1\n")
    access = auth.cluster_access({"api_key": "x", "validate_certs": False}, environ={"HOME": str(tmp_path)})
    assert access.config is None and access.kubeconfig is None
    assert access.warnings and "api_key, validate_certs apply only with host" in access.warnings[0]
    second = tmp_path / "b.conf"
    second.write_text("apiVersion: v1\n")
    access = auth.cluster_access({}, environ={"KUBECONFIG": os.pathsep.join([str(tmp_path / "gone"), str(second)])})
    assert access.kubeconfig is None and access.warnings == []


def test_in_cluster_reads_the_pod_account_with_the_clients_loader(tmp_path, monkeypatch):
    token, ca = tmp_path / "token", tmp_path / "ca.crt"
    token.write_text("pod-t0ken")
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(ca))
    with mock.patch.dict(os.environ, POD):
        access = auth.cluster_access({"in_cluster": True, "validate_certs": None})
    assert access.config["clusters"][0]["cluster"] == {"server": "https://10.96.0.1:443",
                                                       "certificate-authority": str(ca)}
    assert access.config["users"][0]["user"] == {"token": "pod-t0ken"}


def test_api_client_is_the_kubernetes_clients_own_loading(tmp_path):
    access = auth.cluster_access({"host": "https://api.example:6443/", "api_key": "t0ken-abc",
                                  "validate_certs": False})
    configuration = auth.api_client(access).configuration
    assert configuration.host == "https://api.example:6443" and configuration.verify_ssl is False
    assert list(configuration.api_key.values()) == ["Bearer t0ken-abc"]
    conf = tmp_path / "admin.conf"
    conf.write_text("apiVersion: v1\nkind: Config\ncurrent-context: a\nclusters: [{name: a, cluster: {server: "
                    "'https://a:6443'}}]\nusers: [{name: a, user: {token: k}}]\ncontexts: [{name: a, context: "
                    "{cluster: a, user: a}}]\n")
    assert auth.api_client(auth.cluster_access({"kubeconfig": str(conf)})).configuration.host == "https://a:6443"
    assert auth.api_client(auth.ClusterAccess(config=conf.read_text())).configuration.host == "https://a:6443"
    for broken in (str(tmp_path), str(tmp_path / "missing")):
        with pytest.raises(auth.AuthError) as err:
            auth.connect({"kubeconfig": broken})  # the client's own error, named
        assert "cannot load the cluster credentials" in str(err.value)
