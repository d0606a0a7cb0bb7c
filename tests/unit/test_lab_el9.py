# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""labctl's --os (which flavour each lab host gets) and the rpm spelling of the test packages
(tests/fixtures/rpmrepo) - the pure parts; the hosts themselves run in tests/system/test_el9.py
and molecule/el9."""

from __future__ import annotations

import os
import sys

import pytest
import yaml

from ansible_collections.gpudirect.storage.tests.unit.scripts import ROOT, load_script


@pytest.fixture(scope="module")
def labctl():
    sys.path.insert(0, os.path.join(ROOT, "lab"))
    try:
        return load_script("labctl", "lab", "labctl")
    finally:
        sys.path.remove(os.path.join(ROOT, "lab"))


@pytest.fixture(scope="module")
def rpmrepo():
    return load_script("rpmrepo_build", "tests", "fixtures", "rpmrepo", "build.py")


def test_os_list_cycles_over_the_hosts(labctl):
    assert labctl.host_oses("el9", 2) == ["el9", "el9"]
    assert labctl.host_oses("debian12,el9", 3) == ["debian12", "el9", "debian12"]
    assert labctl.host_oses(None, 2) == ["debian12", "debian12"]


def test_unknown_os_is_refused_naming_the_choices(labctl):
    with pytest.raises(SystemExit) as exc:
        labctl.host_oses("el8", 1)
    assert "el8" in str(exc.value) and "debian12, el9" in str(exc.value)


def test_el9_image_is_a_separate_cache_entry(labctl):
    assert labctl.image_dir("el9") != labctl.image_dir("debian12")
    assert os.path.basename(labctl.image_dir("el9")).startswith("base-el9-")


def test_debian_relations_become_rpm_relations(rpmrepo):
    assert rpmrepo.rpm_relation("nvidia-fs-dkms (= 2.26.6-1)") == "nvidia-fs-dkms = 2.26.6-1"
    assert rpmrepo.rpm_relation("libcufile-12-8 (>= 1.13.1.3)") == "libcufile-12-8 >= 1.13.1.3"
    assert rpmrepo.rpm_relation("foo (<< 2)") == "foo < 2"
    assert rpmrepo.rpm_relation("mlnx-ofed-all") == "mlnx-ofed-all"


def test_every_test_package_has_an_rpm_version(rpmrepo):
    """rpm's version holds no '-': each spec version splits into version-release, or the package
    names its rpm version (DOCA's 3.2.1-044000-25.10-debian12)."""
    for spec in ("gds-packages.yml", "lab-packages.yml"):
        with open(os.path.join(ROOT, "tests", "fixtures", "aptrepo", spec)) as f:
            for pkg in yaml.safe_load(f)["packages"]:
                text = rpmrepo.spec_text(pkg)
                version = next(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Version: "))
                release = next(line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Release: "))
                assert "-" not in version and "-" not in release, (pkg["name"], version, release)
                if pkg.get("postinst"):
                    assert "\n%post\n" in text, pkg["name"]
