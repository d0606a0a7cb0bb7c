# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The README of the installed collection, followed as written from an empty directory that holds
only the tarball of `make build`: its ```sh blocks run in order in one shell; the commands that
need a fleet (its plain ``` block) run with --list-hosts, which resolves the playbooks by FQCN
and parses their extra vars without contacting a host."""

import os
import re
import shutil
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.dirname(sys.executable)


def _readme_blocks(text):
    return re.findall(r"^```(\w*)\n(.*?)^```$", text, re.S | re.M)


def test_the_installed_readme_works_from_an_empty_directory(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([os.path.join(ROOT, "tests", "utils", "build-collection.sh"), ROOT, str(dist)], check=True,
                   env=dict(os.environ, ANSIBLE_GALAXY=os.path.join(VENV_BIN, "ansible-galaxy")),
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    (tarball,) = os.listdir(str(dist))
    with tarfile.open(str(dist / tarball)) as tar:
        readme = tar.extractfile("README.md").read().decode()
        assert tar.extractfile("MANIFEST.json") and not [n for n in tar.getnames() if n.startswith("requirements/")]
    with open(os.path.join(ROOT, "README-collection.md")) as f:
        assert readme == f.read()
    assert "make " not in readme  # the Makefile is the developers' and is not installed
    blocks = _readme_blocks(readme)
    steps = [body for lang, body in blocks if lang == "sh"]
    fleet = [body for lang, body in blocks if lang == ""]
    assert len(steps) >= 3 and len(fleet) == 1 and tarball in steps[0]
    fleet_commands = fleet[0].replace("\\\n", " ").splitlines()
    assert fleet_commands and all(c.startswith("ansible-playbook -i inventory gpudirect.storage.") for c in fleet_commands)

    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(str(dist / tarball), str(work))
    script = "set -eu\n" + "".join(steps) + "".join(c + " --list-hosts\n" for c in fleet_commands)
    # a clean user environment: no ansible.cfg or collection path of this checkout's
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PYTHON"))}
    env.update(HOME=str(tmp_path / "home"), PATH=VENV_BIN + os.pathsep + os.environ["PATH"])
    res = subprocess.run(["bash", "-c", script], cwd=str(work), env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=600, check=False)
    out = res.stdout.decode()
    assert res.returncode == 0, out
    installed = work / "collections" / "ansible_collections" / "gpudirect" / "storage"
    assert (installed / "README.md").read_text() == readme and (work / "inventory" / "hosts.yml").is_file()
    assert "gpudirect.storage.gds_facts" in out and "# cufile.json keys of libcufile 1.15" in out
    assert out.count("gpu-a01.example.internal") >= 4  # the graph and each --list-hosts
