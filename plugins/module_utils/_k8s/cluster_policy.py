# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A GPU Operator the module did not install: who installed it, and the ClusterPolicy spec patch
that turns GDS on. Pure functions. PRIVATE to the collection.

OLM (OpenShift) installs the operator by a Subscription to ``gpu-operator-certified``; its
ClusterPolicy is owned by no helm release (no ``meta.helm.sh/release-name`` annotation). Only the
spec leaves the options map to (``spec.gds.*``, ``spec.driver.rdma.*``,
``spec.driver.kernelModuleType``, ``spec.driver.version``) are compared and merge-patched. OLM sets
no ``GDS_IMAGE``, so with GDS on the spec must name the whole nvidia-fs image."""

from __future__ import annotations

import copy

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.operator_values import (
    _get, _set, option_values, yaml_scalar)
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.readiness import pick_policy

PACKAGES = ("gpu-operator-certified",)  # NVIDIA's OLM package (bundle/metadata/annotations.yaml)
HELM_RELEASE = "meta.helm.sh/release-name"
HELM_NAMESPACE = "meta.helm.sh/release-namespace"
OLM_COPIED = "olm.copiedFrom"  # a CSV OLM copies into the target namespaces of an operator group
GDS_IMAGE_DEFAULTS = ((("gds", "repository"), "nvcr.io/nvidia/cloud-native"), (("gds", "image"), "nvidia-fs"))
GDS_PATHS_ROOTS = (("gds",), ("driver", "rdma"))


class ClaimConflict(ValueError):
    """A helm release and an OLM install (or the forced install_method) disagree; the message
    names both."""


def _meta(obj):
    return obj.get("metadata") or {}


def helm_owner(policy):
    """'helm release NAME (namespace NS)' when helm installed ``policy``, else None."""
    annotations = _meta(policy).get("annotations") or {}
    if not annotations.get(HELM_RELEASE):
        return None
    return "helm release %s (namespace %s)" % (annotations[HELM_RELEASE], annotations.get(HELM_NAMESPACE) or "?")


def _package_csv(name):
    return any(name.startswith(package + ".") for package in PACKAGES)


def olm_claims(subscriptions, csvs):
    """[{namespace, subscription, csv, phase, version}] of the OLM installs of the GPU Operator:
    a Subscription to its package, or its CSV where no Subscription is left (copied CSVs are
    not installs)."""
    own = [c for c in csvs or [] if _package_csv(_meta(c).get("name") or "")
           and OLM_COPIED not in (_meta(c).get("labels") or {})]
    by_key = {(_meta(c).get("namespace"), _meta(c)["name"]): c for c in own}
    claims = []
    for sub in sorted(subscriptions or [], key=lambda s: (_meta(s).get("namespace") or "", _meta(s).get("name") or "")):
        if (sub.get("spec") or {}).get("name") not in PACKAGES:
            continue
        status = sub.get("status") or {}
        namespace = _meta(sub).get("namespace")
        name = status.get("installedCSV") or status.get("currentCSV") or ""
        claims.append(_claim(namespace, _meta(sub).get("name"), name, by_key.get((namespace, name))))
    covered = {c["namespace"] for c in claims}
    for (namespace, name), found in sorted(by_key.items()):
        if namespace not in covered:
            covered.add(namespace)
            claims.append(_claim(namespace, None, name, found))
    return claims


def _claim(namespace, subscription, csv_name, csv):
    return {"namespace": namespace, "subscription": subscription, "csv": csv_name or None,
            "phase": ((csv or {}).get("status") or {}).get("phase"), "version": ((csv or {}).get("spec") or {}).get("version")}


def claim_text(claim):
    """'OLM Subscription S (CSV C) in namespace N' / 'OLM CSV C in namespace N'."""
    if claim["subscription"]:
        return "OLM Subscription %s (CSV %s) in namespace %s" % (
            claim["subscription"], claim["csv"] or "none yet", claim["namespace"])
    return "OLM CSV %s in namespace %s" % (claim["csv"], claim["namespace"])


def _olm_forbidden_text(olm_forbidden):
    return "list %s.operators.coreos.com is forbidden (%s)" % olm_forbidden


def install_method(requested, policies, subscriptions, csvs, olm_forbidden=None):
    """How the GPU Operator is managed: {method: helm | olm | clusterpolicy, policy, olm, helm,
    olm_unchecked}. ``auto``: an OLM install means olm, else a ClusterPolicy no helm release owns
    means clusterpolicy, else helm. ClaimConflict names both claimants when they contradict, and,
    when OLM's objects could not be listed (``olm_forbidden``), anything but a forced ``helm``."""
    if olm_forbidden and requested != "helm":
        raise ClaimConflict("install_method=%s: cannot tell whether OLM installed the GPU Operator: %s; grant list "
                            "on subscriptions and clusterserviceversions (operators.coreos.com), as "
                            "docs/rbac/gpu_operator.yaml does, or set install_method: helm to install or upgrade "
                            "a helm release without that check" % (requested, _olm_forbidden_text(olm_forbidden)))
    unchecked = None
    if olm_forbidden:
        unchecked = ("install_method=helm: not checked whether OLM installed the GPU Operator (%s); a helm release "
                     "beside an OLM install would be a second operator" % _olm_forbidden_text(olm_forbidden))
    found = _install_method(requested, policies, subscriptions, csvs)
    found["olm_unchecked"] = unchecked
    return found


def _install_method(requested, policies, subscriptions, csvs):
    claims = olm_claims(subscriptions, csvs)
    if len({c["namespace"] for c in claims}) > 1:
        raise ClaimConflict("OLM installed the GPU Operator in namespaces %s (%s); one operator per cluster: remove "
                            "the extra install" % (", ".join(sorted({c["namespace"] for c in claims})),
                                                   "; ".join(claim_text(c) for c in claims)))
    olm = claims[0] if claims else None
    owned = sorted((p for p in policies or [] if helm_owner(p)), key=lambda p: _meta(p).get("name") or "")
    helm = helm_owner(owned[0]) if owned else None
    unowned = [p for p in policies or [] if not helm_owner(p)]
    if olm and helm:
        raise ClaimConflict("%s and %s both claim the GPU Operator (ClusterPolicy %s is helm's); two operators "
                            "reconcile against each other: uninstall one of them (helm uninstall, or delete the "
                            "Subscription and CSV) before enabling GDS" % (helm, claim_text(olm), _meta(owned[0])["name"]))
    if requested == "helm" and olm:
        raise ClaimConflict("install_method=helm, but %s installed the GPU Operator: a helm release would install a "
                            "second operator; use install_method: olm (or auto)" % claim_text(olm))
    if requested == "olm" and helm:
        raise ClaimConflict("install_method=olm, but %s owns ClusterPolicy %s: use install_method: helm (or auto)"
                            % (helm, _meta(owned[0])["name"]))
    if olm:
        return {"method": "olm", "policy": pick_policy(unowned), "olm": olm, "helm": None}
    if requested == "olm" or (requested == "auto" and unowned and not helm):
        return {"method": "clusterpolicy", "policy": pick_policy(unowned), "olm": None, "helm": None}
    return {"method": "helm", "policy": None, "olm": None, "helm": helm}


# --- the spec ------------------------------------------------------------------------------------
def _leaves(tree, prefix=()):
    if isinstance(tree, dict) and tree:
        return [leaf for key in sorted(tree) for leaf in _leaves(tree[key], prefix + (key,))]
    return [(prefix, tree)]


def desired_leaves(options, spec):
    """{spec path (tuple, under spec): value} that the options ask for; ``gds.enabled`` true
    unless set (as in helm mode); with GDS on and a version known, the chart's nvidia-fs
    repository / image where the spec names none."""
    tree = option_values(options)[0]
    leaves = dict(_leaves(tree)) if tree else {}
    leaves.setdefault(("gds", "enabled"), True)
    spec = spec or {}
    version = leaves.get(("gds", "version")) or _get(spec, ("gds", "version"))[0]
    if leaves[("gds", "enabled")] is True and version:
        for path, default in GDS_IMAGE_DEFAULTS:
            if path not in leaves and not _get(spec, path)[0]:
                leaves[path] = default
    return leaves


def plan(spec, leaves):
    """(reasons, merge patch) turning ``spec`` into one with every leaf as desired; ([], {})
    when nothing differs. The patch names only the leaves that differ and never null."""
    reasons, patch = [], {}
    for path in sorted(leaves):
        have, found = _get(spec or {}, path)
        want = leaves[path]
        if found and have == want and type(have) is type(want):
            continue
        reasons.append("spec.%s: %s -> %s" % (".".join(path), yaml_scalar(have) if found else "(unset)",
                                              yaml_scalar(want)))
        _set(patch, path, want)
    return reasons, ({"spec": patch} if patch else {})


def _merge(target, patch):
    """RFC 7386 JSON merge patch of ``patch`` onto ``target`` (a copy)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def apply_patch(spec, patch):
    """The spec after the merge patch ``plan`` returned."""
    return _merge(spec or {}, (patch or {}).get("spec") or {})


def managed_view(spec, leaves):
    """The part of ``spec`` at the managed paths (for the diff)."""
    view = {}
    for path in sorted(leaves):
        value, found = _get(spec or {}, path)
        if found:
            _set(view, path, value)
    return view


def undo_patch(before, leaves):
    """A merge patch that puts every managed leaf back as it was in ``before`` (null removes one
    that was not set)."""
    patch = {}
    for path in sorted(leaves):
        value, found = _get(before or {}, path)
        _set(patch, path, copy.deepcopy(value) if found else None)
    return {"spec": patch}


def preflight_values(spec):
    """The spec as ``operator_values.preflight`` reads chart values: NVIDIADriver mode from
    ``driver.useNvidiaDriverCRD``, and no default NVIDIADriver (no chart deploys one here)."""
    values = copy.deepcopy(spec or {})
    driver = values.get("driver") if isinstance(values.get("driver"), dict) else {}
    driver["nvidiaDriverCRD"] = {"enabled": driver.get("useNvidiaDriverCRD") is True, "deployDefaultCR": False}
    values["driver"] = driver
    return values


def spec_problems(spec, leaves):
    """What makes the patched ``spec`` useless for GDS, before anything is patched."""
    problems = []
    if (_get(spec, ("driver", "useNvidiaDriverCRD"))[0] is True
            and any(path[:len(root)] == root for path in leaves for root in GDS_PATHS_ROOTS)):
        problems.append("the ClusterPolicy has driver.useNvidiaDriverCRD: true: GDS and RDMA are set per node pool in "
                        "the NVIDIADriver CRs (their spec.gds / spec.rdma), which this module does not patch; the "
                        "ClusterPolicy's spec.gds and spec.driver.rdma are not read by the operator there")
        return problems
    gds = _get(spec, ("gds",))[0] or {}
    if gds.get("enabled") is True:
        repository, image, version = (gds.get(key) or "" for key in ("repository", "image", "version"))
        digest_only = image and not repository and not version
        if not digest_only and not (repository and image and version):
            fields = (("repository", repository), ("image", image), ("version", version))
            missing = ", ".join("gds.%s" % key for key, value in fields if not value)
            problems.append("GDS on needs the nvidia-fs image in the ClusterPolicy: %s not set (the operator "
                            "installed by OLM has no GDS_IMAGE default); set gds.version (for example 2.29.4; "
                            "repository and image default to %s/%s)" % (missing, GDS_IMAGE_DEFAULTS[0][1],
                                                                        GDS_IMAGE_DEFAULTS[1][1]))
    return problems
