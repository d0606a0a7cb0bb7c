# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""libcufile discovery says what it found and why it did not use it: a libcufile.so.1.13.1
without the libcufile.so.0 link that the loader asks for is named, with the variable that
would use it (gds_verify_cufile_lib)."""

from __future__ import annotations

import os

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import verdict as v
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.collectors import Collector
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths

CUDA_LIB = "/usr/local/cuda-12.8/targets/x86_64-linux/lib"


def host_with(tmp_path, *names):
    root = tmp_path / "host"
    lib = root / CUDA_LIB.lstrip("/")
    lib.mkdir(parents=True)
    for name in names:
        (lib / name).write_bytes(b"\x7fELF")
    return Collector(HostPaths(root=str(root), proc_root=str(tmp_path / "proc")), runner=None, environ={}), str(lib)


def unavailable_reason(lib_facts):
    facts = {"nvidia": {"driver_loaded": True}, "probe": {"enabled": True, "ran": False}, "libcufile": lib_facts}
    return v.verdict(facts)["reason"]


def test_a_versioned_file_without_the_soname_link_is_named_with_why(tmp_path):
    collector, lib = host_with(tmp_path, "libcufile.so.1.13.1")
    found = collector.libraries()["libcufile"]
    assert found["path"] is None
    assert found["skipped"] == [{"path": os.path.join(lib, "libcufile.so.1.13.1"),
                                 "why": "no libcufile.so.0 or libcufile.so link to it"}]
    reason = unavailable_reason(found)
    assert "libcufile not found" in reason
    assert "libcufile.so.1.13.1" in reason and "no libcufile.so.0 or libcufile.so link to it" in reason
    assert "set gds_verify_cufile_lib: %s" % os.path.join(lib, "libcufile.so.1.13.1") in reason


def test_an_override_that_does_not_exist_says_so_instead_of_a_search_list(tmp_path):
    collector, dummy = host_with(tmp_path, "libcufile.so.0")
    found = collector.libraries(cufile_lib="/opt/nowhere/libcufile.so.0")["libcufile"]
    assert found["path"] is None
    reason = unavailable_reason(found)
    assert reason.startswith("libcufile not found: gds_verify_cufile_lib is /opt/nowhere/libcufile.so.0, which does not "
                             "exist")


def test_the_link_is_used_and_nothing_is_skipped(tmp_path):
    collector, lib = host_with(tmp_path, "libcufile.so.1.13.1")
    os.symlink("libcufile.so.1.13.1", os.path.join(lib, "libcufile.so.0"))
    found = collector.libraries()["libcufile"]
    assert found["path"] == os.path.join(lib, "libcufile.so.0") and found["skipped"] == []


def test_ld_so_conf_includes_and_versioned_cuda_dirs_are_searched(tmp_path):
    root = tmp_path / "host"
    (root / "etc" / "ld.so.conf.d").mkdir(parents=True)
    (root / "etc" / "ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n/opt/direct/lib # a comment\n")
    (root / "etc" / "ld.so.conf.d" / "b-nvidia.conf").write_text("/opt/nvidia/lib\n")
    (root / "etc" / "ld.so.conf.d" / "a-local.conf").write_text("include more/*.conf\n/opt/local/lib\n")
    (root / "etc" / "ld.so.conf.d" / ".hidden.conf").write_text("/opt/hidden/lib\n")
    (root / "etc" / "ld.so.conf.d" / "notes.txt").write_text("/opt/notes/lib\n")
    (root / "etc" / "more").mkdir()
    (root / "etc" / "more" / "x.conf").write_text("/opt/more/lib\n")
    for version in ("12.8", "13.0"):
        (root / "usr" / "local" / ("cuda-" + version)).mkdir(parents=True)
    collector = Collector(HostPaths(root=str(root), proc_root=str(tmp_path / "proc")), runner=None, environ={})
    dirs = [d[len(str(root)):] for d in collector.library_dirs()]
    assert dirs[:6] == ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
                        "/usr/local/cuda-13.0/lib64", "/usr/local/cuda-13.0/targets/x86_64-linux/lib",
                        "/usr/local/cuda-12.8/lib64", "/usr/local/cuda-12.8/targets/x86_64-linux/lib"]
    assert dirs[6:10] == ["/opt/more/lib", "/opt/local/lib", "/opt/nvidia/lib", "/opt/direct/lib"]
    assert "/opt/hidden/lib" not in dirs and "/opt/notes/lib" not in dirs
