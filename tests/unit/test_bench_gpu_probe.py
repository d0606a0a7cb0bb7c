# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""bench/gpu-probe's pure verdict math: the throughput mode against the best kvikio
variant per size and direction. Figures are made up; nothing here is timed."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.tests.unit.scripts import load_script


def load():
    return load_script("bench_gpu_probe", "bench", "gpu-probe")


def test_throughput_mode_against_the_best_kvikio_variant_per_size_and_direction():
    bench = load()
    mib = 1 << 20
    kv = ["kvikio", "kvikio-t4", "kvikio-t8", "kvikio-cufile"]
    medians = {
        ("probe-tput", 256 * mib, "write"): 3.60, ("probe-tput", 256 * mib, "read"): 6.10,
        ("kvikio", 256 * mib, "write"): 3.46, ("kvikio-t4", 256 * mib, "write"): 3.75,
        ("kvikio-t8", 256 * mib, "write"): 3.70, ("kvikio-cufile", 256 * mib, "write"): 3.37,
        ("kvikio", 256 * mib, "read"): 4.53, ("kvikio-t4", 256 * mib, "read"): 6.52,
        ("kvikio-t8", 256 * mib, "read"): 6.40, ("kvikio-cufile", 256 * mib, "read"): None,
        ("probe-tput", 1024 * mib, "write"): None, ("kvikio-t4", 1024 * mib, "write"): 3.75,
    }
    rows = bench.tput_verdicts(medians, [256 * mib, 1024 * mib], kv)
    assert rows[0] == (256 * mib, "write", 3.60 / 3.75, "kvikio-t4", True)  # 0.96x the best, not the default
    assert rows[1][:2] == (256 * mib, "read") and rows[1][3] == "kvikio-t4" and rows[1][4] is False  # 0.936x
    assert round(rows[1][2], 3) == 0.936
    assert rows[2] == (1024 * mib, "write", None, "kvikio-t4", False)  # the probe did not measure: FAIL
    assert rows[3][2] is None and rows[3][4] is False
    no_kvikio = [(256 * mib, "write", None, None, False), (256 * mib, "read", None, None, False)]
    assert bench.tput_verdicts(medians, [256 * mib], []) == no_kvikio
