# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_gpu_operator: option -> value mapping, helm-like merging, conflicts, and the GDS preflight."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import operator_values as g
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import k8s_items


@pytest.fixture
def nodes():
    return k8s_items("nodes-gpu.json")


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
    with pytest.raises(g.ValuesError, match=r"option gds.version: 2.30.1 contradicts values gds.version: 2.29.4"):
        g.desired_values([], {"gds": {"version": "2.29.4"}}, {"gds": {"version": "2.30.1"}})
    # YAML terms, never Python reprs (True, 'false')
    with pytest.raises(g.ValuesError) as err:
        g.desired_values([], {"gds": {"enabled": "false"}}, {"gds": {"enabled": True}})
    assert str(err.value) == 'option gds.enabled: true contradicts values gds.enabled: "false"; set it in one place only'
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
        {"name": "gpu-a", "os": "ubuntu 22.04", "os_supported": True, "gds_expected": True},
        {"name": "gpu-b", "os": "ubuntu 24.04", "os_supported": True, "gds_expected": True}]}


def test_preflight_proprietary_module(nodes):
    result = g.preflight({"gds": {"enabled": True, "version": "2.29.4"}, "driver": {"kernelModuleType": "proprietary"}}, nodes)
    assert len(result["errors"]) == 1 and "driver.kernelModuleType: proprietary" in result["errors"][0]
    assert "2.29.4" in result["errors"][0]


@pytest.mark.parametrize("chart_version,error", [
    ("v24.9.2", "driver.useOpenKernelModules: false (chart v24.9.2 honours it)"),
    ("v26.7.0", None), ("25.3.0", None), ("v1.0.0-devel", None),
])
def test_preflight_use_open_kernel_modules_by_chart_version(nodes, chart_version, error):
    """useOpenKernelModules is a no-op since chart v25.3.0 (kernelModuleType decides)."""
    values = {"gds": {"enabled": True, "version": "2.29.4"}, "driver": {"useOpenKernelModules": False}}
    result = g.preflight(values, nodes, chart_version=chart_version)
    if error:
        assert len(result["errors"]) == 1 and error in result["errors"][0]
    else:
        assert result["errors"] == []
        assert any("driver.useOpenKernelModules is a no-op in chart %s" % chart_version in w
                   for w in result["warnings"])


def test_preflight_kernel_module_type_ignored_by_old_charts(nodes):
    result = g.preflight({"gds": {"enabled": True}, "driver": {"kernelModuleType": "proprietary"}}, nodes,
                         chart_version="v24.9.2")
    assert result["errors"] == [] and any("driver.kernelModuleType is not read by chart v24.9.2" in w
                                          for w in result["warnings"])


@pytest.mark.parametrize("driver,needle", [
    ({"enabled": False}, "driver.enabled: false"),
    ({"enabled": "false"}, "driver.enabled: false"),
    ({"usePrecompiled": True}, "driver.usePrecompiled: true"),
])
def test_preflight_refuses_what_cannot_work(nodes, driver, needle):
    result = g.preflight({"gds": {"enabled": True}, "driver": driver}, nodes, chart_version="v26.7.0")
    assert len(result["errors"]) == 1 and needle in result["errors"][0]
    assert g.preflight({"gds": {"enabled": False}, "driver": driver}, nodes)["errors"] == []


def test_preflight_sees_gpu_nodes_the_operator_has_not_labelled_yet(nodes):
    """A fresh cluster: only NFD's PCI label says which nodes are GPU nodes."""
    fresh = copy.deepcopy(nodes) + [{"metadata": {"name": "gpu-c", "labels": {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "rocky",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "9.4"}}}]
    for node in fresh[:2]:
        del node["metadata"]["labels"]["nvidia.com/gpu.present"]
        node["metadata"]["labels"]["feature.node.kubernetes.io/pci-10de.present"] = "true"
    result = g.preflight({"gds": {"enabled": True}}, fresh, "fail")
    assert [n["name"] for n in result["nodes"]] == ["gpu-a", "gpu-b", "gpu-c"]
    assert len(result["errors"]) == 1 and "gpu-c (rocky 9.4)" in result["errors"][0]


@pytest.mark.parametrize("value,text", [(True, "true"), (False, "false"), ("false", '"false"'), (None, "null"),
                                        ("2.29.4", "2.29.4"), (2, "2"), ("open", "open"), ("1.5", '"1.5"')])
def test_yaml_scalar(value, text):
    assert g.yaml_scalar(value) == text


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


def test_a_switch_given_as_a_string_fails_naming_it():
    with pytest.raises(g.ValuesError) as err:
        g.desired_values([], {"gds": {"enabled": "false"}}, {"gds": {"version": "2.29.4"}})
    assert str(err.value).startswith('values gds.enabled: "false" is a string, not a boolean')
    assert "write gds.enabled: false without quotes" in str(err.value)
    with pytest.raises(g.ValuesError, match="driver.rdma.enabled"):
        g.desired_values([], {"driver": {"rdma": {"enabled": "yes"}}}, {})


def test_gds_version_without_gds_is_warned(nodes):
    result = g.preflight({"gds": {"enabled": False, "version": "2.29.4"}}, nodes)
    assert result["warnings"] == ["gds.version is 2.29.4 but gds.enabled: false: no node gets nvidia-fs from the operator"]


def test_kernel_module_fix_in_the_terms_the_user_used(nodes):
    values = {"gds": {"enabled": True}, "driver": {"kernelModuleType": "proprietary"}}
    from_values = g.preflight(values, nodes)["errors"][0]
    assert "set driver.kernelModuleType: open (or auto) in values" in from_values and "kernel_module_type" not in from_values
    from_option = g.preflight(values, nodes, options={("driver", "kernelModuleType"): "driver.kernel_module_type"})
    assert "use driver.kernel_module_type: open (or auto)" in from_option["errors"][0]


def test_unsupported_os_counts_only_nodes_meant_to_get_gds(nodes):
    rocky = copy.deepcopy(nodes[1])
    rocky["metadata"]["labels"].update({"feature.node.kubernetes.io/system-os_release.ID": "rocky",
                                        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "9.4"})
    fleet = [nodes[0], rocky]
    pools = {"driver": {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}}, "gds": {"enabled": True}}
    crs = [{"metadata": {"name": "storage"}, "spec": {"nodeSelector": {"kubernetes.io/hostname": "gpu-a"},
                                                      "gds": {"enabled": True}}},
           {"metadata": {"name": "compute"}, "spec": {"nodeSelector": {"kubernetes.io/hostname": "gpu-b"}}}]
    for node in fleet:
        node["metadata"]["labels"]["kubernetes.io/hostname"] = node["metadata"]["name"]
    result = g.preflight(pools, fleet, "fail", drivers=crs)
    assert result["errors"] == [] and [n["gds_expected"] for n in result["nodes"]] == [True, False]
    # the chart's default CR (deployDefaultCR) or ClusterPolicy mode would give gpu-b GDS
    assert "gpu-b (rocky 9.4)" in g.preflight({"gds": {"enabled": True}}, fleet, "fail", drivers=crs)["errors"][0]
    with_default = {"driver": {"nvidiaDriverCRD": {"enabled": True}}, "gds": {"enabled": True}}
    assert g.preflight(with_default, fleet, "fail", drivers=crs[:1])["errors"]
