#!/usr/bin/env bash
# Every libcufile release (1.13-1.20) against the sweep's cases on the GPU host,
# in one call. From the repository root, with .whl-cufile carried (tests/gpu/fetch-cufile-wheels.sh):
#   bash tests/gpu/cufile-sweep-run.sh
# Unzips libcufile.so.0 of each wheel, moves /etc/cufile.json aside (libcufile overlays
# CUFILE_ENV_PATH_JSON on it) and puts it back on exit, generates the cases, runs them in
# parallel over the cores (tier 0 of every release first) and stops starting cases after
# SWEEP_DEADLINE seconds so the whole call ends inside the device limit.
# $OUT gets: results.jsonl.gz, summary.json, cases.jsonl, manifest.json, host.txt, run.log.
# Knobs (environment): SWEEP_DEADLINE (s, default 420), SWEEP_TIMEOUT (per case, default 30),
# SWEEP_JOBS (default: cores), SWEEP_RELEASES (e.g. 1.15,1.20), SWEEP_PYTHON (default
# /usr/bin/python3, else python3), SWEEP_LIBS (use these unzipped libraries instead of the wheels).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/cufile-sweep-out}
mkdir -p "$OUT"
exec > >(tee "$OUT/run.log") 2>&1
PY=${SWEEP_PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
WORK=$(mktemp -d /tmp/cufile-sweep.XXXXXX)
LIBS=${SWEEP_LIBS:-$WORK/lib}
ETC=${SWEEP_ETC_CUFILE:-/etc/cufile.json}  # overridable only for the dry run
ASIDE=$ETC.sweep-aside
MOVED=

restore_etc() {
  if [ -n "$MOVED" ]; then
    mv -T "$ASIDE" "$ETC" && echo "restored $ETC"
  fi
  rm -rf "$WORK"
}
trap restore_etc EXIT
trap 'exit 130' INT TERM

echo "== host"
{ date -u; uname -r; nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -2
  ls -l "$ETC" 2>&1; readlink -f "$ETC" 2>&1; "$PY" --version; } | tee "$OUT/host.txt"

if [ -z "${SWEEP_LIBS:-}" ]; then
  echo "== unzip libcufile.so.0 of each wheel"
  "$PY" tests/gpu/cufile_sweep/unpack.py .whl-cufile "$LIBS" || exit 1
fi
cp "$LIBS/manifest.json" "$OUT/" 2>/dev/null || true

if [ -L "$ETC" ] || [ -e "$ETC" ]; then
  if [ -L "$ASIDE" ] || [ -e "$ASIDE" ]; then
    echo "refusing: $ASIDE already exists (a previous run did not restore it); check it by hand"; exit 1
  fi
  mv -T "$ETC" "$ASIDE" && MOVED=1 && echo "moved $ETC aside to $ASIDE"
fi

echo "== cases"
"$PY" tests/gpu/cufile_sweep/cases.py --out "$OUT/cases.jsonl" || exit 1

echo "== sweep"
RELEASE_ARGS=()
[ -n "${SWEEP_RELEASES:-}" ] && RELEASE_ARGS=(--releases "$SWEEP_RELEASES")
"$PY" tests/gpu/cufile_sweep/run.py --libs "$LIBS" --cases "$OUT/cases.jsonl" --out "$OUT" \
  --jobs "${SWEEP_JOBS:-$(nproc)}" --timeout "${SWEEP_TIMEOUT:-30}" --deadline "${SWEEP_DEADLINE:-420}" \
  --python "$PY" "${RELEASE_ARGS[@]}"
rc=$?
gzip -f "$OUT/results.jsonl"
ls -l "$OUT"
exit $rc
