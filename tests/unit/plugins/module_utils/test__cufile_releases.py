# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One validator view per libcufile release, checked against what the sweep measured on
the H100 host with the real libraries (tests/gpu/evidence/2026-11-23-cufile-sweep-results.jsonl.gz,
schemas/cufile-releases.json). No GPU needed."""

from __future__ import annotations

import importlib.util
import json
import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.cufile_config import shipped_refusal
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.findings import (
    RELEASES, config_error_code, known_releases, release_of)
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.schema import (
    SCHEMA_DIR, load_schema, release_data)
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile import validate as _cufile_validate
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.validate import lint_document
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.errors import describe_error
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.results import host_release

ROOT = os.path.dirname(SCHEMA_DIR)
SWEEP = os.path.join(ROOT, "tests", "gpu", "cufile_sweep")
RESULTS = os.path.join(ROOT, "tests", "gpu", "evidence", "2026-11-23-cufile-sweep-results.jsonl.gz")
DATA = release_data()
# Agreement of each release's own view with the real library, per release (the report
# tests/gpu/evidence/2026-11-23-cufile-sweep-report-per-release.md explains what is left).
AGREED = {"1.13": (420, 420), "1.14": (420, 420), "1.15": (420, 420), "1.16": (420, 420), "1.17": (420, 420),
          "1.18": (420, 420), "1.19": (411, 419), "1.20": (411, 419)}


def load(name):
    spec = importlib.util.spec_from_file_location("cufile_sweep_" + name, os.path.join(SWEEP, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_release_table_is_the_measured_data():
    assert known_releases() == tuple(sorted(DATA["releases"], key=lambda r: tuple(map(int, r.split(".")))))
    for release, libcufile, code in RELEASES:
        info = DATA["releases"][release]
        assert info["libcufile"] == libcufile
        assert list(info["load_fail_codes"]) == [str(code)], release


@pytest.mark.parametrize("version, release", [
    ("1.17", "1.17"), ("1.17.1.22", "1.17"), ("1.20.0", "1.20"), (1130, "1.13"), (1200, "1.20"),
    ("1.12", None), ("2.0", None), ("auto", None), (None, None), ("", None)])
def test_release_of(version, release):
    assert release_of(version) == release


def test_config_error_code_per_release():
    assert [config_error_code(r) for r in known_releases()] == [-22] * 6 + [5002] * 2


def test_unknown_release_has_no_view():
    with pytest.raises(ValueError, match="known releases: 1.13, .*1.20"):
        load_schema("1.21")
    assert load_schema("1.17.1.22") is load_schema("1.17")


@pytest.mark.parametrize("release", sorted(AGREED))
def test_each_release_view_agrees_with_the_real_library(release):
    compare = load("compare")
    results = [r for r in compare.read_jsonl(RESULTS) if r["release"] == release]
    entry = compare.agreement(results, _cufile_validate, None, per_release_views=True)[release]
    assert (entry["agreed"], entry["cases"]) == AGREED[release]
    assert all(compare.explanation(d["id"]) for d in entry["disagreements"]), entry["disagreements"]


def finding(doc, release):
    (one,) = lint_document(doc, version=release).findings
    return one


@pytest.mark.parametrize("release", ["1.13", "1.14", "1.15"])
def test_block_is_ignored_before_1_16_naming_the_release(release):
    one = finding({"block": {"nvme": {"use_pci_p2pdma": True}}}, release)
    assert one.severity == "warning" and one.effect == "ignored"
    assert one.message.startswith("block: ignored by libcufile %s: added in 1.16" % release)


@pytest.mark.parametrize("release", ["1.16", "1.17", "1.18"])
def test_block_wrong_type_fails_with_minus_22_from_1_16(release):
    one = finding({"block": {"nvme": {"use_pci_p2pdma": "x"}}}, release)
    assert one.effect == "load_fails" and "libcufile %s refuses" % release in one.message
    assert "returns -22" in one.message


@pytest.mark.parametrize("release", ["1.19", "1.20"])
def test_new_keys_of_1_19_are_read_with_their_measured_type_and_code(release):
    one = finding({"properties": {"gds_fallback_io": "x"}}, release)
    assert one.effect == "load_fails" and "returns 5002" in one.message and "ranges and values not measured" in one.message
    assert lint_document({"properties": {"gds_fallback_io": True, "vanilla_posix_io_mode": True}}, version=release).findings == []
    one = finding({"block": {"raid1": {"use_pci_p2pdma": 1}}}, release)
    assert one.effect == "load_fails"


def test_sections_abort_where_measured():
    assert finding({"properties": {"gpu_bounce_buffer_slab_config": "x"}}, "1.17").effect == "aborts"
    assert finding({"properties": {"gpu_bounce_buffer_slab_config": "x"}}, "1.16").effect == "ignored"
    assert finding({"fs": {"panfs": []}}, "1.19").effect == "aborts"
    assert finding({"fs": {"scatefs": []}}, "1.13").effect == "ignored"
    assert finding({"fs": {"scatefs": []}}, "1.14").effect == "aborts"


def test_removed_key_names_its_last_release():
    one = finding({"profile": {"nvtx": True}}, "1.16")
    assert "ignored by libcufile 1.16: read up to 1.15 only" in one.message
    assert lint_document({"profile": {"nvtx": True}}, version="1.15").findings == []


@pytest.mark.parametrize("release, effect", [("1.13", "crashes"), ("1.14", "crashes"), ("1.15", "accepted"),
                                             ("1.20", "accepted")])
def test_stats_true_crashes_1_13_and_1_14(release, effect):
    one = finding({"profile": {"cufile_stats": True}}, release)
    assert one.effect == effect and (one.severity == "error") == (effect == "crashes")


def test_keys_whose_values_were_all_refused_warn_without_inventing_a_type():
    one = finding({"properties": {"rdma_transport_type": "rc"}}, "1.20")
    assert one.severity == "warning" and one.code == "unmeasured" and "refused every value" in one.message
    assert finding({"properties": {"rdma_transport_type": "rc"}}, "1.18").effect == "ignored"


def test_integer_keys_that_load_booleans_warn():
    one = finding({"properties": {"rdma_io_retry_count": True}}, "1.18")
    assert one.severity == "warning" and one.code == "lenient-int"


def test_log_size_zero_is_refused_as_measured():
    one = finding({"logging": {"max_file_size_mb": 0}}, "1.18")
    assert one.effect == "load_fails" and "not allowed" in one.message
    assert lint_document({"logging": {"max_file_size_mb": -1}}, version="1.18").findings == []


def test_shipped_base_only_for_the_release_whose_file_is_known():
    assert shipped_refusal(None, None, "1.15") is None
    assert shipped_refusal("empty", None, "1.17") is None
    assert shipped_refusal(None, "my.json", "1.17") is None
    for base in (None, "shipped"):
        assert "no shipped file of libcufile 1.17 is known" in shipped_refusal(base, None, "1.17.1.22")


def test_verdict_hint_knows_each_release_code():
    err = {"kind": "cufile", "step": "cuFileDriverOpen", "err": 5002}
    assert "libcufile 1.20 rejected its configuration" in describe_error(err, "1.20")
    assert "rejected its configuration" not in describe_error(err, "1.15")
    assert "libcufile 1.13 rejected" in describe_error(dict(err, err=-22), "1.13")
    assert "5002 from 1.19" in describe_error(err)


def test_facts_validate_with_the_host_release():
    assert host_release({"libcufile": {"version": "1.20.0"}}) == ("1.20", None)
    # a release the collection has not measured is not judged by another one
    release, note = host_release({"libcufile": {"version": "1.11.1"}})
    assert release is None and "the host's libcufile 1.11.1 is unknown to the collection" in note
    release, note = host_release({})
    assert release == "1.15" and note.startswith("no libcufile found on the host")


def test_docs_keys_table_is_current():
    table = load("keys_table")
    with open(table.DOC) as f:
        text = f.read()
    with open(table.DATA) as f:
        data = json.load(f)
    assert table.render(text, data) == text


def test_facts_check_the_host_file_with_the_host_release():
    from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds.results import validate_cufile
    text = '{"properties": {"gds_fallback_io": "yes"}}'
    verdicts = {}
    for version in ("1.13.1.3", "1.20.0.107"):
        gds = {"libcufile": {"version": version}, "nvidia_fs": {"loaded": True},
               "cufile": {"files": [{"role": "global", "path": "/etc/cufile.json", "text": text}]}}
        validate_cufile(gds)
        verdicts[version] = (gds["cufile"]["release"], gds["cufile"]["valid"])
    assert verdicts == {"1.13.1.3": ("1.13", True), "1.20.0.107": ("1.20", False)}
