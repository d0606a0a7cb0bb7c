"""Verify the mofed role on the lab hosts (testinfra over SSH)."""

EXPECTED = {
    "mofed-doca": ("doca-ofed", "3.2.1-044000-25.10-debian12", "OFED-internal-25.10-1.7.1:", "mlnx-ofed-all"),
    "mofed-mlnx": ("mlnx-ofed-all", "24.10-4.1.4.0", "MLNX_OFED_LINUX-24.10-4.1.4.0:", "doca-ofed"),
}


def _expected(host):
    return EXPECTED[host.backend.get_hostname()]


def test_meta_package_pinned(host):
    name, version, _info, _other = _expected(host)
    pkg = host.package(name)
    assert pkg.is_installed and pkg.version == version


def test_never_both_stacks(host):
    _name, _version, _info, other = _expected(host)
    assert not host.package(other).is_installed


def test_ofed_info_reports_the_stack(host):
    _name, _version, info, _other = _expected(host)
    assert host.check_output("ofed_info -s") == info


def test_source_is_signed_and_offline(host):
    src = host.file("/etc/apt/sources.list.d/gds-test.sources")
    assert src.exists
    assert "URIs: file:/srv/gds-repo\n" in src.content_string
    assert "Signed-By: /etc/apt/keyrings/gds-test.asc\n" in src.content_string
    assert "trusted" not in src.content_string.lower()


def test_repository_signature_verifies(host):
    res = host.run("apt-get update -o APT::Update::Error-Mode=any")
    assert res.rc == 0, res.stderr
