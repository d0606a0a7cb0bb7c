# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gpu_operator module's entry: who installed the GPU Operator decides the sequence.
PRIVATE to the collection. helm (or nobody yet): ``gpu_operator``'s helm sequence; OLM, or a
ClusterPolicy no helm release owns: a merge patch of the ClusterPolicy's spec, with the same
preflight, readiness wait and node reports."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.module_utils._common.redact import secret_strings
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import api_retry as retry
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import cluster_policy as cp
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import wait as kw
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.operator_values import option_values, preflight
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gpu_operator as helm_flow

ModuleFailure = helm_flow.ModuleFailure
MUTUALLY_EXCLUSIVE = helm_flow.MUTUALLY_EXCLUSIVE
REQUIRED_IF = []  # chart_ref: only a helm install needs it (the helm sequence says so)
CHART_ONLY = ("chart_ref", "chart_repo_url", "chart_version")
NO_RELEASE = {"name": None, "namespace": None, "status": "none"}  # the result's release, where helm has none
OPTIONS = ("gds", "rdma", "driver")


def argument_spec():
    spec = helm_flow.argument_spec()
    spec["install_method"] = dict(type="str", choices=["auto", "helm", "olm"], default="auto")
    return spec


class PolicySource(kw.KubeSource):
    """The readiness wait's lists and watches in the operator's namespace, and the one write of
    this sequence: a JSON merge patch of the ClusterPolicy."""

    def __init__(self, client, namespace):
        super(PolicySource, self).__init__(client, namespace)
        self.custom = kw.k8s_client.CustomObjectsApi(client)

    def patch_policy(self, name, body):
        self.custom.patch_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", name, body,
                                                _content_type="application/merge-patch+json", _request_timeout=30)


def _yaml(data):
    return helm_flow._yaml_dump(data) if data else "{}\n"


class GpuOperatorManager(helm_flow.GpuOperatorManager):

    def run(self):
        params = self.params
        self.module.no_log_values.update(secret_strings(params.get("values")))
        timeout = self._timeout()
        self.started = self.clock()  # the helm sequence's deadline counts from here too
        self.expect = self._expectation()
        kubeconfig = self._kubeconfig()
        found = self._installer(kubeconfig)
        self.result["install_method"] = found["method"]
        if found["method"] == "helm":
            try:
                return super(GpuOperatorManager, self).run()
            except ModuleFailure as exc:
                exc.extra.setdefault("install_method", "helm")
                raise
        return self._policy(found, kubeconfig, timeout, self.started + timeout)

    def _source(self, kubeconfig):
        """One API client per run: finding the installer and the helm sequence share it (its
        setup is a good part of the reads that count against wait_timeout)."""
        if getattr(self, "shared_source", None) is None:
            self.shared_source = super(GpuOperatorManager, self)._source(kubeconfig)
        return self.shared_source

    def _policy_source(self, kubeconfig, namespace):
        """A PolicySource in the operator's ``namespace`` on the client the helm sequence builds
        (a test's fake source as it is)."""
        source = self._source(kubeconfig)
        return PolicySource(source.client, namespace) if isinstance(source, kw.KubeSource) else source

    def _installer(self, kubeconfig):
        """cluster_policy.install_method() from the ClusterPolicies and OLM's objects."""
        source = retry.RetryingSource(self._source(kubeconfig), sleep=self.sleep, clock=self.clock)
        policies = self._kube("listing ClusterPolicies", source.list, "clusterpolicies")[0]
        olm = {"subscriptions": [], "clusterserviceversions": []}
        forbidden = None
        for kind in olm:
            try:
                olm[kind] = source.list(kind)[0]
            except Exception as exc:  # pylint: disable=broad-except
                if getattr(exc, "status", None) != 403:
                    raise ModuleFailure("Kubernetes API error while looking for an OLM install of the GPU Operator: "
                                        "%s" % retry.status_text(exc))
                forbidden = (kind, retry.status_text(exc))
                break
        try:
            found = cp.install_method(self.params["install_method"], policies, olm["subscriptions"],
                                      olm["clusterserviceversions"], olm_forbidden=forbidden)
        except cp.ClaimConflict as exc:
            raise ModuleFailure("%s; nothing was changed" % exc, changed=False)
        if found["olm_unchecked"]:
            self.module.warn(found["olm_unchecked"])
        return found

    def _policy(self, found, kubeconfig, timeout, deadline):
        params = self.params
        who = cp.claim_text(found["olm"]) if found["olm"] else "a ClusterPolicy no helm release owns"
        if params["state"] == "absent":
            raise ModuleFailure("state=absent uninstalls a helm release, but the GPU Operator here is managed through "
                                "%s: remove it there (OLM: delete its Subscription and CSV), or set gds.enabled: false; "
                                "nothing was changed" % who)
        for name in ("values", "values_files"):
            if params.get(name):
                raise ModuleFailure("%s: chart values apply to a helm install, but the GPU Operator here is managed "
                                    "through %s: set GDS with the gds, rdma and driver options (they patch the "
                                    "ClusterPolicy); nothing was changed" % (name, who))
        ignored = [name for name in CHART_ONLY if params.get(name)]
        if ignored:
            self.module.warn("%s ignored: the GPU Operator here is managed through %s; the module patches its "
                             "ClusterPolicy" % (", ".join(ignored), who))
        policy = found["policy"]
        if policy is None:
            raise ModuleFailure("no ClusterPolicy to patch (GPU Operator managed through %s): create one first (the "
                                "OpenShift console's ClusterPolicy form, from the CSV's alm-examples, or oc apply); "
                                "this module changes a ClusterPolicy, it does not create one" % who)
        name, spec = policy["metadata"]["name"], policy.get("spec") or {}
        options = {k: params.get(k) for k in OPTIONS}
        leaves = cp.desired_leaves(options, spec)
        reasons, patch = cp.plan(spec, leaves)
        after = cp.apply_patch(spec, patch)
        namespace = (found["olm"] or {}).get("namespace") or (policy.get("status") or {}).get("namespace") or \
            params["release_namespace"]
        raw = self._policy_source(kubeconfig, namespace)
        source = retry.RetryingSource(raw, sleep=self.sleep, clock=self.clock)
        nodes = self._kube("listing nodes", source.list, "nodes")[0]
        drivers = self._kube("listing NVIDIADriver CRs", source.list, "nvidiadrivers")[0]
        pre = preflight(cp.preflight_values(after), nodes, params["unsupported_os"],
                        (found["olm"] or {}).get("version"), drivers, option_values(options)[1])
        errors = cp.spec_problems(after, leaves) + pre["errors"]
        if found["olm"] and found["olm"]["phase"] == "Failed":
            errors.append("CSV %s is in phase Failed: the operator is not running" % found["olm"]["csv"])
        for text in pre["warnings"]:
            self.module.warn(text)
        self.result.update(changed=bool(patch), reasons=reasons, release=NO_RELEASE, helm_version="", commands=[],
                           operator=dict({"cluster_policy": name, "namespace": namespace}, **self._olm_report(found)))
        if errors:
            raise ModuleFailure("preflight failed, nothing was changed: " + "; ".join(errors), changed=False,
                                nodes=pre["nodes"], **self._report_extra())
        if self.module._diff:
            self.result["diff"] = {"before_header": "ClusterPolicy %s spec (managed paths)" % name,
                                   "after_header": "ClusterPolicy %s spec (managed paths, desired)" % name,
                                   "before": _yaml(cp.managed_view(spec, leaves)),
                                   "after": _yaml(cp.managed_view(after, leaves))}
        if self.module.check_mode:
            evaluation = self._kube("reading GDS readiness", kw.Waiter(source, expect=self.expect).snapshot)
            return self._policy_result(pre, evaluation)
        if patch:
            self._kube("patching ClusterPolicy %s" % name, raw.patch_policy, name, patch)
        evaluation = {}
        if params["wait"]:
            reserve = max(1, min(10, timeout // 5))  # one merge patch puts the spec back on failure
            waiter = kw.Waiter(source, expect=self.expect)
            evaluation = self._kube("waiting for GDS", waiter.wait, max(1.0, deadline - reserve - self.clock()))
            if not evaluation["ready"]:
                self._policy_failed(raw, name, spec, leaves, patch, pre, evaluation, timeout)
        return self._policy_result(pre, evaluation)

    @staticmethod
    def _olm_report(found):
        olm = found["olm"] or {}
        return {"method": found["method"], "subscription": olm.get("subscription"), "csv": olm.get("csv"),
                "csv_phase": olm.get("phase"), "version": olm.get("version")}

    def _report_extra(self):
        return {k: self.result[k] for k in ("install_method", "operator", "reasons", "release", "helm_version",
                                            "commands") if k in self.result}

    def _policy_result(self, pre, evaluation):
        self.result.update(cluster_policy=(evaluation or {}).get("cluster_policy", {}),
                           **kw.node_results(pre["nodes"], evaluation))
        return self.result

    def _policy_failed(self, raw, name, spec, leaves, patch, pre, evaluation, timeout):
        msg = kw.failure_message(evaluation, timeout)
        if not patch:
            msg += " (nothing was changed by this run, so nothing was put back)"
        elif not self.params["rollback_on_failure"]:
            msg += "; ClusterPolicy %s keeps the patch (rollback_on_failure is false)" % name
        else:
            try:
                raw.patch_policy(name, cp.undo_patch(spec, leaves))
                msg += "; the managed paths of ClusterPolicy %s were put back as they were" % name
            except Exception as exc:  # pylint: disable=broad-except
                msg += "; putting ClusterPolicy %s back FAILED: %s" % (name, retry.status_text(exc))
        raise ModuleFailure(msg, changed=bool(patch), cluster_policy=(evaluation or {}).get("cluster_policy", {}),
                            **dict(self._report_extra(), **kw.node_results(pre["nodes"], evaluation)))
