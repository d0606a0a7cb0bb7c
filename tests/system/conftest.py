"""Fixtures for the system suite: the lab (torn down by PID even when a test fails), command
helpers, and the repository root. These tests need root and the packages from
tests/utils/install-system-deps.sh; `make test` provides both."""

import json
import os
import subprocess
import sys

import pytest

from _reliability import pytest_configure  # noqa: F401 pylint: disable=unused-import

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.dirname(sys.executable)
LABCTL = os.path.join(ROOT, "lab", "labctl")
APTREPO = os.path.join(ROOT, "build", "aptrepo")


def run(argv, timeout=1800, env=None, cwd=ROOT, check=True):
    """Run argv; on failure the assertion shows the command and the tail of its output."""
    full_env = dict(os.environ, PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
                    ANSIBLE_CONFIG=os.path.join(ROOT, "lab", "ansible.cfg"), ANSIBLE_NOCOLOR="1",
                    PY_COLORS="0", NO_COLOR="1")
    full_env.update(env or {})
    res = subprocess.run(argv, cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=timeout, check=False)
    if check:
        assert res.returncode == 0, "%s -> rc=%d\n%s" % (" ".join(argv), res.returncode, res.stdout[-6000:])
    return res


def build_aptrepo():
    specs = sorted(os.path.join(ROOT, "tests/fixtures/aptrepo", f)
                   for f in os.listdir(os.path.join(ROOT, "tests/fixtures/aptrepo")) if f.endswith(".yml"))
    run([sys.executable, os.path.join(ROOT, "tests/fixtures/aptrepo/build.py"), "--out", APTREPO] + specs)
    # the same packages as signed rpms for the lab's EL 9 hosts, served under el9/
    run([sys.executable, os.path.join(ROOT, "tests/fixtures/rpmrepo/build.py"), "--out", os.path.join(APTREPO, "el9")]
        + specs)
    return APTREPO


def orphans():
    """What torn-down labs left on this machine (netns, links, mounts, processes, state) that
    belongs to no lab still registered; labs of this test session may be up meanwhile."""
    return set(run([LABCTL, "leftovers", "--orphans"], check=False).stdout.split("\n")) - {""}


class Lab(object):
    """A running lab: hosts, inventory path, repo URL. ``down()`` is idempotent."""

    def __init__(self, name, n, tmpdir, os_spec="debian12"):
        self.name = name
        self.inventory = os.path.join(str(tmpdir), "hosts.yml")
        res = run([LABCTL, "up", "--name", name, "--n", str(n), "--json", "--serve", build_aptrepo(),
                   "--inventory", self.inventory, "--os", os_spec], timeout=600)
        info = json.loads(res.stdout.strip().splitlines()[-1])
        self.hosts = info["hosts"]
        self.repo_url = info["repo_url"]
        self.gateway = info["gateway"]
        # group_vars next to the generated inventory, as in inventories/lab/
        os.symlink(os.path.join(ROOT, "inventories/lab/group_vars"), os.path.join(str(tmpdir), "group_vars"))

    def down(self):
        run([LABCTL, "down", "--name", self.name], check=False)

    def playbook(self, playbook, *args, **kw):
        return run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", self.inventory, playbook] + list(args), **kw)


@pytest.fixture(scope="session")
def lab3(tmp_path_factory):
    """Three lab hosts shared by the integration and playbook tests of one session."""
    lab = Lab("itest", 3, tmp_path_factory.mktemp("lab3"))
    try:
        yield lab
    finally:
        lab.down()
