#!/usr/bin/env bash
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# The throughput figure on the real H100 host (shared/device/GPU-HOST.md), in ONE
# invocation from the repository root, as root, with the wheels of tests/gpu/wheels.txt carried
# in .whl/ (ansible-core, kvikio; the command line installs them first, see tests/gpu/README.md):
#
#   bash tests/gpu/throughput-run.sh        (everything on stdout; files also in $OUT)
#
# 1. prepares /mnt/gds (lib.sh: loop ext4 + udev data, microVM test preparation);
# 2. bench/gpu-probe at 256 MiB and 1 GiB, 7 interleaved rounds: the default probe (probe-t0)
#    with the storage's own O_DIRECT speed and their ratio, the throughput mode (probe-tput) and
#    every kvikio variant (defaults, 4/8/16 threads, through libcufile with 1 and 4 threads);
#    PASS/FAIL: probe-tput >= 0.95x the best kvikio variant, write and read, per size; the
#    whole gds_facts task with the default 256 MiB probe < 5 s;
# 3. gds_facts with probe_throughput=true at 1 GiB (module on /usr/bin/python3) and the fleet
#    report's Markdown of it (default probe figures, storage ratio, throughput mode).
# Only 8 files come back from $OUT, so the summary is printed to stdout. Budget: ~6 minutes.
#
# Dry run elsewhere with the C stand-ins (tests/fixtures/cuda_standin, built by standin.build):
#   GDS_TPUT_PROBE_DIR=/var/tmp/x GDS_TPUT_ARGS="--sizes 16,32 --reps 1 --no-kvikio --facts-reps 0
#   --python $(command -v python3) --cuda-lib LIBS/libcuda.so.1 --cufile-lib LIBS/libcufile.so.0"
#   GDS_TPUT_FACTS=0 OUT=/tmp/out bash tests/gpu/throughput-run.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/lib.sh
run_start device-out-throughput /tmp/gds-throughput-run run.log

step "tools"
command -v ansible >/dev/null && ansible --version | head -1
python3 -c 'import kvikio; print("kvikio", kvikio.__version__)' 2>&1 | tail -1
/usr/bin/python3 -V 2>&1; nproc

probe_dir GDS_TPUT_PROBE_DIR
collection_env

# shellcheck disable=SC2086  # GDS_TPUT_ARGS is a list of options on purpose
step "bench/gpu-probe: default probe + storage ratio, throughput mode vs every kvikio variant"
timeout 420 python3 bench/gpu-probe --dir "$D" ${GDS_TPUT_ARGS:---sizes 256,1024 --reps 7 --threads 0 --facts-reps 3} \
  > "$OUT/bench.txt" 2>&1
echo "bench rc=$?"
sed -n '/^medians/,$p' "$OUT/bench.txt" > "$OUT/summary.txt"
grep -E 'ERROR|Traceback' "$OUT/bench.txt" | head -5

if [ "${GDS_TPUT_FACTS:-1}" != 0 ]; then
  step "gds_facts probe_throughput=true, 1 GiB, on $D (module on /usr/bin/python3) and the fleet report"
  ANSIBLE_LOAD_CALLBACK_PLUGINS=1 ANSIBLE_STDOUT_CALLBACK=ansible.builtin.oneline timeout 150 \
    ansible localhost -i localhost, -c local -m gpudirect.storage.gds_facts \
    -a "probe_path=$D probe_size_mb=1024 probe_throughput=true probe_timeout=120" \
    -e ansible_python_interpreter=/usr/bin/python3 > "$W/facts.txt" 2>&1
  echo "gds_facts rc=$?"
  PYTHONPATH=$W/coll${PYTHONPATH:+:$PYTHONPATH} python3 - "$W/facts.txt" "$OUT/facts-throughput.json" <<'PY' | tee -a "$OUT/summary.txt"
import json, re, sys
from ansible_collections.gpudirect.storage.plugins.plugin_utils._report import fleet, markdown
text = open(sys.argv[1]).read()
m = re.search(r"=> (\{.*\})\s*$", text.strip().splitlines()[-1] if text.strip() else "")
if not m:
    print("gds_facts gave no facts:\n" + text[-1500:])
    sys.exit(0)
gds = json.loads(m.group(1))["ansible_facts"]["gds"]
json.dump(gds, open(sys.argv[2], "w"), indent=1, sort_keys=True)
print("\ngds_facts probe_throughput=true: mode=%s verified=%s module %s s" % (
    gds.get("mode"), gds.get("verified"), (gds.get("timing") or {}).get("total_s")))
print("gds.throughput %s" % json.dumps(gds.get("throughput"), sort_keys=True))
entry = ((gds.get("probe") or {}).get("paths") or [{}])[0]
for row in (entry.get("tuned") or {}).get("candidates") or []:
    print("  candidate %-32s write %s read %s %s" % (row.get("label"), row.get("write_gbps"), row.get("read_gbps"),
                                                    json.dumps(row["error"]) if row.get("error") else ""))
records = fleet.build_records(["localhost"], {"localhost": gds}, journal_enabled=False)
print("\nfleet report (Markdown) of this host:\n")
print(markdown.render_markdown(fleet.build_report(records, generated="throughput-run")))
PY
fi

step "done in $(( $(date +%s) - T0 )) s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
echo; echo "##### summary"; cat "$OUT/summary.txt"
