"""ansible-test sanity and units (offline), galaxy build, ansible-lint, changelog lint."""

import os
import shutil
import subprocess
import tarfile

import pytest

from conftest import ROOT, VENV_BIN, run

# Outside this checkout: ansible-test lists files with git, and inside the checkout it would see
# the copy as ignored build output (and check nothing).
SANITY_ROOT = os.path.join(os.environ.get("TMPDIR", "/tmp"), "gpudirect-storage-sanity",
                           "ansible_collections", "gpudirect", "storage")


def _tracked_files():
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT,
                         stdout=subprocess.PIPE, check=True).stdout.decode()
    return [f for f in out.split("\0") if f and os.path.exists(os.path.join(ROOT, f))]


@pytest.fixture(scope="module")
def collection_copy():
    """ansible-test needs the collection under .../ansible_collections/<ns>/<name>/."""
    shutil.rmtree(SANITY_ROOT, ignore_errors=True)
    for rel in _tracked_files():
        dest = os.path.join(SANITY_ROOT, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), dest, follow_symlinks=False)
    return SANITY_ROOT


def test_ansible_test_sanity(collection_copy):
    assert os.path.exists(os.path.join(collection_copy, "plugins/module_utils/_common/runner.py"))
    run([os.path.join(VENV_BIN, "ansible-test"), "sanity", "--local", "--python", "3.11", "--color", "no"],
        cwd=collection_copy, timeout=1500)


def test_ansible_test_units(collection_copy):
    run([os.path.join(VENV_BIN, "ansible-test"), "units", "--local", "--python", "3.11", "--color", "no"],
        cwd=collection_copy, timeout=1200)


def test_sanity_ignore_file_is_almost_empty_and_justified():
    ignores = os.path.join(ROOT, "tests", "sanity")
    lines = []
    for name in os.listdir(ignores) if os.path.isdir(ignores) else []:
        with open(os.path.join(ignores, name)) as f:
            lines += [l.strip() for l in f if l.strip()]
    rules = {l.split("#")[0].split()[1] for l in lines}
    # one justified exception per rule: the Apache-2.0 license header and python3 shebang
    assert rules <= {"validate-modules:missing-gplv3-license", "shebang"}, rules
    assert all("  # " in l for l in lines), "every ignore line needs a justification"
    assert len([l for l in lines if "shebang" in l]) <= 1


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
    assert not any(n.startswith(("build/", ".venv", "tests/output", "molecule/")) for n in names)


def test_changelog_fragments_lint():
    run([os.path.join(VENV_BIN, "antsibull-changelog"), "lint"])
