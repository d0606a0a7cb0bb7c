#!/usr/bin/env bash
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# gds_node_probe on the real H100 host (shared/device/GPU-HOST.md): the emulator's kubelet REALLY
# runs the probe pod's command as a local process against the REAL libcuda/libcufile, and the
# node's verdict is printed next to gds_facts' on the same host. From the repository root, as
# root, with the wheels of tests/gpu/wheels.txt carried in .whl/:
#
#   bash tests/gpu/k8s-node-probe-run.sh          (files land in $OUT, default build/device-out-k8s)
#
# After lib.sh's k8s_start (the wheels, /mnt/gds, gds_facts and the emulator), gds_node_probe:
# 256 MiB on /mnt/gds, labels on. PASS when both agree: compat, the reason names nvidia_fs, 256 MiB
# verified, the pod's sha256 check of the probe code passed and the node was labelled, and no
# pod or ConfigMap is left. Budget: about a minute.
#
# Dry run elsewhere with the C stand-ins: set GDS_DEVICE_RUN_PROBE_DIR (skips the /mnt/gds
# preparation), export LD_LIBRARY_PATH / GPUDIRECT_HOST_ROOT / GPUDIRECT_PROC_ROOT for gds_facts (the
# kubelet passes the same three to the pod), and GDS_DEVICE_RUN_PYTHONPATH / GDS_DEVICE_RUN_BIN to
# use an existing environment instead of the wheels.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/lib.sh
run_start device-out-k8s /tmp/gds-k8s-node-probe-run run.log
k8s_start

step "gds_node_probe: a probe pod on $NODE, 256 MiB on $D"
ansible-playbook -v tests/integration/gds_node_probe/playbooks/module.yml -i localhost, -c local \
  -e ansible_python_interpreter="$PY" \
  -e '{"np_kubeconfig": "'"$W"'/emu/kubeconfig", "np_probe_path": ["'"$D"'"], "np_probe_size_mb": 256,
       "np_labels": true, "np_pod_timeout": 240}' > "$W/logs/node-probe.log" 2>&1
echo "rc=$?"
kill $EMU 2>/dev/null; wait $EMU 2>/dev/null
tar -C "$W" -czf "$OUT/logs.tar.gz" logs

step "both verdicts"
"$PY" - "$W/logs" "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
logs, out = sys.argv[1], sys.argv[2]

def result(name, key):
    for line in open(os.path.join(logs, name), errors="replace"):
        for head in ("ok: [localhost] => ", "fatal: [localhost]: FAILED! => ", "changed: [localhost] => "):
            if line.startswith(head) and key in line:
                return json.loads(line[len(head):])
    return {}

facts = (result("gds-facts.log", '"gds": {').get("ansible_facts") or {}).get("gds") or {}
probe = result("node-probe.log", '"nodes": [')
node = (probe.get("nodes") or [{}])[0]
json.dump({"gds_facts": facts, "gds_node_probe": probe}, open(os.path.join(out, "verdicts.json"), "w"), indent=1,
          sort_keys=True, default=str)

def show(label, rec, verified):
    t = rec.get("throughput") or {}
    print("%-15s mode=%s verified=%s bytes=%s write=%s read=%s GB/s" % (
        label, rec.get("mode"), rec.get("verified"), verified, t.get("write_gbps"), t.get("read_gbps")))
    print("%-15s reason: %s" % ("", rec.get("reason")))

facts_bytes = (((facts.get("probe") or {}).get("paths") or [{}])[0].get("verify") or {}).get("verified_bytes")
show("gds_facts", facts, facts_bytes)
show("gds_node_probe", node, node.get("verified_bytes"))
print("%-15s node=%s pod=%s failure=%s deleted=%s labels_changed=%s problem=%s" % (
    "", node.get("name"), node.get("pod"), node.get("failure"), probe.get("deleted"), probe.get("labels_changed"),
    probe.get("problem")))
checks = [
    ("gds_facts: compat, names nvidia_fs, 256 MiB verified", facts.get("mode") == "compat"
     and "nvidia_fs" in (facts.get("reason") or "") and facts_bytes == 256 << 20),
    ("node probe: compat, names nvidia_fs, 256 MiB verified", node.get("mode") == "compat"
     and "nvidia_fs" in (node.get("reason") or "") and node.get("verified_bytes") == 256 << 20),
    ("same verdict: mode, reasons, verified, proven", all(facts.get(k) == node.get(k)
                                                          for k in ("mode", "reasons", "verified", "proven"))),
    ("nothing left: 1 pod and 1 ConfigMap deleted", probe.get("deleted") == {"pods": 1, "configmaps": 1}),
    # the pod ran the code only after its sha256 check passed (failure kind "bundle" otherwise)
    ("bundle sha256 checked in the pod, node labelled", not node.get("failure")
     and probe.get("labels_changed") == [node.get("name")] and probe.get("labels_removed") == []),
]
for what, ok in checks:
    print("  [%s] %s" % ("PASS" if ok else "FAIL", what))
print("k8s node probe vs gds_facts: %s" % ("PASS" if all(ok for _w, ok in checks) else "FAIL"))
PY
step "done in $(( $(date +%s) - T0 )) s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
