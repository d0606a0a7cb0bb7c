# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Compiled bytecode of a module's payload, kept on the host between runs: the entry point and
what reading an entry needs. PRIVATE to the collection; the finder and the rest are in
``bytecode_finder`` (how it works, where entries live, who may write them: see there).

This file is the one source every run compiles (a module imports it before any finder exists),
so it holds only what :func:`enable` needs to read the finder's own code back from the cache:
the entry's key, the directory, the trust checks. The finder, imported from the zip on a run
that finds no entry for it, stores one for the next run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import stat
import sys
import types

ENV = "GPUDIRECT_BYTECODE_CACHE"
DEFAULT_DIR = os.path.join("~", ".ansible", "pycache", "gpudirect.storage")
FINDER = __name__.rpartition(".")[0] + ".bytecode_finder"


def cache_key(name, source):
    """The entry's file name: the interpreter's bytecode magic, the module's name, its source (the
    source's bytes, or what :func:`zip_record` says of them)."""
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    digest.update(name.encode("utf-8") + b"\0")
    digest.update(source)
    return digest.hexdigest()


def zip_record(importer, path):
    """``b"zip:<size>:<crc32>"`` of ``path`` (inside the archive) from the zip directory that
    ``importer`` already read, or None where that is not available (zipimport's private table:
    ``_files`` up to Python 3.12, ``_get_files()`` from 3.13)."""
    try:
        files = importer._get_files() if hasattr(importer, "_get_files") else importer._files
        entry = files[path]
        return b"zip:%d:%d" % (entry[3], entry[7])  # (path, compress, data_size, file_size, offset, time, date, crc)
    except Exception:  # another zipimport: the key is computed from the source
        return None


def cache_dir(environ, expanduser=os.path.expanduser):
    """The directory from the environment (unset, on/true/yes/1: the default; an absolute path or
    ``~/...``: that one), or None when the cache is off (off/false/no/0, or a relative path, which
    would land wherever the module happens to run)."""
    value = environ.get(ENV, "").strip()
    if value.lower() in ("", "on", "true", "yes", "1"):
        return expanduser(DEFAULT_DIR)
    path = expanduser(value)
    return path if os.path.isabs(path) else None


def owned_privately(st, uid):
    """A directory or file the cache may trust: the user's own, writable by nobody else."""
    return st.st_uid == uid and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def read_code(path, uid):
    """The code object cached at path, or None (missing, not trusted, unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            if not owned_privately(os.fstat(f.fileno()), uid):
                return None
            code = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, types.CodeType) else None


def trusted_dir(path, uid):
    """Whether ``path`` is a directory the cache may read from (see :func:`owned_privately`)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and owned_privately(st, uid)


def cached_finder(loader, environ, uid, modules):
    """The finder module executed from its cache entry (its ``__cached__`` names the entry), or
    None where there is none to trust: not a zip payload, coverage, the cache off, no entry."""
    archive = getattr(loader, "archive", None)
    directory = cache_dir(environ)
    if not archive or "coverage" in modules or directory is None or not trusted_dir(directory, uid):
        return None
    inner = loader.prefix + FINDER.rpartition(".")[2] + ".py"
    record = zip_record(loader, inner)
    entry = os.path.join(directory, cache_key(FINDER, record)) if record is not None else None
    code = read_code(entry, uid) if entry else None
    if code is None:
        return None
    module = types.ModuleType(FINDER)
    module.__spec__ = importlib.util.spec_from_loader(FINDER, loader, origin=os.path.join(archive, inner))
    module.__spec__.has_location = True
    module.__spec__.cached = entry
    module.__file__, module.__cached__, module.__loader__ = module.__spec__.origin, entry, loader
    module.__package__ = FINDER.rpartition(".")[0]
    sys.modules[FINDER] = module
    try:
        exec(code, module.__dict__)
    except Exception:  # a broken entry: the finder from the zip, as on a first run
        del sys.modules[FINDER]
        return None
    return module


def enable(loader, environ=None, uid=None, modules=None, write=None):
    """Install the bytecode cache's finder for the payload ``loader`` (a module_util's
    ``__loader__``) belongs to; True when installed (``bytecode_finder.install``)."""
    environ = os.environ if environ is None else environ
    uid = os.geteuid() if uid is None else uid
    modules = sys.modules if modules is None else modules
    finder = sys.modules.get(FINDER) or cached_finder(loader, environ, uid, modules)
    if finder is None:
        from ansible_collections.gpudirect.storage.plugins.module_utils._common import bytecode_finder as finder
    return finder.install(loader, environ, uid, modules, write)
