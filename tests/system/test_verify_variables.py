"""playbooks/verify.yml checks the variables of the role it runs like site.yml does, in its one task
per host: the role's argument spec with Ansible's own validator (a wrong type names the variable)
and a misspelled variable named with the one it probably meant, before anything runs on a host.
Two lab hosts of its own."""

import os
import re

import pytest

from conftest import ROOT, Lab

VERIFY = os.path.join(ROOT, "playbooks", "verify.yml")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab("verifyvars", 2, tmp_path_factory.mktemp("verifyvars"))
    try:
        lab.playbook(os.path.join(ROOT, "lab", "prepare.yml"))
        yield lab
    finally:
        lab.down()


def flat(text):
    return re.sub(r"\s+", " ", text)


def facts_task_ran(out):
    """Whether any host's facts task returned from the host (its ok: line)."""
    task = out.split("TASK [gpudirect.storage.gds_verify : Gather GDS facts", 1)[1:]
    return bool(task) and bool(re.search(r"^ok: \[", re.split(r"^(?:TASK|PLAY) \[", task[0], flags=re.M)[0], re.M))


def test_a_misspelled_variable_fails_naming_it_and_the_likely_one(lab):
    res = lab.playbook(VERIFY, "-e", "gds_verify_require_mod=gds", check=False)
    assert res.returncode == 2, res.stdout[-4000:]
    assert "gds_verify_require_mod (did you mean gds_verify_require_mode?)" in flat(res.stdout), res.stdout[-4000:]
    assert not facts_task_ran(res.stdout), res.stdout[-4000:]


def test_a_wrong_type_is_caught_by_the_role_arguments_check_naming_the_variable(lab):
    res = lab.playbook(VERIFY, "-e", "gds_verify_probe_size_mb=lots", check=False)
    assert res.returncode == 2, res.stdout[-4000:]
    assert re.search(r"argument 'gds_verify_probe_size_mb' is of type str .* unable to convert to int",
                     flat(res.stdout)), res.stdout[-4000:]
    assert "nothing was run on the host" in flat(res.stdout), res.stdout[-4000:]
    assert not facts_task_ran(res.stdout), res.stdout[-4000:]


def test_with_the_right_names_every_host_is_verified(lab):
    res = lab.playbook(VERIFY, "-e", "gds_verify_require_proven=false", check=False)
    assert res.returncode == 0, res.stdout[-4000:]
    assert facts_task_ran(res.stdout), res.stdout[-4000:]
    assert re.findall(r"^TASK \[(.*?)\]", res.stdout, re.M)[:1] == [
        "gpudirect.storage.gds_verify : Gather GDS facts and prove the data path with a cuFile write and read"]
    play = res.stdout.split("PLAY [Verify GPUDirect Storage]", 1)[1].split("\nPLAY [", 1)[0]
    assert "Validating arguments" not in play and "included:" not in play  # one task per host
    for name in (h["name"] for h in lab.hosts):
        assert re.search(r"^%s\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=0" % re.escape(name), res.stdout, re.M), \
            res.stdout[-4000:]
