#!/usr/bin/env bash
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# The gds_monitoring collector's output on the real GPU host (shared/device/GPU-HOST.md), for
# `promtool check metrics` on the controller (promtool is not on that host). From the repository
# root, as root, after tests/gpu/device-run.sh or security-run.sh prepared /mnt/gds, with the
# wheels of tests/gpu/wheels.txt installed (PYTHONPATH/PATH set as those scripts set them):
#
#   bash tests/gpu/monitoring-run.sh     (files land in $OUT, default build/device-out-monitoring)
#
# 1. verify.yml on localhost with gds_verify_record_verdict=true (a 64 MiB probe on /mnt/gds,
#    require_mode compat): the verify role records the verdict on the host;
# 2. the collector, as the role's timer runs it (/usr/bin/python3, no collection import), prints
#    the metrics: $OUT/gpudirect_storage.prom, and the record it read: $OUT/last_verdict.json.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
OUT=${OUT:-$REPO/build/device-out-monitoring}
mkdir -p "$OUT" || exit 1
COLL=$(mktemp -d)
trap 'rm -rf "$COLL"' EXIT
mkdir -p "$COLL/ansible_collections/gpudirect" && ln -sfn "$REPO" "$COLL/ansible_collections/gpudirect/storage"
export ANSIBLE_CONFIG=$REPO/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$COLL
RECORD=/var/lib/gpudirect-storage/last_verdict.json   # the role's default (a throwaway VM)
(cd / && ansible-playbook -v "$REPO/playbooks/verify.yml" -i localhost, -c local \
  -e ansible_python_interpreter=/usr/bin/python3 \
  -e '{"gds_verify_probe_path": ["/mnt/gds"], "gds_verify_probe_size_mb": 64, "gds_verify_require_mode": "compat", "gds_verify_record_verdict": true}') > "$OUT/monitoring-verify.log" 2>&1
echo "verify.yml rc=$?"
cp "$RECORD" "$OUT/last_verdict.json" 2>/dev/null && cat "$OUT/last_verdict.json"; echo
/usr/bin/python3 roles/gds_monitoring/files/gds_textfile_collector.py --stdout --record "$RECORD" \
  --require-mode compat > "$OUT/gpudirect_storage.prom"
echo "collector rc=$?"
cat "$OUT/gpudirect_storage.prom"
