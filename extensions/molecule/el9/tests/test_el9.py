"""Verify the mofed and nvidia_fs roles on the EL 9 lab hosts (testinfra over SSH): rpm packages
at the expected versions from the signed repository, the .repo file, the persisted module
configuration, and the shims' record of modprobe and dkms (one load; none from check mode or
the idempotence run)."""

EXPECTED = {
    "el9-doca": {"ofed": ("doca-ofed", "3.2.1", "044000_25.10.el9", "OFED-internal-25.10-1.7.1:", "mlnx-ofed-all"),
                 "nvfs": "2.28.2"},
    "el9-mlnx": {"ofed": ("mlnx-ofed-all", "24.10", "4.1.4.0", "MLNX_OFED_LINUX-24.10-4.1.4.0:", "doca-ofed"),
                 "nvfs": "2.26.6"},
}


def _expected(host):
    return EXPECTED[host.backend.get_hostname()]


def test_the_host_is_el9_with_dnf_and_rpm_only(host):
    assert host.system_info.distribution == "rocky" and host.system_info.release.startswith("9.")
    assert host.run("rpm -q --whatprovides 'system-release(releasever)'").rc == 0
    assert host.run("dnf --version").rc == 0
    for cmd in ("apt-get", "dpkg-query"):
        assert not host.exists(cmd), cmd


def test_rdma_stack_pinned_and_never_both(host):
    name, version, release, info, other = _expected(host)["ofed"]
    pkg = host.package(name)
    assert pkg.is_installed and pkg.version == version and pkg.release == release
    assert not host.package(other).is_installed
    assert host.check_output("ofed_info -s") == info


def test_nvidia_fs_and_gds_user_space_from_rpms(host):
    for name in ("nvidia-fs-dkms", "nvidia-fs"):
        pkg = host.package(name)
        assert pkg.is_installed and pkg.version == _expected(host)["nvfs"], name
    assert host.package("libcufile-12-8").version == "1.13.1.3"
    for name in ("gds-tools-12-8", "nvidia-gds", "nvidia-gds-12-8"):
        assert host.package(name).is_installed, name


def test_packages_are_signed_by_the_test_key(host):
    res = host.run("rpm -q --qf '%{RSAHEADER:pgpsig}\\n' nvidia-fs-dkms")
    assert res.rc == 0 and "Key ID" in res.stdout, res.stdout
    assert host.run("rpm -q gpg-pubkey").rc == 0  # dnf imported the repository's key into the rpm database


def test_repo_file_is_signed_and_offline(host):
    repo = host.file("/etc/yum.repos.d/gds-test.repo")
    assert repo.exists
    text = repo.content_string
    assert "baseurl=file:///srv/gds-repo\n" in text and "gpgcheck=1\n" in text
    assert "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gds-test\n" in text
    assert "gpgcheck=0" not in text


def test_persisted_under_etc(host):
    load = host.file("/etc/modules-load.d/nvidia-fs.conf")
    assert load.exists and load.mode == 0o644
    assert "nvidia-fs" in [ln.strip() for ln in load.content_string.splitlines() if not ln.startswith("#")]
    opts = host.file("/etc/modprobe.d/nvidia-fs.conf")
    assert opts.exists and "options nvidia_fs rw_stats_enabled=1\n" in opts.content_string


def test_modprobe_called_once_and_module_shown_loaded(host):
    calls = host.file("/var/log/gds-shims/modprobe.calls").content_string.splitlines()
    assert calls == ["modprobe nvidia_fs rw_stats_enabled=1"]
    assert "nvidia_fs 323584" in host.file("/srv/gds-fake/proc/modules").content_string
    assert host.file("/srv/gds-fake/sys/module/nvidia_fs/version").content_string.strip() == _expected(host)["nvfs"]


def test_no_dkms_rebuild_was_needed(host):
    calls = host.file("/var/log/gds-shims/dkms.calls").content_string.splitlines()
    assert calls and all(c.startswith("dkms status") for c in calls)
