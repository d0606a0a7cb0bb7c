"""Every molecule scenario: check -> converge -> idempotence -> verify on fresh lab hosts."""

import os
import re

import pytest

from conftest import ROOT, VENV_BIN, build_aptrepo, run

SCENARIOS = sorted(d for d in os.listdir(os.path.join(ROOT, "molecule"))
                   if os.path.exists(os.path.join(ROOT, "molecule", d, "molecule.yml")))


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
        run([os.path.join(ROOT, "lab", "labctl"), "down", "--name", "mol-" + scenario.replace("_", "-")], check=False)
