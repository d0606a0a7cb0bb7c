# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_k8s.cluster_policy: who installed the GPU Operator, and the ClusterPolicy spec patch (pure)."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import cluster_policy as cp


def policy(name="gpu-cluster-policy", spec=None, helm=None):
    meta = {"name": name}
    if helm:
        meta["annotations"] = {"meta.helm.sh/release-name": helm[0], "meta.helm.sh/release-namespace": helm[1]}
        meta["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
    return {"metadata": meta, "spec": spec if spec is not None else {"driver": {"enabled": True}}}


def subscription(ns="nvidia-gpu-operator", package="gpu-operator-certified", installed="gpu-operator-certified.v26.7.0"):
    return {"metadata": {"name": package, "namespace": ns}, "spec": {"name": package, "channel": "v26.7"},
            "status": {"installedCSV": installed, "currentCSV": installed, "state": "AtLatestKnown"}}


def csv(ns="nvidia-gpu-operator", name="gpu-operator-certified.v26.7.0", phase="Succeeded", copied=False):
    meta = {"name": name, "namespace": ns}
    if copied:
        meta["labels"] = {"olm.copiedFrom": "nvidia-gpu-operator"}
    return {"metadata": meta, "spec": {"version": "26.7.0"}, "status": {"phase": phase, "reason": "InstallSucceeded"}}


# --- who installed it ----------------------------------------------------------------------------
def test_olm_install_found_by_subscription_and_csv():
    found = cp.install_method("auto", [policy()], [subscription()], [csv()])
    assert found["method"] == "olm" and found["policy"]["metadata"]["name"] == "gpu-cluster-policy"
    assert found["olm"] == {"namespace": "nvidia-gpu-operator", "subscription": "gpu-operator-certified",
                            "csv": "gpu-operator-certified.v26.7.0", "phase": "Succeeded", "version": "26.7.0"}


HELM_POLICY = policy("cluster-policy", helm=("gpu-operator", "gpu-operator"))


@pytest.mark.parametrize("requested, policies, subscriptions, csvs, method", [
    ("auto", [policy()], [], [csv()], "olm"),  # a CSV alone
    # a copied CSV (AllNamespaces operator groups) is not an install; another package is not the GPU Operator
    ("auto", [], [subscription(package="network-operator", installed="network-operator.v25.1.0")],
     [csv(ns="default", copied=True)], "helm"),
    ("auto", [], [], [], "helm"),
    ("auto", [HELM_POLICY], [], [], "helm"),
    ("auto", [policy("applied-by-gitops")], [], [], "clusterpolicy"),
    ("olm", [policy("applied-by-gitops")], [], [], "clusterpolicy"),
    ("helm", [policy("unowned")], [], [], "helm"),
])
def test_who_installed_it(requested, policies, subscriptions, csvs, method):
    assert cp.install_method(requested, policies, subscriptions, csvs)["method"] == method


def test_the_owner_found_is_named():
    assert cp.install_method("auto", [HELM_POLICY], [], [])["helm"] == "helm release gpu-operator (namespace gpu-operator)"
    assert cp.install_method("auto", [policy("applied-by-gitops")], [], [])["policy"]["metadata"]["name"] == "applied-by-gitops"


@pytest.mark.parametrize("requested", ["auto", "helm", "olm"])
def test_helm_and_olm_both_claim_it_refused_naming_both(requested):
    with pytest.raises(cp.ClaimConflict) as err:
        cp.install_method(requested, [HELM_POLICY, policy()],
                          [subscription()], [csv()])
    text = str(err.value)
    assert "helm release gpu-operator (namespace gpu-operator)" in text
    assert "OLM Subscription gpu-operator-certified (CSV gpu-operator-certified.v26.7.0) in namespace " \
           "nvidia-gpu-operator" in text


@pytest.mark.parametrize("requested, policies, subscriptions, csvs, message", [
    ("helm", [policy()], [subscription()], [csv()], "install_method=helm.*OLM Subscription gpu-operator-certified"),
    ("olm", [HELM_POLICY], [], [], "install_method=olm.*helm release gpu-operator"),
    ("auto", [policy()], [subscription(ns="a"), subscription(ns="b")], [], "namespaces a, b"),  # two OLM installs
])
def test_a_forced_method_or_two_olm_installs_are_refused(requested, policies, subscriptions, csvs, message):
    with pytest.raises(cp.ClaimConflict, match=message):
        cp.install_method(requested, policies, subscriptions, csvs)


# --- the spec we want ------------------------------------------------------------------------------
def test_desired_maps_options_onto_the_crd_paths():
    leaves = cp.desired_leaves({"gds": {"version": "2.29.4"}, "rdma": {"enabled": True, "use_host_mofed": True},
                                "driver": {"kernel_module_type": "open", "version": "595.91.07"}}, {})
    assert leaves == {("gds", "enabled"): True, ("gds", "version"): "2.29.4",
                      ("gds", "repository"): "nvcr.io/nvidia/cloud-native", ("gds", "image"): "nvidia-fs",
                      ("driver", "rdma", "enabled"): True, ("driver", "rdma", "useHostMofed"): True,
                      ("driver", "kernelModuleType"): "open", ("driver", "version"): "595.91.07"}


def test_desired_keeps_an_image_the_spec_names_and_defaults_nothing_when_gds_is_off():
    spec = {"gds": {"repository": "registry.local/nvidia", "image": "nvidia-fs", "version": "2.27.3"}}
    assert cp.desired_leaves({"gds": {"version": "2.29.4"}}, spec) == {
        ("gds", "enabled"): True, ("gds", "version"): "2.29.4"}
    assert cp.desired_leaves({"gds": {"enabled": False}}, {}) == {("gds", "enabled"): False}


def test_plan_changes_only_what_differs_and_never_removes():
    spec = {"gds": {"enabled": False, "imagePullPolicy": "IfNotPresent"}, "driver": {"enabled": True, "rdma": {}},
            "operator": {"use_ocp_driver_toolkit": True}}
    leaves = cp.desired_leaves({"gds": {"version": "2.29.4"}, "rdma": {"enabled": False}}, spec)
    reasons, patch = cp.plan(spec, leaves)
    assert patch == {"spec": {"gds": {"enabled": True, "version": "2.29.4", "repository": "nvcr.io/nvidia/cloud-native",
                                      "image": "nvidia-fs"}, "driver": {"rdma": {"enabled": False}}}}
    assert reasons == ["spec.driver.rdma.enabled: (unset) -> false", "spec.gds.enabled: false -> true",
                       "spec.gds.image: (unset) -> nvidia-fs",
                       "spec.gds.repository: (unset) -> nvcr.io/nvidia/cloud-native",
                       "spec.gds.version: (unset) -> 2.29.4"]
    assert None not in _leaf_values(patch)
    after = cp.apply_patch(spec, patch)
    assert after["operator"] == {"use_ocp_driver_toolkit": True} and after["gds"]["imagePullPolicy"] == "IfNotPresent"
    assert cp.plan(after, cp.desired_leaves({"gds": {"version": "2.29.4"}, "rdma": {"enabled": False}}, after)) \
        == ([], {})


def test_plan_compares_a_string_boolean_like_the_api_would_not():
    # the CRD types gds.enabled as a boolean: "true" in the spec is not true; a patch fixes it
    reasons, patch = cp.plan({"gds": {"enabled": "true"}}, {("gds", "enabled"): True})
    assert patch == {"spec": {"gds": {"enabled": True}}} and reasons == ['spec.gds.enabled: "true" -> true']


def test_managed_view_and_undo():
    spec = {"gds": {"enabled": False}, "driver": {"enabled": True}}
    leaves = {("gds", "enabled"): True, ("gds", "version"): "2.29.4"}
    assert cp.managed_view(spec, leaves) == {"gds": {"enabled": False}}
    assert cp.managed_view(cp.apply_patch(spec, cp.plan(spec, leaves)[1]), leaves) == \
        {"gds": {"enabled": True, "version": "2.29.4"}}
    # undo: the previous values back, and what the patch added removed again (null in a merge patch)
    assert cp.undo_patch(spec, leaves) == {"spec": {"gds": {"enabled": False, "version": None}}}


def _leaf_values(tree):
    if isinstance(tree, dict):
        return [v for value in tree.values() for v in _leaf_values(value)]
    return [tree]


# --- what the preflight reads --------------------------------------------------------------------------
def test_preflight_values_of_a_spec():
    values = cp.preflight_values({"driver": {"useNvidiaDriverCRD": True, "kernelModuleType": "open"},
                                  "gds": {"enabled": True}})
    assert values["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}
    assert values["driver"]["kernelModuleType"] == "open"


def test_spec_problems():
    assert cp.spec_problems({"gds": {"enabled": True, "repository": "r", "image": "nvidia-fs", "version": "2.29.4"}},
                            {("gds", "enabled"): True}) == []
    missing = cp.spec_problems({"gds": {"enabled": True}}, {("gds", "enabled"): True})
    assert missing and "gds.version" in missing[0] and "GDS_IMAGE" in missing[0]
    crd = cp.spec_problems({"driver": {"useNvidiaDriverCRD": True}, "gds": {"enabled": True, "image": "x@sha256:1"}},
                           {("gds", "enabled"): True})
    assert crd and "NVIDIADriver" in crd[0] and "spec.gds" in crd[0]


# --- OLM's objects not readable ------------------------------------------------------------------
FORBIDDEN = ("subscriptions", "403 Forbidden")


@pytest.mark.parametrize("requested", ["auto", "olm"])
def test_olm_lookup_forbidden_fails_naming_the_verb_and_the_ways_out(requested):
    """Without the list of OLM's objects no OLM install is known absent: not taken as none."""
    for policies in ([], [policy("applied-by-gitops")], [HELM_POLICY]):
        with pytest.raises(cp.ClaimConflict) as err:
            cp.install_method(requested, policies, [], [], olm_forbidden=FORBIDDEN)
        text = str(err.value)
        assert "list subscriptions.operators.coreos.com is forbidden (403 Forbidden)" in text, text
        assert "grant list on subscriptions and clusterserviceversions (operators.coreos.com)" in text, text
        assert "install_method: helm" in text, text


def test_olm_lookup_forbidden_with_install_method_helm_goes_on_unchecked():
    found = cp.install_method("helm", [], [], [], olm_forbidden=FORBIDDEN)
    assert found["method"] == "helm" and "not checked whether OLM installed the GPU Operator" in found["olm_unchecked"]
    assert "list subscriptions.operators.coreos.com is forbidden" in found["olm_unchecked"]
    assert cp.install_method("helm", [], [], [])["olm_unchecked"] is None
