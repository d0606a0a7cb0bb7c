"""Every role has the README.md Galaxy requires (galaxy-importer refuses a collection without),
and it says what the role's argument spec and platforms say: tests/utils/role-readmes.py writes
them; after editing a role's meta/argument_specs.yml or meta/main.yml, run it again."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def test_every_role_has_a_readme():
    roles = sorted(os.listdir(os.path.join(ROOT, "roles")))
    assert roles and [r for r in roles if not os.path.isfile(os.path.join(ROOT, "roles", r, "README.md"))] == []


def test_role_readmes_agree_with_the_argument_specs():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "utils", "role-readmes.py"), "--check"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
