# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The host-side bytecode cache of a module's payload (_common/bytecode_cache.py, the entry point,
and _common/bytecode_finder.py): its pure parts, imports from a real zip archive as AnsiballZ
ships them, and the entry point reading the finder's own code back."""

from __future__ import annotations

import builtins
import marshal
import os
import stat
import sys
import zipfile
import zipimport

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common import bytecode_cache as bc
from ansible_collections.gpudirect.storage.plugins.module_utils._common import bytecode_finder as bf

UID = os.geteuid()


# --------------------------------------------------------------------------- pure parts
def test_key_changes_with_name_and_source():
    key = bc.cache_key("a.b", b"x = 1\n")
    assert key == bc.cache_key("a.b", b"x = 1\n")
    assert key != bc.cache_key("a.c", b"x = 1\n")
    assert key != bc.cache_key("a.b", b"x = 2\n")
    assert len(key) == 64


@pytest.mark.parametrize("value", ["off", "OFF", "false", "no", "0", " off ", "on-purpose", "relative/dir"])
def test_cache_dir_off_or_relative(value):
    assert bc.cache_dir({bc.ENV: value}) is None


@pytest.mark.parametrize("environ", [{}, {bc.ENV: ""}, {bc.ENV: "on"}, {bc.ENV: "True"}, {bc.ENV: "yes"}, {bc.ENV: "1"}])
def test_cache_dir_default(environ):
    assert bc.cache_dir(environ, expanduser=lambda p: p.replace("~", "/home/u")) == \
        "/home/u/.ansible/pycache/gpudirect.storage"


def test_cache_dir_custom():
    assert bc.cache_dir({bc.ENV: "/var/cache/gds"}) == "/var/cache/gds"
    assert bc.cache_dir({bc.ENV: "~/c"}, expanduser=lambda p: p.replace("~", "/home/u")) == "/home/u/c"


class _St(object):
    def __init__(self, uid, mode):
        self.st_uid, self.st_mode = uid, mode


@pytest.mark.parametrize("uid,mode,trusted", [
    (UID, 0o40700, True), (UID, 0o40755, True), (UID + 1, 0o40700, False),
    (UID, 0o40770, False), (UID, 0o40777, False), (UID, 0o100602, False)])
def test_owned_privately(uid, mode, trusted):
    assert bc.owned_privately(_St(uid, mode), UID) is trusted


def test_prepare_dir_creates_it_private(tmp_path):
    path = str(tmp_path / "a" / "cache")
    assert bf.prepare_dir(path, UID)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700


def test_prepare_dir_refuses_shared_foreign_or_linked(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert not bf.prepare_dir(str(shared), UID)
    assert not bf.prepare_dir(str(tmp_path), UID + 1)
    os.symlink(str(tmp_path), str(tmp_path / "link"))
    assert not bf.prepare_dir(str(tmp_path / "link"), UID)
    (tmp_path / "file").write_text("")
    assert not bf.prepare_dir(str(tmp_path / "file"), UID)


def test_write_then_read(tmp_path):
    code = compile("y = 6 * 7\n", "m.py", "exec")
    bf.write_code(str(tmp_path), "k", code)
    path = str(tmp_path / "k")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    namespace = {}
    exec(bc.read_code(path, UID), namespace)
    assert namespace["y"] == 42
    assert [p.name for p in tmp_path.iterdir()] == ["k"]  # no temporary file left


def test_read_refuses_foreign_shared_corrupt_missing_and_links(tmp_path):
    bf.write_code(str(tmp_path), "k", compile("y = 1\n", "m.py", "exec"))
    path = str(tmp_path / "k")
    assert bc.read_code(path, UID + 1) is None
    os.chmod(path, 0o666)
    assert bc.read_code(path, UID) is None
    os.chmod(path, 0o600)
    os.symlink(path, str(tmp_path / "link"))
    assert bc.read_code(str(tmp_path / "link"), UID) is None
    (tmp_path / "bad").write_bytes(b"\xff\x00not marshal")
    os.chmod(str(tmp_path / "bad"), 0o600)
    assert bc.read_code(str(tmp_path / "bad"), UID) is None
    (tmp_path / "not-code").write_bytes(marshal.dumps({"a": 1}))  # valid marshal, not a code object
    os.chmod(str(tmp_path / "not-code"), 0o600)
    assert bc.read_code(str(tmp_path / "not-code"), UID) is None
    assert bc.read_code(str(tmp_path / "missing"), UID) is None


def test_prune_keeps_the_newest(tmp_path):
    for i in range(6):
        (tmp_path / ("e%d" % i)).write_text("")
        os.utime(str(tmp_path / ("e%d" % i)), (1000 + i, 1000 + i))
    (tmp_path / ".tmp-x").write_text("")  # a writer's temporary file is not an entry
    bf.prune(str(tmp_path), keep=4)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".tmp-x", "e2", "e3", "e4", "e5"]


# --------------------------------------------------------------------------- from a zip
PKG = "zzbccache"


def _zip(path, value):
    with zipfile.ZipFile(str(path), "w") as z:
        z.writestr(PKG + "/__init__.py", "")
        z.writestr(PKG + "/sub/__init__.py", "PACKAGE = True\n")
        z.writestr(PKG + "/sub/mod.py", "from . import helper\nVALUE = helper.twice(%d)\n" % value)
        z.writestr(PKG + "/sub/helper.py", "def twice(x):\n    return 2 * x\n")
    return str(path)


@pytest.fixture
def payload(tmp_path, monkeypatch):
    """Imports of PKG from a zip on sys.path with the finder enabled; the number of compiles."""
    monkeypatch.setattr(bf, "PREFIXES", (PKG + ".",))
    compiles = []

    def counting_compile(*args, **kwargs):
        compiles.append(args[1])
        return builtins.compile(*args, **kwargs)
    monkeypatch.setattr(bf, "compile", counting_compile, raising=False)
    cache = tmp_path / "cache"
    state = {"compiles": compiles, "cache": cache, "finders": []}

    def load(value, name="payload.zip", environ=None, write=True):
        for mod in [m for m in sys.modules if m == PKG or m.startswith(PKG + ".")]:
            del sys.modules[mod]
        archive = _zip(tmp_path / name, value)
        # each AnsiballZ run is a new process: nothing remembers an earlier zip at this path
        zipimport._zip_directory_cache.pop(archive, None)
        sys.path_importer_cache.pop(archive, None)
        sys.path.insert(0, archive)
        try:
            loader = zipimport.zipimporter(os.path.join(archive, PKG))
            env = {bc.ENV: str(cache)} if environ is None else environ
            state["enabled"] = bc.enable(loader, environ=env, modules={}, write=write)
            state["finders"] += [f for f in sys.meta_path if isinstance(f, bf.CachedFinder)]
            import importlib
            return importlib.import_module(PKG + ".sub.mod")
        finally:
            sys.path.remove(archive)
            sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, bf.CachedFinder)]
    state["load"] = load
    yield state
    for mod in [m for m in sys.modules if m == PKG or m.startswith(PKG + ".")]:
        del sys.modules[mod]


def test_first_run_compiles_and_caches_the_next_reads(payload):
    mod = payload["load"](21)
    assert payload["enabled"] and mod.VALUE == 42
    assert sorted(payload["compiles"]) == [os.path.join(PKG, "sub", n) for n in ("__init__.py", "helper.py", "mod.py")]
    entries = sorted(os.listdir(str(payload["cache"])))
    assert len(entries) == 3
    assert stat.S_IMODE(os.stat(str(payload["cache"])).st_mode) == 0o700
    # what zipimport would set: the file inside the zip, a package's search path
    assert mod.__file__.endswith(os.path.join("payload.zip", PKG, "sub", "mod.py"))
    assert sys.modules[PKG + ".sub"].__path__[0].endswith(os.path.join("payload.zip", PKG, "sub"))
    assert sys.modules[PKG + ".sub"].PACKAGE is True
    # the probe child's program is the text of modules (probe_child.module_source): from the zip
    assert mod.__loader__.get_source(mod.__name__) == "from . import helper\nVALUE = helper.twice(21)\n"

    del payload["compiles"][:]
    mod = payload["load"](21, name="other-temp-name.zip")  # AnsiballZ's zip has a new path each run
    assert mod.VALUE == 42
    assert payload["compiles"] == []
    assert sorted(os.listdir(str(payload["cache"]))) == entries


def test_a_changed_source_is_compiled_again(payload):
    payload["load"](21)
    del payload["compiles"][:]
    mod = payload["load"](50)
    assert mod.VALUE == 100
    assert payload["compiles"] == [os.path.join(PKG, "sub", "mod.py")]
    assert len(os.listdir(str(payload["cache"]))) == 4


def test_a_warm_run_reads_no_source_from_the_zip(payload, monkeypatch):
    # the key comes from the zip's directory (CRC-32 and size of each source): a cached module's
    # source is neither read nor inflated
    payload["load"](21)
    reads = []
    real = zipimport.zipimporter.get_data
    monkeypatch.setattr(zipimport.zipimporter, "get_data", lambda self, path: reads.append(path) or real(self, path))
    assert payload["load"](21, name="next-run.zip").VALUE == 42
    assert reads == [] and payload["compiles"][3:] == []


def test_a_same_size_edit_is_compiled_again(payload):
    payload["load"](21)
    del payload["compiles"][:]
    assert payload["load"](12).VALUE == 24  # same length, other bytes: another CRC-32
    assert payload["compiles"] == [os.path.join(PKG, "sub", "mod.py")]


def test_without_the_zip_directory_the_key_is_the_source(payload, monkeypatch):
    monkeypatch.setattr(bf, "zip_record", lambda importer, path: None)  # another zipimport
    assert payload["load"](21).VALUE == 42 and len(payload["compiles"]) == 3
    del payload["compiles"][:]
    assert payload["load"](21, name="next-run.zip").VALUE == 42 and payload["compiles"] == []
    assert payload["load"](12).VALUE == 24 and payload["compiles"] == [os.path.join(PKG, "sub", "mod.py")]


def test_dont_write_bytecode_reads_but_writes_nothing(payload):
    payload["load"](21, write=False)
    assert len(payload["compiles"]) == 3 and not os.listdir(str(payload["cache"]))
    payload["load"](21)
    del payload["compiles"][:]
    assert payload["load"](21, write=False).VALUE == 42
    assert payload["compiles"] == []


def test_off_and_unusable_directories_leave_imports_to_zipimport(payload, tmp_path):
    assert payload["load"](21, environ={bc.ENV: "off"}).VALUE == 42
    assert payload["enabled"] is False and payload["compiles"] == []
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert payload["load"](21, environ={bc.ENV: str(shared)}).VALUE == 42
    assert payload["enabled"] is False and os.listdir(str(shared)) == []


def test_enable_only_for_a_zip_payload_without_coverage(tmp_path):
    from ansible_collections.gpudirect.storage.plugins.module_utils._common import runner
    assert bc.enable(runner.__loader__, environ={bc.ENV: str(tmp_path)}, modules={}) is False  # a file on disk
    archive = _zip(tmp_path / "p.zip", 1)
    loader = zipimport.zipimporter(archive)
    assert bc.enable(loader, environ={bc.ENV: str(tmp_path / "c")}, modules={"coverage": object()}) is False
    assert not any(isinstance(f, bf.CachedFinder) for f in sys.meta_path)


# --------------------------------------------------------------------------- the finder's own entry
COMMON = "ansible_collections/gpudirect/storage/plugins/module_utils/_common/"
BOOT = '''
import json, sys
sys.path.insert(0, sys.argv[1])
from ansible_collections.gpudirect.storage.plugins.module_utils._common import bytecode_cache as bc
modules = {"coverage": None} if len(sys.argv) > 3 else None
installed = bc.enable(bc.__loader__, environ={bc.ENV: sys.argv[2]}, modules=modules)
finder = sys.modules.get(bc.FINDER)
print(json.dumps([installed, getattr(finder, "__cached__", None), getattr(finder, "__file__", None)]))
'''


def run_payload(tmp_path, name, cache, coverage=False):
    """A fresh interpreter importing bytecode_cache from a zip of the collection's two files (a
    new path each run, as AnsiballZ writes it): (installed, the finder's __cached__, __file__)."""
    import json
    import subprocess
    archive = str(tmp_path / name)
    with zipfile.ZipFile(archive, "w") as z:
        parts = COMMON.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            z.writestr("/".join(parts[:i]) + "/__init__.py", "")
        for module in (bc, bf):
            with open(module.__file__.replace(".pyc", ".py")) as f:
                z.writestr(COMMON + os.path.basename(module.__file__), f.read())
    argv = [sys.executable, "-I", "-c", BOOT, archive, cache] + (["coverage"] if coverage else [])
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_the_entry_point_reads_the_finder_from_the_cache_after_the_first_run(tmp_path):
    """Issue 21: bytecode_cache.py is the one source a module compiles on every run; it keeps only
    what reading the finder's own entry needs (the finder was 1.8 ms of compiling per run)."""
    cache = str(tmp_path / "cache")
    installed, cached, origin = run_payload(tmp_path, "run1.zip", cache)
    assert installed and not cached.startswith(cache) and origin.endswith("run1.zip/" + COMMON + "bytecode_finder.py")
    entries = os.listdir(cache)
    assert len(entries) == 1  # the finder's own, written by the finder imported from the zip
    installed, cached, origin = run_payload(tmp_path, "run2.zip", cache)
    assert installed and cached == os.path.join(cache, entries[0])
    assert origin.endswith("run2.zip/" + COMMON + "bytecode_finder.py")
    assert os.listdir(cache) == entries


def test_a_broken_or_foreign_finder_entry_is_not_used(tmp_path):
    cache = str(tmp_path / "cache")
    run_payload(tmp_path, "run1.zip", cache)
    entry = os.path.join(cache, os.listdir(cache)[0])
    with open(entry, "wb") as f:
        f.write(marshal.dumps(compile("raise RuntimeError('broken')", "x", "exec")))
    installed, cached, _origin = run_payload(tmp_path, "run2.zip", cache)
    assert installed and not cached.startswith(cache)  # from the zip, as on a first run
    os.chmod(entry, 0o666)  # writable by others: not trusted
    installed, cached, _origin = run_payload(tmp_path, "run3.zip", cache)
    assert installed and not cached.startswith(cache)


def test_under_coverage_the_finder_entry_is_not_read(tmp_path):
    cache = str(tmp_path / "cache")
    run_payload(tmp_path, "run1.zip", cache)
    installed, cached, _origin = run_payload(tmp_path, "run2.zip", cache, coverage=True)
    assert installed is False and not cached.startswith(cache)
