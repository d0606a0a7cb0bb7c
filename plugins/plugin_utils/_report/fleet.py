# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The GDS fleet report: records, summary, run journal and Markdown. PRIVATE to the collection.

Controller-side and pure: plain data in (each host's ``ansible_facts.gds``, the callback's run
journal), plain data or text out. One record per host (``gds-fleet.json`` ``hosts[]``, built by
``build_records``) holds its status, mode, readiness, reasons, versions, throughput, failure and
source (``ssh`` or ``kubernetes``); docs/report.md lists the fields."""

from __future__ import annotations

import json
import re

from ansible_collections.gpudirect.storage.plugins.module_utils._common.redact import redact_text
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.verdict import gate

SCHEMA = "gpudirect.storage/gds-fleet/1"
MODES = ("gds", "p2pdma", "compat", "unavailable", "failed", "unknown")
STATUSES = ("ok", "failed", "unreachable", "unknown")
VERSION_KEYS = ("nvidia_driver", "nvidia_kernel_module", "cuda_driver", "nvidia_fs", "libcufile", "ofed", "kernel")
MSG_LIMIT = 600
FACT_KEYS = ("mode", "reason", "reasons", "verified", "proven", "throughput", "versions", "require_mode")


def _text(value, limit=MSG_LIMIT):
    """One line of at most ``limit`` characters from any value (None -> "")."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = json.dumps(value, sort_keys=True, default=str) if isinstance(value, (dict, list)) else str(value)
    value = " ".join(value.split())
    return value if limit is None or len(value) <= limit else value[:limit - 3] + "..."


def _said(value, limit=MSG_LIMIT):
    """What a task or pod said, as :func:`_text`, with credentials masked before it is cut."""
    return _text(redact_text(_text(value, None)), limit)


def slim_facts(gds):
    """The part of ``ansible_facts.gds`` the report uses (small enough for the run journal).
    Idempotent: slimming slim facts returns them unchanged."""
    if not isinstance(gds, dict) or not gds.get("mode"):
        return None
    out = dict((k, gds[k]) for k in FACT_KEYS if k in gds)
    out["gpus"] = [(g.get("name") or "GPU") if isinstance(g, dict) else str(g) for g in gds.get("gpus") or []]
    cufile = gds.get("cufile") if isinstance(gds.get("cufile"), dict) else {}
    out["cufile"] = {"valid": cufile.get("valid"), "errors": cufile.get("errors"),
                     "findings": [f for f in cufile.get("findings") or []
                                  if isinstance(f, dict) and f.get("severity") == "error"][:3]}
    probe = gds.get("probe") if isinstance(gds.get("probe"), dict) else {}
    out["probe"] = {"enabled": probe.get("enabled"), "ran": probe.get("ran")}
    return out


def failure_message(result):
    """The readable message of a failed or unreachable task result (a result dict)."""
    if not isinstance(result, dict):
        return _text(result)
    msg = result.get("msg") or result.get("message") or result.get("reason")
    if not msg and result.get("results"):  # a loop: the first failed item
        for item in result["results"]:
            if isinstance(item, dict) and item.get("failed"):
                msg = item.get("msg") or item.get("stderr")
                break
    if not msg and result.get("rc") not in (None, 0):
        msg = "rc=%s" % result["rc"]
    msg = _said(msg)
    if msg.startswith("Task failed: "):  # how ansible-core wraps an action's error
        msg = msg[len("Task failed: "):]
    parts = [msg or "failed without a message"]
    tail = _said(result.get("stderr") or result.get("module_stderr"))
    if tail and tail not in parts[0]:
        parts.append("stderr: " + _text(tail, 300))
    return _text(" | ".join(parts))


# -- the run journal (JSON lines written by the callback) -------------------------------------------
def journal_event(kind, host, task=None, result=None, **extra):
    """A journal line for a failed/unreachable/recovered host. ``task``: dict with play, task,
    role, action (plain strings)."""
    event = {"event": kind, "host": host}
    event.update(dict((k, _text(v, 200)) for k, v in (task or {}).items() if v))
    if result is not None:
        event["msg"] = failure_message(result)
        facts = slim_facts(((result.get("ansible_facts") or {}) if isinstance(result, dict) else {}).get("gds"))
        if facts:
            event["facts"] = facts
    event.update(extra)
    return event


def parse_journal(text):
    """Journal lines -> events (lines that are not JSON objects are skipped)."""
    events = []
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event"):
            events.append(event)
    return events


def not_reached(play, hosts):
    """Journal states for ``hosts`` that a run ended before (a later serial batch of ``play``)."""
    msg = "the run ended (max_fail_percentage or any_errors_fatal) before this host's batch of play %r" % play
    return dict((h, {"status": "unknown", "failure": {"kind": "not_reached", "play": play, "msg": msg},
                     "failures": [], "recovered": False, "facts": None}) for h in hosts)


def fold_journal(events):
    """{host: {status, failure, failures, recovered, facts}} from the events in order. ``unreachable``
    wins over ``failed``; ``recovered`` (a rescued failure) clears the status, keeping the failure."""
    hosts = {}
    for event in events:
        host = event.get("host")
        kind = event.get("event")
        if not host or kind not in ("failed", "unreachable", "recovered"):
            continue
        state = hosts.setdefault(host, {"status": None, "failure": None, "failures": [], "recovered": False,
                                        "facts": None})
        if event.get("facts"):
            state["facts"] = event["facts"]
        if kind == "recovered":
            if state["status"] == "failed":
                state["status"] = None
                state["recovered"] = True
            continue
        entry = dict((k, event.get(k)) for k in ("play", "task", "role", "action", "msg") if event.get(k))
        entry["kind"] = kind
        state["failures"].append(entry)
        if state["status"] != "unreachable":
            state["status"] = kind
            state["failure"] = entry
    return hosts


# -- records ---------------------------------------------------------------------------------------
def _num(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return round(float(value), 2)


def _fact_checks(facts):
    checks = []
    cufile = facts.get("cufile") or {}
    if cufile.get("valid") is False:
        first = (cufile.get("findings") or [{}])[0]
        detail = "%s error(s)" % (cufile.get("errors") if cufile.get("errors") is not None else "some")
        if first.get("message"):
            detail += ": %s%s" % (first.get("path") + " - " if first.get("path") else "", first["message"])
        checks.append({"check": "cufile.json is valid", "detail": _text(detail)})
    req = facts.get("require_mode") or {}
    if req.get("mode") and req.get("met") is False:
        checks.append({"check": "verdict meets require_mode=%s" % req["mode"],
                       "detail": "verdict is %s%s" % (facts.get("mode"), "" if facts.get("verified") else
                                                      ", not verified (nothing was written, read back and compared)")})
    if facts.get("mode") == "failed":
        checks.append({"check": "cuFile probe", "detail": _text(facts.get("reason"))})
    return checks


def _failure_reason(failure):
    where = failure.get("task") or "a task"
    if failure.get("role"):
        where = "%s (role %s)" % (where, failure["role"])
    if failure.get("kind") == "not_reached":
        return "not reached: %s" % (failure.get("msg") or "the run ended before this host's turn")
    verb = "unreachable during" if failure.get("kind") == "unreachable" else "failed at"
    return "%s %s: %s" % (verb, where, failure.get("msg") or "no message")


def ready_for_gds(facts):
    """The host's verdict meets ``require_mode=gds`` through THE gate (_gds/verdict.gate), with
    the host's own require_proven when it ran with one (default: proof required)."""
    req = facts.get("require_mode") if isinstance(facts.get("require_mode"), dict) else {}
    return bool(facts.get("mode")) and gate(facts, "gds", req.get("proven", True) is not False)[0]


def storage_and_tuned(throughput):
    """(storage, tuned) of a record from ``gds.throughput``: the storage's own O_DIRECT GB/s and the
    GPU/storage ratios, and the throughput mode's figures (None when it did not run or failed)."""
    throughput = throughput if isinstance(throughput, dict) else {}
    storage = {"write_gbps": _num(throughput.get("storage_write_gbps")), "read_gbps": _num(throughput.get("storage_read_gbps")),
               "write_ratio": _num(throughput.get("write_ratio")), "read_ratio": _num(throughput.get("read_ratio"))}
    tuned = throughput.get("tuned") if isinstance(throughput.get("tuned"), dict) else {}
    if tuned.get("error") or (tuned.get("write_gbps") is None and tuned.get("read_gbps") is None):
        return storage, None
    return storage, {"write_gbps": _num(tuned.get("write_gbps")), "read_gbps": _num(tuned.get("read_gbps")),
                     "write_plan": tuned.get("write_plan"), "read_plan": tuned.get("read_plan")}


def ratio_text(storage):
    """``0.90 / 0.95`` (write / read probe-to-storage ratio), ``-`` where unknown."""
    if storage["write_ratio"] is None and storage["read_ratio"] is None:
        return "-"
    return " / ".join("-" if v is None else "%.2f" % v for v in (storage["write_ratio"], storage["read_ratio"]))


def pair_text(figures):
    """``3.90 / 6.80`` (write / read GB/s) of a dict with write_gbps and read_gbps, ``-`` for None."""
    if not figures or (figures["write_gbps"] is None and figures["read_gbps"] is None):
        return "-"
    return " / ".join("-" if v is None else "%.2f" % v for v in (figures["write_gbps"], figures["read_gbps"]))


def build_record(host, facts=None, journal=None, journal_enabled=True, reboot_pending=None):
    """The report record of one host from its gds facts (full or slim), its journal state and
    the reason of a reboot it needs but was not allowed (role gds_reboot)."""
    journal = journal or {}
    facts = slim_facts(facts) or slim_facts(journal.get("facts")) or {}
    status = journal.get("status") or ("ok" if facts.get("mode") else "unknown")
    reasons = []
    failure = journal.get("failure")
    if failure and (status in ("failed", "unreachable") or failure.get("kind") == "not_reached"):
        reasons.append(_failure_reason(failure))
    quoted = failure.get("msg") or "" if reasons else ""
    reasons += [_text(r) for r in facts.get("reasons") or ([facts["reason"]] if facts.get("reason") else [])
                if _text(r) not in quoted]  # the failure message often quotes the verdict's reason already
    if not facts.get("mode") and status == "unknown" and not failure:
        reasons.append("no GDS facts from this host in this run and no failure recorded" + (
            "" if journal_enabled else " (enable the gpudirect.storage.gds_report callback to record "
                                       "why hosts failed or were unreachable)"))
    versions = facts.get("versions") or {}
    throughput = facts.get("throughput") or {}
    checks = [{"check": "task: %s" % (f.get("task") or "?"), "detail": _text(
        ("unreachable: " if f.get("kind") == "unreachable" else "") + (f.get("msg") or ""))}
        for f in journal.get("failures") or []]
    checks += _fact_checks(facts)
    if reboot_pending:
        checks.append({"check": "reboot", "detail": "pending: %s" % _text(reboot_pending)})
    storage, tuned = storage_and_tuned(throughput)
    return {
        "host": host,
        "source": "ssh",
        "status": status,
        "mode": facts.get("mode") or "unknown",
        "ready": status == "ok" and ready_for_gds(facts),
        "reason": "; ".join(r for r in reasons if r),
        "reasons": [r for r in reasons if r],
        "verified": bool(facts.get("verified")),
        "proven": bool(facts.get("proven")),
        "versions": dict((k, versions.get(k)) for k in VERSION_KEYS),
        "throughput": {"write_gbps": _num(throughput.get("write_gbps")), "read_gbps": _num(throughput.get("read_gbps")),
                       "size_mb": throughput.get("size_mb")},
        "storage": storage,
        "tuned": tuned,
        "gpus": list(facts.get("gpus") or []),
        "failed_checks": checks,
        "failure": dict((k, v) for k, v in (failure or {}).items() if k != "kind") if failure else None,
        "recovered": bool(journal.get("recovered")),
        "reboot_pending": _text(reboot_pending) or None,
    }


def k8s_record(node):
    """The report record of a Kubernetes node from its gds_node_probe result (``nodes[]``)."""
    failure = node.get("failure") or None
    journal = None
    if failure:
        entry = {"kind": "failed", "task": "gds_node_probe pod", "msg": _said(failure.get("message"))}
        journal = {"status": "failed", "failure": entry}
        journal["failures"] = [dict(journal["failure"])]
    rec = build_record(node.get("name") or "?", node if node.get("mode") and not failure else None, journal)
    if failure:
        rec["mode"] = "failed"
    vol = node.get("volume") or {}  # proven through a claim (gds_node_probe storage_class)
    rec.update(source="kubernetes", pod=node.get("pod"), volume="PV %s (%s, StorageClass %s)" % (
        vol["pv"], vol.get("path"), vol.get("storage_class")) if vol.get("pv") else None)
    return rec


def natural_key(name):
    """Sort key that puts gpu-2 before gpu-10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part.lower()) for part in re.split(r"(\d+)", name)]


def build_records(hosts, facts_by_host, journal_hosts=None, journal_enabled=True, reboot_pending=None, k8s_nodes=None):
    """Records for ``hosts``, hosts only in the journal and gds_node_probe's Kubernetes nodes, in natural
    name order (a name probed both ways has one record per source)."""
    journal_hosts = journal_hosts or {}
    names = sorted(set(hosts or []) | set(journal_hosts), key=natural_key)
    pending = reboot_pending or {}
    records = [build_record(h, (facts_by_host or {}).get(h), journal_hosts.get(h), journal_enabled, pending.get(h))
               for h in names]
    records += [k8s_record(n) for n in k8s_nodes or [] if isinstance(n, dict)]
    return sorted(records, key=lambda r: (natural_key(r["host"]), r["source"]))


def summarize(records):
    """Counts by mode and by status, and the hosts that really do GDS (``ready``: verified and
    proven, see :func:`ready_for_gds`)."""
    by_mode = dict((m, 0) for m in MODES)
    by_status = dict((s, 0) for s in STATUSES)
    for rec in records:
        by_mode[rec["mode"]] = by_mode.get(rec["mode"], 0) + 1
        by_status[rec["status"]] = by_status.get(rec["status"], 0) + 1
    tput = [r["throughput"] for r in records if r["throughput"]["write_gbps"] is not None]
    return {
        "hosts": len(records), "by_mode": by_mode, "by_status": by_status,
        "gds_ready": sum(1 for r in records if r.get("ready")),
        "not_gds": [r["host"] for r in records if not r.get("ready")],
        "probed": len(tput),
        "max_gbps": max([t["write_gbps"] or 0 for t in tput] + [t["read_gbps"] or 0 for t in tput] + [0]),
    }


def build_report(records, title="GDS fleet readiness", generated=None, run=None):
    """The whole document written to gds-fleet.json."""
    return {"schema": SCHEMA, "title": title, "generated": generated, "run": run or {},
            "summary": summarize(records), "hosts": records}


def fallback_report(journal_text, hosts, facts, play, play_hosts, ran, playbooks, generated):
    """The report of a run that ended before its report play, from what the callback saw:
    ``hosts`` met so far, their slim ``facts``, the journal, and the hosts of the last ``play``
    that never produced a result in it (``ran``: those that did)."""
    hosts = [h for h in hosts if h not in ("localhost", "127.0.0.1")]
    journal = fold_journal(parse_journal(journal_text))
    skipped = [h for h in play_hosts if h not in ran and h not in journal]
    journal.update(not_reached(play, skipped))
    records = build_records(hosts, facts, journal)
    return build_report(records, title="GDS fleet readiness (run ended before its report play)",
                        generated=generated, run={"playbooks": playbooks, "journal": True,
                                                  "writer": "callback fallback"})


def same_report(old, new):
    """True when two reports say the same of the same playbooks' run (the generation time is
    ignored: a re-run that finds nothing new leaves the report of the run that wrote it)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return False
    return dict((k, v) for k, v in old.items() if k != "generated") == dict((k, v) for k, v in new.items() if k != "generated")


def to_json(report):
    return json.dumps(report, indent=2, sort_keys=True) + "\n"


RATIO_NOTE = ("GPU/storage: the probe's GB/s over the storage's own O_DIRECT GB/s (the same file into host "
              "memory, same run, best of 2). Below 1: the GPU data path loses that share of the storage's speed; "
              "1 or above: the storage is the limit (the GPU path kept up with, or outran, one O_DIRECT stream).")
