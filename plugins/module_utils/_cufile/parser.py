# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Read and write cufile.json the way libcufile 1.15 (jsoncpp) reads it. PRIVATE to the collection.
Target-side code: standard library only, Python 3.8+.

Accepted, as libcufile accepts them (docs/cufile.md, reference cufile-keys.md section 1):
``//`` line comments and ``/* */`` block comments anywhere whitespace may appear, also before
the root value; comment markers inside strings stay literal; duplicate keys (the last one
wins, each one is reported in ``ParseResult.duplicates``).

Rejected with :class:`CufileSyntaxError` (``.line``, ``.column``, ``.message``), as libcufile
rejects them ("parsing error, invalid json config"): ``#`` comments, trailing commas, single
quotes, a UTF-8 byte order mark, an empty file (also one holding only comments), an object or
array that is never closed. Also refused: a number longer than ``limits.MAX_NUMBER_CHARS`` and,
before it is parsed, a text over ``limits.MAX_BYTES`` (:class:`CufileTooLarge`).

Accepted but reported, because libcufile 1.15.1 accepts them (measured on the GPU host):
content after the root value (``{} }``, ``{} x``, a second document: jsoncpp stops reading after
the root value; ``ParseResult.trailing``), bytes that are not UTF-8 (kept with surrogateescape;
``ParseResult.invalid_utf8``), and numbers such as ``1.`` (read as 1.0).
"""

from __future__ import annotations

import bisect
import copy
import json
import re

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.limits import (
    MAX_BYTES, MAX_NUMBER_CHARS, brief, size_problem)
from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.tokens import (
    line_starts, number_at, word_end)

MAX_DEPTH = 256
_PLAIN_KEY = r"^[A-Za-z_][A-Za-z0-9_]*\Z"  # compiled (and kept by re) when first used: in messages
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_BOM = u"\ufeff"


class CufileSyntaxError(ValueError):
    """cufile.json is not text libcufile can parse. ``line``/``column`` are 1-based."""

    def __init__(self, message, line=1, column=1):
        self.message = message
        self.line = line
        self.column = column
        super(CufileSyntaxError, self).__init__("line %d column %d: %s" % (line, column, message))


class CufileTooLarge(CufileSyntaxError):
    """The text is over ``limits.MAX_BYTES``: refused before it is parsed."""


class ParseResult(object):
    """``document`` (the parsed value), ``duplicates`` (list of dicts: path, line, column,
    first_line, first_column), ``positions`` (path tuple -> (line, column) of the value),
    ``key_positions`` (path tuple -> (line, column) of the member's key), ``trailing``
    ((line, column) of content after the root value, which libcufile ignores, or None) and
    ``invalid_utf8`` ((line, column, byte) of the first byte that is not UTF-8, or None)."""

    __slots__ = ("document", "duplicates", "positions", "key_positions", "trailing", "invalid_utf8")

    def __init__(self, document, duplicates, positions, key_positions, trailing=None, invalid_utf8=None):
        self.document = document
        self.duplicates = duplicates
        self.positions = positions
        self.key_positions = key_positions
        self.trailing = trailing
        self.invalid_utf8 = invalid_utf8

    def position(self, path):
        """(line, column) of the key at ``path`` (or of its value), else of the nearest parent."""
        path = tuple(path)
        while True:
            if path in self.key_positions:
                return self.key_positions[path]
            if path in self.positions:
                return self.positions[path]
            if not path:
                return (None, None)
            path = path[:-1]


def format_path(path):
    """JSON path text of a path tuple: ``properties.io_batchsize``, ``denylist.drivers[0]``,
    ``fs.lustre.mount_table["/mnt/a"]``; ``$`` for the root."""
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += "[%d]" % part
        elif re.match(_PLAIN_KEY, part):
            out += ("." if out else "") + part
        else:
            out += "[%s]" % json.dumps(part, ensure_ascii=False)
    return out or "$"


class _Parser(object):

    def __init__(self, text):
        self.text = text
        self.n = len(text)
        self.i = 0
        self.line_starts = line_starts(text)
        self.duplicates = []
        self.positions = {}
        self.key_positions = {}

    # -- helpers -----------------------------------------------------------------------------
    def where(self, index):
        row = bisect.bisect_right(self.line_starts, index) - 1
        return row + 1, index - self.line_starts[row] + 1

    def fail(self, message, index=None):
        line, col = self.where(self.i if index is None else index)
        raise CufileSyntaxError(message, line, col)

    def skip(self):
        """Skip whitespace and comments; reject '#' comments."""
        text, n = self.text, self.n
        while self.i < n:
            c = text[self.i]
            if c in " \t\r\n":
                self.i += 1
            elif c == "/":
                nxt = text[self.i + 1] if self.i + 1 < n else ""
                if nxt == "/":
                    end = text.find("\n", self.i)
                    self.i = n if end < 0 else end + 1
                elif nxt == "*":
                    end = text.find("*/", self.i + 2)
                    if end < 0:
                        self.fail("unterminated /* comment")
                    self.i = end + 2
                else:
                    self.fail("unexpected '/': comments start with // or /*")
            elif c == "#":
                self.fail("'#' comments are not valid in cufile.json (libcufile rejects the file); use // instead")
            else:
                return

    def peek(self):
        return self.text[self.i] if self.i < self.n else ""

    # -- values ------------------------------------------------------------------------------
    def value(self, path, depth):
        self.skip()
        if depth > MAX_DEPTH:
            self.fail("nesting deeper than %d levels" % MAX_DEPTH)
        start = self.i
        self.positions[path] = self.where(start)
        c = self.peek()
        if c == "{":
            return self.obj(path, depth)
        if c == "[":
            return self.arr(path, depth)
        if c == '"':
            return self.string()
        if c == "'":
            self.fail("single-quoted strings are not valid JSON (libcufile rejects the file); use double quotes")
        if c == "-" or c.isdigit():
            found = number_at(self.text, self.i)
            if not found:
                self.fail("invalid number")
            raw = self.text[self.i:found[0]]
            if len(raw) > MAX_NUMBER_CHARS:
                self.fail("number too long at %s: %d characters (at most %d are read)"
                          % (brief(format_path(path)), len(raw), MAX_NUMBER_CHARS))
            self.i = found[0]
            return float(raw) if found[1] else int(raw)
        if c == "":
            self.fail("unexpected end of input: a value is missing")
        end = word_end(self.text, self.i)
        if end is not None:
            word = self.text[self.i:end]
            literals = {"true": True, "false": False, "null": None}
            if word in literals:
                self.i = end
                return literals[word]
            self.fail("unexpected token %r (JSON literals are true, false and null, all lower case)" % brief(word))
        self.fail("unexpected character %r" % c)

    def string(self):
        open_at = self.i
        self.i += 1
        text, parts = self.text, []
        quote = -1  # the next '"': found once, not again for every escape before it
        while True:
            if quote < self.i:
                quote = text.find('"', self.i)
                if quote < 0:
                    self.fail("unterminated string", open_at)
            slash = text.find("\\", self.i, quote)
            end = quote if slash < 0 else slash
            parts.append(text[self.i:end])
            self.i = end
            if slash < 0:
                self.i += 1
                return "".join(parts)
            esc = text[self.i + 1] if self.i + 1 < self.n else ""
            if esc in _ESCAPES:
                parts.append(_ESCAPES[esc])
                self.i += 2
            elif esc == "u":
                parts.append(self.unicode_escape())
            else:
                self.fail("bad escape sequence in string: \\%s" % esc)

    def hex4(self, at):
        digits = self.text[at:at + 4]
        if len(digits) != 4 or not all(ch in "0123456789abcdefABCDEF" for ch in digits):
            self.fail("bad \\u escape: 4 hex digits expected", at - 2)
        return int(digits, 16)

    def unicode_escape(self):
        code = self.hex4(self.i + 2)
        start = self.i
        self.i += 6
        if 0xD800 <= code <= 0xDBFF:
            if self.text[self.i:self.i + 2] != "\\u":
                self.fail("unpaired unicode surrogate in \\u escape", start)
            low = self.hex4(self.i + 2)
            if not 0xDC00 <= low <= 0xDFFF:
                self.fail("invalid low surrogate in \\u escape", self.i)
            self.i += 6
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
        elif 0xDC00 <= code <= 0xDFFF:
            self.fail("unpaired unicode surrogate in \\u escape", start)
        return chr(code)

    def obj(self, path, depth):
        open_at = self.i
        self.i += 1
        result = {}
        self.skip()
        if self.peek() == "}":
            self.i += 1
            return result
        while True:
            self.skip()
            c = self.peek()
            key_at = self.i
            if c == "'":
                self.fail("single-quoted keys are not valid JSON (libcufile rejects the file); use double quotes")
            if c == "":
                self.fail("unexpected end of input: '{' opened at line %d column %d is never closed" % self.where(open_at))
            if c != '"':
                self.fail("expected a double-quoted key, found %r" % c)
            key = self.string()
            self.skip()
            if self.peek() != ":":
                self.fail("expected ':' after key %s" % brief(json.dumps(key)))
            self.i += 1
            child = path + (key,)
            if key in result:
                first = self.key_positions.get(child, (None, None))
                line, col = self.where(key_at)
                self.duplicates.append({"path": child, "line": line, "column": col,
                                        "first_line": first[0], "first_column": first[1]})
                self.forget(child, result[key])
            self.key_positions[child] = self.where(key_at)
            result[key] = self.value(child, depth + 1)
            if self.closes("{", "}", open_at, "after the value of %s" % brief(json.dumps(key))):
                return result

    def forget(self, path, value):
        """Drop the positions of ``value``, which a later duplicate key replaces (at its own size's cost)."""
        self.positions.pop(path, None)
        self.key_positions.pop(path, None)
        members = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for key, member in members:
            self.forget(path + (key,), member)

    def closes(self, opener, closer, open_at, context):
        """After an item of an object or array: True when ``closer`` ends the container,
        False after a comma; anything else (a trailing comma too) is a syntax error."""
        self.skip()
        c = self.peek()
        if c == ",":
            comma_at = self.i
            self.i += 1
            self.skip()
            if self.peek() == closer:
                self.fail("trailing comma before '%s' (libcufile rejects the file)" % closer, comma_at)
            return False
        if c == closer:
            self.i += 1
            return True
        if c == "":
            self.fail("unexpected end of input: '%s' opened at line %d column %d is never closed"
                      % ((opener,) + tuple(self.where(open_at))))
        self.fail("expected ',' or '%s' %s, found %r" % (closer, context, c))

    def arr(self, path, depth):
        open_at = self.i
        self.i += 1
        result = []
        self.skip()
        if self.peek() == "]":
            self.i += 1
            return result
        while True:
            if self.peek() == "":
                self.fail("unexpected end of input: '[' opened at line %d column %d is never closed" % self.where(open_at))
            result.append(self.value(path + (len(result),), depth + 1))
            if self.closes("[", "]", open_at, "in array"):
                return result

    def document(self):
        self.skip()
        if self.i >= self.n:
            self.fail("empty document: libcufile rejects an empty cufile.json")
        doc = self.value((), 0)
        # jsoncpp stops after the root value: whatever follows is ignored, even if it is not JSON
        self.trailing = None
        try:
            self.skip()
        except CufileSyntaxError:
            pass
        if self.i < self.n:
            self.trailing = self.where(self.i)
        return doc


def _decode(data, limit):
    """(text, invalid_utf8). Bytes that are not UTF-8 are kept (surrogateescape): jsoncpp does
    not check the encoding."""
    problem = size_problem(len(data), limit)
    if problem:
        raise CufileTooLarge(problem, 1, 1)
    if isinstance(data, bytes):
        if data.startswith(b"\xef\xbb\xbf"):
            raise CufileSyntaxError("UTF-8 byte order mark at the start of the file (libcufile rejects the file)", 1, 1)
        try:
            return data.decode("utf-8"), None
        except UnicodeDecodeError as exc:
            text = data[:exc.start].decode("utf-8", "replace")
            line = text.count("\n") + 1
            col = len(text) - (text.rfind("\n") + 1) + 1
            return data.decode("utf-8", "surrogateescape"), (line, col, data[exc.start])
    if data.startswith(_BOM):
        raise CufileSyntaxError("UTF-8 byte order mark at the start of the file (libcufile rejects the file)", 1, 1)
    return data, None


def parse(data, limit=MAX_BYTES):
    """Parse cufile.json text (str or bytes) of at most ``limit`` bytes (characters for str).
    Returns a :class:`ParseResult`; raises :class:`CufileSyntaxError`."""
    text, invalid = _decode(data, limit)
    parser = _Parser(text)
    doc = parser.document()
    return ParseResult(doc, parser.duplicates, parser.positions, parser.key_positions, parser.trailing, invalid)


def loads(data):
    """The parsed document only."""
    return parse(data).document


def dumps(doc):
    """Stable text for writing and for --diff: sorted keys, 2-space indent, trailing newline.
    Plain JSON (no comments), so any JSON reader can read the written file. Encode it with
    ``encode("utf-8", "surrogateescape")`` to give back bytes that were not UTF-8."""
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def deep_merge(base, override, null_deletes=True):
    """Merge ``override`` over ``base`` (neither is modified) and return the result.

    Objects merge key by key, recursively; any other value (arrays included) replaces the base
    value as a whole. A ``None`` (JSON null) in ``override``:

    * ``null_deletes=True`` (module ``settings``): removes the key from the result, so the key
      falls back to libcufile's built-in default (libcufile treats null as "not set" anyway,
      removing it keeps the written file clean);
    * ``null_deletes=False`` (a CUFILE_ENV_PATH_JSON overlay): "not set", the base value stays.

    A non-object ``base`` counts as empty; a non-object ``override`` (libcufile treats a root of
    null or [] as "not set") leaves ``base`` unchanged.
    """
    result = copy.deepcopy(base) if isinstance(base, dict) else {}
    if not isinstance(override, dict):
        return result
    for key, value in override.items():
        if value is None:
            if null_deletes:
                result.pop(key, None)
            continue
        if isinstance(value, dict):
            result[key] = deep_merge(result.get(key) if isinstance(result.get(key), dict) else {}, value, null_deletes)
        else:
            result[key] = copy.deepcopy(value)
    return result


def canonical(doc):
    """Comparison key of a document: type-exact (true != 1 != 1.0), order-insensitive for keys."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
