# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_node_probe's pure part: pod and ConfigMap specs, what a pod's status says, node labels."""

from __future__ import annotations

import json

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import node_labels as nl
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import node_probe as np
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_node_probe as run_mod


def params(**extra):
    out = dict((k, v.get("default")) for k, v in run_mod.argument_spec().items())
    out.update(extra)
    return out


def test_pod_is_a_gds_workload_pinned_to_its_node():
    pod = np.pod_spec("gpu-a.example.com", "r1", params(probe_path=["/mnt/nvme"]), "cm", "uid-1", 1234, "ab" * 32)
    spec = pod["spec"]
    ctr = spec["containers"][0]
    assert pod["metadata"]["name"].startswith("gds-probe-gpu-a-example-com-") and len(pod["metadata"]["name"]) <= 63
    assert pod["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpudirect.storage.gds_node_probe"
    assert pod["metadata"]["annotations"] == {"gpudirect.storage/node": "gpu-a.example.com",
                                              "gpudirect.storage/expires": "1234"}
    assert pod["metadata"]["ownerReferences"][0]["uid"] == "uid-1"  # GC takes the pod with the ConfigMap
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-a.example.com"]}]}]
    assert spec["restartPolicy"] == "Never" and spec["activeDeadlineSeconds"] == 300
    assert ctr["resources"]["limits"]["nvidia.com/gpu"] == "1" and ctr["resources"]["limits"]["memory"] == "2Gi"
    assert {"name": "NVIDIA_GDS", "value": "enabled"} in ctr["env"]
    assert ctr["securityContext"] == {"privileged": False, "allowPrivilegeEscalation": False,
                                      "capabilities": {"drop": ["ALL"]}}
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["automountServiceAccountToken"] is False
    mounts = dict((m["mountPath"], m) for m in ctr["volumeMounts"])
    vols = dict((v["name"], v) for v in spec["volumes"])
    assert mounts["/run/udev"]["readOnly"] is True and vols["run-udev"]["hostPath"]["path"] == "/run/udev"
    assert vols[mounts["/mnt/nvme"]["name"]]["hostPath"] == {"path": "/mnt/nvme", "type": "Directory"}
    assert vols[mounts["/etc/cufile.json"]["name"]]["hostPath"] == {"path": "/etc/cufile.json", "type": "File"}
    assert mounts["/gds-node-probe"]["readOnly"] is True and vols["probe-code"]["configMap"]["name"] == "cm"
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]
    assert "runtimeClassName" not in spec and ctr["command"][:2] == ["/bin/sh", "-c"]
    assert ctr["command"][3] == np.LOADER and ctr["command"][4:] == ["/gds-node-probe/", "ab" * 32]  # the loader checks this sha256 first


def test_privileged_is_all_or_nothing():
    spec = np.pod_spec("n", "r", params(privileged=True), "cm", "u", 1, "d")["spec"]
    assert spec["containers"][0]["securityContext"] == {"privileged": True, "allowPrivilegeEscalation": True}
    assert "securityContext" not in spec


def test_runtime_class_mode_requests_no_gpu_and_sees_all():
    spec = np.pod_spec("n", "r", params(gpu_resource="", runtime_class="nvidia", cufile_json="",
                                        image_pull_secrets=["regcred"]), "cm", "u", 1, "d")["spec"]
    ctr = spec["containers"][0]
    assert spec["runtimeClassName"] == "nvidia" and spec["imagePullSecrets"] == [{"name": "regcred"}]
    assert "nvidia.com/gpu" not in ctr["resources"]["limits"]
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in ctr["env"]
    assert "/etc/cufile.json" not in [m["mountPath"] for m in ctr["volumeMounts"]]


def test_configmap_carries_the_collection_probe_and_gather():
    data = np.bundle_data(params(probe_path=["/data"], probe_size_mb=16))
    digest = np.bundle_digest(data)
    cm = np.configmap(np.configmap_name("r1", digest), "ns", "r1", data, digest)
    assert cm["immutable"] is True and cm["metadata"]["name"] == "gds-node-probe-r1-" + digest[:12]
    assert cm["metadata"]["annotations"]["gpudirect.storage/bundle-sha256"] == digest
    for name in ("_gds.probe", "_gds.probe_child", "_gds.probe_io", "_gds.probe_lib", "_gds.probe_nvml", "_gds.probe_tune",
                 "_module_backends.gds_facts", "_gds.verdict", "_gds.collectors",
                 "_common.hostpaths", "_common.runner"):
        assert "mu.%s.py" % name in data
    assert json.loads(data["params.json"])["probe_path"] == ["/data"]
    assert json.loads(data["params.json"])["probe_size_mb"] == 16
    compile(data["entry.py"], "entry.py", "exec")
    assert sum(len(v) for v in data.values()) < 900 * 1024  # ConfigMaps hold at most 1 MiB
    assert all(set(k) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") for k in data)


def _pod(state=None, phase="Running", conditions=None, limits=None):
    status = {"phase": phase, "conditions": conditions or []}
    if state is not None:
        status["containerStatuses"] = [dict(state, name="probe")]
    return {"spec": {"containers": [{"image": "img:1", "resources": {"limits": limits or {"memory": "2Gi"}}}]},
            "status": status}


UNSCHEDULABLE = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                 "message": "0/3 nodes are available: 1 Insufficient nvidia.com/gpu."}


@pytest.mark.parametrize("pod,age,want", [
    (_pod({"state": {"running": {}}}), 5, ("wait", None)),
    (_pod({"state": {"terminated": {"exitCode": 0}}}, "Succeeded"), 5, ("done", None)),
    (_pod({"state": {"waiting": {"reason": "ImagePullBackOff", "message": "not found"}}}, "Pending"), 1,
     ("failed", ("image_pull", "ImagePullBackOff for image img:1: not found"))),
    (_pod({"state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}, "Failed"), 1,
     ("failed", ("oom_killed", "OOMKilled (exit code 137, memory limit 2Gi)"))),
    (_pod({"state": {"terminated": {"exitCode": 2, "reason": "Error"}}}, "Failed"), 1,
     ("failed", ("exited", "container exited with code 2 (Error)"))),
    (_pod({"restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off"}},
           "lastState": {"terminated": {"exitCode": 1}}}), 1,
     ("failed", ("crashed", "CrashLoopBackOff (restarts 3), last exit code 1: back-off"))),
    (_pod(None, "Pending", [UNSCHEDULABLE]), 1, ("wait", None)),
    (_pod(None, "Pending", [UNSCHEDULABLE]), 60,
     ("failed", ("unschedulable", "Pending for 60s: Unschedulable: 0/3 nodes are available: 1 Insufficient nvidia.com/gpu."))),
    (_pod(None, "Failed"), 1, ("failed", ("pod_failed", "pod Failed:  "))),
    (dict(_pod({"state": {"terminated": {"exitCode": 137, "reason": "Error"}}}, "Failed"),
          spec={"activeDeadlineSeconds": 300, "containers": [{}]},
          status={"phase": "Failed", "reason": "DeadlineExceeded", "message": "Pod was active on the node longer "
                  "than the specified deadline", "containerStatuses": [{"state": {"terminated": {"exitCode": 137}}}]}),
     301, ("failed", ("deadline", "activeDeadlineSeconds=300 exceeded: Pod was active on the node longer than the "
                                  "specified deadline"))),
])
def test_classify_names_the_reason_from_the_pod(pod, age, want):
    assert np.classify(pod, age, 60) == want


def test_deadline_reports_where_the_pod_still_is():
    pod = _pod({"state": {"waiting": {"reason": "ContainerCreating", "message": "hostPath /etc/cufile.json missing"}}},
               "Pending")
    assert np.still_waiting(pod, 310) == ("deadline", "pod still ContainerCreating after 310s: hostPath "
                                                      "/etc/cufile.json missing")


def test_node_not_ready_and_cordoned():
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}, "spec": {}}
    assert np.node_not_ready(ready) is None
    assert np.node_not_ready({"status": {"conditions": [{"type": "Ready", "status": "Unknown",
                                                         "reason": "NodeStatusUnknown"}]}}) == \
        "node NotReady (Ready=Unknown, NodeStatusUnknown)"
    assert np.node_not_ready(dict(ready, spec={"unschedulable": True})) == "node is cordoned (spec.unschedulable)"


def test_parse_log_and_tail():
    text = "libcufile noise\n%s facts {\"mode\": \"compat\"}\n%s image python3 not found\n" % (np.MARK, np.MARK)
    assert np.parse_log(text) == ({"mode": "compat"}, {"image": "python3 not found"})
    assert np.parse_log("%s bundle sha256 x is not y" % np.MARK) == (None, {"bundle": "sha256 x is not y"})
    assert np.log_tail(text) == "libcufile noise\n%s image python3 not found" % np.MARK


MODE = "node-restriction.kubernetes.io/gpudirect.storage.gds-mode"
VERIFIED = "node-restriction.kubernetes.io/gpudirect.storage.gds-verified"


def test_labels_change_only_when_the_verdict_does():
    node = {"mode": "compat", "verified": True, "reason": "r", "throughput": {"write_gbps": 1.0}}
    patch = nl.label_patch({"metadata": {"labels": {"x": "y"}}}, node, "2026-11-23T00:00:00Z")
    assert patch["metadata"]["labels"] == {MODE: "compat", VERIFIED: "true"}
    assert json.loads(patch["metadata"]["annotations"]["gpudirect.storage/gds-probe"])["write_gbps"] == 1.0
    assert patch["metadata"]["annotations"]["gpudirect.storage/gds-proven-at"] == "2026-11-23T00:00:00Z"
    labelled = {"metadata": {"labels": dict(patch["metadata"]["labels"]), "annotations": patch["metadata"]["annotations"]}}
    faster = dict(node, throughput={"write_gbps": 9.0})
    assert nl.label_patch(labelled, faster, "2026-11-24T00:00:00Z") is None  # GB/s and time alone: no write
    assert nl.label_patch(labelled, dict(node, mode="gds"), "t")["metadata"]["labels"][MODE] == "gds"


def _node_obj(name, labels=None, annotations=None):
    return {"metadata": {"name": name, "labels": dict(labels or {}, **{"kubernetes.io/hostname": name}),
                         "annotations": annotations or {}}}


def test_label_plan_removes_ours_from_every_node_this_run_did_not_prove():
    stale = _node_obj("gone", {MODE: "gds", VERIFIED: "true"}, {"gpudirect.storage/gds-proven-at": "t0", "x": "y"})
    note_only = _node_obj("note", annotations={"gpudirect.storage/gds-probe": "{}"})
    nodes = [_node_obj("a"), stale, note_only, _node_obj("plain", {"other/gds-mode": "gds"}),
             _node_obj("busy", {MODE: "gds", VERIFIED: "true"})]
    proven = {"a": {"mode": "compat", "verified": True}}
    to_set, to_remove = nl.plan(nodes, proven, "2026-11-27T00:00:00Z")
    assert sorted(to_set) == ["a"] and sorted(to_remove) == ["busy", "gone", "note"]
    assert to_remove["gone"] == {"metadata": {"labels": {MODE: None, VERIFIED: None},
                                              "annotations": {"gpudirect.storage/gds-proven-at": None}}}
    assert sorted(nl.plan(nodes, proven, "t", undecided=["busy"])[1]) == ["gone", "note"]  # check mode
    changes = nl.diff(nodes, dict(to_set, **to_remove))
    assert changes["before"]["gone"][MODE] == "gds" and changes["after"]["gone"] == {}
    assert changes["after"]["a"][MODE] == "compat" and changes["before"]["a"] == {}


def test_bundle_digest_is_the_one_the_pod_loader_computes(tmp_path):
    """The loader (pod spec) hashes the mounted files; a changed or an extra file changes it."""
    import subprocess
    import sys
    data = {"entry.py": "print('ran')\n", "params.json": "{}", "mu._x.py": "# \u00e9\n"}
    for name, text in data.items():
        (tmp_path / name).write_bytes(text.encode("utf-8"))
    (tmp_path / "..data").mkdir()  # the kubelet's own entries are not part of the bundle
    digest = np.bundle_digest(data)

    def loader(want):
        return subprocess.run([sys.executable, "-I", "-S", "-c", np.LOADER, str(tmp_path) + "/", want],
                              stdout=subprocess.PIPE, text=True, check=False)

    ok = loader(digest)
    assert ok.returncode == 0 and ok.stdout == "ran\n"
    (tmp_path / "mu._y.py").write_text("import os\n")
    bad = loader(digest)
    assert bad.returncode == np.EXIT_BUNDLE and "ran" not in bad.stdout
    assert np.parse_log(bad.stdout)[1]["bundle"].startswith("sha256 ")


def test_requirement_uses_the_gds_facts_gate():
    node = {"name": "n", "mode": "compat", "reason": "nvidia_fs kernel module not loaded", "verified": True}
    assert np.requirement_problem(node, "gds") == \
        "GDS verdict compat is weaker than the required gds: nvidia_fs kernel module not loaded"
    assert np.requirement_problem(node, "compat") is None and np.requirement_problem(node, None) is None
    # a node whose probe wrote nothing never meets a requirement
    assert "nothing was written" in np.requirement_problem(dict(node, verified=False), "compat")
    unproven = dict(node, mode="gds", proven=False)
    assert "not proven" in np.requirement_problem(unproven, "gds") and "not proven" in np.requirement_problem(unproven, "gds", None)
    assert np.requirement_problem(unproven, "gds", False) is None


@pytest.mark.parametrize("change,needle", [
    ({"parallel": 0}, "parallel=0 is out of range"),
    ({"pod_timeout": 50, "probe_timeout": 60}, "pod_timeout (50) must be longer than probe_timeout (60)"),
    ({"probe_path": ["relative"]}, "probe_path entry 'relative' must be an absolute path"),
    ({"probe_size_mb": 0}, "probe_size_mb=0 is out of range"),
    ({"image": ""}, "image must name a container image"),
])
def test_bad_options_are_named(change, needle):
    assert needle in np.check_params(params(**change))


class _Resp(object):
    def __init__(self, doc):
        self.data = json.dumps(doc).encode()


class _FakeCore(object):
    """CoreV1Api stand-in: records each call; a delete of a name in ``missing`` answers 404,
    of a name in ``forbidden`` 403."""

    def __init__(self, missing=(), forbidden=()):
        self.calls, self.missing, self.forbidden = [], set(missing), set(forbidden)

    def _delete(self, what, name, namespace, **kwargs):
        self.calls.append((what, name, namespace, kwargs))
        if name in self.missing or name in self.forbidden:
            raise run_mod.ApiException(status=404 if name in self.missing else 403)

    def delete_namespaced_pod(self, name, namespace, **kwargs):
        self._delete("pod", name, namespace, **kwargs)

    def delete_namespaced_config_map(self, name, namespace, **kwargs):
        self._delete("configmap", name, namespace, **kwargs)

    def list_namespaced_pod(self, namespace, **kwargs):
        self.calls.append(("list pods", namespace, kwargs))
        return _Resp({"items": [{"metadata": {"name": "p"}}]})

    def list_node(self, **kwargs):
        self.calls.append(("list nodes", kwargs))
        return _Resp({"items": None})


@pytest.mark.skipif(run_mod.k8s_client is None, reason="needs the kubernetes client")
def test_kube_api_deletes_report_gone_objects_and_raise_other_errors():
    api = run_mod.KubeApi.__new__(run_mod.KubeApi)
    api.core = _FakeCore(missing={"gone"}, forbidden={"locked"})
    assert api.delete_pod("ns", "p1") is True and api.delete_pod("ns", "gone") is False
    assert api.delete_configmap("ns", "cm") is True and api.delete_configmap("ns", "gone") is False
    with pytest.raises(run_mod.ApiCallFailed) as err:  # names the verb and the resource
        api.delete_configmap("ns", "locked")
    assert str(err.value) == "delete configmaps/locked: 403"
    assert api.core.calls[0] == ("pod", "p1", "ns", {"grace_period_seconds": 0, "_preload_content": False})
    assert api.core.calls[2] == ("configmap", "cm", "ns", {"_preload_content": False})
    assert api.pods("ns", "app=x") == [{"metadata": {"name": "p"}}] and api.nodes("") == []
    assert api.core.calls[-2] == ("list pods", "ns", {"label_selector": "app=x", "_preload_content": False,
                                                      "_request_timeout": 30})
    assert api.core.calls[-1] == ("list nodes", {"label_selector": None, "_preload_content": False,
                                                 "_request_timeout": 30})


def test_a_re_proof_a_day_later_refreshes_proven_at_so_the_stale_proof_alert_clears():
    node = {"mode": "compat", "verified": True}
    first = nl.label_patch({"metadata": {}}, node, "2026-11-23T00:00:00Z")
    labelled = {"metadata": {"labels": dict(first["metadata"]["labels"]), "annotations": first["metadata"]["annotations"]}}
    assert nl.label_patch(labelled, node, "2026-11-23T23:59:59Z") is None  # same day: nothing to write
    later = nl.label_patch(labelled, node, "2026-11-24T06:00:00Z")
    assert later["metadata"]["annotations"]["gpudirect.storage/gds-proven-at"] == "2026-11-24T06:00:00Z"
    garbled = {"metadata": {"labels": labelled["metadata"]["labels"],
                            "annotations": dict(labelled["metadata"]["annotations"],
                                                **{"gpudirect.storage/gds-proven-at": "yesterday"})}}
    assert nl.label_patch(garbled, node, "2026-11-23T01:00:00Z") is not None  # unreadable: rewritten
