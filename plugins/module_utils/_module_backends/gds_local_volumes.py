# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_local_volumes, the part that talks to the cluster. PRIVATE to the collection.

Everything is read and decided first (the nodes, the StorageClass, each PV); a refusal or an
unknown node fails the run before anything is written. Then the StorageClass is created when
missing and each PV created or patched; check mode stops before the writes.
"""

from __future__ import annotations

import json
import traceback

try:
    from kubernetes import client as k8s_client
    HAS_KUBERNETES, IMPORT_ERROR = True, None
except ImportError:  # the module reports missing_required_lib
    k8s_client = None
    HAS_KUBERNETES, IMPORT_ERROR = False, traceback.format_exc()

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import auth, local_volumes as lv
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.api_retry import ApiCallFailed
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_node_probe import KubeApi


class VolumeApi(KubeApi):
    """KubeApi with StorageClasses and PersistentVolumes."""

    def __init__(self, api_client):
        super(VolumeApi, self).__init__(api_client)
        self.storage = k8s_client.StorageV1Api(api_client)

    def _get(self, resource, call, name):
        try:  # "get" (the RBAC verb) comes back as text
            return json.loads(self._call("get", resource, call, name))
        except ApiCallFailed as exc:
            if exc.status == 404:
                return None
            raise

    def storage_class(self, name):
        return self._get("storageclasses/" + name, self.storage.read_storage_class, name)

    def pv(self, name):
        return self._get("persistentvolumes/" + name, self.core.read_persistent_volume, name)

    def create_storage_class(self, body):
        return self._call("create", "storageclasses/" + body["metadata"]["name"], self.storage.create_storage_class, body)

    def create_pv(self, body):
        return self._call("create", "persistentvolumes/" + body["metadata"]["name"], self.core.create_persistent_volume, body)

    def patch_pv(self, name, body):
        return self._call("patch", "persistentvolumes/" + name, self.core.patch_persistent_volume, name, body)


def argument_spec():
    return dict(
        auth.argument_spec(),
        storage_class=dict(type="str", default="nvme-gds"),
        node_facts=dict(type="dict"),
        volumes=dict(type="list", elements="dict"),  # keys checked by local_volumes.check, naming the item
    )


MUTUALLY_EXCLUSIVE = [("node_facts", "volumes")]
REQUIRED_ONE_OF = [("node_facts", "volumes")]


def run(params, check_mode, api=None, diff=False):
    """(failure message or None, result dict) of one module run."""
    name = params["storage_class"]
    result = {"changed": False, "storage_class": {"name": name, "action": None}, "volumes": [], "left_out": []}
    if params.get("node_facts") is not None:
        volumes, result["left_out"] = lv.volumes_from_facts(params["node_facts"])
    else:
        volumes = [dict(v) for v in params["volumes"]]
    problem = lv.check(name, volumes)
    if problem:
        return problem, result
    try:  # after the options' own checks: bad input is named before any connection
        api, result["warnings"] = (api, []) if api else auth.connect(params, VolumeApi)
    except auth.AuthError as exc:
        return str(exc), result
    before, after = {}, {}
    wrote = []

    def verb(done):  # created -> would create
        return "would " + done[:-1] if check_mode else done
    try:
        hostnames = dict((n["metadata"]["name"], (n["metadata"].get("labels") or {}).get(lv.HOSTNAME_LABEL)
                          or n["metadata"]["name"]) for n in api.nodes())
        unknown = sorted(set(v["node"] for v in volumes) - set(hostnames))
        if unknown:
            return "no such node in the cluster: %s (volumes are created for existing nodes only)" % (
                ", ".join(unknown)), result
        want_class = lv.storage_class_body(name)
        current = api.storage_class(name)
        action, why = lv.plan_class(current, want_class)
        refused = [why] if why else []
        result["storage_class"]["action"] = "refused" if why else verb("created") if action == "create" else "unchanged"
        plans = []
        for vol in volumes:
            want = lv.pv_body(name, vol, hostnames[vol["node"]])
            cur = api.pv(want["metadata"]["name"])
            pv_action, detail = lv.plan_pv(cur, want)
            plans.append((vol, want, cur, pv_action, detail))
            if pv_action == "refuse":
                refused.append(detail)
        if refused:
            return "nothing was changed: %s" % " | ".join(refused), result
        if action == "create":
            before["storageclass/" + name], after["storageclass/" + name] = None, lv.view(want_class)
            if not check_mode:
                wrote.append(api.create_storage_class(want_class))
        for vol, want, cur, pv_action, detail in plans:
            key = "persistentvolume/" + want["metadata"]["name"]
            if pv_action == "create":
                before[key], after[key] = None, lv.view(want)
                if not check_mode:
                    wrote.append(api.create_pv(want))
            elif pv_action == "patch":
                before[key], after[key] = lv.view(cur), lv.view(lv.patched(cur, detail))
                if not check_mode:
                    wrote.append(api.patch_pv(want["metadata"]["name"], detail))
            result["volumes"].append({"name": want["metadata"]["name"], "node": vol["node"], "path": vol["path"],
                                      "capacity": vol["capacity"], "action": {"create": verb("created"), "patch": verb(
                                          "updated")}.get(pv_action, "unchanged")})
    except ApiCallFailed as exc:
        return "Kubernetes API: %s" % exc, result
    finally:
        result["changed"] = bool(after) if check_mode else bool(wrote)  # never more than was written
        if diff:
            result["diff"] = {"before": before, "after": after}
    return None, result
