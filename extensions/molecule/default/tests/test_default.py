"""Verify the package_repo role on the lab hosts (testinfra over SSH): Debian hosts use apt, the
EL 9 host (repo-host-el9) dnf."""

import pytest


def _is_el(host):
    return host.backend.get_hostname() == "repo-host-el9"


@pytest.fixture()
def apt_host(host):
    if _is_el(host):
        pytest.skip("the dnf host is verified by the el9 tests below")
    return host


@pytest.fixture()
def el_host(host):
    if not _is_el(host):
        pytest.skip("the apt hosts are verified by the tests above")
    return host


def test_source_is_signed_by_the_test_key(apt_host):
    host = apt_host
    src = host.file("/etc/apt/sources.list.d/gds-test.sources")
    assert src.exists
    assert src.user == "root"
    assert "Signed-By:" in src.content_string
    assert "BEGIN PGP PUBLIC KEY BLOCK" in src.content_string
    assert "trusted" not in src.content_string.lower()


def test_pinned_version_installed(host):
    pkg = host.package("gds-lab-probe")
    assert pkg.is_installed
    if _is_el(host):  # rpm: version and release apart
        assert (pkg.version, pkg.release) == ("1.0", "1")
    else:
        assert pkg.version == "1.0-1"


def test_package_runs_and_postinst_ran(host):
    out = host.check_output("gds-lab-probe")
    assert out.startswith("gds-lab-probe 1.0 on ")
    assert host.file("/var/lib/gds-lab-probe/installed-at").exists


def test_repository_signature_verifies(apt_host):
    host = apt_host
    # apt refuses an unsigned or wrongly signed repository; a clean update proves the check ran.
    res = host.run("apt-get update -o APT::Update::Error-Mode=any")
    assert res.rc == 0, res.stderr
    assert "NO_PUBKEY" not in res.stderr and "not signed" not in res.stderr
    policy = host.check_output("apt-cache policy gds-lab-probe")
    assert "1.1-1" in policy and "Installed: 1.0-1" in policy


def test_dnf_repository_checks_packages_and_metadata_with_the_given_key(el_host):
    repo = el_host.file("/etc/yum.repos.d/gds-test.repo")
    assert repo.exists
    text = repo.content_string
    assert "gpgcheck = 1\n" in text and "repo_gpgcheck = 1\n" in text
    assert "gpgkey = file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gds-test\n" in text
    key = el_host.file("/etc/pki/rpm-gpg/RPM-GPG-KEY-gds-test")
    assert key.exists and key.mode == 0o644 and "BEGIN PGP PUBLIC KEY BLOCK" in key.content_string


def test_dnf_metadata_signature_verifies_and_both_versions_are_seen(el_host):
    res = el_host.run("dnf -q --refresh repoquery --qf '%{version}-%{release}' gds-lab-probe")
    assert res.rc == 0, res.stderr
    assert sorted(res.stdout.split()) == ["1.0-1", "1.1-1"]
    assert "gpudirect.storage test archive" in el_host.check_output("rpm -qi gpg-pubkey")
