#!/usr/bin/env bash
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# cufile_config on the real H100 host, read-only: run from the repository root as
# root, after tests/gpu/device-run.sh installed the carried wheels into /tmp/site (or with
# GDS_DEVICE_RUN_SITE pointing at them):
#
#   bash tests/gpu/cufile-host-release.sh       (summary on stdout and in $OUT/cufile-host-release.txt)
#
# (a) no cufile option      -> changed=false, kept=true, /etc/cufile.json still the same link to the
#                              same bytes, libcufile {version 1.15.1, release 1.15, source host}, valid
# (b) settings, check mode  -> changed=true, base=shipped, base_release "libcufile 1.15.1 (CUDA 13.0)",
#                              libcufile.source=host (cufile_version auto read the host's release)
# Nothing is written: (a) keeps the file, (b) runs in check mode.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
REPO=$PWD
OUT=${OUT:-$REPO/build/device-out}
SITE=${GDS_DEVICE_RUN_SITE:-/tmp/site}
W=$(mktemp -d /tmp/gds-cufile-release.XXXXXX)
mkdir -p "$OUT" "$W/coll/ansible_collections/gpudirect"
ln -sfn "$REPO" "$W/coll/ansible_collections/gpudirect/storage"
export PYTHONPATH=$SITE PATH=$SITE/bin:$PATH ANSIBLE_CONFIG=$REPO/ansible.cfg ANSIBLE_COLLECTIONS_PATH=$W/coll \
       ANSIBLE_LOCAL_TEMP=$W/atmp ANSIBLE_NOCOLOR=1 ANSIBLE_CALLBACK_RESULT_FORMAT=json
before=$(ls -l /etc/cufile.json 2>&1; sha256sum "$(readlink -f /etc/cufile.json)" 2>&1)
cat > "$W/play.yml" <<'PLAY'
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: /usr/bin/python3
  tasks:
    - name: (a) no cufile option - the host's file is kept
      gpudirect.storage.cufile_config: {}
      register: kept
    - name: (b) settings, check mode - the base is the host's release
      gpudirect.storage.cufile_config:
        settings: {properties: {io_batchsize: 64}}
      check_mode: true
      register: planned
    - name: Results
      ansible.builtin.debug:
        msg:
          a: "{{ kept | dict2items | selectattr('key', 'in', ['changed', 'kept', 'base', 'valid', 'libcufile', 'msg', 'link_target']) | items2dict }}"
          b: "{{ planned | dict2items | selectattr('key', 'in', ['changed', 'base', 'base_release', 'libcufile', 'reasons']) | items2dict }}"
PLAY
ansible-playbook -i localhost, "$W/play.yml" -v > "$W/play.log" 2>&1
rc=$?
after=$(ls -l /etc/cufile.json 2>&1; sha256sum "$(readlink -f /etc/cufile.json)" 2>&1)
{
  echo "ansible-playbook rc=$rc"
  grep -A40 'TASK \[Results\]' "$W/play.log" | grep -v '^$' | head -40
  [ "$before" = "$after" ] && echo "OK /etc/cufile.json unchanged: $after" || { echo "CHANGED"; echo "$before"; echo "$after"; }
} | tee "$OUT/cufile-host-release.txt"
cp "$W/play.log" "$OUT/cufile-host-release.log"
rm -rf "$W"
