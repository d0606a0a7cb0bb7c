# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The tokens of the cufile.json reader (parser.py): numbers, words and line starts. PRIVATE to
the collection. Pure, standard library only; like the parser it imports nothing from outside
_cufile (bin/cufile-lint runs with the _cufile rooms alone)."""

from __future__ import annotations

import re

# jsoncpp's number: ASCII digits; an exponent without digits is not part of it
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]*)?([eE][+-]?[0-9]+)?")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def number_at(text, start):
    """(end, is_float) of the number at ``start``, or None."""
    m = _NUMBER.match(text, start)
    return (m.end(), bool(m.group(1) or m.group(2))) if m else None


def word_end(text, start):
    """Where the word (``true``, ``null``, a bare key libcufile refuses) at ``start`` ends, or None."""
    m = _WORD.match(text, start)
    return m.end() if m else None


def line_starts(text):
    """The index where each line of ``text`` starts."""
    starts = [0]
    end = text.find("\n")
    while end >= 0:
        starts.append(end + 1)
        end = text.find("\n", end + 1)
    return starts
