"""The supported ansible-core range is stated once, by requires_ansible in meta/runtime.yml, and
everything else that names it agrees: the Execution Environment's pin, the controller lock, the
roles' min_ansible_version and the README. tests/system/test_sanity.py runs ansible-test on each
release of the range and checks that the range is the one it tests."""

import glob
import os
import re

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _yaml(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return yaml.safe_load(f)


def _text(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def requires_ansible():
    return SpecifierSet(_yaml("meta/runtime.yml")["requires_ansible"])


def claimed_minors():
    claim = requires_ansible()
    return [minor for minor in ("2.%d" % n for n in range(9, 100))
            if claim.contains(minor + ".0") or claim.contains(minor + ".9999")]


def test_the_claim_is_bounded_on_both_sides():
    operators = {spec.operator for spec in requires_ansible()}
    assert ">=" in operators and "<" in operators, "requires_ansible claims only releases CI tests: %s" % operators
    assert claimed_minors(), requires_ansible()


def test_the_execution_environment_installs_a_core_of_the_claim():
    pin = Requirement(_yaml("ee/execution-environment.yml")["dependencies"]["ansible_core"]["package_pip"])
    assert pin.name == "ansible-core" and pin.specifier == requires_ansible(), str(pin)


def test_the_controller_lock_pins_a_core_of_the_claim():
    pins = re.findall(r"^ansible-core==(\S+)$", _text("requirements/controller.txt"), re.MULTILINE)
    assert len(pins) == 1 and Version(pins[0]) in requires_ansible(), pins
    wanted = [Requirement(line.split("#")[0]) for line in _text("requirements/controller.in").splitlines()
              if line.startswith("ansible-core")]
    assert len(wanted) == 1 and Version(pins[0]) in wanted[0].specifier, wanted


def test_every_role_names_the_oldest_claimed_core():
    roles = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "meta", "main.yml")))
    assert roles
    for path in roles:
        with open(path) as f:
            assert str(yaml.safe_load(f)["galaxy_info"]["min_ansible_version"]) == claimed_minors()[0], path


def test_the_readme_states_the_claimed_range():
    minors = claimed_minors()
    assert "ansible-core %s to %s" % (minors[0], minors[-1]) in _text("README.md")
