# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_node_probe, the pure part: the probe bundle, ConfigMap and Pod specs, what a pod's status
says and the per-node verdict. PRIVATE to the collection.

The pod runs the collection's own gds_facts gather from files in an immutable ConfigMap, whose
sha256 the pod's command checks first, so a node's verdict is computed by the code that computes
a host's."""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import json
import re

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_facts as _gds_gather
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import verdict as verdict_mod
# Imported so Ansible ships them with the module: bundle() sends them to the pod.
from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostpaths, runner  # noqa: F401 pylint: disable=unused-import
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile import parser  # noqa: F401 pylint: disable=unused-import
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_child  # noqa: F401 pylint: disable=unused-import

PACKAGE = "ansible_collections.gpudirect.storage.plugins.module_utils"
# what the pod program (ENTRY) imports; the bundle follows their imports
ENTRY_MODULES = tuple(PACKAGE + "." + m for m in ("_module_backends.gds_facts", "_common.hostpaths", "_common.runner"))
MARK = "@@GDS_NODE@@"
MANAGED_BY = ("app.kubernetes.io/managed-by", "gpudirect.storage.gds_node_probe")
RUN_LABEL = "gpudirect.storage/node-probe-run"
NODE_ANNOTATION = "gpudirect.storage/node"
EXPIRES_ANNOTATION = "gpudirect.storage/expires"
SHA256_ANNOTATION = "gpudirect.storage/bundle-sha256"
MOUNT = "/gds-node-probe"
EXIT_NO_PYTHON, EXIT_NO_CUFILE, EXIT_BUNDLE = 3, 4, 5
IMAGE_HELP = "use an image with python3 and libcufile.so.0 (docs/gds_node_probe.md says how to check one)"

# Runs in the pod: the image must have /bin/sh; python3 is checked first so a missing one is
# named, not reported as a generic start error. $0 is LOADER, $1 the code directory, $2 its sha256.
SHELL = ('command -v python3 >/dev/null 2>&1 || { echo "%s image python3 not found in the image (PATH=$PATH)"; '
         'exit %d; }; exec python3 -I -S -c "$0" "$1" "$2"' % (MARK, EXIT_NO_PYTHON))

# The pod's first program, in the pod spec: read the ConfigMap volume's files once, run nothing
# unless their sha256 is bundle_digest()'s, then run entry.py from those bytes with them (BUNDLE).
LOADER = r'''
import hashlib, os, sys
where, want = sys.argv[1], sys.argv[2]
files = {}
for name in sorted(os.listdir(where)):
    if not name.startswith(".."):  # the kubelet's own ..data links of a ConfigMap volume
        with open(os.path.join(where, name), "rb") as f:
            files[name] = f.read()
digest = hashlib.sha256()
for name in sorted(files):
    key = name.encode("utf-8")
    digest.update(b"%%d:%%s\0%%d:" %% (len(key), key, len(files[name])))
    digest.update(files[name])
if digest.hexdigest() != want:
    print("%(mark)s bundle sha256 %%s of the probe code in the ConfigMap volume is not %%s, the one the module "
          "created: the ConfigMap was replaced; nothing was run" %% (digest.hexdigest(), want))
    sys.exit(%(bundle)d)
exec(compile(files["entry.py"], "entry.py", "exec"), {"__name__": "__main__", "BUNDLE": files})
''' % {"mark": MARK, "bundle": EXIT_BUNDLE}

# The pod's program: rebuild the module_utils package from the checked files in a temporary
# directory, run gather() with a subprocess-backed stand-in of AnsibleModule, print the facts.
ENTRY = r'''
import json, os, shutil, subprocess, sys, tempfile
sys.dont_write_bytecode = True  # the package lives for one run
MARK, PACKAGE = %(mark)r, %(package)r
root = tempfile.mkdtemp(prefix="gds_node_probe_")
try:
    base = os.path.join(root, *PACKAGE.split("."))
    for i in range(len(PACKAGE.split("."))):
        d = os.path.join(root, *PACKAGE.split(".")[:i + 1])
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "__init__.py"), "a").close()
    for name, data in sorted(BUNDLE.items()):
        if not name.startswith("mu.") or not name.endswith(".py"):
            continue
        parts = name[3:-3].split(".")
        os.makedirs(os.path.join(base, *parts[:-1]), exist_ok=True)
        for i in range(1, len(parts)):
            open(os.path.join(base, *(parts[:i] + ["__init__.py"])), "a").close()
        with open(os.path.join(base, *parts[:-1] + [parts[-1] + ".py"]), "wb") as f:
            f.write(data)
    sys.path.insert(0, root)
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_facts as _gds_gather
    from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostpaths as _hostpaths
    from ansible_collections.gpudirect.storage.plugins.module_utils._common import runner as _runner

    class Shim(object):
        check_mode = False
        def get_bin_path(self, name, required=False, opt_dirs=None):
            for d in (opt_dirs or []) + os.environ.get("PATH", "").split(os.pathsep):
                p = os.path.join(d, name)
                if d and os.path.isfile(p) and os.access(p, os.X_OK):
                    return p
            return None
        def run_command(self, args, check_rc=False, environ_update=None, cwd=None, data=None, binary_data=False):
            env = dict(os.environ)
            env.update(environ_update or {})
            p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=cwd,
                               input=data, universal_newlines=True, check=False)
            return p.returncode, p.stdout, p.stderr

    params = json.loads(BUNDLE["params.json"].decode("utf-8"))
    facts = _gds_gather.gather(params, _hostpaths.HostPaths(), _runner.Runner(Shim()), tmp_root=root,
                               python=sys.executable)
    sys.stdout.write("\n%%s facts %%s\n" %% (MARK, json.dumps(facts, sort_keys=True, default=str)))
    if not (facts.get("libcufile") or {}).get("path"):
        sys.stdout.write("%%s image libcufile.so.0 not found in the image (searched %%s)\n" %% (
            MARK, ", ".join(facts["libcufile"].get("searched") or [])))
        sys.stdout.flush()
        sys.exit(%(no_cufile)d)
finally:
    shutil.rmtree(root, ignore_errors=True)
''' % {"mark": MARK, "package": PACKAGE, "no_cufile": EXIT_NO_CUFILE}


# --- the bundle ---------------------------------------------------------------------------------
def _collection_imports(source, package=PACKAGE):
    """Module names of the collection's module_utils that ``source`` imports (anywhere)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package):
            for alias in node.names:
                found.add(node.module + "." + alias.name)
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith(package + "."))
    return found


def bundle(entries=ENTRY_MODULES):
    """{ConfigMap key: source} for ``entries`` and every module_utils module it imports, closed
    over imports (so it follows the files wherever they live). Keys: ``mu.<dotted>.py``."""
    files = {}
    todo = list(entries)
    while todo:
        name = todo.pop()
        rel = name[len(PACKAGE) + 1:] if name.startswith(PACKAGE + ".") else ""
        key = "mu.%s.py" % (rel or "__init__")
        if not rel or key in files:
            continue
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue  # "from pkg import function": the module itself was already added
        if not inspect.ismodule(module) or not getattr(module, "__file__", None):
            continue
        if hasattr(module, "__path__"):
            continue  # a room (package): entry.py creates every package's empty __init__.py itself
        src = probe_child.module_source(module)
        files[key] = src
        todo.extend(sorted(_collection_imports(src)))
    return files


def probe_params(params):
    """The gather() parameters the pod runs with (gds_facts' option names)."""
    return {"probe": True, "probe_path": list(params["probe_path"]), "probe_size_mb": params["probe_size_mb"],
            "probe_threads": params["probe_threads"], "probe_device": 0, "probe_timeout": params["probe_timeout"],
            "cufile_lib": params.get("cufile_lib"), "cufile_env_path_json": None, "gather_cuda": True}


def bundle_data(params, files=None):
    """The ConfigMap's data: the module_utils files, entry.py and the probe's parameters."""
    data = dict(files if files is not None else bundle())
    data["entry.py"] = ENTRY
    data["params.json"] = json.dumps(probe_params(params), sort_keys=True)
    return data


def bundle_digest(data):
    """sha256 of the ConfigMap's data as the pod's LOADER computes it from the mounted files:
    every key (sorted) with its length, then the value's UTF-8 bytes with theirs."""
    digest = hashlib.sha256()
    for name in sorted(data):
        key, value = name.encode("utf-8"), data[name].encode("utf-8")
        digest.update(b"%d:%s\0%d:" % (len(key), key, len(value)))
        digest.update(value)
    return digest.hexdigest()


def configmap_name(run_id, digest):
    """One name per run and bundle content: an immutable ConfigMap is never updated in place."""
    return "gds-node-probe-%s-%s" % (run_id, digest[:12])


def configmap(name, namespace, run_id, data, digest):
    return {"apiVersion": "v1", "kind": "ConfigMap", "immutable": True,
            "metadata": {"name": name, "namespace": namespace, "labels": {MANAGED_BY[0]: MANAGED_BY[1], RUN_LABEL: run_id},
                         "annotations": {SHA256_ANNOTATION: digest}},
            "data": data}


def pod_name(node, run_id):
    """DNS-1123 and <= 63 characters, unique per node and run."""
    digest = hashlib.sha256(node.encode("utf-8")).hexdigest()[:6]
    stem = re.sub(r"[^a-z0-9-]", "-", node.lower()).strip("-")[:30].strip("-")
    return "gds-probe-%s-%s-%s" % (stem or "node", digest, run_id)


def container_security(privileged):
    """The least privilege cuFile needs on a local file system: no capability, no privilege
    escalation (the toolkit injects the GPU and nvidia-fs devices); ``privileged`` is the way out
    for what needs more (docs/gds_node_probe.md)."""
    if privileged:
        return {"privileged": True, "allowPrivilegeEscalation": True}
    return {"privileged": False, "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def pod_spec(node, run_id, params, cm_name, cm_uid, expires, digest):
    """The probe pod for ``node``: a GDS workload pinned to the node by name, running the bundle
    only if its sha256 is ``digest``."""
    env = [{"name": "NVIDIA_GDS", "value": "enabled"}, {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "compute,utility"}]
    resources = {"requests": {"cpu": "100m", "memory": params["memory"]}, "limits": {"memory": params["memory"]}}
    if params["gpu_resource"]:
        resources["requests"][params["gpu_resource"]] = "1"
        resources["limits"][params["gpu_resource"]] = "1"
    else:  # runtimeClassName mode: all GPUs of the node, none allocated (see the docs for the trade-off)
        env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"})
    mounts = [{"name": "probe-code", "mountPath": MOUNT, "readOnly": True},
              {"name": "run-udev", "mountPath": "/run/udev", "readOnly": True}]
    volumes = [{"name": "probe-code", "configMap": {"name": cm_name}},
               {"name": "run-udev", "hostPath": {"path": "/run/udev", "type": "Directory"}}]
    for i, path in enumerate(params["probe_path"]):
        mounts.append({"name": "probe-dir-%d" % i, "mountPath": path})
        volumes.append({"name": "probe-dir-%d" % i, "hostPath": {"path": path, "type": "Directory"}})
    if params["cufile_json"]:
        mounts.append({"name": "cufile-json", "mountPath": "/etc/cufile.json", "readOnly": True})
        volumes.append({"name": "cufile-json", "hostPath": {"path": params["cufile_json"], "type": "File"}})
    tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    tolerations += [t for t in params.get("tolerations") or [] if t not in tolerations]
    spec = {
        "restartPolicy": "Never",
        "activeDeadlineSeconds": params["pod_timeout"],
        "terminationGracePeriodSeconds": 5,
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
        "tolerations": tolerations,
        "containers": [{
            "name": "probe", "image": params["image"], "imagePullPolicy": params["image_pull_policy"],
            "command": ["/bin/sh", "-c", SHELL, LOADER, MOUNT + "/", digest], "env": env, "resources": resources,
            "volumeMounts": mounts, "securityContext": container_security(params["privileged"])}],
        "volumes": volumes,
    }
    if not params["privileged"]:
        spec["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
    if params.get("runtime_class"):
        spec["runtimeClassName"] = params["runtime_class"]
    if params.get("image_pull_secrets"):
        spec["imagePullSecrets"] = [{"name": n} for n in params["image_pull_secrets"]]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name(node, run_id), "namespace": params["namespace"],
                         "labels": {MANAGED_BY[0]: MANAGED_BY[1], RUN_LABEL: run_id,
                                    "app.kubernetes.io/name": "gds-node-probe"},
                         "annotations": {NODE_ANNOTATION: node, EXPIRES_ANNOTATION: str(int(expires))},
                         # deleting the ConfigMap lets the garbage collector take the pod too
                         "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": cm_name, "uid": cm_uid}]},
            "spec": spec}


# --- what the cluster says ------------------------------------------------------------------------
def node_not_ready(node):
    """Why ``node`` (a Node dict) cannot run a pod, or None."""
    cond = next((c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)
    if cond is None or cond.get("status") != "True":
        cond = cond or {}
        return "node NotReady (Ready=%s%s%s)" % (cond.get("status", "Unknown"),
                                                 ", " + cond["reason"] if cond.get("reason") else "",
                                                 ": " + cond["message"] if cond.get("message") else "")
    if (node.get("spec") or {}).get("unschedulable"):
        return "node is cordoned (spec.unschedulable)"
    return None


PULL_ERRORS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull")
CONFIG_ERRORS = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError")


def classify(pod, age, schedule_timeout):
    """What a probe pod's status says: ("wait", None) while it is on its way, ("done", None) when
    its container exited 0, else ("failed", (kind, text)) with the reason from the pod itself."""
    status = pod.get("status") or {}
    image = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("image")
    ctr = next(iter(status.get("containerStatuses") or []), {})
    state = ctr.get("state") or {}
    waiting, term = state.get("waiting") or {}, state.get("terminated") or {}
    if waiting.get("reason") in PULL_ERRORS:
        return "failed", ("image_pull", "%s for image %s: %s" % (waiting["reason"], image, waiting.get("message") or ""))
    if waiting.get("reason") in CONFIG_ERRORS or waiting.get("reason") == "CrashLoopBackOff":
        last = (ctr.get("lastState") or {}).get("terminated") or {}
        return "failed", ("crashed", "%s (restarts %s)%s: %s" % (
            waiting["reason"], ctr.get("restartCount", 0),
            ", last exit code %s" % last["exitCode"] if last.get("exitCode") is not None else "",
            waiting.get("message") or last.get("message") or ""))
    if status.get("reason") == "DeadlineExceeded":  # the kubelet killed it: say so, not "exit code 137"
        return "failed", ("deadline", "activeDeadlineSeconds=%s exceeded: %s" % (
            (pod.get("spec") or {}).get("activeDeadlineSeconds"), status.get("message") or "the pod ran too long"))
    if term:
        if term.get("exitCode") == 0:
            return "done", None
        if term.get("reason") == "OOMKilled":
            limit = (((pod.get("spec") or {}).get("containers") or [{}])[0].get("resources") or {}).get("limits", {})
            return "failed", ("oom_killed", "OOMKilled (exit code %s, memory limit %s)" % (
                term.get("exitCode"), limit.get("memory")))
        return "failed", ("exited", "container exited with code %s (%s)%s" % (
            term.get("exitCode"), term.get("reason") or "Error", ": " + term["message"] if term.get("message") else ""))
    if status.get("phase") == "Failed":
        return "failed", ("pod_failed", "pod Failed: %s %s" % (status.get("reason") or "", status.get("message") or ""))
    if status.get("phase") == "Succeeded":
        return "done", None
    sched = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
    if sched.get("status") == "False" and age >= schedule_timeout:
        return "failed", ("unschedulable", "Pending for %ds: %s: %s" % (
            age, sched.get("reason") or "Unschedulable", sched.get("message") or "no scheduler message"))
    return "wait", None


def still_waiting(pod, age):
    """The failure of a pod still not done at the deadline, from its own status."""
    status = pod.get("status") or {}
    ctr = next(iter(status.get("containerStatuses") or []), {})
    waiting = (ctr.get("state") or {}).get("waiting") or {}
    sched = next((c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"), {})
    if sched.get("status") == "False":
        return "unschedulable", "Pending for %ds: %s: %s" % (age, sched.get("reason"), sched.get("message"))
    where = waiting.get("reason") or status.get("phase") or "Pending"
    return "deadline", "pod still %s after %ds%s" % (where, age, ": " + waiting["message"] if waiting.get("message") else "")


def parse_log(text):
    """(facts or None, {"image"/"bundle": problem}) from the pod's log."""
    facts, problems = None, {}
    for line in (text or "").splitlines():
        if not line.startswith(MARK + " "):
            continue
        kind, _sep, payload = line[len(MARK) + 1:].partition(" ")
        if kind == "facts":
            try:
                facts = json.loads(payload)
            except ValueError:
                facts = None
        elif kind in ("image", "bundle"):
            problems[kind] = payload
    return facts, problems


def log_tail(text, lines=8):
    kept = [ln for ln in (text or "").splitlines() if ln.strip() and not ln.startswith(MARK + " facts ")]
    return "\n".join(kept[-lines:])


# --- verdicts -------------------------------------------------------------------------------------
def failed_node(name, kind, text, pod=None):
    """A node whose probe pod could not run: verdict ``failed`` with the reason from the cluster."""
    reason = "probe pod %s: %s" % (pod, text) if pod else text
    return {"name": name, "mode": "failed", "reason": reason, "reasons": [reason], "verified": False,
            "proven": False, "failure": {"kind": kind, "message": text}, "pod": pod, "source": "kubernetes"}


def node_from_facts(name, facts, pod):
    """The node's record from the facts gather() returned in the pod (verdict computed there)."""
    keep = ("mode", "reason", "reasons", "verified", "proven", "throughput", "versions", "gpus", "nvidia_fs",
            "libcufile", "probe", "storage", "kernel")
    out = dict((k, facts.get(k)) for k in keep if k in facts)
    out.update(name=name, pod=pod, failure=None, source="kubernetes")
    paths = (facts.get("probe") or {}).get("paths") or []
    out["verified_bytes"] = min([(p.get("verify") or {}).get("verified_bytes", 0) or 0 for p in paths] or [0])
    out["nvfs_delta"] = [p.get("nvfs_delta") for p in paths]
    return out


def requirement_problem(node, required, require_proven=True):
    """The gate of gds_facts (``_gds/verdict.gate``) applied to one node: None when met, else why."""
    ok, why = verdict_mod.gate(node, required, require_proven=require_proven is not False)
    return None if ok else why


def check_params(params):
    """Error text naming the bad option, or None (gds_facts' own limits apply to the probe)."""
    problem = _gds_gather.check_params(dict(params, probe=True, probe_device=0))
    if problem:
        return problem
    for name, low, high in (("parallel", 1, 1000), ("pod_timeout", 30, 86400), ("schedule_timeout", 0, 86400)):
        if not low <= params[name] <= high:
            return "%s=%s is out of range: it must be between %d and %d" % (name, params[name], low, high)
    if params["pod_timeout"] <= params["probe_timeout"]:
        return "pod_timeout (%s) must be longer than probe_timeout (%s)" % (params["pod_timeout"], params["probe_timeout"])
    if not params["image"]:
        return "image must name a container image"
    return None
