# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Compiled bytecode of a module's payload, kept on the host between runs: the finder. PRIVATE to
the collection. Modules enable it through ``bytecode_cache.enable``, which reads this file's own
code from the cache.

Ansible ships a module as a zip (AnsiballZ) of Python *sources* and Python compiles every source
it imports again on every run: for gds_plan that is about 0.1 s of host CPU per host and run, as
much as the rest of a converged plan. :func:`install` puts a finder in front of the zip for this
collection's module_utils and Ansible's: a module's code object is read from
``~/.ansible/pycache/gpudirect.storage/<sha256 of interpreter magic, name and source>`` when that
file is there, else compiled from the zip's source and written there (atomically, mode 0600) for
the next run - what ``__pycache__`` does for a module on disk. The source stands in the key as the
zip's own record of it (its CRC-32 and size, from the zip's directory, so a warm run does not
read or inflate the source at all; the source itself where that record cannot be read): a changed
source has another key, so a stale entry is not used (Python's ``__pycache__`` trusts a source's
modification time and size). The oldest entries beyond :data:`MAX_ENTRIES` are removed.

The directory must belong to the user the module runs as and be writable by nobody else, and a
cache file must belong to that user, or the cache is not read (as with ``__pycache__``, whoever can
write it can run code as that user). ``GPUDIRECT_BYTECODE_CACHE=off`` in the task's environment
turns it off (an absolute path: the directory to use); so does coverage, whose reports need the
code's real file names. With ``PYTHONDONTWRITEBYTECODE`` (``python -B``) entries are read, not
written, as Python does. Any error reading or writing falls back to compiling, as without it.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import sys
import tempfile
import zipimport

from ansible_collections.gpudirect.storage.plugins.module_utils._common.bytecode_cache import (
    cache_dir, cache_key, read_code, trusted_dir, zip_record)

MAX_ENTRIES = 512
# What is cached: this collection's module_utils and Ansible's (the modules themselves are run by
# runpy, outside any finder). Others (a user's collections bundled in) compile as usual.
PREFIXES = ("ansible_collections.gpudirect.storage.", "ansible.module_utils.")


def prepare_dir(path, uid):
    """Create the cache directory (0700) when missing; True when it is safe to use."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError:
        return False
    return trusted_dir(path, uid)


def write_code(directory, key, code):
    """Write the entry atomically (temporary file, then rename); errors are ignored."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(marshal.dumps(code))
        os.replace(tmp, os.path.join(directory, key))
    except (OSError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def prune(directory, keep=MAX_ENTRIES):
    """Remove the oldest entries beyond ``keep`` (by modification time); errors are ignored."""
    try:
        with os.scandir(directory) as entries:
            found = [(e.stat().st_mtime, e.path) for e in entries if not e.name.startswith(".")]
    except OSError:
        return
    for _mtime, path in sorted(found)[:max(0, len(found) - keep)]:
        try:
            os.unlink(path)
        except OSError:
            pass


def compile_entry(source, filename, directory, key, write):
    """``source`` compiled (``filename``: its name inside the zip, the same on every run), and
    with ``write`` stored as entry ``key`` of ``directory`` (the oldest beyond MAX_ENTRIES go)."""
    code = compile(source, filename, "exec", dont_inherit=True)
    if write:
        write_code(directory, key, code)
        prune(directory)
    return code


class CachedLoader(object):
    """Loads the modules of one directory of the zip (one zip importer): the cached code object,
    or the zip's source compiled."""

    def __init__(self, importer, archive, directory, uid, write):
        self.importer = importer
        self.archive = archive
        self.directory = directory
        self.uid = uid
        self.write = write

    def create_module(self, spec):
        return None  # the default module object

    def exec_module(self, module):
        spec = module.__spec__
        key, source = spec.loader_state  # from find_spec; the source only when it had to read it
        code = read_code(os.path.join(self.directory, key), self.uid)
        if code is None:
            source = source if source is not None else self.importer.get_data(spec.origin)
            code = compile_entry(source, os.path.relpath(spec.origin, self.archive), self.directory, key, self.write)
        exec(code, module.__dict__)

    # what tracebacks (linecache) and resource readers ask a loader for
    def get_source(self, fullname):
        return self.importer.get_source(fullname)

    def get_data(self, path):
        return self.importer.get_data(path)

    def is_package(self, fullname):
        return self.importer.is_package(fullname)


class CachedFinder(object):
    """A meta path finder for the submodules of PREFIXES' packages inside one zip archive (a
    zip importer answers for one directory of the zip: one loader per package directory)."""

    def __init__(self, archive, directory, uid, write=True):
        self.archive = archive
        self.directory = directory
        self.uid = uid
        self.write = write
        self.loaders = {}

    def loader(self, entry):
        if entry not in self.loaders:
            self.loaders[entry] = CachedLoader(zipimport.zipimporter(entry), self.archive, self.directory, self.uid,
                                               self.write)
        return self.loaders[entry]

    def find_spec(self, fullname, path=None, target=None):
        if not path or not fullname.startswith(PREFIXES):
            return None  # top-level packages: tiny, left to zipimport
        entry = path[0]
        if not entry.startswith(self.archive + os.sep):
            return None
        # the source's path in the zip, named here: zipimporter.get_filename compiles the module
        # to answer (CPython 3.11's zipimport does), which is the very cost this finder saves
        last = fullname.rpartition(".")[2]
        try:
            loader = self.loader(entry)
            is_package = loader.importer.is_package(fullname)
            origin = os.path.join(entry, last, "__init__.py") if is_package else os.path.join(entry, last + ".py")
            record = zip_record(loader.importer, origin[len(self.archive) + 1:])
            source = loader.importer.get_data(origin) if record is None else None
        except Exception:  # ZipImportError, OSError: not in this zip as a source; the usual finders decide
            return None
        spec = importlib.util.spec_from_loader(fullname, loader, origin=origin, is_package=is_package)
        spec.has_location = True  # __file__ as zipimport sets it
        spec.loader_state = (cache_key(fullname, record if record is not None else source), source)
        if is_package:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec


def remember_self(archive, directory):
    """Write this module's own entry when it was imported from the zip ``archive`` (the
    bootstrap, bytecode_cache, reads it on the next run); nothing when its code came from
    ``directory`` already (its ``__cached__`` is the entry there) or from elsewhere."""
    mine = globals().get("__file__") or ""
    if not mine.startswith(os.path.join(archive, "")) or (globals().get("__cached__") or "").startswith(
            os.path.join(directory, "")):
        return
    importer, inner = globals().get("__loader__"), mine[len(archive) + 1:]
    try:
        source = importer.get_data(mine)
        record = zip_record(importer, inner)
        compile_entry(source, inner, directory, cache_key(__name__, record if record is not None else source), True)
    except Exception:  # pylint: disable=broad-except  # whatever it is: compiled again next run
        pass


def install(loader, environ, uid, modules, write=None):
    """Install the finder when ``loader`` (a module_util's ``__loader__``) is AnsiballZ's zip
    importer and the cache directory is usable; True when installed. A no-op elsewhere (tests,
    an exploded module, coverage) and when already installed. Called by bytecode_cache.enable."""
    archive = getattr(loader, "archive", None)
    if not archive or not hasattr(loader, "get_filename") or "coverage" in modules:
        return False
    if any(isinstance(f, CachedFinder) for f in sys.meta_path):
        return False
    directory = cache_dir(environ)
    if directory is None or not prepare_dir(directory, uid):
        return False
    write = not sys.flags.dont_write_bytecode if write is None else write
    if write:
        remember_self(archive, directory)
    sys.meta_path.insert(0, CachedFinder(archive, directory, uid, write))
    return True
