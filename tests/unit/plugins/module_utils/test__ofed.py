# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""_ofed: ``ofed_info -s`` parsing over real captured output, flavour detection from the
package database, and decide() (never mixing MLNX_OFED and DOCA-OFED)."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostparse
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import ofed
from ansible_collections.gpudirect.storage.tests.unit.plugins.module_utils.fixture_files import captured


@pytest.mark.parametrize("fixture,distribution,version,release", [
    ("mlnx-ofed-23.10-1.1.9.0.txt", "MLNX_OFED_LINUX", "23.10-1.1.9.0", "23.10"),
    ("mlnx-ofed-24.10-1.1.4.0.txt", "MLNX_OFED_LINUX", "24.10-1.1.4.0", "24.10"),
    ("mlnx-ofed-24.10-4.1.4.0.constructed.txt", "MLNX_OFED_LINUX", "24.10-4.1.4.0", "24.10"),
    ("doca-2.7-ofed-24.04-0.6.6.txt", "OFED-internal", "24.04-0.6.6", "24.04"),
    ("doca-2.9-ofed-24.10-0.7.0.constructed.txt", "OFED-internal", "24.10-0.7.0", "24.10"),
    ("doca-ofed-25.01-0.6.0.txt", "OFED-internal", "25.01-0.6.0", "25.01"),
    ("doca-3.2.1-ofed-25.10-1.7.1.txt", "OFED-internal", "25.10-1.7.1", "25.10"),
    ("dgx-mlnx-ofed-internal-4.7-3.2.9.txt", "OFED-internal", "4.7-3.2.9", "4.7"),
])
def test_parse_ofed_info_real(fixture, distribution, version, release):
    info = hostparse.parse_ofed_info(captured("ofed_info/" + fixture))
    assert info["distribution"] == distribution and info["version"] == version
    assert ofed.ofed_release(info["version"]) == release


@pytest.mark.parametrize("text", ["", "ofed_info: command not found\n", "garbage\n"])
def test_parse_ofed_info_nothing(text):
    assert hostparse.parse_ofed_info(text) is None


def _info(name):
    return hostparse.parse_ofed_info(captured("ofed_info/" + name))


def test_detect_doca_from_package_db():
    # Package versions named like the DOCA-Host repository's (constructed).
    inst = {"doca-ofed": "3.2.1-044000-25.10-ubuntu2404", "mlnx-ofed-kernel-dkms": "25.10.OFED.25.10.1.7.1.1",
            "rdma-core": "2507mlnx58-1.2507097"}
    cur = ofed.detect(inst, _info("doca-3.2.1-ofed-25.10-1.7.1.txt"))
    assert cur["family"] == "doca" and cur["profiles"] == ["doca-ofed"] and cur["version"] == "25.10-1.7.1"


def test_detect_mlnx_from_ofed_info_only_and_from_meta():
    assert ofed.detect({}, _info("mlnx-ofed-24.10-1.1.4.0.txt"))["family"] == "mlnx"
    # A DGX "OFED-internal" build without DOCA meta packages is MLNX_OFED.
    assert ofed.detect({}, _info("dgx-mlnx-ofed-internal-4.7-3.2.9.txt"))["family"] == "mlnx"
    cur = ofed.detect({"mlnx-ofed-all": "24.10-4.1.4.0"}, None)
    assert cur["family"] == "mlnx" and cur["profiles"] == ["mlnx-ofed"]


def test_detect_inbox_none_and_mixed():
    assert ofed.detect({"rdma-core": "44.0-2"}, None)["family"] == "inbox"
    assert ofed.detect({"rdma-core": "44.0-2"}, None)["version"] == "44.0-2"
    assert ofed.detect({}, None)["family"] is None
    mixed = ofed.detect({"doca-ofed": "3.1.0", "mlnx-ofed-all": "24.10-4.1.4.0"}, _info("mlnx-ofed-24.10-1.1.4.0.txt"))
    assert mixed["family"] == "mixed"


def _decide(installed, info, flavour, version=None, extra=None, fam="apt"):
    cur = ofed.detect(installed, info)
    return cur, ofed.decide(cur, installed, {"flavour": flavour, "version": version, "extra_packages": extra}, fam)


@pytest.mark.parametrize("installed,info,flavour", [
    ({"mlnx-ofed-all": "24.10-4.1.4.0"}, "mlnx-ofed-24.10-4.1.4.0.constructed.txt", "doca-ofed"),
    ({}, "mlnx-ofed-23.10-1.1.9.0.txt", "doca-roce"),
    ({"doca-ofed": "3.2.1-044000-25.10-ubuntu2404"}, "doca-3.2.1-ofed-25.10-1.7.1.txt", "mlnx-ofed"),
    ({"doca-networking": "3.1.0"}, None, "inbox"),
    ({"doca-ofed": "3.1.0", "mlnx-ofed-all": "24.10-4.1.4.0"}, None, "doca-ofed"),
])
def test_decide_refuses_to_mix(installed, info, flavour):
    _cur, d = _decide(installed, _info(info) if info else None, flavour)
    assert d["conflict"] and d["wanted"] == {}
    assert "DOCA" in d["conflict"] and ("MLNX_OFED" in d["conflict"] or "inbox" in d["conflict"])


def test_decide_fresh_doca_install_and_idempotence():
    cur, d = _decide({"rdma-core": "44.0-2"}, None, "doca-ofed", "3.2.1")
    assert d["conflict"] is None and d["wanted"] == {"doca-ofed": "3.2.1"} and d["changes_kernel_stack"]
    inst = {"doca-ofed": "3.2.1-044000-25.10-ubuntu2404"}
    cur, d = _decide(inst, _info("doca-3.2.1-ofed-25.10-1.7.1.txt"), "doca-ofed", "3.2.1")
    assert not d["changes_kernel_stack"] and d["reason"] == ""
    # The OFED version (ofed_info -s) is accepted too.
    cur, d = _decide(inst, _info("doca-3.2.1-ofed-25.10-1.7.1.txt"), "doca-ofed", "25.10")
    assert not d["changes_kernel_stack"]
    # Another profile of the same DOCA is allowed next to it.
    cur, d = _decide(inst, _info("doca-3.2.1-ofed-25.10-1.7.1.txt"), "doca-roce")
    assert d["conflict"] is None and d["changes_kernel_stack"] and d["wanted"] == {"doca-roce": None}


def test_decide_mlnx_upgrade_and_outcome():
    inst = {"mlnx-ofed-all": "24.10-1.1.4.0"}
    cur, d = _decide(inst, _info("mlnx-ofed-24.10-1.1.4.0.txt"), "mlnx-ofed", "24.10-4.1.4.0")
    assert d["wanted"] == {"mlnx-ofed-all": "24.10-4.1.4.0"} and d["changes_kernel_stack"]
    plan = {"install": [("mlnx-ofed-all", "24.10-4.1.4.0", "upgrade")], "remove": []}
    out = ofed.outcome(d, plan, cur, nvidia_fs_installed=True)
    assert out == {"modules_reload_required": True, "reboot_required": True, "nvidia_fs_rebuild_required": True}
    assert not any(ofed.outcome(d, {"install": [], "remove": []}, cur, True).values())


def test_decide_inbox_per_package_family_and_extras():
    _c, d = _decide({}, None, "inbox", extra=["perftest", "mstflint=4.26.0-1"])
    assert set(d["wanted"]) == {"rdma-core", "ibverbs-providers", "ibverbs-utils", "infiniband-diags",
                                "perftest", "mstflint"}
    assert d["wanted"]["mstflint"] == "4.26.0-1" and not d["changes_kernel_stack"]
    _c, d = _decide({}, None, "inbox", fam="dnf")
    assert "libibverbs-utils" in d["wanted"]


class _Runner(object):
    def __init__(self, exe, stdout="", rc=0):
        self.exe, self.stdout, self.rc, self.ran = exe, stdout, rc, []

    def which(self, name, required=False):
        return self.exe if name == "ofed_info" else None

    def run(self, argv, check=True, **kwargs):
        self.ran.append(list(argv))
        return type("Result", (), {"rc": self.rc, "stdout": self.stdout, "stderr": "", "ok": self.rc == 0})()


def test_ofed_info_runs_ofed_info_s():
    runner = _Runner("/usr/bin/ofed_info", stdout="MLNX_OFED_LINUX-24.10-1.1.4.0:\n")
    assert hostparse.ofed_info(runner)["version"] == "24.10-1.1.4.0"
    assert runner.ran == [["ofed_info", "-s"]]


def test_ofed_info_is_none_without_the_program_or_a_version():
    missing = _Runner(None)
    assert hostparse.ofed_info(missing) is None and missing.ran == []
    failing = _Runner("/usr/bin/ofed_info", stdout="MLNX_OFED_LINUX-24.10-1.1.4.0:\n", rc=1)
    assert hostparse.ofed_info(failing) is None and failing.ran == [["ofed_info", "-s"]]
    assert hostparse.ofed_info(_Runner("/usr/bin/ofed_info", stdout="garbage\n")) is None
