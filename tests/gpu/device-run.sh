#!/usr/bin/env bash
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# The gds_facts proof on the real H100 host (shared/device/GPU-HOST.md), in ONE invocation from
# the repository root, as root, with the wheels of tests/gpu/wheels.txt carried in .whl/:
#
#   bash tests/gpu/device-run.sh            (files land in $OUT, default build/device-out)
#
# 1. installs the carried wheels into /tmp/site (ansible-core 2.20 + jsonschema + kvikio);
# 2. captures the host files the parsers read (for tests/fixtures/gds);
# 3. prepares /mnt/gds (lib.sh: loop ext4 + udev data, microVM test preparation);
# 4. runs playbooks/verify.yml against localhost (module on /usr/bin/python3, stdlib only):
#    (a) probe_path=/mnt/gds, 256 MiB      -> expect compat, reason names the missing nvidia_fs
#    (b) probe_path=/var/tmp (root fs)      -> expect failed, reason quotes cufile.log udev lines
#    (c) CUFILE_ENV_PATH_JSON rejected      -> expect failed, libcufile's stdout line in the reason
#    (d) CUFILE_ENV_PATH_JSON that aborts   -> expect failed with SIGABRT, the module returns
# 5. runs tests/gpu/issue14-run.sh (the gate needs a verified probe, tmpfs named as tmpfs,
#    probe_path auto, verify.yml -i localhost, writes <checkout>/reports with the host);
# 6. runs bench/gpu-probe (probe vs kvikio vs dd; gds_facts wall time) - GDS_DEVICE_RUN_BENCH:
#    full (default), short (64/256 MiB, 3 rounds, ~2 min) or 0 (skipped: the run takes ~3 min);
# 7. prints a compact summary (also $OUT/summary.txt). Budget: well under 8 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/lib.sh
run_start device-out /tmp/gds-device-run run.log

SITE=${GDS_DEVICE_RUN_SITE:-/tmp/site}
BENCH=${GDS_DEVICE_RUN_BENCH:-full}
NEED="ansible, jsonschema"; [ "$BENCH" = 0 ] || NEED="$NEED, kvikio"
step "install carried wheels into $SITE"
if [ -x "$SITE/bin/ansible-playbook" ] && PYTHONPATH=$SITE python3 -c "import $NEED" 2>/dev/null; then
  echo "already installed (the command line installed them first)"
else
  install_wheels
fi
export PYTHONPATH=$SITE PATH=$SITE/bin:$PATH
ansible --version | head -1
python3 -c 'import jsonschema; print("jsonschema", jsonschema.__version__)'
[ "$BENCH" = 0 ] || python3 -c 'import kvikio; print("kvikio", kvikio.__version__)'
/usr/bin/python3 -V

step "capture host files for tests/fixtures/gds"
{
  for f in /proc/driver/nvidia/version /proc/modules /proc/self/mounts /proc/cmdline /proc/sys/kernel/osrelease \
           /sys/module/nvidia/taint /proc/driver/nvidia-fs/version /proc/driver/nvidia-fs/stats; do
    echo "##### $f"; cat "$f" 2>&1
  done
  echo "##### nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version --format=csv,noheader"
  nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version --format=csv,noheader 2>&1
  echo "##### nvidia-smi -q -d MEMORY"; nvidia-smi -q -d MEMORY 2>&1
  echo "##### libcufile"; ls -l /usr/local/cuda/lib64/libcufile* 2>&1; readlink -f /usr/local/cuda/lib64/libcufile.so.0
  echo "##### /etc/cufile.json"; ls -l /etc/cufile.json; readlink -f /etc/cufile.json
  echo "##### ofed_info -s"; ofed_info -s 2>&1
  echo "##### efivars / iommu / nvme"; ls /sys/firmware/efi/efivars 2>&1 | head -3
  ls /sys/kernel/iommu_groups 2>&1 | wc -l; ls /sys/class/nvme 2>&1
  echo "##### environment"; echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; command -v python3
} > "$OUT/captures.txt" 2>&1
echo "captured $(wc -l < "$OUT/captures.txt") lines"

probe_dir GDS_DEVICE_RUN_PROBE_DIR
collection_env
export ANSIBLE_CALLBACK_RESULT_FORMAT=json
# (c) rejected: mismatched posix_pool_slab arrays (libcufile: "error reading config ...", -22)
printf '{ "properties": { "posix_pool_slab_size_kb": [4, 1024, 16384], "posix_pool_slab_count": [128, 64] } }\n' \
  > "$W/cufile-rejected.json"
# (d) aborts: a section that must be an object is an array (jsoncpp throws, libcufile aborts)
printf '{ "properties": [] }\n' > "$W/cufile-aborts.json"

verify() {  # name, extra-vars (JSON)
  local name=$1 vars=$2 t1
  step "verify.yml ($name): $vars"
  t1=$(date +%s.%N)
  ansible-playbook -v playbooks/verify.yml -i localhost, -c local -e ansible_python_interpreter=/usr/bin/python3 \
    -e "$vars" > "$W/logs/verify-$name.log" 2>&1
  echo "rc=$? wall=$(python3 -c "import time; print(round(time.time() - $t1, 2))") s" | tee -a "$W/logs/verify-$name.log"
  grep -E '^(fatal|ok: \[localhost\] => \{"msg")|msg:|"msg": "localhost' "$W/logs/verify-$name.log" | cut -c1-600
}
verify a '{"gds_verify_probe_path": ["'"$D"'"], "gds_verify_probe_size_mb": 256, "gds_verify_require_mode": "compat"}'
verify b '{"gds_verify_probe_path": ["/var/tmp"], "gds_verify_probe_size_mb": 256}'
verify c '{"gds_verify_probe_path": ["'"$D"'"], "gds_verify_probe_size_mb": 64, "gds_verify_cufile_env_path_json": "'"$W"'/cufile-rejected.json"}'
verify d '{"gds_verify_probe_path": ["'"$D"'"], "gds_verify_probe_size_mb": 64, "gds_verify_cufile_env_path_json": "'"$W"'/cufile-aborts.json"}'
cp "$W"/cufile-*.json "$W/logs/" && tar -C "$W" -czf "$OUT/verify-logs.tar.gz" logs

step "summary of the four verify.yml runs"
python3 - "$W/logs" "$OUT/facts.json" <<'PY' | tee "$OUT/summary.txt"
import json, sys, os
logs, out = sys.argv[1], sys.argv[2]
facts = {}
for name in "abcd":
    gds = None
    for line in open(os.path.join(logs, "verify-%s.log" % name), errors="replace"):
        for head in ("ok: [localhost] => ", "fatal: [localhost]: FAILED! => "):
            if line.startswith(head) and '"gds": {' in line:
                gds = json.loads(line[len(head):])["ansible_facts"]["gds"]
    facts[name] = gds
json.dump(facts, open(out, "w"), indent=1, sort_keys=True)
def check(name, ok, what):
    print("  [%s] %s: %s" % ("PASS" if ok else "FAIL", name, what))
    return ok
results = []
for name in "abcd":
    g = facts[name] or {}
    t = g.get("throughput") or {}
    p = ((g.get("probe") or {}).get("paths") or [{}])[0]
    print("(%s) mode=%s verified=%s write=%s read=%s GB/s bytes=%s libcufile=%s driver=%s (%s) cufile.valid=%s module=%ss"
          % (name, g.get("mode"), g.get("verified"), t.get("write_gbps"), t.get("read_gbps"),
             (p.get("verify") or {}).get("verified_bytes"), (g.get("versions") or {}).get("libcufile"),
             (g.get("versions") or {}).get("nvidia_driver"), (g.get("versions") or {}).get("nvidia_kernel_module"),
             (g.get("cufile") or {}).get("valid"), (g.get("timing") or {}).get("total_s")))
    print("    reason: %s" % g.get("reason"))
reason = lambda n: (facts[n] or {}).get("reason") or ""
a = facts["a"] or {}
results.append(check("a", a.get("mode") == "compat" and "nvidia_fs" in reason("a") and a.get("verified")
                     and ((a.get("probe") or {}).get("paths") or [{}])[0].get("verify", {}).get("verified_bytes") == 256 << 20
                     and (a.get("throughput") or {}).get("write_gbps"), "compat, names nvidia_fs, 256 MiB verified, GB/s"))
results.append(check("b", (facts["b"] or {}).get("mode") == "failed"
                     and ("udev" in reason("b") or "volume attributes" in reason("b")), "failed, quotes cufile.log udev/volume lines"))
results.append(check("c", (facts["c"] or {}).get("mode") == "failed" and "libcufile printed: error reading config" in reason("c"),
                     "failed, libcufile's stdout line in the reason, module returned"))
results.append(check("d", (facts["d"] or {}).get("mode") == "failed" and "SIGABRT" in reason("d"), "failed by SIGABRT, module returned"))
print("verify runs: %s" % ("PASS" if all(results) else "FAIL"))
PY

step "issue 14: the gate, tmpfs, probe_path auto, the report of verify.yml -i localhost,"
bash tests/gpu/issue14-run.sh "$D" "$W" "$OUT"
cat "$OUT/issue14-summary.txt" >> "$OUT/summary.txt"

case "$BENCH" in
  0) step "bench/gpu-probe skipped (GDS_DEVICE_RUN_BENCH=0)" ;;
  short)
    step "bench/gpu-probe, short (probe vs kvikio vs dd on $D)"
    timeout 150 python3 bench/gpu-probe --dir "$D" --sizes 64,256 --reps 3 --threads 0,4 --facts-reps 1 \
      > "$OUT/bench.txt" 2>&1
    echo "bench rc=$?"; sed -n '/^medians/,$p' "$OUT/bench.txt" | tee -a "$OUT/summary.txt" ;;
  *)
    step "bench/gpu-probe (probe vs kvikio vs dd on $D; gds_facts wall time)"
    timeout 330 python3 bench/gpu-probe --dir "$D" --sizes 64,256,1024 --reps 5 --threads 0,1,4,8 --facts-reps 3 \
      > "$OUT/bench.txt" 2>&1
    echo "bench rc=$?"; sed -n '/^medians/,$p' "$OUT/bench.txt" | tee -a "$OUT/summary.txt" ;;
esac

step "done in $(( $(date +%s) - T0 )) s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
cat "$OUT/summary.txt"
