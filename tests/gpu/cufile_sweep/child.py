#!/usr/bin/env python
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One sweep case: load LIB with ctypes, cuFileGetVersion, cuFileDriverOpen, cuFileDriverClose.

Usage: child.py LIB   (run.py sets CUFILE_ENV_PATH_JSON and the working folder)
Prints marker lines '@@sweep {json}' on stdout between libcufile's own output: version, then the
cuFileDriverOpen status (err, cu_err). C stdout is made unbuffered first, so libcufile's
'error reading config ...' lines survive an abort() and stay in order with the markers.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys


class CUfileError(ctypes.Structure):
    _fields_ = [("err", ctypes.c_int), ("cu_err", ctypes.c_int)]


def marker(**fields):
    os.write(1, ("@@sweep %s\n" % json.dumps(fields, sort_keys=True)).encode())


def unbuffer_c_stdout():
    libc = ctypes.CDLL(None)
    stdout = ctypes.c_void_p.in_dll(libc, "stdout")
    libc.setvbuf(stdout, None, 2, 0)  # _IONBF


def main(lib_path):
    unbuffer_c_stdout()
    lib = ctypes.CDLL(lib_path)
    version = ctypes.c_int(0)
    lib.cuFileGetVersion.restype = CUfileError
    status = lib.cuFileGetVersion(ctypes.byref(version))
    marker(step="version", version=version.value, err=status.err)
    lib.cuFileDriverOpen.restype = CUfileError
    status = lib.cuFileDriverOpen()
    marker(step="open", err=status.err, cu_err=status.cu_err)
    if status.err == 0:
        lib.cuFileDriverClose.restype = CUfileError
        closed = lib.cuFileDriverClose()
        marker(step="close", err=closed.err)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
