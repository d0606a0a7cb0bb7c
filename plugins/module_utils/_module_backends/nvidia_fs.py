# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The nvidia_fs module's sequence: collect -> preflight -> plan -> act. PRIVATE to the collection.

Every decision is delegated to the pure functions of _kernel.nvfs / _kernel.kmod / _packages; this
class only collects facts (HostPaths, read-only commands), orders the steps and records ``actions``.
Every step that changes the host is skipped in check mode (Runner mutates=True, apply_file).
"""

from __future__ import annotations

import copy
import os

from ansible_collections.gpudirect.storage.plugins.module_utils._common import hostparse, managed_file
from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import kmod, nvfs, ofed, secure_boot
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import apt_dnf as pk
from ansible_collections.gpudirect.storage.plugins.module_utils._packages.versions import select_version, split_spec
from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repos
from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError
from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.argspec import ArgumentSpec

MODULE = "nvidia-fs"          # DKMS module / package stem / file names
KMOD = "nvidia_fs"            # kernel spelling
NVFS_PACKAGES = ("nvidia-fs-dkms", "nvidia-fs")
MOK_DROPIN = "gpudirect-nvidia-fs.conf"


class NvidiaFs(object):
    def __init__(self, module, paths, runner, backend, result):
        self.installed_now = {}  # the package db as the package plan saw it
        self.m = module
        self.p = module.params
        self.paths = paths
        self.runner = runner
        self.backend = backend
        self.r = result
        self.check = module.check_mode
        self.diffs = []
        self.kver = paths.kernel_release()
        self.arch = os.uname()[4]

    # ------------------------------------------------------------------ helpers
    def act(self, text, changed=True):
        self.r["actions"].append(text)
        if changed:
            self.r["changed"] = True

    def files(self):
        """Planned managed files (path -> change)."""
        p = self.p
        out = []
        if p["state"] == "present":
            if p["persistent"]:
                out.append(("modules_load", managed_file.plan_file(kmod.modules_load_path(self.paths, MODULE),
                                                                   kmod.render_modules_load(MODULE))))
                opt_path = kmod.modprobe_conf_path(self.paths, MODULE)
                ch = managed_file.plan_file(opt_path, kmod.render_modprobe_options(KMOD, p["params"]))
                out.append(("modprobe", ch))
            if p["mok_key"]:
                text = ('# Managed by gpudirect.storage.nvidia_fs: DKMS signs modules with this key.\n'
                        'mok_signing_key="%s"\nmok_certificate="%s"\n' % (p["mok_key"], p["mok_cert"]))
                out.append(("mok", managed_file.plan_file(os.path.join(self.paths.dkms_framework_d, MOK_DROPIN), text)))
        else:
            for key, path in (("modules_load", kmod.modules_load_path(self.paths, MODULE)),
                              ("modprobe", kmod.modprobe_conf_path(self.paths, MODULE)),
                              ("mok", os.path.join(self.paths.dkms_framework_d, MOK_DROPIN))):
                out.append((key, managed_file.plan_file(path, None)))
        # A package-shipped modules-load file that already loads nvidia-fs is left alone.
        fixed = []
        for key, ch in out:
            if key == "modules_load" and ch["action"] == "update" and kmod.modules_load_satisfied(ch["current"], MODULE):
                ch = dict(ch, action="none", desired=ch["current"])
            if key == "modprobe" and ch["action"] == "update" and \
                    kmod.modprobe_options_satisfied(ch["current"], KMOD, self.p["params"]):
                ch = dict(ch, action="none", desired=ch["current"])
            fixed.append((key, ch))
        return fixed

    def apply_files(self, changes, keys):
        for key, ch in changes:
            if key not in keys or ch["action"] == "none":
                continue
            self.diffs.append(managed_file.file_diff(ch))
            managed_file.apply_file(self.m, ch, backup=True)
            self.act("%s %s" % (ch["action"], ch["path"]))

    def signing_env(self):
        env = {}
        if self.p["mok_key_passphrase"]:
            env["KBUILD_SIGN_PIN"] = self.p["mok_key_passphrase"]
        return env or None

    # ------------------------------------------------------------------ facts
    def driver(self):
        d = hostparse.parse_driver_version(self.paths.read(os.path.join(self.paths.nvidia_proc, "version")))
        if d:
            return d
        res = self.runner.run(["modinfo", "-k", self.kver, "nvidia"], check=False)
        return nvfs.driver_from_modinfo(kmod.parse_modinfo(res.stdout)) if res.rc == 0 else None

    def mok_facts(self, secure_boot_on):
        p = self.p
        if not secure_boot_on:
            return {"configured": bool(p["mok_key"]), "cert": p["mok_cert"], "enrolled": None, "default_enrolled": False}
        return dict(secure_boot.mok_enrolment(self.runner, self.paths, p["mok_cert"]), configured=bool(p["mok_key"]))

    def collect(self, installed, available):
        p = self.p
        headers = os.path.join(self.paths.lib_modules, self.kver, "build")
        secure_boot_on = secure_boot.secure_boot_enabled(self.paths)
        ofed_info = hostparse.ofed_info(self.runner)
        facts = {
            "os": hostparse.parse_os_release(self.paths.read("os_release")), "arch": self.arch,
            "kernel": self.kver, "headers_path": headers, "headers_present": os.path.isdir(headers),
            "driver": self.driver(), "secure_boot": secure_boot_on, "mok": self.mok_facts(secure_boot_on),
            "ofed_family": ofed.detect(installed, ofed_info)["family"],
            "ofed_info": ofed_info["raw"] if ofed_info else None,
            "extra_packages": [split_spec(s)[0] for s in p["extra_packages"]],
        }
        facts["nvfs_version"], facts["nvfs_version_error"] = self.target_version(installed, available, facts["driver"])
        return facts

    def target_version(self, installed, available, driver):
        """(version, error). An installed version is kept unless the options rule it out."""
        want = self.p["version"]
        have = installed.get("nvidia-fs-dkms")

        def offered():  # read only where the answer depends on it: it asks the repositories
            out = list(available.get("nvidia-fs-dkms") or [])
            return out + [have] if have and have not in out else out
        if want == "match_driver":
            if not driver:
                return None, None
            if have and not nvfs.nvfs_driver_problems(have, driver, self.arch):
                return have, None
            avail = offered()
            v = nvfs.match_driver(avail, driver, self.arch)
            if v is None:
                return None, ("no nvidia-fs-dkms version works with NVIDIA driver %s%s (available: %s)"
                              % (driver["version"], " (proprietary module)" if driver.get("open") is False else "",
                                 ", ".join(avail) or "none - is the CUDA repository configured? (option repo)"))
            return v, None
        if want:
            return (select_version(offered(), want, self.backend.family) or want), None
        return (have or select_version(offered(), None, self.backend.family)), None

    # ------------------------------------------------------------------ run
    def run(self):
        p = self.p
        specs = package_specs(p)
        names = list(specs) + ofed.query_names(self.backend.family)
        installed, available = self.backend.query(names)
        self.r["packages"]["before"] = dict((n, installed[n]) for n in specs if n in installed)
        if p["state"] == "absent":
            return self.absent(installed)
        facts = self.collect(installed, available)
        self.r["preflight"] = dict((k, facts[k]) for k in (
            "os", "kernel", "arch", "driver", "secure_boot", "headers_present", "ofed_family", "ofed_info"))
        # Stage 1: checks that need no repository metadata, before anything is touched.
        fails = nvfs.preflight(dict(facts, nvfs_version=None, nvfs_version_error=None), p)
        if fails:
            raise nvfs.PreflightError(fails)
        os_problem = nvfs.unsupported_os(facts["os"])
        if os_problem:  # unsupported_os=warn, or preflight would have failed
            self.m.warn(os_problem + nvfs.UNSUPPORTED_OS_GOING_ON)
        repo_change = self.repo(lock_first=True)
        try:
            plan = self.plan_with_repo(repo_change, facts, names, installed, available, specs)
        except BaseException:
            self.revert(repo_change)  # the repository file and the package index as before
            raise
        if repo_change:
            repo_change.commit()
        target = facts["nvfs_version"]
        changes = self.files()
        if plan["install"] and not self.check:
            self.backend.wait_for_lock()  # before the first write: a held lock must leave the host as found
        # The signing drop-in goes first: the package's own DKMS build must already sign.
        self.apply_files(changes, ("mok",))
        self.packages(self.installed_now, plan)
        self.dkms(target, bool(plan["install"]))
        if p["load"]:
            self.load()
        self.apply_files(changes, ("modules_load", "modprobe"))
        self.finish(changes)

    def plan_with_repo(self, repo_change, facts, names, installed, available, specs):
        """Stage 2 (needs the repository's metadata): the version rules and the package plan."""
        p = self.p
        self.installed_now = installed
        if repo_change and self.check and facts["nvfs_version_error"]:
            self.m.warn("nvidia-fs versions of the new repository are unknown in check mode")
            facts["nvfs_version_error"] = None
        elif repo_change:
            installed, available = self.backend.query(names)
            self.installed_now = installed
            facts["nvfs_version"], facts["nvfs_version_error"] = self.target_version(installed, available, facts["driver"])
        # Stage 2: the version rules (driver, open/proprietary module).
        fails = nvfs.preflight(facts, p)
        if fails:
            raise nvfs.PreflightError(fails)
        target = facts["nvfs_version"]
        self.r["nvidia_fs_version"] = self.r["preflight"]["nvfs_version"] = target
        for name in NVFS_PACKAGES:
            if name in specs and specs[name] is None and target:
                specs[name] = target
        plan = pk.plan_packages(installed, available, specs, "present", strict=not (self.check and repo_change), family=self.backend.family)
        if plan["errors"]:
            raise pk.PackageError("; ".join(plan["errors"]) + ". Nothing was changed.")
        return plan

    def repo(self, lock_first=False):
        """Write the repository file (and refresh metadata). Returns the change or None."""
        ch = repos.planned_file(self.p["repo"], "gpudirect-cuda", self.paths, self.backend.family)
        if not ch:
            return None
        from ansible_collections.gpudirect.storage.plugins.module_utils._packages import repo_guard as guard  # only when the file changes
        problems = guard.repo_problems(self.p["repo"], self.paths, self.backend.family, self.runner)
        if problems:  # checked before written: a repository that cannot work breaks every apt-get update
            raise nvfs.PreflightError([{"check": "repository", "msg": m} for m in problems])
        if lock_first and not self.check:
            self.backend.wait_for_lock()
        write = guard.RepoWrite(self.m, self.paths, self.backend, ch, self.r)
        write.apply()
        self.diffs.append(managed_file.file_diff(ch))
        return write

    def revert(self, change):
        """Put the repository file and the package index back after a later step failed, and
        take its actions back out of the result (host and result as found)."""
        if change:
            change.undo()
            if managed_file.file_diff(change.change) in self.diffs:
                self.diffs.remove(managed_file.file_diff(change.change))

    def packages(self, installed, plan):
        if not (plan["install"] or plan["remove"]):
            self.r["packages"]["after"] = dict(self.r["packages"]["before"])
            return
        self.diffs.append(pk.package_diff(installed, plan))
        env = self.signing_env()
        if env:
            self.backend.environ = dict(self.backend.environ, **env)
        pk.apply_plan(self.backend, plan, self.check)
        for name, ver, kind in plan["install"]:
            self.act("%s %s=%s" % (kind, name, ver))
        for name in plan["remove"]:
            self.act("remove %s" % name)
        after = dict(self.r["packages"]["before"])
        after.update(dict((n, v) for n, v, _k in plan["install"]))
        for name in plan["remove"]:
            after.pop(name, None)
        self.r["packages"]["after"] = after

    def dkms(self, target, packages_changed):
        if self.check and packages_changed:
            # The package's postinst runs "dkms install" for the running kernel.
            self.act("dkms install %s for %s (by the package)" % (MODULE, self.kver), changed=False)
            self.r["rebuild_reasons"] = []
            return
        entries = kmod.dkms_status(self.runner, self.paths, MODULE)
        if entries is None:
            raise pk.PackageError("dkms is not installed; nvidia-fs-dkms needs it")
        dver = nvfs.dkms_version_for(entries, target)
        if not dver:
            raise pk.PackageError("DKMS does not know nvidia-fs %s (dkms status -m %s: %s)"
                                  % (target, MODULE, entries or "empty"))
        entry = kmod.dkms_entry(entries, MODULE, dver, self.kver)
        log = kmod.built_make_log(self.paths, MODULE, dver, self.kver, self.arch)
        reasons = nvfs.rebuild_reasons({
            "dkms_state": entry["state"] if entry else None, "nvfs_version": dver, "kernel": self.kver,
            "driver": self.r["preflight"].get("driver"),
            "built_driver": nvfs.driver_from_make_log(self.paths.read(log)) if log else None,
            "built_at": nvfs.mtime(log) if log else None,
            "ofed_changed_at": nvfs.mtime(self.paths.ofed_info_bin, ctime=True)})
        self.r["rebuild_reasons"] = reasons
        if not reasons:
            return
        force = bool(entry and entry["state"] in ("built", "installed"))
        env = self.signing_env()
        kmod.dkms_run(self.runner, self.paths, "build", MODULE, dver, self.kver, self.arch, force=force, environ=env)
        kmod.dkms_run(self.runner, self.paths, "install", MODULE, dver, self.kver, self.arch, force=True, environ=env)
        self.r["rebuilt"] = True
        self.act("dkms build+install %s/%s for %s (%s)" % (MODULE, dver, self.kver, "; ".join(reasons)))

    def load(self):
        st = kmod.module_state(self.paths, KMOD)
        params = self.p["params"]
        want_ver = None
        entries = kmod.dkms_status(self.runner, self.paths, MODULE) or []
        if entries:
            want_ver = nvfs.dkms_version_for(entries, self.r.get("nvidia_fs_version"))
        if not st["loaded"]:
            self.runner.run(kmod.modprobe_argv(KMOD, params), mutates=True)
            self.act(" ".join(kmod.modprobe_argv(KMOD, params)))
            return
        reasons = []
        if want_ver and st["version"] and st["version"] != want_ver:
            reasons.append("loaded version %s, built %s" % (st["version"], want_ver))
        sysdir = os.path.join(self.paths.sys_module, KMOD, "parameters")
        if params and os.path.isdir(sysdir) and kmod.params_differ(st["params"], params):
            reasons.append("parameters %s differ" % kmod.params_differ(st["params"], params))
        if self.r.get("rebuilt"):
            reasons.append("module was rebuilt")
        if not reasons:
            return
        res = self.runner.run(kmod.unload_argv(KMOD), mutates=True, check=False)
        if res.rc != 0:
            self.r["reload_required"] = True
            self.m.warn("nvidia_fs must be reloaded (%s) but is in use (refcount %s, used by %s): %s"
                        % ("; ".join(reasons), st["refcount"], ",".join(st["used_by"]) or "-", res.stderr.strip()))
            return
        self.runner.run(kmod.modprobe_argv(KMOD, params), mutates=True)
        self.act("reload %s (%s)" % (KMOD, "; ".join(reasons)))

    def absent(self, installed):
        st = kmod.module_state(self.paths, KMOD)
        if st["loaded"]:
            self.runner.run(kmod.unload_argv(KMOD), mutates=True)
            self.act(" ".join(kmod.unload_argv(KMOD)))
        # Only O(packages): extra packages (libcufile, gds-tools) may serve other users.
        plan = pk.plan_packages(installed, {}, dict((split_spec(s)[0], None) for s in self.p["packages"]), "absent")
        self.packages(installed, plan)
        changes = self.files()
        self.apply_files(changes, ("modules_load", "modprobe", "mok"))
        self.finish(changes)

    def finish(self, changes):
        self.r["module"] = kmod.module_state(self.paths, KMOD)
        self.r["dkms"] = [e for e in (kmod.dkms_status(self.runner, self.paths, MODULE) or []) if e["module"] == MODULE]
        persisted = {}
        for key, ch in changes:
            exists = ch["desired"] is not None if self.check else os.path.exists(ch["path"])
            if key != "mok" and exists:
                persisted[key] = ch["path"]
        self.r["persisted"] = persisted
        if self.m._diff and self.diffs:
            self.r["diff"] = self.diffs


def argument_spec():
    return dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        version=dict(type="str"),
        packages=dict(type="list", elements="str", default=["nvidia-fs-dkms", "nvidia-fs"]),
        extra_packages=dict(type="list", elements="str", default=[]),
        load=dict(type="bool", default=True),
        persistent=dict(type="bool", default=True),
        params=dict(type="dict", default={}),
        mok_key=dict(type="path"),
        mok_cert=dict(type="path"),
        mok_key_passphrase=dict(type="str", no_log=True),
        unsupported_os=dict(type="str", choices=["fail", "warn"], default="fail"),
        lock_timeout=dict(type="int", default=120),
        repo=copy.deepcopy(repos.REPO_ARG_SPEC),
    )


def arguments():
    """The options and their constraints, as the module and gds_plan validate them."""
    return ArgumentSpec(argument_spec(), required_together=[("mok_key", "mok_cert")])


def package_specs(params):
    """{package: version or None} of the packages and extra_packages options."""
    return dict(split_spec(spec) for spec in params["packages"] + params["extra_packages"])


def package_names(params):
    """The packages the stage reads besides the RDMA stack's own (gds_plan's one query)."""
    return list(package_specs(params))


def execute(module, paths, runner):
    """The nvidia_fs result for ``module.params`` (fails through ``module.fail_json``)."""
    result = {"changed": False, "actions": [], "packages": {"before": {}, "after": {}}, "module": {},
              "dkms": [], "persisted": {}, "preflight": {}, "reload_required": False}
    try:
        bad = [k for k, v in (module.params["params"] or {}).items()
               if not isinstance(v, (str, int, float, bool)) or not str(v).strip()
               or any(c.isspace() for c in str(v) + k) or "=" in k]
        if bad:
            module.fail_json(msg="params: invalid module parameter(s) %s (no spaces, no '=' in names)" % bad)
        problems = repos.input_problems(module.params)
        if problems:
            module.fail_json(msg="; ".join(problems) + ". Nothing was changed.")
        backend = pk.get_backend(runner, module.params["lock_timeout"], paths)
        NvidiaFs(module, paths, runner, backend, result).run()
    except nvfs.PreflightError as exc:
        result["preflight"]["failures"] = exc.failures
        module.fail_json(msg=str(exc), **result)
    except (kmod.DkmsBuildError, CommandError, pk.PackageError) as exc:
        pk.fail_with(module, result, exc)
    return result
