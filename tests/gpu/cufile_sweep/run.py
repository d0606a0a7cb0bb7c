#!/usr/bin/env python
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Run every sweep case against every libcufile release, each in its own child process.

Usage: run.py --libs DIR --cases cases.jsonl --out DIR [--jobs N] [--timeout S] [--deadline S]
              [--releases 1.15,1.20] [--max-tier 2] [--only ID,...]
              [--allow-etc-cufile]

DIR/<release>/libcufile.so.0 (and DIR/manifest.json from unpack.py) are the libraries. Cases
run tier by tier; inside a tier, case by case over all releases, so a run cut short by
--deadline still has the same cases for every release. Per case: a fresh working folder holding
cufile.json, CUFILE_ENV_PATH_JSON pointing at it, no other CUFILE_* variable, child.py run with
this Python. libcufile overlays CUFILE_ENV_PATH_JSON on /etc/cufile.json, so the run refuses to
start while /etc/cufile.json exists (cufile-sweep-run.sh moves it aside and back).

Writes OUT/results.jsonl (one line per case and release: release, libcufile, id, tier, text,
outcome, err, cu_err, version, signal, stdout, stderr, log, seconds) and OUT/summary.json.
Outcomes: ok (cuFileDriverOpen 0), load_fails (non-zero), aborts (SIGABRT), crashed (another
signal), timeout, no_cuda (err 5033 'missing cuda symbols': the config loaded, no GPU driver
here; only off the GPU host), child_error (no open status, e.g. the library did not load).
Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CHILD = os.path.join(HERE, "child.py")
MARK = "@@sweep "
KEEP_LINES = 8
NO_CUDA = 5033


def version_key(release):
    return tuple(int(part) for part in release.split("."))


def load_cases(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def find_releases(lib_dir, wanted=None):
    found = sorted((name for name in os.listdir(lib_dir)
                    if os.path.isfile(os.path.join(lib_dir, name, "libcufile.so.0"))), key=version_key)
    if wanted:
        missing = [w for w in wanted if w not in found]
        if missing:
            raise SystemExit("run.py: no library for release(s) %s in %s" % (", ".join(missing), lib_dir))
        found = [r for r in found if r in wanted]
    return found


def order(cases, releases, max_tier):
    """(case, release) pairs: tier by tier, and each case for all releases before the next case."""
    picked = [c for c in cases if c["tier"] <= max_tier]
    picked.sort(key=lambda c: c["tier"])  # stable: keeps the generator's order inside a tier
    return [(case, release) for case in picked for release in releases]


def child_env(json_path):
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith("CUFILE_"))
    env["CUFILE_ENV_PATH_JSON"] = json_path
    return env


def tail(text, limit=KEEP_LINES, width=300):
    lines = [line.rstrip()[:width] for line in text.splitlines() if line.strip()]
    return lines[-limit:]


def log_tail(folder):
    lines = []
    for name in sorted(os.listdir(folder)):
        if name.startswith("cufile") and name.endswith(".log") or name == "cufile.log":
            with open(os.path.join(folder, name), errors="replace") as f:
                lines.extend(f.read().splitlines())
    return [line.strip()[:300] for line in lines if " ERROR " in line or " WARN " in line][-4:]


def killed_by(returncode):
    """The signal that ended the child (subprocess reports it as a negative return code), or None."""
    return -returncode if returncode is not None and returncode < 0 else None


def classify(returncode, markers, stdout, timed_out):
    """The outcome of one case from the child's exit and its markers."""
    opened = [m for m in markers if m.get("step") == "open"]
    if timed_out:
        return "timeout"
    if killed_by(returncode):
        return "aborts" if killed_by(returncode) == signal.SIGABRT else "crashed"
    if not opened:
        return "child_error"
    err = opened[0]["err"]
    if err == 0:
        return "ok"
    if err == NO_CUDA and "missing cuda symbols" in stdout:
        return "no_cuda"
    return "load_fails"


def run_case(case, release, lib_dir, timeout, python):
    folder = tempfile.mkdtemp(prefix="cufile-sweep-")
    try:
        json_path = os.path.join(folder, "cufile.json")
        with open(json_path, "w", encoding="utf-8", newline="") as f:
            f.write(case["text"])
        start = time.monotonic()
        timed_out = False
        proc = subprocess.Popen([python, CHILD, os.path.join(lib_dir, release, "libcufile.so.0")], cwd=folder,
                                env=child_env(json_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        seconds = round(time.monotonic() - start, 3)
        out_text = out.decode("utf-8", "replace")
        markers = [json.loads(line[len(MARK):]) for line in out_text.splitlines() if line.startswith(MARK)]
        lib_out = "\n".join(line for line in out_text.splitlines() if not line.startswith(MARK))
        opened = next((m for m in markers if m.get("step") == "open"), {})
        version = next((m.get("version") for m in markers if m.get("step") == "version"), None)
        returncode = None if timed_out else proc.returncode
        return {"release": release, "id": case["id"], "tier": case["tier"], "text": case["text"],
                "outcome": classify(returncode, markers, lib_out, timed_out), "err": opened.get("err"),
                "cu_err": opened.get("cu_err"), "version": version,
                "signal": killed_by(returncode),
                "exit": returncode, "stdout": tail(lib_out), "stderr": tail(err.decode("utf-8", "replace"), 4),
                "log": log_tail(folder), "seconds": seconds}
    finally:
        shutil.rmtree(folder, ignore_errors=True)


class Sweep(object):
    def __init__(self, pairs, lib_dir, out_path, jobs, timeout, deadline, python, manifest):
        self.work = queue.Queue()
        for pair in pairs:
            self.work.put(pair)
        self.total = len(pairs)
        self.lib_dir, self.timeout, self.python, self.manifest = lib_dir, timeout, python, manifest
        self.stop_at = time.monotonic() + deadline if deadline else None
        self.out = open(out_path, "w")
        self.lock = threading.Lock()
        self.counts = {}
        self.done = 0
        self.skipped = 0
        self.jobs = jobs

    def worker(self):
        while True:
            try:
                case, release = self.work.get_nowait()
            except queue.Empty:
                return
            if self.stop_at and time.monotonic() > self.stop_at:
                with self.lock:
                    self.skipped += 1
                continue
            result = run_case(case, release, self.lib_dir, self.timeout, self.python)
            result["libcufile"] = self.manifest.get(release, {}).get("release", release)
            with self.lock:
                self.out.write(json.dumps(result, sort_keys=True) + "\n")
                self.out.flush()
                per = self.counts.setdefault(release, {})
                per[result["outcome"]] = per.get(result["outcome"], 0) + 1
                self.done += 1

    def run(self):
        threads = [threading.Thread(target=self.worker, daemon=True) for _job in range(self.jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.out.close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--libs", required=True)
    p.add_argument("--cases", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per case (default 60)")
    p.add_argument("--deadline", type=float, default=0, help="start no case after this many seconds (0: none)")
    p.add_argument("--releases", default="", help="comma-separated releases (default: every one in --libs)")
    p.add_argument("--max-tier", type=int, default=2)
    p.add_argument("--only", default="", help="comma-separated case id prefixes (default: all cases)")
    p.add_argument("--python", default=sys.executable, help="Python that runs child.py (default: this one)")
    p.add_argument("--allow-etc-cufile", action="store_true",
                   help="run although /etc/cufile.json exists (its keys then underlie every case)")
    args = p.parse_args(argv)
    if os.path.lexists("/etc/cufile.json") and not args.allow_etc_cufile:
        sys.stderr.write("run.py: /etc/cufile.json exists; libcufile overlays each case on it. Move it aside "
                         "(cufile-sweep-run.sh does) or pass --allow-etc-cufile.\n")
        return 2
    args.libs = os.path.abspath(args.libs)
    releases = find_releases(args.libs, [r for r in args.releases.split(",") if r])
    manifest_path = os.path.join(args.libs, "manifest.json")
    manifest = json.load(open(manifest_path)) if os.path.isfile(manifest_path) else {}
    cases = load_cases(args.cases)
    prefixes = tuple(x for x in args.only.split(",") if x)
    if prefixes:
        cases = [c for c in cases if c["id"].startswith(prefixes)]
    pairs = order(cases, releases, args.max_tier)
    os.makedirs(args.out, exist_ok=True)
    started = time.monotonic()
    sweep = Sweep(pairs, args.libs, os.path.join(args.out, "results.jsonl"), args.jobs, args.timeout,
                  args.deadline, args.python, manifest)
    sweep.run()
    summary = {"releases": releases, "cases": len([c for c in cases if c["tier"] <= args.max_tier]),
               "planned": sweep.total, "done": sweep.done, "skipped_by_deadline": sweep.skipped,
               "seconds": round(time.monotonic() - started, 1), "jobs": args.jobs, "counts": sweep.counts,
               "libcufile": dict((r, manifest.get(r, {})) for r in releases)}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
    for release in releases:
        counts = sweep.counts.get(release, {})
        print("%-5s %s" % (release, " ".join("%s=%d" % kv for kv in sorted(counts.items()))))
    print("done %d of %d in %.0f s (%d skipped by the deadline, %d jobs)" % (
        sweep.done, sweep.total, summary["seconds"], sweep.skipped, args.jobs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
