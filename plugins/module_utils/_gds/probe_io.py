# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""How the cuFile probe child splits its I/O, and the storage's own speed. PRIVATE.

Part of the probe PROGRAM: ``_gds/probe_child.probe_source`` concatenates probe_nvml,
probe_io and probe into the one source the child runs (``python -c``), dropping their
``from __future__`` and collection import lines. So: standard library only, no relative
imports, and names that do not clash with the other parts.

* I/O plans (pure, unit-tested): a plan is ``{"threads", "task_mb", "handles"}`` - ``threads``
  0 is one call for the whole buffer; else each of ``threads`` workers gets one contiguous
  slice (``task_mb`` 0) or takes ``task_mb`` MiB tasks from one shared queue as it becomes free
  (kvikio's thread pool splits a request into 4 MiB tasks the same way); ``handles``
  ``per_thread`` gives each worker its own file descriptor and cuFile handle.
  ``candidate_plans`` is the grid the throughput mode measures, ``best_plan`` picks from the
  measurements, ``ratio`` is the GPU/storage ratio.
* ``WorkerPool``: persistent threads (as kvikio keeps). A thread's first cuFile I/O sets up
  libcufile's per-thread state (compat mode: its bounce buffers); the pool runs it untimed.
* ``host_direct``: the same file (the same descriptor) read and written with O_DIRECT into host
  memory (os.preadv / os.pwrite release the GIL), split like the probe, best of 2 interleaved
  rounds: how fast the storage is without the GPU.
"""

from __future__ import annotations

import mmap
import os
import queue
import threading
import time

MIB = 1 << 20
HOST_PIECE = 16 * MIB  # largest single O_DIRECT call of host_direct (dd's 16 MiB blocks)
MAX_THREADS = 16
PLAN_ONE_CALL = {"threads": 0, "task_mb": 0, "handles": "shared", "registered": True}


def plan_slices(size, plan):
    """[[(offset, length), ...] per worker] of ``size`` bytes (a multiple of 1 MiB) for ``plan``.

    Offsets and lengths are multiples of 1 MiB (O_DIRECT alignment); no worker gets nothing."""
    threads = int(plan.get("threads") or 0)
    if threads <= 0 or size <= MIB:
        return [[(0, size)]]
    task = int(plan.get("task_mb") or 0) * MIB
    if task <= 0:  # one contiguous slice per worker, 1 MiB granular
        blocks = -(-size // MIB)
        per = -(-blocks // threads) * MIB
        slices = [[(off, min(per, size - off))] for off in range(0, size, per)]
        return slices
    tasks = [(off, min(task, size - off)) for off in range(0, size, task)]
    workers = min(threads, len(tasks))
    return [tasks[i::workers] for i in range(workers)]


def worker_queues(size, plan):
    """One iterator of (offset, length) per worker for ``plan``: a task plan's workers all draw
    from ONE shared iterator (the next task goes to whichever worker is free, so a slow I/O
    delays the transfer by one task at most; ``next`` on a list iterator is atomic under the
    GIL), any other plan's worker walks its own ``plan_slices`` slice."""
    slices = plan_slices(size, plan)
    if len(slices) < 2 or not int(plan.get("task_mb") or 0):
        return [iter(s) for s in slices]
    shared = iter(sorted(piece for worker in slices for piece in worker))
    return [shared] * len(slices)


def candidate_plans(size, cpus):
    """The plans the throughput mode measures on ``size`` bytes with ``cpus`` CPUs, one call first.

    Thread counts up to min(16, cpus) (at least 2), no worker with less than 1 MiB; per-thread
    handles in case libcufile serialises I/O on one handle; unregistered buffers (kvikio does
    not register them) in case registration costs in compat mode; 2, 4 and 8 MiB tasks around
    the 4 MiB that moved the most on the H100 test host's compat path."""
    limit = max(2, min(MAX_THREADS, cpus or 1))
    grid = [(2, 0, "shared", True), (4, 0, "shared", True),
            (4, 2, "shared", True), (4, 4, "shared", True), (4, 8, "shared", True),
            (8, 2, "shared", True), (8, 4, "shared", True), (16, 4, "shared", True),
            (4, 4, "per_thread", True), (8, 4, "per_thread", True),
            (0, 0, "shared", False), (4, 4, "shared", False), (8, 4, "shared", False)]
    plans = [dict(PLAN_ONE_CALL)]
    for threads, task_mb, handles, registered in grid:
        if threads > limit or threads * MIB > size or threads * task_mb * MIB > size:
            continue
        plans.append({"threads": threads, "task_mb": task_mb, "handles": handles, "registered": registered})
    return plans


def plan_label(plan):
    """Short text of a plan: ``1 call``, ``4x contiguous``, ``8x 4 MiB per-thread handles``."""
    text = "1 call" if not plan.get("threads") else "%dx %s" % (
        plan["threads"], "%d MiB" % plan["task_mb"] if plan.get("task_mb") else "contiguous")
    if plan.get("handles") == "per_thread":
        text += " per-thread handles"
    if plan.get("registered") is False:
        text += " unregistered"
    return text


def best_plans(measured, direction, count=1):
    """The ``count`` plans with the highest ``<direction>_gbps`` in ``measured`` ([{plan,
    write_gbps, read_gbps}]), best first; on a tie the fewer threads first."""
    key = direction + "_gbps"
    rows = [m for m in measured if isinstance(m.get(key), (int, float))]
    rows.sort(key=lambda m: (-m[key], int(m["plan"].get("threads") or 0)))
    return [m["plan"] for m in rows[:count]]


def best_plan(measured, direction):
    """The best plan of ``measured`` for ``direction``, or None when nothing was measured."""
    plans = best_plans(measured, direction)
    return plans[0] if plans else None


def ratio(gpu_gbps, host_gbps):
    """GPU figure / storage figure, 3 decimals; None when either is missing or zero."""
    if not isinstance(gpu_gbps, (int, float)) or not isinstance(host_gbps, (int, float)) or host_gbps <= 0:
        return None
    return round(float(gpu_gbps) / host_gbps, 3)


def gbps(size, seconds):
    return round(size / seconds / 1e9, 3) if seconds and seconds > 0 else None


def median(values):
    vals = sorted(values)
    if not vals:
        return None
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2.0


class WorkerPool(object):
    """``count`` persistent threads; ``run(jobs)`` hands job i to thread i and waits for all.

    ``setup(index)`` runs first in each thread (untimed: per-thread CUDA context, warm-up I/O);
    a job returns None or an error dict; ``run`` returns (seconds, first error or None)."""

    def __init__(self, count, setup=None):
        self.inboxes = [queue.Queue() for _i in range(count)]
        self.done = queue.Queue()
        self.threads = [threading.Thread(target=self._loop, args=(i, setup)) for i in range(count)]
        for thread in self.threads:
            thread.daemon = True
            thread.start()
        ready = [self.done.get() for _i in range(count)]
        self.setup_error = next((err for err in ready if err), None)

    def _loop(self, index, setup):
        try:
            self.done.put(setup(index) if setup else None)
        except Exception as exc:  # pylint: disable=broad-except
            self.done.put({"kind": "python", "message": "%s: %s" % (type(exc).__name__, exc)})
        while True:
            job = self.inboxes[index].get()
            if job is None:
                return
            try:
                self.done.put(job())
            except Exception as exc:  # pylint: disable=broad-except
                self.done.put({"kind": "python", "message": "%s: %s" % (type(exc).__name__, exc)})

    def run(self, jobs):
        t0 = time.perf_counter()
        for inbox, job in zip(self.inboxes, jobs):
            inbox.put(job)
        errors = [self.done.get() for _job in jobs]
        return time.perf_counter() - t0, next((err for err in errors if err), None)

    def close(self):
        for inbox in self.inboxes:
            inbox.put(None)
        for thread in self.threads:
            thread.join()


def _host_job(op, fd, region, slices):
    """A worker's O_DIRECT reads or writes of its slices through its own host region."""
    def job():
        for off, length in slices:
            done = 0
            while done < length:
                n = min(HOST_PIECE, length - done)
                view = region[:n]
                ret = os.preadv(fd, [view], off + done) if op == "read" else os.pwrite(fd, view, off + done)
                view.release()
                if ret != n:
                    return {"step": "host O_DIRECT %s" % op, "kind": "io", "offset": off + done, "size": n, "ret": ret}
                done += n
        return None
    return job


def host_direct(fd, size, plans, rounds=2):
    """Read, then write, ``size`` bytes of the probe's file (``fd``, opened O_DIRECT: the
    descriptor the cuFile handle uses, never the file reopened by name) into host memory,
    ``rounds`` times interleaved; the figure per direction is the best round (one O_DIRECT
    stream on a shared host varies by a third from run to run, and the ratio compares the GPU
    path with what the storage CAN do).

    ``plans``: {"read": plan, "write": plan} (how the GPU side split the same transfer; one call
    is done in 16 MiB pieces, as libcufile's compat path and dd do). Returns {read_gbps,
    write_gbps, read_runs, write_runs, read_plan, write_plan} or {"error": ...}. Nothing is
    fsync'ed (the probe's cuFileWrite is not either)."""
    out = {"read_runs": [], "write_runs": []}
    for _round in range(max(1, rounds)):
        for op in ("read", "write"):
            sec, err = _host_timed(fd, op, size, plans[op])
            if err:
                return {"error": err}
            out[op + "_runs"].append(gbps(size, sec))
    for op in ("read", "write"):
        out.update({op + "_gbps": max(out[op + "_runs"]), op + "_plan": plan_label(plans[op])})
    return out


def _host_timed(fd, op, size, plan):
    """(seconds, error) of one O_DIRECT ``op`` of the whole file as ``plan`` splits it."""
    queues = worker_queues(size, plan)
    pool = WorkerPool(len(queues))
    region = mmap.mmap(-1, HOST_PIECE * len(queues))  # page-aligned, as O_DIRECT needs
    views = []
    try:
        region.write(b"\xa5" * len(region))  # touch every page before the timer
        views = [memoryview(region)[i * HOST_PIECE:(i + 1) * HOST_PIECE] for i in range(len(queues))]
        return pool.run([_host_job(op, fd, views[i], q) for i, q in enumerate(queues)])
    finally:
        for view in views:
            view.release()
        pool.close()
        region.close()
