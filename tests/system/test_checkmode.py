# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Check mode and idempotence of the whole playbooks/site.yml on real lab hosts (issue 10).

One lab of three prepared hosts (lab/prepare.yml: fake /proc tree, recording modprobe/dkms
shims). Check mode, then check mode with --diff, must leave every host byte-identical: /etc,
the package database and apt lists, the fake module state, the DKMS tree and the shim call logs
(which may only grow by read-only ``dkms status`` calls). Then a converge, and a second converge
that reports changed=0 for every host and every role.
"""

from __future__ import annotations

import os

import pytest

from _reliability import fleet_snapshot, parse_recap, playbook, prepared_lab, snapshot_changes, task_results

ROLES = ("gds_preflight", "mofed", "nvidia_fs", "cufile", "gds_verify")


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


def _roles_seen(out, status=None):
    seen = {}
    for task, st, host, _data in task_results(out):
        if task and "gpudirect.storage." in task and (status is None or st == status):
            role = task.split(" : ")[0].replace("gpudirect.storage.", "")
            seen.setdefault(role, set()).add(host)
    return seen


def _check_runs_leave_hosts_identical(lab, tmp_path, record_property, expect_changes, runs):
    """Run site.yml with each of ``runs`` (--check, --check --diff); every host must stay as it was."""
    reports = tmp_path / "reports-check"
    before = fleet_snapshot(lab)
    changes = {}
    outputs = []
    for extra in runs:
        rc, out = playbook(lab, "playbooks/site.yml", *extra, report_dir=reports)
        outputs.append((extra, rc, out))
        after = fleet_snapshot(lab)
        for host in _host_names(lab):
            diff = snapshot_changes(before[host], after[host])
            if diff:
                changes["%s %s" % (" ".join(extra), host)] = diff[:20]
    record_property("reliability_checkmode", {"runs": len(runs), "hosts": len(runs) * len(lab.hosts),
                                              "changed": len(set(k.split()[-1] for k in changes))})
    assert changes == {}, changes
    for extra, rc, out in outputs:
        assert rc == 0, out[-6000:]
        recap = parse_recap(out)
        for host in _host_names(lab):
            assert recap[host]["failed"] == 0 and recap[host]["unreachable"] == 0, out[-6000:]
            if expect_changes:  # check mode did evaluate the rollout: it predicts the installs
                assert recap[host]["changed"] >= 3, (host, recap[host])
            else:
                assert recap[host]["changed"] == 0, (host, recap[host], out[-6000:])
        if "--diff" in extra and expect_changes:
            assert "+++ after" in out, "no diff shown"
    assert not reports.exists() or os.listdir(str(reports)) == [], "check mode wrote the fleet report"


def test_check_mode_over_site_yml_changes_nothing_on_fresh_hosts(fleet, tmp_path, record_property):
    _check_runs_leave_hosts_identical(fleet, tmp_path, record_property, True, (["--check"], ["--check", "--diff"]))


def test_second_converge_changes_nothing_on_any_host_or_role(fleet, tmp_path, record_property):
    reports = tmp_path / "reports"
    before = fleet_snapshot(fleet)
    rc, first = playbook(fleet, "playbooks/site.yml", report_dir=reports)
    assert rc == 0, first[-6000:]
    after = fleet_snapshot(fleet)
    for host in _host_names(fleet):  # the snapshot sees what a real run changes (no vacuous check)
        diff = snapshot_changes(before[host], after[host])
        for path in ("etc/cufile.json", "var/lib/dpkg/status", "srv/gds-fake/proc/modules",
                     "etc/modules-load.d/nvidia-fs.conf", "var/log/gds-shims/modprobe.calls"):
            assert path in diff, (host, path, diff[:30])
    changed_first = _roles_seen(first, "changed")
    for role in ("mofed", "nvidia_fs", "cufile"):
        assert changed_first.get(role) == set(_host_names(fleet)), (role, changed_first)

    rc, second = playbook(fleet, "playbooks/site.yml", report_dir=reports)
    assert rc == 0, second[-6000:]
    recap = parse_recap(second)
    for host in _host_names(fleet) + ["localhost"]:
        assert recap[host]["changed"] == 0 and recap[host]["failed"] == 0, (host, recap[host])
    assert _roles_seen(second, "changed") == {}, _roles_seen(second, "changed")
    ran = _roles_seen(second)
    for role in ROLES:
        assert ran.get(role) == set(_host_names(fleet)), (role, ran)
    assert os.path.exists(str(reports / "gds-fleet.json"))

    # and check mode on the converged fleet predicts nothing and changes nothing
    _check_runs_leave_hosts_identical(fleet, tmp_path, record_property, False, (["--check", "--diff"],))
