"""Run a module's main() in-process: exit_json/fail_json raise, arguments via patch_module_args."""

from unittest import mock

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args


class ModuleExit(Exception):
    """Raised by exit_json; ``.result`` holds its keyword arguments."""

    def __init__(self, result):
        super(ModuleExit, self).__init__(result)
        self.result = result


class ModuleFail(ModuleExit):
    """Raised by fail_json."""


def _exit(self, **kwargs):
    kwargs.setdefault("changed", False)
    raise ModuleExit(kwargs)


def _fail(self, msg, **kwargs):
    kwargs["failed"] = True
    kwargs["msg"] = msg
    raise ModuleFail(kwargs)


def run_module(main, args, check_mode=False, diff=False):
    """Run ``main`` with ``args``; return the result dict (``failed`` set on fail_json)."""
    args = dict(args)
    if check_mode:
        args["_ansible_check_mode"] = True
    if diff:
        args["_ansible_diff"] = True
    with patch_module_args(args), \
            mock.patch.object(basic.AnsibleModule, "exit_json", _exit), \
            mock.patch.object(basic.AnsibleModule, "fail_json", _fail):
        try:
            main()
        except ModuleExit as exc:
            return exc.result
    raise AssertionError("module returned without exit_json/fail_json")
