"""The RBAC tests' common steps: a ServiceAccount's kubeconfig, a role replaced through the API, and
each verb of a manifest's roles taken away in turn."""

import copy
import os

import yaml


def api_client(kubeconfig):
    from kubernetes import config
    return config.new_client_from_config(config_file=kubeconfig, persist_config=False)


def serviceaccount_kubeconfig(emu, tmp_path, namespace, account):
    """A 0600 copy of the emulator's kubeconfig that authenticates as ``account``'s token."""
    from kubernetes import client
    core = client.CoreV1Api(api_client(emu.kubeconfig))
    resp = core.create_namespaced_service_account_token(account, namespace, {"spec": {"audiences": []}})
    with open(emu.kubeconfig) as handle:
        conf = yaml.safe_load(handle)
    conf["users"][0]["user"]["token"] = resp.status.token
    path = str(tmp_path / ("kubeconfig-" + account))
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
        yaml.safe_dump(conf, handle)
    return path


def replace_role(api, doc, namespace):
    from kubernetes import client
    rbac = client.RbacAuthorizationV1Api(api)
    if doc["kind"] == "ClusterRole":
        rbac.replace_cluster_role(doc["metadata"]["name"], doc, _preload_content=False)
    else:
        rbac.replace_namespaced_role(doc["metadata"]["name"], namespace, doc, _preload_content=False)


def without_each_verb(api, namespace, docs, run, verbs=lambda rule: rule["verbs"]):
    """(rule, verb, run()'s result) for each of ``verbs(rule)`` of each rule of ``docs``' roles, run
    with that verb taken away; the role is whole again before the result is handed back."""
    for role in [d for d in docs if d["kind"] in ("ClusterRole", "Role")]:
        for i, rule in enumerate(role["rules"]):
            for verb in verbs(rule):
                less = copy.deepcopy(role)
                less["rules"][i]["verbs"] = [v for v in rule["verbs"] if v != verb]
                replace_role(api, less, namespace)
                try:
                    result = run()
                finally:
                    replace_role(api, role, namespace)
                yield rule, verb, result
