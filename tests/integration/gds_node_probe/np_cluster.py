# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The emulated cluster of the gds_node_probe tests (tests/integration/gds_node_probe and
tests/security/test_k8s_*.py): the Kubernetes API emulator over HTTPS whose simulated kubelet
REALLY runs each probe pod's command against the C stand-ins of libcuda and libcufile, the
module run through ansible-playbook, and the credentials of a ServiceAccount bound by RBAC.
"""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MANAGED = "app.kubernetes.io/managed-by=gpudirect.storage.gds_node_probe"
# ":labelled": the node carries nvidia.com/gpu.present from the start (no GPU Operator runs in these tests)
TWO_NODES = "gpu-a:ubuntu:22.04:gpu:labelled,gpu-b:ubuntu:24.04:gpu:labelled,cpu-0:debian:12"
SIX_NODES = ",".join("gpu-%s:ubuntu:22.04:gpu:labelled" % c for c in "abcdef") + ",cpu-0:debian:12"

sys.path.insert(0, FIXTURES)
from cuda_standin import standin  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.fixture import Emulator  # noqa: E402  pylint: disable=wrong-import-position
from k8s_emulator.suite import (  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
    COLLECTIONS, HELM_VERSIONS, admin_token, ansible_env, link_collection, run_playbook)

sys.path.insert(0, COLLECTIONS)


@pytest.fixture(scope="session")
def standin_libs(tmp_path_factory):
    if not standin.gcc():
        pytest.skip("no C compiler for the stand-ins")
    link_collection()
    return standin.build(str(tmp_path_factory.mktemp("standin")))


def manifest_objects(path):
    """The objects of a Kubernetes manifest: its documents, a List's items in its place."""
    import yaml
    with open(path) as handle:
        docs = [d for d in yaml.safe_load_all(handle) if d]
    return [item for doc in docs for item in (doc.get("items") or [] if doc.get("kind") == "List" else [doc])]


class Cluster(object):
    """An emulator whose GPU nodes run probe pods with the stand-ins and a fake GPU host."""

    def __init__(self, tmp, libs, nodes=None, kubelet=None):
        self.tmp = str(tmp)
        host, proc = standin.fake_host(os.path.join(self.tmp, "node"), nvidia=True)
        self.probe_dir = os.path.join(self.tmp, "probe")
        os.makedirs(self.probe_dir)
        settings = {"node_env": {"*": {"LD_LIBRARY_PATH": libs, "GPUDIRECT_HOST_ROOT": host,
                                       "GPUDIRECT_PROC_ROOT": proc}}}
        settings.update(kubelet or {})
        self.settings = settings
        self.emu = Emulator(os.path.join(self.tmp, "emulator"), nodes=nodes or TWO_NODES,
                            env={"EMULATOR_KUBELET": json.dumps(settings)})
        self.env = ansible_env(self.tmp, GDS_REPORT_DIR=os.path.join(self.tmp, "reports"))
        self.runs = 0
        self._core = None

    def core(self, kubeconfig=None):
        from kubernetes import client, config
        if kubeconfig:
            return client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig, persist_config=False))
        if self._core is None:
            self._core = self.core(self.emu.kubeconfig)
        return self._core

    def apply(self, path, namespace=None):
        """Create every object of a YAML manifest as the admin (``namespace`` replaces theirs)."""
        from kubernetes import config, utils
        api_client = config.new_client_from_config(config_file=self.emu.kubeconfig, persist_config=False)
        docs = manifest_objects(path)
        for doc in docs:
            if namespace and doc["metadata"].get("namespace"):
                doc["metadata"]["namespace"] = namespace
            for subject in doc.get("subjects") or []:
                if namespace and subject.get("namespace"):
                    subject["namespace"] = namespace
            utils.create_from_dict(api_client, doc)
        return docs

    def token_kubeconfig(self, namespace, serviceaccount):
        """A kubeconfig whose user is the ServiceAccount (a token from the TokenRequest API)."""
        resp = self.core().create_namespaced_service_account_token(
            serviceaccount, namespace, {"spec": {"audiences": []}}, _preload_content=False)
        return self.kubeconfig_with(json.loads(resp.data)["status"]["token"], serviceaccount)

    def kubeconfig_with(self, token, label):
        import yaml
        with open(self.emu.kubeconfig) as handle:
            conf = yaml.safe_load(handle)
        conf["users"][0]["user"]["token"] = token
        path = os.path.join(self.tmp, "kubeconfig-%s" % label)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            yaml.safe_dump(conf, handle)
        return path

    def left_behind(self, namespace=None):
        """Names of probe pods and ConfigMaps still in the cluster (all namespaces)."""
        core = self.core()
        pods = json.loads(core.list_pod_for_all_namespaces(label_selector=MANAGED, _preload_content=False).data)
        cms = json.loads(core.list_config_map_for_all_namespaces(label_selector=MANAGED, _preload_content=False).data)
        return [p["metadata"]["name"] for p in pods["items"]] + [c["metadata"]["name"] for c in cms["items"]]

    def node(self, name):
        return json.loads(self.core().read_node(name, _preload_content=False).data)

    def run(self, playbook, extra, check=False, inventory="localhost,", task="Run gpudirect.storage.gds_node_probe",
            diff=False):
        self.runs += 1
        extra.setdefault("ansible_python_interpreter", sys.executable)
        vars_file = os.path.join(self.tmp, "vars-%d.json" % self.runs)
        with open(vars_file, "w") as handle:
            json.dump(extra, handle)
        argv = ["-i", inventory, playbook, "-e", "@" + vars_file] + ["--check"] * check + ["--diff"] * diff
        rc, tasks, stdout, _err = run_playbook(argv, self.tmp, self.env, timeout=400)
        hits = [hosts for name, hosts in tasks if task in name]
        assert hits, stdout[-3000:]
        return rc, list(hits[0].values())[0], stdout

    def probe(self, check=False, diff=False, **extra):
        args = {"np_kubeconfig": self.emu.kubeconfig, "np_probe_path": [self.probe_dir]}
        args.update(extra)
        return self.run(os.path.join(HERE, "playbooks", "module.yml"), args, check=check, diff=diff)


@pytest.fixture
def cluster_factory(tmp_path, standin_libs):
    made = []

    def make(nodes=None, kubelet=None):
        cluster = Cluster(tmp_path / ("c%d" % len(made)), standin_libs, nodes, kubelet)
        made.append(cluster)
        cluster.emu.start()
        time.sleep(0.3)  # the kubelet applies the NotReady switch on its first ticks
        return cluster

    yield make
    leftovers = {}
    try:
        for cluster in made:
            if cluster.emu.proc and cluster.emu.proc.poll() is None:
                leftovers[cluster.tmp] = cluster.left_behind()
    finally:
        for cluster in made:
            cluster.emu.stop()
    assert not any(leftovers.values()), leftovers  # failing runs included
