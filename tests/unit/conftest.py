"""Unit-test configuration shared by plain pytest and ansible-test units (which runs pytest
with its own config file and --strict-markers, so markers are registered here)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "dkms: a real `dkms build` against Debian's kernel headers "
                                       "(skips when dkms or headers are missing)")
