# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The cufile.json parser: what libcufile 1.15 (jsoncpp) accepts and rejects (reference section 1)."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.parser import (
    CufileSyntaxError, CufileTooLarge, canonical, deep_merge, dumps, format_path, loads, parse)
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile import tokens
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.limits import MAX_BYTES
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.shipped import shipped

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "cufile")

# NVIDIA's NIXL GDS plugin README recommends this cufile.json (copied as published, including
# its duplicated per_buffer_cache_size_kb key): a real input with comments and a duplicate.
NIXL_README_SAMPLE = """{
    // NOTE : Application can override custom configuration via export CUFILE_ENV_PATH_JSON=<filepath>
    // e.g : export CUFILE_ENV_PATH_JSON="/home/<xxx>/cufile.json"

            "properties": {
                            // allow compat mode, this will enable use of cuFile posix read/writes
                            "allow_compat_mode": true,
                            // max IO chunk size (parameter should be multiples of 64K) used by cuFileRead/Write internally per IO request
                            "max_direct_io_size_kb" : 16384,
                            // device memory size (parameter should be 4K aligned) for reserving bounce buffers for the entire GPU
                            "max_device_cache_size_kb" : 2097152,
                            // Note: ensure (max_device_cache_size_kb / per_buffer_cache_size_kb) >= io_batchsize
                            "per_buffer_cache_size_kb": 16384,
                            // limit on maximum device memory size (parameter should be 4K aligned) that can be pinned for a given process
                            "max_device_pinned_mem_size_kb" : 33554432,
                            // per-io bounce-buffer size (parameter should be multiples of 64K) ranging from 1024kb to 16384kb
                            "per_buffer_cache_size_kb" : 16384,

                            // posix bounce buffer pool size allocations
                            "posix_pool_slab_size_kb" : [ 4, 1024, 16384],
                            // posix bounce buffer pool max counts
                            "posix_pool_slab_count": [512, 512, 512]
            }
}
"""


def read_fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


# --- accepted, as libcufile accepts it ------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [
    # case inline_cmt: // after a value
    ('{"logging": {"level": "TRACE" // x\n}}', {"logging": {"level": "TRACE"}}),
    # case block_comment: between members and before the root
    ('/* head */ {"a": 1, /* mid */ "b": 2}', {"a": 1, "b": 2}),
    # case lead_cmt: a // line before {
    ('// cufile\n{"a": true}', {"a": True}),
    # case str_slash: // inside a string stays literal
    ('{"logging": {"dir": "/tmp//"}}', {"logging": {"dir": "/tmp//"}}),
    ('{"a": "x /* not a comment */ y"}', {"a": "x /* not a comment */ y"}),
    ('{"a": "http://h/#frag"}', {"a": "http://h/#frag"}),
    # raw:null and raw:[] are documents too (libcufile treats them as "not set")
    ("null", None),
    ("[]", []),
    ("42", 42),
    ('{"a": 1.5, "b": 64.0, "c": -3, "d": 1e3}', {"a": 1.5, "b": 64.0, "c": -3, "d": 1000.0}),
    ('{"a": "\\u00e9\\ud83d\\ude00\\n\\"\\\\\\/"}', {"a": u"\u00e9\U0001F600\n\"\\/"}),
    ('{"a": {}, "b": [], "c": [[1], {"d": null}]}', {"a": {}, "b": [], "c": [[1], {"d": None}]}),
    ('{"a": 1}\n// trailing comment\n', {"a": 1}),
    ('{"a": 1} /* trailing block */', {"a": 1}),
])
def test_accepts_like_libcufile(text, expected):
    assert loads(text) == expected


def test_int_and_float_tokens_stay_distinct():
    doc = loads('{"i": 64, "f": 64.0}')
    assert isinstance(doc["i"], int) and not isinstance(doc["i"], bool) and isinstance(doc["f"], float)


def test_duplicate_keys_last_wins_and_reported():
    result = parse('{\n "a": 1,\n "a": 2,\n "s": {"x": 1},\n "s": {"y": 2}\n}')
    assert result.document == {"a": 2, "s": {"y": 2}}
    dups = [(d["path"], d["line"], d["first_line"]) for d in result.duplicates]
    assert dups == [(("a",), 3, 2), (("s",), 5, 4)]
    # stale positions of the overwritten block are dropped
    assert ("s", "x") not in result.positions and result.position(("s", "y")) == (5, 8)


def test_nixl_readme_sample_parses_with_its_duplicate():
    result = parse(NIXL_README_SAMPLE)
    assert result.document["properties"]["per_buffer_cache_size_kb"] == 16384
    assert [d["path"] for d in result.duplicates] == [("properties", "per_buffer_cache_size_kb")]


def test_positions_are_one_based_line_and_column():
    result = parse('{\n  "properties": {\n    "io_batchsize": 512\n  }\n}')
    assert result.key_positions[("properties", "io_batchsize")] == (3, 5)
    assert result.positions[("properties", "io_batchsize")] == (3, 21)
    assert result.position(("properties", "io_batchsize", "missing")) == (3, 5)


def test_shipped_fixture_parses_to_the_shipped_dict():
    assert loads(read_fixture("cuda-13.0-shipped.json")) == shipped()


# --- rejected, as libcufile rejects it ----------------------------------------------------------------
@pytest.mark.parametrize("text, line, column, words", [
    ('{"a": 1 # hash comment\n}', 1, 9, "'#' comments"),                 # case hash_comment
    ('# head\n{"a": 1}', 1, 1, "'#' comments"),
    ('{"a": 1,}', 1, 8, "trailing comma"),                                # case trailing_comma
    ('{"a": [1, 2,]}', 1, 12, "trailing comma"),
    ('{\n  "a": 1,\n  // c\n}', 2, 9, "trailing comma"),
    ("{'a': 1}", 1, 2, "single-quoted"),                                 # case single_quote
    ('{"a": \'x\'}', 1, 7, "single-quoted"),
    (u'\ufeff{"a": 1}', 1, 1, "byte order mark"),                        # case bom
    ("", 1, 1, "empty"),                                                 # case empty_file
    ("   \n\t ", 2, 3, "empty"),
    ("// only a comment\n", 2, 1, "empty"),
    ('{"a": {"b": 1}', 1, 15, "never closed"),                           # case syntax_err
    ('{"a": [1, 2}', 1, 12, "expected ',' or ']'"),
    ('{"a" 1}', 1, 6, "expected ':'"),
    ('{"a": 1 "b": 2}', 1, 9, "expected ','"),
    ('{"a": "open}', 1, 7, "unterminated string"),
    ('{"a": 1 /* open', 1, 9, "unterminated /*"),
    ('{"a": "\\q"}', 1, 8, "bad escape"),
    ('{"a": "\\u12"}', 1, 8, "bad \\u escape"),
    ('{"a": "\\udc00"}', 1, 8, "surrogate"),
    ('{"a": True}', 1, 7, "unexpected token 'True'"),
    ('{"a": NaN}', 1, 7, "unexpected token 'NaN'"),
    ('{"a": Infinity}', 1, 7, "unexpected token"),
    ('{a: 1}', 1, 2, "double-quoted key"),
    ('{"a": +1}', 1, 7, "unexpected character"),
    ('{"a": .5}', 1, 7, "unexpected character"),
    ('{"a": -}', 1, 7, "invalid number"),
    ('{"a": 1 / 2}', 1, 9, "unexpected '/'"),
    ('{"a": }', 1, 7, "unexpected character"),
    ('{"a":', 1, 6, "value is missing"),
    ("[" * 300 + "]" * 300, 1, 258, "nesting deeper"),
])
def test_rejects_like_libcufile(text, line, column, words):
    with pytest.raises(CufileSyntaxError) as info:
        parse(text)
    err = info.value
    assert words in err.message
    assert (err.line, err.column) == (line, column)
    assert str(err).startswith("line %d column %d: " % (line, column))


def test_rejects_a_bom_in_bytes():
    with pytest.raises(CufileSyntaxError) as info:
        parse(b'\xef\xbb\xbf{"a": 1}')
    assert "byte order mark" in info.value.message


@pytest.mark.parametrize("text, document, trailing", [
    # measured on libcufile 1.15.1: jsoncpp stops after the root value and ignores the rest
    ('{"a": 1}}', {"a": 1}, (1, 9)),
    ('{"a": 1}\n]', {"a": 1}, (2, 1)),
    ('{"a": 1} x', {"a": 1}, (1, 10)),
    ('{} /* never closed', {}, (1, 4)),
    ('{}\n# hash after the document', {}, (2, 1)),
    ('{"a": 1} {"a": 999}', {"a": 1}, (1, 10)),
    ('{"a": 1} // fine\n', {"a": 1}, None),
])
def test_content_after_the_document_is_ignored_and_reported(text, document, trailing):
    result = parse(text)
    assert result.document == document and result.trailing == trailing


def test_bytes_that_are_not_utf8_are_kept_and_reported():
    result = parse(b'{\n "a": "x\xfey"}')            # measured: libcufile loads it
    assert result.invalid_utf8 == (2, 9, 0xfe)
    assert dumps(result.document).encode("utf-8", "surrogateescape") == b'{\n  "a": "x\xfey"\n}\n'


@pytest.mark.parametrize("text, value", [("1.", 1.0), ("012", 12), ("-0", 0), ("1E2", 100.0), ("64e0", 64.0)])
def test_number_forms_jsoncpp_accepts(text, value):      # measured: all load in libcufile 1.15.1
    assert loads('{"n": %s}' % text) == {"n": value}


def test_bytes_input_is_utf8():
    assert loads(u'{"m": "/mnt/d\u00e9p\u00f4t"}'.encode("utf-8")) == {"m": u"/mnt/d\u00e9p\u00f4t"}


# --- dumps / canonical / format_path ---------------------------------------------------------------------
def test_dumps_is_sorted_indented_stable_and_reparses():
    doc = {"b": {"z": 1, "a": [1, 2]}, "a": True}
    text = dumps(doc)
    assert text == '{\n  "a": true,\n  "b": {\n    "a": [\n      1,\n      2\n    ],\n    "z": 1\n  }\n}\n'
    assert loads(text) == doc and dumps(loads(text)) == text


def test_dumps_refuses_nan():
    with pytest.raises(ValueError):
        dumps({"a": float("nan")})


def test_canonical_is_type_exact():
    assert canonical({"a": 1}) != canonical({"a": True})
    assert canonical({"a": 1}) != canonical({"a": 1.0})
    assert canonical({"a": 1, "b": 2}) == canonical({"b": 2, "a": 1})


@pytest.mark.parametrize("path, text", [
    ((), "$"),
    (("properties", "io_batchsize"), "properties.io_batchsize"),
    (("denylist", "drivers", 0), "denylist.drivers[0]"),
    (("fs", "lustre", "mount_table", "/mnt/a", "rdma_dev_addr_list", 1), 'fs.lustre.mount_table["/mnt/a"].rdma_dev_addr_list[1]'),
    (("has.dot",), '["has.dot"]'),
    (("logging", "A\n"), 'logging["A\\n"]'),
])
def test_format_path(path, text):
    assert format_path(path) == text


# --- deep_merge ---------------------------------------------------------------------------------------------
def test_deep_merge_objects_recursively_and_replaces_arrays():
    base = {"properties": {"a": 1, "list": [1, 2, 3]}, "logging": {"level": "ERROR"}}
    merged = deep_merge(base, {"properties": {"b": 2, "list": [9]}})
    assert merged == {"properties": {"a": 1, "b": 2, "list": [9]}, "logging": {"level": "ERROR"}}
    assert base["properties"] == {"a": 1, "list": [1, 2, 3]}  # not modified


def test_deep_merge_null_deletes_in_settings():
    merged = deep_merge({"properties": {"a": 1, "b": 2}, "fs": {"x": 1}}, {"properties": {"a": None}, "fs": None, "new": None})
    assert merged == {"properties": {"b": 2}}


def test_deep_merge_null_is_not_set_for_overlays():
    merged = deep_merge({"properties": {"a": 1}}, {"properties": {"a": None, "b": None, "c": 3}}, null_deletes=False)
    assert merged == {"properties": {"a": 1, "c": 3}}


def test_deep_merge_scalar_replaced_by_object_and_unset_roots():
    assert deep_merge({"denylist": "nvme"}, {"denylist": {"drivers": ["nvme"]}}) == {"denylist": {"drivers": ["nvme"]}}
    assert deep_merge({"a": 1}, None) == {"a": 1}
    assert deep_merge({"a": 1}, []) == {"a": 1}
    assert deep_merge(None, {"a": 1}) == {"a": 1}


# --- property tests -------------------------------------------------------------------------------------------
json_scalars = st.none() | st.booleans() | st.integers(-2 ** 63, 2 ** 64) | st.text(max_size=12) | \
    st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                           max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(json_values)
def test_parses_what_json_dumps_writes(value):
    for text in (json.dumps(value), json.dumps(value, indent=2), "// c\n/* b */" + json.dumps(value) + "\n// end"):
        assert loads(text) == value


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=u'{}[]":,/*#\'\n 0123456789.-+eEtrufalsn\\\ufeff', max_size=40))
def test_garbage_only_raises_syntax_errors(text):
    try:
        loads(text)
    except CufileSyntaxError as err:
        assert err.line >= 1 and err.column >= 1 and err.message


@pytest.mark.parametrize("text, start, number", [
    ("1", 0, (1, False)), ("-0", 0, (2, False)), ("12,", 0, (2, False)), ("1.5", 0, (3, True)), ("1.", 0, (2, True)),
    ("1e5", 0, (3, True)), ("1.5E-3}", 0, (6, True)), ("1e", 0, (1, False)), ("1.5e+", 0, (3, True)),
    ("[ 42]", 2, (4, False)), ("-", 0, None), (".5", 0, None), ("+1", 0, None), ("\u0663", 0, None), ("", 0, None)])
def test_number_tokens(text, start, number):
    assert tokens.number_at(text, start) == number


@pytest.mark.parametrize("text, start, end", [
    ("true", 0, 4), ("null,", 0, 4), (" _a1 ", 1, 4), ("1a", 0, None), ("\u00e9", 0, None), ("a\u00e9", 0, 1),
    ('"a"', 0, None), ("", 0, None)])
def test_word_tokens(text, start, end):
    assert tokens.word_end(text, start) == end


@pytest.mark.parametrize("text, starts", [
    ("", [0]), ("a", [0]), ("\n", [0, 1]), ("a\nb", [0, 2]), ("a\n\nb\n", [0, 2, 3, 5]), ("\r\n\n", [0, 2, 3])])
def test_line_starts(text, starts):
    assert tokens.line_starts(text) == starts


def test_a_text_over_the_size_cap_is_refused_before_it_is_parsed():
    for data in (b" " * MAX_BYTES + b"{}", " " * MAX_BYTES + "{}"):
        with pytest.raises(CufileTooLarge) as caught:
            parse(data)
        assert "%d bytes, more than the 1 MiB" % (MAX_BYTES + 2) in caught.value.message
    assert parse(b" " * (MAX_BYTES - 2) + b"{}").document == {}
    assert parse(b" " * MAX_BYTES + b"{}", limit=None).document == {}


def test_a_number_too_long_is_a_syntax_error_at_its_position():
    with pytest.raises(CufileSyntaxError) as caught:
        parse('{\n  "properties": {"io_batchsize": %s}}' % ("9" * 5000))
    error = caught.value
    assert (error.line, error.column) == (2, 34)
    assert error.message == "number too long at properties.io_batchsize: 5000 characters (at most 400 are read)"
    assert parse("[%s]" % ("1" * 400)).document == [int("1" * 400)]


def test_messages_cut_what_the_input_holds():
    with pytest.raises(CufileSyntaxError) as caught:
        parse('{"%s" 1}' % ("k" * 100000))
    assert len(caught.value.message) < 200
    with pytest.raises(CufileSyntaxError) as caught:
        parse("[%s]" % ("x" * 100000))
    assert len(caught.value.message) < 200


def test_a_replaced_duplicate_leaves_no_positions_behind():
    parsed = parse('{"a": {"b": [1, {"c": 2}]},\n "a": 3}')
    assert parsed.document == {"a": 3}
    assert sorted(parsed.positions) == [(), ("a",)] and parsed.position(("a", "b", 1, "c")) == (2, 2)


def test_strings_with_many_escapes_and_quotes_parse():
    value = '\\"' * 1000 + "a\\nb" + '\\u00e9' * 3
    assert parse('["%s", "x"]' % value).document == ['"' * 1000 + "a\nb" + "\u00e9" * 3, "x"]
    with pytest.raises(CufileSyntaxError, match="unterminated string"):
        parse('["abc\\"]')
