# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The cuFile probe: a self-contained program run as a CHILD process. PRIVATE to the collection.

gds_facts never loads libcuda, libnvidia-ml or libcufile in its own process: libcufile prints
config errors on stdout and aborts the process on some of them (an uncaught jsoncpp
exception). The module runs this file's source as ``python -c <source> <json args>`` (see
``_gds/probe_child.py`` for why ``-c``), with a private working directory and ``CUFILE_LOGFILE_PATH``
pointing into it, and reads:

* ``@@GDS_PROBE@@ step <name>`` lines: the step being entered (the last one names where a
  crash happened);
* one ``@@GDS_PROBE@@ result <json>`` line at the end.

Anything else on stdout is libcufile's. C stdio is switched to unbuffered first, so lines
printed right before an abort() are not lost in a pipe buffer.

The program: optional NVML inventory (GPU names, UUIDs, PCI bus ids, BAR1), then cuInit, the
primary context of one device, two device buffers, a known pattern (random 1 MiB blocks, each
stamped with a nonce and its index), cuFileDriverOpen, and for each probe path: an
O_CREAT|O_EXCL|O_DIRECT file, cuFileHandleRegister, cuFileWrite of buffer 1, cuFileRead into
buffer 2 (both timed, in parallel chunks when ``threads`` > 0), a byte-for-byte comparison
on the host, the same file read and written with O_DIRECT into host memory (the storage's own
speed), the throughput mode when asked, and ALWAYS deregister, close and remove. nvidia-fs stats
are read around the write and the read so the module can prove (or disprove) the nvidia-fs data
path.

The file is created in a private directory (probe_lib.private_dir), used through ONE descriptor
for every step and unlinked once cuFileHandleRegister has accepted it: after that a timeout, a
crash or a SIGKILL leaves no bytes on the disk (the module removes the rest: probe_child).
cuFileGetVersion is printed as its own line before cuFileDriverOpen, which aborts on some configs.

Standard library only, Python 3.8+. The program is split over five files along its seams -
probe_lib (protocol, ctypes layouts), probe_nvml (NVML inventory), probe_io (I/O plans, worker
pool, the storage's own O_DIRECT speed), probe_tune (timed transfers, throughput mode) and this
one (CUDA/cuFile setup, the per-path sequence, main) - and ``probe_child.probe_source`` joins
them into one source for ``python -c``, without their ``from __future__`` and collection import
lines: a part must use its siblings' names directly, never through a module name.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import struct
import sys
import time

from ansible_collections.gpudirect.storage.plugins.module_utils._gds.probe_nvml import _cstr, nvml_inventory
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.probe_io import gbps, host_direct, ratio
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.probe_lib import (
    BLOCK, BOOL_PARAMS, HEADER, PRIVATE_PREFIX, PROTOCOL, StepError, _CUfileDescr, _CUfileError, _DrvProps,
    create_in, die_with_parent, emit, private_dir, remove_private, unbuffer_c_stdout
)
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.probe_tune import Transfers


class Probe(Transfers):
    def __init__(self, args):
        self.args = args
        self.size = int(args.get("size") or 64 * BLOCK)
        self.chunk = max(BLOCK, int(args.get("chunk") or 16 * BLOCK))
        self.threads = int(args.get("threads", 0))
        self.throughput = bool(args.get("throughput"))
        self.tune_reps = max(1, int(args.get("tune_reps") or 3))
        self.device = int(args.get("device") or 0)
        self.stats_path = args.get("nvfs_stats")
        self.cuda = None
        self.cufile = None
        self.ctx = ctypes.c_void_p()
        self.ctx_release = None
        self.driver_close = None
        self.driver_open = False
        self.api_version = None
        self.dev = 0
        self.bufs = []
        self.registered = []
        self.pattern = None
        self.nonce = struct.unpack("<Q", os.urandom(8))[0]
        self.result = {"timing": {}, "paths": []}

    # -- helpers ---------------------------------------------------------------------------
    def step(self, name):
        emit("step", name)

    def cu(self, name, *argv):
        rc = getattr(self.cuda, name)(*argv)
        if rc:
            raise StepError({"step": name, "kind": "cuda", "code": rc, "name": self.cu_name(rc)})

    def cu_name(self, rc):
        try:
            ptr = ctypes.c_char_p()
            if self.cuda.cuGetErrorName(rc, ctypes.byref(ptr)) == 0 and ptr.value:
                return ptr.value.decode("ascii", "replace")
        except (AttributeError, ValueError):
            pass
        return None

    def cufile_call(self, name, *argv):
        err = getattr(self.cufile, name)(*argv)
        if err.err:
            raise StepError({"step": name, "kind": "cufile", "err": err.err, "cu_err": err.cu_err})
        return err

    def read_stats(self):
        if not self.stats_path:
            return None
        try:
            with open(self.stats_path, "r") as f:
                return f.read()
        except (IOError, OSError):
            return None

    # -- setup -----------------------------------------------------------------------------
    def load(self):
        c = ctypes
        self.step("load libcuda")
        try:
            self.cuda = c.CDLL(self.args.get("cuda_lib") or "libcuda.so.1")
        except OSError as exc:
            raise StepError({"step": "load libcuda", "kind": "dlopen", "message": str(exc)})
        cu = self.cuda
        for name, args in (
                ("cuInit", [c.c_uint]), ("cuDriverGetVersion", [c.POINTER(c.c_int)]),
                ("cuDeviceGetCount", [c.POINTER(c.c_int)]), ("cuDeviceGet", [c.POINTER(c.c_int), c.c_int]),
                ("cuDeviceGetName", [c.c_char_p, c.c_int, c.c_int]),
                ("cuDevicePrimaryCtxRetain", [c.POINTER(c.c_void_p), c.c_int]),
                ("cuCtxSetCurrent", [c.c_void_p]), ("cuCtxSynchronize", []),
                ("cuMemAlloc_v2", [c.POINTER(c.c_uint64), c.c_size_t]), ("cuMemFree_v2", [c.c_uint64]),
                ("cuMemcpyHtoD_v2", [c.c_uint64, c.c_void_p, c.c_size_t]),
                ("cuMemcpyDtoH_v2", [c.c_void_p, c.c_uint64, c.c_size_t]),
                ("cuMemsetD32_v2", [c.c_uint64, c.c_uint, c.c_size_t]),
                ("cuGetErrorName", [c.c_int, c.POINTER(c.c_char_p)])):
            fn = getattr(cu, name)
            fn.argtypes = args
            fn.restype = c.c_int
        release = getattr(cu, "cuDevicePrimaryCtxRelease_v2", None) or getattr(cu, "cuDevicePrimaryCtxRelease", None)
        if release is not None:
            release.argtypes = [c.c_int]
            release.restype = c.c_int
        self.ctx_release = release

        self.step("load libcufile")
        try:
            self.cufile = c.CDLL(self.args["cufile_lib"], use_errno=True)
        except OSError as exc:
            raise StepError({"step": "load libcufile", "kind": "dlopen", "message": str(exc)})
        cf = self.cufile
        err = _CUfileError
        for name, args, res in (
                ("cuFileDriverOpen", [], err),
                ("cuFileDriverGetProperties", [c.POINTER(_DrvProps)], err),
                ("cuFileHandleRegister", [c.POINTER(c.c_void_p), c.POINTER(_CUfileDescr)], err),
                ("cuFileHandleDeregister", [c.c_void_p], None),
                ("cuFileBufRegister", [c.c_void_p, c.c_size_t, c.c_int], err),
                ("cuFileBufDeregister", [c.c_void_p], err),
                ("cuFileWrite", [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int64, c.c_int64], c.c_ssize_t),
                ("cuFileRead", [c.c_void_p, c.c_void_p, c.c_size_t, c.c_int64, c.c_int64], c.c_ssize_t)):
            fn = getattr(cf, name)
            fn.argtypes = args
            fn.restype = res
        close = getattr(cf, "cuFileDriverClose_v2", None) or getattr(cf, "cuFileDriverClose", None)
        if close is not None:
            close.argtypes = []
            close.restype = err
        self.driver_close = close
        get_version = getattr(cf, "cuFileGetVersion", None)
        if get_version is not None:  # before cuFileDriverOpen: the line stays when that aborts
            self.step("cuFileGetVersion")
            get_version.argtypes = [c.POINTER(c.c_int)]
            get_version.restype = err
            ver = c.c_int(0)
            if get_version(c.byref(ver)).err == 0:
                self.api_version = ver.value
                emit("version", ver.value)

    def init_cuda(self):
        c = ctypes
        self.step("cuInit")
        t0 = time.time()
        self.cu("cuInit", 0)
        ver = c.c_int(0)
        self.cu("cuDriverGetVersion", c.byref(ver))
        count = c.c_int(0)
        self.cu("cuDeviceGetCount", c.byref(count))
        dev = c.c_int(0)
        self.step("cuDeviceGet")
        self.cu("cuDeviceGet", c.byref(dev), self.device)
        name = c.create_string_buffer(256)
        self.cu("cuDeviceGetName", name, 256, dev)
        self.dev = dev.value
        self.step("cuDevicePrimaryCtxRetain")
        self.cu("cuDevicePrimaryCtxRetain", c.byref(self.ctx), dev)
        self.cu("cuCtxSetCurrent", self.ctx)
        self.result["cuda"] = {"driver_version": ver.value, "device_count": count.value,
                               "device": {"ordinal": self.device, "name": _cstr(name)}}
        self.result["timing"]["cuda_init_s"] = round(time.time() - t0, 4)

    def alloc_and_fill(self):
        c = ctypes
        self.step("cuMemAlloc")
        for _i in range(2):
            ptr = c.c_uint64(0)
            self.cu("cuMemAlloc_v2", c.byref(ptr), self.size)
            self.bufs.append(ptr.value)
        t0 = time.time()
        self.step("fill pattern")
        plen = min(self.chunk, self.size)
        self.pattern = c.create_string_buffer(os.urandom(BLOCK) * (plen // BLOCK), plen)
        for off in range(0, self.size, plen):
            self.cu("cuMemcpyHtoD_v2", self.bufs[0] + off, c.addressof(self.pattern), min(plen, self.size - off))
        for blk in range(self.size // BLOCK):
            hdr = c.create_string_buffer(self.header(blk), HEADER)
            self.cu("cuMemcpyHtoD_v2", self.bufs[0] + blk * BLOCK, c.addressof(hdr), HEADER)
        self.cu("cuCtxSynchronize")
        self.result["timing"]["fill_s"] = round(time.time() - t0, 4)

    def header(self, blk):
        return struct.pack("<QQ", self.nonce, blk)

    def open_driver(self):
        c = ctypes
        self.step("cuFileDriverOpen")
        t0 = time.time()
        self.cufile_call("cuFileDriverOpen")
        self.driver_open = True
        self.result["timing"]["driver_open_s"] = round(time.time() - t0, 4)
        info = {}
        props = _DrvProps()
        if self.cufile.cuFileDriverGetProperties(c.byref(props)).err == 0:
            info["props"] = {
                "nvfs_major_version": props.nvfs.major_version, "nvfs_minor_version": props.nvfs.minor_version,
                "dstatusflags": props.nvfs.dstatusflags, "dcontrolflags": props.nvfs.dcontrolflags,
                "fflags": props.fflags, "max_direct_io_size": props.nvfs.max_direct_io_size,
                "max_device_cache_size": props.max_device_cache_size,
                "per_buffer_cache_size": props.per_buffer_cache_size,
                "max_device_pinned_mem_size": props.max_device_pinned_mem_size,
            }
        if self.api_version is not None:
            info["api_version"] = self.api_version
        get_bool = getattr(self.cufile, "cuFileGetParameterBool", None)
        if get_bool is not None:
            get_bool.argtypes = [c.c_int, c.POINTER(c.c_bool)]
            get_bool.restype = _CUfileError
            params = {}
            for key, num in BOOL_PARAMS.items():
                val = c.c_bool(False)
                if get_bool(num, c.byref(val)).err == 0:
                    params[key] = bool(val.value)
            info["params"] = params
        self.result["cufile"] = info

    def register_buffers(self):
        self.step("cuFileBufRegister")
        for ptr in self.bufs:
            self.cufile_call("cuFileBufRegister", ctypes.c_void_p(ptr), self.size, 0)
            self.registered.append(ptr)

    # -- I/O -------------------------------------------------------------------------------
    def verify(self):
        """Copy buffer 2 back to the host and compare it with the pattern, block by block."""
        c = ctypes
        libc = c.CDLL(None)
        libc.memcmp.argtypes = [c.c_void_p, c.c_void_p, c.c_size_t]
        libc.memcmp.restype = c.c_int
        plen = len(self.pattern)
        host = c.create_string_buffer(plen)
        base = c.addressof(host)
        pbase = c.addressof(self.pattern)
        for off in range(0, self.size, plen):
            n = min(plen, self.size - off)
            self.cu("cuMemcpyDtoH_v2", base, self.bufs[1] + off, n)
            for boff in range(0, n, BLOCK):
                blk = (off + boff) // BLOCK
                got = c.string_at(base + boff, HEADER)
                want = self.header(blk)
                if got != want or libc.memcmp(base + boff + HEADER, pbase + boff + HEADER, BLOCK - HEADER):
                    return {"ok": False, "offset": off + boff, "expected": want.hex(), "got": got.hex(),
                            "verified_bytes": off + boff}
        return {"ok": True, "verified_bytes": self.size}

    def probe_path(self, path):
        entry = {"path": path, "ok": False, "size": self.size, "threads": self.threads, "chunk": self.chunk}
        private = dfd = fd = handle = None
        name = "probe"
        try:
            self.step("open O_DIRECT %s" % path)
            private, dfd = private_dir(path, self.args.get("dir_prefix") or "%s%d." % (PRIVATE_PREFIX, os.getpid()))
            entry["file"] = os.path.join(private, name)
            fd = create_in(private, dfd, name)
            self.step("cuFileHandleRegister %s" % path)
            fh = handle = self.register_handle(fd)
            self.register_spares(fd)  # libcufile opens the file again by name to register it
            os.unlink(name, dir_fd=dfd)  # from here on nothing of the probe stays on the disk, however it ends
            entry["unlinked_after"] = "cuFileHandleRegister"
            self.cu("cuMemsetD32_v2", self.bufs[1], 0x5A5AA5A5, self.size // 4)
            self.cu("cuCtxSynchronize")
            plan = self.default_plan()
            stats = [self.read_stats()]
            self.step("cuFileWrite %s" % path)
            wsec = self.transfer("cuFileWrite", self.bufs[0], plan, [fh])
            stats.append(self.read_stats())
            self.step("cuFileRead %s" % path)
            rsec = self.transfer("cuFileRead", self.bufs[1], plan, [fh])
            stats.append(self.read_stats())
            self.step("verify %s" % path)
            t0 = time.time()
            check = self.verify()
            entry["verify_s"] = round(time.time() - t0, 4)
            entry.update({"write_s": round(wsec, 6), "read_s": round(rsec, 6),
                          "write_gbps": gbps(self.size, wsec), "read_gbps": gbps(self.size, rsec),
                          "verify": check, "nvfs_stats": stats, "ok": bool(check["ok"])})
            if not check["ok"]:
                entry["error"] = dict(check, step="verify", kind="verify")
            else:
                # the storage alone, same file, same run, same split: how much of it reaches the GPU
                self.step("host O_DIRECT %s" % path)
                direct = host_direct(fd, self.size, {"write": plan, "read": plan})
                entry["host_direct"] = direct
                entry["storage_ratio"] = {d: ratio(entry[d + "_gbps"], direct.get(d + "_gbps")) for d in ("write", "read")}
                if self.throughput:
                    entry["tuned"] = self.tune(path, fd, fh)
        except StepError as exc:
            entry["error"] = exc.info
        finally:
            if handle is not None:
                self.step("cuFileHandleDeregister %s" % path)
                self.cufile.cuFileHandleDeregister(handle)
            if fd is not None:
                os.close(fd)
            if dfd is not None:
                entry.update(remove_private(private, dfd, name))
        return entry

    def cleanup(self):
        self.close_pools()
        for ptr in self.registered:
            self.cufile.cuFileBufDeregister(ctypes.c_void_p(ptr))
        self.registered = []
        if self.driver_open and self.driver_close is not None:
            self.step("cuFileDriverClose")
            self.driver_close()
            self.driver_open = False
        for ptr in self.bufs:
            self.cuda.cuMemFree_v2(ptr)
        self.bufs = []
        if self.ctx.value and self.ctx_release is not None:
            self.ctx_release(self.dev)

    def run(self):
        t0 = time.time()
        try:
            self.load()
            self.init_cuda()
            self.alloc_and_fill()
            self.open_driver()
            self.register_buffers()
            for path in self.args.get("paths") or []:
                self.result["paths"].append(self.probe_path(path))
        except StepError as exc:
            self.result["error"] = exc.info
        finally:
            try:
                if self.cuda is not None:
                    self.cleanup()
            except Exception as exc:  # pylint: disable=broad-except
                self.result["cleanup_error"] = repr(exc)
        self.result["timing"]["total_s"] = round(time.time() - t0, 4)
        return self.result


def main(argv):
    args = json.loads(argv[0]) if argv else {}
    if args.get("parent"):
        die_with_parent(args["parent"])
    if args.get("timeout"):
        signal.alarm(int(args["timeout"]))  # default action of SIGALRM: the process ends
    libc = unbuffer_c_stdout()
    out = {"protocol": PROTOCOL, "pid": os.getpid(), "python": sys.version.split()[0]}
    try:
        if args.get("nvml_lib"):
            emit("step", "nvml")
            out["nvml"] = nvml_inventory(args["nvml_lib"])
        if args.get("probe") and args.get("cufile_lib"):
            out["probe"] = Probe(args).run()
    except Exception as exc:  # pylint: disable=broad-except
        out["error"] = {"step": "python", "kind": "python", "message": "%s: %s" % (type(exc).__name__, exc)}
    if libc is not None:
        libc.fflush(None)
    emit("result", json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    main(sys.argv[1:])
