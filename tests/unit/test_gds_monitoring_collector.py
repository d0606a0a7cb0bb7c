"""The node_exporter textfile collector of role gds_monitoring: its parsers on the real formats of
nvidia-fs (fixtures in tests/fixtures/gds), the verdict record, rendering, the atomic write."""

import json
import os
import re

import pytest

from ansible_collections.gpudirect.storage.tests.unit.scripts import ROOT, load_script

SCRIPT = os.path.join(ROOT, "roles", "gds_monitoring", "files", "gds_textfile_collector.py")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "gds")
collector = load_script("gds_textfile_collector", SCRIPT)


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def values(samples):
    return dict(((name, labels), value) for name, labels, value in samples)


def test_stats_2_26_with_io_stats_enabled_every_counter_with_its_unit():
    header, samples = collector.parse_stats(fixture("nvfs-stats-2.26-io-stats-enabled.constructed.txt"))
    assert header == {"gds_version": "1.15.1.6", "stats_version": "4.0", "driver_version": "2.26.6",
                      "rw_stats_enabled": True}
    got = values(samples)
    mib = 1 << 20
    assert got[("gds_nvidia_fs_reads_total", ())] == 4096
    assert got[("gds_nvidia_fs_reads_ok_total", ())] == 4090
    assert got[("gds_nvidia_fs_read_bytes_total", ())] == 65536 * mib
    assert got[("gds_nvidia_fs_write_bytes_total", ())] == 65536 * mib
    assert got[("gds_nvidia_fs_read_bandwidth_bytes_per_second", ())] == 5243 * mib
    assert got[("gds_nvidia_fs_write_latency_average_seconds", ())] == pytest.approx(0.004793)
    assert got[("gds_nvidia_fs_batches_total", ())] == 12
    assert got[("gds_nvidia_fs_batch_submit_latency_average_seconds", ())] == pytest.approx(35e-6)
    assert got[("gds_nvidia_fs_errors_total", (("counter", "read"),))] == 6
    assert got[("gds_nvidia_fs_errors_total", (("counter", "batch"),))] == 1
    assert got[("gds_nvidia_fs_errors_total", (("counter", "dma_map"),))] == 2
    assert got[("gds_nvidia_fs_errors_total", (("counter", "write_page_cache_eio"),))] == 0
    assert got[("gds_nvidia_fs_bar1_maps_total", ())] == 8 and got[("gds_nvidia_fs_bar1_maps_active", ())] == 0
    assert got[("gds_nvidia_fs_ops_in_flight", (("op", "batch"),))] == 0
    gpu = (("pci_bus_id", "0000:c7:00.0"), ("uuid", "a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f90"))
    assert got[("gds_nvidia_fs_gpu_cache_bytes", gpu)] == 2 * mib
    assert got[("gds_nvidia_fs_gpu_cross_root_port_ratio", gpu)] == pytest.approx(0.25)
    assert got[("gds_nvidia_fs_processes", ())] == 1


def test_stats_2_25_with_io_stats_disabled_has_errors_but_no_counts():
    header, samples = collector.parse_stats(fixture("nvfs-stats-2.25.7-io-stats-disabled.txt"))
    assert header["driver_version"] == "2.25.7" and header["rw_stats_enabled"] is False
    names = set(name for name, _labels, _value in samples)
    assert "gds_nvidia_fs_reads_total" not in names and "gds_nvidia_fs_write_bytes_total" not in names
    got = values(samples)
    assert got[("gds_nvidia_fs_errors_total", (("counter", "write_page_cache_fail"),))] == 0
    assert got[("gds_nvidia_fs_munmaps_total", ())] == 2
    assert got[("gds_nvidia_fs_gpu_max_pinned_bytes",
                (("pci_bus_id", "0000:01:00.0"), ("uuid", "fb1e6550-2a78-d767-1f0d-7512eb8c552d")))] == 1 << 20


def test_stats_2_24_head_and_the_1_x_format():
    header, samples = collector.parse_stats(fixture("nvfs-stats-2.24-io-stats-enabled.head12.txt"))
    got = values(samples)
    assert header["driver_version"] == "2.24" and header["rw_stats_enabled"] is True
    assert got[("gds_nvidia_fs_read_bytes_total", ())] == 1048576 << 20
    assert got[("gds_nvidia_fs_read_bandwidth_bytes_per_second", ())] == 13224 << 20
    header, samples = collector.parse_stats(fixture("nvfs-stats-1.9.0.20-old-format.txt"))
    got = values(samples)
    assert header["rw_stats_enabled"] is True and "driver_version" not in header
    assert got[("gds_nvidia_fs_read_bytes_total", ())] == 6294177 << 20  # readMB= is BYTES_TO_MB too
    assert got[("gds_nvidia_fs_writes_ok_total", ())] == 1024


@pytest.mark.parametrize("text", ["", "garbage\n", "Reads : n=abc ok=\n", "GPU x uuid:y : Registered_MiB=z\n"])
def test_stats_that_say_nothing_give_no_samples(text):
    assert collector.parse_stats(text)[1] == []


def test_version_and_modules():
    assert collector.parse_version(fixture("nvfs-version-2.26.constructed.txt")) == "2.26"
    assert collector.parse_version("2.25.7\n") == "2.25.7"  # /sys/module/nvidia_fs/version
    assert collector.parse_version("") is None
    modules = fixture("proc-modules-h100.txt")
    assert collector.module_loaded(modules, "nvidia") is True
    assert collector.module_loaded("nvidia_fs_x 1 0 - Live 0x0\nnvidia 1 0 - Live 0x0\n") is False
    assert collector.module_loaded("nvidia_fs 323584 0 - Live 0x0000000000000000 (OE)\n") is True


RECORD = {"schema": 1, "time": 1764262800, "mode": "compat", "verified": True, "proven": False,
          "write_gbps": 3.5, "read_gbps": 5.25,
          "cufile": {"valid": False, "release": "1.15",
                     "files": [{"path": "/etc/cufile.json", "role": "global", "sha256": "aa"}]}}


def test_verdict_a_labelled_mode_the_rank_and_the_required_rank():
    got = values(collector.verdict_samples(RECORD, "gds"))
    assert got[("gds_verdict_mode", (("mode", "compat"),))] == 1
    assert got[("gds_verdict_mode", (("mode", "gds"),))] == 0
    assert got[("gds_verdict_mode_rank", ())] == 1 and got[("gds_required_mode_rank", (("mode", "gds"),))] == 3
    assert got[("gds_verdict_verified", ())] == 1 and got[("gds_verdict_proven", ())] == 0
    assert got[("gds_verdict_write_bytes_per_second", ())] == 3.5e9
    assert got[("gds_verdict_timestamp_seconds", ())] == 1764262800
    assert got[("gds_verdict_recorded", ())] == 1


@pytest.mark.parametrize("record", [None, {}, {"mode": "fastest"}, ["gds"]])
def test_no_usable_record_says_so_and_nothing_else(record):
    assert collector.verdict_samples(record) == [("gds_verdict_recorded", (), 0)]


def test_cufile_valid_at_the_verdict_and_whether_the_file_changed_since():
    got = values(collector.cufile_samples(RECORD, lambda path: "aa"))
    labels = (("path", "/etc/cufile.json"), ("role", "global"))
    assert got[("gds_cufile_valid", (("path", "/etc/cufile.json"), ("release", "1.15"), ("role", "global")))] == 0
    assert got[("gds_cufile_unchanged", labels)] == 1
    assert values(collector.cufile_samples(RECORD, lambda path: None))[("gds_cufile_unchanged", labels)] == 0
    unknown = dict(RECORD, cufile=dict(RECORD["cufile"], valid=None))
    assert [s[0] for s in collector.cufile_samples(unknown, lambda path: "aa")] == ["gds_cufile_unchanged"]


def test_render_escapes_labels_and_refuses_unknown_names():
    text = collector.render([("gds_cufile_unchanged", (("path", 'a"b\\c\nd'), ("role", "overlay")), 1)])
    assert 'gds_cufile_unchanged{path="a\\"b\\\\c\\nd",role="overlay"} 1' in text.splitlines()
    with pytest.raises(ValueError):
        collector.render([("node_load1", (), 1)])


def fake_proc(tmp_path, stats="nvfs-stats-2.26-io-stats-enabled.constructed.txt"):
    (tmp_path / "proc" / "driver" / "nvidia-fs").mkdir(parents=True)
    (tmp_path / "proc" / "modules").write_text("nvidia_fs 323584 0 - Live 0x0000000000000000 (OE)\n")
    (tmp_path / "proc" / "driver" / "nvidia-fs" / "stats").write_text(fixture(stats))
    (tmp_path / "proc" / "driver" / "nvidia-fs" / "version").write_text("version: 2.26\n")
    return tmp_path


def test_main_writes_the_file_atomically_from_a_re_rooted_proc(tmp_path):
    root = fake_proc(tmp_path / "root")
    out = tmp_path / "textfile"
    out.mkdir()
    cufile = tmp_path / "cufile.json"
    cufile.write_text("{}\n")
    import hashlib
    record = dict(RECORD, cufile=dict(RECORD["cufile"], files=[
        {"path": str(cufile), "role": "global", "sha256": hashlib.sha256(b"{}\n").hexdigest()}]))
    (tmp_path / "last_verdict.json").write_text(json.dumps(record))
    argv = ["--proc-root", str(root), "--textfile-dir", str(out), "--record", str(tmp_path / "last_verdict.json")]
    assert collector.main(argv) == 0
    assert os.listdir(str(out)) == ["gpudirect_storage.prom"]  # no temporary file left
    text = (out / "gpudirect_storage.prom").read_text()
    assert oct(os.stat(str(out / "gpudirect_storage.prom")).st_mode & 0o777) == "0o644"
    assert "gds_nvidia_fs_loaded 1" in text and 'gds_nvidia_fs_info{gds_version="1.15.1.6",version="2.26"} 1' in text
    assert "gds_collector_success 1" in text and "gds_cufile_unchanged{" in text
    assert re.search(r'^gds_cufile_unchanged\{path="%s",role="global"\} 1$' % re.escape(str(cufile)), text, re.M)
    # nvidia_fs unloaded (the lab's modprobe -r): loaded 0 and none of its counters
    (root / "proc" / "modules").write_text("nvidia 8822784 43 nvidia_uvm, Live 0x0 (OE)\n")
    collector.main(argv)
    text = (out / "gpudirect_storage.prom").read_text()
    assert "gds_nvidia_fs_loaded 0" in text and "gds_nvidia_fs_reads_total" not in text


def test_a_broken_record_is_a_collector_failure_not_a_crash(tmp_path):
    (tmp_path / "last_verdict.json").write_text("{not json")
    samples = collector.collect(str(fake_proc(tmp_path / "root")), str(tmp_path / "last_verdict.json"))
    got = values(samples)
    assert got[("gds_collector_success", ())] == 0 and got[("gds_verdict_recorded", ())] == 0


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    def refuse(src, dst):
        raise OSError("refused")
    monkeypatch.setattr(collector.os, "replace", refuse)
    with pytest.raises(OSError):
        collector.write_atomic(str(tmp_path), "gpudirect_storage.prom", "x 1\n")
    assert os.listdir(str(tmp_path)) == []


def test_a_cufile_json_swapped_for_a_fifo_does_not_block_the_collector(tmp_path):
    """The overlay cufile.json may sit in a directory a local user can write: a FIFO there must
    not hang the root collector (its metrics would go stale on every host it is on)."""
    import threading
    fifo = tmp_path / "cufile.json"
    os.mkfifo(str(fifo))
    out = []
    worker = threading.Thread(target=lambda: out.append(collector._sha256(str(fifo))), daemon=True)
    worker.start()
    worker.join(timeout=5)
    assert out == [None]
    (tmp_path / "regular.json").write_text("{}\n")
    import hashlib
    assert collector._sha256(str(tmp_path / "regular.json")) == hashlib.sha256(b"{}\n").hexdigest()
