# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""playbooks/site.yml on a mixed lab: one Debian 12 host and one EL 9 host (issue 22).

The EL 9 host is ``labctl up --os el9``: Debian underneath, with Debian's real dnf and rpm, RHEL
9's dnf.conf, an rpm database and Rocky Linux 9's os-release; its GDS test packages are signed
rpms served by the lab (build/aptrepo/el9, gpgcheck=1), the Debian host's the signed apt
repository. The EL host also sets package_repo_url: site.yml's optional first stage adds a
second signed dnf repository with the key it is given (gpgcheck=1, repo_gpgcheck=1) and installs
a pinned package from it.

As on Debian (test_checkmode.py): check mode and check mode with --diff leave both hosts byte
for byte as they were (/etc, the package databases, the fake module state, the shim logs) while
every stage predicts its changes; a converge does what the plan said; a second converge reports
changed=0 for every host and every stage; check mode on the converged fleet predicts nothing.
"""

from __future__ import annotations

import os

import pytest

from _reliability import (SNAPSHOT_TREES, host_root, in_host, parse_recap, playbook, snapshot, snapshot_changes,
                          task_results)
from conftest import APTREPO, LABCTL, Lab, run
from test_checkmode import STAGES, assert_converged_per_stage, assert_plan_would_change_every_stage, reported

# The rpm database is compared by its contents (rpm -qa): a read-only query leaves sqlite's
# rpmdb.sqlite-shm/-wal behind and may checkpoint earlier writes into rpmdb.sqlite.
TREES = SNAPSHOT_TREES + ("var/lib/dnf",)
REPO_STAGE = "A signed apt or dnf repository and packages from it"  # the include_role task
DNF_REPO_TASK = "gpudirect.storage.package_repo : Configure the signed dnf repository"
EXTRA_REPO = "gds-extra"
EXTRA_KEY = "/etc/pki/rpm-gpg/RPM-GPG-KEY-" + EXTRA_REPO


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("el9mix")
    name = "el9mix-%d" % os.getpid()
    try:
        lab = Lab(name, 2, tmp, os_spec="debian12,el9")
    except BaseException:
        run([LABCTL, "down", "--name", name], check=False)
        raise
    try:
        debian, el = [h["name"] for h in lab.hosts]
        os.makedirs(str(tmp / "host_vars"))
        with open(os.path.join(APTREPO, "el9", "RPM-GPG-KEY-gds-test")) as f:
            key = f.read()
        with open(str(tmp / "host_vars" / (el + ".yml")), "w") as f:
            f.write("package_repo_name: %s\npackage_repo_url: \"{{ lab_repo_url }}el9/\"\n"
                    "package_repo_packages: [gds-lab-probe=1.0-1]\npackage_repo_key: |\n%s"
                    % (EXTRA_REPO, "".join("  " + line + "\n" for line in key.strip().splitlines())))
        rc, out = playbook(lab, "lab/prepare.yml")
        assert rc == 0, out[-4000:]
        lab.debian, lab.el = debian, el
        yield lab
    finally:
        lab.down()


def _snapshot(lab):
    out = dict((h["name"], snapshot(host_root(lab.name, h["name"]), TREES)) for h in lab.hosts)
    out["rpm -qa"] = sorted(in_host(lab.name, lab.el, ["rpm", "-qa"]).stdout.split())
    return out


def _statuses(out, host, header):
    return [status for task, status, h, _data in task_results(out) if h == host and task == header]


def _check_runs(lab, tmp_path, expect_changes, runs):
    before = _snapshot(lab)
    hosts = [lab.debian, lab.el]
    for extra in runs:
        rc, out = playbook(lab, "playbooks/site.yml", "-v", *extra, report_dir=tmp_path / "reports-check")
        assert rc == 0, out[-6000:]
        after = _snapshot(lab)
        for host in hosts:
            assert snapshot_changes(before[host], after[host]) == [], (extra, host)
        assert before["rpm -qa"] == after["rpm -qa"], extra
        recap = parse_recap(out)
        results = reported(out)
        if expect_changes:
            assert_plan_would_change_every_stage(results, hosts)
            for host in hosts:
                for stage in STAGES:
                    assert results[host][stage]["changed"] is True, (host, stage, results[host][stage])
                assert any(a.startswith("install nvidia-fs-dkms=") for a in results[host]["nvidia_fs"]["actions"])
                assert any(a.startswith("install doca-ofed=") for a in results[host]["mofed"]["actions"])
            assert recap[lab.el]["changed"] >= 4  # the three stages and the extra repository
        else:
            assert_converged_per_stage(results, hosts)
            for host in hosts:
                assert recap[host]["changed"] == 0 and recap[host]["failed"] == 0, (host, recap[host])
        if "--diff" in extra and expect_changes:
            assert "+++ after" in out
    assert not (tmp_path / "reports-check").exists() or os.listdir(str(tmp_path / "reports-check")) == []


def test_site_yml_on_a_mixed_debian_and_el9_lab(mixed, tmp_path):
    lab = mixed
    hosts = [lab.debian, lab.el]
    el_root = host_root(lab.name, lab.el)
    with open(os.path.join(el_root, "etc/os-release")) as f:
        assert 'ID="rocky"' in f.read()

    _check_runs(lab, tmp_path, True, (["--check"], ["--check", "--diff"]))

    rc, first = playbook(lab, "playbooks/site.yml", "-v", report_dir=tmp_path / "reports")
    assert rc == 0, first[-6000:]
    results = reported(first)
    assert_plan_would_change_every_stage(results, hosts)
    for host in hosts:
        for stage in STAGES:
            done = results[host][stage]
            assert done["_status"] == "changed" and not done.get("failed"), (host, stage, done)
    # the EL host: rpms from the signed lab repository, the .repo file the modules wrote
    rpms = in_host(lab.name, lab.el, ["rpm", "-q", "doca-ofed", "nvidia-fs-dkms", "nvidia-fs",
                                      "libcufile-13-0", "gds-tools-13-0", "gds-lab-probe"]).stdout.split()
    assert rpms == ["doca-ofed-3.2.1-044000_25.10.el9.noarch", "nvidia-fs-dkms-2.28.2-1.noarch",
                    "nvidia-fs-2.28.2-1.noarch", "libcufile-13-0-1.15.1.6-1.noarch",
                    "gds-tools-13-0-1.15.1.6-1.noarch", "gds-lab-probe-1.0-1.noarch"], rpms
    with open(os.path.join(el_root, "etc/yum.repos.d/gds-test.repo")) as f:
        text = f.read()
    assert "gpgcheck=1\n" in text and "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-gds-test\n" in text
    with open(os.path.join(el_root, "var/log/gds-shims/modprobe.calls")) as f:
        assert f.read().splitlines() == ["modprobe nvidia_fs rw_stats_enabled=1"]
    # package_repo on dnf: the key it was given, packages and metadata checked against it
    with open(os.path.join(el_root, "etc/yum.repos.d/%s.repo" % EXTRA_REPO)) as f:
        text = f.read()
    assert "gpgcheck = 1\n" in text and "repo_gpgcheck = 1\n" in text
    assert "gpgkey = file://%s\n" % EXTRA_KEY in text
    with open(os.path.join(el_root, EXTRA_KEY.lstrip("/"))) as f, \
            open(os.path.join(APTREPO, "el9", "RPM-GPG-KEY-gds-test")) as g:
        assert f.read().strip() == g.read().strip()
    assert _statuses(first, lab.el, DNF_REPO_TASK) == ["changed"]
    # the host without package_repo_url is not in the repository play at all (one grouping task
    # for the fleet instead of a skipped task per host); the EL host ran it (DNF_REPO_TASK above)
    assert _statuses(first, lab.debian, REPO_STAGE) == []
    # the Debian host: debs, as before
    dpkg = in_host(lab.name, lab.debian, ["dpkg-query", "-W", "-f=${Package}=${Version}\n", "doca-ofed", "nvidia-fs-dkms"])
    assert dpkg.stdout.split() == ["doca-ofed=3.2.1-044000-25.10-debian12", "nvidia-fs-dkms=2.28.2-1"]

    rc, second = playbook(lab, "playbooks/site.yml", "-v", report_dir=tmp_path / "reports")
    assert rc == 0, second[-6000:]
    recap = parse_recap(second)
    for host in hosts + ["localhost"]:
        assert recap[host]["changed"] == 0 and recap[host]["failed"] == 0, (host, recap[host])
    assert_converged_per_stage(reported(second), hosts)
    assert _statuses(second, lab.el, DNF_REPO_TASK) == ["ok"]

    _check_runs(lab, tmp_path, False, (["--check", "--diff"],))
