# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The cuFile probe child's protocol, ctypes layouts (libcuda, libcufile) and the probe file's
private directory. PRIVATE.

Part of the probe PROGRAM: ``_gds/probe_child.probe_source`` concatenates probe_nvml,
probe_io, probe_lib, probe_tune and probe into the one source the child runs (``python -c``),
dropping their ``from __future__`` and collection import lines. So: standard library only, no
relative imports, and names that do not clash with the other parts.
"""

from __future__ import annotations

import ctypes
import os
import stat

SENTINEL = "@@GDS_PROBE@@"
# the probe's private directory in a probe path: <prefix><module pid>.<random>, so a later run can
# tell a dead run's leftovers by the pid (probe_child.remove_leftovers)
PRIVATE_PREFIX = ".gds_facts_probe."
PROTOCOL = 1
BLOCK = 1 << 20
HEADER = 16
WARMUP = 1 << 20  # bytes of the untimed first write and read (see Probe.warm_up)


def emit(kind, payload):
    # The leading newline ends any line libcufile left unterminated on the same stdout.
    data = ("\n%s %s %s\n" % (SENTINEL, kind, payload)).encode("utf-8", "replace")
    while data:
        n = os.write(1, data)
        data = data[n:]


def unbuffer_c_stdout():
    """libcufile prints with C stdio; make stdout unbuffered so nothing is lost on abort()."""
    try:
        libc = ctypes.CDLL(None)
        stream = ctypes.c_void_p.in_dll(libc, "stdout")
        libc.setvbuf.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_size_t]
        libc.setvbuf(stream, None, 2, 0)  # _IONBF
        return libc
    except (OSError, ValueError, AttributeError):
        return None


def die_with_parent(parent):
    """Have the kernel SIGKILL this process when the module that started it dies
    (PR_SET_PDEATHSIG): no probe runs on after a SIGKILL of the module. ``parent``: the module's
    pid, to catch a module that died before the call."""
    try:
        prctl = ctypes.CDLL(None).prctl
        prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
        prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        return
    if parent and os.getppid() != parent:
        os._exit(1)


def private_dir(path, prefix):
    """(name, descriptor) of a new directory under ``path`` that only this user can use:
    mkdtemp, then opened without following a link and checked to be this user's own, so no
    other user can put anything where the probe's file is created."""
    import tempfile  # here: only a child that writes a probe file pays for importing it
    try:
        private = tempfile.mkdtemp(prefix=prefix, dir=path)
        dfd = os.open(private, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError as exc:
        raise StepError({"step": "open", "kind": "os", "errno": exc.errno, "strerror": exc.strerror, "file": path})
    st = os.fstat(dfd)
    if st.st_uid != os.geteuid() or stat.S_IMODE(st.st_mode) & 0o077:
        os.close(dfd)
        raise StepError({"step": "open", "kind": "os", "errno": 1, "file": private,
                         "strerror": "not the private directory the probe made (mode %04o, owner %d)" % (
                             stat.S_IMODE(st.st_mode), st.st_uid)})
    return private, dfd


def create_in(private, dfd, name):
    """A new file ``name`` in the private directory ``dfd``, opened O_RDWR|O_DIRECT: the one
    descriptor every step of the probe uses. O_CREAT|O_EXCL follows no link; no O_NOFOLLOW, which
    cuFileHandleRegister refuses (CU_FILE_INVALID_FILE_OPEN_FLAG)."""
    try:
        return os.open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR | getattr(os, "O_DIRECT", 0o40000), 0o600, dir_fd=dfd)
    except OSError as exc:
        raise StepError({"step": "open", "kind": "os", "errno": exc.errno, "strerror": exc.strerror,
                         "file": os.path.join(private, name)})


def remove_private(private, dfd, name):
    """Unlink ``name`` (already gone is fine) and remove the private directory; closes ``dfd``.
    What cannot be removed here the module removes (probe_child.remove_leftovers)."""
    try:
        try:
            os.unlink(name, dir_fd=dfd)
        except FileNotFoundError:
            pass
        os.rmdir(private)
        return {"removed": True}
    except OSError as exc:
        return {"removed": False, "remove_error": str(exc)}
    finally:
        os.close(dfd)


class StepError(Exception):
    """A probe step failed; ``info`` is the JSON-able description."""

    def __init__(self, info):
        super(StepError, self).__init__(info.get("step"))
        self.info = info


# ---------------------------------------------------------------------------------------------
# CUDA driver API + cuFile through ctypes

class _CUfileError(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


class _DescrHandle(ctypes.Union):
    _fields_ = [("fd", ctypes.c_int), ("handle", ctypes.c_void_p)]


class _CUfileDescr(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("handle", _DescrHandle), ("fs_ops", ctypes.c_void_p)]


class _NvfsProps(ctypes.Structure):
    _fields_ = [("major_version", ctypes.c_uint), ("minor_version", ctypes.c_uint),
                ("poll_thresh_size", ctypes.c_size_t), ("max_direct_io_size", ctypes.c_size_t),
                ("dstatusflags", ctypes.c_uint), ("dcontrolflags", ctypes.c_uint)]


class _DrvProps(ctypes.Structure):
    _fields_ = [("nvfs", _NvfsProps), ("fflags", ctypes.c_uint), ("max_device_cache_size", ctypes.c_uint),
                ("per_buffer_cache_size", ctypes.c_uint), ("max_device_pinned_mem_size", ctypes.c_uint),
                ("max_batch_io_size", ctypes.c_uint), ("max_batch_io_timeout_msecs", ctypes.c_uint)]


# CUFileBoolConfigParameter_t values read back after cuFileDriverOpen (the effective config:
# cufile.json overlaid with the CUFILE_* environment).
BOOL_PARAMS = {"allow_compat_mode": 1, "force_compat_mode": 2, "parallel_io": 4, "use_pci_p2pdma": 7}
CU_FILE_HANDLE_TYPE_OPAQUE_FD = 1
