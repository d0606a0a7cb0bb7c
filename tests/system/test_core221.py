"""The collection with ansible-core 2.21 on Python 3.12, where that Python exists (skipped
otherwise: a user's machine may not have it)."""

import os
import shutil
import subprocess

import pytest

from conftest import ROOT, run

PY312 = os.environ.get("GDS_PY312", "/root/.pyenv/versions/3.12.1/bin/python3")
VENV = os.path.join(ROOT, "build", "venv-core221")

pytestmark = pytest.mark.skipif(not os.path.exists(PY312), reason="no Python 3.12 at %s" % PY312)


@pytest.fixture(scope="module")
def core221():
    bin_dir = os.path.join(VENV, "bin")
    if not os.path.exists(os.path.join(bin_dir, "ansible-playbook")):
        shutil.rmtree(VENV, ignore_errors=True)
        run([PY312, "-m", "venv", VENV])
        run([os.path.join(bin_dir, "pip"), "install", "-q", "ansible-core>=2.21,<2.22", "jsonschema",
             "pytest", "hypothesis", "pyyaml", "kubernetes"], timeout=900)
    version = subprocess.run([os.path.join(bin_dir, "ansible"), "--version"], stdout=subprocess.PIPE,
                             text=True, check=True).stdout
    assert "core 2.21" in version, version
    return bin_dir


def test_unit_tests_pass_on_core221(core221):
    run([os.path.join(core221, "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/unit"],
        timeout=1200)


def test_module_docs_render_on_core221(core221):
    mod_dir = os.path.join(ROOT, "plugins/modules")
    modules = sorted(f[:-3] for f in os.listdir(mod_dir) if f.endswith(".py")) if os.path.isdir(mod_dir) else []
    if not modules:
        pytest.skip("no modules in plugins/modules yet")
    env = {"ANSIBLE_COLLECTIONS_PATH": os.path.join(ROOT, "build/collections")}
    for mod in modules:
        res = run([os.path.join(core221, "ansible-doc"), "gpudirect.storage." + mod], env=env)
        assert "OPTIONS" in res.stdout or "PARAMETERS" in res.stdout.upper(), mod
