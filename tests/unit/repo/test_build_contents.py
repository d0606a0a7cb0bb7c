"""`make build` (ansible-galaxy collection build) packs what a user installs, with the users'
README (README-collection.md) as its README.md, and nothing of theirs: no inventory but the example (a user's inventories/prod with hostnames, users and vault
files stays out), no lab, bench, molecule, tests or fixtures."""

import os
import re
import shutil
import subprocess
import sys
import tarfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
GALAXY = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
BUILD = os.path.join(ROOT, "tests", "utils", "build-collection.sh")


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


# What a developer's checkout holds besides the tracked files: test and tool caches, virtualenvs,
# fetched NVIDIA binaries, build outputs, reports, scratch files.
JUNK = (".hypothesis/examples/0123/abc", ".whl-cufile/nvidia_cufile_cu13-1.15.0-py3-none-manylinux.whl",
        ".cufile-lib/lib/libcufile.so.0", ".cufile-lint/cache.json", ".venv/bin/python", ".venv-eco/bin/python",
        ".pytest_cache/v/cache/lastfailed", "build/collections/junk.txt", "build/docs/index.html",
        "reports/gds-fleet.html", "tests/output/junk.txt", "gpudirect-storage-0.0.9.tar.gz", "scratch.txt",
        "notes/todo.md", "docs/site/_build/index.html", "plugins/modules/__pycache__/gpu_operator.cpython-311.pyc",
        "plugins/module_utils/_common/redact.pyc", "roles/cufile/.pytest_cache/x", "roles/cufile/tasks/.main.yml.swp",
        "playbooks/site.yml~", "requirements/controller.txt.bak")
# The allowlist (galaxy.yml manifest:), said again here: the files a user installs.
SHIPPED_FILES = ("README-collection.md", "LICENSE", "bindep.txt", "requirements.txt", "bin/cufile-lint")
SHIPPED_DIRS = ("plugins/", "roles/", "playbooks/", "schemas/", "prometheus/", "changelogs/", "docs/",
                "inventories/example/")


def shipped(rel):
    parts = rel.split("/")
    if any(p.startswith(".") or p == "__pycache__" for p in parts) or rel.endswith((".pyc", ".pyo", "~", ".bak")):
        return False
    if rel in SHIPPED_FILES or re.match(r"meta/[^/]+\.yml$", rel):
        return True
    return rel.startswith(SHIPPED_DIRS) and not rel.startswith("docs/site/")


def build(tmp_path, extra=()):
    src = tmp_path / "checkout"
    _checkout_copy(str(src))
    for rel in extra:
        os.makedirs(os.path.dirname(str(src / rel)) or str(src), exist_ok=True)
        with open(str(src / rel), "w") as f:
            f.write("junk\n")
    subprocess.run([BUILD, str(src), str(tmp_path)], check=True, env=dict(os.environ, ANSIBLE_GALAXY=GALAXY),
                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=300)
    with tarfile.open(str(tmp_path / "gpudirect-storage-0.1.0.tar.gz")) as tar:
        return sorted(m.name for m in tar.getmembers() if m.isfile())


def shipped_text(tmp_path, name):
    with tarfile.open(str(tmp_path / "gpudirect-storage-0.1.0.tar.gz")) as tar:
        return tar.extractfile(name).read().decode()


def test_tarball_is_exactly_the_allowlisted_tracked_files_whatever_else_lies_in_the_checkout(tmp_path):
    names = build(tmp_path, JUNK)
    expected = sorted("README.md" if rel == "README-collection.md" else rel for rel in _tracked() if shipped(rel))
    assert [n for n in names if n not in ("MANIFEST.json", "FILES.json")] == expected
    assert not [n for n in names if n.startswith("requirements/")]  # the developers' lock files
    assert "ansible.cfg" not in names and not [n for n in names if n.endswith("/ansible.cfg")]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the build directory, the tarball's files) of a checkout as a fresh clone has it."""
    tmp_path = tmp_path_factory.mktemp("build")
    return tmp_path, build(tmp_path)


def test_what_the_collection_needs_is_in_the_tarball(built):
    tmp_path, names = built
    # meta/execution-environment.yml and the roles' READMEs: what ansible-builder reads from an installed collection
    for needed in ("bin/cufile-lint", "LICENSE", "README.md", "meta/runtime.yml", "meta/execution-environment.yml",
                   "requirements.txt", "bindep.txt", "changelogs/changelog.yaml", "changelogs/config.yaml",
                   "plugins/modules/gpu_operator.py", "plugins/modules/cufile_config.py",
                   "plugins/module_utils/_common/redact.py", "plugins/plugin_utils/_report/write.py",
                   "plugins/callback/gds_report.py", "roles/gds_report/meta/argument_specs.yml",
                   "roles/nvidia_fs/meta/argument_specs.yml", "roles/gpu_operator/README.md", "playbooks/k8s.yml",
                   "playbooks/site.yml", "schemas/cufile-1.15.schema.json", "docs/report.md",
                   "docs/images/gds-fleet-report.png"):
        assert needed in names, needed
    for md in [n for n in names if n.endswith(".md")]:  # every page a shipped page links to is shipped
        links = re.findall(r"\]\(([^)#\s]+)", shipped_text(tmp_path, md))
        for link in links:
            if "://" in link or link.startswith(("mailto:", "build/")):  # build/: the docs site `make docs` builds
                continue
            assert os.path.normpath(os.path.join(os.path.dirname(md), link)) in names, (md, link)


def test_tarball_carries_the_collection_and_nothing_of_the_user(built):
    tmp_path, names = built
    with open(os.path.join(ROOT, "README-collection.md")) as f:
        assert shipped_text(tmp_path, "README.md") == f.read()  # the checkout's README.md is the developers'
    tops = sorted(set(n.split("/")[0] for n in names))
    assert tops == ["FILES.json", "LICENSE", "MANIFEST.json", "README.md", "bin", "bindep.txt", "changelogs", "docs",
                    "inventories", "meta", "playbooks", "plugins", "prometheus", "requirements.txt", "roles",
                    "schemas"], tops
    # the EE definition and the docs site's build config are the developers'
    assert not [n for n in names if n.startswith(("ee/", "docs/site/"))]
    inventories = [n for n in names if n.startswith("inventories/")]
    assert inventories and all(n.startswith("inventories/example/") for n in inventories), inventories
    assert not [n for n in names if "fixtures" in n or n.startswith(("lab/", "bench/", "extensions/"))]
