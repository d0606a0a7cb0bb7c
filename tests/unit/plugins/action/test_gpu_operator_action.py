# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gpu_operator's action plugin with a fake connection whose "remote" is a directory: the
kubeconfig and values files are found on the controller (role / playbook files/, absolute
paths, kubeconfig_path too), vault files arrive decrypted, the module gets the remote paths, and the remote
temporary directory is gone afterwards, also when the module fails."""

from __future__ import annotations

import os
import shutil
from unittest.mock import MagicMock

import pytest

from ansible.parsing.dataloader import DataLoader
from ansible.parsing.vault import VaultLib, VaultSecret
from ansible.plugins.shell.sh import ShellModule

from ansible_collections.gpudirect.storage.plugins.action import gpu_operator as action

KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- name: admin\n  user: {token: s3cr3t}\n"
SECRET = [("default", VaultSecret(b"vault-pw"))]


class FakeConnection(object):
    """put_file copies into a directory standing for the host running the module."""

    transport = "ssh"
    become = None

    def __init__(self, remote_root):
        self.remote_root = remote_root
        self._shell = ShellModule()
        self._shell.tmpdir = None
        self.put = []

    def put_file(self, local, remote):
        assert remote.startswith(self.remote_root)
        shutil.copyfile(local, remote)
        self.put.append(remote)


def make_plugin(tmp_path, args, module_result=None, search_path=None):
    remote_root = str(tmp_path / "remote")
    os.makedirs(remote_root)
    connection = FakeConnection(remote_root)
    loader = DataLoader()
    loader.set_vault_secrets(SECRET)
    task = MagicMock(args=args, async_val=0, check_mode=False)
    task.get_search_path.return_value = search_path or [str(tmp_path / "role")]
    plugin = action.ActionModule(task, connection, MagicMock(), loader=loader, templar=None, shared_loader_obj=None)
    seen = {}

    def make_tmp_path(*_args, **_kw):
        connection._shell.tmpdir = os.path.join(remote_root, "ansible-tmp-1")
        os.makedirs(connection._shell.tmpdir)
        return connection._shell.tmpdir

    def execute_module(module_name, module_args, task_vars):
        seen["name"], seen["args"] = module_name, dict(module_args)
        seen["files"] = {p: open(p).read() for p in [module_args.get("kubeconfig")] + list(
            module_args.get("values_files") or []) if p and os.path.exists(p)}
        if isinstance(module_result, Exception):
            raise module_result
        return dict(module_result or {"changed": False})

    def remove_tmp_path(path, force=False):
        if path:
            shutil.rmtree(path)
            connection._shell.tmpdir = None

    plugin._make_tmp_path = make_tmp_path
    plugin._execute_module = execute_module
    plugin._remove_tmp_path = remove_tmp_path
    plugin._fixup_perms2 = MagicMock()
    return plugin, connection, seen


@pytest.fixture
def role_files(tmp_path):
    files = tmp_path / "role" / "files"
    files.mkdir(parents=True)
    (files / "site-values.yaml").write_text("gds:\n  version: 2.29.4\n")
    (files / "admin.conf").write_text(VaultLib(SECRET).encrypt(KUBECONFIG).decode())
    return files


def test_files_from_role_files_arrive_decrypted_and_are_removed(tmp_path, role_files):
    absolute = tmp_path / "elsewhere.yaml"
    absolute.write_text("driver:\n  version: '580'\n")
    plugin, conn, seen = make_plugin(tmp_path, {"chart_ref": "/c.tgz", "kubeconfig": "admin.conf",
                                                "values_files": ["site-values.yaml", str(absolute)]})
    result = plugin.run(task_vars={})
    assert not result.get("failed"), result
    args = seen["args"]
    assert seen["name"] == "gpudirect.storage.gpu_operator"
    assert all(p.startswith(conn.remote_root) for p in [args["kubeconfig"]] + args["values_files"])
    assert seen["files"][args["kubeconfig"]] == KUBECONFIG  # decrypted on the controller, sent as plain text
    values = [seen["files"][p] for p in args["values_files"]]
    assert values == ["gds:\n  version: 2.29.4\n", "driver:\n  version: '580'\n"]
    assert sorted(conn.put) == sorted([args["kubeconfig"]] + args["values_files"])
    assert os.listdir(conn.remote_root) == []  # the remote temporary directory went with the run
    plugin._fixup_perms2.assert_called()


def test_missing_controller_file_fails_naming_the_option_and_runs_nothing(tmp_path, role_files):
    plugin, conn, seen = make_plugin(tmp_path, {"chart_ref": "/c.tgz", "values_files": ["site-values.yaml", "nope.yaml"]})
    result = plugin.run(task_vars={})
    assert result["failed"] and result["changed"] is False
    assert "values_files[1]: nope.yaml is not a file on the controller" in result["msg"]
    assert "remote_src" in result["msg"] and seen == {} and conn.put == []


def test_remote_src_passes_paths_through_untouched(tmp_path):
    args = {"chart_ref": "/c.tgz", "kubeconfig": "/etc/kubernetes/admin.conf", "values_files": ["/srv/v.yaml"],
            "remote_src": True}
    plugin, conn, seen = make_plugin(tmp_path, args)
    result = plugin.run(task_vars={})
    assert not result.get("failed"), result
    assert seen["args"] == args and conn.put == []


def test_nothing_to_send_makes_no_temporary_directory(tmp_path):
    plugin, conn, seen = make_plugin(tmp_path, {"chart_ref": "/c.tgz", "kubeconfig_content": KUBECONFIG})
    result = plugin.run(task_vars={})
    assert not result.get("failed") and conn.put == [] and os.listdir(conn.remote_root) == []
    assert seen["args"]["kubeconfig_content"] == KUBECONFIG


def test_module_failure_is_returned_and_files_still_removed(tmp_path, role_files):
    plugin, conn, seen = make_plugin(tmp_path, {"chart_ref": "/c.tgz", "kubeconfig": "admin.conf"},
                                     module_result={"failed": True, "msg": "helm upgrade failed", "changed": False})
    result = plugin.run(task_vars={})
    assert result["failed"] and result["msg"] == "helm upgrade failed"
    assert conn.put and os.listdir(conn.remote_root) == []


def test_kubeconfig_path_alias_is_sent_from_the_controller(tmp_path, role_files):
    args = {"chart_ref": "/c.tgz", "kubeconfig_path": "admin.conf", "release_values": {"gds": {"version": "2.29.4"}}}
    plugin, conn, seen = make_plugin(tmp_path, args)
    result = plugin.run(task_vars={})
    assert not result.get("failed"), result
    sent = seen["args"]["kubeconfig_path"]
    assert sent.startswith(conn.remote_root) and sent.endswith("-admin.conf") and conn.put == [sent]
