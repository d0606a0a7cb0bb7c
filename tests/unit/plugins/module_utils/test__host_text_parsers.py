# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The small parsers a plan or a facts run uses on every host: real texts, and the near misses
next to them (a part missing, a part of another shape) that must not be read as a version."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostparse
from ansible_collections.gpudirect.storage.plugins.module_utils._gds import parse
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import kmod, nvfs

H100_NVRM = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (nixbld@)  \n"
             "GCC version:  gcc version 14.3.0 (GCC) ")  # the H100 host's, 2026-11-27

CASES = [
    (nvfs.driver_from_make_log, "NVIDIA_SRC_DIR=/usr/src/nvidia-580.95.05/kernel", "580.95.05"),
    (nvfs.driver_from_make_log, "make NVIDIA_SRC_DIR=/usr/src/nvidia-open-575.51.03 x", "575.51.03"),
    (nvfs.driver_from_make_log, "NVIDIA_SRC_DIR=/a/nvidia-1.2/nvidia-x", "1.2"),  # the last /nvidia-N.N of the path
    (nvfs.driver_from_make_log, "NVIDIA_SRC_DIR=/a/nvidia-x NVIDIA_SRC_DIR=/b/nvidia-9.8.7.6", "9.8.7"),
    (nvfs.driver_from_make_log, "NVIDIA_SRC_DIR=/usr/src/nvidia-580/kernel", None),
    (nvfs.driver_from_make_log, "NVIDIA_SRC_DIR= /usr/src/nvidia-580.95.05", None),
    (nvfs.driver_from_make_log, "/usr/src/nvidia-580.95.05", None),
    (nvfs.driver_from_make_log, "NVIDIA_SRC_DIR=/usr/src/nvidia-closed-580.95.05", None),
    (nvfs.driver_from_make_log, None, None),
    (nvfs.nvfs_series, "2.26.6", (2, 26)),
    (nvfs.nvfs_series, "2.26", (2, 26)),
    (nvfs.nvfs_series, "2", None),
    (nvfs.nvfs_series, "x2.3", None),
    (nvfs.nvfs_series, "2.x", None),
    (nvfs.nvfs_series, None, None),
    (nvfs.cuda_of_package, "libcufile-12-8", "12.8"),
    (nvfs.cuda_of_package, "libcufile-dev-13-0", "13.0"),
    (nvfs.cuda_of_package, "gds-tools-13-0", "13.0"),
    (nvfs.cuda_of_package, "nvidia-gds-12-9", "12.9"),
    (nvfs.cuda_of_package, "libcufile-12-8-1", None),
    (nvfs.cuda_of_package, "libcufile-12", None),
    (nvfs.cuda_of_package, "nvidia-fs-12-8", None),
    (nvfs.cuda_of_package, "libcufile12-8", None),
    (parse.parse_nvfs_version, "version: 2.26", "2.26"),
    (parse.parse_nvfs_version, "version:2.26.6\n", "2.26.6"),
    (parse.parse_nvfs_version, "version: .1 version: 3", "3"),
    (parse.parse_nvfs_version, "version:", None),
    (parse.parse_nvfs_version, None, None),
    (parse.soname_version, "/usr/lib/libcufile.so.1.15.1", "1.15.1"),
    (parse.soname_version, "a.so.1.so.1.2", "1.2"),
    (parse.soname_version, "libcufile.so.0", None),
    (parse.soname_version, "libcufile.so", None),
    (parse.soname_version, "libcufile.so.1.15.1.bak", None),
    (parse.soname_version, None, None),
    (parse.cuda_dir_version, "/usr/local/cuda-13.0", (13, 0)),
    (parse.cuda_dir_version, "/opt/cuda-x/cuda-12.8", (12, 8)),
    (parse.cuda_dir_version, "/usr/local/cuda-12", None),
    (parse.cuda_dir_version, "/usr/local/cuda", None),
    (parse.cuda_dir_version, None, None),
    (hostparse.parse_ofed_info, "OFED-5.8", {"distribution": "OFED", "version": "5.8", "raw": "OFED-5.8"}),
    (hostparse.parse_ofed_info, "  OFED-internal-24.01-0.3.3  \n",
     {"distribution": "OFED-internal", "version": "24.01-0.3.3", "raw": "OFED-internal-24.01-0.3.3"}),
    (hostparse.parse_ofed_info, "OFED-internal-x", None),
    (hostparse.parse_ofed_info, "MLNX_OFED_LINUX-x", None),
    (hostparse.parse_ofed_info, "OFED-internal-25.10 1.7.1", None),
    (hostparse.parse_driver_version, H100_NVRM, {"version": "580.159.04", "open": True, "source": "proc"}),
    (hostparse.parse_driver_version, "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 2023",
     {"version": "535.104.05", "open": False, "source": "proc"}),
    (hostparse.parse_driver_version, "NVRM version: NVIDIA UNIX Kernel Module for aarch64  570.86\nGCC version: 12",
     {"version": "570.86", "open": False, "source": "proc"}),
    (hostparse.parse_driver_version, "GCC version: 12\nNVRM version: NVIDIA UNIX x86_64 Kernel Module 535.104.05",
     {"version": "535.104.05", "open": False, "source": "proc"}),
    (hostparse.parse_driver_version, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580", None),
    (hostparse.parse_driver_version, " NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05", None),
    (hostparse.parse_driver_version, "NVRM version: NVIDIA UNIX x86_64 Kernel Module535.104.05", None),
    (hostparse.parse_driver_version, None, None),
]


@pytest.mark.parametrize("parser, text, expected", CASES,
                         ids=["%s:%r" % (case[0].__name__, case[1]) for case in CASES])
def test_the_parser_reads_the_real_text_and_refuses_the_near_miss(parser, text, expected):
    assert parser(text) == expected


@pytest.mark.parametrize("line, fields", [
    ("nvidia-fs/2.26.6, 6.8.0-45-generic, x86_64: installed",
     ("nvidia-fs", "2.26.6", "6.8.0-45-generic", "x86_64", "installed", "")),
    ("nvidia-fs/2.26.6: added", ("nvidia-fs", "2.26.6", None, None, "added", "")),
    ("nvidia-fs/2.26.6, 6.8.0: built (WARNING! Diff between built and installed module!)",
     ("nvidia-fs", "2.26.6", "6.8.0", None, "built", "WARNING! Diff between built and installed module!")),
    ("nvidia-fs, 2.22.3, 5.15.0-91-generic, x86_64: installed",  # DKMS 2
     ("nvidia-fs", "2.22.3", "5.15.0-91-generic", "x86_64", "installed", "")),
    ("a/b, c, d, e: x", None),
    ("a/b,c: x", None),
    ("nvidia-fs/2.26.6 installed", None),
])
def test_a_dkms_status_line(line, fields):
    keys = ("module", "version", "kernel", "arch", "state", "note")
    assert kmod.parse_dkms_status(line) == ([dict(zip(keys, fields))] if fields else [])
