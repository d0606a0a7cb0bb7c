"""Verify the nvidia_fs role on the lab hosts (testinfra over SSH): packages, files under /etc,
and the modprobe calls the shim recorded (one load, with the parameters; none from check mode
or the idempotence run)."""

NVFS = {"nvfs-match": "2.28.2-1", "nvfs-pinned": "2.26.6-1"}


def _nvfs(host):
    return NVFS[host.backend.get_hostname()]


def test_nvidia_fs_packages_at_the_expected_version(host):
    for name in ("nvidia-fs-dkms", "nvidia-fs"):
        pkg = host.package(name)
        assert pkg.is_installed and pkg.version == _nvfs(host), name


def test_gds_user_space(host):
    assert host.package("libcufile-12-8").version == "1.13.1.3-1"
    assert host.package("gds-tools-12-8").version == "1.13.1.3-1"
    assert host.package("nvidia-gds").is_installed and host.package("nvidia-gds-12-8").is_installed


def test_persisted_under_etc(host):
    load = host.file("/etc/modules-load.d/nvidia-fs.conf")
    assert load.exists and load.mode == 0o644
    assert "nvidia-fs" in [ln.strip() for ln in load.content_string.splitlines() if not ln.startswith("#")]
    opts = host.file("/etc/modprobe.d/nvidia-fs.conf")
    assert opts.exists and "options nvidia_fs rw_stats_enabled=1\n" in opts.content_string


def test_modprobe_called_once_with_parameters(host):
    calls = host.file("/var/log/gds-shims/modprobe.calls").content_string.splitlines()
    assert calls == ["modprobe nvidia_fs rw_stats_enabled=1"]


def test_module_shown_loaded_in_the_fake_tree(host):
    assert "nvidia_fs 323584" in host.file("/srv/gds-fake/proc/modules").content_string
    assert host.file("/srv/gds-fake/sys/module/nvidia_fs/version").content_string.strip() == _nvfs(host).split("-")[0]
    assert host.file("/srv/gds-fake/sys/module/nvidia_fs/parameters/rw_stats_enabled").content_string.strip() == "1"


def test_no_dkms_rebuild_was_needed(host):
    calls = host.file("/var/log/gds-shims/dkms.calls").content_string.splitlines()
    assert calls and all(c.startswith("dkms status") for c in calls)


def test_source_is_signed(host):
    src = host.file("/etc/apt/sources.list.d/gds-test.sources")
    assert "Signed-By: /etc/apt/keyrings/gds-test.asc\n" in src.content_string
    assert "trusted" not in src.content_string.lower()
