# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A helm 3 / helm 4 client and the pure functions that decide what helm has to do.
PRIVATE to the collection.

Not kubernetes.core.helm: its ``changed`` ignores ``set_values``, it runs ``helm list --all``
(gone in helm 4) and treats failed/pending releases as absent. A release is compared on what the
user controls: the user-supplied values, the chart name/version and the status of the latest
revision (``helm history -o json``). Values reach helm through one 0600 file, never ``--set``."""

from __future__ import annotations

import json
import re
import shlex
import time

from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError, tail
from ansible_collections.gpudirect.storage.plugins.module_utils._k8s.outcome import error_text

RELEASE_NOT_FOUND = "release: not found"
HEALTHY_STATUSES = ("deployed",)
_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")
_CHART_RE = re.compile(r"^(.*?)-(v?\d+\.\d+\.\d+.*)$")
_DURATION_RE = re.compile(r"^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")


class HelmError(Exception):
    """A helm output or an option that cannot be used; ``str()`` says which."""


# --- parsing -------------------------------------------------------------------------------
def parse_version(text):
    """'v3.19.0+g3d8990f', 'v4.1.4' or a ``version.BuildInfo{Version:"v3.19.0",...}`` line
    -> (major, minor, patch). Raises HelmError for anything else."""
    text = (text or "").strip()
    found = re.search(r'Version:"(v?[0-9][^"]*)"', text)
    candidate = found.group(1) if found else text.splitlines()[0] if text else ""
    match = _VERSION_RE.match(candidate.strip())
    if not match:
        raise HelmError("cannot parse helm version from %r" % text[:200])
    return tuple(int(part) for part in match.groups())


def parse_json_output(text, what):
    try:
        return json.loads(text or "null")
    except ValueError as exc:
        raise HelmError("helm %s did not return JSON (%s): %r" % (what, exc, (text or "")[:200]))


def parse_values(text):
    """``helm get values -o json`` -> dict ('null' when the release has no user values)."""
    data = parse_json_output(text, "get values")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise HelmError("helm get values returned %s, not an object" % type(data).__name__)
    return data


def split_chart(chart, name=None):
    """'gpu-operator-v26.7.0' -> ('gpu-operator', 'v26.7.0'); with ``name`` known the
    split is exact, otherwise at the first '-' followed by a x.y.z version."""
    if name and chart.startswith(name + "-"):
        return name, chart[len(name) + 1:]
    match = _CHART_RE.match(chart or "")
    if match:
        return match.group(1), match.group(2)
    return chart, ""


def parse_history(text, chart_name=None):
    """``helm history -o json`` -> list of revisions, oldest first, each with
    revision/status/chart/chart_name/chart_version/app_version/description/updated."""
    data = parse_json_output(text, "history") or []
    if not isinstance(data, list):
        raise HelmError("helm history returned %s, not a list" % type(data).__name__)
    out = []
    for entry in data:
        chart = entry.get("chart", "")
        cname, cversion = split_chart(chart, chart_name)
        out.append({"revision": int(entry.get("revision", 0)), "status": entry.get("status", "unknown"),
                    "chart": chart, "chart_name": cname, "chart_version": cversion,
                    "app_version": entry.get("app_version", ""), "description": entry.get("description", ""),
                    "updated": entry.get("updated", "")})
    return sorted(out, key=lambda rev: rev["revision"])


def parse_chart_metadata(text):
    """Top-level scalars of ``helm show chart`` (Chart.yaml): name, version, appVersion."""
    meta = {}
    for line in (text or "").splitlines():
        match = re.match(r"^(name|version|appVersion|apiVersion):\s*(.*?)\s*$", line)
        if match:
            value = match.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            meta[match.group(1)] = value
    if not meta.get("name") or not meta.get("version"):
        raise HelmError("helm show chart returned no name/version: %r" % (text or "")[:200])
    return meta


def _yaml(value):
    """A scalar for a message in YAML terms (true, "ten", 5), not Python's repr."""
    return json.dumps(value, default=str)


def parse_duration(value):
    """Seconds from an int or a helm-style duration ('600', '10m', '1h30m', '90s')."""
    if isinstance(value, bool):
        raise HelmError("wait_timeout must be seconds or a duration like 10m, not %s" % _yaml(value))
    if isinstance(value, int):
        seconds = value
    else:
        text = str(value).strip()
        if text.isdigit():
            seconds = int(text)
        else:
            match = _DURATION_RE.match(text)
            if not text or not match:
                raise HelmError("wait_timeout must be seconds or a duration like 10m, not %s" % _yaml(value))
            hours, minutes, secs = (int(g or 0) for g in match.groups())
            seconds = hours * 3600 + minutes * 60 + secs
    if seconds <= 0:
        raise HelmError("wait_timeout must be positive, not %s" % _yaml(value))
    return seconds


# --- values --------------------------------------------------------------------------------
def normalize(values):
    """JSON round trip, so Ansible-native types compare like helm's JSON output."""
    return json.loads(json.dumps(values or {}, sort_keys=True, default=str))


def _leaves(tree, prefix):
    if isinstance(tree, dict) and tree:
        return [leaf for key in sorted(tree, key=str) for leaf in _leaves(tree[key], "%s.%s" % (prefix, key))]
    return [prefix]


def diff_paths(before, after, prefix=""):
    """Dotted leaf paths whose values differ between two value trees (sorted); a subtree
    present on one side only is named by its leaves."""
    paths = []
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            path = "%s.%s" % (prefix, key) if prefix else str(key)
            if key not in before or key not in after:
                paths.extend(_leaves(after[key] if key in after else before[key], path))
            else:
                paths.extend(diff_paths(before[key], after[key], path))
    elif before != after:
        paths.append(prefix or "(root)")
    return paths


def plan_release(history, current_values, desired_values, desired_chart):
    """(needed, reasons): whether ``helm upgrade --install`` has to run, from ``history``
    (parse_history(), [] when not installed) and ``desired_chart`` {name, version}."""
    if not history:
        return True, ["release is not installed"]
    latest = history[-1]
    reasons = []
    if latest["status"] not in HEALTHY_STATUSES:
        reasons.append("release status is %s (revision %d)" % (latest["status"], latest["revision"]))
    if desired_chart.get("name") and latest["chart_name"] != desired_chart["name"]:
        reasons.append("chart %s -> %s" % (latest["chart_name"], desired_chart["name"]))
    if desired_chart.get("version") and latest["chart_version"] != desired_chart["version"]:
        reasons.append("chart version %s -> %s" % (latest["chart_version"] or "?", desired_chart["version"]))
    changed = diff_paths(normalize(current_values), normalize(desired_values))
    if changed:
        reasons.append("values differ at " + ", ".join(changed))
    return bool(reasons), reasons


def release_info(name, namespace, history):
    if not history or history[-1]["status"] == "uninstalled":
        return {"name": name, "namespace": namespace, "status": "absent"}
    latest = history[-1]
    return {"name": name, "namespace": namespace, "revision": latest["revision"], "chart": latest["chart"],
            "chart_version": latest["chart_version"], "app_version": latest["app_version"],
            "status": latest["status"], "description": latest["description"], "updated": latest["updated"]}


def latest_revision(history):
    """(revision, status) of the newest revision, None when there is no release."""
    return (history[-1]["revision"], history[-1]["status"]) if history else None


def previous_good_revision(history):
    """The revision to roll back to after a failed upgrade: the newest ``deployed`` or
    ``superseded`` one (None for a first install)."""
    for rev in reversed(history or []):
        if rev["status"] in ("deployed", "superseded"):
            return rev["revision"]
    return None


def _render(values, dumper):
    if not values:
        return "{}\n"
    return dumper(values)


def values_diff(release_name, before_values, after_values, before_chart="", after_chart="", dumper=None):
    """The ``diff`` result for Ansible: user values (and chart) before and after."""
    if dumper is None:
        def dumper(data):
            return json.dumps(data, indent=2, sort_keys=True) + "\n"
    before = _render(normalize(before_values), dumper)
    after = _render(normalize(after_values), dumper)
    if before_chart or after_chart:
        before = "# chart: %s\n%s" % (before_chart or "(none)", before)
        after = "# chart: %s\n%s" % (after_chart or "(none)", after)
    return {"before_header": "%s (current user values)" % release_name,
            "after_header": "%s (desired user values)" % release_name,
            "before": before, "after": after}


# --- commands ------------------------------------------------------------------------------
def connection_args(kubeconfig=None, context=None):
    args = []
    if kubeconfig:
        args += ["--kubeconfig", kubeconfig]
    if context:
        args += ["--kube-context", context]
    return args


def wait_args(major, timeout):
    """helm 3: --wait is a boolean; helm 4: a strategy (watcher = kstatus, the default for --wait)."""
    return (["--wait=watcher"] if major >= 4 else ["--wait"]) + ["--timeout", "%ds" % timeout]


def upgrade_argv(helm, major, release, namespace, chart_ref, values_file, repo_url=None, version=None,
                 create_namespace=True, wait=True, timeout=300, conn=()):
    argv = [helm, "upgrade", "--install", release, chart_ref, "--namespace", namespace,
            "--values", values_file, "--reset-values"]
    if create_namespace:
        argv.append("--create-namespace")
    if repo_url:
        argv += ["--repo", repo_url]
    if version:
        argv += ["--version", version]
    if wait:
        argv += wait_args(major, timeout)
    else:
        argv += ["--timeout", "%ds" % timeout]
    return argv + list(conn)


def command_text(argv):
    """A shell-quoted rendering of an argv for the module result (argv holds no secrets:
    kubeconfig contents only ever travel through a 0600 file)."""
    return " ".join(shlex.quote(str(part)) for part in argv)


class Helm(object):
    """helm through the collection's Runner. Read-only calls run in check mode too."""

    def __init__(self, runner, binary="helm", kubeconfig=None, context=None):
        self.runner = runner
        self.binary = binary
        self.conn = connection_args(kubeconfig, context)
        self.major = None
        self.version = None
        self.commands = []
        self.slowest = 0.0  # seconds of the slowest read-only call (undo_reserve)

    def _run(self, argv, mutates=False, check=True, hint=None):
        self.commands.append(command_text(argv))
        started = time.monotonic()
        try:
            return self.runner.run(argv, check=check, mutates=mutates, hint=hint)
        finally:
            if not mutates:
                self.slowest = max(self.slowest, time.monotonic() - started)

    def detect_version(self):
        res = self._run([self.binary, "version", "--short"], hint="is helm (3.x or 4.x) installed?")
        parts = parse_version(res.stdout)
        if parts[0] not in (3, 4):
            raise HelmError("helm %d.%d.%d is not supported (need helm 3 or 4)" % parts)
        self.major = parts[0]
        self.version = "%d.%d.%d" % parts
        return self.version

    def history(self, release, namespace, chart_name=None):
        """Revisions of ``release`` (oldest first), [] when it does not exist."""
        res = self._run([self.binary, "history", release, "--namespace", namespace, "--max", "20",
                         "--output", "json"] + self.conn, check=False)
        if res.rc != 0:
            if RELEASE_NOT_FOUND in (res.stderr or "") + (res.stdout or ""):
                return []
            raise CommandError(res.cmd, res.rc, res.stdout, res.stderr)
        return parse_history(res.stdout, chart_name)

    def get_values(self, release, namespace, all_values=False):
        argv = [self.binary, "get", "values", release, "--namespace", namespace, "--output", "json"]
        if all_values:
            argv.append("--all")
        return parse_values(self._run(argv + self.conn).stdout)

    def show_chart(self, chart_ref, repo_url=None, version=None):
        argv = [self.binary, "show", "chart", chart_ref]
        if repo_url:
            argv += ["--repo", repo_url]
        if version:
            argv += ["--version", version]
        return parse_chart_metadata(self._run(argv, hint="cannot read chart %s" % chart_ref).stdout)

    def render(self, release, namespace, chart_ref, values_file, values, repo_url=None, version=None):
        """``helm template`` (offline): HelmError naming the values set when the chart refuses them,
        before helm installs anything (a failed ``upgrade --install`` has applied the CRDs already)."""
        argv = [self.binary, "template", release, chart_ref, "--namespace", namespace, "--values", values_file]
        if repo_url:
            argv += ["--repo", repo_url]
        if version:
            argv += ["--version", version]
        res = self._run(argv, check=False)
        if res.rc != 0:
            raise HelmError("the chart refuses these values, nothing was changed: %s; values set: %s"
                            % (tail(error_text(res.stderr)) or tail(res.stdout), ", ".join(diff_paths({}, values))))

    def upgrade(self, release, namespace, chart_ref, values_file, **kwargs):
        argv = upgrade_argv(self.binary, self.major, release, namespace, chart_ref, values_file,
                            conn=self.conn, **kwargs)
        return self._run(argv, mutates=True, check=False)

    def rollback(self, release, namespace, revision, wait=True, timeout=300):
        argv = [self.binary, "rollback", release, str(revision), "--namespace", namespace]
        argv += wait_args(self.major, timeout) if wait else ["--timeout", "%ds" % timeout]
        return self._run(argv + self.conn, mutates=True, check=False)

    def uninstall(self, release, namespace, wait=True, timeout=300):
        argv = [self.binary, "uninstall", release, "--namespace", namespace]
        argv += wait_args(self.major, timeout) if wait else ["--timeout", "%ds" % timeout]
        return self._run(argv + self.conn, mutates=True, check=False)
