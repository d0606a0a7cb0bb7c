# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Test data for the cufile.json validator, typed from the cufile-keys reference (not from the
schema, so the tests cross-check the schema against the reference)."""

from __future__ import annotations

# Every JSON path libcufile 1.15.1 reads (reference section 2: the 64 paths of the string table),
# with the CUDA 13.0 shipped value, or for keys the shipped file lacks / comments out, a value the
# reference shows libcufile accepting.
REFERENCE_KEYS = {
    "logging.dir": "/tmp",
    "logging.level": "ERROR",
    "profile.nvtx": False,
    "profile.cufile_stats": 0,
    "execution.max_io_queue_depth": 128,
    "execution.max_io_threads": 4,
    "execution.parallel_io": True,
    "execution.min_io_threshold_size_kb": 8192,
    "execution.max_request_parallelism": 4,
    "properties.max_direct_io_size_kb": 16384,
    "properties.max_device_cache_size_kb": 131072,
    "properties.per_buffer_cache_size_kb": 1024,
    "properties.max_device_pinned_mem_size_kb": 33554432,
    "properties.posix_pool_slab_size_kb": [4, 1024, 16384],
    "properties.posix_pool_slab_count": [128, 64, 64],
    "properties.use_poll_mode": False,
    "properties.poll_mode_max_size_kb": 4,
    "properties.io_batchsize": 128,
    "properties.max_batch_io_timeout_msecs": 5,
    "properties.allow_compat_mode": True,
    "properties.force_compat_mode": False,
    "properties.use_pci_p2pdma": False,
    "properties.gds_rdma_write_support": True,
    "properties.allow_system_memory": True,
    "properties.force_odirect_mode": False,
    "properties.prefer_iouring": False,
    "properties.io_priority": "default",
    "properties.rdma_dev_addr_list": [],
    "properties.rdma_load_balancing_policy": "RoundRobin",
    "properties.rdma_dc_key": "0xffeeddcc",
    "properties.rdma_access_mask": "0x1f",
    "properties.rdma_dynamic_routing": False,
    "properties.rdma_dynamic_routing_order": ["GPU_MEM_NVLINKS", "GPU_MEM", "SYS_MEM", "P2P"],
    "properties.rdma_peer_type": "dmabuf",
    "properties.rdma_service_level": 0,
    "properties.rdma_topN_ranks": 1,
    "fs.generic.posix_unaligned_writes": False,
    "fs.lustre.posix_gds_min_kb": 0,
    "fs.lustre.rdma_dev_addr_list": [],
    "fs.lustre.mount_table": {},
    "fs.beegfs.posix_gds_min_kb": 0,
    "fs.beegfs.rdma_dev_addr_list": [],
    "fs.beegfs.mount_table": {},
    "fs.scatefs.posix_gds_min_kb": 0,
    "fs.scatefs.rdma_dev_addr_list": [],
    "fs.scatefs.mount_table": {},
    "fs.nfs.rdma_dev_addr_list": [],
    "fs.nfs.mount_table": {},
    "fs.gpfs.gds_write_support": False,
    "fs.gpfs.gds_async_support": True,
    "fs.gpfs.rdma_dev_addr_list": [],
    "fs.gpfs.mount_table": {},
    "fs.weka.rdma_write_support": False,
    "fs.weka.rdma_dev_addr_list": [],
    "fs.weka.mount_table": {},
    "denylist.drivers": [],
    "denylist.devices": [],
    "denylist.mounts": [],
    "denylist.filesystems": [],
    "denylist.fsids": [],
    "miscellaneous.api_check_aggressive": False,
    "miscellaneous.skip_topology_detection": False,
    "miscellaneous.stream_memops_bypass": False,
    "miscellaneous.rcu_library_used": "ck",
}

# Reference section 2.10: keys of newer releases that 1.15.1 ignores.
NEWER_KEYS = {
    "logging.max_file_size_mb": 32,
    "properties.gpu_bounce_buffer_slab_config": {"slab_size_kb": [1024, 8192], "slab_count": [128, 8]},
    "miscellaneous.enable_static_routing": False,
    "miscellaneous.static_routing_filepath": "/etc/topology.json",
    "fs.lustre.use_pci_p2pdma": False,
    "fs.beegfs.use_pci_p2pdma": False,
    "fs.scatefs.use_pci_p2pdma": False,
    "fs.nfs.use_pci_p2pdma": False,
    "fs.gpfs.use_pci_p2pdma": False,
    "fs.virtiofs": {"use_pci_p2pdma": False},
    "block": {"nvme": {"use_pci_p2pdma": False}, "nvmeof": {"use_pci_p2pdma": False}, "raid": {"use_pci_p2pdma": False}},
}


def nest(dotted, value, doc=None):
    """``doc`` (a new dict by default) with ``value`` at the dotted path: {"a": {"b": value}} for "a.b"."""
    doc = {} if doc is None else doc
    *parents, leaf = dotted.split(".")
    target = doc
    for part in parents:
        target = target.setdefault(part, {})
    target[leaf] = value
    return doc


def wrong_type(value):
    """A value of another JSON type, the kind of mistake the reference lists as fatal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return 1
    if isinstance(value, list):
        return "x"
    if isinstance(value, dict):
        return []
    raise AssertionError(value)
