#!/usr/bin/env python
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Compare the sweep's measurements with today's validator and derive per-release key data.

Usage: compare.py --results OUT/results.jsonl[.gz] --cases OUT/cases.jsonl
                  [--releases-out schemas/cufile-releases.json] [--report report.md]
                  [--validator-version 1.15] [--strings tests/gpu/cufile_sweep/strings-keys.json]

1. Agreement: every case's text goes through the validator (bin/cufile-lint's loader, so it
   follows the validator wherever it lives) for --validator-version with host paths checked on
   this machine and nvidia_fs absent (as on the GPU host). Its verdict: "aborts" if an error
   finding has effect aborts, else "load_fails" if one has load_fails, else "ok". The measured
   outcome no_cuda (config loaded, no GPU driver: runs off the GPU host) counts as ok. Figures
   per release: cases, agreed, the disagreements (measured, predicted, libcufile's line, the
   validator's first error). Only the validator's own release is a true agreement figure; the
   others show where that schema is wrong for another release.
2. Per-release data (docs/cufile.md, "Releases measured"): for each key and section, the releases
   that read it (first, last, gaps), the JSON kinds each release accepts, its reaction to every
   probe, and per release the codes cuFileDriverOpen returned. Standard library only, except the
   validator (it needs jsonschema: run with the project's .venv).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.machinery
import importlib.util
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
LINT = os.path.join(ROOT, "bin", "cufile-lint")
STRINGS = os.path.join(HERE, "strings-keys.json")
FAILED = ("load_fails", "aborts")
REASON = re.compile(r"error reading config|json type mismatch|invalid|parsing error|not a directory|unable|"
                    r"Assertion|must|required|failed to")
FORMAT_VERSION = 1


def version_key(release):
    return tuple(int(part) for part in release.split("."))


def read_jsonl(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def measured(result):
    """The config verdict of one measurement: no_cuda (the config loaded) counts as ok."""
    return "ok" if result["outcome"] == "no_cuda" else result["outcome"]


def reaction(result):
    """Compact per-probe reaction: 'ok', 'aborts', 'load_fails:-22'."""
    outcome = measured(result)
    return "%s:%s" % (outcome, result["err"]) if outcome == "load_fails" else outcome


def reason(result):
    """libcufile's own line for a failure ('error reading config ...'); empty for an ok case."""
    if measured(result) not in FAILED:
        return ""
    lines = result.get("stdout") or []
    hits = [line.strip() for line in lines if REASON.search(line)]
    return hits[0] if hits else (lines[0].strip() if lines else "")


# -- validator ---------------------------------------------------------------------------------
def load_validator():
    loader = importlib.machinery.SourceFileLoader("cufile_lint_script", LINT)
    spec = importlib.util.spec_from_loader("cufile_lint_script", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module._load_validator()


def predicted(validate, text, version):
    result = validate.lint_text(text, source="cufile.json", version=version, check_paths=True,
                                host={"nvidia_fs": False})
    effects = [f.effect for f in result.errors]
    first = result.errors[0].message if result.errors else ""
    for effect, outcome in (("aborts", "aborts"), ("crashes", "crashed"), ("load_fails", "load_fails")):
        if effect in effects:
            return outcome, first
    return "ok", first


def agreement(results, validate, version, per_release_views=False):
    """Agreement per release; with ``per_release_views`` each release is validated with its own
    view (cufile_version = that release) instead of ``version``."""
    cache = {}
    per_release = {}
    for result in results:
        use = result["release"] if per_release_views else version
        if (result["text"], use) not in cache:
            cache[(result["text"], use)] = predicted(validate, result["text"], use)
        verdict, first = cache[(result["text"], use)]
        entry = per_release.setdefault(result["release"], {"cases": 0, "agreed": 0, "disagreements": []})
        entry["cases"] += 1
        if measured(result) == verdict:
            entry["agreed"] += 1
        else:
            entry["disagreements"].append({"id": result["id"], "text": result["text"], "measured": reaction(result),
                                           "predicted": verdict, "libcufile": reason(result), "validator": first})
    return per_release


# -- per-release data --------------------------------------------------------------------------
def infer_type(accepts, rejects):
    """The JSON type a release reads from the kinds it accepted and rejected (None: unclear)."""
    if not rejects:
        return None
    only = set(accepts)
    for kind, name in (("object", "object"), ("array", "array"), ("string", "string")):
        if only == {kind}:
            return name
    if "int" in only and only <= {"int", "bool", "float"}:
        return "integer"
    if only == {"bool"}:
        return "boolean"
    return None


def entry_for(probes, baseline):
    """Per release: whether the key is read, accepted/rejected kinds, every probe's reaction."""
    out = {}
    for release, by_probe in probes.items():
        base = baseline.get(release, "ok")
        read = any(measured(r) != base for r in by_probe.values())
        accepts = sorted(set(r["kind"] for r in by_probe.values() if measured(r) == "ok" and r["kind"] != "raw"))
        rejects = dict((r["kind"], measured(r)) for r in by_probe.values() if measured(r) in FAILED and r["kind"] != "raw")
        entry = {"read": read, "probes": dict((p, reaction(r)) for p, r in sorted(by_probe.items()))}
        if read:
            entry["accepts"] = accepts
            entry["type"] = infer_type(accepts, rejects)
            wrong = by_probe.get("wrong-type") or by_probe.get("kind-string") or by_probe.get("kind-array")
            if wrong is not None:
                entry["wrong_type"] = reaction(wrong)
        out[release] = entry
    return out


def span(per_release, releases):
    reading = [r for r in releases if per_release.get(r, {}).get("read")]
    if not reading:
        return {"first": None, "last": None, "gaps": []}
    inside = [r for r in releases if version_key(reading[0]) <= version_key(r) <= version_key(reading[-1])]
    return {"first": reading[0], "last": reading[-1],
            "gaps": [r for r in inside if r in per_release and not per_release[r]["read"]]}


def derive(results, cases, strings, summary=None):
    meta = dict((c["id"], c) for c in cases)
    releases = sorted(set(r["release"] for r in results), key=version_key)
    baseline = dict((r["release"], measured(r)) for r in results if r["id"] == "baseline:empty-object")
    grouped = {"key": {}, "section": {}}
    others = {}
    release_info = {}
    for result in results:
        case = meta.get(result["id"], {})
        result = dict(result, kind=case.get("kind", "raw"))
        info = release_info.setdefault(result["release"], {"libcufile": result.get("libcufile"), "version": None,
                                                           "cases": 0, "outcomes": {}, "load_fail_codes": {}})
        info["cases"] += 1
        if result.get("version") is not None:
            info["version"] = result["version"]
        info["outcomes"][result["outcome"]] = info["outcomes"].get(result["outcome"], 0) + 1
        if measured(result) == "load_fails":
            code = str(result["err"])
            info["load_fail_codes"][code] = info["load_fail_codes"].get(code, 0) + 1
        group = "key" if case.get("group") == "range" else case.get("group")  # range probes belong to their key
        if group in grouped:
            grouped[group].setdefault(case["key"], {}).setdefault(result["release"], {})[case["probe"]] = result
        else:
            others.setdefault(result["id"], {})[result["release"]] = reaction(result)
    named = dict((r, set(v["keys"])) for r, v in strings.get("releases", {}).items())
    keys = {}
    for path, probes in sorted(grouped["key"].items()):
        per_release = entry_for(probes, baseline)
        keys[path] = dict(span(per_release, releases), per_release=per_release,
                          strings=sorted((r for r in named if path in named[r]), key=version_key))
    sections = dict((path, dict(span(entry_for(probes, baseline), releases), per_release=entry_for(probes, baseline)))
                    for path, probes in sorted(grouped["section"].items()))
    return {
        "$comment": "Per-release cufile.json facts measured against the real libcufile of each release "
                    "(tests/gpu/cufile_sweep; format in docs/cufile.md, 'Releases measured'). Derived data: "
                    "regenerate with compare.py, do not edit by hand.",
        "format": FORMAT_VERSION,
        "releases": dict((r, dict(release_info[r], baseline=baseline.get(r))) for r in releases),
        "run": summary or {},
        "keys": keys,
        "sections": sections,
        "cases": dict(sorted(others.items())),
    }


# Why a disagreement that is left stays (key of the case id -> explanation); the report prints
# it under each disagreement it applies to, so every remaining one is explained or stands out.
EXPLAINED = {
    "properties.rdma_transport_type": "every probe value (true, 1, \"x\") was refused, so the sweep does not "
                                      "settle its type or values; the view adds the key with no type rather "
                                      "than invent one (tier 2 probes were cut by the device deadline)",
    "properties.compat_odirect_unaligned_read_split_min_size_kb": "every probe value was refused (1 is below "
                                      "libcufile's minimum 4, 'use 0 to disable'), so the sweep does not settle "
                                      "its type; the view adds the key with no type rather than invent a range",
}


def explanation(case_id):
    return EXPLAINED.get(case_id.split(":")[0])


def report_text(agree, version, data):
    if version == "per-release":
        lines = ["# cufile sweep: the validator with each release's own view (cufile_version = the release)", ""]
    else:
        lines = ["# cufile sweep: today's validator (libcufile %s schema) against each release" % version, ""]
    lines.append("| release | libcufile | cases | agreed | disagreements | load-failure codes |")
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for release in sorted(agree, key=version_key):
        entry = agree[release]
        info = data["releases"].get(release, {})
        lines.append("| %s | %s | %d | %d | %d | %s |" % (
            release, info.get("libcufile"), entry["cases"], entry["agreed"], len(entry["disagreements"]),
            ", ".join("%s x%d" % kv for kv in sorted(info.get("load_fail_codes", {}).items()))))
    lines += ["", "## Keys by release (read = a wrong-type value changes the outcome)", ""]
    for path, key in sorted(data["keys"].items()):
        lines.append("- `%s`: %s" % (path, "not read by any release measured" if not key["first"] else
                                     "%s-%s%s" % (key["first"], key["last"],
                                                  " (not read in %s)" % ", ".join(key["gaps"]) if key["gaps"] else "")))
    for release in sorted(agree, key=version_key):
        lines += ["", "## Disagreements, %s" % release, ""]
        for d in agree[release]["disagreements"]:
            lines.append("- `%s` measured %s, validator %s; libcufile: %s; validator: %s" % (
                d["id"], d["measured"], d["predicted"], d["libcufile"] or "-", d["validator"] or "-"))
            if version == "per-release" and explanation(d["id"]):
                lines.append("  - why: %s" % explanation(d["id"]))
    return "\n".join(lines) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    p.add_argument("--results", required=True)
    p.add_argument("--cases", required=True)
    p.add_argument("--summary", help="summary.json of the run (default: next to --results)")
    p.add_argument("--strings", default=STRINGS)
    p.add_argument("--validator-version", default="1.15")
    p.add_argument("--releases-out", help="write the per-release data here (e.g. schemas/cufile-releases.json)")
    p.add_argument("--report", help="write the agreement report (markdown) here")
    p.add_argument("--agreement-out", help="write the agreement figures and disagreements (JSON) here")
    p.add_argument("--no-validator", action="store_true", help="skip the agreement (no jsonschema here)")
    p.add_argument("--per-release", action="store_true",
                   help="validate each release's cases with that release's view (not --validator-version)")
    args = p.parse_args(argv)
    results = read_jsonl(args.results)
    cases = read_jsonl(args.cases)
    strings = json.load(open(args.strings)) if os.path.isfile(args.strings) else {}
    summary_path = args.summary or os.path.join(os.path.dirname(os.path.abspath(args.results)), "summary.json")
    summary = json.load(open(summary_path)) if os.path.isfile(summary_path) else {}
    summary = dict((k, summary[k]) for k in ("done", "planned", "skipped_by_deadline", "seconds", "jobs") if k in summary)
    data = derive(results, cases, strings, summary)
    if args.releases_out:
        with open(args.releases_out, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.write("\n")
    agree = {} if args.no_validator else agreement(results, load_validator(), args.validator_version, args.per_release)
    if args.per_release:
        args.validator_version = "per-release"
    if args.agreement_out:
        with open(args.agreement_out, "w") as f:
            json.dump({"validator_version": args.validator_version, "releases": agree}, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.report:
        with open(args.report, "w") as f:
            f.write(report_text(agree, args.validator_version, data))
    for release in sorted(data["releases"], key=version_key):
        info = data["releases"][release]
        entry = agree.get(release)
        print("%-5s %-11s cases=%d %s codes=%s%s" % (
            release, info["libcufile"], info["cases"],
            " ".join("%s=%d" % kv for kv in sorted(info["outcomes"].items())),
            ",".join(sorted(info["load_fail_codes"])) or "-",
            "  validator %s: agreed %d of %d" % (args.validator_version, entry["agreed"], entry["cases"]) if entry else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
