# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# Sourced by the device scripts, from the repository root: their common start, the /mnt/gds
# preparation, the collection path and (k8s-*-run.sh) the emulator.

# run_start OUT_NAME WORK_DIR LOG_NAME: $REPO, $OUT (default build/OUT_NAME), a fresh $W with logs/,
# everything printed also in $OUT/LOG_NAME, step() timed from here.
run_start() {
  REPO=$PWD
  OUT=${OUT:-$REPO/build/$1}
  W=$2
  mkdir -p "$OUT" && rm -rf "$W" && mkdir -p "$W/logs" || exit 1
  exec > >(tee "$OUT/$3") 2>&1
  T0=$(date +%s)
}
step() { echo; echo "=== +$(( $(date +%s) - T0 ))s $*"; }

install_wheels() {  # the carried .whl/*.whl into $SITE
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || exit 1
}

# probe_dir VAR: D is $VAR when set (a dry run elsewhere, e.g. with the C stand-ins), else /mnt/gds
# prepared by prepare_mnt_gds.
probe_dir() {
  D=${!1:-/mnt/gds}
  if [ -z "${!1:-}" ]; then
    step "prepare /mnt/gds: loop ext4 + udev data (microVM test preparation)"
    prepare_mnt_gds || exit 1
    unset LD_LIBRARY_PATH  # the module finds libcufile itself (/usr/local/cuda*/lib64)
  fi
}

# An 8 GiB loop ext4 at /mnt/gds (once) and the udev data libcufile reads to classify its block
# device: microVM test preparation (the VM has no udev database), NOT something the collection
# does to real hosts.
prepare_mnt_gds() {
  if ! mountpoint -q /mnt/gds; then
    truncate -s 8G /tmp/gds.img && mkfs.ext4 -q -F /tmp/gds.img || return 1
    mkdir -p /mnt/gds && mount -o data=ordered "$(losetup -f --show /tmp/gds.img)" /mnt/gds || return 1
  fi
  local dev
  dev=$(mountpoint -d /mnt/gds) && mkdir -p /run/udev/data || return 1
  printf 'E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=ext4\nE:DEVTYPE=disk\nE:SUBSYSTEM=block\n' > "/run/udev/data/b$dev"
  findmnt /mnt/gds; echo "udev data: /run/udev/data/b$dev"
}

collection_env() {  # this checkout as gpudirect.storage under $W/coll, and ansible's settings
  mkdir -p "$W/coll/ansible_collections/gpudirect" && ln -sfn "$REPO" "$W/coll/ansible_collections/gpudirect/storage"
  export ANSIBLE_CONFIG=$REPO/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$W/coll ANSIBLE_LOCAL_TEMP=$W/atmp ANSIBLE_NOCOLOR=1
}

# k8s_start: the k8s-*-run.sh common part. The python environment (the wheels, or
# GDS_DEVICE_RUN_PYTHONPATH / GDS_DEVICE_RUN_BIN), /mnt/gds, gds_facts on this host through
# playbooks/verify.yml (256 MiB on $D, log in $W/logs/gds-facts.log), then the API emulator with one
# GPU node named after this host ($NODE) and its kubelet, which passes LD_LIBRARY_PATH,
# GPUDIRECT_HOST_ROOT and GPUDIRECT_PROC_ROOT to the probe pod. $EMU is its pid.
k8s_start() {
  PY=${GDS_DEVICE_RUN_TARGET_PYTHON:-/usr/bin/python3}
  SITE=${GDS_DEVICE_RUN_SITE:-/tmp/site}
  step "python environment"
  if [ -z "${GDS_DEVICE_RUN_PYTHONPATH:-}" ]; then
    if ! { [ -x "$SITE/bin/ansible-playbook" ] && PYTHONPATH=$SITE "$PY" -c 'import ansible, kubernetes, cryptography' 2>/dev/null; }; then
      install_wheels
    fi
  fi
  export PYTHONPATH=${GDS_DEVICE_RUN_PYTHONPATH:-$SITE} PATH=${GDS_DEVICE_RUN_BIN:-$SITE/bin}:$PATH
  ansible-playbook --version | head -1
  "$PY" -c 'import kubernetes, cryptography; print("kubernetes", kubernetes.__version__, "cryptography", cryptography.__version__)' || exit 1
  probe_dir GDS_DEVICE_RUN_PROBE_DIR
  collection_env
  export ANSIBLE_CALLBACK_RESULT_FORMAT=json

  step "gds_facts on this host: playbooks/verify.yml, 256 MiB on $D"
  ansible-playbook -v playbooks/verify.yml -i localhost, -c local -e ansible_python_interpreter="$PY" \
    -e '{"gds_verify_probe_path": ["'"$D"'"], "gds_verify_probe_size_mb": 256, "gds_report_enabled": false}' \
    > "$W/logs/gds-facts.log" 2>&1
  echo "rc=$?"

  step "the API emulator with one GPU node ($(hostname -s)) and its kubelet"
  NODE=$(hostname -s | tr 'A-Z_' 'a-z-')
  local kubelet
  kubelet=$("$PY" -c 'import json, os
env = dict((k, os.environ[k]) for k in ("LD_LIBRARY_PATH", "GPUDIRECT_HOST_ROOT", "GPUDIRECT_PROC_ROOT") if os.environ.get(k))
print(json.dumps({"node_env": {"*": env}}))')
  echo "kubelet settings: $kubelet"
  EMULATOR_KUBELET=$kubelet PYTHONPATH=$REPO/tests/fixtures:$PYTHONPATH "$PY" -m k8s_emulator --workdir "$W/emu" \
    --nodes "$NODE:ubuntu:24.04:gpu:labelled" > "$W/logs/emulator.log" 2>&1 &
  EMU=$!
  trap 'kill $EMU 2>/dev/null; wait $EMU 2>/dev/null' EXIT
  for _ in $(seq 1 200); do [ -s "$W/emu/ready" ] && break; kill -0 $EMU 2>/dev/null || break; sleep 0.1; done
  [ -s "$W/emu/ready" ] || { echo "emulator did not start"; cat "$W/logs/emulator.log"; exit 1; }
  echo "emulator $(cat "$W/emu/ready") pid $EMU"
}
