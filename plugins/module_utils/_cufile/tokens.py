# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The tokens of the cufile.json reader (parser.py): numbers, words and line starts,
scanned with str methods. PRIVATE to the collection. Pure, standard library only; like the
parser it imports nothing from outside _cufile (bin/cufile-lint runs with the _cufile rooms
alone), hence its own run_end beside _common.hostparse's scanners."""

from __future__ import annotations

# Tokens are scanned with str methods: the patterns they were (-?[0-9]+(\.[0-9]*)?... ) cost a
# millisecond to compile on every run that reads a cufile.json.
_DIGITS = frozenset("0123456789")
_WORD_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_WORD_CHARS = _WORD_FIRST | _DIGITS


def run_end(text, start, chars):
    """Where the run of ``chars`` that starts at ``start`` ends."""
    end, n = start, len(text)
    while end < n and text[end] in chars:
        end += 1
    return end


def number_at(text, start):
    """(end, is_float) of the number at ``start`` - what ``-?[0-9]+(\\.[0-9]*)?([eE][+-]?[0-9]+)?``
    matches (ASCII digits; an exponent without digits is not part of it) - or None."""
    first = start + 1 if text.startswith("-", start) else start
    end = run_end(text, first, _DIGITS)
    if end == first:
        return None
    is_float = text.startswith(".", end)
    if is_float:
        end = run_end(text, end + 1, _DIGITS)
    if text.startswith("e", end) or text.startswith("E", end):
        digits = end + 2 if text.startswith("+", end + 1) or text.startswith("-", end + 1) else end + 1
        exponent_end = run_end(text, digits, _DIGITS)
        if exponent_end > digits:
            return exponent_end, True
    return end, is_float


def word_end(text, start):
    """Where the word (``[A-Za-z_][A-Za-z0-9_]*``) at ``start`` ends, or None."""
    if start < len(text) and text[start] in _WORD_FIRST:
        return run_end(text, start + 1, _WORD_CHARS)
    return None


def line_starts(text):
    """The index where each line of ``text`` starts (str.find: no pattern to compile)."""
    starts = [0]
    end = text.find("\n")
    while end >= 0:
        starts.append(end + 1)
        end = text.find("\n", end + 1)
    return starts
