"""The SSH control sockets of the checkout's configurations live where no other local user can
reach them.

ssh's ControlMaster socket carries every later command of the run, and its stdin: another user
who creates the control path directory before us gets to plant a fake master there. So the
directory Ansible uses (``ansible-config dump``, as each configuration of the checkout sets it)
must be one no one else can create or write: every existing directory on the way to it belongs
to us or root and is writable by no one else, and an unprivileged user, tried for real, can
create nothing there.
"""

import json
import os
import subprocess
import sys

import pytest

from controller_users import local_user, run_as

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIG = os.path.join(os.path.dirname(sys.executable), "ansible-config")
ATTACKER = "gdscpattacker"
# sun_path is 108 bytes with its NUL; ssh also appends a random suffix to the path while it binds
SOCKET_PATH_MAX = 107 - len(".XXXXXXXXXXXXXXXX")


def configurations():
    """Every ansible.cfg of the checkout (tracked or not, outside build outputs and virtualenvs)."""
    found = []
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in (".git", "build", "node_modules") and not d.startswith(".venv")]
        found += [os.path.join(top, f) for f in files if f == "ansible.cfg"]
    return sorted(found)


def ssh_settings(cfg):
    env = dict(os.environ, ANSIBLE_CONFIG=cfg, HOME=os.path.expanduser("~"))
    for name in ("ANSIBLE_SSH_CONTROL_PATH_DIR", "ANSIBLE_SSH_CONTROL_PATH", "ANSIBLE_SSH_ARGS"):
        env.pop(name, None)
    out = subprocess.run([CONFIG, "dump", "-t", "connection", "-f", "json"], cwd=os.path.dirname(cfg), env=env,
                         stdout=subprocess.PIPE, check=True, text=True, timeout=120).stdout
    plugins = dict(kv for entry in json.loads(out) for kv in entry.items())
    return dict((o["name"], o["value"]) for o in plugins["ssh"])


def control_dir(settings):
    """The directory ssh creates its ControlPath socket in under these settings."""
    assert "controlpath" not in (settings.get("ssh_args") or "").lower().replace(" ", ""), settings["ssh_args"]
    directory = os.path.expanduser(settings["control_path_dir"])
    path = settings.get("control_path")
    if path:
        return os.path.dirname(os.path.expanduser(path % {"directory": directory}))
    return directory


def others_can_change(path):
    """The existing directories from ``path`` up to / that a user other than us and root may write."""
    found = []
    while True:
        if os.path.lexists(path):
            st = os.lstat(path)
            if st.st_uid not in (os.geteuid(), 0) or st.st_mode & 0o022:
                found.append("%s (uid %d, mode %o)" % (path, st.st_uid, st.st_mode & 0o7777))
        if path == os.path.dirname(path):
            return found
        path = os.path.dirname(path)


@pytest.fixture
def attacker():
    with local_user(ATTACKER) as user:
        yield user


PLANT = r"""
import os, sys
target = sys.argv[1]
try:
    if os.path.isdir(target):
        os.mkdir(os.path.join(target, "planted-master"))
    else:
        os.makedirs(target)
except OSError:
    sys.exit(1)
print("planted")
"""


def plant(user, target):
    """Try, as ``user``, to pre-create ``target`` or put an entry into it. True if it worked."""
    return run_as(user, PLANT, target).stdout.strip() == "planted"


def remove_planted(user, target):
    path = target
    while path != os.path.dirname(path) and os.path.isdir(path) and os.stat(path).st_uid == user.pw_uid:
        top, path = path, os.path.dirname(path)
        subprocess.run(["rm", "-rf", "--", top], check=False)
    planted = os.path.join(target, "planted-master")
    if os.path.isdir(planted):
        os.rmdir(planted)


def test_the_checkout_has_its_ansible_configurations():
    assert os.path.join(ROOT, "ansible.cfg") in configurations()
    assert os.path.join(ROOT, "lab", "ansible.cfg") in configurations()


@pytest.mark.attack
@pytest.mark.parametrize("cfg", configurations(), ids=lambda p: os.path.relpath(p, ROOT))
def test_another_user_cannot_plant_a_control_master(cfg, attacker):
    directory = control_dir(ssh_settings(cfg))
    assert len(os.path.join(directory, "0123456789")) <= SOCKET_PATH_MAX, directory
    planted = plant(attacker, directory)
    remove_planted(attacker, directory)
    assert not planted, "%s: user %s created the control path directory %s" % (cfg, ATTACKER, directory)
    assert others_can_change(directory) == [], cfg
