# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How much cufile.json input the collection reads, and how much of it a message shows.
PRIVATE to the collection. Pure, standard library only (the parser, the module and
bin/cufile-lint use it). Real cufile.json files are a few KB: the caps are far above them and
keep a hostile or mistaken input from costing minutes, gigabytes or megabytes of output."""

from __future__ import annotations

import os

MAX_BYTES = 1024 * 1024  # the largest cufile.json text read: src, settings as JSON, the host's files
MAX_NUMBER_CHARS = 400  # a double's longest integer part is 309 digits


def size_problem(size, limit=MAX_BYTES):
    """Why a cufile.json text of ``size`` bytes is refused, or None."""
    if limit is None or size <= limit:
        return None
    return ("%d bytes, more than the %s (%d bytes) the collection reads as a cufile.json (real ones are a few KB)"
            % (size, "1 MiB" if limit == 1024 * 1024 else "%d bytes" % limit, limit))


def read_capped(f):
    """(the first MAX_BYTES + 1 bytes of an open file, its size): a bigger file is never read whole."""
    data = f.read(MAX_BYTES + 1)
    return data, max(len(data), os.fstat(f.fileno()).st_size)


def brief(text, limit=60):
    """``text`` cut for a message: whatever the input holds, a message stays short."""
    return text if len(text) <= limit else text[:limit - 3] + "..."
