# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_gpu_operator: option -> value mapping, helm-like merging, conflicts, and the GDS preflight."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import operator_values as g

NODES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "k8s_emulator", "captured",
                     "nodes-gpu.json")


@pytest.fixture
def nodes():
    with open(NODES) as handle:
        return json.load(handle)["items"]


def test_option_values_paths():
    tree, sources = g.option_values({"gds": {"enabled": True, "version": "2.29.4", "repository": None, "image": None},
                                     "rdma": {"enabled": True, "use_host_mofed": False},
                                     "driver": {"version": None, "kernel_module_type": "open"}})
    assert tree == {"gds": {"enabled": True, "version": "2.29.4"},
                    "driver": {"rdma": {"enabled": True, "useHostMofed": False}, "kernelModuleType": "open"}}
    assert sources[("driver", "rdma", "useHostMofed")] == "rdma.use_host_mofed"


def test_desired_values_merge_order_and_gds_default():
    files = [("a.yaml", {"gds": {"version": "1"}, "driver": {"version": "580"}}),
             ("b.yaml", {"driver": {"version": "595"}}), ("empty.yaml", None)]
    out = g.desired_values(files, {"operator": {"defaultRuntime": "containerd"}}, {"gds": {"enabled": None}})
    assert out == {"gds": {"version": "1", "enabled": True}, "driver": {"version": "595"},
                   "operator": {"defaultRuntime": "containerd"}}
    # values may switch GDS off when the option is unset
    assert g.desired_values([], {"gds": {"enabled": False}}, {})["gds"]["enabled"] is False


def test_desired_values_conflict_names_both():
    with pytest.raises(g.ValuesError, match=r"option gds.version='2.30.1' contradicts values gds.version='2.29.4'"):
        g.desired_values([], {"gds": {"version": "2.29.4"}}, {"gds": {"version": "2.30.1"}})
    # the same value in both places is fine
    assert g.desired_values([], {"gds": {"enabled": "true"}}, {"gds": {"enabled": True}})["gds"]["enabled"] is True


def test_desired_values_bad_inputs():
    with pytest.raises(g.ValuesError, match="values_files: x.yaml does not hold a mapping"):
        g.desired_values([("x.yaml", ["a"])], {}, {})
    with pytest.raises(g.ValuesError, match="values must be a dictionary"):
        g.desired_values([], ["a"], {})


def test_preflight_supported_cluster(nodes):
    result = g.preflight({"gds": {"enabled": True}}, nodes)
    assert result == {"errors": [], "warnings": [], "nodes": [
        {"name": "gpu-a", "os": "ubuntu 22.04", "os_supported": True},
        {"name": "gpu-b", "os": "ubuntu 24.04", "os_supported": True}]}


@pytest.mark.parametrize("driver,needle", [
    ({"kernelModuleType": "proprietary"}, "driver.kernelModuleType=proprietary"),
    ({"useOpenKernelModules": False}, "driver.useOpenKernelModules=false"),
])
def test_preflight_proprietary_module(nodes, driver, needle):
    result = g.preflight({"gds": {"enabled": True, "version": "2.29.4"}, "driver": driver}, nodes)
    assert len(result["errors"]) == 1 and needle in result["errors"][0] and "2.29.4" in result["errors"][0]


@pytest.mark.parametrize("values", [
    {"gds": {"enabled": True, "version": "2.16.1"}, "driver": {"kernelModuleType": "proprietary"}},
    {"gds": {"enabled": True}, "driver": {"kernelModuleType": "open", "useOpenKernelModules": False}},
    {"gds": {"enabled": False}, "driver": {"kernelModuleType": "proprietary"}},
])
def test_preflight_module_type_ok(nodes, values):
    assert g.preflight(values, nodes)["errors"] == []


def test_preflight_unsupported_and_unknown_os(nodes):
    cluster = copy.deepcopy(nodes) + [
        {"metadata": {"name": "gpu-c", "labels": {"nvidia.com/gpu.present": "true",
                                                  "feature.node.kubernetes.io/system-os_release.ID": "rocky",
                                                  "feature.node.kubernetes.io/system-os_release.VERSION_ID": "9.4"}}},
        {"metadata": {"name": "gpu-d", "labels": {"nvidia.com/gpu.present": "true"}}},
        {"metadata": {"name": "ocp-1", "labels": {"nvidia.com/gpu.present": "true",
                                                  "feature.node.kubernetes.io/system-os_release.ID": "rhcos",
                                                  "feature.node.kubernetes.io/system-os_release.VERSION_ID": "4.16"}}},
        {"metadata": {"name": "cpu-1", "labels": {"feature.node.kubernetes.io/system-os_release.ID": "rocky"}}},
    ]
    warn = g.preflight({"gds": {"enabled": True}}, cluster, "warn")
    assert warn["errors"] == []
    assert any("gpu-c (rocky 9.4)" in w and "gpu-operator #2911" in w for w in warn["warnings"])
    assert any("cannot check the OS of GPU nodes gpu-d" in w for w in warn["warnings"])
    assert {n["name"]: n["os_supported"] for n in warn["nodes"]} == {
        "gpu-a": True, "gpu-b": True, "gpu-c": False, "gpu-d": None, "ocp-1": True}
    fail = g.preflight({"gds": {"enabled": True}}, cluster, "fail")
    assert len(fail["errors"]) == 1 and "gpu-c (rocky 9.4)" in fail["errors"][0]
    assert "ocp-1" not in fail["errors"][0] and "cpu-1" not in fail["errors"][0]
    assert g.preflight({"gds": {"enabled": False}}, cluster, "fail")["errors"] == []


@pytest.mark.parametrize("text,parsed", [("2.17.5", (2, 17, 5)), ("v2.20", (2, 20, 0)), ("latest", None)])
def test_parse_gds_version(text, parsed):
    assert g.parse_gds_version(text) == parsed
