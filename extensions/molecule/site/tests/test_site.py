"""What site.yml must leave on every lab host (testinfra over SSH)."""

import json


def test_rdma_stack_and_nvidia_fs_packages_installed(host):
    for name in ("doca-ofed", "nvidia-fs-dkms", "nvidia-fs", "libcufile-13-0", "gds-tools-13-0"):
        assert host.package(name).is_installed, name


def test_repository_sources_are_signed(host):
    out = host.check_output("grep -l Signed-By /etc/apt/sources.list.d/*.sources")
    assert "gds-test" in out
    assert host.run("grep -ril 'trusted=yes\\|Trusted: yes' /etc/apt/sources.list.d").rc == 1


def test_nvidia_fs_loaded_with_params_and_persisted(host):
    calls = host.file("/var/log/gds-shims/modprobe.calls").content_string
    assert "modprobe nvidia_fs rw_stats_enabled=1" in calls or "modprobe nvidia-fs rw_stats_enabled=1" in calls
    loaded = [line.split()[0] for line in host.file("/srv/gds-fake/proc/modules").content_string.splitlines()]
    assert "nvidia_fs" in loaded
    assert host.file("/srv/gds-fake/proc/driver/nvidia-fs/version").content_string.startswith("version: ")
    load = host.file("/etc/modules-load.d/nvidia-fs.conf")
    assert load.exists and load.user == "root" and load.mode == 0o644
    opts = host.file("/etc/modprobe.d/nvidia-fs.conf")
    assert opts.exists and "rw_stats_enabled=1" in opts.content_string


def test_cufile_json_written_and_valid(host):
    f = host.file("/etc/cufile.json")
    assert f.exists and f.user == "root" and f.group == "root" and f.mode == 0o644
    doc = json.loads(f.content_string)
    assert isinstance(doc.get("properties"), dict)
    assert isinstance(doc.get("logging"), dict)


def test_gds_verdict_is_honest_on_a_gpu_less_host(host):
    # gds_facts on the host, as site.yml's verify stage ran it: no GPU -> unavailable
    res = host.ansible("gpudirect.storage.gds_facts", "probe=false", check=False,
                       become=False)
    gds = res["ansible_facts"]["gds"]
    assert gds["mode"] == "unavailable"
    assert gds["reason"]
