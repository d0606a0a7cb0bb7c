"""gds_verify's verdict record (gds_facts record_path, written as root) in a directory a second,
unprivileged user owns: the user plants a link at the record's name to a file only root may read.
The module refuses the directory: the secret reaches neither the diff nor the result, and the
link's target is untouched."""

import os
import shutil
import tempfile

import pytest

from ansible_collections.gpudirect.storage.plugins.modules import gds_facts
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.module_harness import run_module
from controller_users import local_user, run_as

SECRET = "root-only secret\n"


@pytest.fixture
def root_dir():
    """A directory of root's, 0755, that the second user can reach (pytest's own is 0700)."""
    path = tempfile.mkdtemp(prefix="gds-record-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path)


@pytest.mark.attack
def test_a_link_planted_at_the_record_leaks_nothing_and_replaces_nothing(root_dir):
    secret, state = os.path.join(root_dir, "secret"), os.path.join(root_dir, "state")
    record = os.path.join(state, "last_verdict.json")
    with open(secret, "w") as f:
        f.write(SECRET)
    os.chmod(secret, 0o600)
    os.mkdir(state)
    with local_user("gdsrecord") as user:
        os.chown(state, user.pw_uid, user.pw_gid)
        planted = run_as(user, "import os, sys; os.symlink(sys.argv[1], sys.argv[2])", secret, record)
        assert planted.returncode == 0, planted.stderr
        result = run_module(gds_facts.main, {"record_path": record, "record": {"mode": "gds"}}, diff=True)
    assert result.get("failed") and "nothing was recorded" in result["msg"], result
    assert SECRET.strip() not in repr(result)
    assert open(secret).read() == SECRET and os.path.islink(record)
