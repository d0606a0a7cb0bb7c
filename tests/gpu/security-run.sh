#!/usr/bin/env bash
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# The probe's file and the libcufile release on the real H100 host (shared/device/GPU-HOST.md), in
# ONE invocation from the repository root, as root, with .whl (ansible-core and jsonschema of
# tests/gpu/wheels.txt) and .whl-cufile (nvidia-cufile 1.20, see fetch-cufile-wheels.sh) carried:
#
#   bash tests/gpu/security-run.sh        (files land in $OUT, default build/device-out-security)
#
# (a) probe_size_mb=7000 probe_timeout=5 on /mnt/gds: failed, timed out (during cuFileWrite on the
#     H100, cuFileRead on a faster H200), and nothing left in the probe directory (ls -la, du);
# (b) SIGKILL of the module in the middle of the write: the probe child goes with it, no bytes
#     stay; the next run removes the dead run's empty private directory;
# (c) the throughput mode: per-thread cuFile handles on duplicates of the one descriptor;
# (d) a data point: does cuFileHandleRegister accept an O_DIRECT file unlinked before it (1.15, 1.20)?
# (e) cufile_lib = the wheel's nvidia/cu13/lib/libcufile.so.0: release 1.20 from cuFileGetVersion;
#     with gpu_bounce_buffer_slab_config "x" an error validated against 1.20 (and against the
#     host's 1.15 for contrast);
# (f) tests/gpu/device-run.sh with GDS_DEVICE_RUN_BENCH=0 (verify cases a-d and issue 14).
# Summary: $OUT/security-summary.txt (PASS/FAIL per case). Budget: about 5 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/lib.sh
run_start device-out-security /tmp/gds-security-run security-run.log

SITE=${GDS_DEVICE_RUN_SITE:-/tmp/site}
step "install carried wheels into $SITE"
export PYTHONPATH=$SITE PATH=$SITE/bin:$PATH
if command -v ansible > /dev/null && python3 -c "import ansible, jsonschema" 2>/dev/null; then
  echo "already installed"
else
  install_wheels
fi
ansible --version | head -1

probe_dir GDS_SECURITY_RUN_PROBE_DIR
collection_env
export ANSIBLE_CALLBACK_RESULT_FORMAT=json
PY=/usr/bin/python3

facts() {  # name, module arguments: gds_facts through its action plugin, output in $W/<name>.log
  local name=$1; shift
  ansible localhost -i localhost, -c local -e ansible_python_interpreter=$PY -m gpudirect.storage.gds_facts \
    -a "$*" > "$W/$name.log" 2>&1
  echo "($name) ansible rc=$?"
  python3 - "$W/$name.log" "$W/$name.json" <<'PY'
import json, sys
text = open(sys.argv[1], errors="replace").read()
start = text.find("=> {")
gds = json.JSONDecoder().raw_decode(text[start + 3:])[0].get("ansible_facts", {}).get("gds", {}) if start >= 0 else {}
json.dump(gds, open(sys.argv[2], "w"), indent=1, sort_keys=True)
probe, lib, cufile = gds.get("probe") or {}, gds.get("libcufile") or {}, gds.get("cufile") or {}
path = (probe.get("paths") or [{}])[0]
print("  mode=%s verified=%s left_behind=%s" % (gds.get("mode"), gds.get("verified"), probe.get("left_behind")))
print("  reason: %s" % (gds.get("reason") or "")[:600])
print("  path: file=%s unlinked_after=%s removed=%s" % (path.get("file"), path.get("unlinked_after"), path.get("removed")))
print("  libcufile: path=%s version=%s api_version=%s" % (lib.get("path"), lib.get("version"), lib.get("api_version")))
print("  cufile: release=%s valid=%s errors=%s warnings=%s validator=%s note=%s" % (
    cufile.get("release"), cufile.get("valid"), cufile.get("errors"), cufile.get("warnings"),
    cufile.get("validator"), cufile.get("note")))
for f in (cufile.get("findings") or [])[:3]:
    print("  finding: %s %s" % (f.get("severity"), f.get("message")))
PY
}
left() {  # what is in the probe directory, links not followed
  echo "  ls -la $D:"; ls -la "$D" | sed 's/^/    /'
  echo "  du -sb $D: $(du -sb "$D" | cut -f1) bytes; regular files: $(find "$D" -type f | wc -l), file bytes: $(find "$D" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'); probe entries: $(find "$D" -maxdepth 1 -name '.gds_facts_probe.*' | wc -l); df: $(df -m --output=used,avail "$D" | tail -1) MiB used/avail"
}

BIG=${GDS_SECURITY_RUN_BIG_MB:-7000}
AVAIL=$(df -m --output=avail "$D" | tail -1 | tr -d ' ')
if [ "$AVAIL" -lt $((BIG + BIG / 16 + 24)) ]; then BIG=$(( (AVAIL - 24) * 16 / 17 )); echo "only $AVAIL MiB free: probe_size_mb=$BIG"; fi
step "(a) probe_size_mb=$BIG probe_timeout=5 on $D"
left
facts a "probe_path=$D probe_size_mb=$BIG probe_timeout=5"
left | tee "$W/a-left.txt"

step "(b) SIGKILL of the module in the middle of the write"
KILL_MB=${GDS_SECURITY_RUN_KILL_MB:-4000}
ansible localhost -i localhost, -c local -e ansible_python_interpreter=$PY -m gpudirect.storage.gds_facts \
  -a "probe_path=$D probe_size_mb=$KILL_MB probe_timeout=120" > "$W/b.log" 2>&1 &
AP=$!
child=""
for _i in $(seq 1 600); do  # the probe child (its -c source holds the protocol marker), its file unlinked
  child=$(pgrep -n -f '@@GDS_PROBE@@' || true)
  [ -n "$child" ] && ls -l "/proc/$child/fd" 2>/dev/null | grep -q "$D/.*(deleted)" && break
  sleep 0.05
done
sleep 1
module=$( [ -n "$child" ] && ps -o ppid= -p "$child" | tr -d ' ')
echo "  probe child $child, module $module: $(ps -o args= -p "$module" 2>/dev/null | cut -c1-80)"
echo "  child's open probe file: $(ls -l "/proc/$child/fd" 2>/dev/null | grep -o "$D/.*")"
echo "  df before the kill: $(df -m --output=used "$D" | tail -1) MiB used"
[ -n "$module" ] && kill -KILL "$module"
wait "$AP"; echo "  ansible rc=$? (the module was killed)"
sleep 1
state=$( [ -n "$child" ] && sed 's/.*) //' "/proc/$child/stat" 2>/dev/null | cut -d' ' -f1)
case "$state" in  # kill -0 also answers for a zombie: an exited child its new parent has not reaped yet
  ""|Z) echo "  probe child gone${state:+ (exited, not reaped yet: state Z)}" ;;
  *) echo "  probe child ALIVE after the module's SIGKILL (state $state)" ;;
esac | tee "$W/b-kill.txt"
left | tee "$W/b-left.txt"
facts b2 "probe_path=$D probe_size_mb=64"
left | tee "$W/b2-left.txt"

step "(c) throughput mode on $D: per-thread handles on duplicates of the one descriptor"
facts c "probe_path=$D probe_size_mb=64 probe_throughput=true"
python3 - "$W/c.json" <<'PY'
import json, sys
gds = json.load(open(sys.argv[1]))
tuned = ((gds.get("probe") or {}).get("paths") or [{}])[0].get("tuned") or {}
for row in tuned.get("candidates") or []:
    print("  %-28s write %s read %s %s" % (row.get("label"), row.get("write_gbps"), row.get("read_gbps"), row.get("error") or ""))
print("  tuned: write %s (%s) read %s (%s) verify %s error %s" % (tuned.get("write_gbps"), tuned.get("write_label"),
      tuned.get("read_gbps"), tuned.get("read_label"), (tuned.get("verify") or {}).get("ok"), tuned.get("error")))
PY

step "(e) the wheel's libcufile 1.20"
WHEEL_LIB=${GDS_SECURITY_RUN_WHEEL_LIB:-}
if [ -z "$WHEEL_LIB" ]; then
  python3 - "$W/wheel" .whl-cufile/nvidia_cufile-1.20*.whl <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[2]) as z:
    z.extractall(sys.argv[1], [m for m in z.namelist() if m.endswith("/lib/libcufile.so.0")])
PY
  WHEEL_LIB=$(ls "$W"/wheel/nvidia/*/lib/libcufile.so.0)
fi
echo "  $WHEEL_LIB ($(stat -c %s "$WHEEL_LIB") bytes)"
printf '{ "properties": { "gpu_bounce_buffer_slab_config": "x" } }\n' > "$W/slab-x.json"
facts e1 "probe_path=$D probe_size_mb=64 cufile_lib=$WHEEL_LIB"
facts e2 "probe_path=$D probe_size_mb=64 cufile_lib=$WHEEL_LIB cufile_env_path_json=$W/slab-x.json"
facts e3 "probe_path=$D probe_size_mb=64 cufile_env_path_json=$W/slab-x.json"
left | tee "$W/e-left.txt"

step "(d) cuFileHandleRegister of an O_DIRECT file unlinked before it (data point)"
for LIB in ${GDS_SECURITY_RUN_SYSTEM_LIB:-/usr/local/cuda/lib64/libcufile.so.0} "$WHEEL_LIB"; do
  (cd "$W" && python3 - "$D" "$LIB" <<'PY'
import ctypes as c, os, sys
d, lib = sys.argv[1:3]
class Err(c.Structure): _fields_ = [("err", c.c_int), ("cu_err", c.c_int)]
class Handle(c.Union): _fields_ = [("fd", c.c_int), ("handle", c.c_void_p)]
class Descr(c.Structure): _fields_ = [("type", c.c_int), ("handle", Handle), ("fs_ops", c.c_void_p)]
cuda = c.CDLL("libcuda.so.1")
dev, ctx = c.c_int(0), c.c_void_p()
rc = [cuda.cuInit(0), cuda.cuDeviceGet(c.byref(dev), 0), cuda.cuDevicePrimaryCtxRetain(c.byref(ctx), dev),
      cuda.cuCtxSetCurrent(ctx)]
cf = c.CDLL(lib)
for name in ("cuFileDriverOpen", "cuFileHandleRegister"):
    getattr(cf, name).restype = Err
fd = os.open(os.path.join(d, ".unlinked-register-test"), os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_DIRECT, 0o600)
os.unlink(os.path.join(d, ".unlinked-register-test"))
opened = cf.cuFileDriverOpen()
descr = Descr(type=1)
descr.handle.fd = fd
fh = c.c_void_p()
reg = cf.cuFileHandleRegister(c.byref(fh), c.byref(descr))
print("  %s: cuda %s, cuFileDriverOpen %d, cuFileHandleRegister of an unlinked file: %d%s" % (
    lib, rc, opened.err, reg.err, " (accepted)" if reg.err == 0 else " (refused)"))
if reg.err == 0:
    cf.cuFileHandleDeregister(fh)
os.close(fd)
PY
  )
done

if [ "${GDS_SECURITY_RUN_DEVICE_RUN:-1}" != 0 ]; then
  step "(f) tests/gpu/device-run.sh, GDS_DEVICE_RUN_BENCH=0 (verify cases a-d, issue 14)"
  GDS_DEVICE_RUN_BENCH=0 GDS_DEVICE_RUN_SITE=$SITE OUT=$W/device-run bash tests/gpu/device-run.sh > "$W/device-run.log" 2>&1
  echo "  device-run.sh rc=$?"
  cat "$W/device-run/summary.txt" 2>/dev/null | tee "$OUT/device-run-summary.txt"
  left
fi

step "summary"
python3 - "$W" "$D" <<'PY' | tee "$OUT/security-summary.txt"
import json, os, sys
w, d = sys.argv[1:3]
def facts(name):
    try:
        return json.load(open(os.path.join(w, name + ".json")))
    except (OSError, ValueError):
        return {}
def text(name):
    try:
        return open(os.path.join(w, name), errors="replace").read()
    except OSError:
        return ""
def nothing_left(name):
    t = text(name)
    return "probe entries: 0" in t and "file bytes: 0;" in t
results = []
def check(name, ok, what):
    print("[%s] %s: %s" % ("PASS" if ok else "FAIL", name, what))
    results.append(bool(ok))
a = facts("a")
check("a", a.get("mode") == "failed" and "probe timed out after 5 s during cuFile" in (a.get("reason") or "")
      and (a.get("probe") or {}).get("left_behind") == [] and nothing_left("a-left.txt"),
      "timeout during cuFileWrite, nothing left: %s" % (a.get("reason") or "")[:120])
b2 = facts("b2")
check("b", "probe child gone" in text("b-kill.txt") and "file bytes: 0;" in text("b-left.txt")
      and nothing_left("b2-left.txt") and b2.get("mode") == "compat",
      "the child went with the module, no bytes stayed, the next run left nothing (b-left: %s)" % (
          text("b-left.txt").strip().splitlines() or [""])[-1])
c = ((facts("c").get("probe") or {}).get("paths") or [{}])[0].get("tuned") or {}
per_thread = [r for r in c.get("candidates") or [] if "per-thread" in (r.get("label") or "")]
check("c", per_thread and not [r for r in per_thread if r.get("error")] and (c.get("verify") or {}).get("ok"),
      "throughput mode, %d per-thread plans on duplicated descriptors, verified" % len(per_thread))
e1, e2, e3 = facts("e1"), facts("e2"), facts("e3")
check("e1", (e1.get("cufile") or {}).get("release") == "1.20" and (e1.get("libcufile") or {}).get("api_version") == 1200
      and (e1.get("libcufile") or {}).get("version") is None,
      "wheel libcufile.so.0: release %s, api_version %s, mode %s" % ((e1.get("cufile") or {}).get("release"),
      (e1.get("libcufile") or {}).get("api_version"), e1.get("mode")))
f2 = [f.get("message") for f in (e2.get("cufile") or {}).get("findings") or [] if f.get("severity") == "error"]
check("e2", (e2.get("cufile") or {}).get("release") == "1.20" and (e2.get("cufile") or {}).get("valid") is False
      and any("1.20" in m for m in f2), "slab_config \"x\" with 1.20: %s" % (f2[:1] or (e2.get("cufile") or {}).get("validator")))
check("e3", (e3.get("cufile") or {}).get("release") == "1.15", "the same file with the host's 1.15: release %s valid %s" % (
    (e3.get("cufile") or {}).get("release"), (e3.get("cufile") or {}).get("valid")))
run = text("device-run/summary.txt")
if run:
    check("f", "verify runs: PASS" in run and "issue 14: PASS" in run, "device-run.sh verify a-d and issue 14")
print("security run: %s" % ("PASS" if all(results) else "FAIL"))
PY
tar -C "$W" -czf "$OUT/security-logs.tar.gz" --exclude=atmp --exclude=coll --exclude=wheel . 2>/dev/null
step "done in $(( $(date +%s) - T0 )) s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
