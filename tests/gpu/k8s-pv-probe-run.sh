#!/usr/bin/env bash
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# gds_node_probe THROUGH A LOCAL PERSISTENTVOLUME on the real H100 host (shared/device/GPU-HOST.md):
# as tests/gpu/k8s-node-probe-run.sh, but the probe pod writes to a PersistentVolumeClaim of the
# StorageClass nvme-gds that the emulator's scheduler binds (WaitForFirstConsumer) to the local PV
# on /mnt/gds that gds_local_volumes created; the emulator's kubelet bind-mounts the PV's path at
# the claim's mountPath (/gds-volume) in the pod's own mount namespace, as a container runtime
# does. From the repository root, as root, with the wheels of tests/gpu/wheels.txt carried in .whl/:
#
#   bash tests/gpu/k8s-pv-probe-run.sh          (files land in $OUT, default build/device-out-pv)
#
# After lib.sh's k8s_start (the wheels, /mnt/gds, gds_facts and the emulator):
# 1. gds_local_volumes creates the class nvme-gds and the local PV on /mnt/gds (capacity: the file
#    system's size), then runs again (changed=false); from the gds facts it would leave /mnt/gds
#    out (a loop device), so the PV is listed;
# 2. gds_node_probe with storage_class nvme-gds, 256 MiB, labels on;
# 3. prints both verdicts and PASS when they agree: compat, the reason names nvidia_fs and
#    /dev/loop0 (what the claim's mount really is), 256 MiB verified, the same mode, reasons,
#    verified and proven; the node's record names the PV and /mnt/gds; the claim is deleted and
#    the PV is Available again. Budget: about a minute.
#
# Dry run elsewhere with the C stand-ins: as k8s-node-probe-run.sh (GDS_DEVICE_RUN_PROBE_DIR,
# LD_LIBRARY_PATH / GPUDIRECT_HOST_ROOT / GPUDIRECT_PROC_ROOT, GDS_DEVICE_RUN_PYTHONPATH / _BIN).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
. tests/gpu/lib.sh
run_start device-out-pv /tmp/gds-k8s-pv-probe-run run.log
k8s_start
unshare --version | head -1

step "gds_local_volumes: StorageClass nvme-gds and a local PV on $D (twice)"
SIZE=$(( $(stat -f -c '%b * %S' "$D") ))
ARGS='{"kubeconfig": "'"$W"'/emu/kubeconfig", "storage_class": "nvme-gds",
       "volumes": [{"node": "'"$NODE"'", "path": "'"$D"'", "capacity": "'"$(( SIZE >> 30 ))"'Gi"}]}'
for run in 1 2; do
  ansible localhost -c local -e ansible_python_interpreter="$PY" -m gpudirect.storage.gds_local_volumes -a "$ARGS" \
    > "$W/logs/local-volumes-$run.log" 2>&1
  echo "run $run rc=$?: $(grep -o '"changed": [a-z]*' "$W/logs/local-volumes-$run.log" | head -1)"
done

step "gds_node_probe through a claim of nvme-gds on $NODE, 256 MiB"
ansible-playbook -v tests/integration/gds_node_probe/playbooks/module.yml -i localhost, -c local \
  -e ansible_python_interpreter="$PY" \
  -e '{"np_kubeconfig": "'"$W"'/emu/kubeconfig", "np_probe_path": ["/var/tmp"], "np_probe_size_mb": 256,
       "np_labels": true, "np_pod_timeout": 240, "np_storage_class": "nvme-gds"}' > "$W/logs/node-probe.log" 2>&1
echo "rc=$?"
PYTHONPATH=$PYTHONPATH "$PY" -c 'import json, sys
from kubernetes import client, config
api = client.CoreV1Api(config.new_client_from_config(config_file=sys.argv[1], persist_config=False))
pvs = json.loads(api.list_persistent_volume(_preload_content=False).data)["items"]
pvcs = json.loads(api.list_persistent_volume_claim_for_all_namespaces(_preload_content=False).data)["items"]
json.dump({"pvs": pvs, "pvcs": pvcs}, open(sys.argv[2], "w"), indent=1)' "$W/emu/kubeconfig" "$W/logs/after.json"
kill $EMU 2>/dev/null; wait $EMU 2>/dev/null
tar -C "$W" -czf "$OUT/logs.tar.gz" logs

step "both verdicts"
"$PY" - "$W/logs" "$OUT" "$D" <<'PY' | tee "$OUT/summary.txt"
import json, os, sys
logs, out, path = sys.argv[1], sys.argv[2], sys.argv[3]

def result(name, key, heads=("ok: [localhost] => ", "fatal: [localhost]: FAILED! => ", "changed: [localhost] => ")):
    text = open(os.path.join(logs, name), errors="replace").read()
    for head in heads + ("localhost | SUCCESS => ", "localhost | CHANGED => ", "localhost | FAILED! => "):
        at = text.find(head)
        while at >= 0:
            try:
                rec = json.JSONDecoder().raw_decode(text[at + len(head):])[0]
                if key in json.dumps(rec):
                    return rec
            except ValueError:
                pass
            at = text.find(head, at + 1)
    return {}

facts = (result("gds-facts.log", '"gds": {').get("ansible_facts") or {}).get("gds") or {}
lv1, lv2 = result("local-volumes-1.log", "storage_class"), result("local-volumes-2.log", "storage_class")
probe = result("node-probe.log", '"nodes": [')
node = (probe.get("nodes") or [{}])[0]
vol = node.get("volume") or {}
after = json.load(open(os.path.join(logs, "after.json")))
json.dump({"gds_facts": facts, "gds_local_volumes": [lv1, lv2], "gds_node_probe": probe, "after": after},
          open(os.path.join(out, "verdicts.json"), "w"), indent=1, sort_keys=True, default=str)

def show(label, rec, verified):
    t = rec.get("throughput") or {}
    print("%-15s mode=%s verified=%s bytes=%s write=%s read=%s GB/s" % (
        label, rec.get("mode"), rec.get("verified"), verified, t.get("write_gbps"), t.get("read_gbps")))
    print("%-15s reason: %s" % ("", rec.get("reason")))

facts_bytes = (((facts.get("probe") or {}).get("paths") or [{}])[0].get("verify") or {}).get("verified_bytes")
print("gds_local_volumes run 1: changed=%s class=%s volumes=%s" % (lv1.get("changed"), lv1.get("storage_class"),
                                                                   lv1.get("volumes")))
print("gds_local_volumes run 2: changed=%s" % lv2.get("changed"))
show("gds_facts", facts, facts_bytes)
show("gds_node_probe", node, node.get("verified_bytes"))
print("%-15s node=%s pod=%s failure=%s volume=%s" % ("", node.get("name"), node.get("pod"), node.get("failure"), vol))
print("%-15s deleted=%s labels_changed=%s problem=%s msg=%s" % ("", probe.get("deleted"), probe.get("labels_changed"),
                                                                probe.get("problem"), probe.get("msg")))
pv = next(iter(after["pvs"]), {})
print("after the probe: PV %s phase=%s claimRef=%s; claims left: %d" % (
    pv.get("metadata", {}).get("name"), pv.get("status", {}).get("phase"), pv.get("spec", {}).get("claimRef"),
    len(after["pvcs"])))
checks = [
    ("gds_local_volumes: class and PV created, second run changed=false",
     lv1.get("changed") is True and lv2.get("changed") is False and len(lv1.get("volumes") or []) == 1),
    ("gds_facts: compat, names nvidia_fs, 256 MiB verified", facts.get("mode") == "compat"
     and "nvidia_fs" in (facts.get("reason") or "") and facts_bytes == 256 << 20),
    ("node probe through the claim: compat, names nvidia_fs and the loop device, 256 MiB verified",
     node.get("mode") == "compat" and "nvidia_fs" in (node.get("reason") or "")
     and "/dev/loop" in (node.get("reason") or "") and node.get("verified_bytes") == 256 << 20),
    ("same verdict: mode, reasons, verified, proven", all(facts.get(k) == node.get(k)
                                                          for k in ("mode", "reasons", "verified", "proven"))),
    ("the verdict names the PV and its path", vol.get("pv") == (lv1.get("volumes") or [{}])[0].get("name")
     and vol.get("path") == path and vol.get("storage_class") == "nvme-gds"),
    ("claim deleted, PV Available again", probe.get("deleted") == {"pods": 1, "configmaps": 1, "claims": 1}
     and not after["pvcs"] and pv.get("status", {}).get("phase") == "Available" and vol.get("released") is True),
    ("node labelled, no problem", not node.get("failure") and probe.get("labels_changed") == [node.get("name")]
     and not probe.get("problem")),
]
for what, ok in checks:
    print("  [%s] %s" % ("PASS" if ok else "FAIL", what))
print("k8s node probe through a local PV vs gds_facts: %s" % ("PASS" if all(ok for _w, ok in checks) else "FAIL"))
PY
step "done in $(( $(date +%s) - T0 )) s; files in $OUT: $(ls "$OUT" | tr '\n' ' ')"
