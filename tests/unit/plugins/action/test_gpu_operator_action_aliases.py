# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gpu_operator action plugin under kubernetes.core's option names: a kubeconfig given as
kubeconfig_path (kubernetes.core.helm's alias) is a controller file too, sent like kubeconfig."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.tests.unit.plugins.action.test_gpu_operator_action import (  # noqa: F401
    make_plugin, role_files)  # pylint: disable=unused-import


def test_kubeconfig_path_alias_is_sent_from_the_controller(tmp_path, role_files):  # noqa: F811
    plugin, conn, seen = make_plugin(tmp_path, {"chart_ref": "/c.tgz", "kubeconfig_path": "admin.conf",
                                                "release_values": {"gds": {"version": "2.29.4"}}})
    result = plugin.run(task_vars={})
    assert not result.get("failed"), result
    sent = seen["args"]["kubeconfig_path"]
    assert sent.startswith(conn.remote_root) and sent.endswith("-admin.conf") and conn.put == [sent]
