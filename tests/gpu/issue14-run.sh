#!/usr/bin/env bash
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# Issue 14 acceptance on the real H100 host: a verdict that cannot be faked. Called by
# tests/gpu/device-run.sh after its verify runs (same environment: ansible on PATH,
# ANSIBLE_CONFIG / ANSIBLE_COLLECTIONS_PATH exported, the loop ext4 prepared):
#
#   bash tests/gpu/issue14-run.sh PROBE_DIR WORK_DIR OUT_DIR
#
# Every verify.yml run is `-i localhost,` from a directory that is NOT the checkout (cd /), with
# no GDS_REPORT_DIR, so the report must land in <checkout>/reports whatever the cwd:
#   (e) require_mode compat, probe on PROBE_DIR        -> rc 0, compat, verified, require met
#   (f) require_mode compat, probe false               -> rc 2, "nothing was written"
#   (g) probe on /dev/shm                              -> reason says tmpfs and O_DIRECT, no
#                                                         "could not classify"
#   (h) probe_path auto (the default)                  -> storage.auto: what it picked, or the
#                                                         /var/tmp fallback with a warning naming
#                                                         each mount it left out and why
#   report of (e): <checkout>/reports/gds-fleet.json covers localhost (compat, verified)
# Prints "issue 14: PASS" or "issue 14: FAIL"; files in OUT_DIR: issue14-summary.txt,
# issue14-facts.json, issue14-report.json.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
D=${1:?probe dir}
W=${2:?work dir}
OUT=${3:?out dir}
mkdir -p "$W/logs14"
unset GDS_REPORT_DIR
PY=${GDS_ISSUE14_PYTHON:-/usr/bin/python3}

run14() {  # name, rc file, extra vars (JSON)
  local name=$1 vars=$2 t1 rc
  echo "--- issue14 ($name): $vars"
  t1=$(date +%s.%N)
  (cd / && ansible-playbook -v "$REPO/playbooks/verify.yml" -i localhost, -c local \
      -e ansible_python_interpreter="$PY" -e "$vars") > "$W/logs14/verify-$name.log" 2>&1
  rc=$?
  echo "$rc" > "$W/logs14/rc-$name"
  echo "rc=$rc wall=$(python3 -c "import time; print(round(time.time() - $t1, 2))") s"
  [ "$name" = e ] && cp "$REPO/reports/gds-fleet.json" "$OUT/issue14-report.json" 2>/dev/null
  grep -E '^\[WARNING\]|^fatal|hosts, .* ready for GDS|Report: ' "$W/logs14/verify-$name.log" | cut -c1-400
}
rm -f "$REPO/reports/gds-fleet.json"
run14 e '{"gds_verify_probe_path": ["'"$D"'"], "gds_verify_probe_size_mb": 64, "gds_verify_require_mode": "compat"}'
run14 f '{"gds_verify_probe": false, "gds_verify_require_mode": "compat"}'
run14 g '{"gds_verify_probe_path": ["/dev/shm"], "gds_verify_probe_size_mb": 16}'
run14 h '{"gds_verify_probe_size_mb": 64}'
tar -C "$W" -czf "$OUT/issue14-logs.tar.gz" logs14

python3 - "$W/logs14" "$OUT" "$REPO/reports/gds-fleet.json" <<'PY' | tee "$OUT/issue14-summary.txt"
import json, os, sys
logs, out, report_path = sys.argv[1], sys.argv[2], sys.argv[3]
facts, rcs, msgs = {}, {}, {}
for name in "efgh":
    rcs[name] = int(open(os.path.join(logs, "rc-" + name)).read().strip() or 99)
    for line in open(os.path.join(logs, "verify-%s.log" % name), errors="replace"):
        for head in ("ok: [localhost] => ", "fatal: [localhost]: FAILED! => "):
            if line.startswith(head) and '"gds": {' in line:
                res = json.loads(line[len(head):])
                facts[name], msgs[name] = res["ansible_facts"]["gds"], res.get("msg") or ""
json.dump(facts, open(os.path.join(out, "issue14-facts.json"), "w"), indent=1, sort_keys=True)
results = []
def check(name, ok, what):
    print("  [%s] %s: %s" % ("PASS" if ok else "FAIL", name, what))
    results.append(bool(ok))
for name in "efgh":
    g = facts.get(name) or {}
    print("(%s) rc=%s mode=%s verified=%s proven=%s require=%s" % (name, rcs[name], g.get("mode"), g.get("verified"),
                                                                  g.get("proven"), g.get("require_mode")))
    print("    reason: %s" % g.get("reason"))
    print("    msg: %s" % msgs.get(name, "")[:400])
e, f, g, h = (facts.get(n) or {} for n in "efgh")
check("e", rcs["e"] == 0 and e.get("mode") == "compat" and e.get("verified") is True
      and (e.get("require_mode") or {}).get("met") is True,
      "require_mode compat passes with a verified probe on the prepared loop ext4")
check("f", rcs["f"] != 0 and f.get("verified") is False and "nothing was written" in msgs.get("f", ""),
      "require_mode compat with probe false fails saying nothing was written")
reason_g = g.get("reason") or ""
check("g", "tmpfs" in reason_g and "O_DIRECT" in reason_g and "could not classify" not in reason_g
      and (g.get("storage", {}).get("probe_paths") or [{}])[0].get("class", {}).get("kind") == "tmpfs",
      "a probe on /dev/shm says tmpfs / O_DIRECT, not a libcufile classification error")
auto = (h.get("storage") or {}).get("auto") or {}
print("    auto picked=%s fallback=%s skipped=%s" % (auto.get("picked"), auto.get("fallback"),
                                                   [(s["mount_point"], s["why"][:90]) for s in auto.get("skipped") or []]))
check("h", bool(auto) and (auto.get("picked") or (auto.get("fallback") and auto.get("skipped")
                                                  and "probe_path=auto found no" in " ".join(h.get("warnings") or []))),
      "probe_path auto picks what it can, or falls back to /var/tmp saying why for each mount")
try:
    report = json.load(open(os.path.join(out, "issue14-report.json")))
except (IOError, OSError, ValueError) as exc:
    report = {"hosts": [], "error": str(exc)}
recs = dict((r["host"], r) for r in report.get("hosts") or [])
print("report of (e): %s hosts %s summary %s" % (len(recs), sorted(recs), report.get("summary", report.get("error"))))
check("report", "localhost" in recs and recs["localhost"]["mode"] == "compat" and recs["localhost"]["verified"]
      and report_path.endswith("/reports/gds-fleet.json"),
      "verify.yml -i localhost, (run from /) wrote <checkout>/reports/gds-fleet.json with localhost")
print("issue 14: %s" % ("PASS" if all(results) else "FAIL"))
PY
