# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The cufile.json each known libcufile release ships, as data. PRIVATE to the collection.

One entry of :data:`RELEASES` per libcufile release the collection knows (major.minor, the
release of ``schemas/cufile-<release>.schema.json``): the CUDA release that ships it and its
shipped document. A new release is one more entry (and one more schema file); nothing else
looks versions up. Today: libcufile 1.15 (CUDA 13.0).

Target-side (the module's ``base: shipped``), so it is Python and not read from the schema
file; a unit test checks that it equals the schema's ``x-shipped`` values, and
tests/fixtures/cufile/cuda-13.0-shipped.json is the same content with the shipped comments.
Keys the shipped file only has commented out (logging.dir, properties.rdma_dc_key,
properties.rdma_access_mask, fs.*.rdma_dev_addr_list, fs.*.mount_table) are absent.
"""

from __future__ import annotations

import copy

from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.releases import known_releases as measured_releases
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.releases import release_of


class ReleaseError(ValueError):
    """No release to write for, or not the host's; ``str()`` is the message for the task."""


_SHIPPED_1_15 = {
    "logging": {
        "level": "ERROR",
    },
    "profile": {
        "nvtx": False,
        "cufile_stats": 0,
    },
    "execution": {
        "max_io_queue_depth": 128,
        "max_io_threads": 4,
        "parallel_io": True,
        "min_io_threshold_size_kb": 8192,
        "max_request_parallelism": 4,
    },
    "properties": {
        "max_direct_io_size_kb": 16384,
        "max_device_cache_size_kb": 131072,
        "per_buffer_cache_size_kb": 1024,
        "max_device_pinned_mem_size_kb": 33554432,
        "posix_pool_slab_size_kb": [4, 1024, 16384],
        "posix_pool_slab_count": [128, 64, 64],
        "use_poll_mode": False,
        "poll_mode_max_size_kb": 4,
        "io_batchsize": 128,
        "allow_compat_mode": True,
        "use_pci_p2pdma": False,
        "gds_rdma_write_support": True,
        "io_priority": "default",
        "rdma_dev_addr_list": [],
        "rdma_load_balancing_policy": "RoundRobin",
        "rdma_dynamic_routing": False,
        "rdma_dynamic_routing_order": ["GPU_MEM_NVLINKS", "GPU_MEM", "SYS_MEM", "P2P"],
    },
    "fs": {
        "generic": {
            "posix_unaligned_writes": False,
        },
        "lustre": {
            "posix_gds_min_kb": 0,
        },
        "beegfs": {
            "posix_gds_min_kb": 0,
        },
        "nfs": {},
        "gpfs": {
            "gds_write_support": False,
            "gds_async_support": True,
        },
        "weka": {
            "rdma_write_support": False,
        },
    },
    "denylist": {
        "drivers": [],
        "devices": [],
        "mounts": [],
        "filesystems": [],
    },
    "miscellaneous": {
        "api_check_aggressive": False,
    },
}


# libcufile major.minor -> what ships it. Keep the newest last.
RELEASES = {
    "1.15": {"cuda": "13.0", "libcufile": "1.15.1", "document": _SHIPPED_1_15},
}
NEWEST = "1.15"


def release_key(version):
    """"1.15.1" -> "1.15"; None for something that is not a dotted version."""
    parts = str(version or "").split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts[:2]):
        return None
    return "%d.%d" % (int(parts[0]), int(parts[1]))


def known_releases():
    return sorted(RELEASES, key=lambda v: tuple(int(p) for p in v.split(".")))


def release(version):
    """The table entry for libcufile ``version`` ("1.15" or "1.15.1"), or None when unknown."""
    return RELEASES.get(release_key(version))


def host_libcufile(paths=None):
    """The libcufile the host's GDS applications load, found as gds_facts finds it:
    {"path": ..., "version": "1.15.1" or None}."""
    from ansible_collections.gpudirect.storage.plugins.module_utils._gds.collectors import Collector
    lib = Collector(paths or HostPaths(), None).libraries()["libcufile"]
    return {"path": lib.get("path"), "version": lib.get("version")}


def choose_release(requested, host, check_mode):
    """(release, source, warning): the libcufile release (major.minor) whose schema and shipped
    file the document is for - never one other than the host's. ``requested``: the
    cufile_version option (``auto`` or a release); ``host``: :func:`host_libcufile`."""
    host_release = release_key(host.get("version"))
    if requested and requested != "auto":
        wanted = release_key(requested)
        if wanted is None:
            raise ReleaseError("cufile_version %r: expected auto or a libcufile release such as %s"
                               % (requested, NEWEST))
        if host_release and host_release != wanted:
            raise ReleaseError("cufile_version is %s, but the host's libcufile is %s (%s): the file would be written "
                               "for a release the host does not run; set cufile_version: auto (or %s); nothing was written"
                               % (requested, host["version"], host["path"], host_release))
        return wanted, "cufile_version", None
    if host_release:
        return host_release, "host", None
    if host.get("path"):
        raise ReleaseError("cufile_version auto: the host's libcufile %s carries no release in its file name; "
                           "set cufile_version to its release (e.g. %s); nothing was written"
                           % (host["path"], NEWEST))
    if check_mode:
        return NEWEST, "assumed", (
            "cufile_version auto: no libcufile on the host yet (the nvidia_fs stage installs it); planned against "
            "libcufile %s, the host's release is checked again when the task runs" % NEWEST)
    raise ReleaseError("cufile_version auto: no libcufile on the host to take the release from; install the GDS "
                       "user space first (the nvidia_fs role's libcufile-<cuda> package) or set cufile_version; "
                       "nothing was written")


def known_release(key, source, host):
    """Refuse a release the collection has no measured view of (plugins/module_utils/_cufile/releases.py), naming
    the known ones. Its shipped file is a separate question (cufile_config.shipped_refusal)."""
    if release_of(key) is None:
        whose = "the host's libcufile %s" % host.get("version") if source == "host" else "libcufile %s" % key
        raise ReleaseError("%s is unknown to the collection (known releases: %s): it can neither validate a "
                           "cufile.json for it nor start from its shipped defaults; nothing was written. Leave "
                           "the cufile options unset to keep the host's file as it is"
                           % (whose, ", ".join(measured_releases())))


def shipped(version=NEWEST):
    """A fresh copy of the document libcufile ``version`` ships (callers may modify it); KeyError
    naming the known releases when the collection does not know it."""
    entry = release(version)
    if entry is None:
        raise KeyError("libcufile %s is unknown to the collection (known: %s)" % (version, ", ".join(known_releases())))
    return copy.deepcopy(entry["document"])
