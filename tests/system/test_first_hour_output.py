"""What a new user sees in the first hour (issue 39, items 7 to 10): the preflight table of a
failing host, the rollout's console output, where the fleet report goes and what it says about
the run that wrote it, and the messages that contradicted each other. One lab of three hosts,
prepared as `make demo` prepares it; the tests run in file order (7 is read-only, 8 rolls out).
Run it alone:
.venv/bin/pytest -p no:cacheprovider -p no:pytest-ansible tests/system/test_first_hour_output.py
"""

import json
import os
import re
import shutil
import sys

import pytest

from conftest import ROOT, VENV_BIN, Lab, run

EXTRA = '{"gds_serial": [1, "10%", "25%"], "gds_max_fail_percentage": 20}'


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = Lab("fho", 3, tmp_path_factory.mktemp("fho"))
    try:
        lab.playbook(os.path.join(ROOT, "lab", "prepare.yml"))
        yield lab
    finally:
        lab.down()


def playbook(lab, *args, **env):
    return lab.playbook(*args, check=False, env=env)


def own_inventory(tmp_path, lab, name, hosts):
    """An inventory directory of the user's own: the lab's hosts named, the lab's group_vars."""
    inv = tmp_path / name
    (inv / "group_vars").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, "inventories", "lab", "group_vars", "all.yml"), str(inv / "group_vars" / "all.yml"))
    lines = ["all:", "  children:", "    gds_hosts:", "      hosts:"]
    lines += ["        %s: {ansible_host: %s}" % (h["name"], h["ip"]) for h in lab.hosts if h["name"] in hosts]
    (inv / "hosts.yml").write_text("\n".join(lines) + "\n")
    return str(inv)


def fatal_blocks(out):
    """{host: text of its `fatal: ... FAILED! =>` result} (YAML result format)."""
    blocks, host = {}, None
    for line in out.splitlines():
        m = re.match(r"^fatal: \[([^\]]+)\]: FAILED!", line)
        if m:
            host = m.group(1)
            blocks[host] = [line]
        elif host and (line.startswith(" ") or not line):
            blocks[host].append(line)
        else:
            host = None
    return dict((h, "\n".join(lines)) for h, lines in blocks.items())


def test_7_a_failing_preflight_prints_the_table_and_a_short_result(lab):
    res = playbook(lab, "playbooks/site.yml", "--tags", "preflight", "-e", "gds_preflight_min_free_mb=99999999")
    out = res.stdout
    assert res.returncode == 2, out[-4000:]
    blocks = fatal_blocks(out)
    assert sorted(blocks) == sorted(h["name"] for h in lab.hosts), out[-4000:]
    for host, text in blocks.items():
        # the table: every check with its status, the failing one naming the variable
        assert re.search(r"failed\s+free space\s+only \d+ MiB free", text), text
        assert re.search(r"passed\s+architecture\s+x86_64 is supported", text), text
        assert "set gds_preflight_min_free_mb:" in text
        # short: no facts dump (the facts' keys), a screen at most
        assert "ansible_facts" not in text and not re.search(r"^\s+free_mb:", text, re.M), text
        assert len(text) < 2500, (len(text), text)


def rollout(lab, tmp_path):
    res = playbook(lab, "playbooks/site.yml", "-e", EXTRA, "-e", "gds_allow_reboot=true",
                   GDS_REPORT_DIR=str(tmp_path / "reports"))
    assert res.returncode == 0, res.stdout[-6000:]
    return res.stdout


@pytest.fixture(scope="module")
def first_rollout(lab, tmp_path_factory):
    return rollout(lab, tmp_path_factory.mktemp("rollout"))


def test_8_a_rollout_prints_where_it_is_and_no_skipped_work_per_host(lab, first_rollout, record_property):
    out = first_rollout
    lines = len(out.splitlines())
    record_property("rollout_lines", lines)
    sys.stderr.write("first rollout of 3 hosts, serial [1, 10%%, 25%%]: %d lines\n" % lines)
    names = [h["name"] for h in lab.hosts]
    # one line per batch says where the rollout is
    for i, name in enumerate(names):
        assert re.search(r"batch %d/3: %s\b" % (i + 1, re.escape(name)), out), out[-6000:]
    rolling = out[out.index("PLAY [Roll out"):out.index("PLAY [Write the GDS fleet report")]
    # nothing needed a reboot: no reboot task shows up per host, no skipped task per host
    assert not re.search(r"^skipping: \[", rolling, re.M) or \
        len(re.findall(r"^skipping: \[", rolling, re.M)) <= 3, rolling  # at most one per batch
    assert "Reboot to load" not in rolling and "Record that a reboot" not in rolling, rolling
    # the plan checked every role's variables: no "Validating arguments" per role and batch
    assert len(re.findall(r"Validating arguments", out)) <= 2, out
    assert lines <= 150, lines  # 209 before: a validation and three reboot tasks per role and batch


def test_10_a_run_not_in_check_mode_warns_neither_of_check_mode_nor_twice_of_the_os(first_rollout):
    flat = re.sub(r"\s+", " ", first_rollout)
    assert "unknown in check mode" not in flat
    os_warnings = re.findall(r"is not a supported GDS host OS|is not an OS GDS supports", flat)
    assert len(os_warnings) == 1, os_warnings


def test_10_a_host_without_a_gpu_hears_no_gpu_first(lab, tmp_path):
    inv = own_inventory(tmp_path, lab, "fleet", [lab.hosts[0]["name"]])
    res = run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", inv, "gpudirect.storage.verify"], check=False,
              cwd=str(tmp_path))
    assert res.returncode == 0, res.stdout[-4000:]
    with open(os.path.join(str(tmp_path), "reports", "fleet", "gds-fleet.json")) as f:
        record = json.load(f)["hosts"][0]
    assert record["reason"].startswith("no NVIDIA GPU"), record["reason"]


def test_10_choices_and_nothing_changed_are_said_once(lab):
    res = playbook(lab, "playbooks/site.yml", "-e", "gds_verify_require_mode=bogus")
    assert res.returncode != 0
    assert "one of: ," not in res.stdout and 'or "" (empty), got: bogus' in res.stdout, res.stdout[-3000:]
    res = playbook(lab, "playbooks/site.yml", "-e", "nvidia_fs_version=0.0.1")
    assert res.returncode != 0
    flat = re.sub(r"\s+", " ", res.stdout)
    assert not re.search(r"othing was changed\.? - nothing was changed", flat, re.I), res.stdout[-3000:]


def test_10_demo_k8s_says_the_same_of_gds_readiness_twice(tmp_path):
    res = run([sys.executable, os.path.join(ROOT, "tests", "fixtures", "k8s_emulator", "demo_k8s.py"), "--nodes", "3",
               "--reports", str(tmp_path / "reports")], timeout=600)
    flat = re.sub(r"\s+", " ", res.stdout)
    said_ready = re.search(r"GDS ready on: ([^;']*)", flat)
    counted = re.search(r"(\d+) ready for GDS", flat)
    listed = [n for n in (said_ready.group(1).split(", ") if said_ready else []) if n and n != "-"]
    assert counted and len(listed) == int(counted.group(1)), (listed, counted and counted.group(0))


def test_9_an_empty_gds_report_dir_is_unset_never_the_current_directory(tmp_path):
    """A run that ends before its report play: the callback's fallback report goes beside the
    inventory, also when GDS_REPORT_DIR is set but empty (Ansible reads an empty path as ".")."""
    inv = tmp_path / "fleet"
    inv.mkdir()
    (inv / "hosts.yml").write_text("all:\n  children:\n    gds_hosts:\n      hosts:\n        one: {ansible_connection: local, "
                                   "ansible_python_interpreter: %s}\n" % sys.executable)
    play = tmp_path / "play.yml"
    play.write_text("- hosts: gds_hosts\n  gather_facts: false\n  tasks:\n    - ansible.builtin.fail: {msg: boom}\n"
                    "- hosts: localhost\n  gather_facts: false\n  roles: [gpudirect.storage.gds_report]\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    res = run([os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(inv), str(play)], check=False, cwd=str(cwd),
              env={"GDS_REPORT_DIR": ""})
    assert "the run ended before its report play" in res.stdout, res.stdout[-3000:]
    assert os.listdir(str(cwd)) == []
    assert os.path.isfile(str(tmp_path / "reports" / "fleet" / "gds-fleet.json")), res.stdout[-3000:]


def test_9_each_inventory_has_its_own_report_saying_which_run_wrote_it(lab, tmp_path):
    names = [h["name"] for h in lab.hosts]
    fleet_a = own_inventory(tmp_path, lab, "fleet-a", names[:1])
    fleet_b = own_inventory(tmp_path, lab, "fleet-b", names[1:])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ansible_playbook = os.path.join(VENV_BIN, "ansible-playbook")
    # playbooks by collection name, as an installed collection is used, from another directory
    for inv in (fleet_a, fleet_b):
        res = run([ansible_playbook, "-i", inv, "gpudirect.storage.site"], check=False, cwd=str(elsewhere))
        assert res.returncode == 0, res.stdout[-4000:]
    reports = tmp_path / "reports"  # beside the inventories, one directory per inventory
    for inv, hosts in ((fleet_a, names[:1]), (fleet_b, names[1:])):
        with open(str(reports / os.path.basename(inv) / "gds-fleet.json")) as f:
            report = json.load(f)
        assert [r["host"] for r in report["hosts"]] == hosts
        assert report["run"]["playbooks"] == ["gpudirect.storage.site"], report["run"]
    first = json.load(open(str(reports / "fleet-a" / "gds-fleet.json")))
    res = run([ansible_playbook, "-i", fleet_a, "gpudirect.storage.verify"], check=False, cwd=str(elsewhere))
    assert res.returncode == 0, res.stdout[-4000:]
    second = json.load(open(str(reports / "fleet-a" / "gds-fleet.json")))
    assert second["run"]["playbooks"] == ["gpudirect.storage.verify"], second["run"]
    assert second["generated"] > first["generated"]
    md = open(str(reports / "fleet-a" / "gds-fleet.md")).read()
    assert "gpudirect.storage.verify" in md and second["generated"] in md
    # the report names where it is in the run's output
    assert str(reports / "fleet-a" / "gds-fleet.html") in res.stdout
