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

import json
import os
import sys

import pytest
import yaml

from _reliability import (SNAPSHOT_TREES, host_root, in_host, parse_recap, playbook, snapshot, snapshot_changes,
                          task_results)
from conftest import APTREPO, LABCTL, ROOT, Lab, run
from test_checkmode import STAGES, assert_converged_per_stage, assert_plan_would_change_every_stage, reported

# The rpm database is compared by its contents (rpm -qa): a read-only query leaves sqlite's
# rpmdb.sqlite-shm/-wal behind and may checkpoint earlier writes into rpmdb.sqlite.
TREES = SNAPSHOT_TREES + ("var/lib/dnf",)
REPO_STAGE = "A signed apt or dnf repository and packages from it"  # the include_role task
DNF_REPO_TASK = "gpudirect.storage.package_repo : Configure the signed dnf repositories"
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


# --------------------------------------------------------------------------- package_repo's EL 9 options
# Three repositories the way EL 9 hosts meet them, built by tests/fixtures/rpmrepo/build.py (each
# with its own throwaway key): "crb" defined on the host but disabled (as Rocky and AlmaLinux ship
# it), "epel" signing its packages but not its metadata (as EPEL's mirrors), and "cuda" with
# NVIDIA's module streams (nvidia-driver:575-dkms and :580-dkms; a stream's packages are hidden
# until it is enabled). EPEL's dkms requires a package only CRB has.
EL9_REPOS = {
    "crb": {"packages": [
        {"name": "gds-lab-crb-dep", "version": "1.0-1", "description": "what EPEL's dkms needs from CRB"},
        {"name": "kernel-devel", "version": "5.14.0-570.12.1.el9_6", "description": "kernel headers",
         "rpm": {"arch": "x86_64"}}]},
    "epel": {"packages": [{"name": "dkms", "version": "3.1.8-1", "description": "EPEL's dkms",
                           "depends": ["gds-lab-crb-dep"]}]},
    "cuda": {"packages": [{"name": "nvidia-driver", "version": "575.57.08-1", "description": "driver, 575 stream"},
                          {"name": "nvidia-driver", "version": "580.65.06-1", "description": "driver, 580 stream"}]},
}
KERNEL = "5.14.0-570.12.1.el9_6.x86_64"
STREAMS = [{"document": "modulemd", "version": 2, "data": {
    "name": "nvidia-driver", "stream": stream, "version": 20250101000000, "context": "00000000", "arch": "x86_64",
    "summary": "NVIDIA driver", "description": "lab stand-in", "license": {"module": ["MIT"]},
    "profiles": {"default": {"rpms": ["nvidia-driver"]}}, "artifacts": {"rpms": ["nvidia-driver-0:%s.noarch" % v]}}}
    for stream, v in (("575-dkms", "575.57.08-1"), ("580-dkms", "580.65.06-1"))]
PACKAGE_REPO_PLAY = """- name: package_repo alone
  hosts: all
  gather_facts: false
  tasks:
    - name: The role
      ansible.builtin.include_role:
        name: gpudirect.storage.package_repo
"""


class ServedLab(object):
    """One EL 9 lab host and the lab's http server on a directory of this test's own."""

    def __init__(self, name, tmp, serve):
        self.name = name
        self.inventory = str(tmp / "hosts.yml")
        res = run([LABCTL, "up", "--name", name, "--n", "1", "--json", "--serve", serve, "--inventory", self.inventory,
                   "--os", "el9"], timeout=600)
        info = json.loads(res.stdout.strip().splitlines()[-1])
        self.host = info["hosts"][0]["name"]
        self.repo_url = info["repo_url"]
        os.symlink(os.path.join(ROOT, "inventories/lab/group_vars"), str(tmp / "group_vars"))


@pytest.fixture(scope="module")
def el9_repos(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("el9repos")
    serve = tmp / "serve"
    with open(str(tmp / "modules.yaml"), "w") as f:
        yaml.safe_dump_all(STREAMS, f, explicit_start=True)
    for name, spec in EL9_REPOS.items():
        with open(str(tmp / (name + ".yml")), "w") as f:
            yaml.safe_dump(spec, f)
        extra = {"epel": ["--unsigned-metadata"], "cuda": ["--modules", str(tmp / "modules.yaml")]}.get(name, [])
        run([sys.executable, os.path.join(ROOT, "tests/fixtures/rpmrepo/build.py"), "--out", str(serve / name)]
            + extra + [str(tmp / (name + ".yml"))])
    name = "el9repo-%d" % os.getpid()
    try:
        lab = ServedLab(name, tmp, str(serve))
        # CRB as Rocky 9 defines it: in the host's own .repo file, disabled
        in_host(name, lab.host, ["sh", "-c", "printf '[crb]\\nname=CRB\\nbaseurl=%scrb/\\nenabled=0\\ngpgcheck=1\\n"
                                 "gpgkey=%scrb/RPM-GPG-KEY-gds-test\\n' > /etc/yum.repos.d/rocky-lab.repo"
                                 % (lab.repo_url, lab.repo_url)])
        lab.keys = dict((r, open(str(serve / r / "RPM-GPG-KEY-gds-test")).read()) for r in EL9_REPOS)
        lab.tmp = tmp
        with open(str(tmp / "package_repo.yml"), "w") as f:
            f.write(PACKAGE_REPO_PLAY)
        yield lab
    finally:
        run([LABCTL, "down", "--name", name], check=False)


def _package_repo(lab, tmp_path, settings, *args):
    with open(str(tmp_path / "vars.yml"), "w") as f:
        yaml.safe_dump(settings, f)
    return playbook(lab, str(lab.tmp / "package_repo.yml"), "-e", "@%s" % (tmp_path / "vars.yml"), *args)


def _el9_state(lab):
    root = host_root(lab.name, lab.host)
    return snapshot(root, ("etc", "var/lib/dnf/modulefailsafe")), sorted(in_host(lab.name, lab.host, ["rpm", "-qa"]).stdout.split())


def test_package_repo_on_el9_crb_epel_module_stream_kernel_devel(el9_repos, tmp_path):
    lab = el9_repos
    settings = {
        "package_repo_name": "cuda-lab", "package_repo_url": lab.repo_url + "cuda/", "package_repo_key": lab.keys["cuda"],
        "package_repo_repositories": [{"name": "epel-lab", "url": lab.repo_url + "epel/", "key": lab.keys["epel"],
                                       "repo_gpgcheck": False}],
        "package_repo_dnf_enable_repos": ["crb"], "package_repo_dnf_modules": ["nvidia-driver:575-dkms"],
        "package_repo_kernel_devel": True, "package_repo_kernel_release": KERNEL,
        "package_repo_packages": ["dkms", "nvidia-driver"]}
    before = _el9_state(lab)

    # check mode (and --diff) changes nothing and shows the repository files it would write
    rc, out = _package_repo(lab, tmp_path, settings, "--check", "--diff")
    assert rc == 0, out[-6000:]
    assert "+repo_gpgcheck = 0" in out and "+repo_gpgcheck = 1" in out, out[-6000:]
    assert _statuses(out, lab.host, "gpudirect.storage.package_repo : Enable the dnf repositories defined on the host "
                     "(check mode)") == ["changed"]
    assert "would enable crb" in out
    assert _el9_state(lab) == before

    rc, out = _package_repo(lab, tmp_path, settings)
    assert rc == 0, out[-6000:]
    rpms = in_host(lab.name, lab.host, ["rpm", "-q", "dkms", "gds-lab-crb-dep", "nvidia-driver", "kernel-devel"]).stdout
    # the 575 stream's driver although the repository offers 580 too: the stream was enabled first
    assert rpms.split() == ["dkms-3.1.8-1.noarch", "gds-lab-crb-dep-1.0-1.noarch", "nvidia-driver-575.57.08-1.noarch",
                            "kernel-devel-%s" % KERNEL], rpms
    listed = in_host(lab.name, lab.host, ["dnf", "-q", "repolist", "--enabled"]).stdout
    assert "crb " in listed and "epel-lab " in listed and "cuda-lab " in listed, listed
    root = host_root(lab.name, lab.host)
    with open(os.path.join(root, "etc/yum.repos.d/epel-lab.repo")) as f:
        text = f.read()
    assert "gpgcheck = 1\n" in text and "repo_gpgcheck = 0\n" in text, text
    with open(os.path.join(root, "etc/yum.repos.d/cuda-lab.repo")) as f:
        assert "repo_gpgcheck = 1\n" in f.read()
    with open(os.path.join(root, "etc/dnf/modules.d/nvidia-driver.module")) as f:
        module = f.read()
    assert "stream=575-dkms\n" in module and "state=enabled\n" in module, module

    rc, out = _package_repo(lab, tmp_path, settings)
    assert rc == 0 and parse_recap(out)[lab.host]["changed"] == 0, out[-6000:]
    converged = _el9_state(lab)
    rc, out = _package_repo(lab, tmp_path, settings, "--check", "--diff")
    assert rc == 0 and parse_recap(out)[lab.host]["changed"] == 0, out[-6000:]

    # a stream not enabled yet, on a host whose repositories are configured: check mode says so
    rc, out = _package_repo(lab, tmp_path, dict(settings, package_repo_dnf_modules=["nvidia-driver:575-dkms", "other:1"]),
                            "--check")
    assert rc == 0 and "would enable other:1" in out and parse_recap(out)[lab.host]["changed"] == 1, out[-6000:]
    assert _el9_state(lab) == converged

    # another stream of an enabled module: refused, naming the variable, nothing switched
    rc, out = _package_repo(lab, tmp_path, dict(settings, package_repo_dnf_modules=["nvidia-driver:580-dkms"]))
    assert rc != 0 and "package_repo_dnf_modules: nvidia-driver:575-dkms enabled on the host" in out, out[-6000:]
    assert _el9_state(lab) == converged


def test_package_repo_checks_metadata_signatures_unless_told(el9_repos, tmp_path):
    """The unsigned-metadata repository is refused with repo_gpgcheck on (the default): the check is real."""
    lab = el9_repos
    settings = {"package_repo_name": "epel-strict", "package_repo_url": lab.repo_url + "epel/",
                "package_repo_key": lab.keys["epel"], "package_repo_packages": ["dkms"],
                "package_repo_dnf_enable_repos": ["crb"]}
    try:
        rc, out = _package_repo(lab, tmp_path, settings)
        assert rc != 0 and "repomd.xml" in out, out[-6000:]
    finally:
        rc, out = _package_repo(lab, tmp_path, dict(settings, package_repo_state="absent"))
        assert rc == 0, out[-6000:]
    assert not os.path.exists(os.path.join(host_root(lab.name, lab.host), "etc/yum.repos.d/epel-strict.repo"))
