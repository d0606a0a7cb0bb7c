"""`make build` (ansible-galaxy collection build) packs what a user installs and nothing of
theirs: no inventory but the example (a user's inventories/prod with hostnames, users and vault
files stays out), no lab, bench, molecule, system/unit/integration tests or fixtures; the sanity
ignore file stays (Galaxy convention: ansible-test sanity runs on the installed collection)."""

import os
import re
import shutil
import subprocess
import sys
import tarfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GALAXY = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")


SKIP_DIRS = {".git", ".venv", "build", "reports", "__pycache__", ".lab", ".whl", ".whl-cufile", ".device"}


def _tracked():
    """git's tracked files; outside a git checkout (ansible-test units runs a copy of the
    collection tree) every file but build outputs."""
    res = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         check=False)
    if res.returncode == 0:
        return [rel for rel in res.stdout.decode().split("\0") if rel]
    out = []
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS and not d.startswith(".")]  # .hypothesis, .pytest_cache
        out += [os.path.relpath(os.path.join(top, f), ROOT) for f in files]
    return out


def _checkout_copy(dest):
    """The tracked files, as a fresh clone has them, plus what a user adds following the README."""
    for rel in _tracked():
        src = os.path.join(ROOT, rel)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, rel)) or dest, exist_ok=True)
            shutil.copy2(src, os.path.join(dest, rel))
    for rel in ("inventories/prod/hosts.yml", "inventories/prod/group_vars/all/vault.yml",
                "inventories/staging-eu/hosts.yml", "inventories/ex/hosts.yml", "inventories/examples/hosts.yml",
                "inventories/lab/hosts.yml", "reports/gds-fleet.json"):
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        with open(os.path.join(dest, rel), "w") as f:
            f.write("secret: user data\n")


def test_tarball_carries_the_collection_and_nothing_of_the_user(tmp_path):
    src = tmp_path / "checkout"
    _checkout_copy(str(src))
    subprocess.run([GALAXY, "collection", "build", "--output-path", str(tmp_path)], cwd=str(src), check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    with tarfile.open(str(tmp_path / "gpudirect-storage-0.1.0.tar.gz")) as tar:
        names = sorted(m.name for m in tar.getmembers() if m.isfile())
    tops = sorted(set(n.split("/")[0] for n in names))
    assert tops == ["FILES.json", "LICENSE", "MANIFEST.json", "README.md", "bin", "bindep.txt", "changelogs", "docs",
                    "inventories", "meta", "playbooks", "plugins", "requirements", "requirements.txt", "roles",
                    "schemas", "tests"], tops
    # what ansible-builder reads from an installed collection; the EE definition and the docs
    # site's build config are the developers'
    assert "meta/execution-environment.yml" in names and "roles/gpu_operator/README.md" in names
    assert not [n for n in names if n.startswith(("ee/", "docs/site/"))]
    inventories = [n for n in names if n.startswith("inventories/")]
    assert inventories and all(n.startswith("inventories/example/") for n in inventories), inventories
    tests = [n for n in names if n.startswith("tests/")]
    assert tests and all(re.match(r"tests/sanity/ignore-2\.\d+\.txt$", n) for n in tests), tests
    assert not [n for n in names if "fixtures" in n or n.startswith(("lab/", "bench/", "molecule/"))]
    assert "plugins/modules/cufile_config.py" in names and "schemas/cufile-1.15.schema.json" in names
    assert "roles/nvidia_fs/meta/argument_specs.yml" in names and "playbooks/site.yml" in names
