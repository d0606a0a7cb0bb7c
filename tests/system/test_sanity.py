"""ansible-test sanity and units (offline) on every ansible-core the collection claims, galaxy
build, ansible-lint, changelog lint."""

import glob
import os
import shutil
import subprocess
import tarfile

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from conftest import ROOT, VENV_BIN, run

# The ansible-core releases CI tests, each on the Python it runs on: 2.19 is the newest for
# Python 3.11 (the controller venv, requirements/controller.txt); 2.20 and later need 3.12 or
# later (pyenv's on the CI image). meta/runtime.yml's requires_ansible claims exactly these.
PYTHON_FOR_CORE = {"2.19": "3.11", "2.20": "3.12", "2.21": "3.13"}
CORES = sorted(PYTHON_FOR_CORE, key=Version)


def _tracked_files():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                         stdout=subprocess.PIPE, check=True).stdout.decode()
    return [f for f in out.split("\0") if f and os.path.exists(os.path.join(ROOT, f))]


@pytest.fixture(scope="module")
def collection_copy(tmp_path_factory):
    """ansible-test needs the collection under .../ansible_collections/<ns>/<name>/, outside this
    checkout (it lists files with git; inside, the copy is ignored build output), in pytest's
    private temporary directory (never a fixed path under /tmp)."""
    root = os.path.join(str(tmp_path_factory.mktemp("sanity")), "ansible_collections", "gpudirect", "storage")
    for rel in _tracked_files():
        dest = os.path.join(root, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), dest, follow_symlinks=False)
    return root


def claimed_cores():
    """The ansible-core minor releases that meta/runtime.yml's requires_ansible admits."""
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as f:
        claim = SpecifierSet(yaml.safe_load(f)["requires_ansible"])
    return [minor for minor in ("2.%d" % n for n in range(9, 100))
            if claim.contains(minor + ".0") or claim.contains(minor + ".9999")]


def test_claimed_ansible_core_range_is_the_tested_one():
    assert claimed_cores() == CORES, "requires_ansible in meta/runtime.yml must claim exactly the tested releases"


def find_python(version):
    """A working pythonX.Y from $GDS_PYTHON<X><Y>, pyenv's versions or PATH; None where this
    machine has none (pyenv's shim on PATH fails unless that version is selected)."""
    name = "python" + version
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    installed = glob.glob(os.path.join(pyenv, "versions", version + ".*", "bin", name))
    candidates = ([os.environ.get("GDS_PYTHON" + version.replace(".", ""))]
                  + sorted(installed, key=lambda path: Version(path.split(os.sep)[-3]), reverse=True)
                  + [shutil.which(name)])
    for python in filter(None, candidates):
        res = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
        if res.returncode == 0 and res.stdout.strip() == version:
            return python
    return None


def core_of(bin_dir):
    res = run([os.path.join(bin_dir, "python"), "-c",
               "import importlib.metadata as m, sys; print(m.version('ansible-core'), '%d.%d' % sys.version_info[:2])"])
    core, python = res.stdout.split()
    return ".".join(core.split(".")[:2]), python


def core_venv(core, python_version):
    """A venv of ansible-core `core` on Python `python_version` under build/, made once."""
    venv = os.path.join(ROOT, "build", "venv-core-" + core)
    bin_dir = os.path.join(venv, "bin")
    if os.path.exists(os.path.join(bin_dir, "ansible-test")) and core_of(bin_dir) == (core, python_version):
        return bin_dir
    python = find_python(python_version)
    if python is None:
        reason = "no Python %s on this machine for ansible-core %s" % (python_version, core)
        if os.environ.get("CI") == "true":
            pytest.fail(reason + ": CI tests every ansible-core that meta/runtime.yml claims")
        pytest.skip(reason)
    shutil.rmtree(venv, ignore_errors=True)
    run([python, "-m", "venv", venv])
    run([os.path.join(bin_dir, "pip"), "install", "-q", "ansible-core==%s.*" % core,
         "-r", os.path.join(ROOT, "tests", "unit", "requirements.txt")], timeout=900)
    return bin_dir


@pytest.fixture(scope="module", params=CORES)
def core(request):
    """(ansible-core minor, its Python, the bin directory of a venv with both)."""
    python_version = PYTHON_FOR_CORE[request.param]
    bin_dir = VENV_BIN
    if core_of(VENV_BIN) != (request.param, python_version):
        bin_dir = core_venv(request.param, python_version)
    assert core_of(bin_dir) == (request.param, python_version)
    return request.param, python_version, bin_dir


def ansible_test(core, collection_copy, command, timeout):
    python_version, bin_dir = core[1:]
    # ansible-test finds pythonX.Y on PATH: the venv's own
    run([os.path.join(bin_dir, "ansible-test"), command, "--local", "--python", python_version, "--color", "no"],
        cwd=collection_copy, timeout=timeout, env={"PATH": bin_dir + os.pathsep + os.environ["PATH"]})


def test_ansible_test_sanity(core, collection_copy):
    assert os.path.exists(os.path.join(collection_copy, "plugins/module_utils/_common/runner.py"))
    ansible_test(core, collection_copy, "sanity", timeout=1500)


def test_ansible_test_units(core, collection_copy):
    ansible_test(core, collection_copy, "units", timeout=1200)


def test_no_sanity_test_is_ignored():
    # galaxy-importer warns about every ignore file, even an empty one
    assert not glob.glob(os.path.join(ROOT, "tests", "sanity", "ignore-*.txt"))


def test_ansible_lint_production_profile(tmp_path):
    # a private HOME: molecule's prerun installs a copy of this collection into
    # ~/.ansible/collections, and ansible-lint would resolve our modules from that stale copy
    res = run([os.path.join(VENV_BIN, "ansible-lint"), "--offline", "--nocolor"], timeout=900, env={"HOME": str(tmp_path)})
    assert "production" in open(os.path.join(ROOT, ".ansible-lint")).read()
    assert "Failed" not in res.stdout


def test_galaxy_build_produces_tarball(tmp_path):
    run([os.path.join(VENV_BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path), ROOT])
    tarballs = [f for f in os.listdir(str(tmp_path)) if f.endswith(".tar.gz")]
    assert len(tarballs) == 1 and tarballs[0].startswith("gpudirect-storage-")
    with tarfile.open(os.path.join(str(tmp_path), tarballs[0])) as tar:
        names = tar.getnames()
    assert "galaxy.yml" not in names and "MANIFEST.json" in names
    assert any(n.startswith("plugins/module_utils/_common/runner.py") for n in names)
    assert not any(n.startswith(("build/", ".venv", "tests/output", "extensions/")) for n in names)


def test_changelog_fragments_lint():
    run([os.path.join(VENV_BIN, "antsibull-changelog"), "lint"])
