#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0), which is compatible
# with the GNU General Public License version 3, as Ansible's collection requirements ask

from __future__ import annotations

DOCUMENTATION = r"""
module: cufile_config
short_description: Manage /etc/cufile.json, validated against the libcufile key schema
version_added: 0.1.0
description:
  - Writes the GPUDirect Storage configuration file C(cufile.json) from a base document (the file the
    host's libcufile release ships, the file on the host, or nothing) with O(settings) merged over it,
    or from a complete file given in O(src).
  - B(Nothing the user did not ask for changes.) With none of O(settings), O(src) and O(base) set, the
    file at O(path) (or the CUDA update-alternatives link there, or its absence) is kept as it is - it is
    read, validated against the host's libcufile release and reported (RV(kept), RV(valid), findings as
    warnings), never rewritten.
  - B(Validates before touching anything.) The planned document is checked on the controller against
    the collection's JSON Schema of the host's libcufile release (C(schemas/cufile-<release>.schema.json),
    today 1.15) the way
    libcufile reads it; every unknown or misplaced key (which libcufile silently ignores), wrong type
    or out-of-range value (which makes C(cuFileDriverOpen) fail with -22) and section of the wrong
    shape (which aborts the process) is reported at once with its JSON path, and nothing is written.
    Unknown keys come with the real key, for example C(execution.allow_compat_mode) ->
    C(properties.allow_compat_mode).
  - Compares parsed JSON, so comments or formatting alone are not a change. The file is written as
    sorted, indented plain JSON (without comments) through a temporary file in the same directory
    and an atomic rename.
  - B(Symlinks.) On CUDA 13 hosts C(/etc/cufile.json) is an update-alternatives link into the CUDA tree.
    The module never writes through it. It replaces the link by a regular file it owns, leaves the
    CUDA file untouched, returns the old target in RV(link_target) and, with O(backup=true), keeps the
    old link as a symlink backup. update-alternatives does not replace a real file without C(--force),
    so the managed file survives CUDA upgrades. See C(docs/cufile.md) of the collection.
  - Also validates the result libcufile sees when C(CUFILE_ENV_PATH_JSON) is used (O(env_path_json)),
    because that file is merged over C(/etc/cufile.json), it does not replace it.
  - Needs the Python library C(jsonschema) on the controller only; the target needs the Python
    standard library only. The same checks are available without Ansible in C(bin/cufile-lint).
author:
  - gpudirect.storage maintainers (@gpudirect)
extends_documentation_fragment:
  - ansible.builtin.files
  - gpudirect.storage._attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: The diff shows the current and the planned document as sorted, indented JSON.
options:
  path:
    description:
      - The cufile.json to manage. libcufile reads C(/etc/cufile.json); a file meant for
        C(CUFILE_ENV_PATH_JSON) can be managed too (it is validated on its own).
    type: path
    default: /etc/cufile.json
  state:
    description:
      - V(present) writes the validated document; V(absent) removes the file (or link), after which
        libcufile uses its built-in defaults, which differ from the shipped file.
    type: str
    choices: [present, absent]
    default: present
  settings:
    description:
      - Keys to set, as nested sections (a C(properties) dictionary holding C(io_batchsize), and so on),
        deep-merged over the base document or O(src). Objects merge key by key; arrays and scalars replace the base value.
      - A V(null) value removes the key from the result, so libcufile falls back to its built-in default.
      - At most 1 MiB written as JSON, as any cufile.json text the module reads (O(src), the file at O(path),
        O(env_path_json)); a bigger one is refused before it is parsed, naming the option.
    type: dict
  base:
    description:
      - What O(settings) is merged over when O(src) is not given. Unset with O(settings) unset too
        (and no O(src)), the file on the host is kept as it is.
      - V(shipped) (used when only O(settings) are given) is the cufile.json that the host's libcufile
        release ships (see O(cufile_version); libcufile 1.15.1 / CUDA 13.0 today), without its comments.
        The result states it (RV(base), RV(base_release)).
      - V(current) is the file now at O(path) (it must parse), V(empty) is an empty document, so only
        O(settings) is written.
    type: str
    choices: [shipped, current, empty]
  src:
    description:
      - A complete cufile.json (comments allowed) to validate and install, on the controller (looked up
        like other C(files/) sources) or, with O(remote_src=true), on the target. O(settings) are merged
        over it. At most 1 MiB.
    type: path
  remote_src:
    description: O(src) is a path on the target host.
    type: bool
    default: false
  backup:
    description:
      - Keep a time-stamped copy of the previous file next to O(path) before changing it. A replaced
        symlink is kept as a symlink with the same target.
    type: bool
    default: false
  env_path_json:
    description:
      - Path on the target of the file that C(CUFILE_ENV_PATH_JSON) names for the GDS applications. It
        is read (not changed) and validated on its own and overlaid on the planned document; a task
        whose result libcufile would refuse fails. A missing file is ignored (as libcufile ignores it).
    type: path
  cufile_version:
    description:
      - The libcufile release the file is for; it picks the release's view of the key schema and the
        shipped defaults of O(base=shipped).
      - V(auto) (the default) takes the release of the libcufile the host's applications load (C(libcufile.so.0) in
        the CUDA and linker directories). A release given explicitly must be the host's; it is used as given
        only on a host without libcufile. With V(auto) and no libcufile on the host, check mode plans against the
        newest release that has a shipped file (with a warning) and a real run fails.
      - Known releases are V(1.13) to V(1.20) (a full version such as V(1.17.1.22) selects its release). Each
        release's view comes from the 1.15 schema and the sweep of the real libraries
        (C(schemas/cufile-releases.json)); a key the release does not read is accepted with a warning naming the
        release (for example C(ignored by libcufile 1.13 - added in 1.16)), and a wrong value is reported with
        that release's reaction (C(cuFileDriverOpen) -22 up to 1.18, 5002 from 1.19, an abort or a crash). An
        unknown release fails the task and nothing is written.
      - O(base=shipped) is refused for every release but V(1.15), because the collection has only the file
        CUDA 13.0 ships.
    type: str
    default: auto
  mode:
    description: Permissions of the file (the module's default is V("0644")).
    type: raw
    default: "0644"
  owner:
    description: Owner of the file.
    type: str
    default: root
  group:
    description: Group of the file.
    type: str
    default: root
  _cufile:
    description:
      - Internal. The action plugin of this module sets it for the plan and apply phases
        (phase, src text, validated content, expected fingerprint, host paths to check). Never set it in a task.
    type: dict
notes:
  - Runs in two steps over one connection when something changes (plan on the target, validate on the
    controller, apply on the target); the apply step refuses to write when the file changed in between.
  - Host paths libcufile requires to exist (C(logging.dir), C(denylist.devices), C(denylist.mounts),
    C(fs.*.mount_table) keys) are checked on the target.
  - C(properties.allow_compat_mode=false) on a host without the nvidia_fs module makes every
    C(cuFileDriverOpen) fail (5001); the module warns when it sees that combination.
seealso:
  - name: GPUDirect Storage configuration guide (GDS parameters)
    description: NVIDIA's description of the cufile.json parameters.
    link: https://docs.nvidia.com/gpudirect-storage/configuration-guide/index.html
"""

EXAMPLES = r"""
- name: Local NVMe, GDS only (compat mode forbidden, so a missing nvidia-fs fails loudly)
  gpudirect.storage.cufile_config:
    settings:
      properties:
        allow_compat_mode: false
        use_poll_mode: true
        poll_mode_max_size_kb: 4
      logging:
        level: ERROR
    backup: true

- name: Lustre over RDMA with dynamic routing through two client NICs
  gpudirect.storage.cufile_config:
    settings:
      properties:
        rdma_dynamic_routing: true
        rdma_dev_addr_list: ["172.172.1.40", "172.172.1.42"]
      fs:
        lustre:
          posix_gds_min_kb: 0
          mount_table:
            /lustre/ai200_01/client:
              rdma_dev_addr_list: ["172.172.1.40"]
            /lustre/ai200_02/client:
              rdma_dev_addr_list: ["172.172.1.42"]

- name: NFS over RDMA (NFSoRDMA) with the client NIC list and GDS writes to RDMA storage
  gpudirect.storage.cufile_config:
    settings:
      properties:
        gds_rdma_write_support: true
      fs:
        nfs:
          rdma_dev_addr_list: ["192.168.10.11", "192.168.10.12"]

- name: Keep the file on the host, only raise the batch size and drop a key
  gpudirect.storage.cufile_config:
    base: current
    settings:
      properties:
        io_batchsize: 256
        max_device_cache_size_kb: 262144
        rdma_load_balancing_policy: null

- name: Install a reviewed file from the playbook's files/ directory (comments allowed)
  gpudirect.storage.cufile_config:
    src: cufile.json

- name: Manage the per-application overlay and check it against /etc/cufile.json
  gpudirect.storage.cufile_config:
    path: /etc/gds/app-cufile.json
    base: empty
    settings:
      logging:
        dir: /var/log/gds
        level: INFO
    env_path_json: /etc/gds/app-cufile.json
"""

RETURN = r"""
path:
  description: The managed file.
  returned: always
  type: str
  sample: /etc/cufile.json
cufile:
  description: The document now in effect at O(path) (or planned, in check mode); null for O(state=absent).
  returned: success
  type: dict
  sample: {"properties": {"allow_compat_mode": false, "io_batchsize": 128}}
findings:
  description:
    - Validation findings (warnings when the task succeeds, errors and warnings when it fails). Each has
      C(path) (JSON path such as C(properties.io_batchsize)), C(value), C(severity) (error or warning),
      C(effect) (what libcufile does with it - ignored, load_fails, aborts or accepted), C(message),
      C(suggestion) (the real key for an unknown one), C(line), C(column), C(code) and C(source).
    - At most 50 findings, errors first; a last one with C(code=more-findings) counts the others (its C(value)
      holds the counts, keyed C(error) and C(warning)). A C(value) longer than 200 characters as JSON is returned
      as cut JSON text.
  returned: always
  type: list
  elements: dict
  sample:
    - path: execution.allow_compat_mode
      value: false
      severity: error
      effect: ignored
      message: "execution.allow_compat_mode: unknown key in execution (value false); libcufile 1.15 ignores it silently ..."
      suggestion: properties.allow_compat_mode
      line: null
      column: null
      code: unknown-key
      source: /etc/cufile.json
backup_file:
  description: The backup of the previous file (a symlink when a symlink was replaced).
  returned: when O(backup=true) and something was replaced or removed
  type: str
  sample: /etc/cufile.json.2201.2026-11-23@10:11:12~
link_target:
  description: Where O(path) pointed when it was a symlink before this task (for example C(/etc/alternatives/cufile.json)).
  returned: success (null when it was not a symlink)
  type: str
  sample: /etc/alternatives/cufile.json
reasons:
  description: Why the file changed or would change (create, content, replace-symlink, replace-unparsable, attributes, remove).
  returned: success
  type: list
  elements: str
  sample: [content]
kept:
  description: True when no O(settings), O(src) or O(base) was set, so the host's file was left as it is.
  returned: success, O(state=present)
  type: bool
  sample: true
valid:
  description: For a kept file, whether it passes validation (null when there is nothing to validate or the host's release is unknown).
  returned: when RV(kept)
  type: bool
  sample: true
base:
  description: What the document was built from - V(keep), V(shipped), V(current), V(empty) or V(src).
  returned: success, O(state=present)
  type: str
  sample: shipped
base_release:
  description: The shipped file used as V(shipped) base.
  returned: when RV(base) is V(shipped)
  type: str
  sample: libcufile 1.15.1 (CUDA 13.0)
libcufile:
  description:
    - The host's libcufile (C(path), C(version)) and the release used (C(release)) with where it came from
      (C(source) - host, cufile_version, assumed in check mode without libcufile, unknown).
  returned: success, O(state=present)
  type: dict
  sample: {"path": "/usr/local/cuda/lib64/libcufile.so.0", "version": "1.15.1", "release": "1.15", "source": "host"}
validation_note:
  description: Why a kept file was validated against another release than the host's, or not at all.
  returned: sometimes
  type: str
msg:
  description: For a kept file, what was left as it is.
  returned: when RV(kept)
  type: str
  sample: /etc/cufile.json left as it is (a file) - no cufile option (settings, src, base) is set
"""

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.cufile_config import (
    CufileConfigError, arguments, run_plan)
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.cufile_config_apply import run_apply


def main():
    module = arguments().create_ansible_module(supports_check_mode=True)
    phase = (module.params["_cufile"] or {}).get("phase")
    if phase not in ("plan", "apply"):
        module.fail_json(msg="gpudirect.storage.cufile_config validates on the controller: run it as a task "
                             "(its action plugin), not as a bare module")
    try:
        result = run_plan(module) if phase == "plan" else run_apply(module)
    except CufileConfigError as exc:
        module.fail_json(msg=str(exc), path=module.params["path"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
