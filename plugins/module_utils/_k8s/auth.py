# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How gpu_operator and gds_node_probe reach the cluster. PRIVATE to the collection.

The options are kubernetes.core's (names, aliases, ``K8S_AUTH_*``), and ``cluster_access`` turns
them into one description that helm and the kubernetes client both use, so both reach the same
cluster as the same user. The pod's in-cluster service account is used only with
``in_cluster: true``: inside an AWX pod it belongs to the AWX cluster, rarely the GPU cluster."""

from __future__ import annotations

import os

from ansible.module_utils.basic import env_fallback

try:
    import yaml
except ImportError:  # the kubernetes client needs PyYAML; its absence is reported as that
    yaml = None

try:
    from kubernetes import client as k8s_client
    from kubernetes import config as k8s_config
except ImportError:  # the modules report missing_required_lib("kubernetes")
    k8s_client = k8s_config = None

# Options that describe the cluster named by ``host`` (or the pod's own with ``in_cluster``);
# a kubeconfig says all of this itself.
HOST_ONLY = ("api_key", "ca_cert", "validate_certs", "client_cert", "client_key", "proxy")
CONTEXT = "gpudirect-storage"
NO_CREDENTIALS = ("no cluster credentials: set host and api_key (K8S_AUTH_HOST, K8S_AUTH_API_KEY, as AWX's "
                  "Kubernetes credential does), kubeconfig (K8S_AUTH_KUBECONFIG, KUBECONFIG or ~/.kube/config), "
                  "or in_cluster: true to use this pod's own service account")


def argument_spec():
    """kubernetes.core's connection options (k8s_auth_options), plus ``in_cluster``."""
    return dict(
        kubeconfig=dict(type="path", aliases=["kubeconfig_path"], fallback=(env_fallback, ["K8S_AUTH_KUBECONFIG"])),
        context=dict(type="str", aliases=["kube_context"], fallback=(env_fallback, ["K8S_AUTH_CONTEXT"])),
        host=dict(type="str", fallback=(env_fallback, ["K8S_AUTH_HOST"])),
        api_key=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_API_KEY"])),
        validate_certs=dict(type="bool", aliases=["verify_ssl"], fallback=(env_fallback, ["K8S_AUTH_VERIFY_SSL"])),
        ca_cert=dict(type="path", aliases=["ssl_ca_cert"], fallback=(env_fallback, ["K8S_AUTH_SSL_CA_CERT"])),
        client_cert=dict(type="path", aliases=["cert_file"], fallback=(env_fallback, ["K8S_AUTH_CERT_FILE"])),
        client_key=dict(type="path", aliases=["key_file"], no_log=True,
                        fallback=(env_fallback, ["K8S_AUTH_KEY_FILE"])),
        proxy=dict(type="str", no_log=True, fallback=(env_fallback, ["K8S_AUTH_PROXY"])),
        in_cluster=dict(type="bool", default=False),
    )


class AuthError(ValueError):
    """Options that do not say how to reach one cluster; the text names them."""


class ClusterAccess(object):
    """Either ``config`` (a kubeconfig: a dict, or YAML text as the user gave it) or
    ``kubeconfig`` (a file; None: the client's default, KUBECONFIG or ~/.kube/config), with the
    ``context`` to use."""

    def __init__(self, config=None, kubeconfig=None, context=None, warnings=()):
        self.config, self.kubeconfig, self.context = config, kubeconfig, context
        self.warnings = list(warnings)


def host_kubeconfig(params, context=None):
    """A kubeconfig (dict) with one context, named ``context``, for ``host`` and the options
    that describe it. File paths are made absolute: helm reads the kubeconfig from a temporary
    directory."""
    cluster = {"server": params["host"].rstrip("/")}
    if params.get("validate_certs") is False:
        cluster["insecure-skip-tls-verify"] = True
    elif params.get("ca_cert"):
        cluster["certificate-authority"] = os.path.abspath(params["ca_cert"])
    if params.get("proxy"):
        cluster["proxy-url"] = params["proxy"]
    user = {}
    if params.get("api_key"):
        user["token"] = params["api_key"]
    if params.get("client_cert"):
        user["client-certificate"] = os.path.abspath(params["client_cert"])
        user["client-key"] = os.path.abspath(params["client_key"])
    name = context or CONTEXT
    return {"apiVersion": "v1", "kind": "Config", "current-context": name,
            "clusters": [{"name": name, "cluster": cluster}], "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}


def default_kubeconfig_exists(environ):
    """Whether the client's default kubeconfig (KUBECONFIG's files, else ~/.kube/config) exists:
    without one, helm and client-go would fall back to the pod's service account."""
    if environ.get("KUBECONFIG"):
        return any(os.path.exists(os.path.expanduser(p)) for p in environ["KUBECONFIG"].split(os.pathsep) if p)
    return os.path.exists(os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".kube", "config"))


def in_cluster_params():
    """host, api_key and ca_cert of this pod's service account, read by the kubernetes client's
    own loader (kubernetes.config.load_incluster_config)."""
    configuration = k8s_client.Configuration()
    k8s_config.load_incluster_config(client_configuration=configuration, try_refresh_token=False)
    token = (configuration.api_key or {}).get("BearerToken") or ""
    return {"host": configuration.host, "api_key": token.split(" ", 1)[-1] or None,
            "ca_cert": configuration.ssl_ca_cert}


def cluster_access(params, content=None, environ=None, in_cluster=in_cluster_params):
    """The ClusterAccess the options describe (``content``: an inline kubeconfig), or AuthError naming
    the options in conflict."""
    environ = os.environ if environ is None else environ
    host, kubeconfig, context = params.get("host"), params.get("kubeconfig"), params.get("context")
    named = [n for n, v in (("host (K8S_AUTH_HOST)", host), ("kubeconfig (K8S_AUTH_KUBECONFIG)", kubeconfig),
                            ("kubeconfig_content", content), ("in_cluster", params.get("in_cluster"))) if v]
    if len(named) > 1:
        raise AuthError("%s each say how to reach the cluster; set one of them" % " and ".join(named))
    if bool(params.get("client_cert")) != bool(params.get("client_key")):
        raise AuthError("client_cert (K8S_AUTH_CERT_FILE) and client_key (K8S_AUTH_KEY_FILE) go together; set both")
    if params.get("in_cluster"):
        params = dict(params, **in_cluster())  # the pod's account; validate_certs and proxy still apply
        return ClusterAccess(config=host_kubeconfig(params, context), context=context or CONTEXT)
    if host:
        return ClusterAccess(config=host_kubeconfig(params, context), context=context or CONTEXT)
    ignored = [name for name in HOST_ONLY if params.get(name) is not None]
    warnings = ["%s apply only with host (K8S_AUTH_HOST) or in_cluster; ignored: the kubeconfig says how to "
                "reach the cluster" % ", ".join(ignored)] if ignored else []
    if content:
        return ClusterAccess(config=content, context=context, warnings=warnings)
    if kubeconfig:  # a missing file fails in helm and the client, naming it; neither falls back to the pod's account
        return ClusterAccess(kubeconfig=kubeconfig, context=context, warnings=warnings)
    if not default_kubeconfig_exists(environ):
        raise AuthError(NO_CREDENTIALS)
    return ClusterAccess(context=context, warnings=warnings)


def api_client(access):
    """A kubernetes ApiClient for ``access``, through the client's own kubeconfig loading."""
    if access.config is not None:
        config = yaml.safe_load(access.config) if isinstance(access.config, str) else access.config
        if not isinstance(config, dict):
            raise AuthError("the kubeconfig given is not a YAML mapping")
        return k8s_config.new_client_from_config_dict(config, context=access.context, persist_config=False)
    return k8s_config.new_client_from_config(config_file=access.kubeconfig, context=access.context,
                                             persist_config=False)


def connect(params, wrap=lambda client: client):
    """(``wrap(ApiClient)``, warnings) for a module's options; AuthError says why there is none."""
    access = cluster_access(params)
    try:
        return wrap(api_client(access)), access.warnings
    except Exception as exc:  # pylint: disable=broad-except  # the client's ConfigException, an unreadable file
        raise AuthError("cannot load the cluster credentials: %s" % exc)
