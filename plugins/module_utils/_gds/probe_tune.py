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
plan on the same file, measures the FINALISTS best per direction again ``tune_reps`` times each
(the best median is the figure), verifies a read of the chosen plan and measures the storage
with those plans. Worker threads are persistent per probe run (``pool``), as kvikio's are.
"""

from __future__ import annotations

import ctypes
import os
import time

from ansible_collections.gpudirect.storage.plugins.module_utils._gds.probe_lib import (
    BLOCK, CU_FILE_HANDLE_TYPE_OPAQUE_FD, WARMUP, StepError, _CUfileDescr
)
from ansible_collections.gpudirect.storage.plugins.module_utils._gds.probe_io import (
    PLAN_ONE_CALL, WorkerPool, best_plans, candidate_plans, gbps, host_direct, median, plan_label,
    plan_slices, ratio, worker_queues
)


FINALISTS = 3  # plans per direction measured again after the calibration (one run each is noisy)


class Transfers(object):
    """Needs from its host class: args, cufile, cuda, ctx, bufs, registered, size, chunk, threads,
    throughput, tune_reps, step(), cufile_call(), register_buffers(), verify()."""

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

    def pool(self, count):
        """The persistent WorkerPool of ``count`` threads (the context made current in each),
        created once per probe run: libcufile keeps per-thread state, new threads per transfer
        would pay for it again."""
        pools = self.__dict__.setdefault("_pools", {})

        def current_context(_idx):
            rc = self.cuda.cuCtxSetCurrent(self.ctx)
            return {"kind": "cuda", "step": "cuCtxSetCurrent", "code": rc} if rc else None

        if count not in pools:
            pools[count] = WorkerPool(count, current_context)
            if pools[count].setup_error:
                raise StepError(dict(pools[count].setup_error, step="worker threads"))
        return pools[count]

    def close_pools(self):
        """The worker threads ended, the per-thread handles deregistered."""
        for pool in self.__dict__.pop("_pools", {}).values():
            pool.close()
        for dup, handle in self.__dict__.pop("_spares", []):
            if handle is not None:
                self.cufile.cuFileHandleDeregister(handle)
            os.close(dup)

    def register_spares(self, fd):
        """Throughput mode: the per-thread cuFile handles its plans may use, on duplicates of
        ``fd``, registered while the file still has its name (libcufile opens it again by name
        to register it: an unlinked file fails with CU_FILE_GETNEWFD_FAILED)."""
        self.close_pools()
        self._spare_error = None
        if not self.throughput:
            return
        plans = candidate_plans(self.size, self.args.get("cpus") or os.cpu_count() or 1)
        spares = self.__dict__.setdefault("_spares", [])
        try:
            for _i in range(max([p["threads"] for p in plans if p.get("handles") == "per_thread"] or [0])):
                spares.append([os.dup(fd), None])
                spares[-1][1] = self.register_handle(spares[-1][0])
        except StepError as exc:
            self._spare_error = exc.info

    def transfer(self, op, dptr, plan, handles):
        """Timed ``op`` (cuFileWrite/cuFileRead) of the whole buffer as ``plan`` splits it
        (probe_io.plan_slices): one call on this thread, or the pool's threads, each given an
        untimed warm-up I/O of its first slice first (into the source buffer, never the verified
        one). ``handles``: one cuFile handle per worker (or one, shared). ctypes releases the
        GIL during each call. Returns seconds; raises StepError."""
        slices = plan_slices(self.size, plan)
        if not plan.get("threads"):
            self.warm_up(op, handles[0], self.bufs[0])
            t0 = time.perf_counter()
            err = self._cufile_job(op, handles[0], dptr, slices[0])()
            elapsed = time.perf_counter() - t0
        else:
            pool = self.pool(len(slices))
            warm = [[(off, min(WARMUP, n))] for off, n in (s[0] for s in slices)]
            dummy, err = pool.run([self._cufile_job(op, handles[i % len(handles)], self.bufs[0], w)
                                   for i, w in enumerate(warm)])
            if err:
                raise StepError(dict(err, warm_up=True))
            queues = worker_queues(self.size, plan)  # task plans: one shared queue, as kvikio's pool
            elapsed, err = pool.run([self._cufile_job(op, handles[i % len(handles)], dptr, q)
                                     for i, q in enumerate(queues)])
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

    def set_registered(self, flag):
        """cuFileBufRegister both buffers (the probe's default) or deregister them (kvikio's)."""
        if flag and not self.registered:
            self.register_buffers()
        elif not flag and self.registered:
            for ptr in self.registered:
                self.cufile.cuFileBufDeregister(ctypes.c_void_p(ptr))
            self.registered = []

    def default_plan(self):
        """probe_threads: 0 = one call; N = N threads over ``chunk`` tasks (16 MiB), shared handle."""
        if self.threads <= 0:
            return dict(PLAN_ONE_CALL)
        return dict(PLAN_ONE_CALL, threads=self.threads, task_mb=self.chunk // BLOCK)

    def timed_plan(self, op, plan, fh, dptr):
        """transfer() with the plan's buffer registration, and the per-thread cuFile handles
        (register_spares) when it asks for them."""
        self.set_registered(plan.get("registered", True))
        if plan.get("handles") != "per_thread":
            return self.transfer(op, dptr, plan, [fh])
        handles = [h for _dup, h in self.__dict__.get("_spares", []) if h is not None]
        count = len(plan_slices(self.size, plan))
        if len(handles) < count:
            raise StepError(self._spare_error or {
                "step": "cuFileHandleRegister", "kind": "tune", "message": "%d per-thread handles registered" % len(handles)})
        return self.transfer(op, dptr, plan, handles[:count])

    def tune(self, path, fd, fh):
        """Throughput mode: every candidate plan once (write, then read), the FINALISTS best per
        direction measured again ``tune_reps`` times each and the best median taken (not the
        luckiest calibration run), a read with the chosen plan verified, the storage measured
        with the same plans. A failure here is reported in the result (``error``), not as the
        probe's: the default probe already verified the data path."""
        t0 = time.perf_counter()
        out = {"candidates": [], "reps": self.tune_reps}
        bufs = {"write": self.bufs[0], "read": self.bufs[1]}
        ops = (("cuFileWrite", "write"), ("cuFileRead", "read"))
        try:
            # "cpus": the tests stand in for a bigger host with it (not a module option)
            for plan in candidate_plans(self.size, self.args.get("cpus") or os.cpu_count() or 1):
                row = {"plan": plan, "label": plan_label(plan)}
                self.step("tune %s %s" % (row["label"], path))
                try:
                    for op, direction in ops:
                        row[direction + "_gbps"] = gbps(self.size, self.timed_plan(op, plan, fh, bufs[direction]))
                except StepError as exc:
                    row["error"] = exc.info
                out["candidates"].append(row)
            # the FINALISTS best plans per direction measured again tune_reps times each: the
            # figure is the best median, not the luckiest single run of the calibration
            plans = {}
            for op, direction in ops:
                finalists = []
                for plan in best_plans(out["candidates"], direction, FINALISTS):
                    self.step("tune %s finalist %s %s" % (direction, plan_label(plan), path))
                    runs = [gbps(self.size, self.timed_plan(op, plan, fh, bufs[direction]))
                            for _i in range(self.tune_reps)]
                    finalists.append({"plan": plan, "label": plan_label(plan), "runs": runs, "median": median(runs)})
                if not finalists:
                    raise StepError({"step": "tune", "kind": "tune", "message": "no candidate plan completed"})
                best = max(finalists, key=lambda f: f["median"] or 0)
                plans[direction] = best["plan"]
                out.update({direction + "_gbps": best["median"], direction + "_runs": best["runs"],
                            direction + "_plan": best["plan"], direction + "_label": best["label"],
                            direction + "_finalists": finalists})
            self.timed_plan("cuFileRead", plans["read"], fh, bufs["read"])  # the verified read is the chosen plan's
            self.step("tune verify %s" % path)
            out["verify"] = self.verify()
            if not out["verify"]["ok"]:
                raise StepError(dict(out["verify"], step="tune verify", kind="verify"))
            self.step("tune host O_DIRECT %s" % path)
            out["host_direct"] = host_direct(fd, self.size, plans)
            out["storage_ratio"] = dict((d, ratio(out[d + "_gbps"], out["host_direct"].get(d + "_gbps")))
                                        for d in ("write", "read"))
        except StepError as exc:
            out["error"] = exc.info
        finally:
            self.set_registered(True)
            self.close_pools()
            out["tune_s"] = round(time.perf_counter() - t0, 4)
        return out
