# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Check mode and idempotence of the whole playbooks/site.yml on real lab hosts (issues 10, 18).

One lab of three prepared hosts (lab/prepare.yml: fake /proc tree, recording modprobe/dkms
shims). Check mode, then check mode with --diff, must leave every host byte-identical: /etc,
the package database and apt lists, the fake module state, the DKMS tree and the shim call logs
(which may only grow by read-only ``dkms status`` calls). Then a converge, and a second converge
that reports changed=0 for every host and every role.

Every assertion is per stage, on what the stage reported (``-v`` prints each task's result):
the plan's ``gds_plan`` result (``stages.<mofed|nvidia_fs|cufile>``, the verdict of a converged
host) and each rollout stage's own task result - never merely that a role's tasks "ran" (the
roles' ``plan`` entry points, which only validate variables, would satisfy that).
"""

from __future__ import annotations

import json
import os

import pytest

from _reliability import fleet_snapshot, host_root, parse_recap, playbook, prepared_lab, snapshot_changes, task_results

STAGES = ("mofed", "nvidia_fs", "cufile")
PLAN_TASK = "gpudirect.storage.gds_plan : Plan the stages in check mode"
STAGE_TASKS = {
    "mofed": "gpudirect.storage.mofed : Ensure the RDMA stack",
    "nvidia_fs": "gpudirect.storage.nvidia_fs : Install, build, load and persist nvidia-fs",
    "cufile": "gpudirect.storage.cufile : Write a validated cufile.json",
    "gds_verify": "gpudirect.storage.gds_verify : Gather GDS facts and prove the data path",
}
HAND_WRITTEN = (b"// tuned by hand for this host's Lustre mounts - do not replace\n"
                b'{ "properties": { "io_batchsize": 64,   "max_direct_io_size_kb": 8192 },\n'
                b'  "logging": { "level": "ERROR" } }\n')


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("checkmode")
    lab = prepared_lab("rel-check", 3, tmp)
    try:
        yield lab
    finally:
        lab.down()


def _host_names(lab):
    return [h["name"] for h in lab.hosts]


def reported(out):
    """{host: {"plan": gds_plan's result, "<stage>": that stage task's result, ...}} from -v output
    (the status of each task result is kept as ``_status``)."""
    seen = {}
    for task, status, host, data in task_results(out):
        for name, header in [("plan", PLAN_TASK)] + list(STAGE_TASKS.items()):
            if task and task.startswith(header) and status != "skipping":
                assert data is not None, (task, host, "run the playbook with -v")
                seen.setdefault(host, {})[name] = dict(data, _status=status)
    return seen


def _packages(actions):
    """The package actions, without versions: "install nvidia-fs=2.28.2-1" -> "install nvidia-fs"."""
    return set(a.split("=")[0] for a in actions if "=" in a or a.startswith("remove "))


def assert_plan_would_change_every_stage(results, hosts):
    for host in hosts:
        plan = results[host]["plan"]
        assert plan["converged"] is False and plan["add_group"] == "gds_rollout", (host, plan.get("msg"))
        for stage in STAGES:
            planned = plan["stages"][stage]
            assert planned["failed"] is False and planned["changed"] is True, (host, stage, planned)
            assert planned.get("actions") or planned.get("reasons"), (host, stage, planned)
        assert plan["stages"]["cufile"]["base"] == "shipped"  # the lab asks for the shipped file (group_vars)


def assert_converged_per_stage(results, hosts, kept_cufile=False):
    """The plan saw nothing to do in any stage and verified the host; no rollout stage ran."""
    for host in hosts:
        plan = results[host]["plan"]
        assert plan["converged"] is True and plan["add_group"] == "gds_converged", (host, plan.get("msg"))
        for stage in STAGES:
            planned = plan["stages"][stage]
            assert planned["failed"] is False and planned["changed"] is False, (host, stage, planned)
        assert plan["stages"]["mofed"]["actions"] == [] and plan["stages"]["nvidia_fs"]["actions"] == []
        assert plan["stages"]["cufile"]["reasons"] == []
        assert bool(plan["stages"]["cufile"].get("kept")) is kept_cufile, plan["stages"]["cufile"]
        assert plan["ansible_facts"]["gds"]["mode"] == "unavailable"  # the lab's honest verdict (no GPU)
        assert [s for s in STAGE_TASKS if s in results[host]] == [], (host, sorted(results[host]))


def _check_runs_leave_hosts_identical(lab, tmp_path, record_property, expect_changes, runs):
    """Run site.yml with each of ``runs`` (--check, --check --diff); every host must stay as it
    was, and every stage must report what it would do."""
    reports = tmp_path / "reports-check"
    before = fleet_snapshot(lab)
    changes = {}
    outputs = []
    for extra in runs:
        rc, out = playbook(lab, "playbooks/site.yml", "-v", *extra, report_dir=reports)
        outputs.append((extra, rc, out))
        after = fleet_snapshot(lab)
        for host in _host_names(lab):
            diff = snapshot_changes(before[host], after[host])
            if diff:
                changes["%s %s" % (" ".join(extra), host)] = diff[:20]
    record_property("reliability_checkmode", {"runs": len(runs), "hosts": len(runs) * len(lab.hosts),
                                              "changed": len(set(k.split()[-1] for k in changes))})
    assert changes == {}, changes
    hosts = _host_names(lab)
    for extra, rc, out in outputs:
        assert rc == 0, out[-6000:]
        recap = parse_recap(out)
        for host in hosts:
            assert recap[host]["failed"] == 0 and recap[host]["unreachable"] == 0, out[-6000:]
        results = reported(out)
        if expect_changes:  # check mode evaluated the rollout: the plan and each stage predict the installs
            assert_plan_would_change_every_stage(results, hosts)
            for host in hosts:
                for stage in STAGES:
                    result = results[host][stage]
                    assert result["_status"] == "changed" and result["changed"] is True, (host, stage, result)
                    assert not result.get("failed"), (host, stage, result.get("msg"))
                assert any(a.startswith("install nvidia-fs-dkms=") for a in results[host]["nvidia_fs"]["actions"])
                assert any(a.startswith("install doca-ofed=") for a in results[host]["mofed"]["actions"])
                assert "create" in results[host]["cufile"]["reasons"]
                assert recap[host]["changed"] >= 3, (host, recap[host])
        else:
            assert_converged_per_stage(results, hosts)
            for host in hosts:
                assert recap[host]["changed"] == 0, (host, recap[host], out[-6000:])
        if "--diff" in extra and expect_changes:
            assert "+++ after" in out, "no diff shown"
    assert not reports.exists() or os.listdir(str(reports)) == [], "check mode wrote the fleet report"


def test_check_mode_over_site_yml_changes_nothing_on_fresh_hosts(fleet, tmp_path, record_property):
    _check_runs_leave_hosts_identical(fleet, tmp_path, record_property, True, (["--check"], ["--check", "--diff"]))


def test_second_converge_changes_nothing_on_any_host_or_stage(fleet, tmp_path, record_property):
    reports = tmp_path / "reports"
    hosts = _host_names(fleet)
    before = fleet_snapshot(fleet)
    rc, first = playbook(fleet, "playbooks/site.yml", "-v", report_dir=reports)
    assert rc == 0, first[-6000:]
    after = fleet_snapshot(fleet)
    for host in hosts:  # the snapshot sees what a real run changes (no vacuous check)
        diff = snapshot_changes(before[host], after[host])
        for path in ("etc/cufile.json", "var/lib/dpkg/status", "srv/gds-fake/proc/modules",
                     "etc/modules-load.d/nvidia-fs.conf", "var/log/gds-shims/modprobe.calls"):
            assert path in diff, (host, path, diff[:30])
    results = reported(first)
    assert_plan_would_change_every_stage(results, hosts)
    for host in hosts:  # each stage did what its plan said, and said so
        for stage in STAGES:
            planned = results[host]["plan"]["stages"][stage]
            done = results[host][stage]
            assert done["_status"] == "changed" and done["changed"] is True and not done.get("failed"), (host, stage)
            if stage != "cufile":  # check mode cannot know the versions of a repository not configured yet;
                # the shared repository file the plan saw missing, mofed's run has written by nvidia_fs's turn
                assert _packages(planned["actions"]) <= _packages(done["actions"]), (host, stage, done, planned)
            else:
                assert done["reasons"] == planned["reasons"] == ["create"], (host, done["reasons"])
        assert results[host]["gds_verify"]["ansible_facts"]["gds"]["mode"] == "unavailable"

    rc, second = playbook(fleet, "playbooks/site.yml", "-v", report_dir=reports)
    assert rc == 0, second[-6000:]
    recap = parse_recap(second)
    for host in hosts + ["localhost"]:
        assert recap[host]["changed"] == 0 and recap[host]["failed"] == 0, (host, recap[host])
    assert_converged_per_stage(reported(second), hosts)
    assert os.path.exists(str(reports / "gds-fleet.json"))

    # and check mode on the converged fleet predicts nothing and changes nothing
    _check_runs_leave_hosts_identical(fleet, tmp_path, record_property, False, (["--check", "--diff"],))


def test_a_hand_written_cufile_json_survives_site_yml_with_default_role_variables(fleet, tmp_path):
    """Issue 18: with no cufile option set (the role's defaults - the lab's group_vars ask for
    the shipped file, so they are reset here), a hand-tuned /etc/cufile.json stays byte for byte,
    and CUDA's update-alternatives link stays a link; both are reported, validated."""
    hosts = _host_names(fleet)
    linked = hosts[0]
    for host in hosts:
        etc = os.path.join(host_root(fleet.name, host), "etc")
        os.unlink(os.path.join(etc, "cufile.json"))
        if host == linked:  # as on CUDA 13 hosts: /etc/cufile.json -> /etc/alternatives -> the CUDA tree
            gds = os.path.join(host_root(fleet.name, host), "usr/local/cuda-13.0/gds")
            os.makedirs(gds, exist_ok=True)
            with open(os.path.join(gds, "cufile.json"), "wb") as f:
                f.write(HAND_WRITTEN)
            os.symlink("/usr/local/cuda-13.0/gds/cufile.json", os.path.join(etc, "alternatives", "cufile.json"))
            os.symlink("/etc/alternatives/cufile.json", os.path.join(etc, "cufile.json"))
        else:
            with open(os.path.join(etc, "cufile.json"), "wb") as f:
                f.write(HAND_WRITTEN)
            os.chmod(os.path.join(etc, "cufile.json"), 0o600)
    before = fleet_snapshot(fleet)
    defaults = json.dumps({"cufile_base": "", "cufile_version": "auto"})
    rc, out = playbook(fleet, "playbooks/site.yml", "-v", "-e", defaults, report_dir=tmp_path / "reports")
    assert rc == 0, out[-6000:]
    after = fleet_snapshot(fleet)
    for host in hosts:
        assert snapshot_changes(before[host], after[host]) == [], host
        root = host_root(fleet.name, host)
        cufile_json = os.path.join(root, "etc", "cufile.json")
        if host == linked:  # the links point inside the host's root: follow them there
            assert os.readlink(cufile_json) == "/etc/alternatives/cufile.json"
            assert os.readlink(os.path.join(root, "etc/alternatives/cufile.json")) == "/usr/local/cuda-13.0/gds/cufile.json"
            cufile_json = os.path.join(root, "usr/local/cuda-13.0/gds/cufile.json")
        else:
            assert not os.path.islink(cufile_json) and os.stat(cufile_json).st_mode & 0o777 == 0o600
        with open(cufile_json, "rb") as f:
            assert f.read() == HAND_WRITTEN, host
    results = reported(out)
    assert_converged_per_stage(results, hosts, kept_cufile=True)
    for host in hosts:
        cufile = results[host]["plan"]["stages"]["cufile"]
        assert cufile["valid"] is True and cufile["base"] == "keep", cufile
    assert parse_recap(out)[hosts[0]]["changed"] == 0
