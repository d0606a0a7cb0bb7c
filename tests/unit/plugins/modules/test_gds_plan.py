# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gds_plan on the fake GPU host: each stage's check-mode result equals the stage module's own
check mode, nothing is changed, a failing stage is reported without hiding the others, and the
probe runs only when no stage would change anything."""

from __future__ import annotations

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends import gds_plan as _gds_plan
from ansible_collections.gpudirect.storage.plugins.modules import gds_plan, mofed, nvidia_fs
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.testhost_mofed_nvidia_fs import FakeHost

DOCA_321 = "3.2.1-125000-25.10-ubuntu2404"
MOFED = {"flavour": "doca-ofed", "version": "3.2.1"}
NVFS = {"version": "match_driver", "params": {"rw_stats_enabled": 1}}


@pytest.fixture
def host(tmp_path, monkeypatch):
    h = FakeHost(tmp_path, monkeypatch)
    h.available = {"doca-ofed": [DOCA_321], "nvidia-fs-dkms": ["2.28.2-1"], "nvidia-fs": ["2.28.2-1"],
                   "libcufile-12-8": ["1.13.1.3-1"], "gds-tools-12-8": ["1.13.1.3-1"]}
    h.ofed_version_for = lambda name, version: "OFED-internal-25.10-1.7.1:"
    return h


def plan(host, **args):
    base = {"mofed": MOFED, "nvidia_fs": NVFS, "facts": {"probe": True, "gather_cuda": False}}
    return host.run(gds_plan.main, dict(base, **args))


def stage_view(res):
    return dict((k, res.get(k)) for k in ("changed", "actions"))


def test_fresh_host_is_planned_like_the_stage_modules_in_check_mode_and_nothing_changes(host):
    before = host.snapshot()
    res = plan(host)
    assert not res.get("failed"), res
    assert res["changed"] is False and res["converged"] is False
    assert host.mutating_calls() == [] and host.snapshot() == before
    assert stage_view(res["stages"]["mofed"]) == stage_view(host.run(mofed.main, MOFED, check_mode=True))
    assert stage_view(res["stages"]["nvidia_fs"]) == stage_view(host.run(nvidia_fs.main, NVFS, check_mode=True))
    assert res["stages"]["mofed"]["changed"] and res["stages"]["nvidia_fs"]["changed"]
    gds = res["ansible_facts"]["gds"]
    assert gds["probe"]["ran"] is False and gds["probe"]["deferred"] is True  # probed after the rollout


def test_converged_host_gets_the_verify_probe_in_the_same_call(host):
    for main, args in ((mofed.main, MOFED), (nvidia_fs.main, NVFS)):
        assert not host.run(main, args).get("failed")
    res = plan(host)
    assert res["converged"] is True, res["stages"]
    assert [s["changed"] for s in res["stages"].values()] == [False, False]
    assert res["ansible_facts"]["gds"]["probe"]["enabled"] is True
    assert res["ansible_facts"]["gds"]["probe"]["deferred"] is False
    assert host.mutating_calls() == []


def test_a_failing_stage_is_reported_and_the_other_stages_still_planned(host):
    res = plan(host, mofed={"flavour": "mlnx-ofed", "version": "99.1"})
    assert not res.get("failed") and res["converged"] is False
    assert res["stages"]["mofed"]["failed"] is True and "99.1" in res["stages"]["mofed"]["msg"]
    assert res["stages"]["nvidia_fs"]["failed"] is False and res["stages"]["nvidia_fs"]["changed"]


def test_bad_stage_options_name_the_stage_and_the_option(host):
    res = plan(host, mofed={"flavour": "doca-ofed", "lock_timeout": "soon"}, nvidia_fs={"bogus_zz": 1})
    assert res["stages"]["mofed"]["failed"] and "lock_timeout" in res["stages"]["mofed"]["msg"]
    assert res["stages"]["nvidia_fs"]["failed"] and "bogus_zz" in res["stages"]["nvidia_fs"]["msg"]
    assert host.mutating_calls() == []


def test_bad_facts_options_fail_the_plan_naming_them(host):
    res = plan(host, facts={"probe_size_mb": 0})
    assert res["failed"] and res["msg"].startswith("facts: probe_size_mb=0 is out of range")


def test_null_stage_options_mean_not_set(host):
    res = plan(host, mofed=dict(MOFED, version=None, repo=None))
    assert res["stages"]["mofed"]["failed"] is False, res["stages"]["mofed"]


def test_cufile_plan_phase_reports_the_change_and_writes_nothing(host, tmp_path):
    path = tmp_path / "cufile.json"
    res = plan(host, mofed=None, nvidia_fs=None,
               cufile={"path": str(path), "settings": {"properties": {"allow_compat_mode": True}},
                       "_cufile": {"phase": "plan"}})
    stage = res["stages"]["cufile"]
    assert stage["failed"] is False and stage["changed"] is True and not path.exists()
    assert stage["cufile"]["properties"]["allow_compat_mode"] is True


def test_the_cufile_stage_returns_the_planned_document_once(host, tmp_path):
    """Issue 21: the file's text as cufile_config's apply phase would write it and the current
    document are for cufile_config's own action; a plan sends back only what the gds_plan action
    reads (the document to validate, the diff), not the same file three more times."""
    path = tmp_path / "cufile.json"
    path.write_text('{"properties": {"allow_compat_mode": false}}\n')
    res = plan(host, mofed=None, nvidia_fs=None, _ansible_diff=True,
               cufile={"path": str(path), "settings": {"properties": {"allow_compat_mode": True}},
                       "_cufile": {"phase": "plan"}})
    stage = res["stages"]["cufile"]
    assert stage["changed"] is True and "desired_text" not in stage and "current" not in stage
    assert '"allow_compat_mode": true' in stage["diff"]["after"] and "false" in stage["diff"]["before"]


@pytest.mark.parametrize("stages, converged", [({}, False), ({"a": {"changed": False, "failed": False}}, True),
                                               ({"a": {"changed": True, "failed": False}}, False),
                                               ({"a": {"changed": False, "failed": True}}, False)])
def test_is_converged(stages, converged):
    assert _gds_plan.is_converged(stages) is converged


def test_stage_module_raises_instead_of_exiting():
    class Real(object):
        _diff = True
        check_mode = False
        tmpdir = "/tmp/x"
    stage = _gds_plan.StageModule(Real(), {"a": 1})
    assert stage.check_mode is True and stage.params == {"a": 1} and stage.tmpdir == "/tmp/x" and stage._diff
    with pytest.raises(_gds_plan.StageFailed) as err:
        stage.fail_json(msg="nope", rc=3)
    assert err.value.msg == "nope" and err.value.details == {"rc": 3}


class _RealModule(object):
    """The real module as a stage would reach it: not in check mode, with writers that record."""
    _diff = False
    check_mode = False
    tmpdir = "/tmp/x"

    def __init__(self):
        self.writes, self.commands, self.attribute_checks = [], [], []

    def atomic_move(self, src, dest, **kwargs):
        self.writes.append(("atomic_move", dest))

    def backup_local(self, path):
        self.writes.append(("backup_local", path))

    def preserved_copy(self, src, dest):
        self.writes.append(("preserved_copy", dest))

    def set_fs_attributes_if_different(self, file_args, changed, diff=None, expand=True):
        self.attribute_checks.append(self.check_mode)
        return True

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/bin/" + name

    def run_command(self, argv, **kwargs):
        self.commands.append(argv)
        return 0, "", ""


def test_a_stage_module_has_no_write_path():
    real = _RealModule()
    stage = _gds_plan.StageModule(real, {})
    for writer, args in (("atomic_move", ("/tmp/t", "/etc/x")), ("backup_local", ("/etc/x",)),
                         ("preserved_copy", ("/etc/x", "/etc/x.bak"))):
        with pytest.raises(_gds_plan.StageFailed, match="tried to write while planning"):
            getattr(stage, writer)(*args)
    assert real.writes == []
    with pytest.raises(_gds_plan.StageFailed, match="leave check mode"):
        stage.check_mode = False
    stage.check_mode = True  # what cufile_config's attribute check does: allowed, and still True
    assert stage.check_mode is True
    # file attributes are compared by a function that only reads (managed_file.attributes_differ):
    # the stage forwards no attribute setter, and the real module is never switched to check mode
    with pytest.raises(_gds_plan.StageFailed, match="tried to write while planning"):
        stage.set_fs_attributes_if_different({"path": "/etc/x"}, False)
    assert real.attribute_checks == [] and real.check_mode is False
    with pytest.raises(AttributeError, match="not available to a stage"):
        stage.set_mode_if_different  # pylint: disable=pointless-statement


def test_a_stage_runner_skips_commands_that_change_the_host():
    from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner
    real = _RealModule()
    runner = Runner(real)
    stage_runner = runner.for_module(_gds_plan.StageModule(real, {}))
    assert stage_runner.run(["dkms", "build", "x"], mutates=True).skipped
    assert stage_runner.run(["dkms", "status"]).ok
    assert real.commands == [["/usr/bin/dkms", "status"]]
    assert runner.history is stage_runner.history and len(runner.history) == 2


def test_planning_leaves_the_real_module_out_of_check_mode(host, monkeypatch):
    """Planning is write-free because each stage gets a StageModule, not because the real
    module is switched into check mode."""
    seen = []
    real_plan = _gds_plan.plan

    def spy(module, params, paths, runner):
        out = real_plan(module, params, paths, runner)
        seen.append(module.check_mode)
        return out
    monkeypatch.setattr(gds_plan, "plan", spy)
    before = host.snapshot()
    res = plan(host)
    assert seen == [False] and res["stages"]["mofed"]["changed"] and host.snapshot() == before


def test_a_read_two_stages_ask_runs_once_per_plan_and_writes_are_still_skipped():
    from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import CommandError, Runner
    real = _RealModule()
    plan_runner = _gds_plan.PlanRunner(Runner(real))
    first = plan_runner.for_stage(_gds_plan.StageModule(real, {}))
    second = plan_runner.for_stage(_gds_plan.StageModule(real, {}))
    assert first.run(["ofed_info", "-s"]).ok and second.run(["ofed_info", "-s"]).ok
    assert second.run(["dkms", "build", "x"], mutates=True).skipped
    assert real.commands == [["/usr/bin/ofed_info", "-s"]]
    real.run_command = lambda argv, **kwargs: (3, "", "no such module")  # a failed read is remembered too
    with pytest.raises(CommandError):
        first.run(["dkms", "status"])
    assert not second.run(["dkms", "status"], check=False).ok


def test_the_stages_of_a_plan_look_a_program_up_once_and_a_missing_one_again():
    from ansible_collections.gpudirect.storage.plugins.module_utils._common.runner import Runner
    real, looked_up = _RealModule(), []
    real.get_bin_path = lambda name, required=False, opt_dirs=None: looked_up.append(name) or (
        None if name == "dnf" else "/usr/bin/" + name)
    plan_runner = _gds_plan.PlanRunner(Runner(real))
    first = plan_runner.for_stage(_gds_plan.StageModule(real, {}))
    second = plan_runner.for_stage(_gds_plan.StageModule(real, {}))
    assert first.which("dkms") == second.which("dkms") == "/usr/bin/dkms"
    assert first.which("dnf") is None and second.which("dnf") is None
    assert looked_up == ["dkms", "dnf", "dnf"]  # not found is not remembered: required=True must raise


def test_the_converged_plan_asks_each_read_only_command_once(host):
    for main, args in ((mofed.main, MOFED), (nvidia_fs.main, NVFS)):
        assert not host.run(main, args).get("failed")
    res = plan(host)
    assert res["converged"] is True
    stage_calls = [tuple(a[1:]) for a in host.argvs("dkms")]
    assert len(stage_calls) == len(set(stage_calls)) == 1, stage_calls  # mofed and nvidia_fs both ask dkms status
    # the facts read after the stages: nothing wrote in between, so their ofed_info is the stages'
    assert len(host.argvs("ofed_info")) == 1


def test_dpkg_status_is_read_not_queried_where_it_alone_is_the_answer(host):
    for main, args in ((mofed.main, MOFED), (nvidia_fs.main, NVFS)):
        assert not host.run(main, args).get("failed")
    before = dict((name, host.run(main, args, check_mode=True)["packages"]["before"])
                  for name, main, args in (("mofed", mofed.main, MOFED), ("nvidia_fs", nvidia_fs.main, NVFS)))
    host.write("var/lib/dpkg/status", "".join(
        "Package: %s\nStatus: install ok installed\nArchitecture: amd64\nVersion: %s\n\n" % item
        for item in sorted(host.installed.items())))
    host.calls[:] = []
    res = plan(host)
    assert res["converged"] is True and host.argvs("dpkg-query") == []
    assert dict((name, res["stages"][name]["packages"]["before"]) for name in before) == before
    host.write("var/lib/dpkg/updates/0000", "Package: nvidia-fs-dkms\nStatus: install ok unpacked\n")
    host.calls[:] = []
    assert plan(host)["converged"] is True and len(host.argvs("dpkg-query")) == 1  # the journal: asked


def test_one_package_query_answers_every_stage_of_a_plan(host):
    # mofed and nvidia_fs both read the package database; a plan changes nothing, so one query of
    # every name the stages ask answers them all. The repositories (apt-cache policy; on EL 9 dnf
    # repoquery, which loads every repository's metadata) are asked only when a stage needs a
    # version the host does not have: a converged host never needs them
    for main, args in ((mofed.main, MOFED), (nvidia_fs.main, NVFS)):
        assert not host.run(main, args).get("failed")
    res = plan(host)  # host.calls: this run's commands
    assert res["converged"] is True
    assert (len(host.argvs("dpkg-query")), len(host.argvs("apt-cache"))) == (1, 0)
    assert res["stages"]["mofed"]["packages"]["before"] == host.run(mofed.main, MOFED, check_mode=True)["packages"]["before"]
    assert res["stages"]["nvidia_fs"]["packages"]["before"] == host.run(nvidia_fs.main, NVFS, check_mode=True)["packages"]["before"]


def test_a_plan_that_needs_the_repositories_asks_them_once_for_every_stage(host):
    res = plan(host)  # a fresh host: both stages pick versions from the repositories
    assert res["stages"]["mofed"]["changed"] and res["stages"]["nvidia_fs"]["changed"]
    assert (len(host.argvs("dpkg-query")), len(host.argvs("apt-cache"))) == (1, 1)
    assert stage_view(res["stages"]["nvidia_fs"]) == stage_view(host.run(nvidia_fs.main, NVFS, check_mode=True))


def test_an_upgrade_the_repositories_offer_is_still_found_on_an_installed_host(host):
    # a pinned version prefix is resolved against the repositories even when an older matching
    # package is installed: the plan reports the version the stage targets, as the stage does
    for main, args in ((mofed.main, MOFED), (nvidia_fs.main, NVFS)):
        assert not host.run(main, args).get("failed")
    host.available["nvidia-fs-dkms"].insert(0, "2.28.3-1")
    pinned = dict(NVFS, version="2.28")
    res = plan(host, nvidia_fs=pinned)
    alone = host.run(nvidia_fs.main, pinned, check_mode=True)
    assert res["stages"]["nvidia_fs"]["nvidia_fs_version"] == alone["nvidia_fs_version"] == "2.28.3-1"
    assert stage_view(res["stages"]["nvidia_fs"]) == stage_view(alone)
