# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How the cluster modules reach the Kubernetes API: kubernetes.core's connection options.
PRIVATE to the collection."""

from __future__ import annotations


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  host:
    description:
      - The Kubernetes API server URL, for example V(https://api.example:6443), instead of a kubeconfig.
      - Omitted, the environment variable E(K8S_AUTH_HOST) of the host running the module.
      - With O(api_key) (or O(client_cert) and O(client_key)), O(ca_cert), O(validate_certs) and O(proxy) it is
        all the module needs, as AWX's Kubernetes bearer-token credential injects it.
      - Mutually exclusive with O(kubeconfig) and O(in_cluster), also when one of them comes from the environment.
    type: str
  api_key:
    description:
      - Bearer token for O(host). Never logged nor returned.
      - Omitted, the environment variable E(K8S_AUTH_API_KEY).
    type: str
  kubeconfig:
    description:
      - Path of a kubeconfig on the host running the module.
      - Omitted, the environment variable E(K8S_AUTH_KUBECONFIG), else the kubernetes client's default
        (E(KUBECONFIG), C(~/.kube/config)). With none of them and no O(host), the module fails; it never falls
        back to the pod's service account on its own (see O(in_cluster)).
    type: path
    aliases: [kubeconfig_path]
  context:
    description:
      - The kubeconfig context to use; omitted, the kubeconfig's current context.
      - Omitted, the environment variable E(K8S_AUTH_CONTEXT).
    type: str
    aliases: [kube_context]
  validate_certs:
    description:
      - Whether to verify the API server's certificate at O(host); V(false) skips the check (test clusters only).
      - Omitted, the environment variable E(K8S_AUTH_VERIFY_SSL), else verified.
    type: bool
    aliases: [verify_ssl]
  ca_cert:
    description:
      - Path of the CA certificate (the full chain) of the API server at O(host), on the host running the module.
      - Omitted, the environment variable E(K8S_AUTH_SSL_CA_CERT).
    type: path
    aliases: [ssl_ca_cert]
  client_cert:
    description:
      - Path of a client certificate to authenticate to O(host) with, together with O(client_key).
      - Omitted, the environment variable E(K8S_AUTH_CERT_FILE).
    type: path
    aliases: [cert_file]
  client_key:
    description:
      - Path of the key of O(client_cert). Never logged nor returned.
      - Omitted, the environment variable E(K8S_AUTH_KEY_FILE).
    type: path
    aliases: [key_file]
  proxy:
    description:
      - URL of an HTTP proxy to reach O(host) through (the kubeconfig's C(proxy-url)). Never logged, as it may
        carry a password.
      - Omitted, the environment variable E(K8S_AUTH_PROXY). C(HTTPS_PROXY) is not used for the API.
    type: str
  in_cluster:
    description:
      - Use the service account of the pod the module runs in (C(/var/run/secrets/kubernetes.io/serviceaccount)),
        read by the kubernetes client's own in-cluster loader.
      - Only when set. Unlike M(kubernetes.core.k8s), no credentials found is a failure, not this account; inside
        an AWX container-group pod that account belongs to the AWX cluster, rarely the GPU cluster.
      - Mutually exclusive with O(host) and O(kubeconfig).
    type: bool
    default: false
notes:
  - "The connection options are M(kubernetes.core.k8s)'s (names, aliases, C(K8S_AUTH_*) variables), so an AWX
    Kubernetes credential and C(module_defaults) for C(group/gpudirect.storage.k8s) serve both modules of the
    group. O(api_key), O(ca_cert), O(validate_certs), O(client_cert), O(client_key) and O(proxy) describe the
    cluster named by O(host) (or the pod's own with O(in_cluster)); with a kubeconfig they are ignored with a
    warning, as the kubeconfig says all of that itself."
"""
