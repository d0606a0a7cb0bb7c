"""Every molecule scenario: check -> converge -> idempotence -> verify on fresh lab hosts."""

import os
import re

import pytest

from conftest import ROOT, VENV_BIN, build_aptrepo, run

MOLECULE_DIR = os.path.join(ROOT, "extensions", "molecule")  # molecule's place in a collection
SCENARIOS = sorted(d for d in os.listdir(MOLECULE_DIR) if os.path.exists(os.path.join(MOLECULE_DIR, d, "molecule.yml")))
# the labs are named <prefix>-<scenario> (extensions/molecule/resources/vars/lab.yml)
LAB_PREFIX = os.environ.get("GDS_MOLECULE_LAB_PREFIX") or "mol"


def test_molecule_finds_the_scenarios_in_the_collection_layout_without_warnings():
    res = run([os.path.join(VENV_BIN, "molecule"), "list"], timeout=300)
    text = re.sub(r"\x1b\[[0-9;]*m", "", res.stdout)
    assert "Scenarios will be used from 'extensions/molecule'" in text and "should migrate" not in text, text
    for scenario in SCENARIOS:
        assert re.search(r"\b%s\b" % scenario, text), text


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_molecule_scenario(scenario):
    build_aptrepo()
    try:
        res = run([os.path.join(VENV_BIN, "molecule"), "test", "-s", scenario], timeout=1500, check=False)
        assert res.returncode == 0, res.stdout[-8000:]
        text = re.sub(r"\x1b\[[0-9;]*m", "", res.stdout)
        for step in ("create", "check", "converge", "idempotence", "verify", "destroy"):
            assert re.search(r"%s: Executed: Successful" % step, text), "step %s did not run" % step
    finally:
        run([os.path.join(ROOT, "lab", "labctl"), "down", "--name", LAB_PREFIX + "-" + scenario.replace("_", "-")],
            check=False)
