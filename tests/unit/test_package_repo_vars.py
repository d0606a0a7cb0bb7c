# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What roles/package_repo/vars/main.yml makes of dnf's answers (captured from dnf 4 on the lab's
EL 9 hosts): the repositories and module streams still to enable, another stream of a wanted
module, the kernel headers' package. A real ansible-playbook templates them on localhost."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

REPOLIST = """repo id                                 repo name
_dnf_local                              _dnf_local
appstream                               Rocky Linux 9 - AppStream
codeready-builder-for-rhel-9-x86_64-rpms Red Hat CodeReady Linux Builder for RHEL 9 x86_64 (RPMs)
"""
MODULES = """cuda
Name          Stream       Profiles Summary
nvidia-driver 575-dkms [e] default  NVIDIA driver

rocky-appstream
Name          Stream       Profiles     Summary
nodejs        18 [d][e]    common [d]   Javascript runtime

Hint: [d]efault, [e]nabled, [x]disabled, [i]nstalled
"""
OUTPUTS = ("package_repo_dnf_to_enable", "package_repo_dnf_enabled_streams", "package_repo_dnf_streams_to_enable",
           "package_repo_dnf_stream_conflicts", "package_repo_wanted_packages")


def hermetic_env(tmp_path):
    """The caller's environment without its Ansible settings: no ANSIBLE_CONFIG (make exports the
    lab's, which loads the report callback from the working tree), no ansible.cfg of the current
    directory (another test may have changed it), an empty config and Ansible's home of this test,
    and a fixed string-hash seed."""
    config = tmp_path / "ansible.cfg"
    config.write_text("[defaults]\n")
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "GDS_")))
    # one string-hash order in every run: a list that came out of a set differs from the user's
    # order under this seed, as under about half of the random ones
    env.update(ANSIBLE_CONFIG=str(config), ANSIBLE_HOME=str(tmp_path / "ansible-home"), ANSIBLE_NOCOLOR="1",
               PYTHONHASHSEED="0")
    return env


def template(tmp_path, settings, registered):
    """The role's vars/main.yml values for ``settings`` (role variables) and ``registered`` (the
    results of its query tasks, or absent: skipped)."""
    with open(os.path.join(ROOT, "roles", "package_repo", "defaults", "main.yml")) as f:
        play_vars = dict(yaml.safe_load(f), **settings)
    out = tmp_path / "out.json"
    tasks = [{"ansible.builtin.set_fact": {name: value}} for name, value in registered.items()]
    tasks.append({"ansible.builtin.include_vars": os.path.join(ROOT, "roles", "package_repo", "vars", "main.yml")})
    tasks.append({"ansible.builtin.copy": {"dest": str(out), "mode": "0600",
                                           "content": "{{ {%s} | to_json }}" % ", ".join("'%s': %s" % (n, n) for n in OUTPUTS)}})
    book = tmp_path / "book.yml"
    book.write_text(yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "vars": play_vars, "tasks": tasks}]))
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", "ansible_python_interpreter=" + sys.executable,
            "-e", json.dumps({"ansible_facts": {"pkg_mgr": "dnf", "kernel": "5.14.0-570.12.1.el9_6.x86_64"}}), str(book)]
    res = subprocess.run(argv, cwd=str(tmp_path), env=hermetic_env(tmp_path), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stdout[-3000:]
    return json.loads(out.read_text())


def test_what_is_still_to_enable_from_dnfs_answers(tmp_path):
    got = template(tmp_path, {
        "package_repo_dnf_enable_repos": ["crb", "codeready-builder-for-rhel-9-x86_64-rpms"],
        "package_repo_dnf_modules": ["nvidia-driver:580-dkms", "nodejs:18", "mariadb:10.11"],
        "package_repo_kernel_devel": True, "package_repo_packages": ["dkms"]},
        {"package_repo_dnf_enabled": {"stdout_lines": REPOLIST.splitlines(), "rc": 0},
         "package_repo_dnf_streams": {"stdout": MODULES, "rc": 0}})
    assert got == {
        "package_repo_dnf_to_enable": ["crb"],  # a repository id longer than dnf's column counts too
        "package_repo_dnf_enabled_streams": ["nvidia-driver:575-dkms", "nodejs:18"],
        "package_repo_dnf_streams_to_enable": ["nvidia-driver:580-dkms", "mariadb:10.11"],
        "package_repo_dnf_stream_conflicts": ["nvidia-driver:575-dkms"],
        "package_repo_wanted_packages": ["dkms", "kernel-devel-5.14.0-570.12.1.el9_6.x86_64"]}


def test_skipped_queries_and_nothing_enabled(tmp_path):
    skipped = {"skipped": True, "changed": False}
    got = template(tmp_path, {"package_repo_dnf_modules": ["nvidia-driver:580-dkms"],
                              "package_repo_kernel_release": "5.14.0-611.el9.x86_64", "package_repo_kernel_devel": True},
                   {"package_repo_dnf_enabled": skipped, "package_repo_dnf_streams": skipped})
    assert got["package_repo_dnf_to_enable"] == [] and got["package_repo_dnf_enabled_streams"] == []
    assert got["package_repo_dnf_streams_to_enable"] == ["nvidia-driver:580-dkms"]
    assert got["package_repo_dnf_stream_conflicts"] == []
    assert got["package_repo_wanted_packages"] == ["kernel-devel-5.14.0-611.el9.x86_64"]
    # "dnf module list --enabled" with no stream enabled: rc 1, nothing on stdout
    got = template(tmp_path, {"package_repo_dnf_modules": ["nvidia-driver:580-dkms"]},
                   {"package_repo_dnf_streams": {"stdout": "", "rc": 1, "stderr": "Error: No matching Modules to list"}})
    assert got["package_repo_dnf_enabled_streams"] == [] and got["package_repo_dnf_stream_conflicts"] == []
