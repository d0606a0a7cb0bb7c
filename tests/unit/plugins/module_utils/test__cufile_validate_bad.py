# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Bad cufile.json inputs: every trap of the reference (sections 1, 3 and 5) written by hand,
plus hypothesis fuzzing of types, values and paths. Each must be rejected with an error that
names a JSON path."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings, strategies as st

from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.findings import EFFECTS
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import format_path
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.schema import load_schema
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate import lint_document, lint_text
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.cufile_cases import (
    REFERENCE_KEYS, nest, wrong_type)

SCHEMA = load_schema("1.15")
P = "properties"

# (case id, text or document, JSON path of the expected error, effect[, suggested key])
SYNTAX = [(name, text, "$", "load_fails") for name, text in [
    ("hash_comment", '{"a": 1 # c\n}'), ("hash_line", '# c\n{}'), ("trailing_comma", '{"a": 1,}'),
    ("trailing_comma_array", '{"a": [1,]}'), ("trailing_comma_nested", '{"a": {"b": 1,},}'),
    ("single_quote_key", "{'a': 1}"), ("single_quote_value", '{"a": \'b\'}'), ("bom", u'\ufeff{}'),
    ("bom_bytes", b'\xef\xbb\xbf{}'), ("empty_file", ""), ("blank_file", "\n\n"), ("comment_only", "/* x */"),
    ("syntax_err", '{"properties": {"io_batchsize": 1}'), ("open_array", '{"a": [1'),
    ("missing_colon", '{"a" 1}'), ("missing_comma", '{"a": 1 "b": 2}'), ("unterminated_string", '{"a": "x}'),
    ("unterminated_block", '{"a": 1 /*'), ("bad_escape", '{"a": "\\x"}'), ("python_true", '{"a": True}'),
    ("nan", '{"a": NaN}'), ("unquoted_key", '{a: 1}'), ("plus_number", '{"a": +1}'), ("point_five", '{"a": .5}'),
    ("hex_number", '{"a": 0x40}'), ("lone_slash", '{"a": 1 /}'), ("yaml", 'properties:\n  io_batchsize: 1\n'),
]]

# Content after the document: libcufile 1.15.1 loads the file and ignores it (measured), so it is an
# error with effect "ignored", like an unknown key.
TRAILING = [(name, text, "$", "ignored") for name, text in [
    ("extra_close", '{}}'), ("extra_bracket", '{} ]'), ("garbage_after", '{} x'), ("open_block_after", '{} /*'),
    ("hash_after", '{}\n# c'), ("second_document", '{"properties": {"io_batchsize": 1}} {"properties": {"io_batchsize": 999}}'),
]]

ABORTS = [(name, doc, path, "aborts") for name, doc, path in [
    ("deny_str", {"denylist": "nvme"}, "denylist"),
    ("props_array", {"properties": []}, P),
    ("props_str", {"properties": "x"}, P),
    ("logging_str", {"logging": "x"}, "logging"),
    ("exec_array", {"execution": []}, "execution"),
    ("fs_str", {"fs": "x"}, "fs"),
    ("fs_generic_str", {"fs": {"generic": "x"}}, "fs.generic"),
    ("fs_lustre_num", {"fs": {"lustre": 1}}, "fs.lustre"),
    ("profile_num", {"profile": 1}, "profile"),
    ("misc_array", {"miscellaneous": []}, "miscellaneous"),
    ("root_42", 42, "$"),
    ("root_str", '"x"', "$"),
    ("root_array", [1], "$"),
    ("root_true", True, "$"),
    ("max_io_threads_u32", {"execution": {"max_io_threads": 4294967300}}, "execution.max_io_threads"),
    ("min_io_threshold_u32", {"execution": {"min_io_threshold_size_kb": 2 ** 33}}, "execution.min_io_threshold_size_kb"),
    ("cufile_stats_u32", {"profile": {"cufile_stats": 2 ** 40}}, "profile.cufile_stats"),
    # measured on libcufile 1.15.1 ('LargestUInt out of UInt range', SIGABRT)
    ("queue_depth_u32", {"execution": {"max_io_queue_depth": 2 ** 32}}, "execution.max_io_queue_depth"),
    ("parallelism_u32", {"execution": {"max_request_parallelism": 2 ** 32}}, "execution.max_request_parallelism"),
    ("lustre_min_u32", {"fs": {"lustre": {"posix_gds_min_kb": 2 ** 32}}}, "fs.lustre.posix_gds_min_kb"),
    ("beegfs_min_u32", {"fs": {"beegfs": {"posix_gds_min_kb": 2 ** 32}}}, "fs.beegfs.posix_gds_min_kb"),
    ("scatefs_min_u32", {"fs": {"scatefs": {"posix_gds_min_kb": 2 ** 32}}}, "fs.scatefs.posix_gds_min_kb"),
    ("root_obj_in_array", [{}], "$"),
    # measured: slab sizes given without counts, of another length than the 3 built-in counts
    ("slab_lengths_default_counts", {P: {"posix_pool_slab_size_kb": [4, 8]}}, "properties.posix_pool_slab_size_kb"),
    ("slab_sizes_4_counts_empty", {P: {"posix_pool_slab_size_kb": [4, 8, 16, 32], "posix_pool_slab_count": []}},
     "properties.posix_pool_slab_size_kb"),
]]

# Reference section 1 "type rules": a wrong JSON type for every one of the 64 keys is fatal.
TYPES = [("type_" + dotted, nest(dotted, wrong_type(value)), dotted, "load_fails")
         for dotted, value in sorted(REFERENCE_KEYS.items()) if dotted != "denylist.fsids"]  # fsids: any value loads
TYPES += [(name, doc, path, "load_fails") for name, doc, path in [
    ("bool_as_1", {P: {"use_poll_mode": 1}}, "properties.use_poll_mode"),
    ("bool_as_str_false", {P: {"allow_compat_mode": "false"}}, "properties.allow_compat_mode"),
    ("bool_yes", {P: {"gds_rdma_write_support": "yes"}}, "properties.gds_rdma_write_support"),
    ("nvtx_str", {"profile": {"nvtx": "false"}}, "profile.nvtx"),
    ("gpfs_write_1", {"fs": {"gpfs": {"gds_write_support": 1}}}, "fs.gpfs.gds_write_support"),
    ("api_check_1", {"miscellaneous": {"api_check_aggressive": 1}}, "miscellaneous.api_check_aggressive"),
    ("num_str_level", {"logging": {"level": 3}}, "logging.level"),
    ("dc_key_int", {P: {"rdma_dc_key": 1}}, "properties.rdma_dc_key"),
    ("rcu_int", {"miscellaneous": {"rcu_library_used": 2}}, "miscellaneous.rcu_library_used"),
    ("access_mask_int", {P: {"rdma_access_mask": 31}}, "properties.rdma_access_mask"),
    ("service_level_str", {P: {"rdma_service_level": "3"}}, "properties.rdma_service_level"),
    ("topn_str", {P: {"rdma_topN_ranks": "1"}}, "properties.rdma_topN_ranks"),
    ("addr_list_str", {P: {"rdma_dev_addr_list": "10.0.0.1"}}, "properties.rdma_dev_addr_list"),
    ("addr_list_int_item", {P: {"rdma_dev_addr_list": [10]}}, "properties.rdma_dev_addr_list[0]"),
    ("drivers_str", {"denylist": {"drivers": "nvme"}}, "denylist.drivers"),
    ("filesystems_str", {"denylist": {"filesystems": "lustre"}}, "denylist.filesystems"),
    ("nested_deny", {"denylist": {"drivers": [["nvme"]]}}, "denylist.drivers[0]"),
    ("deny_null_item", {"denylist": {"mounts": [None]}}, "denylist.mounts[0]"),
    ("routing_order_str", {P: {"rdma_dynamic_routing_order": "SYS_MEM"}}, "properties.rdma_dynamic_routing_order"),
    ("float_arr", {P: {"posix_pool_slab_size_kb": [64.5, 64, 64]}}, "properties.posix_pool_slab_size_kb[0]"),
    ("float_arr_integral", {P: {"posix_pool_slab_count": [128.0, 64, 64]}}, "properties.posix_pool_slab_count[0]"),
    ("bool_arr", {P: {"posix_pool_slab_count": [True, 64, 64]}}, "properties.posix_pool_slab_count[0]"),
    ("slab_scalar", {P: {"posix_pool_slab_size_kb": 4}}, "properties.posix_pool_slab_size_kb"),
    ("slab_count_scalar", {P: {"posix_pool_slab_count": 128}}, "properties.posix_pool_slab_count"),
    ("mount_table_array", {"fs": {"lustre": {"mount_table": []}}}, "fs.lustre.mount_table"),
    ("mount_entry_str", {"fs": {"nfs": {"mount_table": {"/tmp": "10.0.0.1"}}}}, 'fs.nfs.mount_table["/tmp"]'),
    ("mount_entry_list_str", {"fs": {"gpfs": {"mount_table": {"/tmp": {"rdma_dev_addr_list": "10.0.0.1"}}}}},
     'fs.gpfs.mount_table["/tmp"].rdma_dev_addr_list'),
    ("int_as_str", {P: {"io_batchsize": "128"}}, "properties.io_batchsize"),
    ("int_as_obj", {"execution": {"max_io_threads": {}}}, "execution.max_io_threads"),
    ("big_float", {P: {"io_batchsize": 1e20}}, "properties.io_batchsize"),
    # measured: integers beyond jsoncpp's 64-bit range are doubles, 'json type mismatch'
    ("u64_batch", {P: {"io_batchsize": 2 ** 64}}, "properties.io_batchsize"),
    ("u64_threads", {"execution": {"max_io_threads": 2 ** 64}}, "execution.max_io_threads"),
    ("u64_pinned", {P: {"max_device_pinned_mem_size_kb": 2 ** 64}}, "properties.max_device_pinned_mem_size_kb"),
    ("u64_cache", {P: {"max_device_cache_size_kb": 2 ** 64}}, "properties.max_device_cache_size_kb"),
    ("i32_service_level", {P: {"rdma_service_level": 2 ** 32}}, "properties.rdma_service_level"),
    ("i32_topn", {P: {"rdma_topN_ranks": 2 ** 32}}, "properties.rdma_topN_ranks"),
    ("i32_slab_item", {P: {"posix_pool_slab_size_kb": [2 ** 32, 1024, 16384]}}, "properties.posix_pool_slab_size_kb[0]"),
    ("i32_count_item", {P: {"posix_pool_slab_count": [2 ** 32, 64, 64]}}, "properties.posix_pool_slab_count[0]"),
    ("neg_float", {P: {"io_batchsize": -1.5}}, "properties.io_batchsize"),
]]

RANGES = [(name, {section: {key: value}}, section + "." + key, "load_fails") for name, section, key, value in [
    ("queue_0", "execution", "max_io_queue_depth", 0), ("queue_257", "execution", "max_io_queue_depth", 257),
    ("threads_33", "execution", "max_io_threads", 33), ("threads_neg", "execution", "max_io_threads", -1),
    ("parallelism_9", "execution", "max_request_parallelism", 9), ("threshold_3", "execution", "min_io_threshold_size_kb", 3),
    ("threshold_0", "execution", "min_io_threshold_size_kb", 0),
    ("direct_32", P, "max_direct_io_size_kb", 32), ("direct_16448", P, "max_direct_io_size_kb", 16448),
    ("direct_1000", P, "max_direct_io_size_kb", 1000), ("direct_4100", P, "max_direct_io_size_kb", 4100),
    ("direct_bytes", P, "max_direct_io_size_kb", 16777216),
    ("buffer_100", P, "per_buffer_cache_size_kb", 100), ("buffer_32", P, "per_buffer_cache_size_kb", 32),
    ("buffer_32768", P, "per_buffer_cache_size_kb", 32768), ("buffer_bytes", P, "per_buffer_cache_size_kb", 1048576),
    ("cache_131073", P, "max_device_cache_size_kb", 131073), ("cache_4098", P, "max_device_cache_size_kb", 4098),
    ("cache_neg", P, "max_device_cache_size_kb", -4),
    ("pinned_60", P, "max_device_pinned_mem_size_kb", 60), ("pinned_66", P, "max_device_pinned_mem_size_kb", 66),
    ("poll_0", P, "poll_mode_max_size_kb", 0), ("poll_6", P, "poll_mode_max_size_kb", 6),
    ("batch_0", P, "io_batchsize", 0), ("batch_257", P, "io_batchsize", 257), ("batch_neg", P, "io_batchsize", -1),
    ("batch_false", P, "io_batchsize", False), ("batch_u32", P, "io_batchsize", 2 ** 32),
    ("timeout_u32", P, "max_batch_io_timeout_msecs", 2 ** 32), ("direct_u32", P, "max_direct_io_size_kb", 2 ** 32),
    ("buffer_u32", P, "per_buffer_cache_size_kb", 2 ** 32),
    ("timeout_0", P, "max_batch_io_timeout_msecs", 0), ("timeout_1001", P, "max_batch_io_timeout_msecs", 1001),
    ("stats_neg", "profile", "cufile_stats", -1), ("service_level_neg", P, "rdma_service_level", -1),
    ("dir_empty", "logging", "dir", ""),
]]
RANGES += [(name, doc, path, "load_fails") for name, doc, path in [
    ("slab_align", {P: {"posix_pool_slab_size_kb": [4, 1025, 16384]}}, "properties.posix_pool_slab_size_kb[1]"),
    ("lustre_min_neg", {"fs": {"lustre": {"posix_gds_min_kb": -4}}}, "fs.lustre.posix_gds_min_kb"),
    ("routing_sys", {P: {"rdma_dynamic_routing_order": ["SYS"]}}, "properties.rdma_dynamic_routing_order[0]"),
    ("routing_case", {P: {"rdma_dynamic_routing_order": ["GPU_MEM", "sys_mem"]}}, "properties.rdma_dynamic_routing_order[1]"),
    ("peer_mem", {P: {"rdma_peer_type": "peer_mem"}}, "properties.rdma_peer_type"),
    ("peer_bogus", {P: {"rdma_peer_type": "bogus"}}, "properties.rdma_peer_type"),
    ("dc_key_zz", {P: {"rdma_dc_key": "zz"}}, "properties.rdma_dc_key"),
    ("dc_key_long", {P: {"rdma_dc_key": "0x1ffeeddcc"}}, "properties.rdma_dc_key"),
    ("mask_word", {P: {"rdma_access_mask": "all"}}, "properties.rdma_access_mask"),
    ("slab_lengths", {P: {"posix_pool_slab_size_kb": [4, 1024], "posix_pool_slab_count": [1, 2, 3]}},
     "properties.posix_pool_slab_count"),                                                   # case slab_mis
    ("slab_lengths_default_sizes", {P: {"posix_pool_slab_count": [1]}}, "properties.posix_pool_slab_count"),
    ("direct_below_default_buffer_512", {P: {"max_direct_io_size_kb": 512}}, "properties.per_buffer_cache_size_kb"),
    ("direct_below_default_buffer_64", {P: {"max_direct_io_size_kb": 64}}, "properties.per_buffer_cache_size_kb"),
    ("buffer_above_default_direct", {P: {"per_buffer_cache_size_kb": 2048}}, "properties.per_buffer_cache_size_kb"),
    ("buffer_above_direct", {P: {"max_direct_io_size_kb": 1024, "per_buffer_cache_size_kb": 4096}},
     "properties.per_buffer_cache_size_kb"),
]]

# Reference section 3: wrong keys seen in the wild, silently ignored by libcufile -> errors with the real key.
UNKNOWN = [(name, doc, path, "ignored", suggestion) for name, doc, path, suggestion in [
    ("compat_exec", {"execution": {"allow_compat_mode": False}}, "execution.allow_compat_mode", "properties.allow_compat_mode"),
    ("use_compat_false", {P: {"use_compat_mode": False}}, "properties.use_compat_mode", "properties.allow_compat_mode"),
    ("max_batch_root", {"max_batch_io_size": 64}, "max_batch_io_size", "properties.io_batchsize"),
    ("max_batch", {P: {"max_batch_io_size": 64}}, "properties.max_batch_io_size", "properties.io_batchsize"),
    ("batch_profile", {"profile": {"io_batchsize": 128}}, "profile.io_batchsize", "properties.io_batchsize"),
    ("gds_batch_size", {P: {"gds_batch_size": 8}}, "properties.gds_batch_size", "properties.io_batchsize"),
    ("nounit_cache", {P: {"max_device_cache_size": 134217728}}, "properties.max_device_cache_size",
     "properties.max_device_cache_size_kb"),
    ("pinned_api_name", {P: {"max_pinned_memory_size": 1}}, "properties.max_pinned_memory_size",
     "properties.max_device_pinned_mem_size_kb"),
    ("pinned_no_kb", {P: {"max_device_pinned_mem_size": 1}}, "properties.max_device_pinned_mem_size",
     "properties.max_device_pinned_mem_size_kb"),
    ("pinned_kb", {P: {"max_device_pinned_mem_kb": 1}}, "properties.max_device_pinned_mem_kb", "properties.max_device_pinned_mem_size_kb"),
    ("nounit_direct", {P: {"max_direct_io_size": 16777216}}, "properties.max_direct_io_size", "properties.max_direct_io_size_kb"),
    ("io_chunk", {"execution": {"max_io_chunk_size": 1}}, "execution.max_io_chunk_size", "properties.max_direct_io_size_kb"),
    ("direct_chunk", {P: {"max_direct_io_chunk_size": 1}}, "properties.max_direct_io_chunk_size", "properties.max_direct_io_size_kb"),
    ("rw_chunk", {P: {"rw_chunk_size": 1}}, "properties.rw_chunk_size", "properties.max_direct_io_size_kb"),
    ("poll_mode", {P: {"poll_mode": True}}, "properties.poll_mode", "properties.use_poll_mode"),
    ("poll_alt", {P: {"poll_mode_threshold_size_kb": 8}}, "properties.poll_mode_threshold_size_kb", "properties.poll_mode_max_size_kb"),
    ("poll_max", {P: {"poll_max_size_kb": 8}}, "properties.poll_max_size_kb", "properties.poll_mode_max_size_kb"),
    ("enable_compat", {P: {"enable_compat_mode": True}}, "properties.enable_compat_mode", "properties.allow_compat_mode"),
    ("peer_affinity", {P: {"rdma_peer_affinity_policy": "GPU_FLOW"}}, "properties.rdma_peer_affinity_policy",
     "properties.rdma_load_balancing_policy"),
    ("iour2", {P: {"prefer_io_uring": True}}, "properties.prefer_io_uring", "properties.prefer_iouring"),
    ("skipt_p", {P: {"skip_topology_detection": True}}, "properties.skip_topology_detection", "miscellaneous.skip_topology_detection"),
    ("smb_p", {P: {"stream_memops_bypass": True}}, "properties.stream_memops_bypass", "miscellaneous.stream_memops_bypass"),
    ("allowlist", {"allowlist": {"drivers": []}}, "allowlist", "denylist"),
    ("whitelist", {"whitelist": {"drivers": []}}, "whitelist", "denylist"),
    ("blacklist", {"blacklist": {"drivers": ["nvme"]}}, "blacklist", "denylist"),
    ("flat_direct", {"max_direct_io_size_kb": 16384, "max_io_threads": 4}, "max_direct_io_size_kb", "properties.max_direct_io_size_kb"),
    ("flat_threads", {"max_direct_io_size_kb": 16384, "max_io_threads": 4}, "max_io_threads", "execution.max_io_threads"),
    ("flat_compat", {"allow_compat_mode": False}, "allow_compat_mode", "properties.allow_compat_mode"),
    ("case_sec", {"Properties": {"io_batchsize": 1}}, "Properties", "properties"),
    ("case_key", {P: {"IO_BATCHSIZE": 1}}, "properties.IO_BATCHSIZE", "properties.io_batchsize"),
    ("props_fs", {P: {"fs": {"lustre": {}}}}, "properties.fs", "fs"),
    ("props_profiling", {P: {"profiling": {"enable": True}}}, "properties.profiling", "profile"),
    ("fs_ext4", {"fs": {"ext4": {"allow_odirect": True}}}, "fs.ext4", None),
    ("fs_xfs", {"fs": {"xfs": {}}}, "fs.xfs", None),
    ("filesystems", {"filesystems": {"ext4": {"allow_odirect": True}}}, "filesystems", "denylist.filesystems"),
    ("mount_points", {"mountPoints": ["/mnt"]}, "mountPoints", None),
    ("version", {"version": "1.0"}, "version", None),
    ("nfs_posix_min", {"fs": {"nfs": {"posix_gds_min_kb": 4}}}, "fs.nfs.posix_gds_min_kb", None),
    ("weka_posix_min", {"fs": {"weka": {"posix_gds_min_kb": 4}}}, "fs.weka.posix_gds_min_kb", None),
    ("generic_rdma_write", {"fs": {"generic": {"rdma_write_support": True}}}, "fs.generic.rdma_write_support",
     "fs.weka.rdma_write_support"),
    ("nfs_rdma_write", {"fs": {"nfs": {"rdma_write_support": True}}}, "fs.nfs.rdma_write_support", "fs.weka.rdma_write_support"),
    ("lustre_rw_chunk", {"fs": {"lustre": {"rw_chunk_size": 1}}}, "fs.lustre.rw_chunk_size", None),
    ("lustre_dma_mask", {"fs": {"lustre": {"dma_dev_mask": 1}}}, "fs.lustre.dma_dev_mask", None),
    ("lustre_write_sync", {"fs": {"lustre": {"gds_write_sync": True}}}, "fs.lustre.gds_write_sync", None),
    ("slab_size_no_kb", {P: {"posix_pool_slab_size": 4096}}, "properties.posix_pool_slab_size", "properties.posix_pool_slab_size_kb"),
    ("drop_pool", {P: {"posix_drop_pool_slab_size_kb": 4}}, "properties.posix_drop_pool_slab_size_kb", None),
    ("drop_pool_count", {P: {"posix_drop_pool_slab_count": 4}}, "properties.posix_drop_pool_slab_count", None),
    ("logging_type", {"logging": {"type": "file"}}, "logging.type", "logging.dir"),
    ("logging_format", {"logging": {"format": "json"}}, "logging.format", None),
    ("total_threads", {"execution": {"total_threads": 8}}, "execution.total_threads", "execution.max_io_threads"),
    ("allocated_mem", {P: {"max_device_allocated_mem_size": 1}}, "properties.max_device_allocated_mem_size",
     "properties.max_device_cache_size_kb"),
    ("env_config", {"CUFILE_CONFIG": "/etc/cufile.json"}, "CUFILE_CONFIG", None),
    ("env_logging", {"CUFILE_LOGGING": "TRACE"}, "CUFILE_LOGGING", None),
    ("env_log_file", {"CUFILE_LOG_FILE": "/tmp/x"}, "CUFILE_LOG_FILE", None),
    ("env_debug", {"CUFILE_DEBUG": 1}, "CUFILE_DEBUG", None),
    ("env_level", {"logging": {"CUFILE_LOGGING_LEVEL": "TRACE"}}, "logging.CUFILE_LOGGING_LEVEL", "logging.level"),
    ("mt_unknown", {"fs": {"lustre": {"mount_table": {"/tmp": {"rdma_dev_list": []}}}}},
     'fs.lustre.mount_table["/tmp"].rdma_dev_list', 'fs.lustre.mount_table["/tmp"].rdma_dev_addr_list'),
    ("batch_timeout_alt", {P: {"batch_io_timeout_ms": 5}}, "properties.batch_io_timeout_ms", "properties.max_batch_io_timeout_msecs"),
    ("typo_batch", {P: {"io_batch_size": 64}}, "properties.io_batch_size", "properties.io_batchsize"),
    ("typo_direct", {P: {"max_direct_io_size_kbb": 64}}, "properties.max_direct_io_size_kbb", "properties.max_direct_io_size_kb"),
    ("typo_level", {"logging": {"levle": "ERROR"}}, "logging.levle", "logging.level"),
    ("typo_drivers", {"denylist": {"driver": ["nvme"]}}, "denylist.driver", "denylist.drivers"),
    ("typo_section", {"excution": {"max_io_threads": 4}}, "excution", "execution"),
    ("typo_misc", {"misc": {"api_check_aggressive": True}}, "misc", None),
    ("unknown_keys", {"foo": 1}, "foo", None),
    ("dollar_schema", {"$schema": "x"}, '["$schema"]', None),
]]

PATHS = [(name, doc, path, "load_fails") for name, doc, path in [
    ("dir_missing", {"logging": {"dir": "/nonexistent/logs"}}, "logging.dir"),           # case G.dir=0
    ("device_missing", {"denylist": {"devices": ["/dev/nonexistent0"]}}, "denylist.devices[0]"),
    ("mount_missing", {"denylist": {"mounts": ["/tmp", "/nonexistent"]}}, "denylist.mounts[1]"),
    ("mount_table_missing", {"fs": {"lustre": {"mount_table": {"/mnt/x": {"rdma_dev_addr_list": ["1.2.3.4"]}}}}},
     'fs.lustre.mount_table["/mnt/x"]'),
    ("mount_table_not_dir", {"fs": {"weka": {"mount_table": {"/etc/hostname": {"rdma_dev_addr_list": ["1.2.3.4"]}}}}},
     'fs.weka.mount_table["/etc/hostname"]'),
]]

BAD = SYNTAX + TRAILING + ABORTS + TYPES + RANGES + [c[:4] for c in UNKNOWN]


def _lint(data, **kwargs):
    if isinstance(data, (str, bytes)):
        return lint_text(data, source="case.json", **kwargs)
    return lint_document(data, source="case", **kwargs)


def _assert_rejected(result, path, effect):
    assert not result.ok, "accepted: %s" % path
    for finding in result.errors:
        assert finding.path and finding.message.startswith(finding.path + ":")
        assert finding.effect in EFFECTS
    match = [f for f in result.errors if f.path == path]
    assert match, "no error at %s in:\n%s" % (path, result.text())
    assert effect in [f.effect for f in match], result.text()
    return match


def test_at_least_200_hand_written_bad_inputs():
    assert len(BAD) + len(PATHS) >= 200


@pytest.mark.parametrize("name, data, path, effect", BAD, ids=[c[0] for c in BAD])
def test_bad_input_is_rejected_with_a_json_path(name, data, path, effect):
    match = _assert_rejected(_lint(data), path, effect)
    if name in dict((c[0], c) for c in SYNTAX):
        assert match[0].line and match[0].column and match[0].code == "syntax"


@pytest.mark.parametrize("name, doc, path, effect, suggestion", UNKNOWN, ids=[c[0] for c in UNKNOWN])
def test_unknown_key_names_the_real_key(name, doc, path, effect, suggestion):
    match = _assert_rejected(lint_document(doc), path, effect)
    assert match[0].suggestion == suggestion
    if suggestion:
        assert ("did you mean %s?" % suggestion) in match[0].message


@pytest.mark.parametrize("name, doc, path, effect", PATHS, ids=[c[0] for c in PATHS])
def test_missing_host_paths_are_errors_when_checked(name, doc, path, effect):
    _assert_rejected(lint_document(doc, check_paths=True), path, effect)
    assert lint_document(doc).ok  # not checked unless asked (the controller is not the target)


def test_text_errors_carry_line_numbers():
    text = '{\n  "execution": {\n    "allow_compat_mode": false\n  },\n  "denylist": "nvme"\n}\n'
    result = lint_text(text)
    assert [(f.path, f.line, f.column) for f in result.errors] == [("execution.allow_compat_mode", 3, 5), ("denylist", 5, 3)]


# --- hypothesis ------------------------------------------------------------------------------------------------------
LEAVES = sorted(REFERENCE_KEYS)
JSON_SCALARS = st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40) | st.floats(allow_nan=False, allow_infinity=False) | \
    st.text(max_size=8)
JSON_ANY = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                        max_leaves=12)
WRONG = {
    "integer": st.text(max_size=6) | st.lists(st.integers(), max_size=2) | st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    "boolean": st.text(max_size=6) | st.integers() | st.floats(allow_nan=False) | st.lists(st.booleans(), max_size=2) |
    st.dictionaries(st.text(max_size=4), st.booleans(), max_size=2),
    "string": st.integers() | st.booleans() | st.floats(allow_nan=False) | st.lists(st.text(max_size=3), max_size=2) |
    st.dictionaries(st.text(max_size=4), st.text(max_size=3), max_size=2),
    "array": st.text(max_size=6) | st.integers() | st.booleans() | st.dictionaries(st.text(max_size=4), st.integers(), max_size=2) |
    st.lists(st.dictionaries(st.text(max_size=3), st.integers(), max_size=1), min_size=1, max_size=2),
    "object": st.text(max_size=6) | st.integers() | st.booleans() | st.lists(st.integers(), max_size=2),
}


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzz_wrong_types_are_rejected_at_their_path(data):
    dotted = data.draw(st.sampled_from([d for d in LEAVES if SCHEMA.known[d].get("x-effects", {}).get("type") != "accepted"]))
    node = SCHEMA.known[dotted]
    value = data.draw(WRONG[node["type"]])
    result = lint_document(nest(dotted, value))
    assert not result.ok
    assert any(f.path == dotted or f.path.startswith(dotted + "[") for f in result.errors), result.text()


INT_KEYS = sorted(d for d in LEAVES if SCHEMA.known[d]["type"] == "integer")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzz_out_of_range_integers_are_rejected(data):
    dotted = data.draw(st.sampled_from(INT_KEYS))
    node = SCHEMA.known[dotted]
    sides = [side for side, bound in (("low", "minimum"), ("high", "maximum"))
             if bound in node and node.get("x-effects", {}).get(bound) != "accepted"]
    assume(sides)
    side = data.draw(st.sampled_from(sides))
    if side == "low":
        value = data.draw(st.integers(-2 ** 40, node["minimum"] - 1))
    else:
        value = data.draw(st.integers(node["maximum"] + 1, 2 ** 45))
    result = lint_document(nest(dotted, value))
    match = [f for f in result.errors if f.path == dotted]
    assert match and match[0].effect in ("load_fails", "aborts"), result.text()
    assert str(value) in match[0].message


ALIGNED = sorted(d for d in INT_KEYS if SCHEMA.known[d].get("multipleOf") and
                 SCHEMA.known[d].get("x-effects", {}).get("multipleOf") != "accepted")


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_fuzz_misaligned_kb_values_are_rejected(data):
    dotted = data.draw(st.sampled_from(ALIGNED))
    node = SCHEMA.known[dotted]
    value = data.draw(st.integers(node["minimum"], node.get("maximum", 2 ** 31)))
    assume(value % node["multipleOf"])
    result = lint_document(nest(dotted, value))
    assert [f for f in result.errors if f.path == dotted and f.code == "alignment"], result.text()


SECTIONS = [()] + sorted(tuple(p.split(".")) for p in SCHEMA.readable_paths() if "properties" in SCHEMA.known[p])
KEY = st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=20)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SECTIONS), KEY, JSON_SCALARS)
def test_fuzz_unknown_keys_are_errors_at_their_path(section, key, value):
    node = SCHEMA.node_at(section)
    assume(key not in node.get("properties", {}))
    doc = {key: value}
    for part in reversed(section):
        doc = {part: doc}
    result = lint_document(doc)
    path = format_path(section + (key,))
    match = [f for f in result.errors if f.path == path and f.code == "unknown-key"]
    assert match and match[0].effect == "ignored", result.text()


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(["logging", "profile", "execution", P, "fs", "denylist", "miscellaneous", "x"]),
                       JSON_ANY, max_size=4) | JSON_ANY)
def test_fuzz_any_document_gives_well_formed_findings(doc):
    result = lint_document(doc)
    for finding in result.findings:
        assert finding.severity in ("error", "warning") and finding.effect in EFFECTS
        assert finding.message.startswith(finding.path + ":") and "\n" not in finding.message


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_fuzz_lint_text_never_raises(text):
    result = lint_text(text)
    assert result.ok or result.errors[0].path
