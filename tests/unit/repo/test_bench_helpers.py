# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""bench/benchlib.py, the pure helpers of bench/run: recap parsing, ratios and slopes, the
controller's RSS sampled from a /proc tree, the first rollout's end-state comparison and the
report's acceptance lines. The bench's figures themselves are never asserted here."""

from __future__ import annotations

import math
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import benchlib  # noqa: E402

GOALS = {"verify/ping": 2.0, "rerun/ping": 2.0, "rerun slope": 1.2, "verify slope": 1.1, "rollout/peer": 0.5}


def test_recap_reads_every_host():
    out = ("PLAY RECAP *********\n"
           "bench-01                   : ok=3    changed=0    unreachable=0    failed=0    skipped=1\n"
           "bench-02                   : ok=2    changed=1    unreachable=1    failed=2    skipped=0\n")
    assert benchlib.recap(out) == {"bench-01": (3, 0, 0, 0), "bench-02": (2, 1, 1, 2)}


def test_ratio_and_slope():
    assert benchlib.ratio(3.0, 1.5) == 2.0
    assert benchlib.ratio(1.0, 0.0) == float("inf")
    assert benchlib.ratio(1.0, float("nan")) != benchlib.ratio(1.0, float("nan"))  # NaN: not measured
    assert benchlib.slope(1.0, 11.0, 3, 23) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="two different sizes"):
        benchlib.slope(1.0, 2.0, 3, 3)


def test_size_pairs_first_to_last_then_consecutive():
    assert benchlib.size_pairs([20, 3]) == [(3, 20)]
    assert benchlib.size_pairs([3, 20, 50, 100]) == [(3, 100), (3, 20), (20, 50), (50, 100)]
    assert benchlib.size_pairs([3]) == []


@pytest.mark.parametrize("text, expected", [("3,20,50,100", [3, 20, 50, 100]), ("20,3,3", [3, 20]), ("7", [7])])
def test_parse_sizes(text, expected):
    assert benchlib.parse_sizes(text) == expected


@pytest.mark.parametrize("text", ["", "3,x", "0,3", "3,500"])
def test_parse_sizes_rejects(text):
    with pytest.raises(ValueError, match="--sizes"):
        benchlib.parse_sizes(text)


def fake_proc(tmp_path, tree, rss):
    """A /proc with processes ``rss`` {pid: KiB} and children ``tree`` {pid: [pids]}."""
    for pid, kib in rss.items():
        task = tmp_path / str(pid) / "task" / str(pid)
        task.mkdir(parents=True)
        (task / "children").write_text(" ".join(str(c) for c in tree.get(pid, [])) + " ")
        status = "Name:\tx\nVmPeak:\t999 kB\n" + ("VmRSS:\t%d kB\n" % kib if kib is not None else "")
        (tmp_path / str(pid) / "status").write_text(status)
    return str(tmp_path)


def test_tree_rss_sums_the_process_and_its_descendants(tmp_path):
    proc = fake_proc(tmp_path, {10: [11, 12], 12: [13]}, {10: 1000, 11: 200, 12: 300, 13: 40, 99: 5000})
    assert sorted(benchlib.descendants(10, proc)) == [10, 11, 12, 13]
    assert benchlib.tree_rss_kib(10, proc) == (1540, 4)


def test_tree_rss_ignores_vanished_and_kernel_processes(tmp_path):
    # 12 exited between the children read and the status read; 11 has no VmRSS (kernel thread)
    proc = fake_proc(tmp_path, {10: [11, 12]}, {10: 1000, 11: None})
    assert benchlib.tree_rss_kib(10, proc) == (1000, 3)


def test_peak_sampler_keeps_the_largest_sample(tmp_path):
    proc = fake_proc(tmp_path, {10: [11]}, {10: 1000, 11: 500})
    (tmp_path / "10" / "smaps_rollup").write_text("Rss:  1000 kB\nPss:  700 kB\n")
    (tmp_path / "11" / "smaps_rollup").write_text("Rss:  500 kB\nPss:  200 kB\n")
    sampler = benchlib.PeakSampler(10, proc=proc)
    sampler.sample()
    (tmp_path / "11" / "status").write_text("VmRSS:\t100 kB\n")
    sampler.sample()
    assert (sampler.peak_kib, sampler.peak_procs, sampler.peak_pss_kib) == (1500, 2, 900)
    assert benchlib.tree_pss_kib(10, proc) == 900


def test_peak_sampler_thread_samples_a_real_process():
    with benchlib.PeakSampler(os.getpid(), interval=0.01) as sampler:
        pass
    assert sampler.peak_kib > 0 and sampler.peak_procs >= 1


ADHOC = """bench-01 | CHANGED | rc=0 >>
pkg doca-ofed 3.2.1 ii
pkg nvidia-fs-dkms 2.28.2-1 ii
pkg nvidia-fs 2.28.2-1 ii
pkg libcufile-13-0 1.15.1.6-1 ii
pkg gds-tools-13-0 1.15.1.6-1 ii
loaded 1
param rw_stats_enabled 1
file /etc/modules-load.d/nvidia-fs.conf nvidia_fs\x20
file /etc/modprobe.d/nvidia-fs.conf options nvidia_fs rw_stats_enabled=1\x20
cufile.json
// NVIDIA's comment
{ "logging": {
  // NOTICE|ERROR|WARN
  "level": "ERROR" } }
bench-02 | CHANGED | rc=0 >>
loaded 0
cufile.json
MISSING
"""


def test_end_state_of_adhoc_output():
    states = {h: benchlib.end_state(t) for h, t in benchlib.adhoc_outputs(ADHOC).items()}
    assert sorted(states) == ["bench-01", "bench-02"]
    good = states["bench-01"]
    assert good["packages"]["nvidia-fs"] == ("2.28.2-1", "ii")
    assert good["cufile"] == {"logging": {"level": "ERROR"}}
    assert "loaded 1" in good["lines"]


def test_end_state_parses_comment_lines_of_the_shipped_file():
    state = benchlib.end_state("loaded 1\ncufile.json\n// a comment\n{\n  // another\n  \"a\": 1\n}\n")
    assert state["cufile"] == {"a": 1}


def test_end_state_reads_nvidias_shipped_file_with_block_comments():
    with open(os.path.join(ROOT, "tests", "fixtures", "cufile", "cuda-13.0-shipped.json")) as f:
        shipped = f.read()
    assert "/*" in shipped
    state = benchlib.end_state("loaded 1\ncufile.json\n" + shipped)
    assert state["cufile"]["logging"]["level"] == "ERROR"
    assert state["cufile"]["properties"]["allow_compat_mode"] is True


def test_compare_fleets_same_end_state_is_empty():
    text = benchlib.adhoc_outputs(ADHOC)["bench-01"]
    ours = {"bench-01": benchlib.end_state(text)}
    peer = {"bench-01": benchlib.end_state(text.replace("// NOTICE|ERROR|WARN\n", ""))}
    assert benchlib.compare_fleets(ours, peer) == []


def test_compare_fleets_names_every_difference():
    text = benchlib.adhoc_outputs(ADHOC)["bench-01"]
    ours = {"bench-01": benchlib.end_state(text)}
    peer = {"bench-01": benchlib.end_state(text.replace("2.28.2-1", "2.26.6-1").replace("ERROR", "WARN"))}
    diffs = benchlib.compare_fleets(ours, peer)
    assert any("packages differ" in d and "2.26.6-1" in d for d in diffs)
    assert any("cufile differ" in d and "WARN" in d for d in diffs)
    broken = {"bench-02": benchlib.end_state(benchlib.adhoc_outputs(ADHOC)["bench-02"])}
    problems = benchlib.compare_fleets(broken, broken)
    assert "site.yml bench-02: nvidia_fs not loaded (once)" in problems
    assert "peer bench-02: package doca-ofed not installed" in problems
    assert any("cufile.json: unparsable" in p for p in problems)  # MISSING is no document


def results_for(sizes, rerun_per_host, changed=0):
    return {n: {"median": {"ping": 0.5 + 0.1 * n, "verify": 0.6 + 0.11 * n, "rerun": 1.0 + rerun_per_host * n,
                           "peer": 4.0 * n},
                "peak_kib": {"ping": 100 * 1024, "verify": 200 * 1024, "rerun": 300 * 1024, "peer": 250 * 1024},
                "rerun_changed": [changed] * 3, "peer_rounds": 3 if n <= 20 else 1,
                "cost": {"up_s": 1.0 * n, "mem_kib": 11 * 1024 * n, "prepare_s": 2.0, "converge_s": 3.0 * n}} for n in sizes}


def test_report_acceptance_pass_and_fail():
    rollout = {"site": {"s": 30.0, "peak_kib": 1024, "changed": 100, "state": {"a": {}, "b": {}}},
               "peer": {"s": 80.0, "peak_kib": 1024, "changed": 20, "state": {}}, "diffs": []}
    text = benchlib.report(results_for([3, 20, 50, 100], 0.11), rollout, GOALS, 3)
    assert "PASS converged re-run per-host slope 3->100: 1.10x ping's" in text
    assert "PASS verify per-host slope 3->100: 1.10x" in text
    assert "per-host slope 50->100 hosts" in text and "per-host slope 20->50 hosts" in text
    assert "INFO controller peak RSS at 100 hosts: re-run 300 MiB, verify 200 MiB, ping 100 MiB" in text
    assert "PASS first rollout at 2 hosts: site.yml 30.0 s = 0.38x the peer's 80.0 s" in text
    assert "PASS same end state" in text
    assert "| 100 | 10.50 | 11.60 | 12.00 | 400.00 (1 run) |" in text
    assert "| 100 | 100.0 | 1.00 | 1100 | 11.0 | 2.0 | 300.0 |" in text
    slow = benchlib.report(results_for([3, 100], 0.3, changed=1), dict(rollout, diffs=["x"]), GOALS, 3)
    assert "FAIL converged re-run per-host slope 3->100: 3.00x" in slow
    assert "FAIL converged re-run at 100 hosts" in slow and "changed=1/1/1" in slow
    assert "FAIL same end state after both first rollouts" in slow and "end-state difference: x" in slow


def test_report_of_a_rollout_only_run():
    rollout = {"site": {"s": 50.0, "peak_kib": 2048, "changed": 100, "state": {"a": {}}},
               "peer": {"s": 80.0, "peak_kib": 1024, "changed": 20, "state": {"a": {}}}, "diffs": ["a/a packages differ"]}
    text = benchlib.report({}, rollout, GOALS, 3)
    assert "FAIL first rollout at 1 hosts: site.yml 50.0 s = 0.62x the peer's 80.0 s (goal <= 0.5x)" in text
    assert "FAIL same end state after both first rollouts" in text and "end-state difference: a/a packages differ" in text


def test_lab_report_per_host_figures():
    text = benchlib.lab_report({100: {"up_s": 150.0, "mem_kib": 1100 * 1024, "prepare_s": 90.0, "ping_s": 14.0,
                                      "ping_ok": 100, "ping_peak_kib": 400 * 1024}})
    assert "| 100 | 150.0 | 1.50 | 1100 | 11.0 | 90.0 | 14.00 | 100 | 400 |" in text


def test_modules_load_name_with_a_hyphen_is_the_same_module():
    text = benchlib.adhoc_outputs(ADHOC)["bench-01"]
    hyphen = benchlib.end_state(text.replace("modules-load.d/nvidia-fs.conf nvidia_fs", "modules-load.d/nvidia-fs.conf nvidia-fs"))
    assert benchlib.state_problems(hyphen) == []
    assert benchlib.compare_fleets({"a": hyphen}, {"a": benchlib.end_state(text)}) == []


def test_rejudge_a_saved_state():
    text = benchlib.adhoc_outputs(ADHOC)["bench-01"]
    saved = benchlib.end_state(text)
    saved["lines"] = [l.replace("conf nvidia_fs", "conf nvidia-fs") for l in saved["lines"]]  # an older bench's state
    assert benchlib.rejudge(saved) == benchlib.end_state(text)


def test_cpu_stat_seconds_reads_usage_usec():
    assert benchlib.cpu_stat_seconds("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n") == 2.5
    assert benchlib.cpu_stat_seconds("nr_periods 0\n") is None
    assert benchlib.cpu_stat_seconds("") is None


def test_cpu_seconds_of_a_lab_cgroup_and_nan_without_one(tmp_path):
    lab = tmp_path / "gpudirect-lab" / "bench"
    lab.mkdir(parents=True)
    (lab / "cpu.stat").write_text("usage_usec 1250000\n")
    assert benchlib.lab_cpu_seconds([str(lab)]) == 1.25
    assert math.isnan(benchlib.lab_cpu_seconds([str(tmp_path / "missing")]))
    assert math.isnan(benchlib.lab_cpu_seconds([]))


def with_cpu(results, rerun_cpu_per_host):
    """Each command's CPU: the controller 0.07 s and the hosts 0.23 s per host (ping), the re-run
    ``rerun_cpu_per_host`` in all; verify 3% above ping."""
    for n, r in results.items():
        r["cpu"] = {"ping": {"controller": 0.5 + 0.07 * n, "hosts": 0.3 + 0.23 * n},
                    "verify": {"controller": 0.7 + 0.07 * n, "hosts": 0.3 + 0.239 * n},
                    "rerun": {"controller": 1.0 + 0.07 * n, "hosts": 0.5 + (rerun_cpu_per_host - 0.07) * n},
                    "peer": {"controller": 2.0 * n, "hosts": 1.0 * n}}
    return results


def test_report_prints_the_cpu_each_command_costs_and_its_slope_beside_the_wall_clock():
    text = benchlib.report(with_cpu(results_for([3, 100], 0.14), 0.324), None, GOALS, 3)
    # per size: controller + lab hosts CPU seconds of each command (median over the rounds)
    assert "| 100 | 7.50 + 23.30 | 7.70 + 24.20 | 8.00 + 25.90 | 200.00 + 100.00 |" in text
    # the per-host CPU slope beside the wall-clock one: (0.07 + 0.254) / 0.30 = 1.08
    assert "| rerun | 0.140 | 1.40 FAIL | 0.324 | 1.08 |" in text
    assert "| ping | 0.100 | 1.00 | 0.300 | 1.00 |" in text
    assert ("INFO CPU per added host 3->100 (controller + lab hosts): re-run 1.08x ping's, verify 1.03x ping's"
            in text)
    # the wall-clock acceptance is what decides
    assert "FAIL converged re-run per-host slope 3->100: 1.40x ping's" in text


def test_report_of_a_saved_run_without_cpu_figures():
    text = benchlib.report(results_for([3, 100], 0.11), None, GOALS, 3)
    assert "| rerun | 0.110 | 1.10 PASS | - | - |" in text
    assert "INFO CPU per added host" not in text and "| 100 | 7.50 +" not in text


def test_a_timed_rerun_is_a_true_second_run_of_site_yml_beside_verify_rounds(tmp_path):
    """The report records which playbooks wrote it: a report directory shared by verify.yml and
    site.yml is rewritten by every run (localhost changed=1) though no GDS host changed."""
    import types
    from unittest.mock import patch
    from ansible_collections.gpudirect.storage.tests.unit.scripts import load_script
    run = load_script("bench_run", "bench", "run")
    last_writer = {}

    def sh(argv, env=None, check=True, memory=False):
        playbook = next((a for a in argv if a.endswith(".yml") and "hosts" not in a), None)
        where = (env or {}).get("GDS_REPORT_DIR", "default")
        changed = int(playbook is not None and "peer" not in playbook and last_writer.get(where) != playbook)
        last_writer[where] = playbook if changed else last_writer.get(where)
        out = ("PLAY RECAP ***\nbench-01 : ok=2 changed=0 unreachable=0 failed=0 skipped=0\n"
               "localhost : ok=1 changed=%d unreachable=0 failed=0 skipped=0\n" % changed)
        return 0.1, out, 1, 1

    fleet = types.SimpleNamespace(dir=str(tmp_path), inventory=str(tmp_path / "hosts.yml"), cost={},
                                  cpu_seconds=lambda: (0.0, 0.0))
    fleet.playbook = lambda *a, **kw: run.Fleet.playbook(fleet, *a, **kw)
    with patch.object(run, "sh", sh):
        measured = run.measure(fleet, rounds=3, peer_rounds=1)
    assert measured["rerun_changed"] == [0, 0, 0]
    assert measured["first"]["changed"] == 1  # counted over every host, localhost included


def test_results_go_after_the_intro_and_before_the_latest_run(tmp_path, monkeypatch):
    from ansible_collections.gpudirect.storage.tests.unit.scripts import load_script
    run = load_script("bench_run", "bench", "run")
    (tmp_path / "bench").mkdir()
    results = tmp_path / "bench" / "RESULTS.md"
    results.write_text("# Benchmark results\n\nThe latest run of each benchmark.\nKeep the latest.\n\n## Older run\n\nold\n")
    monkeypatch.setattr(run, "ROOT", str(tmp_path))
    run.prepend_results("`bench/run`", "new")
    text = results.read_text()
    assert text.startswith("# Benchmark results\n\nThe latest run of each benchmark.\nKeep the latest.\n\n## ")
    assert text.index("\nnew\n") < text.index("## Older run") and text.endswith("## Older run\n\nold\n")
    results.write_text("# Benchmark results\n\n")
    run.prepend_results("`bench/run`", "first")
    assert results.read_text().startswith("# Benchmark results\n\n## ") and "\nfirst\n" in results.read_text()
