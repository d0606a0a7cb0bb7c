# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The real probe child (ctypes sequence, threads, verification, error paths) against C
stand-ins of libcuda/libcufile/libnvidia-ml compiled here (tests/fixtures/cuda_standin).
This drives the code in CI; it does not replace the run on the H100 host (tests/gpu/)."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_child as child
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_facts import gather
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostpaths import HostPaths
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner
from ansible_collections.gpudirect.storage.tests.fixtures.cuda_standin import standin

pytestmark = pytest.mark.skipif(standin.gcc() is None, reason="needs a C compiler for the libcufile stand-in")
STATS = os.path.join(os.path.dirname(standin.HERE), "gds", "nvfs-stats-2.24-io-stats-enabled.head12.txt")


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    return standin.build(str(tmp_path_factory.mktemp("standin")))


def params(path, **kw):
    base = {"probe": True, "probe_path": [path], "probe_size_mb": 8, "probe_threads": 4, "probe_device": 0,
            "probe_timeout": 30, "cufile_lib": None, "cufile_env_path_json": None, "gather_cuda": True}
    base.update(kw)
    return base


def run(tmp_path, libs, mode=None, host_kw=None, cuda=None, extra_env=None, **kw):
    probe_dir = tmp_path / "data"
    probe_dir.mkdir(exist_ok=True)
    host, proc = standin.fake_host(str(tmp_path), **(host_kw or {}))
    env = dict(os.environ, LD_LIBRARY_PATH=libs)
    for key in [k for k in env if k.startswith("GDS_STANDIN_")]:
        del env[key]
    if mode:
        env["GDS_STANDIN_CUFILE"] = mode
    if cuda:
        env["GDS_STANDIN_CUDA"] = cuda
    env.update(extra_env or {})
    runner = Runner(standin.SubprocessModule(env))
    facts = gather(params(str(probe_dir), **kw), HostPaths(root=host, proc_root=proc), runner, environ=env,
                   tmp_root=str(tmp_path), python=sys.executable)
    return facts, probe_dir


@pytest.mark.parametrize("threads", [0, 1, 4])
def test_compat_write_read_verified(tmp_path, libs, threads):
    facts, probe_dir = run(tmp_path, libs, probe_threads=threads)
    assert facts["mode"] == "compat", facts["reason"]
    assert facts["reasons"][0].startswith("nvidia_fs kernel module not loaded")
    assert "cufile.log: NOTICE running in compatible mode" in facts["reasons"]
    path = facts["probe"]["paths"][0]
    assert path["verify"] == {"ok": True, "verified_bytes": 8 << 20}
    assert path["removed"] is True and os.listdir(str(probe_dir)) == []
    assert path["write_gbps"] > 0 and path["read_gbps"] > 0
    assert facts["verified"] is True
    assert facts["gpus"][0]["name"] == "NVIDIA H100 80GB HBM3" and facts["gpus"][0]["bar1_total_mib"] == 131072
    assert facts["nvidia"]["kernel_module_flavor"] == "open"
    assert facts["versions"]["nvidia_driver"] == "580.159.04" and facts["versions"]["cuda_driver"] == "13.0"
    assert facts["probe"]["cufile"]["params"]["allow_compat_mode"] is True
    assert facts["throughput"]["size_mb"] == 8


def test_handle_not_registered_quotes_cufile_log(tmp_path, libs):
    facts, probe_dir = run(tmp_path, libs, mode="handle_not_registered")
    assert facts["mode"] == "failed"
    assert facts["reasons"][0] == "cuFileHandleRegister failed: CU_FILE_HANDLE_NOT_REGISTERED (5027) - libcufile " \
                                  "could not classify the file's block device (see the cufile.log lines)"
    assert "cufile.log: ERROR udev property not found: ID_FS_USAGE vda" in facts["reasons"]
    assert any(r.startswith("cufile.log: ERROR unable to get volume attributes for fd") for r in facts["reasons"])
    assert os.listdir(str(probe_dir)) == []  # the file is deleted on failure too


# first: reasons[0], or its start where it ends in "..."; listed: other reasons; said: words in the reason
@pytest.mark.parametrize("kw, mode, first, listed, said, probe", [
    ({"mode": "config_error"}, "failed", "cuFileDriverOpen failed: -22 EINVAL...",
     ["libcufile printed: error reading config properties.max_direct_io_size_kb"], [], {"rc": 0}),
    ({"mode": "abort"}, "failed", "probe child killed by SIGABRT during cuFileDriverOpen",
     ["libcufile printed: error reading config logging"], ["Json::LogicError"],
     {"signal": "SIGABRT", "last_step": "cuFileDriverOpen"}),
    ({"cuda": "nodevice"}, "unavailable", "no usable NVIDIA GPU: cuInit failed: CUDA_ERROR_NO_DEVICE (100)", [], [], {}),
    ({"cuda": "hang", "probe_timeout": 2}, "failed", "probe timed out after 2 s during cuInit", [], [], {"timed_out": True}),
    ({"mode": "corrupt"}, "failed", "data read back differs at offset 1048576...", [], [], {}),
    ({"mode": "write_error"}, "failed", "cuFileWrite failed at offset...", [], ["EIO (Input/output error)"], {}),
    ({"mode": "p2pdma"}, "p2pdma", "...", [], [], {}),
])
def test_each_probe_outcome_is_named(tmp_path, libs, kw, mode, first, listed, said, probe):
    facts, _dir = run(tmp_path, libs, **kw)
    assert facts["mode"] == mode, facts["reason"]
    head = facts["reasons"][0]
    assert head.startswith(first[:-3]) if first.endswith("...") else head == first
    assert set(listed) <= set(facts["reasons"]) and all(w in facts["reason"] for w in said)
    assert dict((k, facts["probe"][k]) for k in probe) == probe
    assert facts["verified"] is (mode not in ("failed", "unavailable"))


def test_gds_proven_by_nvidia_fs_counters(tmp_path, libs):
    with open(STATS) as f:
        stats = f.read().replace("Reads   : n=1048576 ok=1048576", "Reads   : n=100 ok=100").replace(
            "Writes  : n=0 ok=0", "Writes  : n=100 ok=100")
    host_kw = {"nvfs": True, "nvfs_stats": stats}
    stats_path = os.path.join(str(tmp_path), "proc-root", "proc", "driver", "nvidia-fs", "stats")
    facts, _dir = run(tmp_path, libs, mode="nvfs", host_kw=host_kw, extra_env={"GDS_STANDIN_NVFS_STATS": stats_path})
    assert facts["mode"] == "gds", facts["reason"]
    assert facts["proven"] is True
    # the untimed 1 MiB warm-up write, then 8 MiB = one 16 MiB-or-less chunk
    assert facts["reason"].startswith("nvidia-fs Writes ok +2,")
    assert facts["nvidia_fs"]["loaded"] is True and facts["versions"]["nvidia_fs"] == "2.26"


def test_probe_source_is_the_module_file(monkeypatch):
    with open(child._gds_probe.__file__) as f:
        text = f.read()
    assert child.module_source(child._gds_probe) == text

    class BytesLoader(object):  # what Ansible's collection loader returns
        def get_source(self, name):
            return text.encode("utf-8")

    monkeypatch.setattr(child._gds_probe, "__loader__", BytesLoader())
    assert child.module_source(child._gds_probe) == text
    assert "class Probe(Transfers):" in child.probe_source()  # the joined program takes it from the loader too


def test_probe_program_is_its_parts_joined_without_their_imports():
    src = child.probe_source()
    assert src.startswith("from __future__ import annotations\n")
    lines = src.splitlines()
    assert [ln for ln in lines if ln.startswith("from __future__")] == ["from __future__ import annotations"]
    assert not [ln for ln in lines if ln.lstrip().startswith(("from ansible_collections", "import ansible_collections"))]
    for part in child.PROBE_PARTS:
        assert "# ---- %s\n" % part.__name__.rsplit(".", 1)[-1] in src
    assert src.rstrip().endswith("main(sys.argv[1:])")  # probe.py (main) is the last part
    compile(src, "<probe>", "exec")
    assert len(src.encode("utf-8")) < 100 * 1024  # one argv string may hold 128 KiB


def test_parse_output_without_result():
    result, step, problem, version = child.parse_output("hello\n@@GDS_PROBE@@ version 1200\n@@GDS_PROBE@@ step cuInit\n")
    assert result is None and step == "cuInit" and problem == "no result line" and version == 1200
    assert child.signal_name(-6) == "SIGABRT" and child.signal_name(0) is None


def test_no_libnvidia_ml_on_the_path_spawns_no_child_and_says_why(tmp_path, libs, monkeypatch):
    empty = tmp_path / "nolibs"
    empty.mkdir()
    calls = []
    real = child.run_child
    monkeypatch.setattr(child, "run_child", lambda *a, **k: calls.append(a) or real(*a, **k))
    facts, dummy = run(tmp_path, str(empty), probe=False, extra_env={"LD_LIBRARY_PATH": str(empty)})
    assert calls == []
    assert facts["nvidia"]["nvml_ok"] is False
    assert facts["nvidia"]["nvml_error"] == "libnvidia-ml.so.1 not found in the library path"
    assert facts["probe"]["ran"] is False


def test_storage_speed_and_ratio_of_the_same_file_in_the_same_run(tmp_path, libs):
    facts, probe_dir = run(tmp_path, libs, probe_threads=0)
    path = facts["probe"]["paths"][0]
    assert path["host_direct"]["write_gbps"] > 0 and path["host_direct"]["read_gbps"] > 0
    assert path["host_direct"]["read_plan"] == "1 call"  # as the probe split it (16 MiB pieces)
    assert path["storage_ratio"]["write"] == round(path["write_gbps"] / path["host_direct"]["write_gbps"], 3)
    t = facts["throughput"]
    assert t["storage_read_gbps"] == path["host_direct"]["read_gbps"] and t["read_ratio"] == path["storage_ratio"]["read"]
    assert t["tuned"] is None and "tuned" not in path  # the throughput mode is opt-in
    assert os.listdir(str(probe_dir)) == []


def test_throughput_mode_measures_the_plans_and_verifies_the_chosen_one(tmp_path, libs):
    facts, probe_dir = run(tmp_path, libs, probe_throughput=True, probe_threads=0)
    assert facts["mode"] == "compat" and facts["verified"] is True
    tuned = facts["probe"]["paths"][0]["tuned"]
    assert tuned.get("error") is None, tuned.get("error")
    labels = [c["label"] for c in tuned["candidates"]]
    assert labels[0] == "1 call" and all(c.get("write_gbps") and c.get("read_gbps") for c in tuned["candidates"])
    assert tuned["write_label"] in labels and tuned["read_label"] in labels
    assert len(tuned["read_runs"]) == 3 and tuned["read_gbps"] == sorted(tuned["read_runs"])[1]
    assert tuned["verify"] == {"ok": True, "verified_bytes": 8 << 20}
    summary = facts["throughput"]["tuned"]
    assert summary["verified"] is True and summary["read_plan"] == tuned["read_label"]
    assert summary["storage_read_gbps"] == tuned["host_direct"]["read_gbps"]
    assert facts["probe"]["throughput_mode"] is True and os.listdir(str(probe_dir)) == []


def test_throughput_mode_every_plan_of_a_16_cpu_host(tmp_path, libs):
    """The whole grid (threads up to 16, per-thread handles, unregistered buffers) through the
    child, as on the H100 host (the ``cpus`` argument stands in for its 16 cores)."""
    from ansible_collections.gpudirect.storage.plugins.module_utils._gds import probe_io
    probe_dir = tmp_path / "data"
    probe_dir.mkdir()
    env = dict(os.environ, LD_LIBRARY_PATH=libs)
    env.pop("GDS_STANDIN_CUFILE", None)
    args = {"cuda_lib": os.path.join(libs, "libcuda.so.1"), "cufile_lib": os.path.join(libs, "libcufile.so.0"),
            "probe": True, "paths": [str(probe_dir)], "size": 32 << 20, "threads": 0, "chunk": 16 << 20,
            "timeout": 60, "throughput": True, "cpus": 16}
    out = child.run_child(Runner(standin.SubprocessModule(env)), args, str(tmp_path), python=sys.executable)
    entry = out["result"]["probe"]["paths"][0]
    tuned = entry["tuned"]
    assert tuned.get("error") is None, tuned.get("error")
    assert [c["plan"] for c in tuned["candidates"]] == probe_io.candidate_plans(32 << 20, 16)
    assert not [c for c in tuned["candidates"] if c.get("error")]
    assert [len(tuned[d + "_finalists"]) for d in ("write", "read")] == [3, 3]
    assert tuned["verify"]["ok"] is True and entry["removed"] is True and os.listdir(str(probe_dir)) == []


def test_a_probe_path_that_does_not_exist_says_so_first(tmp_path, libs):
    missing = str(tmp_path / "no-such-dir")
    host, proc = standin.fake_host(str(tmp_path))
    env = dict(os.environ, LD_LIBRARY_PATH=libs)
    facts = gather(params(missing), HostPaths(root=host, proc_root=proc), Runner(standin.SubprocessModule(env)),
                   environ=env, tmp_root=str(tmp_path), python=sys.executable)
    assert facts["mode"] == "failed"
    assert facts["reasons"] == ["preflight failed: probe_path %s does not exist or is not a directory" % missing]
    assert not os.path.exists(missing)


def test_the_loaded_librarys_version_survives_an_abort_of_the_probe(tmp_path, libs):
    """libcufile 1.20 aborts on some configs in cuFileDriverOpen: the version it answered before
    is what the facts' release is decided from (a wheel's libcufile.so.0 has none in its name)."""
    facts, _dir = run(tmp_path, libs, mode="abort", extra_env={"GDS_STANDIN_CUFILE_VERSION": "1200"})
    assert facts["probe"]["signal"] == "SIGABRT" and facts["libcufile"]["version"] is None
    assert facts["libcufile"]["api_version"] == 1200


def test_a_probe_directory_other_users_can_write_without_the_sticky_bit_is_refused(tmp_path, libs):
    probe_dir = tmp_path / "data"
    probe_dir.mkdir()
    probe_dir.chmod(0o777)
    facts, _dir = run(tmp_path, libs)
    assert facts["mode"] == "failed" and facts["verified"] is False
    assert facts["reasons"][0] == (
        "preflight failed: probe_path %s (mode 0777) can be written by other users and has no sticky bit: another "
        "user could replace the probe's file; probe a directory only root can write, or set its sticky bit" % probe_dir)
    assert os.listdir(str(probe_dir)) == []


def test_the_probe_file_lives_in_a_private_directory_and_is_unlinked_while_in_use(tmp_path, libs):
    facts, probe_dir = run(tmp_path, libs, probe_throughput=True, probe_threads=0)
    entry = facts["probe"]["paths"][0]
    assert facts["verified"] is True and entry["tuned"].get("error") is None
    private, name = os.path.split(entry["file"])
    assert os.path.dirname(private) == str(probe_dir) and os.path.basename(private).startswith(
        ".gds_facts_probe.%d." % os.getpid())
    assert entry["unlinked_after"] == "cuFileHandleRegister" and entry["removed"] is True
    assert os.listdir(str(probe_dir)) == [] and facts["probe"]["left_behind"] == []
