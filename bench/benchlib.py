# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The pure parts of bench/run: PLAY RECAP parsing, ratios, per-host slopes, verdicts, the
controller's memory (a process tree's RSS sampled from /proc), the lab hosts' CPU (their cgroup's
cpu.stat) and the end-state comparison of the first rollout. Unit-tested in
tests/unit/repo/test_bench_helpers.py; no lab needed."""

from __future__ import annotations

import json
import math
import os
import re
import sys
import threading

RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)
ADHOC_HEAD = re.compile(r"^(\S+) \| (CHANGED|SUCCESS|FAILED|UNREACHABLE!)\b.*$", re.M)


def recap(output):
    """{host: (ok, changed, unreachable, failed)} from a PLAY RECAP."""
    return {m.group(1): tuple(int(m.group(i)) for i in range(2, 6)) for m in RECAP.finditer(output)}


def ratio(a, b):
    """a / b, infinity when b is not positive (a figure, never a ZeroDivisionError), NaN when
    either was not measured."""
    if math.isnan(a) or math.isnan(b):  # not measured: no ratio
        return float("nan")
    return a / b if b > 0 else float("inf")


def slope(t_lo, t_hi, n_lo, n_hi):
    """Seconds per added host between two lab sizes."""
    if n_hi == n_lo:
        raise ValueError("slope needs two different sizes, got %d twice" % n_lo)
    return (t_hi - t_lo) / float(n_hi - n_lo)


def size_pairs(sizes):
    """The slope intervals to print: smallest -> largest, then each pair of consecutive sizes."""
    sizes = sorted(set(sizes))
    if len(sizes) < 2:
        return []
    pairs = [(sizes[0], sizes[-1])]
    if len(sizes) > 2:
        pairs += list(zip(sizes, sizes[1:]))
    return pairs


def verdict(value, goal):
    return "PASS" if value <= goal else "FAIL"


def parse_sizes(text):
    """'3,20,50,100' -> [3, 20, 50, 100]; a clear error for anything else."""
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise ValueError("--sizes: a comma-separated list of host counts, got %r" % text)
    if not sizes or any(n < 1 or n > 200 for n in sizes):
        raise ValueError("--sizes: each size must be 1..200, got %r" % text)
    return sorted(set(sizes))


# ---------------------------------------------------------------- controller memory
def descendants(pid, proc="/proc"):
    """pid and every process below it (through /proc/<pid>/task/*/children)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            tasks = os.listdir("%s/%d/task" % (proc, p))
        except OSError:
            continue
        for tid in tasks:
            try:
                with open("%s/%d/task/%s/children" % (proc, p, tid)) as f:
                    todo += [int(c) for c in f.read().split()]
            except (OSError, ValueError):
                pass
    return found


def rss_kib(pid, proc="/proc"):
    """VmRSS of one process in KiB (0 once it is gone or for a kernel thread)."""
    try:
        with open("%s/%d/status" % (proc, pid)) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def pss_kib(pid, proc="/proc"):
    """Pss of one process in KiB (/proc/<pid>/smaps_rollup): pages shared with the parent
    after a fork count once over all sharers, so a tree's sum is what it really holds."""
    try:
        with open("%s/%d/smaps_rollup" % (proc, pid)) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def tree_pss_kib(pid, proc="/proc"):
    return sum(pss_kib(p, proc) for p in descendants(pid, proc))


def tree_rss_kib(pid, proc="/proc"):
    """(sum of VmRSS over the tree, process count). The sum counts pages that forks share with
    their parent once per process, so it is an upper bound of what the tree holds."""
    pids = descendants(pid, proc)
    return sum(rss_kib(p, proc) for p in pids), len(pids)


class PeakSampler(object):
    """Samples tree_rss_kib(pid) every ``interval`` seconds in a thread; ``peak_kib`` and
    ``peak_procs`` hold the largest figures seen. Cheap: a few /proc reads per process."""

    def __init__(self, pid, interval=0.2, proc="/proc"):
        self.pid, self.interval, self.proc = pid, interval, proc
        self.peak_kib = self.peak_procs = self.peak_pss_kib = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self):
        pids = descendants(self.pid, self.proc)
        kib, procs = sum(rss_kib(p, self.proc) for p in pids), len(pids)
        self.peak_pss_kib = max(self.peak_pss_kib, sum(pss_kib(p, self.proc) for p in pids))
        self.peak_kib = max(self.peak_kib, kib)
        self.peak_procs = max(self.peak_procs, procs)

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        return False


# ---------------------------------------------------------------- CPU
def cpu_stat_seconds(text):
    """usage_usec of a cgroup v2 cpu.stat, in seconds; None when it has none."""
    for line in (text or "").splitlines():
        key, dummy, value = line.partition(" ")
        if key == "usage_usec":
            return int(value) / 1e6
    return None


def lab_cpu_seconds(dirs):
    """The CPU seconds the lab's hosts have used so far: the first of ``dirs`` (the lab's cgroup in
    each hierarchy, lab/cgroups.py) with a cpu.stat that counts them; NaN when none does (a legacy
    cgroup host), so the report shows that it was not measured."""
    for path in dirs:
        try:
            with open(os.path.join(path, "cpu.stat")) as f:
                seconds = cpu_stat_seconds(f.read())
        except (IOError, OSError):
            continue
        if seconds is not None:
            return seconds
    return float("nan")


# ---------------------------------------------------------------- end state of a rollout
# One shell line per host, run by `ansible -m shell` on both fleets of the first rollout: what
# site.yml and the peer must both leave behind.
END_STATE_PACKAGES = ("doca-ofed", "nvidia-fs-dkms", "nvidia-fs", "libcufile-13-0", "gds-tools-13-0")
END_STATE_SCRIPT = (
    "dpkg-query -W -f='pkg ${Package} ${Version} ${db:Status-Abbrev}\\n' %s 2>/dev/null; "
    "echo \"loaded $(grep -c '^nvidia_fs ' \"$GPUDIRECT_PROC_ROOT/proc/modules\")\"; "
    "echo \"param rw_stats_enabled $(cat \"$GPUDIRECT_PROC_ROOT/sys/module/nvidia_fs/parameters/rw_stats_enabled\" 2>/dev/null)\"; "
    "for f in /etc/modules-load.d/nvidia-fs.conf /etc/modprobe.d/nvidia-fs.conf; do "
    "echo \"file $f $(grep -v '^#' $f 2>/dev/null | tr '\\n' ' ')\"; done; "
    "echo cufile.json; cat /etc/cufile.json 2>/dev/null || echo MISSING"
) % " ".join(END_STATE_PACKAGES)


def adhoc_outputs(output):
    """{host: stdout} from `ansible all -m shell` output (blocks headed 'host | CHANGED | rc=0 >>')."""
    heads = list(ADHOC_HEAD.finditer(output))
    result = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(output)
        result[m.group(1)] = output[m.end():end].strip("\n")
    return result


def cufile_loads(text):
    """cufile.json's document. NVIDIA's shipped file has // and /* */ comments: read it with the
    collection's own parser (the one cufile_config uses) when the collection is importable
    (make collection-link), else as plain JSON without // comment lines."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    collections = os.path.join(root, "build", "collections")
    if os.path.isdir(collections) and collections not in sys.path:
        sys.path.append(collections)
    try:
        from ansible_collections.gpudirect.storage.plugins.module_utils._cufile import parser
    except ImportError:
        return json.loads("\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//")))
    return parser.loads(text)


def end_state(stdout):
    """A comparable dict from one host's END_STATE_SCRIPT output: the packages (name, version,
    status), nvidia_fs loaded and its option, the persisted files' settings, and cufile.json's
    settings parsed (formatting and comments aside)."""
    head, _sep, cufile = stdout.partition("cufile.json\n")
    state = {"packages": {}, "lines": []}
    for line in head.splitlines():
        parts = line.split()
        if parts[:1] == ["pkg"] and len(parts) >= 4:
            state["packages"][parts[1]] = (parts[2], parts[3])
        elif parts[:2] == ["file", "/etc/modules-load.d/nvidia-fs.conf"]:
            # modprobe and systemd-modules-load treat '-' and '_' in a module name alike
            state["lines"].append(" ".join(parts[:2] + [w.replace("-", "_") for w in parts[2:]]))
        elif line.strip():
            state["lines"].append(" ".join(parts))
    try:
        state["cufile"] = cufile_loads(cufile)
    except ValueError:
        state["cufile"] = "unparsable: %s" % cufile.strip()[:60]
    return state


def rejudge(state):
    """A saved end_state() read again (bench/run --from-json): this checkout's normalising."""
    text = "".join("pkg %s %s %s\n" % (name, v[0], v[1]) for name, v in sorted(state["packages"].items()))
    text += "".join(line + "\n" for line in state["lines"])
    return end_state(text + "cufile.json\n" + json.dumps(state.get("cufile")))


def state_problems(state):
    """What keeps one host's end state from being a GDS host: packages missing, nvidia_fs not
    loaded, nothing persisted, no cufile.json."""
    problems = ["package %s not installed" % p for p in END_STATE_PACKAGES
                if state["packages"].get(p, ("", ""))[1] != "ii"]
    if "loaded 1" not in state["lines"]:
        problems.append("nvidia_fs not loaded (once)")
    if not any(line.startswith("file /etc/modules-load.d/nvidia-fs.conf nvidia_fs") for line in state["lines"]):
        problems.append("nvidia_fs not persisted in modules-load.d")
    if not isinstance(state.get("cufile"), dict):
        problems.append("cufile.json: %s" % state.get("cufile"))
    return problems


def compare_fleets(ours, peer):
    """Lines naming every difference between two fleets' end states, matched by host position
    (both labs are built alike), plus any host that is no GDS host. Empty: the same end state."""
    diffs = []
    if len(ours) != len(peer):
        diffs.append("host counts differ: %d vs %d" % (len(ours), len(peer)))
    for (h1, s1), (h2, s2) in zip(sorted(ours.items()), sorted(peer.items())):
        for label, host, state in (("site.yml", h1, s1), ("peer", h2, s2)):
            diffs += ["%s %s: %s" % (label, host, p) for p in state_problems(state)]
        for key in ("packages", "lines", "cufile"):
            if s1.get(key) != s2.get(key):
                diffs.append("%s/%s %s differ: %s vs %s" % (h1, h2, key, _short(s1.get(key)), _short(s2.get(key))))
    return diffs


def _short(value, limit=160):
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit] + "..."


# ---------------------------------------------------------------- the printed report
def mib(kib):
    return kib / 1024.0


def report(results, rollout, goals, rounds):
    """Markdown tables and acceptance lines from bench/run's measurements.

    results: {hosts: {"median": {cmd: s}, "peak_kib": {cmd: KiB}, "rerun_changed": [..],
    "peer_rounds": k, "cost": {"up_s", "mem_kib", "prepare_s"}}}; rollout: first_rollout()'s
    dict or None."""
    sizes = sorted(results)
    if not sizes:
        return "\n".join(["Acceptance:"] + acceptance(results, {}, rollout, goals) + rollout_lines(rollout))
    med = {n: results[n]["median"] for n in sizes}
    lines = ["| hosts | ping s | verify s | rerun s | peer s | verify/ping | rerun/ping | rerun/peer | rerun changed |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in sizes:
        m, changed = med[n], results[n]["rerun_changed"]
        lines.append("| %d | %.2f | %.2f | %.2f | %.2f%s | %.2f %s | %.2f %s | %.2f | %s |" % (
            n, m["ping"], m["verify"], m["rerun"], m["peer"],
            "" if results[n]["peer_rounds"] == rounds else " (%d run)" % results[n]["peer_rounds"],
            ratio(m["verify"], m["ping"]), verdict(ratio(m["verify"], m["ping"]), goals["verify/ping"]),
            ratio(m["rerun"], m["ping"]), verdict(ratio(m["rerun"], m["ping"]), goals["rerun/ping"]),
            ratio(m["rerun"], m["peer"]), "%s %s" % ("/".join(str(c) for c in changed),
                                                     "PASS" if not any(changed) else "FAIL")))
    lines += ["", "| hosts | controller peak MiB, RSS sum (PSS): ping | verify | rerun | peer | rerun/ping RSS |",
              "| --- | --- | --- | --- | --- | --- |"]
    for n in sizes:
        p, q = results[n]["peak_kib"], results[n].get("peak_pss_kib") or {}
        lines.append("| %d | %s | %s | %s | %s | %.2f |" % ((n,) + tuple(
            "%.0f (%s)" % (mib(p[k]), "%.0f" % mib(q[k]) if k in q else "-") for k in ("ping", "verify", "rerun", "peer"))
            + (ratio(p["rerun"], p["ping"]),)))
    cpu = dict((n, results[n]["cpu"]) for n in sizes if results[n].get("cpu"))
    if cpu:
        lines += ["", "| hosts | CPU s, controller + lab hosts: ping | verify | rerun | peer |", "| --- | --- | --- | --- | --- |"]
        for n in sorted(cpu):
            lines.append("| %d | %s |" % (n, " | ".join("%.2f + %.2f" % (cpu[n][k]["controller"], cpu[n][k]["hosts"])
                                                        for k in ("ping", "verify", "rerun", "peer"))))
    lines += ["", "| hosts | lab up s | up s/host | lab memory MiB | MiB/host | prepare.yml s | first site.yml s |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for n in sizes:
        c = results[n]["cost"]
        lines.append("| %d | %.1f | %.2f | %.0f | %.1f | %.1f | %.1f |" % (
            n, c["up_s"], c["up_s"] / n, mib(c["mem_kib"]), mib(c["mem_kib"]) / n, c["prepare_s"],
            c.get("converge_s", float("nan"))))
    slopes, cpu_slopes = {}, {}
    for lo, hi in size_pairs(sizes):
        s = {k: slope(med[lo][k], med[hi][k], lo, hi) for k in ("ping", "verify", "rerun", "peer")}
        slopes[(lo, hi)] = s
        c = cpu_slopes[(lo, hi)] = cpu_slope(cpu, lo, hi)
        lines += ["", "| per-host slope %d->%d hosts | s/host | x ping's slope | CPU s/host | x ping's |" % (lo, hi),
                  "| --- | --- | --- | --- | --- |"]
        for k in ("ping", "verify", "rerun", "peer"):
            x = ratio(s[k], s["ping"])
            goal = goals.get(k + " slope")
            lines.append("| %s | %.3f | %.2f%s | %s |" % (k, s[k], x, " " + verdict(x, goal) if goal else "",
                                                          "%.3f | %.2f" % (c[k], ratio(c[k], c["ping"])) if c else "- | -"))
    lines += ["", "Acceptance:"]
    lines += acceptance(results, slopes, rollout, goals)
    if len(sizes) >= 2 and cpu_slopes[(sizes[0], sizes[-1])]:
        c = cpu_slopes[(sizes[0], sizes[-1])]
        lines.append("  INFO CPU per added host %d->%d (controller + lab hosts): re-run %.2fx ping's, verify %.2fx ping's"
                     % (sizes[0], sizes[-1], ratio(c["rerun"], c["ping"]), ratio(c["verify"], c["ping"])))
    return "\n".join(lines + rollout_lines(rollout))


def cpu_slope(cpu, lo, hi):
    """CPU seconds per added host (controller + lab hosts) of each command between two sizes, or
    None when either size has no CPU figures (a saved run from before they were taken)."""
    if lo not in cpu or hi not in cpu:
        return None
    return dict((k, slope(cpu[lo][k]["controller"] + cpu[lo][k]["hosts"], cpu[hi][k]["controller"] + cpu[hi][k]["hosts"],
                          lo, hi)) for k in ("ping", "verify", "rerun", "peer"))


def rollout_lines(rollout):
    if not rollout:
        return []
    lines = ["", "First rollout at %d hosts (fresh prepared labs):" % len(rollout["site"]["state"]),
             "  site.yml %.1f s (changed %d), peer %.1f s; site/peer %.2f; controller peak RSS %.0f / %.0f MiB"
             % (rollout["site"]["s"], rollout["site"]["changed"], rollout["peer"]["s"],
                ratio(rollout["site"]["s"], rollout["peer"]["s"]),
                mib(rollout["site"]["peak_kib"]), mib(rollout["peer"]["peak_kib"]))]
    return lines + ["  end-state difference: " + d for d in rollout["diffs"][:10]]


def acceptance(results, slopes, rollout, goals):
    """The issue's acceptance lines, PASS/FAIL each."""
    sizes = sorted(results)
    lines = []
    if len(sizes) >= 2:
        lo, hi = sizes[0], sizes[-1]
        s = slopes[(lo, hi)]
        x = ratio(s["rerun"], s["ping"])
        lines.append("  %s converged re-run per-host slope %d->%d: %.2fx ping's (goal <= %gx)"
                     % (verdict(x, goals["rerun slope"]), lo, hi, x, goals["rerun slope"]))
        x = ratio(s["verify"], s["ping"])
        lines.append("  %s verify per-host slope %d->%d: %.2fx ping's (goal <= %gx)"
                     % (verdict(x, goals["verify slope"]), lo, hi, x, goals["verify slope"]))
    if not sizes:
        return lines + rollout_acceptance(rollout, goals)
    hi = sizes[-1]
    m, changed = results[hi]["median"], results[hi]["rerun_changed"]
    x = ratio(m["rerun"], m["ping"])
    ok = x <= goals["rerun/ping"] and not any(changed)
    lines.append("  %s converged re-run at %d hosts: %.2fx ping (goal <= %gx), changed=%s"
                 % ("PASS" if ok else "FAIL", hi, x, goals["rerun/ping"], "/".join(str(c) for c in changed)))
    p = results[hi]["peak_kib"]
    lines.append("  INFO controller peak RSS at %d hosts: re-run %.0f MiB, verify %.0f MiB, ping %.0f MiB"
                 % (hi, mib(p["rerun"]), mib(p["verify"]), mib(p["ping"])))
    return lines + rollout_acceptance(rollout, goals)


def rollout_acceptance(rollout, goals):
    lines = []
    if rollout:
        x = ratio(rollout["site"]["s"], rollout["peer"]["s"])
        same = not rollout["diffs"]
        lines.append("  %s first rollout at %d hosts: site.yml %.1f s = %.2fx the peer's %.1f s (goal <= %gx)"
                     % (verdict(x, goals["rollout/peer"]), len(rollout["site"]["state"]), rollout["site"]["s"], x,
                        rollout["peer"]["s"], goals["rollout/peer"]))
        lines.append("  %s same end state after both first rollouts (packages, nvidia_fs loaded + option + "
                     "persisted, cufile.json settings)%s" % ("PASS" if same else "FAIL",
                                                             "" if same else ": %d differences" % len(rollout["diffs"])))
    return lines


def lab_report(costs):
    """bench/run --lab-only: {hosts: cost dict with ping_s, ping_peak_kib, ping_ok}."""
    lines = ["| hosts | lab up s | up s/host | lab memory MiB | MiB/host | prepare.yml s | ping s | ping ok | ping peak RSS MiB |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for n in sorted(costs):
        c = costs[n]
        lines.append("| %d | %.1f | %.2f | %.0f | %.1f | %.1f | %.2f | %d | %.0f |" % (
            n, c["up_s"], c["up_s"] / n, mib(c["mem_kib"]), mib(c["mem_kib"]) / n, c["prepare_s"], c["ping_s"],
            c["ping_ok"], mib(c["ping_peak_kib"])))
    return "\n".join(lines)
