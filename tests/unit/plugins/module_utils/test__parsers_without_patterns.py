# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The parsers a plan or a facts run uses on every host read their text with str methods (a
pattern costs 0.1-1 ms to compile, on every run of every host). Each must answer what the
pattern it replaced answered: those patterns are kept here as the reference, and both read the
same texts - real ones and random ones made of the pieces that matter."""

from __future__ import annotations

import random
import re

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostparse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import kmod, nvfs


def _group(pattern, how="search", group=1, convert=None):
    compiled = re.compile(pattern)

    def reference(text):
        m = getattr(compiled, how)(text)
        if not m:
            return None
        return convert(m) if convert else m.group(group)
    return reference


def _ofed(text):
    for line in text.splitlines():
        line = line.strip().rstrip(":").strip()
        m = re.match(r"^(MLNX_OFED_LINUX|OFED-internal|OFED)-(\d[\w.\-]*)$", line)
        if m:
            return {"distribution": m.group(1), "version": m.group(2), "raw": line}
    return None


def _driver(text):
    for line in text.splitlines():
        m = re.match(r"^NVRM version: NVIDIA UNIX (Open )?.*?Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", line)
        if m:
            return {"version": m.group(2), "open": bool(m.group(1)), "source": "proc"}
    return None


_DKMS3 = re.compile(r"^(?P<m>[^/,\s]+)/(?P<v>[^,:\s]+)(?:, (?P<k>[^,:\s]+))?(?:, (?P<a>[^,:\s]+))?: (?P<rest>.*)$")


def _dkms3(line):
    m = _DKMS3.match(line)
    return m.groupdict() if m else None


CASES = {
    "driver_from_make_log": (nvfs.driver_from_make_log,
                             _group(r"NVIDIA_SRC_DIR=\S*/nvidia(?:-open)?-(\d+\.\d+(?:\.\d+)?)"),
                             ["NVIDIA_SRC_DIR=/usr/src/nvidia-580.95.05/kernel", "make NVIDIA_SRC_DIR=/usr/src/nvidia-open-575.51.03 x",
                              "NVIDIA_SRC_DIR=/a/nvidia-1.2/nvidia-x", "NVIDIA_SRC_DIR=/a/nvidia-x NVIDIA_SRC_DIR=/b/nvidia-9.8.7.6"],
                             ["NVIDIA_SRC_DIR=", "/nvidia", "-open", "-", "580", ".", "95", " ", "/", "x", "\u0663"]),
    "nvfs_series": (nvfs.nvfs_series, _group(r"^(\d+)\.(\d+)", "match", convert=lambda m: (int(m.group(1)), int(m.group(2)))),
                    ["2.26.6", "2.26", "2", "x2.3", "2.x", "\u0663.\u0664"], ["2", "26", ".", "x", "-", "\u0663", "\n"]),
    "cuda_of_package": (nvfs.cuda_of_package,
                        _group(r"^(?:libcufile|libcufile-dev|gds-tools|nvidia-gds)-(\d+)-(\d+)$", "match",
                               convert=lambda m: "%s.%s" % (m.group(1), m.group(2))),
                        ["libcufile-12-8", "libcufile-dev-13-0", "gds-tools-13-0\n", "nvidia-gds-12-9", "libcufile-12-8-1"],
                        ["libcufile", "libcufile-dev", "gds-tools", "nvidia-gds", "-", "12", "8", "x", "\n", "\u0663"]),
    "parse_nvfs_version": (parse.parse_nvfs_version, _group(r"version:\s*([0-9][0-9.]*)"),
                           ["version: 2.26", "version:2.26.6\n", "version: .1 version: 3", "no"],
                           ["version:", " ", "\t", "2", ".", "26", "x", "\u0663", "\u3000"]),
    "soname_version": (parse.soname_version, _group(r"\.so\.(\d+\.\d+(?:\.\d+)*)$"),
                       ["/usr/lib/libcufile.so.1.15.1", "libcufile.so.0", "libcufile.so", "a.so.1.so.1.2", "x.so.1.2\n"],
                       [".so.", ".so", "1", ".", "15", "x", "\n", "/", "\u0663"]),
    "cuda_dir_version": (parse.cuda_dir_version,
                         _group(r"cuda-(\d+)\.(\d+)", convert=lambda m: (int(m.group(1)), int(m.group(2)))),
                         ["/usr/local/cuda-13.0", "/usr/local/cuda-12", "/opt/cuda-x/cuda-12.8"],
                         ["cuda-", "cuda", "13", ".", "0", "x", "/", "\u0663"]),
    "parse_ofed_info": (hostparse.parse_ofed_info, _ofed,
                        ["MLNX_OFED_LINUX-24.10-4.1.4.0:", "OFED-internal-25.10-1.7.1:\n", "OFED-5.8", "OFED-internal-x",
                         "  OFED-internal-24.01-0.3.3  \n"],
                        ["MLNX_OFED_LINUX", "OFED-internal", "OFED", "-", "24", ".", "_", ":", " ", "\n", "x", "\u00e9", "\u0663",
                         "!"]),
    "parse_driver_version": (hostparse.parse_driver_version, _driver,
                             ["NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
                              "GCC version:  gcc version 14.3.0 (GCC) ",  # the H100 host's, 2026-11-27
                              "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs@U22)",
                              "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 2023",
                              "NVRM version: NVIDIA UNIX Kernel Module for aarch64  570.86\nGCC version: 12"],
                             ["NVRM version: NVIDIA UNIX ", "Open ", "Kernel Module", " for ", "x86_64", " ", "  ", "580", ".",
                              "95", "\n", "\t", "\u0663"]),
    "dkms3_fields": (kmod.dkms3_fields, _dkms3,
                     ["nvidia-fs/2.26.6, 6.8.0-45-generic, x86_64: installed", "nvidia-fs/2.26.6: added",
                      "nvidia-fs/2.26.6, 6.8.0: built (WARNING! Diff between built and installed module!)",
                      "a/b, c, d, e: x", "a/b,c: x"],
                     ["nvidia-fs", "/", "2.26.6", ", ", ",", ": ", ":", "6.8.0", "x86_64", "installed", " ", "\t", "\r"]),
}


def texts(name, real, pieces, count=3000):
    rng = random.Random(name)
    yield ""
    yield from real + pieces
    for _count in range(count):
        yield "".join(rng.choice(pieces) for _piece in range(rng.randint(1, 8)))
    for text in real:  # near misses: a real text with a piece put in, or a character taken out or changed
        for _near_miss in range(300):
            at = rng.randint(0, len(text))
            how = rng.randrange(3)
            if how == 0:
                yield text[:at] + rng.choice(pieces) + text[at:]
            elif how == 1:
                yield text[:at] + text[at + 1:]
            else:
                yield text[:at] + rng.choice(pieces)[:1] + text[at + 1:]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_parser_answers_what_its_pattern_answered(name):
    parser, reference, real, pieces = CASES[name]
    differ = [(text, parser(text), reference(text)) for text in texts(name, real, pieces)
              if parser(text) != reference(text)]
    assert differ[:5] == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_real_texts_are_read(name):
    parser, _reference, real, _pieces = CASES[name]
    assert any(parser(text) is not None for text in real)
