# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""GPUDirect Storage metrics for node_exporter's textfile collector.

Reads the nvidia-fs kernel module's /proc files, the last verdict gds_verify recorded on this host
and the cufile.json files that verdict validated, and writes them as one .prom file, atomically
(a temporary file in the same directory, then a rename), so node_exporter never reads half a file.

A standalone script run by a systemd timer, not Ansible module code: Python 3 standard library only,
no import of the collection. docs/monitoring.md lists every metric.
"""

import argparse
import hashlib
import json
import os
import re
import stat
import sys
import tempfile

MIB = 1 << 20  # nvidia-fs prints BYTES_TO_MB(b) = b >> 20 under the names MiB (2.x) and MB (1.x)
MODES = ("gds", "p2pdma", "compat", "unavailable", "failed")
# the gate's order (gds > p2pdma > compat); a host that cannot do GDS I/O at all ranks 0
MODE_RANK = {"gds": 3, "p2pdma": 2, "compat": 1, "unavailable": 0, "failed": 0}

# name: (type, help). Every metric the collector can write; render() refuses any other name.
METRICS = {
    "gds_collector_success": ("gauge", "1 when the collector read everything it looked for without an error."),
    "gds_nvidia_fs_loaded": ("gauge", "1 when the nvidia_fs kernel module is loaded (/proc/modules)."),
    "gds_nvidia_fs_info": ("gauge", "The loaded nvidia_fs module's version and the GDS release it reports."),
    "gds_nvidia_fs_rw_stats_enabled": ("gauge", "1 when nvidia_fs counts reads and writes (rw_stats_enabled=1)."),
    "gds_nvidia_fs_shadow_buffer_bytes": ("gauge", "Active shadow buffer memory."),
    "gds_nvidia_fs_processes": ("gauge", "Processes using nvidia_fs."),
    "gds_nvidia_fs_reads_total": ("counter", "Reads submitted through nvidia_fs."),
    "gds_nvidia_fs_reads_ok_total": ("counter", "Reads completed successfully."),
    "gds_nvidia_fs_read_bytes_total": ("counter", "Bytes read through nvidia_fs (MiB resolution)."),
    "gds_nvidia_fs_read_bandwidth_bytes_per_second": ("gauge", "Recent read bandwidth nvidia_fs reports."),
    "gds_nvidia_fs_read_latency_average_seconds": ("gauge", "Recent average read latency nvidia_fs reports."),
    "gds_nvidia_fs_writes_total": ("counter", "Writes submitted through nvidia_fs."),
    "gds_nvidia_fs_writes_ok_total": ("counter", "Writes completed successfully."),
    "gds_nvidia_fs_write_bytes_total": ("counter", "Bytes written through nvidia_fs (MiB resolution)."),
    "gds_nvidia_fs_write_bandwidth_bytes_per_second": ("gauge", "Recent write bandwidth nvidia_fs reports."),
    "gds_nvidia_fs_write_latency_average_seconds": ("gauge", "Recent average write latency nvidia_fs reports."),
    "gds_nvidia_fs_write_page_cache_total": ("counter", "Writes that met pages in the page cache."),
    "gds_nvidia_fs_batches_total": ("counter", "Batch I/O submissions."),
    "gds_nvidia_fs_batches_ok_total": ("counter", "Batch I/O submissions completed successfully."),
    "gds_nvidia_fs_batch_submit_latency_average_seconds": ("gauge", "Recent average batch submit latency."),
    "gds_nvidia_fs_sparse_reads_total": ("counter", "Reads of sparse files."),
    "gds_nvidia_fs_sparse_read_ios_total": ("counter", "Sparse read I/Os."),
    "gds_nvidia_fs_sparse_read_holes_total": ("counter", "Holes met by sparse reads."),
    "gds_nvidia_fs_sparse_read_pages_total": ("counter", "Pages of holes met by sparse reads."),
    "gds_nvidia_fs_mmaps_total": ("counter", "mmap calls on the nvidia_fs device."),
    "gds_nvidia_fs_mmaps_ok_total": ("counter", "Successful mmap calls."),
    "gds_nvidia_fs_munmaps_total": ("counter", "munmap calls."),
    "gds_nvidia_fs_bar1_maps_total": ("counter", "GPU BAR1 mappings requested."),
    "gds_nvidia_fs_bar1_maps_ok_total": ("counter", "GPU BAR1 mappings made."),
    "gds_nvidia_fs_bar1_frees_total": ("counter", "GPU BAR1 mappings freed."),
    "gds_nvidia_fs_bar1_callbacks_total": ("counter", "GPU BAR1 free callbacks from the NVIDIA driver."),
    "gds_nvidia_fs_bar1_delayed_frees_total": ("counter", "GPU BAR1 frees that were delayed."),
    "gds_nvidia_fs_bar1_maps_active": ("gauge", "GPU BAR1 mappings in use now."),
    "gds_nvidia_fs_errors_total": ("counter", "nvidia_fs error counters, by counter."),
    "gds_nvidia_fs_ops_in_flight": ("gauge", "Operations in progress, by operation."),
    "gds_nvidia_fs_gpu_registered_bytes": ("gauge", "GPU memory registered with nvidia_fs (BAR1 pinned), per GPU."),
    "gds_nvidia_fs_gpu_cache_bytes": ("gauge", "Bounce buffer memory, per GPU."),
    "gds_nvidia_fs_gpu_max_pinned_bytes": ("gauge", "Most GPU memory pinned at once, per GPU."),
    "gds_nvidia_fs_gpu_cross_root_port_ratio": ("gauge", "Share of peer traffic crossing PCIe root ports, per GPU."),
    "gds_verdict_recorded": ("gauge", "1 when gds_verify recorded a verdict on this host."),
    "gds_verdict_mode": ("gauge", "1 for the mode of the last recorded verdict, 0 for the others."),
    "gds_verdict_mode_rank": ("gauge", "The last verdict's mode as a rank: gds 3, p2pdma 2, compat 1, else 0."),
    "gds_verdict_verified": ("gauge", "1 when the last verdict's probe read back what it wrote."),
    "gds_verdict_proven": ("gauge", "1 when the last verdict's data path was proven by the nvidia-fs counters."),
    "gds_verdict_write_bytes_per_second": ("gauge", "The last verdict's probe write throughput."),
    "gds_verdict_read_bytes_per_second": ("gauge", "The last verdict's probe read throughput."),
    "gds_verdict_timestamp_seconds": ("gauge", "When the last verdict was recorded (Unix time)."),
    "gds_required_mode_rank": ("gauge", "The weakest mode this host must reach, as a rank (see gds_verdict_mode_rank)."),
    "gds_cufile_valid": ("gauge", "1 when the cufile.json in force was valid for the host's libcufile release at the last verdict."),
    "gds_cufile_unchanged": ("gauge", "1 when the cufile.json is byte for byte the one the last verdict validated."),
}

# (section, field) of /proc/driver/nvidia-fs/stats -> (metric, labels, scale). Fields not named
# here are left out, so a newer nvidia-fs with more fields still parses.
STATS_FIELDS = {
    ("reads", "n"): ("gds_nvidia_fs_reads_total", None, 1),
    ("reads", "ok"): ("gds_nvidia_fs_reads_ok_total", None, 1),
    ("reads", "readmib"): ("gds_nvidia_fs_read_bytes_total", None, MIB),
    ("reads", "readmb"): ("gds_nvidia_fs_read_bytes_total", None, MIB),
    ("reads", "bandwidth_mib_s"): ("gds_nvidia_fs_read_bandwidth_bytes_per_second", None, MIB),
    ("reads", "avg_latency_usec"): ("gds_nvidia_fs_read_latency_average_seconds", None, 1e-6),
    ("reads", "err"): ("gds_nvidia_fs_errors_total", {"counter": "read"}, 1),
    ("reads", "io_state_err"): ("gds_nvidia_fs_errors_total", {"counter": "read_io_state"}, 1),
    ("writes", "n"): ("gds_nvidia_fs_writes_total", None, 1),
    ("writes", "ok"): ("gds_nvidia_fs_writes_ok_total", None, 1),
    ("writes", "writemib"): ("gds_nvidia_fs_write_bytes_total", None, MIB),
    ("writes", "writemb"): ("gds_nvidia_fs_write_bytes_total", None, MIB),
    ("writes", "bandwidth_mib_s"): ("gds_nvidia_fs_write_bandwidth_bytes_per_second", None, MIB),
    ("writes", "avg_latency_usec"): ("gds_nvidia_fs_write_latency_average_seconds", None, 1e-6),
    ("writes", "pg_cache"): ("gds_nvidia_fs_write_page_cache_total", None, 1),
    ("writes", "err"): ("gds_nvidia_fs_errors_total", {"counter": "write"}, 1),
    ("writes", "io_state_err"): ("gds_nvidia_fs_errors_total", {"counter": "write_io_state"}, 1),
    ("writes", "pg_cache_fail"): ("gds_nvidia_fs_errors_total", {"counter": "write_page_cache_fail"}, 1),
    ("writes", "pg_cache_eio"): ("gds_nvidia_fs_errors_total", {"counter": "write_page_cache_eio"}, 1),
    ("batches", "n"): ("gds_nvidia_fs_batches_total", None, 1),
    ("batches", "ok"): ("gds_nvidia_fs_batches_ok_total", None, 1),
    ("batches", "err"): ("gds_nvidia_fs_errors_total", {"counter": "batch"}, 1),
    ("batches", "avg_submit_latency_usec"): ("gds_nvidia_fs_batch_submit_latency_average_seconds", None, 1e-6),
    ("sparse_reads", "n"): ("gds_nvidia_fs_sparse_reads_total", None, 1),
    ("sparse_reads", "io"): ("gds_nvidia_fs_sparse_read_ios_total", None, 1),
    ("sparse_reads", "holes"): ("gds_nvidia_fs_sparse_read_holes_total", None, 1),
    ("sparse_reads", "pages"): ("gds_nvidia_fs_sparse_read_pages_total", None, 1),
    ("mmap", "n"): ("gds_nvidia_fs_mmaps_total", None, 1),
    ("mmap", "ok"): ("gds_nvidia_fs_mmaps_ok_total", None, 1),
    ("mmap", "err"): ("gds_nvidia_fs_errors_total", {"counter": "mmap"}, 1),
    ("mmap", "munmap"): ("gds_nvidia_fs_munmaps_total", None, 1),
    ("bar1_map", "n"): ("gds_nvidia_fs_bar1_maps_total", None, 1),
    ("bar1_map", "ok"): ("gds_nvidia_fs_bar1_maps_ok_total", None, 1),
    ("bar1_map", "err"): ("gds_nvidia_fs_errors_total", {"counter": "bar1_map"}, 1),
    ("bar1_map", "free"): ("gds_nvidia_fs_bar1_frees_total", None, 1),
    ("bar1_map", "callbacks"): ("gds_nvidia_fs_bar1_callbacks_total", None, 1),
    ("bar1_map", "active"): ("gds_nvidia_fs_bar1_maps_active", None, 1),
    ("bar1_map", "delay_frees"): ("gds_nvidia_fs_bar1_delayed_frees_total", None, 1),
    ("error", "cpu_gpu_pages"): ("gds_nvidia_fs_errors_total", {"counter": "cpu_gpu_pages"}, 1),
    ("error", "sg_ext"): ("gds_nvidia_fs_errors_total", {"counter": "sg_ext"}, 1),
    ("error", "dma_map"): ("gds_nvidia_fs_errors_total", {"counter": "dma_map"}, 1),
    ("error", "dma_ref"): ("gds_nvidia_fs_errors_total", {"counter": "dma_ref"}, 1),
    ("ops", "read"): ("gds_nvidia_fs_ops_in_flight", {"op": "read"}, 1),
    ("ops", "write"): ("gds_nvidia_fs_ops_in_flight", {"op": "write"}, 1),
    ("ops", "batchio"): ("gds_nvidia_fs_ops_in_flight", {"op": "batch"}, 1),
}
SCALARS = {
    "active_shadow_buffer_mib": ("gds_nvidia_fs_shadow_buffer_bytes", MIB),
    "active_shadow_buffer_mb": ("gds_nvidia_fs_shadow_buffer_bytes", MIB),
    "active_process": ("gds_nvidia_fs_processes", 1),
}
GPU_FIELDS = {
    "registered_mib": ("gds_nvidia_fs_gpu_registered_bytes", MIB),
    "cache_mib": ("gds_nvidia_fs_gpu_cache_bytes", MIB),
    "max_pinned_mib": ("gds_nvidia_fs_gpu_max_pinned_bytes", MIB),
    "cross_root_port": ("gds_nvidia_fs_gpu_cross_root_port_ratio", 0.01),
}

_GPU_LINE = re.compile(r"^GPU\s+(\S+)\s+uuid:(\S+)\s*:\s*(.*)$")
_PAIR = re.compile(r"([^\s=]+)=(\S+)")
_HEADERS = (
    ("gds_version", re.compile(r"^GDS Version:\s*(\S+)")),
    ("stats_version", re.compile(r"^NVFS statistics\s*\(ver:\s*([^)\s]+)\s*\)")),
    ("driver_version", re.compile(r"^NVFS Driver\s*\(version:\s*([^)\s]+)\s*\)")),
)
_IO_STATS = re.compile(r"^IO stats:\s*(\w+)")


def _key(label):
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def _number(text):
    try:
        return float(text) if "." in text else int(text)
    except ValueError:
        return None


def sample(name, value, labels=None):
    return (name, tuple(sorted((labels or {}).items())), value)


def parse_stats(text):
    """/proc/driver/nvidia-fs/stats -> (header dict, samples). Pure.

    The format of nvidia-fs 2.17 to 2.28 (nvfs-stat.c, identical across them): a header, then
    "Label : key=value ..." lines - "Reads" and "Writes" twice with rw_stats_enabled=1 (counts,
    then bandwidth and latency), once with only their error counters when it is 0 - and one
    "GPU <pci> uuid:<uuid> : ..." line per GPU. The 1.x format (readMB=, no "IO stats:") parses too.
    """
    header, samples = {}, []
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        matched = False
        for field, pattern in _HEADERS:
            m = pattern.match(line)
            if m:
                header[field], matched = m.group(1), True
        if matched:
            continue
        m = _IO_STATS.match(line)
        if m:
            header["rw_stats_enabled"] = m.group(1).lower() == "enabled"
            continue
        m = _GPU_LINE.match(line)
        if m:
            gpu = {"pci_bus_id": m.group(1), "uuid": m.group(2)}
            for key, value in _PAIR.findall(m.group(3)):
                field, number = GPU_FIELDS.get(_key(key)), _number(value)
                if field and number is not None:
                    samples.append(sample(field[0], number * field[1], gpu))
            continue
        label, sep, rest = line.partition(":")
        if not sep:
            continue
        section = _key(label)
        pairs = _PAIR.findall(rest)
        if not pairs:
            scalar, number = SCALARS.get(section), _number(rest.strip())
            if scalar and number is not None:
                samples.append(sample(scalar[0], number * scalar[1]))
            continue
        for key, value in pairs:
            field, number = STATS_FIELDS.get((section, _key(key))), _number(value)
            if field and number is not None:
                samples.append(sample(field[0], number * field[2], field[1]))
    if "rw_stats_enabled" not in header and samples:
        # the 1.x format has no "IO stats:" line: counts are printed only when they are on
        header["rw_stats_enabled"] = any(s[0] == "gds_nvidia_fs_writes_total" for s in samples)
    return header, samples


def parse_version(text):
    """/proc/driver/nvidia-fs/version ("version: 2.26") or /sys/module/nvidia_fs/version -> str or None."""
    m = re.search(r"(?:^|version:)\s*([0-9]+(?:\.[0-9]+)+)", text or "")
    return m.group(1) if m else None


def module_loaded(proc_modules, name="nvidia_fs"):
    """Whether /proc/modules lists the module (first column)."""
    return any(line.split(" ", 1)[0] == name for line in (proc_modules or "").splitlines())


def verdict_samples(record, require_mode=None):
    """The last recorded verdict (gds_verify's record, parsed JSON or None) -> samples. Pure."""
    out = []
    if require_mode:
        out.append(sample("gds_required_mode_rank", MODE_RANK[require_mode], {"mode": require_mode}))
    if not isinstance(record, dict) or record.get("mode") not in MODES:
        out.append(sample("gds_verdict_recorded", 0))
        return out
    mode = record["mode"]
    out.append(sample("gds_verdict_recorded", 1))
    out.extend(sample("gds_verdict_mode", int(m == mode), {"mode": m}) for m in MODES)
    out.append(sample("gds_verdict_mode_rank", MODE_RANK[mode]))
    out.append(sample("gds_verdict_verified", int(record.get("verified") is True)))
    out.append(sample("gds_verdict_proven", int(record.get("proven") is True)))
    for direction in ("write", "read"):
        gbps = record.get("%s_gbps" % direction)
        if isinstance(gbps, (int, float)) and not isinstance(gbps, bool):
            out.append(sample("gds_verdict_%s_bytes_per_second" % direction, gbps * 1e9))
    if isinstance(record.get("time"), (int, float)):
        out.append(sample("gds_verdict_timestamp_seconds", record["time"]))
    return out


def cufile_samples(record, sha256_now):
    """Each cufile.json the verdict validated -> valid, and whether it is still the same file.

    ``sha256_now(path)`` gives the file's sha256 now (None when it is gone). Pure but for it.
    """
    cufile = record.get("cufile") if isinstance(record, dict) else None
    if not isinstance(cufile, dict):
        return []
    out = []
    valid = cufile.get("valid")
    for entry in cufile.get("files") or []:
        if not isinstance(entry, dict) or not entry.get("path"):
            continue
        labels = {"path": str(entry["path"]), "role": str(entry.get("role") or "global")}
        if isinstance(valid, bool):
            out.append(sample("gds_cufile_valid", int(valid), dict(labels, release=str(cufile.get("release") or ""))))
        out.append(sample("gds_cufile_unchanged", int(sha256_now(entry["path"]) == entry.get("sha256")), labels))
    return out


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _format(value):
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def render(samples):
    """Samples -> Prometheus text exposition format, one HELP/TYPE per family, sorted. Pure."""
    families = {}
    for name, labels, value in samples:
        if name not in METRICS:
            raise ValueError("unknown metric %s" % name)
        families.setdefault(name, {})[labels] = value  # a repeated line (old formats) keeps the last
    lines = []
    for name in sorted(families):
        kind, text = METRICS[name]
        lines += ["# HELP %s %s" % (name, text), "# TYPE %s %s" % (name, kind)]
        for labels, value in sorted(families[name].items()):
            shown = "{%s}" % ",".join('%s="%s"' % (k, _escape(v)) for k, v in labels) if labels else ""
            lines.append("%s%s %s" % (name, shown, _format(value)))
    return "\n".join(lines) + "\n"


def _read(path, limit=1 << 20):
    """A small text file, or None when it is absent (any other error raises)."""
    try:
        with open(path, "rb") as f:
            return f.read(limit).decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def _sha256(path):
    """As gds_facts hashes a cufile.json: its first 256 KiB and one byte. None unless it is a
    regular file: the overlay may sit where a local user can put a FIFO, which must not block us."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return None
        try:
            return hashlib.sha256(f.read(256 * 1024 + 1)).hexdigest()
        except OSError:
            return None


def collect(proc_root="/", record_path=None, require_mode=None):
    """Read the host -> the samples to write (with gds_collector_success)."""
    ok = True
    samples = []

    def proc(*parts):
        return os.path.join(proc_root, *parts)

    try:
        loaded = module_loaded(_read(proc("proc", "modules")) or "")
        samples.append(sample("gds_nvidia_fs_loaded", int(loaded)))
        if loaded:
            version = parse_version(_read(proc("proc", "driver", "nvidia-fs", "version"))
                                    or _read(proc("sys", "module", "nvidia_fs", "version")))
            header, stats = parse_stats(_read(proc("proc", "driver", "nvidia-fs", "stats")) or "")
            info = {"version": version or header.get("driver_version") or "", "gds_version": header.get("gds_version", "")}
            samples.append(sample("gds_nvidia_fs_info", 1, info))
            if "rw_stats_enabled" in header:
                samples.append(sample("gds_nvidia_fs_rw_stats_enabled", int(header["rw_stats_enabled"])))
            samples.extend(stats)
    except OSError:
        ok = False
    record = None
    if record_path:
        try:
            text = _read(record_path)
            record = json.loads(text) if text else None
        except (OSError, ValueError):
            ok = False
    samples.extend(verdict_samples(record, require_mode))
    samples.extend(cufile_samples(record, _sha256))
    samples.append(sample("gds_collector_success", int(ok)))
    return samples


def write_atomic(directory, name, text):
    """Write ``directory/name`` through a temporary file in the same directory and a rename."""
    fd, tmp = tempfile.mkstemp(prefix=".%s." % name, dir=directory)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, os.path.join(directory, name))
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--textfile-dir", default="/var/lib/prometheus/node-exporter",
                        help="node_exporter's --collector.textfile.directory")
    parser.add_argument("--output-name", default="gpudirect_storage.prom")
    parser.add_argument("--record", default="/var/lib/gpudirect-storage/last_verdict.json",
                        help="the verdict gds_verify records on the host")
    parser.add_argument("--require-mode", choices=("gds", "p2pdma", "compat"),
                        help="the weakest mode this host must reach (gds_required_mode_rank)")
    parser.add_argument("--proc-root", default="/", help="where /proc and /sys are (tests: a fake tree)")
    parser.add_argument("--stdout", action="store_true", help="print the metrics instead of writing the file")
    args = parser.parse_args(argv)
    text = render(collect(args.proc_root, args.record, args.require_mode))
    if args.stdout:
        sys.stdout.write(text)
    else:
        write_atomic(args.textfile_dir, args.output_name, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
