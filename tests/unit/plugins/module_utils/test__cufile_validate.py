# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""cufile.json validator: the schema against the reference, valid inputs, warnings, the API and
the CUFILE_ENV_PATH_JSON overlay. Bad inputs are in test__cufile_validate_bad.py."""

from __future__ import annotations

import os

import jsonschema
import pytest

from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.findings import EFFECTS
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import loads
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.schema import (
    available_versions, load_schema, schema_path)
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.shipped import shipped
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate import (
    lint_document, lint_merged, lint_text)
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.cufile_cases import (
    NEWER_KEYS, REFERENCE_KEYS, nest)

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "cufile", "cuda-13.0-shipped.json")
SCHEMA = load_schema("1.15")


def leaf_paths(schema):
    return set(p for p in schema.readable_paths() if "properties" not in schema.known[p])


# --- the schema file ---------------------------------------------------------------------------------------
def test_schema_is_valid_draft_2020_12():
    jsonschema.Draft202012Validator.check_schema(SCHEMA.raw)
    assert SCHEMA.raw["$schema"].endswith("/draft/2020-12/schema")
    assert available_versions() == ["1.15"]


def test_schema_covers_exactly_the_64_paths_libcufile_reads():
    assert len(REFERENCE_KEYS) == 64
    assert leaf_paths(SCHEMA) == set(REFERENCE_KEYS)


def test_schema_declares_newer_release_keys_not_read_by_1_15():
    for dotted in NEWER_KEYS:
        parts = dotted.split(".")
        assert any(SCHEMA.is_newer(SCHEMA.known[".".join(parts[:i])]) for i in range(1, len(parts) + 1)), dotted


def _nodes(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from _nodes(value)


def test_schema_effect_metadata_uses_known_effects():
    for node in _nodes(SCHEMA.raw["properties"]):
        if "x-effect" in node:
            assert node["x-effect"] in EFFECTS
        for effect in node.get("x-effects", {}).values():
            assert effect in EFFECTS
    for rule in SCHEMA.rules:
        assert rule["effect"] in EFFECTS and rule["severity"] in ("error", "warning")


def test_schema_shipped_values_equal_the_shipped_module_dict():
    rebuilt = {}
    for dotted, node in SCHEMA.known.items():
        if "x-shipped" in node:
            nest(dotted, node["x-shipped"], rebuilt)
    expected = shipped()
    expected["fs"].pop("nfs")  # shipped as an empty section: nothing to carry
    assert rebuilt == expected


def test_schema_aliases_point_at_real_keys():
    for wrong, alias in SCHEMA.aliases.items():
        target = alias.get("to") if isinstance(alias, dict) else alias
        assert target is None or target in SCHEMA.known, wrong
        assert wrong not in SCHEMA.known


def test_schema_builtin_defaults_from_the_reference():
    # the built-ins are not the shipped values (reference section 2)
    assert SCHEMA.default_at("properties.max_direct_io_size_kb") == 1024
    assert SCHEMA.default_at("execution.max_io_threads") == 0
    assert SCHEMA.default_at("logging.level") == "WARN"


def test_unknown_version_is_refused():
    with pytest.raises(ValueError, match="available: 1.15"):
        schema_path("1.99")
    with pytest.raises(ValueError):
        lint_text("{}", version="one")


# --- valid inputs --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dotted", sorted(REFERENCE_KEYS))
def test_every_reference_key_is_accepted_with_its_shipped_value(dotted):
    result = lint_document(nest(dotted, REFERENCE_KEYS[dotted]))
    assert result.findings == []


def test_all_reference_keys_together_are_accepted():
    doc = {}
    for dotted, value in REFERENCE_KEYS.items():
        nest(dotted, value, doc)
    assert lint_document(doc, check_paths=True).findings == []


def test_rebuilt_cuda_13_shipped_file_with_comments_validates_clean():
    with open(FIXTURE, "rb") as f:
        data = f.read()
    result = lint_text(data, source=FIXTURE)
    assert result.ok and result.findings == []
    assert result.document == shipped()


def test_integration_target_carries_the_same_shipped_fixture():
    copy = os.path.join(os.path.dirname(FIXTURE), "..", "..", "integration", "targets", "cufile_config", "files",
                        "cuda-13.0-shipped.json")
    with open(FIXTURE, "rb") as a, open(copy, "rb") as b:
        assert a.read() == b.read()


def test_shipped_dict_validates_clean():
    assert lint_document(shipped()).findings == []


@pytest.mark.parametrize("doc", [
    {},
    {"properties": {"max_direct_io_size_kb": 64, "per_buffer_cache_size_kb": 64}},        # 64/64 accepted
    {"properties": {"max_direct_io_size_kb": 4160, "per_buffer_cache_size_kb": 1088,        # 64 KB multiples
                    "max_device_cache_size_kb": 139264}},
    {"properties": {"max_device_cache_size_kb": 131076}},                                 # 4 KB aligned
    {"properties": {"posix_pool_slab_size_kb": [1024, 4, 16384], "posix_pool_slab_count": [0, 0, 0]}},
    {"properties": {"posix_pool_slab_size_kb": [], "posix_pool_slab_count": []}},         # [] = not set
    {"properties": {"rdma_dynamic_routing_order": []}},
    {"properties": {"rdma_dynamic_routing_order": ["P2P", "P2P"]}},
    {"properties": {"rdma_peer_type": "nvidia_peermem", "rdma_dc_key": "ffeeddcc"}},
    {"properties": {"max_device_pinned_mem_size_kb": 100}, "execution": None},
    {"execution": {"min_io_threshold_size_kb": 6}},                                       # no 4 KB check
    {"miscellaneous": {"rcu_library_used": "urcu"}},
    {"denylist": {"fsids": ["abc"], "filesystems": ["ext4"], "drivers": ["nvme", "nvme_rdma"]}},
    {"denylist": None, "fs": None, "properties": {"io_batchsize": None}},                # null = not set
    {"fs": {"lustre": {"mount_table": {"/tmp": {"rdma_dev_addr_list": ["172.172.1.40"]}}}}},
    {"properties": {"poll_mode_max_size_kb": 2 ** 32}},                                     # no upper bound (measured)
    {"properties": {"posix_pool_slab_size_kb": [4, 8, 16]}},                                # 3 sizes, built-in 3 counts
    {"properties": {"rdma_dynamic_routing": True, "rdma_dev_addr_list": ["10.0.1.1"]}},
])
def test_valid_documents_have_no_findings(doc):
    assert lint_document(doc, check_paths=True).findings == []


# --- accepted by libcufile but wrong by the docs: warnings (reference section 5) ---------------------------------
WARNINGS = [
    ({"profile": {"cufile_stats": 4}}, "profile.cufile_stats", "range"),
    ({"profile": {"cufile_stats": 9}}, "profile.cufile_stats", "range"),
    ({"logging": {"level": "debug"}}, "logging.level", "enum"),
    ({"logging": {"level": "WARNING"}}, "logging.level", "enum"),
    ({"logging": {"level": "LOUD"}}, "logging.level", "enum"),
    ({"properties": {"io_priority": "urgent"}}, "properties.io_priority", "enum"),
    ({"properties": {"io_priority": "HIGH"}}, "properties.io_priority", "enum"),
    ({"properties": {"rdma_load_balancing_policy": "Bogus"}}, "properties.rdma_load_balancing_policy", "enum"),
    ({"properties": {"rdma_load_balancing_policy": "roundrobin"}}, "properties.rdma_load_balancing_policy", "enum"),
    ({"properties": {"rdma_dev_addr_list": ["mlx5_0"]}}, "properties.rdma_dev_addr_list[0]", "format"),
    ({"fs": {"weka": {"rdma_dev_addr_list": ["10.0.0.1", "ib0"]}}}, "fs.weka.rdma_dev_addr_list[1]", "format"),
    ({"fs": {"nfs": {"mount_table": {"/tmp": {"rdma_dev_addr_list": ["mlx5_1"]}}}}},
     'fs.nfs.mount_table["/tmp"].rdma_dev_addr_list[0]', "format"),
    ({"properties": {"max_device_cache_size_kb": 65536}}, "properties.max_device_cache_size_kb", "rule:cache-buffers-ge-batch"),
    ({"properties": {"max_device_cache_size_kb": 0}}, "properties.max_device_cache_size_kb", "rule:cache-buffers-ge-batch"),
    ({"fs": {"lustre": {"rdma_dev_addr_list": ["1.2.3.4"], "mount_table": {"/tmp": {}}}}},
     "fs.lustre.rdma_dev_addr_list", "rule:dfs-list-and-mount-table"),
    ({"fs": {"lustre": {"posix_gds_min_kb": 6}}}, "fs.lustre.posix_gds_min_kb", "alignment"),
    ({"properties": {"rdma_dynamic_routing": True}}, "properties.rdma_dynamic_routing", "rule:dynamic-routing-needs-nics"),
    ({"properties": {"io_batchsize": True}}, "properties.io_batchsize", "lenient-int"),       # case t_bool_int
    ({"properties": {"io_batchsize": 64.0}}, "properties.io_batchsize", "lenient-int"),       # case t_float
    ({"execution": {"max_io_threads": 1.5}}, "execution.max_io_threads", "lenient-int"),
    ({"properties": {"max_device_cache_size_kb": 134217732}}, "properties.max_device_cache_size_kb", "range"),
    ({"properties": {"max_device_pinned_mem_size_kb": 134217732}}, "properties.max_device_pinned_mem_size_kb", "range"),
    (None, "$", "root-unset"),
    ([], "$", "root-unset"),
    # measured on libcufile 1.15.1: these load without error
    ({"properties": {"posix_pool_slab_count": [128, -1, 64]}}, "properties.posix_pool_slab_count[1]", "range"),
    ({"properties": {"posix_pool_slab_size_kb": [-4, 1024, 16384]}}, "properties.posix_pool_slab_size_kb[0]", "range"),
    ({"properties": {"rdma_topN_ranks": -1}}, "properties.rdma_topN_ranks", "range"),
    ({"denylist": {"fsids": "x"}}, "denylist.fsids", "type"),
    ({"denylist": {"fsids": 1}}, "denylist.fsids", "type"),
    ({"denylist": {"fsids": [1]}}, "denylist.fsids[0]", "type"),
    ({"denylist": {"fsids": {"a": 1}}}, "denylist.fsids", "type"),
    ({"properties": {"max_device_cache_size_kb": 2 ** 32}}, "properties.max_device_cache_size_kb", "range"),
]


@pytest.mark.parametrize("doc, path, code", WARNINGS)
def test_accepted_but_wrong_is_a_warning(doc, path, code):
    result = lint_document(doc)
    assert result.ok, result.text()
    match = [f for f in result.warnings if f.path == path and f.code == code]
    assert match, result.text()
    assert match[0].message.startswith(path + ":")
    assert match[0].effect in ("accepted", "load_fails")


@pytest.mark.parametrize("dotted", sorted(NEWER_KEYS))
def test_newer_release_keys_warn_naming_the_version(dotted):
    result = lint_document(nest(dotted, NEWER_KEYS[dotted]))
    assert result.ok
    (finding,) = result.warnings
    assert finding.code == "newer-release" and finding.effect == "ignored"
    assert "ignored by libcufile 1.15: added in 1.1" in finding.message and finding.path == dotted


def test_compat_mode_false_warns_only_without_nvidia_fs():
    doc = {"properties": {"allow_compat_mode": False}}
    assert lint_document(doc).findings == []
    assert lint_document(doc, host={"nvidia_fs": True}).findings == []
    (finding,) = lint_document(doc, host={"nvidia_fs": False}).findings
    assert finding.severity == "warning" and "5001" in finding.message


def test_text_that_libcufile_reads_anyway():
    result = lint_text(b'{"logging": {"level": "ERR\xfeOR"}}\n}', source="t.json")
    assert [(f.code, f.severity, f.effect, f.line) for f in result.findings] == [
        ("enum", "warning", "accepted", 1), ("encoding", "warning", "accepted", 1), ("trailing-content", "error", "ignored", 2)]
    assert result.findings[0].message.startswith(u'logging.level: "ERR\ufffdOR" is not one of')


def test_duplicate_key_is_a_warning_with_lines():
    result = lint_text('{\n "profile": {"nvtx": true},\n "profile": {"nvtx": false}\n}', source="dup.json")
    (finding,) = result.findings
    assert (finding.code, finding.path, finding.line, finding.severity) == ("duplicate-key", "profile", 3, "warning")
    assert result.document == {"profile": {"nvtx": False}}


# --- API ----------------------------------------------------------------------------------------------------------
def test_finding_fields_and_as_dict():
    result = lint_text('{\n  "properties": {\n    "io_batchsize": 512\n  }\n}', source="x.json")
    (finding,) = result.findings
    assert finding.as_dict() == {
        "path": "properties.io_batchsize", "value": 512, "severity": "error", "effect": "load_fails",
        "message": finding.message, "suggestion": None, "line": 3, "column": 5, "code": "range", "source": "x.json",
    }
    assert finding.message == ("properties.io_batchsize: 512 is above the maximum 256; libcufile 1.15 refuses to load the config "
                               "(cuFileDriverOpen returns -22 and no cuFile I/O works); use a value in 1..256.")
    assert finding.text().startswith("x.json:3:5: error: properties.io_batchsize")
    assert result.errors == [finding] and result.warnings == [] and not result.ok
    assert result.as_dict()["errors"] == 1


def test_all_errors_are_reported_at_once():
    doc = {
        "execution": {"allow_compat_mode": False, "max_io_queue_depth": 0},
        "properties": {"io_batchsize": 300, "max_direct_io_size_kb": 1000, "rdma_dc_key": "zz", "use_poll_mode": 1},
        "denylist": {"drivers": "nvme"},
        "logging": {"level": 5},
        "Profile": {},
    }
    result = lint_document(doc)
    paths = sorted(f.path for f in result.errors)
    assert paths == ["Profile", "denylist.drivers", "execution.allow_compat_mode", "execution.max_io_queue_depth",
                     "logging.level", "properties.io_batchsize", "properties.max_direct_io_size_kb",
                     "properties.rdma_dc_key", "properties.use_poll_mode"]


def test_messages_name_path_value_effect_and_fix():
    (finding,) = lint_document({"execution": {"allow_compat_mode": False}}).findings
    assert finding.message == (
        "execution.allow_compat_mode: unknown key in execution (value false); libcufile 1.15 ignores it silently, so it has "
        "no effect (compat mode is a properties key; under execution it has no effect); did you mean properties.allow_compat_mode?")
    assert finding.suggestion == "properties.allow_compat_mode"
    (finding,) = lint_document({"denylist": "nvme"}).findings
    assert finding.effect == "aborts" and "SIGABRT" in finding.message and '"nvme"' in finding.message


def test_bytes_hint_for_kb_keys():
    (finding,) = lint_document({"properties": {"max_direct_io_size_kb": 16777216}}).errors
    assert "16777216 bytes = 16384 KB" in finding.message


def test_case_hint_for_enums():
    (finding,) = lint_document({"logging": {"level": "trace"}}).findings
    assert 'write "TRACE"' in finding.message


def test_syntax_error_is_one_finding_at_root_with_position():
    result = lint_text('{\n  "a": 1,\n}\n', source="t.json")
    (finding,) = result.findings
    assert (finding.path, finding.code, finding.line, finding.column, finding.effect) == ("$", "syntax", 2, 9, "load_fails")
    assert result.document is None and not result.ok


def test_check_paths_variants(tmp_path):
    doc = {"logging": {"dir": str(tmp_path)}, "denylist": {"mounts": [str(tmp_path / "nope")]}}
    assert lint_document(doc).findings == []
    (finding,) = lint_document(doc, check_paths=True).findings
    assert finding.path == "denylist.mounts[0]" and finding.code == "path-missing"
    asked = []
    lint_document(doc, check_paths=lambda path, kind: asked.append((path, kind)) or True)
    assert sorted(asked) == sorted([(str(tmp_path), "dir"), (str(tmp_path / "nope"), "exists")])
    facts = {str(tmp_path): {"exists": True, "is_dir": False}}
    (finding,) = lint_document(doc, check_paths=facts).findings
    assert finding.path == "logging.dir"


def test_mount_table_entries_without_addresses_are_checked_with_a_note():
    # measured on libcufile 1.15.1: {"/missing": {"rdma_dev_addr_list": []}, "/tmp": {}} fails the load,
    # {"/missing": {"rdma_dev_addr_list": []}} alone loads: the outcome depends on the other entries
    doc = {"fs": {"nfs": {"mount_table": {"/nonexistent": {"rdma_dev_addr_list": []}, "/tmp": {},
                                          "/nonexistent2": {"rdma_dev_addr_list": ["10.0.0.1"]}}}}}
    findings = lint_document(doc, check_paths=True).errors
    assert [(f.path, "some combinations" in f.message) for f in findings] == [
        ('fs.nfs.mount_table["/nonexistent"]', True), ('fs.nfs.mount_table["/nonexistent2"]', False)]


def test_version_with_patch_level_uses_the_minor_schema():
    assert lint_text("{}", version="1.15.1").ok


# --- CUFILE_ENV_PATH_JSON overlay ---------------------------------------------------------------------------------
def test_broken_etc_is_fatal_even_with_a_good_env_file():            # case etcbad_envgood
    result = lint_merged('{"a": 1,}', '{"profile": {"nvtx": true}}', env_source="user.json")
    assert not result.ok and result.document is None
    assert [(f.source, f.code) for f in result.errors] == [("/etc/cufile.json", "syntax")]


def test_broken_env_is_fatal_even_with_a_good_etc_file():            # case etcgood_envbad
    result = lint_merged(shipped(), '{"properties": {"io_batchsize": 0}}', env_source="user.json")
    assert [(f.source, f.path) for f in result.errors] == [("user.json", "properties.io_batchsize")]


def test_env_overlays_etc_and_keeps_missing_keys():                   # cases ov_env_partial, ov_env_empty
    result = lint_merged(shipped(), {"properties": {"per_buffer_cache_size_kb": 2048, "io_batchsize": None}})
    assert result.ok, result.text()
    assert result.document["properties"]["per_buffer_cache_size_kb"] == 2048
    assert result.document["properties"]["io_batchsize"] == 128          # null = not set: /etc value stays
    assert result.document["logging"] == {"level": "ERROR"}
    assert lint_merged(shipped(), "{}").document == shipped()


def test_merged_result_is_validated_as_well():
    etc = {"properties": {"posix_pool_slab_size_kb": [4, 8, 16], "posix_pool_slab_count": [1, 2, 3]}}
    env = {"properties": {"posix_pool_slab_size_kb": [4, 8]}}
    result = lint_merged(etc, env, env_source="user.json")
    (finding,) = result.errors
    assert (finding.source, finding.path) == ("merged", "properties.posix_pool_slab_count")
    # a per_buffer raise that only the /etc value makes legal
    ok = lint_merged({"properties": {"max_direct_io_size_kb": 16384}}, {"properties": {"per_buffer_cache_size_kb": 4096}})
    assert ok.ok


def test_missing_env_file_is_a_warning_and_missing_etc_means_builtins():   # cases ov_env_missing, noetc_*
    result = lint_merged(shipped(), None, env_source="user.json")
    assert result.ok and [f.code for f in result.warnings] == ["env-missing"]
    result = lint_merged(None, {"properties": {"per_buffer_cache_size_kb": 2048}})
    assert [f.path for f in result.errors] == ["properties.per_buffer_cache_size_kb"]   # built-in max_direct_io 1024


def test_env_findings_keep_their_line_numbers():
    result = lint_merged(shipped(), '{\n"execution": {\n"allow_compat_mode": false}}', env_source="user.json")
    (finding,) = result.findings
    assert (finding.source, finding.line, finding.suggestion) == ("user.json", 3, "properties.allow_compat_mode")


def test_loads_roundtrip_of_lint_document():
    assert lint_text('{"profile": {"nvtx": false}}').document == loads('{"profile": {"nvtx": false}}')


@pytest.mark.parametrize("value, fix", [(16385, "use 16384"), (20000, "use 16384"), (10, "use 64"),
                                        (100, "use 64 or 128"), (16383, "use 16320 or 16384")])
def test_one_consistent_suggestion_for_a_value_out_of_range_or_not_aligned(value, fix):
    findings = [f for f in lint_document({"properties": {"max_direct_io_size_kb": value}}).findings
                if f.path == "properties.max_direct_io_size_kb"]
    assert len(findings) == 1, [f.message for f in findings]
    assert findings[0].message.endswith(fix + "."), findings[0].message


# --- bounded results ---------------------------------------------------------------------------------------
def test_findings_past_the_cap_are_counted_in_one_last_finding():
    doc = {"properties": dict(("unknown_%d" % i, i) for i in range(120))}
    doc["profile"] = {"cufile_stats": 9}  # a warning
    result = lint_document(doc)
    *listed, more = result.findings
    assert [f.code for f in listed] == ["unknown-key"] * 50 and not result.ok
    assert (more.code, more.severity, more.value) == ("more-findings", "error", {"error": 70, "warning": 1})
    assert more.message == "$: 70 more errors and 1 more warning not listed (the first 50 findings are)."


def test_errors_are_listed_before_warnings_and_merged_results_add_their_counts():
    etc = '{"profile": {%s}}' % ",\n".join('"cufile_stats": %d' % (i % 4) for i in range(60))  # 59 duplicates
    result = lint_merged(etc, '{"properties": {"no_such_key": 1}}')
    *listed, more = result.findings
    assert [f.code for f in listed if f.is_error] == ["unknown-key"] and len(listed) == 50
    assert (more.code, more.severity, more.value) == ("more-findings", "warning", {"warning": 10})


def test_a_long_value_is_cut_where_a_result_returns_it():
    result = lint_document({"properties": {"no_such_key": "x" * 100000}})
    (finding,) = result.findings
    assert finding.as_dict()["value"] == '"' + "x" * 196 + "..." and len(finding.message) < 400
    assert lint_document({"properties": {"no_such_key": [1, 2]}}).findings[0].as_dict()["value"] == [1, 2]


def test_a_text_over_the_size_cap_is_one_finding():
    (finding,) = lint_text(b" " * (1024 * 1024) + b"{}", source="big.json").findings
    assert (finding.code, finding.line, finding.source) == ("too-large", 1, "big.json")
    assert finding.message.startswith("$: 1048578 bytes, more than the 1 MiB")
