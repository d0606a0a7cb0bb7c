"""A second, unprivileged local user for the attack tests (controller and probe), and a way to run Python
as that user."""

import os
import pwd
import subprocess
import sys
from contextlib import contextmanager


@contextmanager
def local_user(name):
    """Create ``name`` (no home, no shell), yield its passwd entry, remove it."""
    if os.geteuid() != 0:
        import pytest
        pytest.skip("creating a second user needs root")
    subprocess.run(["userdel", name], stderr=subprocess.DEVNULL, check=False)
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=False)


def run_as(user, code, *args):
    """Run Python ``code`` as ``user`` (no supplementary groups); returns the CompletedProcess."""
    return subprocess.run(["setpriv", "--reuid", str(user.pw_uid), "--regid", str(user.pw_gid), "--clear-groups",
                           sys.executable, "-I", "-c", code] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd="/", check=False)
