"""The configuration a user gets when they run playbooks from the checkout's root is safe for a
production fleet: host keys are checked and no lab inventory is named. The lab's relaxed settings
live in lab/ansible.cfg, which the make targets and the system tests select."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CONFIG = os.path.join(os.path.dirname(sys.executable), "ansible-config")


def effective(config_file):
    """``ansible-config dump --only-changed`` run in the repository root, as a dict."""
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    env.pop("ANSIBLE_INVENTORY", None)
    env.pop("ANSIBLE_HOST_KEY_CHECKING", None)
    if config_file:
        env["ANSIBLE_CONFIG"] = config_file
    else:
        env.pop("ANSIBLE_CONFIG", None)
    out = subprocess.run([CONFIG, "dump", "--only-changed", "-t", "all"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, check=True, timeout=120).stdout
    values = {}
    for line in out.splitlines():
        if "(" in line and "=" in line:
            key, rest = line.split("(", 1)
            values[key.strip()] = rest.split("=", 1)[1].strip()
    return out, values


def test_root_config_checks_host_keys_and_names_no_inventory():
    out, values = effective(None)
    assert values.get("CONFIG_FILE") == os.path.join(ROOT, "ansible.cfg"), out
    assert "= False" not in "\n".join(l for l in out.splitlines() if "host_key_checking" in l.lower()), out
    assert "DEFAULT_HOST_LIST" not in values, out  # no inventory: the user names theirs with -i
    assert "StrictHostKeyChecking=no" not in out, out
    assert "UserKnownHostsFile=/dev/null" not in out, out


def test_lab_config_relaxes_only_the_lab():
    out, values = effective(os.path.join(ROOT, "lab", "ansible.cfg"))
    assert values.get("CONFIG_FILE") == os.path.join(ROOT, "lab", "ansible.cfg"), out
    assert values.get("HOST_KEY_CHECKING") == "False", out
    assert os.path.join("inventories", "lab") in values.get("DEFAULT_HOST_LIST", ""), out
    assert "StrictHostKeyChecking=no" in out, out


def test_lab_config_shares_everything_else_with_the_root_config():
    root = effective(None)[1]
    lab = effective(os.path.join(ROOT, "lab", "ansible.cfg"))[1]
    lab_only = {"host_key_checking", "default_host_list", "config_file", "ssh_args"}
    assert dict((k, v) for k, v in lab.items() if k.lower() not in lab_only) == \
        dict((k, v) for k, v in root.items() if k.lower() not in lab_only)
