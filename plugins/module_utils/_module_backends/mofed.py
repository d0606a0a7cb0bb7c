# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gpudirect.storage.mofed module's work on a module-like object (params, check_mode,
fail_json, run_command): used by the mofed module and, in check mode, by gds_plan."""

from __future__ import annotations

import copy

from ansible_collections.gpudirect.storage.plugins.module_utils._common import managed_file
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import ofed
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import apt_dnf as pk
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repos
from ansible_collections.gpudirect.storage.plugins.module_utils._common.hostparse import ofed_info
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.argspec import ArgumentSpec


def argument_spec():
    return dict(
        flavour=dict(type="str", required=True, choices=list(ofed.FLAVOURS)),
        version=dict(type="str"),
        extra_packages=dict(type="list", elements="str", default=[]),
        state=dict(type="str", choices=["present"], default="present"),
        lock_timeout=dict(type="int", default=120),
        repo=copy.deepcopy(repos.REPO_ARG_SPEC),
    )


def arguments():
    """The options, as the module and gds_plan validate them."""
    return ArgumentSpec(argument_spec())


def package_names(params):
    """The packages the stage reads besides the RDMA stack's own (ofed.query_names)."""
    return ["nvidia-fs-dkms"] + [e.partition("=")[0] for e in params["extra_packages"]]


def run(module, paths, runner, backend, result):
    p = module.params
    names = ofed.query_names(backend.family) + package_names(p)
    installed, available = backend.query(names)
    current = ofed.detect(installed, ofed_info(runner))
    result.update(current=current, installed_version=current["version"], version=current["version"])
    decision = ofed.decide(current, installed, {"flavour": p["flavour"], "version": p["version"],
                                                "extra_packages": p["extra_packages"]}, backend.family)
    if decision["conflict"]:
        module.fail_json(msg=decision["conflict"] + " Nothing was changed.", **result)
    wanted = decision["wanted"]
    result["packages"]["before"] = dict((n, installed[n]) for n in wanted if n in installed)
    diffs = []
    ch = repos.planned_file(p["repo"], "gpudirect-ofed", paths, backend.family)
    write = None
    if ch:
        # imported here: only a stage whose repository file changes needs the guard
        from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repo_guard as guard
        problems = guard.repo_problems(p["repo"], paths, backend.family, backend.runner)
        if problems:  # checked before written: a repository that cannot work breaks every apt-get update
            raise pk.PackageError("; ".join(problems) + ". Nothing was written, nothing was changed.")
        if not module.check_mode:
            backend.wait_for_lock()
        write = guard.RepoWrite(module, paths, backend, ch, result)
        write.apply()
        try:
            if not module.check_mode:  # read now: a failure must undo the repository write
                installed, available = backend.query(names)
                available.fetch()
        except BaseException:
            write.undo()
            raise
    plan = pk.plan_packages(installed, available, wanted, strict=not (module.check_mode and ch), family=backend.family)
    if plan["errors"]:
        if write:  # leave the host as found: the repository file and the package index
            write.undo()
        module.fail_json(msg="; ".join(plan["errors"]) + ". Nothing was changed.", **result)
    if write:
        write.commit()
        diffs.append(managed_file.file_diff(ch))
    after = dict(result["packages"]["before"])
    if plan["install"]:
        diffs.append(pk.package_diff(installed, plan))
        pk.apply_plan(backend, plan, module.check_mode)
        result["changed"] = True
        for name, ver, kind in plan["install"]:
            result["actions"].append("%s %s=%s" % (kind, name, ver))
            after[name] = ver
        if not module.check_mode:
            info = ofed_info(runner)
            result["version"] = info["version"] if info else result["version"]
    result["packages"]["after"] = after
    result.update(ofed.outcome(decision, plan, current, "nvidia-fs-dkms" in installed))
    if module._diff and diffs:
        result["diff"] = diffs


def execute(module, paths, runner):
    """The mofed result for ``module.params`` (fails through ``module.fail_json``)."""
    result = {"changed": False, "actions": [], "desired_version": module.params["version"],
              "installed_version": None, "version": None, "current": {},
              "packages": {"before": {}, "after": {}}, "reboot_required": False,
              "modules_reload_required": False, "nvidia_fs_rebuild_required": False}
    problems = repos.input_problems(module.params, package_options=("extra_packages",))
    if problems:
        module.fail_json(msg="; ".join(problems) + ". Nothing was changed.", **result)
    try:
        backend = pk.get_backend(runner, module.params["lock_timeout"], paths)
        run(module, paths, runner, backend, result)
    except (CommandError, pk.PackageError) as exc:
        pk.fail_with(module, result, exc)
    return result
