# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gpu_operator module's helm sequence: read -> plan -> (act) -> wait -> report.
PRIVATE to the collection. What decides is in pure functions (_k8s.helm, _k8s.operator_values,
_k8s.readiness); this class wires helm, the API and the module together.

``changed`` and any rollback / uninstall follow what ``helm history`` shows before and after. The
run ends within ``wait_timeout``: helm and the readiness wait share it less ``undo_reserve()``."""

from __future__ import annotations

import json
import os
import tempfile
import time
import traceback

try:
    import yaml
    HAS_YAML = True
    YAML_IMPORT_ERROR = None
except ImportError:
    HAS_YAML = False
    YAML_IMPORT_ERROR = traceback.format_exc()

from ansible.module_utils.basic import missing_required_lib
from ansible_collections.gpudirect.storage.plugins.module_utils._common.redact import redact_values, secret_strings
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import api_retry as retry
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import auth
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import wait as kw
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.operator_values import (
    ValuesError, desired_values, option_values, preflight)
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.helm import (
    Helm, HelmError, latest_revision, parse_duration, plan_release, previous_good_revision, release_info, values_diff)
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.outcome import error_text, leftovers, leftovers_text, undo_reserve
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError, Runner, tail


def argument_spec():
    return dict(
        auth.argument_spec(),
        state=dict(type="str", choices=["present", "absent"], default="present", aliases=["release_state"]),
        release_name=dict(type="str", default="gpu-operator", aliases=["name"]),
        release_namespace=dict(type="str", default="gpu-operator", aliases=["namespace"]),
        create_namespace=dict(type="bool", default=True),
        chart_ref=dict(type="str"),
        chart_repo_url=dict(type="str"),
        chart_version=dict(type="str"),
        values=dict(type="dict", default={}, aliases=["release_values"]),
        values_files=dict(type="list", elements="path", default=[]),
        show_values=dict(type="bool", default=False),
        gds=dict(type="dict", default={}, options=dict(
            enabled=dict(type="bool"), version=dict(type="str"), repository=dict(type="str"),
            image=dict(type="str"))),
        rdma=dict(type="dict", default={}, options=dict(
            enabled=dict(type="bool"), use_host_mofed=dict(type="bool"))),
        driver=dict(type="dict", default={}, options=dict(
            version=dict(type="str"),
            kernel_module_type=dict(type="str", choices=["auto", "open", "proprietary"]))),
        # The action plugin brings a controller kubeconfig over unless remote_src.
        kubeconfig_content=dict(type="raw", no_log=True),
        remote_src=dict(type="bool", default=False),
        helm_binary=dict(type="str", default="helm", aliases=["binary_path"]),
        wait=dict(type="bool", default=True),
        wait_timeout=dict(type="raw", default=600),
        rollback_on_failure=dict(type="bool", default=True),
        unsupported_os=dict(type="str", choices=["warn", "fail"], default="warn"),
        expected_gpu_nodes=dict(type="int"),
        gpu_node_selector=dict(type="str"),
    )


REQUIRED_IF = [("state", "present", ["chart_ref"])]
MUTUALLY_EXCLUSIVE = [("kubeconfig", "kubeconfig_content"), ("host", "kubeconfig"), ("host", "kubeconfig_content")]


class ModuleFailure(Exception):
    """Stop with fail_json(msg, **extra)."""

    def __init__(self, msg, **extra):
        super(ModuleFailure, self).__init__(msg)
        self.msg = msg
        self.extra = extra


def _yaml_dump(data):
    if HAS_YAML:
        return yaml.safe_dump(data, default_flow_style=False, sort_keys=True)
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


class GpuOperatorManager(object):
    def __init__(self, module, runner=None, source_factory=None, clock=time.monotonic, sleep=None):
        self.module, self.params = module, module.params
        self.runner = runner or Runner(module)
        self.source_factory = source_factory
        self.clock, self.sleep = clock, sleep or time.sleep
        self.result = {"changed": False}
        self._tmp_files = []

    # --- helpers --------------------------------------------------------------------------
    def _tmp_file(self, content, suffix):
        fd, path = tempfile.mkstemp(prefix="gpu-operator-", suffix=suffix, dir=getattr(self.module, "tmpdir", None))
        self._tmp_files.append(path)
        with os.fdopen(fd, "w") as handle:  # mkstemp: mode 0600, owner only
            handle.write(content)
        return path

    def cleanup(self):
        for path in self._tmp_files:
            try:
                os.unlink(path)
            except OSError:
                pass

    def _kubeconfig(self):
        """The kubeconfig file helm and the API client both read (None: the client's default);
        one built from host / in_cluster or kubeconfig_content is a 0600 temporary file."""
        try:
            access = auth.cluster_access(self.params, self.params.get("kubeconfig_content"))
        except auth.AuthError as exc:
            raise ModuleFailure(str(exc))
        for warning in access.warnings:
            self.module.warn(warning)
        self.params["context"] = access.context
        if access.config is None:
            return access.kubeconfig
        return self._tmp_file(access.config if isinstance(access.config, str) else json.dumps(access.config),
                              ".kubeconfig")

    def _load_values_files(self):
        files = []
        for path in self.params.get("values_files") or []:
            if not HAS_YAML:
                raise ModuleFailure(missing_required_lib("PyYAML"), exception=YAML_IMPORT_ERROR)
            try:
                with open(path) as handle:
                    files.append((path, yaml.safe_load(handle)))
            except (IOError, OSError) as exc:
                raise ModuleFailure("values_files: cannot read %s: %s" % (path, exc))
            except yaml.YAMLError as exc:
                raise ModuleFailure("values_files: %s is not valid YAML: %s" % (path, exc))
        return files

    def _source(self, kubeconfig):
        if self.source_factory is not None:
            return self.source_factory(kubeconfig)
        if not kw.HAS_KUBERNETES:
            raise ModuleFailure(missing_required_lib("kubernetes"), exception=kw.KUBERNETES_IMPORT_ERROR)
        try:
            client = auth.api_client(auth.ClusterAccess(kubeconfig=kubeconfig, context=self.params.get("context")))
        except Exception as exc:  # pylint: disable=broad-except  # the client's ConfigException, an unreadable file
            raise ModuleFailure("cannot load the kubeconfig / cluster credentials: %s" % exc)
        return kw.KubeSource(client, self.params["release_namespace"])

    def _read(self, what, func, *args):
        """A read-only API call (helm history / get values), retried with backoff while the API
        is unreachable or answers 5xx (_k8s.api_retry); then a clear failure."""
        try:
            return retry.call(what, func, *args, sleep=self.sleep, clock=self.clock)
        except retry.ApiUnavailable as exc:
            raise ModuleFailure(str(exc), commands=list(self.helm.commands) if getattr(self, "helm", None) else [])

    def _kube(self, what, func, *args):
        try:
            return func(*args)
        except ModuleFailure:
            raise
        except retry.ApiUnavailable as exc:
            raise ModuleFailure(str(exc))
        except Exception as exc:
            raise ModuleFailure("Kubernetes API error while %s: %s" % (what, str(exc).strip()[:500]))

    def _snapshot(self, source):
        """One read-only readiness evaluation for a failure message ({} when the API fails too)."""
        try:
            return kw.Waiter(source).snapshot()
        except Exception:
            return {}

    def _report(self, helm, values, **extra):
        shown = {"applied_values": redact_values(values)} if self.params["show_values"] else {}  # secrets masked
        self.result.update(helm_version=helm.version or "", commands=list(helm.commands), **dict(extra, **shown))
        return self.result

    # --- main -----------------------------------------------------------------------------
    def run(self):
        params = self.params
        self.module.no_log_values.update(secret_strings(params.get("values")))  # before any failure echoes them
        timeout = self._timeout()
        self.expect = self._expectation()
        kubeconfig = self._kubeconfig()
        helm = Helm(self.runner, params["helm_binary"], kubeconfig, params.get("context"))
        self.helm = helm
        try:
            helm.detect_version()
            if params["state"] == "absent":
                return self._absent(helm, timeout)
            return self._present(helm, kubeconfig, timeout)
        except CommandError as exc:
            raise ModuleFailure(str(exc), commands=list(helm.commands), **exc.to_fail_kwargs())
        except HelmError as exc:
            raise ModuleFailure(str(exc), commands=list(helm.commands))

    def _timeout(self):
        try:
            return parse_duration(self.params["wait_timeout"])
        except HelmError as exc:
            raise ModuleFailure(str(exc))

    def _expectation(self):
        """{count, selector} from expected_gpu_nodes / gpu_node_selector (checked up front)."""
        count, text = self.params.get("expected_gpu_nodes"), self.params.get("gpu_node_selector")
        if count is not None and count < 1:
            raise ModuleFailure("expected_gpu_nodes must be at least 1, not %d" % count)
        try:
            selector = kw.parse_selector(text) if text else None
        except ValueError as exc:
            raise ModuleFailure("gpu_node_selector: %s" % exc)
        return {"count": count, "selector": selector}

    def _remaining(self, deadline):
        return max(1, int(round(deadline - self.clock())))

    def _absent(self, helm, timeout):
        name, ns = self.params["release_name"], self.params["release_namespace"]
        history = self._read("reading the release history", helm.history, name, ns)
        installed = bool(history) and history[-1]["status"] != "uninstalled"
        before = self._read("reading the release values", helm.get_values, name, ns) if installed else {}
        self.result["changed"] = installed
        if installed and self.module._diff:
            self.result["diff"] = values_diff(name, redact_values(before), {}, history[-1]["chart"], "", _yaml_dump)
        if installed and not self.module.check_mode:
            res = helm.uninstall(name, ns, wait=self.params["wait"], timeout=timeout)
            if res.rc != 0:
                raise ModuleFailure("helm uninstall %s failed: %s" % (name, tail(res.stderr) or tail(res.stdout)),
                                    commands=list(helm.commands), rc=res.rc, stderr=res.stderr)
            history = []
        return self._report(helm, release=release_info(name, ns, history), values={}, reasons=(
            ["release is installed"] if installed else []), cluster_policy={}, nodes=[])

    def _present(self, helm, kubeconfig, timeout):
        # from the run's start where reads came first (gpu_operator_policy: who installed the operator)
        params, deadline = self.params, getattr(self, "started", self.clock()) + timeout
        self.deadline, self.reserve, self.cluster_before = deadline, undo_reserve(timeout), None
        name, ns = params["release_name"], params["release_namespace"]
        if not params.get("chart_ref"):
            raise ModuleFailure("chart_ref is required with state=present")
        try:
            desired = desired_values(self._load_values_files(), params.get("values"),
                                     {k: params.get(k) for k in ("gds", "rdma", "driver")})
        except ValuesError as exc:
            raise ModuleFailure(str(exc))
        chart = helm.show_chart(params["chart_ref"], params.get("chart_repo_url"), params.get("chart_version"))
        history = self._read("reading the release history", helm.history, name, ns, chart["name"])
        current = self._read("reading the release values", helm.get_values, name, ns) if history else {}
        self.module.no_log_values.update(secret_strings(desired) | secret_strings(current))  # out of any output
        self.source = source = retry.RetryingSource(self._source(kubeconfig), sleep=self.sleep, clock=self.clock)
        nodes = self._kube("listing nodes", source.list, "nodes")[0]
        drivers = self._kube("listing NVIDIADriver CRs", source.list, "nvidiadrivers")[0]
        pre = preflight(desired, nodes, params["unsupported_os"], chart.get("version"), drivers,
                        option_values({k: params.get(k) for k in ("gds", "rdma", "driver")})[1])
        for text in pre["warnings"]:
            self.module.warn(text)
        if pre["errors"]:
            raise ModuleFailure("preflight failed, nothing was changed: " + "; ".join(pre["errors"]),
                                nodes=pre["nodes"], commands=list(helm.commands))
        needed, reasons = plan_release(history, current, desired, chart)
        self.result.update(changed=needed, reasons=reasons)
        if self.module._diff:
            self.result["diff"] = values_diff(name, redact_values(current), redact_values(desired), history[-1]["chart"]
                                              if history else "", "%s-%s" % (chart["name"], chart["version"]), _yaml_dump)
        if needed:  # the chart renders these values (check mode too) before anything changes
            values_file = self._tmp_file(json.dumps(desired, indent=2, sort_keys=True), ".values.yaml")
            try:
                helm.render(name, ns, params["chart_ref"], values_file, desired, params.get("chart_repo_url"),
                            params.get("chart_version"))
            except HelmError as exc:
                raise ModuleFailure(str(exc), changed=False, release=release_info(name, ns, history),
                                    rolled_back_to=None, commands=list(helm.commands), helm_version=helm.version,
                                    **kw.node_results(pre["nodes"], {}))
        if self.module.check_mode:
            evaluation = self._kube("reading GDS readiness", kw.Waiter(source, expect=self.expect).snapshot) \
                if history else {}
            return self._finish(helm, history, desired, pre, evaluation)
        if needed:
            self.cluster_before = None if history else kw.cluster_objects(source)
            self.reserve = undo_reserve(timeout, helm.slowest)
            if deadline - self.reserve - self.clock() < 0.5:
                raise ModuleFailure("wait_timeout %ds leaves no time for helm upgrade after %.1fs of reads here; nothing "
                                    "was changed" % (timeout, timeout - deadline + self.clock()), changed=False, helm_version=helm.version)
            res = helm.upgrade(name, ns, params["chart_ref"], values_file, repo_url=params.get("chart_repo_url"),
                               version=params.get("chart_version"), create_namespace=params["create_namespace"],
                               wait=params["wait"], timeout=self._remaining(deadline - self.reserve))
            if res.rc != 0:
                # helm 4's --wait=watcher also waits for the ClusterPolicy's Ready condition, so a
                # crash-looping nvidia-fs-ctr can surface as a helm timeout: say what is not ready.
                msg = "helm upgrade failed: %s" % (tail(error_text(res.stderr)) or tail(res.stdout))
                evaluation = self._snapshot(source)
                if evaluation.get("problems") and latest_revision(self._history_now(helm, history)) != \
                        latest_revision(history):
                    msg += "; not ready: " + "; ".join(evaluation["problems"])
                self._failed(helm, history, msg, timeout, pre, evaluation, rc=res.rc, stderr=res.stderr)
        evaluation = {}
        if params["wait"]:
            waiter = kw.Waiter(source, expect=self.expect)
            evaluation = self._kube("waiting for GDS", waiter.wait, max(1.0, deadline - self.reserve - self.clock()))
            if not evaluation["ready"]:
                msg = kw.failure_message(evaluation, timeout)
                self._failed(helm, history, msg, timeout, pre, evaluation, ran_helm=needed)
        after = self._read("reading the release history", helm.history, name, ns, chart["name"])
        self.result["changed"] = latest_revision(after) != latest_revision(history)
        return self._finish(helm, after, desired, pre, evaluation)

    def _history_now(self, helm, fallback):
        try:
            return helm.history(self.params["release_name"], self.params["release_namespace"])
        except (CommandError, HelmError):
            return fallback

    def _finish(self, helm, history, desired, pre, evaluation):
        params = self.params
        return self._report(helm, release=release_info(params["release_name"], params["release_namespace"], history),
                            values=desired, cluster_policy=(evaluation or {}).get("cluster_policy", {}),
                            **kw.node_results(pre["nodes"], evaluation))

    def _failed(self, helm, before, msg, timeout, pre, evaluation, ran_helm=True, **extra):
        """Fail; with rollback_on_failure, undo only a revision this run created (or a release stuck in
        pending-*): a rollback to the previous good revision, or the uninstall of a failed first
        install. ``before``: the history before this run; ``changed``: whether the history changed."""
        name, ns = self.params["release_name"], self.params["release_namespace"]
        margin = max(1, int(self.deadline - self.clock()))  # the undo runs inside wait_timeout, without --wait
        rolled_back = None
        after = self._history_now(helm, before)
        created = latest_revision(after) != latest_revision(before)
        stuck = bool(before) and before[-1]["status"].startswith("pending")
        previous = previous_good_revision(before)
        if not created and not stuck:
            msg += ("; helm created no revision (nothing to roll back)" if ran_helm else
                    " (nothing was changed by this run, so nothing was rolled back)")
        elif not self.params["rollback_on_failure"]:
            msg += "; the failed revision stays (rollback_on_failure is false)"
        elif previous is not None:
            res = helm.rollback(name, ns, previous, wait=False, timeout=margin)
            msg += ("; rolled back to revision %d" % previous if res.rc == 0 else
                    "; rollback to revision %d FAILED: %s" % (previous, tail(res.stderr)))
            rolled_back = previous if res.rc == 0 else None
        elif after and after[-1]["status"] != "uninstalled":
            res = helm.uninstall(name, ns, wait=False, timeout=margin)
            msg += ("; first install failed, release uninstalled" if res.rc == 0 else
                    "; uninstall after the failed install FAILED: %s" % tail(res.stderr))
        final = self._history_now(helm, after) if rolled_back is not None or created or stuck else after
        changed = latest_revision(final) != latest_revision(before)
        if not before and ran_helm:  # a first install: helm's CRDs and namespace outlive the uninstall
            extra["left_in_cluster"] = left = leftovers(self.cluster_before, kw.cluster_objects(self.source),
                                                        ns if self.params["create_namespace"] else None)
            changed, msg = changed or bool(leftovers_text(left)), msg + leftovers_text(left)
        msg += "; nothing was changed" if ran_helm and not changed else ""
        raise ModuleFailure(msg, changed=changed, rolled_back_to=rolled_back,
                            reasons=self.result.get("reasons", []),
                            release=release_info(name, ns, final), commands=list(helm.commands),
                            cluster_policy=(evaluation or {}).get("cluster_policy", {}),
                            helm_version=helm.version or "", **dict(extra, **kw.node_results(pre["nodes"], evaluation)))
