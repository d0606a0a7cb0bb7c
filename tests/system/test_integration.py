"""Integration targets (tests/integration/targets/<name>/, ansible-test layout) on lab hosts.

A target runs against the first lab host over SSH, or on the controller when its ``aliases``
say ``context/controller``. ``disabled``, ``unsupported`` and ``needs/gpu`` targets are skipped
here (GPU targets run on the GPU host, see tests/gpu/)."""

import os

import pytest

from conftest import ROOT

TARGETS_DIR = os.path.join(ROOT, "tests", "integration", "targets")
SKIP_ALIASES = {"disabled", "unsupported", "needs/gpu", "hidden"}


def _aliases(target):
    path = os.path.join(TARGETS_DIR, target, "aliases")
    if not os.path.exists(path):
        return set()
    with open(path) as f:
        return {line.split("#")[0].strip() for line in f if line.split("#")[0].strip()}


def _targets():
    if not os.path.isdir(TARGETS_DIR):
        return []
    out = []
    for name in sorted(os.listdir(TARGETS_DIR)):
        if not os.path.isdir(os.path.join(TARGETS_DIR, name)) or name.startswith("setup_"):
            continue
        if os.path.exists(os.path.join(TARGETS_DIR, name, "runme.sh")):
            continue  # script targets are driven by their own tests
        marks = [pytest.mark.skip(reason="aliases: %s" % sorted(_aliases(name) & SKIP_ALIASES))] \
            if _aliases(name) & SKIP_ALIASES else []
        out.append(pytest.param(name, marks=marks))
    return out


@pytest.mark.parametrize("target", _targets())
def test_integration_target(target, lab3):
    controller = "context/controller" in _aliases(target)
    hosts = "localhost" if controller else lab3.hosts[0]["name"]
    extra = ["-e", "target=%s" % target, "-e", "target_hosts=%s" % hosts,
             "-e", "lab_repo_url=%s" % lab3.repo_url]
    if controller:
        extra += ["-c", "local", "-e", "ansible_python_interpreter=%s" % os.path.join(ROOT, ".venv/bin/python")]
    res = lab3.playbook(os.path.join(ROOT, "tests/integration/run-target.yml"), *extra,
                        env={"ANSIBLE_ROLES_PATH": TARGETS_DIR}, timeout=1800, check=False)
    assert res.returncode == 0, res.stdout[-8000:]
    assert "failed=0" in res.stdout
