# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The probe's pure I/O planning (slices, candidate plans, choosing a plan, ratios), its worker
pool, the storage's own O_DIRECT measurement, and gds.throughput."""

from __future__ import annotations

import os

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_io as io
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_facts import throughput_summary

MIB = 1 << 20


def covered(slices, size):
    """Every byte exactly once, 1 MiB aligned."""
    flat = sorted(piece for worker in slices for piece in worker)
    assert all(off % MIB == 0 and length > 0 for off, length in flat)
    pos = 0
    for off, length in flat:
        assert off == pos
        pos += length
    return pos == size


def test_one_call_is_one_slice():
    assert io.plan_slices(256 * MIB, io.PLAN_ONE_CALL) == [[(0, 256 * MIB)]]
    assert io.plan_slices(MIB, {"threads": 8, "task_mb": 4}) == [[(0, MIB)]]  # nothing to split


@pytest.mark.parametrize("size_mb,threads", [(256, 4), (1024, 16), (10, 4), (3, 8), (1024, 3)])
def test_contiguous_slices_one_per_worker(size_mb, threads):
    slices = io.plan_slices(size_mb * MIB, {"threads": threads, "task_mb": 0})
    assert covered(slices, size_mb * MIB)
    assert len(slices) == min(threads, size_mb) and all(len(w) == 1 for w in slices)


def test_tasks_are_dealt_round_robin_like_kvikio():
    slices = io.plan_slices(40 * MIB, {"threads": 4, "task_mb": 4})
    assert covered(slices, 40 * MIB)
    assert [len(w) for w in slices] == [3, 3, 2, 2]
    assert slices[0][:2] == [(0, 4 * MIB), (16 * MIB, 4 * MIB)]
    assert io.plan_slices(6 * MIB, {"threads": 8, "task_mb": 4}) == [[(0, 4 * MIB)], [(4 * MIB, 2 * MIB)]]


def test_task_plans_share_one_queue_like_kvikio():
    """Task plans hand the next task to whichever worker is free (kvikio's thread pool), so a
    slow worker delays the transfer by at most one task; contiguous plans keep their slices."""
    plan = {"threads": 4, "task_mb": 4}
    queues = io.worker_queues(40 * MIB, plan)
    assert len(queues) == 4
    taken = [next(queues[0]) for _i in range(7)] + [next(queues[3]), next(queues[1])]
    assert taken == [(i * 4 * MIB, 4 * MIB) for i in range(9)]  # one worker may take them all
    assert list(queues[2]) == [(36 * MIB, 4 * MIB)] and list(queues[0]) == []
    contiguous = io.worker_queues(40 * MIB, {"threads": 4, "task_mb": 0})
    assert [list(q) for q in contiguous] == io.plan_slices(40 * MIB, {"threads": 4, "task_mb": 0})
    assert [list(q) for q in io.worker_queues(8 * MIB, io.PLAN_ONE_CALL)] == [[(0, 8 * MIB)]]


def test_a_shared_queue_gives_every_task_to_exactly_one_thread():
    queues = io.worker_queues(1024 * MIB, {"threads": 8, "task_mb": 1})
    got = [[] for _q in queues]

    def job(i):
        def run():
            for piece in queues[i]:
                got[i].append(piece)
        return run
    pool = io.WorkerPool(len(queues))
    try:
        seconds, err = pool.run([job(i) for i in range(len(queues))])
    finally:
        pool.close()
    assert err is None and seconds >= 0
    assert covered(got, 1024 * MIB)


def test_candidate_plans_follow_the_cpus_and_the_size():
    big = io.candidate_plans(1024 * MIB, 16)
    assert big[0] == io.PLAN_ONE_CALL and len(big) == 14
    assert {p["task_mb"] for p in big} == {0, 2, 4, 8}
    assert len(set(io.plan_label(p) for p in big)) == len(big)
    assert max(p["threads"] for p in big) == 16
    assert {p["handles"] for p in big} == {"shared", "per_thread"} and {p["registered"] for p in big} == {True, False}
    two = io.candidate_plans(1024 * MIB, 2)
    assert [io.plan_label(p) for p in two] == ["1 call", "2x contiguous", "1 call unregistered"]
    small = io.candidate_plans(16 * MIB, 16)
    assert all(p["threads"] * max(p["task_mb"], 1) <= 16 for p in small)
    two_threads = {"threads": 2, "task_mb": 0, "handles": "shared", "registered": True}
    assert io.candidate_plans(256 * MIB, None)[:2] == [io.PLAN_ONE_CALL, two_threads]


def test_plan_labels():
    assert io.plan_label(io.PLAN_ONE_CALL) == "1 call"
    assert io.plan_label({"threads": 4, "task_mb": 0}) == "4x contiguous"
    assert io.plan_label({"threads": 8, "task_mb": 4, "handles": "per_thread"}) == "8x 4 MiB per-thread handles"
    assert io.plan_label({"threads": 0, "registered": False}) == "1 call unregistered"


def test_best_plan_by_direction_ties_to_fewer_threads_and_skips_failures():
    a, b, c = ({"threads": 0}, {"threads": 4}, {"threads": 8})
    measured = [{"plan": a, "write_gbps": 3.5, "read_gbps": 5.3}, {"plan": c, "write_gbps": 3.9, "read_gbps": 6.9},
                {"plan": b, "write_gbps": 3.9, "read_gbps": 6.1}, {"plan": {"threads": 16}, "error": {"step": "x"}}]
    assert io.best_plan(measured, "write") is b  # 3.9 both: fewer threads
    assert io.best_plan(measured, "read") is c
    assert io.best_plans(measured, "read", 2) == [c, b]
    assert io.best_plans(measured, "read", 9) == [c, b, a]
    assert io.best_plan([{"plan": a, "error": {}}], "read") is None and io.best_plan([], "write") is None


def test_ratio_and_median():
    assert io.ratio(5.3, 5.6) == 0.946
    assert io.ratio(6.0, 5.0) == 1.2  # the GPU path may beat one O_DIRECT stream
    assert io.ratio(None, 5.0) is None and io.ratio(5.0, None) is None and io.ratio(5.0, 0) is None
    assert io.median([3, 1, 2]) == 2 and io.median([4, 1, 2, 3]) == 2.5 and io.median([]) is None
    assert io.gbps(10 ** 9, 2.0) == 0.5 and io.gbps(1, 0) is None


def test_worker_pool_runs_one_job_per_thread_and_returns_the_first_error():
    pool = io.WorkerPool(3, setup=lambda i: None)
    try:
        seen = []
        sec, err = pool.run([lambda i=i: seen.append(i) for i in range(3)])
        assert err is None and sorted(seen) == [0, 1, 2] and sec >= 0
        sec, err = pool.run([lambda: None, lambda: {"step": "cuFileRead", "kind": "io"}, lambda: 1 // 0])
        assert err in ({"step": "cuFileRead", "kind": "io"}, {"kind": "python", "message": "ZeroDivisionError: "
                                                                                           "integer division or modulo by zero"})
    finally:
        pool.close()
    broken = io.WorkerPool(2, setup=lambda i: {"kind": "cuda", "code": 201} if i else None)
    broken.close()
    assert broken.setup_error == {"kind": "cuda", "code": 201}


def test_host_direct_reads_and_writes_the_file(tmp_path):
    path = str(tmp_path / "probe.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(4 * MIB))
    try:
        fd = os.open(path, os.O_RDWR | os.O_DIRECT)
    except OSError as exc:  # pragma: no cover - a file system without O_DIRECT
        pytest.skip("no O_DIRECT here: %s" % exc)
    try:
        out = io.host_direct(fd, 4 * MIB, {"read": io.PLAN_ONE_CALL, "write": {"threads": 2, "task_mb": 1}})
    finally:
        os.close(fd)
    if out.get("error"):
        pytest.skip("no O_DIRECT here: %s" % out["error"])
    assert out["read_gbps"] > 0 and out["write_gbps"] > 0
    # best of 2 interleaved rounds: a single O_DIRECT stream is noisy on a shared host
    assert len(out["read_runs"]) == 2 and out["read_gbps"] == max(out["read_runs"])
    assert len(out["write_runs"]) == 2 and out["write_gbps"] == max(out["write_runs"])
    assert out["read_plan"] == "1 call" and out["write_plan"] == "2x 1 MiB"
    assert os.path.getsize(path) == 4 * MIB
    with open(path, "rb") as f:
        assert f.read(16) == b"\xa5" * 16  # written from host memory


def test_host_direct_names_a_short_transfer(tmp_path):
    path = str(tmp_path / "short.bin")
    with open(path, "wb") as f:
        f.write(b"\0" * MIB)
    fd = os.open(path, os.O_RDONLY)
    try:
        out = io.host_direct(fd, 2 * MIB, {"read": io.PLAN_ONE_CALL, "write": io.PLAN_ONE_CALL})
    finally:
        os.close(fd)
    assert out["error"] == {"step": "host O_DIRECT read", "kind": "io", "offset": 0, "size": 2 * MIB, "ret": MIB}


def test_throughput_summary_default_and_tuned():
    entry = {"write_gbps": 3.5, "read_gbps": 5.3, "host_direct": {"write_gbps": 3.9, "read_gbps": 5.6},
             "storage_ratio": {"write": 0.897, "read": 0.946}}
    out = throughput_summary(entry, 256)
    assert out == {"write_gbps": 3.5, "read_gbps": 5.3, "size_mb": 256, "storage_write_gbps": 3.9,
                   "storage_read_gbps": 5.6, "write_ratio": 0.897, "read_ratio": 0.946, "tuned": None}
    entry["tuned"] = {"write_gbps": 3.8, "read_gbps": 6.9, "write_label": "4x 4 MiB", "read_label": "8x 4 MiB",
                      "host_direct": {"write_gbps": 4.0, "read_gbps": 7.0}, "storage_ratio": {"write": 0.95, "read": 0.986},
                      "verify": {"ok": True, "verified_bytes": 1}}
    tuned = throughput_summary(entry, 256)["tuned"]
    assert tuned == {"write_gbps": 3.8, "read_gbps": 6.9, "write_plan": "4x 4 MiB", "read_plan": "8x 4 MiB",
                     "storage_write_gbps": 4.0, "storage_read_gbps": 7.0, "write_ratio": 0.95, "read_ratio": 0.986,
                     "verified": True, "error": None}
    empty = throughput_summary(None, None)
    assert empty["write_gbps"] is None and empty["write_ratio"] is None and empty["tuned"] is None
