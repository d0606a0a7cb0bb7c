# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Run an action plugin with a mocked module call (not collected by pytest)."""

from __future__ import annotations

import copy
from unittest.mock import MagicMock


def run_with_module_result(action_module, name, args, module_result, task_vars=None, templar=None, check_mode=False):
    """(result, the _execute_module mock) of ``action_module.ActionModule`` run with ``args``
    (``templar``: a real one, for an action that templates the roles' files)."""
    task = MagicMock()
    task.args = args
    task.async_val = 0
    task.check_mode = check_mode
    task.action = name
    plugin = action_module.ActionModule(task, MagicMock(), MagicMock(), loader=None, templar=templar,
                                        shared_loader_obj=None)
    plugin._execute_module = MagicMock(return_value=copy.deepcopy(module_result))
    task.get_play.return_value.vars = {}
    return plugin.run(task_vars=dict(task_vars or {})), plugin._execute_module
