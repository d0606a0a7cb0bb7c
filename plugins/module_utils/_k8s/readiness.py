# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Is GDS really up? Decided from plain API JSON. PRIVATE to the collection.

helm's ``--wait`` returns while the ClusterPolicy is still notReady and before any nvidia-fs pod
exists. Ready here means: the ClusterPolicy is ready (not merely because it found no GPU node),
there is a GPU node, and on every GPU node whose driver configuration (ClusterPolicy, or the
NVIDIADriver CR that selects it) asks for GDS, a driver pod whose nvidia-fs-ctr (and
nvidia-peermem-ctr with RDMA) is ready and runs the image asked for. Nodes with an NVIDIA PCI NFD
label the operator has not labelled yet are waited for too."""

from __future__ import annotations

GPU_LABEL = "nvidia.com/gpu.present"
DRIVER_COMPONENT = "app.kubernetes.io/component"
DRIVER_SELECTOR = DRIVER_COMPONENT + "=nvidia-driver"
NFD_PREFIX = "feature.node.kubernetes.io/"
# what the operator labels GPU nodes from (gpu-operator controllers/state_manager.go gpuNodeLabels)
NVIDIA_PCI_LABELS = (NFD_PREFIX + "pci-10de.present", NFD_PREFIX + "pci-0302_10de.present",
                     NFD_PREFIX + "pci-0300_10de.present")
NO_GPU_REASONS = ("NoGPUNodes", "NFDLabelsMissing")
OS_ID_LABEL = "feature.node.kubernetes.io/system-os_release.ID"
OS_VERSION_LABEL = "feature.node.kubernetes.io/system-os_release.VERSION_ID"
NVIDIA_FS = "nvidia-fs-ctr"
PEERMEM = "nvidia-peermem-ctr"


def _labels(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def _name(obj):
    return (obj.get("metadata") or {}).get("name") or ""


def node_os(node):
    labels = _labels(node)
    return {"id": labels.get(OS_ID_LABEL), "version_id": labels.get(OS_VERSION_LABEL)}


def os_text(os_info):
    if not os_info.get("id"):
        return "unknown"
    return ("%s %s" % (os_info["id"], os_info.get("version_id") or "")).strip()


def gpu_nodes(nodes):
    return sorted((n for n in nodes or [] if _labels(n).get(GPU_LABEL) == "true"),
                  key=lambda n: n["metadata"]["name"])


def has_nvidia_pci(node):
    return any(_labels(node).get(key) == "true" for key in NVIDIA_PCI_LABELS)


def gpu_candidates(nodes):
    """Nodes that are or will be GPU nodes: labelled by the operator, or with an NVIDIA PCI
    device in their NFD labels (the operator labels those)."""
    return sorted((n for n in nodes or [] if _labels(n).get(GPU_LABEL) == "true" or has_nvidia_pci(n)),
                  key=lambda n: n["metadata"]["name"])


def parse_selector(text):
    """'a=b,c!=d,e,!f' -> [(key, op, value)]; ValueError on anything else (set-based
    selectors are not supported)."""
    reqs = []
    for part in [p.strip() for p in (text or "").split(",") if p.strip()]:
        if "!=" in part:
            key, value = part.split("!=", 1)
            reqs.append((key.strip(), "!=", value.strip()))
        elif "=" in part:
            key, value = part.split("==", 1) if "==" in part else part.split("=", 1)
            reqs.append((key.strip(), "=", value.strip()))
        elif part.startswith("!"):
            reqs.append((part[1:].strip(), "!", None))
        else:
            reqs.append((part, "exists", None))
        if not reqs[-1][0] or " " in reqs[-1][0] or "(" in part:
            raise ValueError("cannot parse label selector %r (use key=value, key!=value, key or !key)" % text)
    return reqs


def selector_matches(labels, reqs):
    for key, op, value in reqs:
        if (op == "=" and labels.get(key) != value) or (op == "!=" and labels.get(key) == value) or \
                (op == "exists" and key not in labels) or (op == "!" and key in labels):
            return False
    return True


def pick_policy(policies):
    """The ClusterPolicy the operator acts on: one not marked ``ignored`` (else the first)."""
    ordered = sorted(policies or [], key=lambda p: p["metadata"]["name"])
    for policy in ordered:
        if ((policy.get("status") or {}).get("state")) != "ignored":
            return policy
    return ordered[0] if ordered else None


def driver_crd_mode(policy):
    return bool((((policy or {}).get("spec") or {}).get("driver") or {}).get("useNvidiaDriverCRD"))


def _on(section):
    """A spec's ``enabled`` (the CRDs type it boolean; a string "true" counts, anything else not)."""
    value = (section or {}).get("enabled")
    return value is True or str(value).lower() == "true"


def _driver_specs(policy, drivers):
    """The specs that carry gds/rdma: the ClusterPolicy's, or in NVIDIADriver mode every
    NVIDIADriver CR's (one per node pool)."""
    if driver_crd_mode(policy):
        return [d.get("spec") or {} for d in drivers or []]
    spec = (policy or {}).get("spec") or {}
    return [{"gds": spec.get("gds") or {}, "rdma": (spec.get("driver") or {}).get("rdma") or {}}]


def required_containers(policy, drivers=None):
    """The containers some node must run (the union over the pools)."""
    wanted = []
    specs = _driver_specs(policy, drivers)
    if any(_on(s.get("gds")) for s in specs):
        wanted.append(NVIDIA_FS)
    if any(_on(s.get("rdma")) for s in specs):
        wanted.append(PEERMEM)
    return wanted


def driver_owner(node, drivers):
    """The NVIDIADriver that configures the driver on ``node``, by the operator's rule: the one
    non-default CR whose nodeSelector (none: every GPU node) matches the node, else the
    ``default: true`` one. Returns (CR or None, problem or None)."""
    labels = dict(_labels(node), **{GPU_LABEL: "true"})  # a GPU candidate is about to be labelled
    live = [d for d in drivers or [] if not (d.get("metadata") or {}).get("deletionTimestamp")]
    matching, defaults = [], []
    for cr in sorted(live, key=_name):
        spec = cr.get("spec") or {}
        if spec.get("default"):
            defaults.append(cr)
        elif all(labels.get(k) == v for k, v in (spec.get("nodeSelector") or {GPU_LABEL: "true"}).items()):
            matching.append(cr)
    if len(matching) > 1:
        return None, "NVIDIADrivers %s all select it (the operator deploys none of them there)" % ", ".join(
            _name(d) for d in matching)
    if matching:
        return matching[0], None
    return (defaults[0] if defaults else None), None


def node_config(policy, drivers, node):
    """What the operator is asked to run on ``node``: {source, gds, rdma, image, problem}.
    ``source`` names the ClusterPolicy or NVIDIADriver that decides (empty: none does)."""
    if driver_crd_mode(policy):
        cr, problem = driver_owner(node, drivers)
        if cr is None:
            return {"source": "", "gds": False, "rdma": False, "image": None, "problem": problem}
        spec = cr.get("spec") or {}
        source, gds, rdma = "NVIDIADriver " + _name(cr), spec.get("gds") or {}, spec.get("rdma") or {}
    else:
        spec = (policy or {}).get("spec") or {}
        source = "ClusterPolicy " + policy["metadata"]["name"] if policy else ""
        gds, rdma = spec.get("gds") or {}, (spec.get("driver") or {}).get("rdma") or {}
    return {"source": source, "gds": _on(gds), "rdma": _on(rdma), "image": _image_of(gds) if _on(gds) else None,
            "problem": None}


def probe_selection(nodes, policies, drivers):
    """gds_node_probe's default selection, the answer gpu_operator gives: (the nodes meant to get
    GDS, sorted names of the others). Without a ClusterPolicy (no GPU Operator: GDS comes from
    the hosts) every node stays."""
    policy = pick_policy(policies)
    if policy is None:
        return list(nodes or []), []
    meant = [n for n in nodes or [] if node_config(policy, drivers, n)["gds"]]
    return meant, sorted(_name(n) for n in nodes or [] if n not in meant)


def node_results(preflight_nodes, evaluation):
    """The result's ``nodes`` (preflight reports updated by the wait's) and ``gds_nodes``."""
    by_name = {n["name"]: dict(n) for n in preflight_nodes or []}
    for node in (evaluation or {}).get("nodes") or []:
        by_name.setdefault(node["name"], {}).update(node)
    nodes = [by_name[k] for k in sorted(by_name)]
    return {"nodes": nodes, "gds_nodes": gds_node_split(nodes)}


def gds_node_split(reports):
    """{enabled: [names], disabled: [names]} from node reports: the nodes whose ClusterPolicy /
    NVIDIADriver asks for GDS, and the others."""
    return {"enabled": [r["name"] for r in reports if r.get("gds_expected")],
            "disabled": [r["name"] for r in reports if not r.get("gds_expected")]}


def _image_of(gds):
    if not gds.get("version") or not gds.get("image"):
        return None
    repo = gds.get("repository")
    image = "%s/%s" % (repo.rstrip("/"), gds["image"]) if repo else gds["image"]
    return "%s:%s" % (image, gds["version"])


def container_report(pod, name):
    spec = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == name), None)
    status = next((s for s in (pod.get("status") or {}).get("containerStatuses") or [] if s.get("name") == name), None)
    report = {"name": name, "present": spec is not None, "ready": bool(status and status.get("ready")),
              "image": (spec or {}).get("image", ""), "restart_count": (status or {}).get("restartCount", 0),
              "state": "missing" if spec is None else "pending", "reason": "", "message": ""}
    state = (status or {}).get("state") or {}
    for key in ("running", "waiting", "terminated"):
        if key in state:
            report["state"] = key
            report["reason"] = state[key].get("reason", "") or ""
            report["message"] = state[key].get("message", "") or ""
    last = ((status or {}).get("lastState") or {}).get("terminated")
    if last:
        report["last_termination"] = {"reason": last.get("reason", ""), "message": (last.get("message") or "").strip(),
                                      "exit_code": last.get("exitCode")}
    return report


def _image_ok(report, expected):
    """``expected``: '<repository>/<image>:<version>' (the operator appends -<os>) or None."""
    if not expected or report["name"] != NVIDIA_FS:
        return True
    return report["image"] == expected or report["image"].startswith(expected + "-")


def _pod_report(pod, wanted, expected):
    containers = [container_report(pod, name) for name in wanted]
    for report in containers:
        report["image_ok"] = _image_ok(report, expected)
    ok = all(r["present"] and r["ready"] and r["image_ok"] for r in containers)
    return {"pod": pod["metadata"]["name"], "ready": ok, "containers": containers}


def _problem(node, report, config):
    if report is None:
        return "%s: no driver pod (%s) yet" % (node, DRIVER_SELECTOR)
    expected = config["image"]
    parts = []
    for ctr in report["containers"]:
        if not ctr["present"]:
            parts.append("%s missing from pod %s, though %s asks for %s (the operator has not rolled it out yet, "
                         "or that pod belongs to another driver configuration)"
                         % (ctr["name"], report["pod"], config["source"],
                            "GDS" if ctr["name"] == NVIDIA_FS else "RDMA"))
        elif not ctr["ready"]:
            text = "%s not ready (%s%s" % (ctr["name"], ctr["state"], ": " + ctr["reason"] if ctr["reason"] else "")
            last = ctr.get("last_termination")
            if last:
                text += "; last termination: %s" % (last.get("reason") or "?")
                if last.get("exit_code") is not None:
                    text += " (exit %s)" % last["exit_code"]
                if last.get("message"):
                    text += ": %s" % last["message"]
            if ctr["restart_count"]:
                text += "; restarts: %d" % ctr["restart_count"]
            parts.append(text + ")")
        elif not ctr["image_ok"]:
            parts.append("%s runs %s, %s wants %s (not rolled out yet)"
                         % (ctr["name"], ctr["image"], config["source"], expected))
    return "%s: %s" % (node, "; ".join(parts))


def _no_gpu_node_problem(nodes, cp_reason):
    """Why no node is labelled nvidia.com/gpu.present=true, from the NFD labels."""
    text = "no GPU node: no node is labelled %s=true" % GPU_LABEL
    if not any(key.startswith(NFD_PREFIX) for n in nodes or [] for key in _labels(n)):
        text += (" and no node has Node Feature Discovery labels (%s*): NFD is missing (the chart deploys it "
                 "with nfd.enabled: true)" % NFD_PREFIX)
    elif not any(has_nvidia_pci(n) for n in nodes or []):
        text += " and no node has an NVIDIA PCI device (NFD label %s=true)" % NVIDIA_PCI_LABELS[0]
    if cp_reason in NO_GPU_REASONS:
        text += "; ClusterPolicy reports %s" % cp_reason
    return text


def _expectation_problems(nodes, gpu_names, expect):
    problems, extra = [], []
    count, reqs = (expect or {}).get("count"), (expect or {}).get("selector")
    if count and len(gpu_names) < count:
        problems.append("%d of %d expected GPU nodes labelled %s=true" % (len(gpu_names), count, GPU_LABEL))
    for node in nodes or []:
        name = node["metadata"]["name"]
        if reqs and selector_matches(_labels(node), reqs) and name not in gpu_names:
            extra.append(node)
            problems.append("%s: selected by gpu_node_selector but not labelled %s=true" % (name, GPU_LABEL))
    return problems, extra


def _node_report(node, policy, drivers, driver_pods, problems):
    """One GPU node, checked against what its ClusterPolicy / NVIDIADriver asks for."""
    name = node["metadata"]["name"]
    config = node_config(policy, drivers, node)
    wanted = [c for c, on in ((NVIDIA_FS, config["gds"]), (PEERMEM, config["rdma"])) if on]
    on_node = sorted((p for p in driver_pods if (p.get("spec") or {}).get("nodeName") == name),
                     key=lambda p: p["metadata"].get("creationTimestamp") or "", reverse=True)
    reports = [_pod_report(p, wanted, config["image"]) for p in on_node]
    best = next((r for r in reports if r["ready"]), reports[0] if reports else None)
    ready = (best is not None and best["ready"] if wanted else True) and policy is not None \
        and not config["problem"]
    gds_ready = bool(best) and any(c["name"] == NVIDIA_FS and c["ready"] and c["image_ok"] for c in best["containers"])
    if config["problem"]:
        problems.append("%s: %s" % (name, config["problem"]))
    elif wanted and not (best is not None and best["ready"]):
        problems.append(_problem(name, best, config))
    return {"name": name, "os": os_text(node_os(node)), "gpu_labelled": True, "ready": ready, "gds_ready": gds_ready,
            "gds_expected": config["gds"], "driver_config": config["source"], "pod": best["pod"] if best else "",
            "containers": best["containers"] if best else []}


def evaluate(policies, nodes, pods, drivers=None, expect=None):
    """{ready, cluster_policy, nodes, problems, gds_nodes} from API JSON. ``nodes``: all nodes;
    ``expect``: {count, selector (parse_selector())} or None."""
    policy = pick_policy(policies)
    problems = []
    cp_reason = ""
    wanted = required_containers(policy, drivers)
    if policy is None:
        cp_report = {}
        problems.append("no ClusterPolicy exists yet")
    else:
        status = policy.get("status") or {}
        cp_report = {"name": policy["metadata"]["name"], "state": status.get("state") or "",
                     "conditions": [{k: c.get(k, "") for k in ("type", "status", "reason", "message")}
                                    for c in status.get("conditions") or []]}
        cp_reason = next((c["reason"] for c in cp_report["conditions"] if c["type"] == "Ready"), "")
        if cp_report["state"] != "ready":
            problems.append("ClusterPolicy %s state is %s" % (cp_report["name"], cp_report["state"] or "not set yet"))
    driver_pods = [p for p in pods or [] if _labels(p).get(DRIVER_COMPONENT) == "nvidia-driver"
                   and not (p.get("metadata") or {}).get("deletionTimestamp")]
    labelled = gpu_nodes(nodes)
    gpu_names = {n["metadata"]["name"] for n in labelled}
    node_reports = []
    if wanted or policy is None:
        if not labelled:
            problems.append(_no_gpu_node_problem(nodes, cp_reason))
        elif policy is not None and cp_report["state"] == "ready" and cp_reason in NO_GPU_REASONS:
            problems.append("ClusterPolicy %s still reports %s" % (cp_report["name"], cp_reason))
        expectation, selected = _expectation_problems(nodes, gpu_names, expect)
        problems.extend(expectation)
        waiting = {n["metadata"]["name"]: n for n in gpu_candidates(nodes) + selected if n["metadata"]["name"]
                   not in gpu_names}
        for name in sorted(waiting):
            config = node_config(policy, drivers, waiting[name])
            node_reports.append({"name": name, "os": os_text(node_os(waiting[name])), "gpu_labelled": False,
                                 "ready": False, "gds_ready": False, "gds_expected": config["gds"],
                                 "driver_config": config["source"], "pod": "", "containers": []})
            if has_nvidia_pci(waiting[name]):
                problems.append("%s: NVIDIA PCI device (NFD) but not labelled %s=true by the operator yet"
                                % (name, GPU_LABEL))
    for node in labelled:
        node_reports.append(_node_report(node, policy, drivers, driver_pods, problems))
    node_reports.sort(key=lambda r: r["name"])
    return {"ready": not problems, "cluster_policy": cp_report, "nodes": node_reports, "problems": problems,
            "gds_nodes": gds_node_split(node_reports)}
