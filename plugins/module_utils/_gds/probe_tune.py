# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The probe child's timed cuFile transfers and its throughput mode (``Transfers``, mixed into
``probe.Probe``). PRIVATE.

Part of the probe PROGRAM: ``_gds/probe_child.probe_source`` concatenates probe_nvml,
probe_io, probe_lib, probe_tune and probe into the one source the child runs (``python -c``),
dropping their ``from __future__`` and collection import lines. So: standard library only, no
relative imports, and names that do not clash with the other parts.

The default probe does one timed write and one timed read as ``probe_threads`` says (0: one
call). The throughput mode (``throughput``) then measures every ``probe_io.candidate_plans``
plan on the same file, takes the best plan per direction, measures it again ``tune_reps`` times
(the median is the figure), verifies the last read and measures the storage with those plans.
"""

from __future__ import annotations

import ctypes
import os
import time

from ansible_collections.gpudirect.storage.plugins.module_utils._gds.probe_lib import (
    BLOCK, CU_FILE_HANDLE_TYPE_OPAQUE_FD, WARMUP, StepError, _CUfileDescr
)
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.probe_io import (
    PLAN_ONE_CALL, WorkerPool, best_plan, candidate_plans, gbps, host_direct, median, plan_label,
    plan_slices, ratio
)


class Transfers(object):
    """Needs from its host class: cufile, cuda, ctx, bufs, size, chunk, threads, tune_reps,
    step(), cufile_call(), verify()."""

    def warm_up(self, op, fh, dptr):
        """One untimed ``op`` of the first WARMUP bytes: libcufile sets up its per-thread state
        (compat mode: its bounce buffers) on the first I/O of a process, which would otherwise
        be timed in the probe's single run. Reads go into the source buffer, never into the one
        that is verified."""
        n = min(WARMUP, self.size)
        ret = getattr(self.cufile, op)(fh, ctypes.c_void_p(dptr), n, 0, 0)
        if ret != n:
            raise StepError({"step": op, "kind": "io", "offset": 0, "size": n, "ret": ret, "warm_up": True,
                             "errno": ctypes.get_errno() if ret == -1 else None})

    def _cufile_job(self, op, fh, dptr, slices):
        fn = getattr(self.cufile, op)

        def job():
            for off, n in slices:
                ret = fn(fh, ctypes.c_void_p(dptr), n, off, off)
                if ret != n:
                    return {"step": op, "kind": "io", "offset": off, "size": n, "ret": ret,
                            "errno": ctypes.get_errno() if ret == -1 else None}
            return None
        return job

    def transfer(self, op, dptr, plan, handles):
        """Timed ``op`` (cuFileWrite/cuFileRead) of the whole buffer as ``plan`` splits it
        (probe_io.plan_slices): one call on this thread, or a WorkerPool whose threads each set
        the context and did an untimed warm-up I/O of their first slice (into the source buffer,
        never the verified one). ``handles``: one cuFile handle per worker (or one, shared).
        ctypes releases the GIL during each call. Returns seconds; raises StepError."""
        slices = plan_slices(self.size, plan)
        if not plan.get("threads"):
            self.warm_up(op, handles[0], self.bufs[0])
            t0 = time.perf_counter()
            err = self._cufile_job(op, handles[0], dptr, slices[0])()
            elapsed = time.perf_counter() - t0
        else:
            warm_fn = getattr(self.cufile, op)

            def setup(idx):
                self.cuda.cuCtxSetCurrent(self.ctx)
                off, n = slices[idx][0]
                n = min(WARMUP, n)
                ret = warm_fn(handles[idx % len(handles)], ctypes.c_void_p(self.bufs[0]), n, off, off)
                if ret != n:
                    return {"step": op, "kind": "io", "offset": off, "size": n, "ret": ret, "warm_up": True,
                            "errno": ctypes.get_errno() if ret == -1 else None}
                return None

            pool = WorkerPool(len(slices), setup)
            try:
                if pool.setup_error:
                    raise StepError(pool.setup_error)
                jobs = [self._cufile_job(op, handles[i % len(handles)], dptr, s) for i, s in enumerate(slices)]
                elapsed, err = pool.run(jobs)
            finally:
                pool.close()
        if err:
            raise StepError(err)
        return elapsed

    def register_handle(self, fd):
        descr = _CUfileDescr()
        descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD
        descr.handle.fd = fd
        fh = ctypes.c_void_p()
        self.cufile_call("cuFileHandleRegister", ctypes.byref(fh), ctypes.byref(descr))
        return fh

    def default_plan(self):
        """probe_threads: 0 = one call; N = N threads over ``chunk`` tasks (16 MiB), shared handle."""
        if self.threads <= 0:
            return dict(PLAN_ONE_CALL)
        return {"threads": self.threads, "task_mb": self.chunk // BLOCK, "handles": "shared"}

    def timed_plan(self, op, plan, name, fh, dptr):
        """transfer() with per-thread cuFile handles (own O_DIRECT descriptors) when the plan asks."""
        if plan.get("handles") != "per_thread":
            return self.transfer(op, dptr, plan, [fh])
        opened = []
        try:
            for _i in range(len(plan_slices(self.size, plan))):
                fd = os.open(name, os.O_RDWR | getattr(os, "O_DIRECT", 0o40000))
                opened.append([fd, None])
                opened[-1][1] = self.register_handle(fd)
            return self.transfer(op, dptr, plan, [h for _fd, h in opened])
        finally:
            for fd, handle in opened:
                if handle is not None:
                    self.cufile.cuFileHandleDeregister(handle)
                os.close(fd)

    def tune(self, path, name, fh):
        """Throughput mode: every candidate plan once (write, then read), the best per direction
        measured again ``tune_reps`` times (median: the figure is not the luckiest of the
        candidates), the last read verified, the storage measured with the same plans."""
        t0 = time.perf_counter()
        measured = []
        for plan in candidate_plans(self.size, os.cpu_count() or 1):
            row = {"plan": plan, "label": plan_label(plan)}
            self.step("tune %s %s" % (plan_label(plan), path))
            try:
                for op, key in (("cuFileWrite", "write_gbps"), ("cuFileRead", "read_gbps")):
                    row[key] = gbps(self.size, self.timed_plan(op, plan, name, fh, self.bufs[0 if key[0] == "w" else 1]))
            except StepError as exc:
                row["error"] = exc.info
            measured.append(row)
        out = {"candidates": measured, "reps": self.tune_reps}
        plans = {"write": best_plan(measured, "write"), "read": best_plan(measured, "read")}
        if plans["write"] is None or plans["read"] is None:
            out["error"] = {"step": "tune", "kind": "tune", "message": "no candidate plan completed"}
            return out
        for op, direction in (("cuFileWrite", "write"), ("cuFileRead", "read")):
            self.step("tune %s best %s %s" % (direction, plan_label(plans[direction]), path))
            runs = [gbps(self.size, self.timed_plan(op, plans[direction], name, fh,
                                                     self.bufs[0 if direction == "write" else 1]))
                    for _i in range(self.tune_reps)]
            out.update({direction + "_gbps": median(runs), direction + "_runs": runs,
                        direction + "_plan": plans[direction], direction + "_label": plan_label(plans[direction])})
        self.step("tune verify %s" % path)
        out["verify"] = self.verify()
        self.step("tune host O_DIRECT %s" % path)
        out["host_direct"] = host_direct(name, self.size, plans)
        out["storage_ratio"] = {d: ratio(out[d + "_gbps"], out["host_direct"].get(d + "_gbps")) for d in ("write", "read")}
        out["tune_s"] = round(time.perf_counter() - t0, 4)
        return out
