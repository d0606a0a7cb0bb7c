"""Unit-test configuration shared by plain pytest and ansible-test units (which runs pytest
with its own config file and --strict-markers, so markers are registered here)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "dkms: a real `dkms build` against Debian's kernel headers "
                                       "(skips when dkms or headers are missing)")


import os  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def lab_marker(tmp_path_factory, monkeypatch):
    """Unit tests run on a test host: the test seams (GPUDIRECT_HOST_ROOT/PROC_ROOT/BIN_DIR) are
    honoured, as on a lab host that carries the lab marker. Tests that prove the seams are off
    on a normal host point LAB_MARKER elsewhere (tests/unit/plugins/module_utils/test__seams.py)."""
    from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostpaths as _hostpaths
    marker = tmp_path_factory.mktemp("lab-marker") / "lab-test-seams"
    marker.write_text("unit tests\n")
    marker.chmod(0o644)
    monkeypatch.setattr(_hostpaths, "LAB_MARKER", str(marker))
    monkeypatch.setattr(_hostpaths, "_MARKER_UID", os.stat(str(marker)).st_uid)
    return marker


@pytest.fixture
def host_libcufile_1_15(monkeypatch):
    """The host's libcufile is CUDA 13.0's 1.15.1 (what cufile_config's ``cufile_version: auto``
    reads); tests of other releases or of a host without libcufile patch it themselves."""
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import cufile_config as _cufile_config
    found = {"path": "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcufile.so.0", "version": "1.15.1"}
    monkeypatch.setattr(_cufile_config, "host_libcufile", lambda paths=None: dict(found))
    return found
