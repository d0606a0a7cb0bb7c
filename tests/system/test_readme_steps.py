"""The README's "Quick start" and "Your own fleet" steps, as written, on a fresh clone: `make demo`,
then the collection built, the running lab written as an inventory of one's own, the tarball
installed in a directory of one's own and the fleet checked, rolled out and verified from there.
The fenced sh blocks are taken from README.md and run as a user pastes them: the quick start's
in the clone, the own fleet's one after the other in one shell.

What stands in for what: `make venv` is a link to this checkout's virtualenv (the same pinned
requirements; building another one needs the package index), and HOME is a directory of the
test's (the steps write ~/gds-fleet). The lab is named after the clone's path (Makefile
LAB_NAME), so it never touches another checkout's lab.
Run it alone: .venv/bin/pytest tests/system/test_readme_steps.py
"""

import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, orphans


def section_blocks(title):
    """The fenced sh blocks of the README section ``## title``, in order."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    match = re.search(r"^## %s\n(.*?)(?=^## )" % re.escape(title), text, re.M | re.S)
    assert match, "README has no section %r" % title
    return re.findall(r"```sh\n(.*?)```", match.group(1), re.S)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    base = tmp_path_factory.mktemp("readme")
    path = str(base / "gpudirect-storage")
    subprocess.run(["git", "clone", "--quiet", ROOT, path], check=True)
    os.symlink(os.path.realpath(os.path.join(ROOT, ".venv")), os.path.join(path, ".venv"))  # stands in for make venv
    # the clone's files are newer than the linked venv's stamp: say they are not, so that no make
    # target rebuilds (pip-installs into) the shared venv
    subprocess.run(["touch", "-r", os.path.join(path, ".venv", "bin", ".stamp"),
                    os.path.join(path, "requirements", "controller.txt")], check=True)
    home = base / "home"
    home.mkdir()
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV", "GDS_")))
    env.update(HOME=str(home), ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if "/.venv/" not in p)
    try:
        yield {"path": path, "home": str(home), "env": env, "log": str(base / "steps.log")}
    finally:
        subprocess.run(["make", "lab-down"], cwd=path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                       check=False)


def paste(clone, script, timeout=1800):
    """(rc, output) of the script pasted into one bash in the clone, stopping at the first error."""
    res = subprocess.run(["bash", "-e", "-c", script], cwd=clone["path"], env=clone["env"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
    with open(clone["log"], "a") as log:
        log.write("$ %s\n%s\n-> rc=%d\n\n" % (script.strip(), res.stdout, res.returncode))
    return res.returncode, res.stdout


def recap(out):
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^(\S+)\s+: (ok=.*)$", out, re.M)]


def test_the_quick_start_and_your_own_fleet_steps_roll_out_the_lab_from_an_own_directory(clone):
    quick_start = section_blocks("Quick start")
    assert quick_start[0].startswith("make demo ")
    # every line but `make test`, which runs this very test (and takes half an hour)
    steps = [line for line in "\n".join(quick_start).splitlines() if not line.startswith("make test")]
    rc, out = paste(clone, "\n".join(steps))
    assert rc == 0, out[-6000:]
    own = section_blocks("Your own fleet")
    assert own, "no steps"
    rc, out = paste(clone, "\n".join(own))
    assert rc == 0, out[-8000:]
    fleet = os.path.join(clone["home"], "gds-fleet")
    # the installed copy ran, not the checkout: its files are in the fleet's collections directory
    assert os.path.isfile(os.path.join(fleet, "collections", "ansible_collections", "gpudirect", "storage",
                                       "MANIFEST.json"))
    assert "Nothing to do" not in out
    # every ansible-playbook step ended with its hosts ok; the rollout went batch by batch
    runs = out.split("PLAY RECAP")[1:]
    assert len(runs) == 3, out[-6000:]
    for run in runs:
        lines = [r for r in recap(run) if r[0] != "localhost"]
        assert len(lines) == 3 and all("failed=0" in r and "unreachable=0" in r for dummy, r in lines), run
    assert re.search(r"batch 1/3: \S+", out) or "skipping: no hosts matched" in out, out[-6000:]
    with open(os.path.join(fleet, "reports", "inventory", "gds-fleet.json")) as f:
        report = json.load(f)
    assert len(report["hosts"]) == 3 and all(h["status"] == "ok" for h in report["hosts"]), report["hosts"]
    assert report["run"]["playbooks"] == ["gpudirect.storage.verify"]


def test_nothing_left_behind(clone):
    subprocess.run(["make", "lab-down"], cwd=clone["path"], env=clone["env"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.STDOUT, check=False)
    assert orphans() == set()
