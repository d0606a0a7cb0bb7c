# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_k8s_wait: readiness evaluation from API JSON (captured from the emulator's API by
tests/fixtures/helm/capture.py: the same shapes a kubelet reports) and the Waiter loop."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import wait as kw

CAPTURED = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "k8s_emulator", "captured")


def items(name):
    with open(os.path.join(CAPTURED, name)) as handle:
        return json.load(handle)["items"]


@pytest.fixture
def healthy():
    return items("clusterpolicies-ready.json"), items("nodes-gpu.json"), items("pods-ready.json")


def test_ready_cluster(healthy):
    result = kw.evaluate(*healthy)
    assert result["ready"] is True and result["problems"] == []
    assert result["cluster_policy"]["state"] == "ready"
    assert [n["name"] for n in result["nodes"]] == ["gpu-a", "gpu-b"]
    node = result["nodes"][0]
    assert node["os"] == "ubuntu 22.04" and node["gds_ready"] and node["ready"]
    assert node["containers"][0]["name"] == "nvidia-fs-ctr" and node["containers"][0]["state"] == "running"


def test_crashloop_names_nodes_reason_and_termination_message():
    result = kw.evaluate(items("clusterpolicies-notready.json"), items("nodes-gpu.json"), items("pods-crashloop.json"))
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
    result = kw.evaluate(policies, nodes, pods)
    assert not result["ready"]
    assert "nvidia-fs-ctr runs nvcr.io/nvidia/cloud-native/nvidia-fs:2.29.4, ClusterPolicy wants " \
           "nvcr.io/nvidia/cloud-native/nvidia-fs:2.30.1" in result["problems"][0]


def test_os_suffixed_tag_matches(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    for pod in pods:
        pod["spec"]["containers"][1]["image"] += "-ubuntu22.04"
    assert kw.evaluate(policies, nodes, pods)["ready"]


def test_missing_pod_deleting_pod_and_missing_policy(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    pods[0]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    result = kw.evaluate(policies, nodes, pods)
    node = pods[0]["spec"]["nodeName"]
    assert "%s: no nvidia-driver-daemonset pod yet" % node in result["problems"]
    result = kw.evaluate([], nodes, [])
    assert result["problems"][0] == "no ClusterPolicy exists yet" and result["cluster_policy"] == {}


def test_rdma_requires_peermem(healthy):
    policies, nodes, pods = copy.deepcopy(healthy)
    policies[0]["spec"]["driver"]["rdma"]["enabled"] = True
    result = kw.evaluate(policies, nodes, pods)
    assert "nvidia-peermem-ctr missing from pod" in result["problems"][0]
    for pod in pods:
        pod["spec"]["containers"].append({"name": "nvidia-peermem-ctr", "image": "x"})
        pod["status"]["containerStatuses"].append({"name": "nvidia-peermem-ctr", "ready": True,
                                                   "state": {"running": {}}, "restartCount": 0})
    assert kw.evaluate(policies, nodes, pods)["ready"]


def test_gds_disabled_only_needs_policy(healthy):
    policies, nodes = copy.deepcopy(healthy[:2])
    policies[0]["spec"]["gds"]["enabled"] = False
    result = kw.evaluate(policies, nodes, [])
    assert result["ready"] and not result["nodes"][0]["gds_ready"]


def test_pick_policy_skips_ignored():
    a = {"metadata": {"name": "a"}, "status": {"state": "ignored"}}
    b = {"metadata": {"name": "b"}, "status": {"state": "ready"}}
    assert kw.pick_policy([a, b]) is b and kw.pick_policy([a]) is a and kw.pick_policy([]) is None


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
        return state[kind], "10"

    def watch(self, kind, rv, timeout):
        if kind == "pods" and len(self.states) > 1:
            self.states.pop(0)
            yield "MODIFIED", {"metadata": {"resourceVersion": "11"}}


def test_waiter_ready_after_events(healthy):
    policies, nodes, pods = healthy
    crashing = {"clusterpolicies": items("clusterpolicies-notready.json"), "nodes": nodes,
                "pods": items("pods-crashloop.json")}
    ready = {"clusterpolicies": policies, "nodes": nodes, "pods": pods}
    source = FakeSource([crashing, ready])
    result = kw.Waiter(source, relist=0.05).wait(30)
    assert result["ready"] is True and source.lists >= 6


def test_waiter_times_out_with_last_evaluation():
    state = {"clusterpolicies": items("clusterpolicies-notready.json"), "nodes": items("nodes-gpu.json"),
             "pods": items("pods-crashloop.json")}
    clock = FakeClock()
    source = FakeSource([state], clock=clock, step=3.0)
    result = kw.Waiter(source, clock=clock, relist=0.01).wait(5)
    assert result["ready"] is False and "CrashLoopBackOff" in kw.failure_message(result, 5)
