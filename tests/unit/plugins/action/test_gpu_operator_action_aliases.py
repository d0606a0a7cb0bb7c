# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gpu_operator action plugin under kubernetes.core's option names: a kubeconfig given as
kubeconfig_path (kubernetes.core.helm's alias) is a controller file too, sent like kubeconfig."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.tests.unit.plugins.action import test_gpu_operator_action as base

role_files = base.role_files  # the fixture: files/admin.conf (vault-encrypted) of a role


def test_kubeconfig_path_alias_is_sent_from_the_controller(tmp_path, role_files):  # pylint: disable=redefined-outer-name
    args = {"chart_ref": "/c.tgz", "kubeconfig_path": "admin.conf", "release_values": {"gds": {"version": "2.29.4"}}}
    plugin, conn, seen = base.make_plugin(tmp_path, args)
    result = plugin.run(task_vars={})
    assert not result.get("failed"), result
    sent = seen["args"]["kubeconfig_path"]
    assert sent.startswith(conn.remote_root) and sent.endswith("-admin.conf") and conn.put == [sent]
