# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""managed_file.attributes_differ, the read-only comparison a plan makes, answers as
AnsibleModule's set_fs_attributes_if_different does in check mode - without being it."""

from __future__ import annotations

import grp
import os
import pwd

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._common import managed_file


class _Reads(object):
    """The module's read helpers a comparison may use (none writes)."""

    def selinux_enabled(self):
        return False


@pytest.fixture
def existing(tmp_path):
    path = tmp_path / "cufile.json"
    path.write_text("{}")
    os.chmod(str(path), 0o644)
    return str(path)


def args(path, **kw):
    base = {"path": path, "owner": None, "group": None, "mode": None, "secontext": [None, None, None, None],
            "attributes": None}
    base.update(kw)
    return base


@pytest.mark.parametrize("mode, differs", [("0644", False), ("0640", True), (0o644, False), (0o600, True),
                                           ("u=rw,g=r,o=r", False), ("g+w", True), (None, False)])
def test_mode(existing, mode, differs):
    assert managed_file.attributes_differ(_Reads(), args(existing, mode=mode)) is differs


SYMBOLIC = ["u=rw,g=r,o=r", "g+w", "a+x", "u+x,g-r", "go=", "a=r", "u=rwx,go=rx", "+x", "=r", "-w", "a+X",
            "u+s,g+s", "o+t", "g=u", "o=g,u-w", "u=rw-x+X", "ug+rw,o-rwx", "a-rwx,u+r"]


@pytest.mark.parametrize("symbolic", SYMBOLIC)
@pytest.mark.parametrize("start", [0o644, 0o755, 0o600, 0o4750])
def test_a_symbolic_mode_means_what_chmod_and_ansible_make_of_it(tmp_path, start, symbolic):
    """The file module (AnsibleModule.set_mode_if_different) later applies the same mode: the
    plan's wanted mode must be the mode it would set, or a converged file looks changed."""
    from ansible.module_utils.basic import AnsibleModule
    path = tmp_path / "f"
    path.write_text("")
    os.chmod(str(path), start)
    st = os.lstat(str(path))
    ansibles = AnsibleModule._symbolic_mode_to_octal(st, symbolic)  # pylint: disable=protected-access
    assert managed_file.wanted_mode(st, symbolic) == ansibles, "%o %s" % (start, symbolic)


@pytest.mark.parametrize("bad", ["u=rwz", "q+r", "u+r,", "0999", "rw"])
def test_a_mode_neither_octal_nor_symbolic_is_refused(existing, bad):
    with pytest.raises(ValueError, match="mode"):
        managed_file.wanted_mode(os.lstat(existing), bad)


def test_owner_and_group_by_name_and_id(existing):
    st = os.stat(existing)
    me, mine = pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name
    assert managed_file.attributes_differ(_Reads(), args(existing, owner=me, group=mine)) is False
    assert managed_file.attributes_differ(_Reads(), args(existing, owner=str(st.st_uid))) is False
    assert managed_file.attributes_differ(_Reads(), args(existing, owner=str(st.st_uid + 4242))) is True
    assert managed_file.attributes_differ(_Reads(), args(existing, group="no-such-group-zz")) is True


def test_a_missing_file_differs(tmp_path):
    assert managed_file.attributes_differ(_Reads(), args(str(tmp_path / "none"))) is True


@pytest.mark.parametrize("current, wanted, differs", [("", "+i", True), ("i", "+i", False), ("i", "-i", True),
                                                      ("", "-i", False), ("ia", "=ai", False), ("i", "a", True)])
def test_file_attribute_flags(current, wanted, differs):
    assert managed_file._flags_differ(current, wanted) is differs


def test_the_comparison_agrees_with_ansible_in_check_mode(existing):
    from ansible.module_utils.basic import AnsibleModule

    for mode in ("0644", "644", "0600", "600", "g+w", "u=rw,go=r", 0o600, 0o644):
        fake = object.__new__(AnsibleModule)  # AnsibleModule's own code, in check mode, without a task
        fake.check_mode = True
        ansible_says = fake.set_mode_if_different(existing, mode, False)
        assert managed_file.attributes_differ(_Reads(), args(existing, mode=mode)) is ansible_says, mode
    assert oct(os.stat(existing).st_mode & 0o777) == "0o644"  # nothing was changed
