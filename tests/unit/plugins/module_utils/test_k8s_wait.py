# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_k8s.readiness: readiness evaluation from API JSON (captured from the emulator's API by
tests/fixtures/helm/capture.py: the same shapes a kubelet reports) and the Waiter loop."""

from __future__ import annotations

import copy
import json

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import readiness as kr
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import wait as kw
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import k8s_items


@pytest.fixture
def healthy():
    return k8s_items("clusterpolicies-ready.json"), k8s_items("nodes-gpu.json"), k8s_items("pods-ready.json")


def test_ready_cluster(healthy):
    result = kr.evaluate(*healthy)
    assert result["ready"] is True and result["problems"] == []
    assert result["cluster_policy"]["state"] == "ready"
    assert [n["name"] for n in result["nodes"]] == ["gpu-a", "gpu-b"]
    node = result["nodes"][0]
    assert node["os"] == "ubuntu 22.04" and node["gds_ready"] and node["ready"]
    assert node["containers"][0]["name"] == "nvidia-fs-ctr" and node["containers"][0]["state"] == "running"


def test_crashloop_names_nodes_reason_and_termination_message():
    result = kr.evaluate(k8s_items("clusterpolicies-notready.json"), k8s_items("nodes-gpu.json"), k8s_items("pods-crashloop.json"))
    assert result["ready"] is False
    assert result["problems"][0] == "ClusterPolicy cluster-policy state is notReady"
    text = kw.failure_message(result, 600)
    for node in ("gpu-a", "gpu-b"):
        assert "%s: nvidia-fs-ctr not ready (waiting: CrashLoopBackOff; last termination: Error (exit 1): " \
               "nvidia-fs: Unknown symbol nvidia_p2p_get_pages (err -2); restarts: " % node in text
    ctr = result["nodes"][0]["containers"][0]
    assert ctr["reason"] == "CrashLoopBackOff" and ctr["last_termination"]["exit_code"] == 1
    assert result["nodes"][0]["gds_ready"] is False


def test_stale_image_is_not_ready(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    policies[0]["spec"]["gds"]["version"] = "2.30.1"  # helm updated the CR, operator not yet
    result = kr.evaluate(policies, nodes, pods)
    assert not result["ready"]
    assert "nvidia-fs-ctr runs nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4, ClusterPolicy cluster-policy wants " \
           "nvcr.io/nvidia/cloud-native/nvidia-fs:2.30.1" in result["problems"][0]


def test_os_suffixed_tag_matches(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    for pod in pods:
        pod["spec"]["containers"][1]["image"] += "-ubuntu22.04"
    assert kr.evaluate(policies, nodes, pods)["ready"]


def test_missing_pod_deleting_pod_and_missing_policy(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    pods[0]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    result = kr.evaluate(policies, nodes, pods)
    node = pods[0]["spec"]["nodeName"]
    assert "%s: no driver pod (app.kubernetes.io/component=nvidia-driver) yet" % node in result["problems"]
    result = kr.evaluate([], nodes, [])
    assert result["problems"][0] == "no ClusterPolicy exists yet" and result["cluster_policy"] == {}
    # without a ClusterPolicy nothing is known to be required: no node may look ready
    assert [(n["ready"], n["gds_ready"]) for n in result["nodes"]] == [(False, False), (False, False)]


def _unlabel(nodes, pci=True):
    for node in nodes:
        node["metadata"]["labels"].pop("nvidia.com/gpu.present")
        if pci:
            node["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] = "true"
    return nodes


def _no_gpu_policy(policies, reason="NoGPUNodes"):
    policies[0]["status"]["conditions"][0]["reason"] = reason
    return policies


def test_zero_gpu_nodes_is_never_success_while_gds_is_on(healthy):
    """The operator labels GPU nodes itself; until it has, ClusterPolicy may be ready (NoGPUNodes)."""
    policies, nodes = copy.deepcopy(healthy[:2])
    result = kr.evaluate(_no_gpu_policy(policies), _unlabel(nodes), [])
    assert result["ready"] is False and result["nodes"] and not any(n["ready"] for n in result["nodes"])
    assert result["problems"][0] == "no GPU node: no node is labelled nvidia.com/gpu.present=true; " \
        "ClusterPolicy reports NoGPUNodes"
    assert "gpu-a: NVIDIA PCI device (NFD) but not labelled nvidia.com/gpu.present=true by the operator yet" \
        in result["problems"]
    no_pci = kr.evaluate(policies, _unlabel(copy.deepcopy(healthy[1]), pci=False), [])
    assert no_pci["ready"] is False and no_pci["nodes"] == []
    assert "no node has an NVIDIA PCI device (NFD label feature.node.kubernetes.io/pci-10de.present=true)" \
        in no_pci["problems"][0]
    bare = copy.deepcopy(healthy[1])
    for node in bare:
        node["metadata"]["labels"] = {"kubernetes.io/hostname": node["metadata"]["name"]}
    no_nfd = kr.evaluate(_no_gpu_policy(policies, "NFDLabelsMissing"), bare, [])
    assert "NFD is missing" in no_nfd["problems"][0] and "NFDLabelsMissing" in no_nfd["problems"][0]


def test_every_gpu_node_counts_even_one_not_labelled_yet(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    nodes.append(copy.deepcopy(nodes[0]))
    nodes[-1]["metadata"]["name"] = "gpu-c"
    _unlabel(nodes[-1:])
    result = kr.evaluate(policies, nodes, pods)
    assert result["ready"] is False and [n["name"] for n in result["nodes"]] == ["gpu-a", "gpu-b", "gpu-c"]
    assert result["nodes"][2]["gpu_labelled"] is False and result["nodes"][0]["gds_ready"] is True


def test_expected_gpu_node_count_and_selector(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    assert kr.evaluate(policies, nodes, pods, expect={"count": 2})["ready"]
    result = kr.evaluate(policies, nodes, pods, expect={"count": 64})
    assert result["problems"] == ["2 of 64 expected GPU nodes labelled nvidia.com/gpu.present=true"]
    cpu = copy.deepcopy(nodes[0])
    cpu["metadata"]["name"] = "cpu-9"
    cpu["metadata"]["labels"] = {"pool": "gpu"}
    nodes[0]["metadata"]["labels"]["pool"] = "gpu"
    result = kr.evaluate(policies, nodes + [cpu], pods, expect={"selector": kr.parse_selector("pool=gpu")})
    assert result["problems"] == ["cpu-9: selected by gpu_node_selector but not labelled nvidia.com/gpu.present=true"]
    assert kr.parse_selector("a=b,c!=d,e,!f") == [("a", "=", "b"), ("c", "!=", "d"), ("e", "exists", None),
                                                  ("f", "!", None)]
    with pytest.raises(ValueError, match="cannot parse label selector"):
        kr.parse_selector("a in (b)")


def _renamed_pods(pods, app):
    for pod in pods:
        pod["metadata"]["labels"]["app"] = app
    return pods


@pytest.mark.parametrize("app", ["nvidia-gpu-driver-ubuntu22.04-7c6d7bd86b",
                                 "nvidia-driver-daemonset-418.94.202501221327-0"])
def test_driver_pods_found_in_every_mode(healthy, app):
    """NVIDIADriver CR pods and OpenShift Driver Toolkit pods: same component label, other app."""
    policies, nodes, pods = copy.deepcopy(healthy)
    result = kr.evaluate(policies, nodes, _renamed_pods(pods, app))
    assert result["ready"] is True and all(n["gds_ready"] for n in result["nodes"])


def test_nvidiadriver_mode_takes_gds_from_the_driver_crs(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    policies[0]["spec"]["driver"]["useNvidiaDriverCRD"] = True
    policies[0]["spec"]["gds"] = {"enabled": False}
    pods = _renamed_pods(pods, "nvidia-gpu-driver-ubuntu22.04-7c6d7bd86b")
    pool = {"metadata": {"name": "pool"},
            "spec": {"gds": {"enabled": True, "repository": "nvcr.io/nvidia/cloud-native", "image": "nvidia-fs",
                             "version": "2.29.4"}}}
    other = {"metadata": {"name": "other"},
             "spec": {"nodeSelector": {"pool": "b"}, "gds": {"enabled": True, "repository": "nvcr.io/nvidia/cloud-native",
                                                             "image": "nvidia-fs", "version": "2.30.1"}}}
    assert kr.required_containers(policies[0], [pool, other]) == ["nvidia-fs-ctr"]
    result = kr.evaluate(policies, nodes, pods, [pool, other])
    assert result["ready"] is True and result["gds_nodes"] == {"enabled": ["gpu-a", "gpu-b"], "disabled": []}
    for container in pods[0]["spec"]["containers"]:
        container["image"] = container["image"].replace("2.29.4", "2.28.0")
    result = kr.evaluate(policies, nodes, pods, [pool, other])
    assert result["ready"] is False and "NVIDIADriver pool wants nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4" \
        in result["problems"][0]


def test_rdma_requires_peermem(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    policies[0]["spec"]["driver"]["rdma"]["enabled"] = True
    result = kr.evaluate(policies, nodes, pods)
    assert "nvidia-peermem-ctr missing from pod" in result["problems"][0]
    for pod in pods:
        pod["spec"]["containers"].append({"name": "nvidia-peermem-ctr", "image": "x"})
        pod["status"]["containerStatuses"].append({"name": "nvidia-peermem-ctr", "ready": True,
                                                   "state": {"running": {}}, "restartCount": 0})
    assert kr.evaluate(policies, nodes, pods)["ready"]


def test_gds_disabled_only_needs_policy(healthy):
    policies, nodes = copy.deepcopy(healthy[:2])
    policies[0]["spec"]["gds"]["enabled"] = False
    result = kr.evaluate(policies, nodes, [])
    assert result["ready"] and not result["nodes"][0]["gds_ready"]


def test_pick_policy_skips_ignored():
    a = {"metadata": {"name": "a"}, "status": {"state": "ignored"}}
    b = {"metadata": {"name": "b"}, "status": {"state": "ready"}}
    assert kr.pick_policy([a, b]) is b and kr.pick_policy([a]) is a and kr.pick_policy([]) is None


class FakeClock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class FakeSource(object):
    """Lists come from a script of states; watch yields one event then the state advances."""

    def __init__(self, states, clock=None, step=1.0):
        self.states = list(states)
        self.clock = clock
        self.step = step
        self.lists = 0

    def list(self, kind):
        state = self.states[0]
        self.lists += 1
        if self.clock is not None:
            self.clock.now += self.step / 3.0
        return state.get(kind, []), "10"

    def watch(self, kind, rv, timeout):
        if kind == "pods" and len(self.states) > 1:
            self.states.pop(0)
            yield "MODIFIED", {"metadata": {"resourceVersion": "11"}}


def test_waiter_ready_after_events(healthy):
    policies, nodes, pods = healthy
    crashing = {"clusterpolicies": k8s_items("clusterpolicies-notready.json"), "nodes": nodes,
                "pods": k8s_items("pods-crashloop.json")}
    ready = {"clusterpolicies": policies, "nodes": nodes, "pods": pods}
    source = FakeSource([crashing, ready])
    result = kw.Waiter(source, relist=0.05).wait(30)
    assert result["ready"] is True and source.lists >= 6


def test_waiter_times_out_with_last_evaluation():
    state = {"clusterpolicies": k8s_items("clusterpolicies-notready.json"), "nodes": k8s_items("nodes-gpu.json"),
             "pods": k8s_items("pods-crashloop.json")}
    clock = FakeClock()
    source = FakeSource([state], clock=clock, step=3.0)
    result = kw.Waiter(source, clock=clock, relist=0.01).wait(5)
    assert result["ready"] is False and "CrashLoopBackOff" in kw.failure_message(result, 5)


def _driver_cr(name, hostname=None, gds=False, default=False):
    spec = {"default": default, "gds": {"enabled": gds, "repository": "r", "image": "nvidia-fs", "version": "2.29.4"}}
    if hostname:
        spec["nodeSelector"] = {"kubernetes.io/hostname": hostname}
    return {"metadata": {"name": name}, "spec": spec}


def _gpu_node(name):
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, kr.GPU_LABEL: "true"}}}


def test_each_node_takes_the_one_nvidiadriver_that_selects_it():
    """The operator's rule: the matching non-default CR, else the default one; two matching: none."""
    policy = {"metadata": {"name": "cluster-policy"}, "spec": {"driver": {"useNvidiaDriverCRD": True}}}
    crs = [_driver_cr("storage", "gpu-a", gds=True), _driver_cr("compute", "gpu-b"), _driver_cr("default", default=True)]
    config = {n: kr.node_config(policy, crs, _gpu_node(n)) for n in ("gpu-a", "gpu-b", "gpu-c")}
    assert (config["gpu-a"]["source"], config["gpu-a"]["gds"]) == ("NVIDIADriver storage", True)
    assert config["gpu-a"]["image"] == "r/nvidia-fs:2.29.4"
    assert (config["gpu-b"]["source"], config["gpu-b"]["gds"]) == ("NVIDIADriver compute", False)
    assert config["gpu-c"]["source"] == "NVIDIADriver default"
    clash = crs + [_driver_cr("also", "gpu-a", gds=True)]
    assert "NVIDIADrivers also, storage all select it" in kr.node_config(policy, clash, _gpu_node("gpu-a"))["problem"]
    # a CR without nodeSelector selects every GPU node; without a default CR a node may get no driver
    assert kr.node_config(policy, [_driver_cr("all", gds=True)], _gpu_node("gpu-z"))["gds"] is True
    assert kr.node_config(policy, crs[:2], _gpu_node("gpu-z"))["source"] == ""


def test_gds_only_where_the_node_pool_asks_for_it(healthy):
    """Pool b has GDS off: its node passes without nvidia-fs-ctr and is listed as not meant for GDS."""
    policies, nodes, pods = copy.deepcopy(healthy)
    policies[0]["spec"]["driver"]["useNvidiaDriverCRD"] = True
    crs = [_driver_cr("storage", "gpu-a", gds=True), _driver_cr("compute", "gpu-b")]
    crs[0]["spec"]["gds"]["repository"] = "nvcr.io/nvidia/cloud-native"
    for node in nodes:
        node["metadata"]["labels"]["kubernetes.io/hostname"] = node["metadata"]["name"]
    pods = [p for p in pods if p["spec"]["nodeName"] == "gpu-a"]
    result = kr.evaluate(policies, nodes, pods, crs)
    assert result["ready"] is True, result["problems"]
    assert result["gds_nodes"] == {"enabled": ["gpu-a"], "disabled": ["gpu-b"]}
    by_name = {n["name"]: n for n in result["nodes"]}
    assert by_name["gpu-b"]["gds_expected"] is False and by_name["gpu-b"]["driver_config"] == "NVIDIADriver compute"
    crs[1]["spec"]["gds"]["enabled"] = True  # now pool b wants it too, and has no driver pod
    result = kr.evaluate(policies, nodes, pods, crs)
    assert result["ready"] is False and "gpu-b: no driver pod" in result["problems"][0]
    assert kr.probe_selection(nodes, policies, crs)[1] == []
    crs[1]["spec"]["gds"]["enabled"] = False
    meant, others = kr.probe_selection(nodes, policies, crs)
    assert [n["metadata"]["name"] for n in meant] == ["gpu-a"] and others == ["gpu-b"]
    assert kr.probe_selection(nodes, [], crs) == (nodes, [])


class _ProbeApi(object):
    """gds_node_probe's KubeApi, as far as its node selection reads it."""

    def __init__(self, nodes):
        self._nodes = nodes
        self.core = type("Core", (), {"api_client": object()})()

    def nodes(self, selector):
        return [n for n in self._nodes if kr.selector_matches(n["metadata"]["labels"], kr.parse_selector(selector))]


@pytest.mark.skipif(not kw.HAS_KUBERNETES, reason="needs the kubernetes client")
def test_gds_node_probe_default_selection_follows_the_driver_crs(monkeypatch):
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_node_probe as probe
    policy = {"metadata": {"name": "cluster-policy"}, "spec": {"driver": {"useNvidiaDriverCRD": True}}}
    crs = [_driver_cr("storage", "gpu-a", gds=True), _driver_cr("compute", "gpu-b")]
    lists = {"clusterpolicies": [policy], "nvidiadrivers": crs}

    class Custom(object):
        def __init__(self, client):
            pass

        def list_cluster_custom_object(self, group, version, plural, **kwargs):
            return type("Resp", (), {"data": json.dumps({"items": lists[plural]}).encode()})()

    monkeypatch.setattr(kw.k8s_client, "CustomObjectsApi", Custom)
    api = _ProbeApi([_gpu_node("gpu-a"), _gpu_node("gpu-b")])
    params = dict((k, v.get("default")) for k, v in probe.argument_spec().items())
    problem, result = probe.run(params, True, api=api)
    assert problem is None and result["msg"] == "check mode: would probe 1 node(s): gpu-a", result
    assert result["not_meant_for_gds"] == ["gpu-b"]
    # named nodes, another selector or no GPU Operator: the selection stays as asked
    assert kw.probe_nodes(api, kr.GPU_LABEL + "=true", ["gpu-b"])[1] == []
    lists["clusterpolicies"] = []
    assert [n["metadata"]["name"] for n in kw.probe_nodes(api, kr.GPU_LABEL + "=true")[0]] == ["gpu-a", "gpu-b"]
