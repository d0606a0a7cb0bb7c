# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The RBAC the collection ships (docs/rbac/*.yaml) against the Kubernetes API emulator, which
authorizes a ServiceAccount's token by its Roles and bindings as kube-apiserver does.

gds_node_probe's whole run passes with docs/rbac/gds_node_probe.yaml; without any one of its
verbs the run fails naming that verb and the resource; an API error on the second node keeps
the first node's label and every verdict in the result.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import tarfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration", "gds_node_probe"))
from np_cluster import (  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
    cluster_factory, manifest_objects, standin_libs)
from rbac_roles import replace_role, without_each_verb  # noqa: E402  pylint: disable=wrong-import-position

MANIFEST = os.path.join(ROOT, "docs", "rbac", "gds_node_probe.yaml")
NS = "gpu-operator"
MODE = "node-restriction.kubernetes.io/gpudirect.storage.gds-mode"


def _traceback(out, res):
    """An exception that reached Ansible: its traceback, or ansible-core's "Module failed: (403)"
    (a failed module without one says "(traceback unavailable)" in ``exception``, not this)."""
    return "Traceback (most recent call last)" in out or "Module failed" in res.get("msg", "")


def _rbac_cluster(cluster_factory):
    cluster = cluster_factory()
    cluster.core().create_namespace({"metadata": {"name": NS}}, _preload_content=False)
    docs = cluster.apply(MANIFEST)
    return cluster, docs, cluster.token_kubeconfig(NS, "gds-node-probe")


def _unlabel(cluster):
    for name in ("gpu-a", "gpu-b"):
        labels = cluster.node(name)["metadata"].get("labels") or {}
        cluster.core().patch_node(name, {"metadata": {"labels": dict((k, None) for k in labels if "gds-" in k)}},
                                  _preload_content=False)


def test_the_shipped_role_runs_the_whole_probe_and_each_verb_is_needed(cluster_factory):
    cluster, docs, kubeconfig = _rbac_cluster(cluster_factory)
    rc, res, out = cluster.probe(np_kubeconfig=kubeconfig, np_namespace=NS, np_labels=True)
    assert rc == 0, out[-3000:]
    assert [(n["name"], n["mode"]) for n in res["nodes"]] == [("gpu-a", "compat"), ("gpu-b", "compat")]
    assert res["labels_changed"] == ["gpu-a", "gpu-b"] and res["deleted"] == {"pods": 2, "configmaps": 1}

    def run():
        _unlabel(cluster)  # so that the run has labels to set
        return cluster.probe(np_kubeconfig=kubeconfig, np_namespace=NS, np_labels=True)

    tried = []
    for rule, verb, (rc, res, out) in without_each_verb(cluster.core().api_client, NS, docs, run):
        optional = rule["apiGroups"] == ["nvidia.com"]  # refused: every GPU node is probed
        for resource in rule["resources"]:
            plural, _sep, sub = resource.partition("/")
            named = r"%s %s(/[a-z0-9.-]+)?%s: 403 Forbidden" % (verb, plural, "/" + sub if sub else "")
            assert (rc == 0) if optional else (rc != 0 and re.search(named, res["msg"])), \
                (verb, resource, res.get("msg"), out[-2000:])
        assert not _traceback(out, res), out[-3000:]
        tried.append("%s %s" % (verb, ",".join(rule["resources"])))
        for name in cluster.left_behind():  # only the run without "delete configmaps" leaves one
            cluster.core().delete_namespaced_config_map(name, NS, _preload_content=False)
    assert len(tried) == 10, tried


def test_api_error_on_the_second_node_keeps_what_was_done(cluster_factory):
    cluster, docs, kubeconfig = _rbac_cluster(cluster_factory)
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    only_a = copy.deepcopy(role)
    only_a["rules"] = [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
                       {"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch"], "resourceNames": ["gpu-a"]}]
    replace_role(cluster.core().api_client, only_a, NS)
    rc, res, out = cluster.probe(np_kubeconfig=kubeconfig, np_namespace=NS, np_labels=True)
    assert rc != 0 and not _traceback(out, res), out[-3000:]
    assert "patch nodes/gpu-b: 403 Forbidden" in res["msg"], res["msg"]
    assert [(n["name"], n["mode"]) for n in res["nodes"]] == [("gpu-a", "compat"), ("gpu-b", "compat")]
    assert res["labels_changed"] == ["gpu-a"] and res["changed"] is True
    assert cluster.node("gpu-a")["metadata"]["labels"][MODE] == "compat"
    assert MODE not in cluster.node("gpu-b")["metadata"]["labels"]


def test_rbac_manifests_are_in_the_built_collection(tmp_path):
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection", "build",
                          "--output-path", str(tmp_path), ROOT], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stdout[-2000:]
    tarball = next(str(p) for p in tmp_path.iterdir() if p.name.endswith(".tar.gz"))
    with tarfile.open(tarball) as tar:
        names = set(tar.getnames())
    for name in sorted(os.listdir(os.path.dirname(MANIFEST))):
        assert "docs/rbac/" + name in names, sorted(n for n in names if n.startswith("docs/"))


@pytest.mark.parametrize("name", sorted(os.listdir(os.path.join(ROOT, "docs", "rbac"))))
def test_rbac_manifests_parse(name):
    docs = manifest_objects(os.path.join(ROOT, "docs", "rbac", name))
    kinds = [d["kind"] for d in docs]
    assert "ClusterRole" in kinds or "Role" in kinds
    for doc in docs:
        for rule in doc.get("rules") or []:
            assert rule["verbs"] and "*" not in rule["verbs"] and rule.get("apiGroups") is not None, rule
