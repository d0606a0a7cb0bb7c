# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Names for the errors a cuFile probe reports: cufile.h CUfileOpError, CUDA driver CUresult,
errno, the config-refused codes of each libcufile release - so a verdict never says just
"5027". Pure; used by probe_verdict.py. PRIVATE to the collection."""

from __future__ import annotations

import errno as _errno
import os

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile.releases import config_error_code, release_of

# CUfileOpError (cufile.h, GDS 1.15): the codes cuFile* calls return in CUfileError_t.err, and
# (negated, or in errno after a -1) from cuFileRead/cuFileWrite.
CUFILE_ERRORS = {
    0: "CU_FILE_SUCCESS",
    5001: "CU_FILE_DRIVER_NOT_INITIALIZED", 5002: "CU_FILE_DRIVER_INVALID_PROPS",
    5003: "CU_FILE_DRIVER_UNSUPPORTED_LIMIT", 5004: "CU_FILE_DRIVER_VERSION_MISMATCH",
    5005: "CU_FILE_DRIVER_VERSION_READ_ERROR", 5006: "CU_FILE_DRIVER_CLOSING",
    5007: "CU_FILE_PLATFORM_NOT_SUPPORTED", 5008: "CU_FILE_IO_NOT_SUPPORTED",
    5009: "CU_FILE_DEVICE_NOT_SUPPORTED", 5010: "CU_FILE_NVFS_DRIVER_ERROR",
    5011: "CU_FILE_CUDA_DRIVER_ERROR", 5012: "CU_FILE_CUDA_POINTER_INVALID",
    5013: "CU_FILE_CUDA_MEMORY_TYPE_INVALID", 5014: "CU_FILE_CUDA_POINTER_RANGE_ERROR",
    5015: "CU_FILE_CUDA_CONTEXT_MISMATCH", 5016: "CU_FILE_INVALID_MAPPING_SIZE",
    5017: "CU_FILE_INVALID_MAPPING_RANGE", 5018: "CU_FILE_INVALID_FILE_TYPE",
    5019: "CU_FILE_INVALID_FILE_OPEN_FLAG", 5020: "CU_FILE_DIO_NOT_SET",
    5022: "CU_FILE_INVALID_VALUE", 5023: "CU_FILE_MEMORY_ALREADY_REGISTERED",
    5024: "CU_FILE_MEMORY_NOT_REGISTERED", 5025: "CU_FILE_PERMISSION_DENIED",
    5026: "CU_FILE_DRIVER_ALREADY_OPEN", 5027: "CU_FILE_HANDLE_NOT_REGISTERED",
    5028: "CU_FILE_HANDLE_ALREADY_REGISTERED", 5029: "CU_FILE_DEVICE_NOT_FOUND",
    5030: "CU_FILE_INTERNAL_ERROR", 5031: "CU_FILE_GETNEWFD_FAILED",
    5033: "CU_FILE_NVFS_SETUP_ERROR", 5034: "CU_FILE_IO_DISABLED",
    5035: "CU_FILE_BATCH_SUBMIT_FAILED", 5036: "CU_FILE_GPU_MEMORY_PINNING_FAILED",
    5037: "CU_FILE_BATCH_FULL", 5038: "CU_FILE_ASYNC_NOT_SUPPORTED", 5039: "CU_FILE_IO_MAX_ERROR",
}

# CUresult names for when the child could not ask cuGetErrorName (the common ones).
CUDA_ERRORS = {
    1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY", 3: "CUDA_ERROR_NOT_INITIALIZED",
    4: "CUDA_ERROR_DEINITIALIZED", 34: "CUDA_ERROR_STUB_LIBRARY", 35: "CUDA_ERROR_INSUFFICIENT_DRIVER",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE", 100: "CUDA_ERROR_NO_DEVICE", 101: "CUDA_ERROR_INVALID_DEVICE",
    201: "CUDA_ERROR_INVALID_CONTEXT", 304: "CUDA_ERROR_OPERATING_SYSTEM", 999: "CUDA_ERROR_UNKNOWN",
    802: "CUDA_ERROR_SYSTEM_NOT_READY", 803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
    804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
}
NO_GPU_CUDA_ERRORS = (100, 101)
HINTS = {
    5001: "no nvidia_fs and compat mode not allowed: set properties.allow_compat_mode to true, or load nvidia_fs",
    5027: "libcufile could not classify the file's block device (see the cufile.log lines)",
    5030: "libcufile internal error (see the cufile.log lines)",
}


def cufile_error_name(code):
    """A name for a cuFile error code (positive, or negated as cuFileRead/Write return it)."""
    if code is None:
        return "unknown error"
    if abs(code) in CUFILE_ERRORS and abs(code) >= 5000:
        return "%s (%d)" % (CUFILE_ERRORS[abs(code)], abs(code))
    if code < 0 and -code in _errno.errorcode:
        return "%d %s (%s)" % (code, _errno.errorcode[-code], os.strerror(-code))
    if code in CUFILE_ERRORS:
        return "%s (%d)" % (CUFILE_ERRORS[code], code)
    return "cuFile error %d (not in cufile.h 1.15)" % code


def cuda_error_name(code, name=None):
    return "%s (%d)" % (name or CUDA_ERRORS.get(code, "CUresult"), code)


def config_error_hint(code, release=None):
    """The hint for a cuFileDriverOpen code that means "config refused" in ``release`` (-22 up to
    1.18, 5002 from 1.19, as measured); None when the code is not that release's config error."""
    known = release_of(release)
    if known and code == config_error_code(known):
        return "libcufile %s rejected its configuration (see the lines it printed; gds_facts' cufile findings " \
               "name the key)" % known
    if not known and code in (-22, 5002):
        return ("libcufile rejected its configuration (-22 in libcufile 1.13-1.18, 5002 from 1.19; see the lines "
                "it printed)")
    return None


def describe_error(err, release=None, hint=True):
    """One readable sentence for an error dict reported by the probe child; ``hint=False`` leaves
    out the generic hint of the error code (the storage class already says why); ``release`` (the
    host's libcufile, e.g. "1.20") picks which code means a refused config."""
    if not err:
        return None
    step = err.get("step") or "probe"
    kind = err.get("kind")
    if kind == "cufile":
        text = "%s failed: %s" % (step, cufile_error_name(err.get("err")))
        if err.get("cu_err"):
            text += ", CUDA %s" % cuda_error_name(err["cu_err"])
        hint = (config_error_hint(err.get("err"), release) or HINTS.get(err.get("err"))) if hint else None
        return text + (" - " + hint if hint else "")
    if kind == "cuda":
        return "%s failed: %s" % (step, cuda_error_name(err.get("code"), err.get("name")))
    if kind == "io":
        ret = err.get("ret")
        where = "at offset %s (%s bytes)" % (err.get("offset"), err.get("size"))
        if ret == -1 and err.get("errno"):
            code = err["errno"]
            why = cufile_error_name(code) if code >= 5000 else "%s (%s)" % (_errno.errorcode.get(code, code), os.strerror(code))
        elif isinstance(ret, int) and ret < 0:
            why = cufile_error_name(ret)
        else:
            why = "short transfer: %s bytes" % ret
        return "%s failed %s: %s" % (step, where, why)
    if kind == "os":
        code = err.get("errno")
        text = "open(O_CREAT|O_DIRECT) of %s failed: %s (%s)" % (
            err.get("file"), _errno.errorcode.get(code, code), err.get("strerror"))
        if code == _errno.EINVAL:
            text += " - the file system refused O_DIRECT"
        return text
    if kind == "dlopen":
        return "%s failed: %s" % (step, err.get("message"))
    if kind == "verify":
        return "data read back differs at offset %s: expected %s, got %s (%s bytes matched before)" % (
            err.get("offset"), err.get("expected"), err.get("got"), err.get("verified_bytes"))
    return "%s failed: %s" % (step, err.get("message") or err)
