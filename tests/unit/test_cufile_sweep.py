# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The per-release cufile sweep harness (tests/gpu/cufile_sweep): the case generator,
the runner end to end against the C libcufile stand-in (its 'sweep' mode gives all three
outcomes), the string-table key discovery, and the per-release derivation of compare.py.
The measurement itself needs the real libraries on the GPU host (tests/gpu/cufile-sweep-run.sh)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.gpudirect.storage.tests.fixtures.cuda_standin import standin
from ansible_collections.gpudirect.storage.tests.unit.scripts import load_script

cases_mod, run_mod, compare_mod, strings_mod = (load_script("cufile_sweep_" + n, "tests", "gpu", "cufile_sweep", n + ".py")
                                                for n in ("cases", "run", "compare", "strings_keys"))


@pytest.fixture(scope="module")
def cases():
    with open(cases_mod.SCHEMA) as f:
        schema = json.load(f)
    with open(cases_mod.STRINGS) as f:
        strings = json.load(f)
    return cases_mod.generate(schema, strings)


def test_cases_are_unique_and_json_where_not_raw(cases):
    ids = [c["id"] for c in cases]
    assert len(ids) == len(set(ids))
    assert len(cases) > 500  # several hundred per release
    for case in cases:
        if case["kind"] != "raw":
            json.loads(case["text"])


def test_every_issue_key_and_new_section_is_probed_in_tier_0(cases):
    tier0 = set(c["id"] for c in cases if c["tier"] == 0)
    for key in cases_mod.EXTRA_KEYS:
        assert any(i.startswith(key + ":") for i in tier0), key
    for section in ("block", "block.raid1", "properties.gpu_bounce_buffer_slab_config", "fs.panfs"):
        assert section + ":kind-string" in tier0 and section + ":kind-array" in tier0


def test_known_key_gets_a_wrong_type_and_a_valid_value(cases):
    by_id = dict((c["id"], c) for c in cases)
    assert json.loads(by_id["properties.io_batchsize:wrong-type"]["text"]) == {"properties": {"io_batchsize": "x"}}
    assert json.loads(by_id["properties.io_batchsize:valid"]["text"]) == {"properties": {"io_batchsize": 128}}
    assert json.loads(by_id["logging.level:wrong-type"]["text"]) == {"logging": {"level": 12345}}
    # a key only the string tables know gets one probe per JSON kind
    assert {"properties.rdma_failback_enabled:kind-" + k for k in ("bool", "int", "string", "array", "object")} <= set(by_id)


def test_strings_classify_keys_labels_fragments_and_env():
    found = strings_mod.classify(["properties.io_batchsize", "properties.use_compat_mode :", "fs.lustre.posix_gds_min_kb:",
                                  "properties.gpu_bounce_buffer_slab_config.slab_sijson type mismatch", "CUFILE_ENV_PATH_JSON",
                                  "properties", "not.a.key"])
    assert found["keys"] == ["properties.io_batchsize"]
    assert found["labels"] == ["fs.lustre.posix_gds_min_kb", "properties.use_compat_mode"]
    assert found["fragments"] == ["properties.gpu_bounce_buffer_slab_config.slab_sijson"]
    assert found["env"] == ["CUFILE_ENV_PATH_JSON"]


def test_committed_string_keys_show_the_known_release_changes():
    with open(cases_mod.STRINGS) as f:
        data = json.load(f)
    changes = dict(((c["from"], c["to"]), c) for c in data["changes"])
    assert "fs.scatefs.posix_gds_min_kb" in changes[("1.13", "1.14")]["added"]
    assert "block.nvme.use_pci_p2pdma" in changes[("1.15", "1.16")]["added"]
    assert "properties.rdma_transport_type" in changes[("1.18", "1.19")]["added"]


@pytest.mark.parametrize("returncode,markers,stdout,timed_out,outcome", [
    (0, [{"step": "open", "err": 0}], "", False, "ok"),
    (0, [{"step": "open", "err": -22}], "error reading config x", False, "load_fails"),
    (0, [{"step": "open", "err": 5002}], "", False, "load_fails"),
    (0, [{"step": "open", "err": 5033}], " missing cuda symbols while dynamic loading", False, "no_cuda"),
    (-6, [], "", False, "aborts"),
    (-11, [], "", False, "crashed"),
    (None, [], "", True, "timeout"),
    (1, [], "", False, "child_error"),
])
def test_classify(returncode, markers, stdout, timed_out, outcome):
    assert run_mod.classify(returncode, markers, stdout, timed_out) == outcome


def test_order_runs_a_tier_for_every_release_before_the_next():
    cases = [{"id": "b", "tier": 1}, {"id": "a", "tier": 0}]
    assert [(c["id"], r) for c, r in run_mod.order(cases, ["1.13", "1.20"], 2)] == [
        ("a", "1.13"), ("a", "1.20"), ("b", "1.13"), ("b", "1.20")]
    assert run_mod.order(cases, ["1.13"], 0) == [(cases[1], "1.13")]


@pytest.mark.skipif(standin.gcc() is None, reason="needs a C compiler for the libcufile stand-in")
def test_runner_end_to_end_with_the_standin(tmp_path, monkeypatch):
    built = standin.build(str(tmp_path / "si"))
    libs = tmp_path / "libs"
    for release in ("1.15", "1.20"):
        (libs / release).mkdir(parents=True)
        shutil.copy(os.path.join(built, "libcufile.so.0"), str(libs / release / "libcufile.so.0"))
    chosen = [
        {"id": "baseline:empty-object", "tier": 0, "group": "baseline", "key": None, "probe": "empty-object", "kind": "object", "text": "{}"},
        {"id": "properties.io_batchsize:wrong-type", "tier": 0, "group": "key", "key": "properties.io_batchsize",
         "probe": "wrong-type", "kind": "string", "text": '{"properties": {"io_batchsize": "x"}}'},
        {"id": "properties.io_batchsize:valid", "tier": 0, "group": "key", "key": "properties.io_batchsize",
         "probe": "valid", "kind": "int", "text": '{"properties": {"io_batchsize": 128}}'},
        {"id": "properties:kind-array", "tier": 0, "group": "section", "key": "properties", "probe": "kind-array",
         "kind": "array", "text": '{"properties": []}'},
    ]
    cases_path = tmp_path / "cases.jsonl"
    cases_path.write_text("".join(json.dumps(c) + "\n" for c in chosen))
    monkeypatch.setenv("GDS_STANDIN_CUFILE", "sweep")
    monkeypatch.setenv("GDS_STANDIN_CUFILE_VERSION", "1200")
    monkeypatch.setenv("CUFILE_LOGGING_LEVEL", "TRACE")  # the runner must not pass it on
    out = tmp_path / "out"
    assert run_mod.main(["--libs", str(libs), "--cases", str(cases_path), "--out", str(out), "--jobs", "2",
                         "--timeout", "30", "--allow-etc-cufile"]) == 0
    results = compare_mod.read_jsonl(str(out / "results.jsonl"))
    outcomes = dict(((r["release"], r["id"]), r["outcome"]) for r in results)
    assert len(results) == 8
    for release in ("1.15", "1.20"):
        assert outcomes[(release, "baseline:empty-object")] == "ok"
        assert outcomes[(release, "properties.io_batchsize:wrong-type")] == "load_fails"
        assert outcomes[(release, "properties:kind-array")] == "aborts"
    aborted = next(r for r in results if r["id"] == "properties:kind-array")
    assert aborted["signal"] == 6 and aborted["stdout"] == ["error reading config logging"]  # survives abort()
    assert all(r["version"] == 1200 for r in results)
    data = compare_mod.derive(results, chosen, {})
    key = data["keys"]["properties.io_batchsize"]
    assert (key["first"], key["last"], key["gaps"]) == ("1.15", "1.20", [])
    assert key["per_release"]["1.20"]["wrong_type"] == "load_fails:-22"
    assert data["sections"]["properties"]["per_release"]["1.15"]["read"] is True
    assert data["releases"]["1.20"]["load_fail_codes"] == {"-22": 1}


def _result(release, case_id, outcome, err=None):
    return {"release": release, "id": case_id, "outcome": outcome, "err": err, "text": "{}", "stdout": [],
            "libcufile": release, "version": None}


def test_derive_first_last_gaps_and_type():
    cases = [{"id": "baseline:empty-object", "group": "baseline", "key": None, "probe": "empty-object", "kind": "object"}]
    for probe, kind in (("kind-bool", "bool"), ("kind-int", "int"), ("kind-string", "string")):
        cases.append({"id": "properties.k:" + probe, "group": "key", "key": "properties.k", "probe": probe, "kind": kind})
    results = []
    for release, reads in (("1.13", False), ("1.16", True), ("1.17", False), ("1.20", True)):
        results.append(_result(release, "baseline:empty-object", "ok"))
        results.append(_result(release, "properties.k:kind-bool", "ok"))
        results.append(_result(release, "properties.k:kind-int", "load_fails" if reads else "ok", 5002))
        results.append(_result(release, "properties.k:kind-string", "load_fails" if reads else "no_cuda", 5002))
    data = compare_mod.derive(results, cases, {"releases": {"1.20": {"keys": ["properties.k"]}}})
    key = data["keys"]["properties.k"]
    assert (key["first"], key["last"], key["gaps"]) == ("1.16", "1.20", ["1.17"])
    assert key["per_release"]["1.20"]["type"] == "boolean"
    assert key["per_release"]["1.20"]["wrong_type"] == "load_fails:5002"
    assert key["per_release"]["1.13"] == {"read": False, "probes": {"kind-bool": "ok", "kind-int": "ok", "kind-string": "ok"}}
    assert key["strings"] == ["1.20"]


@pytest.mark.parametrize("accepts,rejects,expected", [
    (["bool", "float", "int"], {"string": "load_fails"}, "integer"),
    (["bool"], {"int": "load_fails"}, "boolean"),
    (["array"], {"string": "load_fails"}, "array"),
    (["object"], {"string": "aborts"}, "object"),
    (["bool", "int", "string"], {}, None),
])
def test_infer_type(accepts, rejects, expected):
    assert compare_mod.infer_type(accepts, rejects) == expected
