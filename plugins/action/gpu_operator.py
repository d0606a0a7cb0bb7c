# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Action plugin of gpudirect.storage.gpu_operator: unless ``remote_src``, ``kubeconfig`` and every
``values_files`` entry are looked up on the controller like ``copy``'s ``src`` (vault decrypted),
put in the task's temporary directory on the host and handed to the module by that path."""

from __future__ import annotations

import os

from ansible.errors import AnsibleError
from ansible.module_utils.common.text.converters import to_text
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.action import ActionBase

MODULE = "gpudirect.storage.gpu_operator"


def controller_files(args):
    """[(option, index or None, path)] of the controller files the module args name."""
    files = []
    for option in ("kubeconfig", "kubeconfig_path"):  # kubernetes.core's alias too
        if args.get(option):
            files.append((option, None, args[option]))
    for index, path in enumerate(args.get("values_files") or []):
        files.append(("values_files", index, path))
    return files


class ActionModule(ActionBase):

    TRANSFERS_FILES = True

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        try:
            if not boolean(args.get("remote_src", False), strict=False):
                args = self._send_controller_files(args)
            result.update(self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars))
        except AnsibleError as exc:
            result.update(failed=True, changed=False, msg=to_text(exc.message))
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _send_controller_files(self, args):
        args = dict(args)
        if args.get("values_files"):
            args["values_files"] = list(args["values_files"])
        found = []
        for option, index, path in controller_files(args):
            label = option if index is None else "%s[%d]" % (option, index)
            try:
                found.append((option, index, self._find_needle("files", path)))
            except AnsibleError:
                raise AnsibleError("%s: %s is not a file on the controller (looked in the role's and the playbook's "
                                   "files/); set remote_src: true for a file on the host running the module"
                                   % (label, path))
        if not found:
            return args
        if not self._connection._shell.tmpdir:
            self._make_tmp_path()
        for number, (option, index, local) in enumerate(found):
            remote = self._connection._shell.join_path(
                self._connection._shell.tmpdir, "gpu-operator-%d-%s" % (number, os.path.basename(local)))
            real = self._loader.get_real_file(local, decrypt=True)  # vault: a decrypted temp copy
            try:
                self._transfer_file(real, remote)
            finally:
                self._loader.cleanup_tmp_file(real)
            self._fixup_perms2((self._connection._shell.tmpdir, remote))
            if index is None:
                args[option] = remote
            else:
                args[option][index] = remote
        return args
