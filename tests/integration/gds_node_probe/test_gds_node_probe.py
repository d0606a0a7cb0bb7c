# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""End-to-end tests of gpudirect.storage.gds_node_probe: real ansible-playbook, the Kubernetes API
emulator over HTTPS, its simulated kubelet REALLY running each probe pod's command (the
collection's gather/probe/verdict from the ConfigMap) against the C stand-ins of libcuda and
libcufile, and, for playbooks/k8s.yml, real helm 3.19.0 and 4.1.4.

Every test ends by checking that no probe pod and no ConfigMap are left in the cluster.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from np_cluster import (  # noqa: F401  pylint: disable=unused-import
    COLLECTIONS, HELM_VERSIONS, MANAGED, SIX_NODES, cluster_factory, standin_libs)
from k8s_emulator.suite import helm_binaries  # pylint: disable=import-error


MODE = "node-restriction.kubernetes.io/gpudirect.storage.gds-mode"


def _node(res, name):
    return next(n for n in res["nodes"] if n["name"] == name)


def test_verdict_per_node_labels_idempotent(cluster_factory):
    cluster = cluster_factory()
    rc, res, out = cluster.probe(np_labels=True)
    assert rc == 0, out[-4000:]
    assert [n["name"] for n in res["nodes"]] == ["gpu-a", "gpu-b"]  # cpu-0 is not selected
    for name in ("gpu-a", "gpu-b"):
        node = _node(res, name)
        # gds_facts' own verdict, computed in the pod: the stand-in libcufile runs in compat mode
        assert node["mode"] == "compat" and node["verified"] is True and node["source"] == "kubernetes"
        assert "nvidia_fs kernel module not loaded" in node["reason"]
        assert node["verified_bytes"] == 8 << 20 and node["throughput"]["write_gbps"] > 0
        assert node["failure"] is None and node["pod"].startswith("gds-probe-%s-" % name)
        labels = cluster.node(name)["metadata"]["labels"]
        assert labels[MODE] == "compat" and labels["node-restriction.kubernetes.io/gpudirect.storage.gds-verified"] == "true"
        note = json.loads(cluster.node(name)["metadata"]["annotations"]["gpudirect.storage/gds-probe"])
        assert note["mode"] == "compat" and note["write_gbps"] > 0
    assert res["changed"] is True and res["labels_changed"] == ["gpu-a", "gpu-b"]
    assert res["deleted"] == {"pods": 2, "configmaps": 1}
    assert cluster.left_behind() == []

    # second run: new GB/s, same labels -> no patch, changed=false
    before = cluster.node("gpu-a")["metadata"]["resourceVersion"]
    rc, res, out = cluster.probe(np_labels=True)
    assert rc == 0, out[-4000:]
    assert res["changed"] is False and res["labels_changed"] == []
    assert cluster.node("gpu-a")["metadata"]["resourceVersion"] == before

    # require_mode=gds: fails naming every node below it, with the gds_facts message
    rc, res, out = cluster.probe(np_require_mode="gds")
    assert rc != 0 and res["failed"] is True
    for name in ("gpu-a", "gpu-b"):
        assert "%s: GDS verdict compat is weaker than the required gds" % name in res["msg"], res["msg"]
    assert res["summary"]["below_required"] == ["gpu-a", "gpu-b"]
    rc, res, out = cluster.probe(np_require_mode="compat")
    assert rc == 0 and all(n["require_mode"]["met"] for n in res["nodes"])


def test_check_mode_creates_nothing(cluster_factory):
    cluster = cluster_factory()
    before = [cluster.node(n)["metadata"]["resourceVersion"] for n in ("gpu-a", "gpu-b")]
    rc, res, out = cluster.probe(check=True, np_labels=True)
    assert rc == 0, out[-4000:]
    assert res["changed"] is False and res["nodes"] == [] and "would probe 2 node(s): gpu-a, gpu-b" in res["msg"]
    writes = [r for r in cluster.emu.requests() if r["method"] in ("POST", "PUT", "PATCH", "DELETE")]
    assert writes == []
    assert [cluster.node(n)["metadata"]["resourceVersion"] for n in ("gpu-a", "gpu-b")] == before


def test_every_failure_kind_named_per_node(cluster_factory):
    cluster = cluster_factory(SIX_NODES, {
        "no_free_gpus": ["gpu-b"], "oom_nodes": ["gpu-c"], "not_ready_nodes": ["gpu-d"],
        "crash_nodes": {"gpu-e": [1, "Fatal Python error: init_fs_encoding: failed to get the Python codec"]}})
    taint = {"key": "example.com/maintenance", "value": "true", "effect": "NoSchedule"}
    cluster.core().patch_node("gpu-f", {"spec": {"taints": [taint]}}, _preload_content=False)
    rc, res, out = cluster.probe()
    assert rc != 0 and res["failed"] is True
    assert _node(res, "gpu-a")["mode"] == "compat" and _node(res, "gpu-a")["failure"] is None
    expected = {
        "gpu-b": ("unschedulable", "Unschedulable: 0/7 nodes are available: 1 Insufficient nvidia.com/gpu."),
        "gpu-f": ("unschedulable", "0/7 nodes are available: 1 node(s) had untolerated taint "
                                   "{example.com/maintenance: true}."),
        "gpu-c": ("oom_killed", "OOMKilled (exit code 137, memory limit 2Gi)"),
        "gpu-d": ("node_not_ready", "node NotReady (Ready=False"),
        "gpu-e": ("exited", "container exited with code 1 (Error); log tail: Fatal Python error: init_fs_encoding"),
    }
    for name, (kind, text) in expected.items():
        node = _node(res, name)
        assert node["mode"] == "failed" and node["failure"]["kind"] == kind, node
        assert text in node["reason"], node["reason"]
        assert "%s: " % name in res["msg"] and text in res["msg"]
    assert res["summary"]["probe_failed"] == ["gpu-b", "gpu-c", "gpu-d", "gpu-e", "gpu-f"]
    assert _node(res, "gpu-d")["pod"] is None  # no pod for a NotReady node


@pytest.mark.parametrize("switch,needle", [
    ("image_pull_fail", "for image registry.test/missing:0: failed to pull"),
    ("images_without_python3", "image registry.test/missing:0: python3 not found in the image"),
    ("images_without_cufile", "image registry.test/missing:0: libcufile.so.0 not found in the image"),
])
def test_image_problems_fail_clearly(cluster_factory, switch, needle):
    cluster = cluster_factory(kubelet={switch: ["registry.test/missing:0"]})
    rc, res, out = cluster.probe(np_image="registry.test/missing:0", np_nodes=["gpu-a"])
    assert rc != 0 and res["failed"] is True
    assert needle in res["msg"], res["msg"]
    assert "gpu-a" in res["msg"]
    if switch != "image_pull_fail":
        assert "python3 and libcufile.so.0 (docs/gds_node_probe.md" in res["msg"]
    else:
        assert "ErrImagePull" in res["msg"] or "ImagePullBackOff" in res["msg"]


def test_rerun_cleans_leftovers_and_interrupt_leaves_nothing(cluster_factory):
    cluster = cluster_factory()
    core = cluster.core()
    labels = {"app.kubernetes.io/managed-by": "gpudirect.storage.gds_node_probe", "gpudirect.storage/node-probe-run": "old"}
    meta = {"name": "gds-node-probe-old", "labels": labels}
    core.create_namespaced_config_map("default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                                                  "data": {"x": "y"}}, _preload_content=False)
    core.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod", "metadata": dict(
        meta, name="gds-probe-old", annotations={"gpudirect.storage/expires": "1"}), "spec": {"containers": [
            {"name": "probe", "image": "x"}]}}, _preload_content=False)
    rc, res, out = cluster.probe(np_nodes=["gpu-a"])
    assert rc == 0, out[-4000:]
    assert sorted(res["cleaned_leftovers"]) == ["configmap/gds-node-probe-old", "pod/gds-probe-old"]
    assert cluster.left_behind() == []

    # SIGTERM while the probes hang: the run deletes what it created before it exits
    cluster.emu.control(node_env={"*": dict(cluster.settings["node_env"]["*"], GDS_STANDIN_CUDA="hang")})
    script = ("import sys, json; sys.path[:0] = %r\n"
              "from kubernetes import config\n"
              "from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_node_probe as r\n"
              "p = dict((k, v.get('default')) for k, v in r.argument_spec().items())\n"
              "p.update(namespace='default', image='x', probe_path=[%r])\n"
              "api = r.KubeApi(config.new_client_from_config(config_file=%r, persist_config=False))\n"
              "print(r.run(p, False, api=api))\n" % ([COLLECTIONS], cluster.probe_dir, cluster.emu.kubeconfig))
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and len(cluster.left_behind()) < 3:  # the ConfigMap and two pods
        time.sleep(0.2)
    assert len(cluster.left_behind()) == 3
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=60)
    assert "interrupted by signal 15" in err
    assert cluster.left_behind() == []


@pytest.fixture(scope="session")
def helm_bins():
    return helm_binaries()


@pytest.mark.parametrize("helm_version", HELM_VERSIONS)
def test_k8s_playbook_operator_probe_report(tmp_path, standin_libs, helm_bins, helm_version):
    """playbooks/k8s.yml: gpu_operator (real helm) -> gds_node_probe -> fleet report; a node whose probe
    pod is OOMKilled is in the report with the reason, and the run fails after the report."""
    from k8s_emulator import demo_k8s
    emu, probe_dir = demo_k8s.start_cluster(str(tmp_path), 2, {"oom_nodes": ["gpu-02"]})
    leftovers = None
    try:
        res = demo_k8s.run_playbook(emu, probe_dir, helm_bins[helm_version], str(tmp_path), str(tmp_path / "reports"))
        from kubernetes import client, config
        core = client.CoreV1Api(config.new_client_from_config(config_file=emu.kubeconfig, persist_config=False))
        leftovers = [p["metadata"]["name"] for kind in (core.list_pod_for_all_namespaces,
                                                        core.list_config_map_for_all_namespaces)
                     for p in json.loads(kind(label_selector=MANAGED, _preload_content=False).data)["items"]]
        labels = json.loads(core.read_node("gpu-01", _preload_content=False).data)["metadata"]["labels"]
    finally:
        emu.stop()
    assert res.returncode != 0, res.stdout[-4000:]
    assert "Install or upgrade the GPU Operator" in res.stdout and "Fail naming the nodes" in res.stdout
    assert "gpu-02: probe pod" in res.stdout and "OOMKilled" in res.stdout
    with open(str(tmp_path / "reports" / "gds-fleet.json")) as handle:
        report = json.load(handle)
    by_host = dict((r["host"], r) for r in report["hosts"])
    assert sorted(by_host) == ["gpu-01", "gpu-02"]
    assert by_host["gpu-01"]["source"] == "kubernetes" and by_host["gpu-01"]["mode"] == "compat"
    assert by_host["gpu-01"]["status"] == "ok" and by_host["gpu-01"]["pod"].startswith("gds-probe-gpu-01-")
    assert by_host["gpu-02"]["status"] == "failed" and "OOMKilled" in by_host["gpu-02"]["reason"]
    assert labels[MODE] == "compat"
    with open(str(tmp_path / "reports" / "gds-fleet.md")) as handle:
        assert "| gpu-01 | kubernetes | ok | compat |" in handle.read()
    assert leftovers == []
