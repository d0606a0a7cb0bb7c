# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
#
# Sourced by the device scripts (device-run.sh, k8s-node-probe-run.sh, throughput-run.sh):
# prepare_mnt_gds mounts an 8 GiB loop ext4 at /mnt/gds (once) and writes the udev data libcufile
# reads to classify its block device. microVM test preparation (the VM has no udev database),
# NOT something the collection does to real hosts.
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
