#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: gds_facts
short_description: Prove GPUDirect Storage on a host with a real cuFile write and read from GPU memory
version_added: 0.1.0
description:
  - Gathers GPUDirect Storage (GDS) facts into C(ansible_facts.gds) - kernel modules (nvidia,
    nvidia_fs, nvidia_peermem, nvme, RDMA), open or proprietary NVIDIA kernel module, driver and
    CUDA versions, GPUs (name, UUID, PCI bus id, BAR1), libcufile path and version, the cufile.json
    files in force, NVMe devices, the file systems of the probe paths, IOMMU mode, Secure Boot,
    MOFED/DOCA-OFED version and the parsed C(/proc/driver/nvidia-fs/stats).
  - With O(probe=true) it runs a real probe in a child process - GPU memory, a known pattern,
    C(cuFileDriverOpen), an C(O_DIRECT) file in each O(probe_path), C(cuFileHandleRegister),
    C(cuFileBufRegister), C(cuFileWrite), C(cuFileRead) into a second GPU buffer, a byte-for-byte
    comparison, both directions timed. The file lives in a private C(mkdtemp) directory, is used
    through one descriptor and is unlinked once registered; nothing of it survives a timeout or a
    kill (docs/gds_facts.md says exactly how).
  - The verdict C(gds.mode) says which data path was really used - V(gds) (through nvidia-fs,
    proven by the nvidia-fs Writes counter when C(rw_stats_enabled=1)), V(p2pdma), V(compat)
    (libcufile's POSIX path, with the reasons), V(unavailable) (no GPU, driver or libcufile; it says
    which) or V(failed) (the libcufile error name with the cufile.log or stdout lines that explain it).
  - libcufile, libcuda and libnvidia-ml are never loaded in the module's own process - libcufile
    prints config errors on stdout and aborts the process on some of them; the module survives
    both and reports what the child printed.
  - The action plugin validates the returned cufile.json texts on the controller (the same
    validator as M(gpudirect.storage.cufile_config)) and adds C(gds.cufile.valid) and
    C(gds.cufile.findings), against the key schema of the host's libcufile release
    (C(gds.cufile.libcufile_release); the newest known release when no libcufile is found, with a
    C(note)); a release unknown to the collection is not validated (C(valid=null), C(validator) says why).
extends_documentation_fragment:
  - gpudirect.storage._attributes
  - gpudirect.storage._attributes.FACTS
  - gpudirect.storage._attributes.FACTS_MODULE
options:
  probe:
    description:
      - Run the cuFile write/read probe. The probe writes a temporary file of O(probe_size_mb)
        MiB in each O(probe_path) and leaves nothing behind; it runs in check mode too, because it
        leaves the host as it found it. V(false) infers the mode from modules and cufile.json only.
      - A probe path that users other than its owner can write without the sticky bit is refused
        (V(failed), naming the path and its mode) before anything is written.
    type: bool
    default: true
  probe_path:
    description:
      - Directories to probe (a list, or a comma-separated string), or V(auto). Each must be on the
        file system whose data path you want to know.
      - V(auto) picks the mounted data file systems GDS can serve, read from C(/proc/self/mounts)
        and C(/sys/block) - ext4/xfs on NVMe or NVMe-oF (the root file system through C(/var/tmp)),
        Lustre, GPFS, WekaFS, BeeGFS and NFS mounted with C(proto=rdma); read-only mounts and at
        most 8 are taken. When none qualifies it probes C(/var/tmp) and returns a warning (also in
        C(gds.warnings)) that names why each mount was left out. C(gds.storage.auto) lists the picks.
      - Every probe path is classified before the probe (C(gds.storage.probe_paths[].class)) and a
        path GDS cannot serve says why in the reason - tmpfs or overlay (no O_DIRECT to storage),
        device-mapper/LVM or md RAID (libcufile cannot classify them), a loop device, the root file
        system on a non-NVMe disk, NFS without RDMA.
      - With several paths the host's mode is the weakest of them.
    type: list
    elements: path
    default: [auto]
  probe_size_mb:
    description:
      - Size of the probe write and read in MiB (1-65536). 64 MiB crosses the 16 MiB direct I/O
        chunk several times and keeps a fleet run short; use 256 or more for throughput figures.
    type: int
    default: 64
  probe_threads:
    description:
      - Threads issuing C(cuFileWrite)/C(cuFileRead) over 16 MiB chunks of the registered buffers.
        V(0) issues one call for the whole buffer and leaves any splitting to libcufile; on the
        H100 test host (compat mode) one call was the fastest (bench/gpu-probe).
    type: int
    default: 0
  probe_throughput:
    description:
      - Throughput mode. After the default (verified) write and read, measure several ways of
        splitting the same transfer on the same file - one call, 2 to 16 threads each issuing
        C(cuFileWrite)/C(cuFileRead) on a contiguous slice or on 2, 4 or 8 MiB tasks taken from one
        shared queue (the way kvikio's thread pool splits a request), shared or per-thread cuFile
        handles, registered or unregistered buffers - measure the three best plans per direction 3 more times each and
        report the best median in C(gds.throughput.tuned), with the plans chosen, a read of the
        chosen plan verified byte for byte and the storage's own O_DIRECT speed with the same plans.
      - A failure of the throughput mode is reported in C(gds.throughput.tuned.error); the verdict
        is the default probe's.
      - Opt-in because it costs seconds per probe path - measured on the H100 test host (compat
        mode) about 2.7 s at 256 MiB and 9.5 s at 1 GiB of tuning, 13 s of module time at 1 GiB;
        the default probe keeps a fleet run short and its figures stay in C(gds.throughput).
    type: bool
    default: false
  probe_device:
    description: CUDA device ordinal whose memory is used.
    type: int
    default: 0
  probe_timeout:
    description:
      - Seconds after which the probe child is ended (C(SIGALRM)); the verdict is then V(failed)
        with the step it was in.
    type: int
    default: 60
  require_mode:
    description:
      - Fail the host unless the probe verified its data (written, read back and compared equal)
        and the verdict is at least this (V(gds) > V(p2pdma) > V(compat)). V(gds) also needs the
        path proven by the nvidia-fs counters (see O(require_proven)).
      - An inferred verdict (O(probe=false)) never meets a requirement - nothing was written.
      - The facts are returned in the failed result too.
    type: str
    choices: [gds, p2pdma, compat]
  require_proven:
    description:
      - With O(require_mode=gds), also require the nvidia-fs Writes/Reads counters to move during
        the probe (C(rw_stats_enabled=1)).
      - V(false) is WEAKER - it accepts a verified probe with nvidia_fs loaded and no compat-mode
        fallback in cufile.log as V(gds), without counters to prove the data went through nvidia-fs.
    type: bool
    default: true
  cufile_lib:
    description: Path of the libcufile to probe. Default - the first C(libcufile.so.0) found in
      C(LD_LIBRARY_PATH), C(/usr/local/cuda*/lib64), the C(ld.so.conf) directories and the system
      library directories.
    type: path
  cufile_env_path_json:
    description:
      - A user cufile.json that libcufile overlays over C(/etc/cufile.json) (sets
        C(CUFILE_ENV_PATH_JSON) for the probe). Default - C(CUFILE_ENV_PATH_JSON) of the module's
        environment, if any.
    type: path
  gather_cuda:
    description:
      - Query NVML (GPU names, UUIDs, PCI bus ids, BAR1, driver and CUDA versions) in the child
        process. V(false) falls back to C(nvidia-smi) when the probe is off.
    type: bool
    default: true
  mok_cert:
    description:
      - With Secure Boot enabled, the MOK certificate to ask C(mokutil --test-key) about (the one
        nvidia-fs is signed with); the DKMS default keys are asked about too. The answer is C(gds.mok).
        M(gpudirect.storage.gds_preflight) sets it from its own O(gpudirect.storage.gds_preflight#module:mok_cert).
    type: path
  record_path:
    description:
      - After a verdict that met O(require_mode), record it in this file on the host for role
        C(gpudirect.storage.gds_monitoring) - mode, verified, proven, GB/s, time, versions and the
        controller's cufile.json validity (no reason text). JSON, 0644, replaced atomically; the
        directory is created 0755 and refused when another user can write in it. Written by a
        second, small call of this module once the controller has validated cufile.json.
    type: path
  record:
    description: Internal - the record the action plugin sends to O(record_path).
    type: dict
notes:
  - The probe needs root or write access to O(probe_path), and a GPU with enough free memory for
    two buffers of O(probe_size_mb).
  - On hosts without udev data for the block device (containers, microVMs), libcufile fails
    C(cuFileHandleRegister) with C(CU_FILE_HANDLE_NOT_REGISTERED); the verdict quotes the
    cufile.log lines that say so.
seealso:
  - module: gpudirect.storage.cufile_config
author: gpudirect.storage maintainers (@gpudirect)
"""

EXAMPLES = r"""
- name: Gather GDS facts with a 256 MiB probe on the data file system
  gpudirect.storage.gds_facts:
    probe_path: /mnt/data
    probe_size_mb: 256

- name: Gate the fleet on real GDS through nvidia-fs
  gpudirect.storage.gds_facts:
    probe_path: [/mnt/nvme0, /mnt/nvme1]
    require_mode: gds

- name: Facts only, no I/O
  gpudirect.storage.gds_facts:
    probe: false

- name: Gate on compat and record the verdict for the monitoring collector
  gpudirect.storage.gds_facts:
    require_mode: compat
    record_path: /var/lib/gpudirect-storage/last_verdict.json

- name: Show the verdict
  ansible.builtin.debug:
    msg: "{{ ansible_facts.gds.mode }}: {{ ansible_facts.gds.reason }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: dict
  contains:
    gds:
      description: GPUDirect Storage facts of the host (see docs/gds_facts.md for every key).
      returned: always
      type: dict
      contains:
        mode:
          description: The data path the probe used - gds, p2pdma, compat, unavailable or failed.
          type: str
          sample: compat
        reason:
          description: Why, in one line (the reasons joined with "; ").
          type: str
          sample: "nvidia_fs kernel module not loaded (and properties.use_pci_p2pdma is off); ext4 on /dev/loop0 (loop device) is not a GDS-capable device"
        reasons:
          description: The reasons, one per item.
          type: list
          elements: str
        warnings:
          description: Warnings of the gathering (for example O(probe_path=auto) finding no GDS-capable mount).
          type: list
          elements: str
        host:
          description:
            - The host itself, so read-only checks need no C(setup) round trip. C(os) from
              C(/etc/os-release) (C(distribution) is the name Ansible's setup module reports),
              C(architecture), the module's C(python) version, and C(free_mb) available on C(/).
          type: dict
          sample: {os: {id: ubuntu, version_id: "24.04", major: "24", distribution: Ubuntu, pretty: Ubuntu 24.04.3 LTS},
                   architecture: x86_64, python: 3.12.3, free_mb: {"/": 81234}}
        verified:
          description: The probe data was written, read back and compared equal on every path.
          type: bool
        proven:
          description: The data path is proven (nvidia-fs counters moved, or nvidia_fs is absent).
          type: bool
        throughput:
          description:
            - Write and read GB/s (10^9 bytes/s) of the probe on the weakest path (C(write_gbps),
              C(read_gbps), C(size_mb)); C(storage_write_gbps) and C(storage_read_gbps) - the same
              file written and read with O_DIRECT into host memory in the same run (16 MiB calls,
              no GPU, best of 2 interleaved rounds); C(write_ratio) and C(read_ratio) - probe /
              storage, how much of the storage's speed reaches the GPU. Not clamped - 1 or above
              says the storage is the limit (the GPU path kept up with, or outran, one O_DIRECT
              stream).
            - C(tuned) - the figures of O(probe_throughput) (C(write_gbps), C(read_gbps),
              C(write_plan), C(read_plan), C(storage_*), C(*_ratio), C(verified), C(error)), else null.
          type: dict
          sample: {write_gbps: 3.5, read_gbps: 5.3, size_mb: 256, storage_write_gbps: 3.9, storage_read_gbps: 5.6,
                   write_ratio: 0.897, read_ratio: 0.946, tuned: null}
        versions:
          description: Kernel, NVIDIA driver (and kernel module flavour), CUDA driver, libcufile, nvidia_fs, OFED.
          type: dict
        gpus:
          description: GPUs (index, name, uuid, pci_bus_id, bar1_total_mib, fb_total_mib).
          type: list
          elements: dict
        nvidia_fs:
          description: nvidia_fs loaded, version, rw_stats_enabled, parsed stats.
          type: dict
        libcufile:
          description: Path, real path, version, api_version and every candidate found.
          type: dict
        cufile:
          description:
            - cufile.json files in force (C(/etc/cufile.json), the C(CUFILE_ENV_PATH_JSON) overlay)
              with path, exists, sha256; C(valid) and C(findings) when the action plugin validated them.
          type: dict
        storage:
          description:
            - NVMe devices, IOMMU mode and, per probe path, mount point, fstype, block device, udev
              data and C(class) (kind, gds_capable, reason); C(auto) - the mounts O(probe_path=auto)
              picked and skipped (with why), and whether it fell back to C(/var/tmp).
          type: dict
        probe:
          description:
            - The probe run - rc, signal, last step, per-path results and verdicts, timing, cufile.log lines,
              and C(left_behind) (probe files or directories that could not be removed; normally empty).
          type: dict
        secure_boot:
          description: enabled, disabled or unknown.
          type: str
        mok:
          description:
            - With Secure Boot enabled only - what C(mokutil --test-key) says of O(mok_cert) (C(cert),
              C(enrolled), null when unknown) and of the DKMS default keys (C(default_enrolled)).
          type: dict
        ofed:
          description: MOFED/DOCA-OFED flavor and version from C(ofed_info -s), or null.
          type: dict
        kernel:
          description: Kernel release and which modules of interest are loaded.
          type: dict
        timing:
          description: Seconds spent collecting, in the probe child, and in total.
          type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_facts as backend
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import record
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.verdict import gate
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner


def argument_spec():
    """The facts' options (shared with gds_plan and gds_node_probe) and the record's."""
    return dict(backend.argument_spec(), record_path=dict(type="path"), record=dict(type="dict"))


def main():
    module = AnsibleModule(argument_spec=argument_spec(), required_by={"record": "record_path"}, supports_check_mode=True)
    problem = backend.check_params(module.params)
    if problem:
        module.fail_json(msg=problem)
    if module.params["record"] is not None:
        changed, diff = record.write(module, module.params["record_path"], module.params["record"])
        module.exit_json(changed=changed, diff=diff)
    facts = backend.gather(module.params, HostPaths(), Runner(module), tmp_root=module.tmpdir)
    for warning in facts.get("warnings") or []:
        module.warn(warning)
    required = module.params["require_mode"]
    if required:
        met, problem = gate(facts, required, module.params["require_proven"])
        facts["require_mode"] = {"mode": required, "proven": module.params["require_proven"], "met": met}
        if problem:
            module.fail_json(msg=problem, ansible_facts={"gds": facts})
    module.exit_json(changed=False, ansible_facts={"gds": facts})


if __name__ == "__main__":
    main()
