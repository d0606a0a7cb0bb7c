# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The SELinux label of /etc/cufile.json when cufile_config rewrites it, on a host with SELinux.

cufile_config writes through AnsibleModule.atomic_move and applies the file options (setype, ...)
with set_fs_attributes_if_different, ansible-core's public SELinux handling. This machine has no
SELinux, so libselinux is replaced by a stand-in that keeps a label per inode (as the kernel does:
a rename keeps the inode's label, a new file gets a wrong one here) and answers matchpathcon with
the policy's label for the path (what restorecon would set). What a real policy says is not
tested here."""

from __future__ import annotations

import os

import pytest

from ansible.module_utils import basic

from ansible_collections.gpudirect.storage.plugins.modules import cufile_config
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module

pytestmark = pytest.mark.usefixtures("host_libcufile_1_15")

POLICY = "system_u:object_r:etc_t:s0"          # the policy's label for /etc/cufile.json
SITE = "system_u:object_r:cufile_site_t:s0"    # a label the site gave the file itself
NEW_FILE = "system_u:object_r:unlabeled_t:s0"  # what the stand-in gives a new inode
SETTINGS = {"properties": {"io_batchsize": 64}}
FIRST = {"properties": {"io_batchsize": 32}}


class FakeLibselinux(object):
    def __init__(self):
        self.labels = {}

    def is_selinux_enabled(self):
        return 1

    def is_selinux_mls_enabled(self):
        return 1

    def matchpathcon(self, path, mode):
        return [0, POLICY]

    def lgetfilecon_raw(self, path):
        return [0, self.labels.get(os.lstat(path).st_ino, NEW_FILE)]

    def lsetfilecon(self, path, context):
        self.labels[os.lstat(path).st_ino] = context
        return 0

    def label(self, path):
        return self.lgetfilecon_raw(str(path))[1]


@pytest.fixture
def selinux(monkeypatch):
    fake = FakeLibselinux()
    monkeypatch.setattr(basic, "HAVE_SELINUX", True)
    monkeypatch.setattr(basic, "selinux", fake, raising=False)
    return fake


def converge(path, check_mode=False, **args):
    args = dict(args, path=str(path))
    planned = run_module(cufile_config.main, dict(args, _cufile={"phase": "plan"}), check_mode=check_mode)
    assert not planned.get("failed"), planned
    if not planned["changed"] or check_mode:
        return planned, None
    internal = {"phase": "apply", "expect": planned["fingerprint"], "content": planned.get("desired_text")}
    applied = run_module(cufile_config.main, dict(args, _cufile=dict((k, v) for k, v in internal.items() if v)))
    assert not applied.get("failed"), applied
    return planned, applied


def test_a_rewritten_file_keeps_the_label_it_had(tmp_path, selinux):
    target = tmp_path / "cufile.json"
    converge(target, settings=FIRST)
    selinux.lsetfilecon(str(target), SITE)
    inode = os.stat(str(target)).st_ino
    applied = converge(target, settings=SETTINGS)[1]
    assert applied["changed"] and os.stat(str(target)).st_ino != inode  # a new file took its place
    assert selinux.label(target) == SITE
    assert converge(target, settings=SETTINGS)[0]["changed"] is False


def test_a_new_file_gets_the_policy_label_not_the_temp_files(tmp_path, selinux):
    target = tmp_path / "cufile.json"
    planned, applied = converge(target, settings=SETTINGS)
    assert planned["changed"] and applied["changed"]
    assert selinux.label(target) == POLICY


def test_a_replaced_symlink_gets_the_policy_label_not_the_link_targets(tmp_path, selinux):
    package_file = tmp_path / "cuda-cufile.json"
    converge(package_file, settings=FIRST)
    selinux.lsetfilecon(str(package_file), "system_u:object_r:usr_t:s0")
    link = tmp_path / "cufile.json"
    os.symlink(str(package_file), str(link))
    converge(link, settings=SETTINGS)
    assert not os.path.islink(str(link)) and selinux.label(link) == POLICY
    assert selinux.label(package_file) == "system_u:object_r:usr_t:s0"


def test_setype_is_planned_in_check_mode_and_then_applied(tmp_path, selinux):
    target = tmp_path / "cufile.json"
    converge(target, settings=FIRST)
    selinux.lsetfilecon(str(target), SITE)
    planned = converge(target, check_mode=True, settings=FIRST, setype="etc_t")[0]
    assert planned["changed"] and selinux.label(target) == SITE  # check mode: nothing relabelled
    planned, applied = converge(target, settings=FIRST, setype="etc_t")
    assert planned["changed"] and applied["changed"] and selinux.label(target) == POLICY
    assert converge(target, settings=FIRST, setype="etc_t")[0]["changed"] is False


def test_without_selinux_nothing_is_labelled(tmp_path, monkeypatch):
    fake = FakeLibselinux()
    monkeypatch.setattr(basic, "HAVE_SELINUX", False)
    monkeypatch.setattr(basic, "selinux", fake, raising=False)
    converge(tmp_path / "cufile.json", settings=SETTINGS)
    assert fake.labels == {}
