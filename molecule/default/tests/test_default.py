"""Verify the package_repo role on the lab hosts (testinfra over SSH)."""


def test_source_is_signed_by_the_test_key(host):
    src = host.file("/etc/apt/sources.list.d/gds-test.sources")
    assert src.exists
    assert src.user == "root"
    assert "Signed-By:" in src.content_string
    assert "BEGIN PGP PUBLIC KEY BLOCK" in src.content_string
    assert "trusted" not in src.content_string.lower()


def test_pinned_version_installed(host):
    pkg = host.package("gds-lab-probe")
    assert pkg.is_installed
    assert pkg.version == "1.0-1"


def test_package_runs_and_postinst_ran(host):
    out = host.check_output("gds-lab-probe")
    assert out.startswith("gds-lab-probe 1.0 on ")
    assert host.file("/var/lib/gds-lab-probe/installed-at").exists


def test_repository_signature_verifies(host):
    # apt refuses an unsigned or wrongly signed repository; a clean update proves the check ran.
    res = host.run("apt-get update -o APT::Update::Error-Mode=any")
    assert res.rc == 0, res.stderr
    assert "NO_PUBKEY" not in res.stderr and "not signed" not in res.stderr
    policy = host.check_output("apt-cache policy gds-lab-probe")
    assert "1.1-1" in policy and "Installed: 1.0-1" in policy
