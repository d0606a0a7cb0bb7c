"""A newcomer's first hour, scripted (issue 19): a fresh clone, the README's fenced commands in
order against a lab of this clone, and the usual mistakes - a typo in a variable, a wrong type,
a preflight failure fixed by the value its message suggests, gds_serial in the inventory and an
unreachable host - asserting the exit codes and that every failure message names a variable
the user can set.

What stands in for what: `make venv` is a link to this checkout's virtualenv (the same pinned
requirements; building another one needs the package index), and the lab part of `make demo`
(`make lab-up`, `lab/prepare.yml`) replaces `make demo` itself, which tests/system/test_demo.py
runs: the walk then rolls the lab out with the README's own commands. The lab is named after
the clone's path (Makefile LAB_NAME), so it never touches another checkout's lab.
Run it alone: .venv/bin/pytest tests/system/test_newcomer.py
"""

import json
import os
import re
import shutil
import subprocess

import pytest
import yaml

from conftest import ROOT, orphans

OURS = re.compile(r"\b(?:gds|cufile|mofed|nvidia_fs|gpu_operator|package_repo)_[a-z0-9_]+")
UNREACHABLE_IP = "10.77.250.250"  # in the lab range, used by no lab (as in test_report.py)
STEP_TIMEOUT = 900
PREFLIGHT = "ansible-playbook -i inventories/prod playbooks/site.yml --tags preflight"


def flat(text):
    """Output with every run of whitespace as one space (Ansible wraps warnings)."""
    return re.sub(r"\s+", " ", text)


def readme_blocks():
    """The README's fenced sh blocks, in order, as text."""
    with open(os.path.join(ROOT, "README.md")) as f:
        return [re.sub(r"^ {3}", "", b, flags=re.M) for b in re.findall(r"```sh\n(.*?)```", f.read(), re.S)]


def block_with(text):
    matches = [b for b in readme_blocks() if text in b]
    assert len(matches) == 1, "README has %d fenced blocks with %r" % (len(matches), text)
    return matches[0]


class Clone(object):
    def __init__(self, path):
        self.path = path
        self.env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "VIRTUAL_ENV")))
        self.env.update(ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PYTHONUNBUFFERED="1")
        self.env["PATH"] = os.pathsep.join(p for p in self.env.get("PATH", "").split(os.pathsep)
                                           if not p.startswith(os.path.join(ROOT, ".venv")) and "/.venv/" not in p)

    def sh(self, script, timeout=STEP_TIMEOUT, activate=True, **env):
        """(rc, output) of a bash script in the clone, after `source .venv/bin/activate` as the
        README says."""
        text = ("source .venv/bin/activate\n" if activate else "") + script
        res = subprocess.run(["bash", "-c", text], cwd=self.path, env=dict(self.env, **env), stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
        with open(os.path.join(os.path.dirname(self.path), "walk.log"), "a") as log:  # beside the clone
            log.write("$ %s\n%s\n-> rc=%d\n\n" % (script.strip(), res.stdout, res.returncode))
        return res.returncode, res.stdout

    def file(self, *parts):
        return os.path.join(self.path, *parts)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("newcomer") / "gpudirect-storage")
    subprocess.run(["git", "clone", "--quiet", ROOT, path], check=True)
    os.symlink(os.path.realpath(os.path.join(ROOT, ".venv")), os.path.join(path, ".venv"))  # stands in for make venv
    walk = Clone(path)
    # the clone's files are newer than the linked venv's stamp: say they are not, so that no make
    # target rebuilds (pip-installs into) the shared venv
    subprocess.run(["touch", "-r", os.path.join(path, ".venv", "bin", ".stamp"),
                    os.path.join(path, "requirements", "controller.txt")], check=True)
    try:
        rc, out = walk.sh("make venv && make lab-up N=3", activate=False)
        assert rc == 0, out[-4000:]
        # lab preparation (make demo does it with the lab config), not a README step
        rc, out = walk.sh("ANSIBLE_CONFIG=lab/ansible.cfg ansible-playbook lab/prepare.yml")
        assert rc == 0, out[-4000:]
        yield walk
    finally:
        subprocess.run(["make", "lab-down"], cwd=path, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False)


def fatal_messages(out):
    """msg of every failed task (JSON result format)."""
    messages = []
    for line in out.splitlines():
        m = re.match(r"^fatal: \[([^\]]+)\]: FAILED! => (\{.*\})$", line)
        if m:
            messages.append((m.group(1), json.loads(m.group(2)).get("msg", "")))
    return messages


def settable():
    from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_vars as _role_vars
    return _role_vars.settable_variables()


def assert_every_failure_names_a_settable_variable(out, hosts):
    messages = fatal_messages(out)
    assert sorted(set(h for h, dummy in messages)) == sorted(hosts), out[-4000:]
    for host, msg in messages:
        names = [n for n in OURS.findall(msg) if n in settable()]
        assert names, "%s: the message names no variable the user can set: %s" % (host, msg)


def recap(out):
    return dict((m.group(1), m.group(2)) for m in re.finditer(r"^(\S+)\s+: (ok=.*)$", out, re.M))


def append_group_vars(clone, text):
    with open(clone.file("inventories", "prod", "group_vars", "all.yml"), "a") as f:
        f.write("\n" + text + "\n")


@pytest.fixture
def prod(clone):
    """inventories/prod as README step 1 makes it, the lab being the fleet; restored after each test."""
    step1 = block_with("cp -r inventories/example inventories/prod")
    shutil.rmtree(clone.file("inventories", "prod"), ignore_errors=True)
    rc, out = clone.sh(step1.replace("inventories/example", "inventories/lab"))
    assert rc == 0, out
    # README step 1 also says: add the hosts' keys to known_hosts first (host key checking stays
    # on with the checkout's ansible.cfg). The walk keeps them in a file of its own.
    known_hosts = clone.file("known_hosts")
    with open(clone.file("inventories", "lab", "hosts.yml")) as f:
        addresses = [h.get("ansible_host", name) for name, h in
                     yaml.safe_load(f)["all"]["children"]["lab"]["hosts"].items()]
    scan = subprocess.run(["ssh-keyscan", "-T", "10"] + addresses, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                          text=True, timeout=120, check=False)
    assert scan.stdout.strip(), "ssh-keyscan found no host key"
    with open(known_hosts, "w") as f:
        f.write(scan.stdout)
    clone.env["ANSIBLE_SSH_ARGS"] = ("-o ControlMaster=auto -o ControlPersist=60s -o ServerAliveInterval=5 "
                                     "-o ServerAliveCountMax=3 -o UserKnownHostsFile=%s" % known_hosts)
    yield clone
    clone.env.pop("ANSIBLE_SSH_ARGS", None)
    shutil.rmtree(clone.file("inventories", "prod"), ignore_errors=True)


def lab_hosts(clone):
    with open(clone.file("inventories", "lab", "hosts.yml")) as f:
        return list(yaml.safe_load(f)["all"]["children"]["lab"]["hosts"])


def test_1_preflight_prints_a_table_and_rolls_nothing_out(prod):
    rc, out = prod.sh(block_with(PREFLIGHT))
    assert rc == 0, out[-4000:]
    # one task shows every host's table: a mapping of host to its lines
    assert len(re.findall(r"^TASK \[gpudirect\.storage\.gds_plan : Preflight checks", out, re.M)) == 1
    for host in lab_hosts(prod):
        assert re.search(r"^\s+%s:\s*$" % re.escape(host), out, re.M), out[-4000:]
    assert re.search(r"passed\s+architecture\s+x86_64 is supported", out)
    assert re.search(r"warning\s+os\s+Debian 12 is not a supported GDS host OS", out)
    # the rollout play matches no host; the other roles only validate their variables
    assert re.search(r"^PLAY \[Roll out[^\n]*\nskipping: no hosts matched", out, re.M), out[-4000:]
    assert not re.findall(r"^TASK \[gpudirect\.storage\.\w+ : (?!Validating arguments)", out.split("PLAY [Roll out")[1],
                          re.M)
    assert "would change" not in out


def test_2_a_typo_fails_every_host_with_did_you_mean_before_anything_changes(prod):
    append_group_vars(prod, "cufile_setings: {logging: {level: ERROR}}")
    rc, out = prod.sh(block_with(PREFLIGHT), ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    assert rc == 2, out[-4000:]
    assert_every_failure_names_a_settable_variable(out, lab_hosts(prod))
    assert "cufile_setings (did you mean cufile_settings?)" in flat(out)


def test_3_a_wrong_type_names_the_variable(prod):
    append_group_vars(prod, "gds_preflight_min_free_mb: lots")
    rc, out = prod.sh(block_with(PREFLIGHT), ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    assert rc == 2, out[-4000:]
    assert_every_failure_names_a_settable_variable(out, lab_hosts(prod))
    assert "gds_preflight_min_free_mb" in out


def test_4_a_failed_check_names_a_value_that_passes_and_that_value_does(prod):
    append_group_vars(prod, "gds_preflight_min_free_mb: 99999999")
    rc, out = prod.sh(block_with(PREFLIGHT), ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    assert rc == 2, out[-4000:]
    assert_every_failure_names_a_settable_variable(out, lab_hosts(prod))
    values = [int(v) for v in re.findall(r"set gds_preflight_min_free_mb: (\d+)", out)]
    assert values, out[-4000:]
    append_group_vars(prod, "gds_preflight_min_free_mb: %d" % min(values))  # the later line wins
    rc, out = prod.sh(block_with(PREFLIGHT))
    assert rc == 0, out[-4000:]


def failure_blocks(out):
    """{host: lines of its `fatal: ... FAILED! =>` result} in the default (YAML) output."""
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
    return blocks


def test_5_a_failure_names_its_reason_and_shows_its_table_not_the_facts_at_any_verbosity(prod):
    append_group_vars(prod, "gds_preflight_min_free_mb: 99999999")
    full_facts = re.compile(r"^\s+free_mb:$", re.M)  # a key of the facts' host section
    for verbosity in ("", " -v"):
        rc, out = prod.sh(block_with(PREFLIGHT).strip() + verbosity)  # the default (YAML) output
        assert rc == 2
        blocks = failure_blocks(out)
        assert sorted(blocks) == sorted(lab_hosts(prod))
        for host, lines in blocks.items():
            text = "\n".join(lines)
            assert "gds_preflight_min_free_mb" in text and not full_facts.search(text), text[-3000:]
            assert re.search(r"failed\s+free space", text) and re.search(r"passed\s+architecture", text), text


def test_6_gds_serial_in_the_inventory_stops_the_run_naming_the_file(prod):
    append_group_vars(prod, 'gds_serial: [1, "50%"]')
    rc, out = prod.sh(block_with(PREFLIGHT))
    assert rc == 2, out[-4000:]
    assert "gds_serial is set in " in flat(out) and "group_vars/all.yml" in flat(out), out[-4000:]
    assert "pass it as an extra var" in flat(out)


def test_7_the_rollout_goes_canary_first_in_inventory_order_past_an_unreachable_host(prod):
    with open(prod.file("inventories", "prod", "hosts.yml")) as f:
        inventory = yaml.safe_load(f)
    inventory["all"]["children"]["lab"]["hosts"]["ghost"] = {"ansible_host": UNREACHABLE_IP}
    with open(prod.file("inventories", "prod", "hosts.yml"), "w") as f:
        yaml.safe_dump(inventory, f, sort_keys=False)
    rc, out = prod.sh(block_with("gds_max_fail_percentage"), ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    assert rc == 4, out[-6000:]  # the unreachable host
    assert re.search(r"^fatal: \[ghost\]: UNREACHABLE!", out, re.M)
    hosts = lab_hosts(prod)
    results = recap(out)
    for host in hosts:
        assert "failed=0" in results[host] and "unreachable=0" in results[host], (results, fatal_messages(out))
    rollout = out[out.index("PLAY [Roll out"):]
    first_task = re.search(r"^TASK \[([^\]]+)\]", rollout, re.M).group(1)
    # serial [1, "10%", "25%"] of 3 hosts: one host per batch, so the first task runs once per batch
    runs = re.findall(r"^TASK \[%s\][^\n]*\n(?:[^\n]*\n)*?(?:changed|ok): \[([^\]]+)\]" % re.escape(first_task),
                      rollout, re.M)
    assert runs == hosts, runs  # the canary is the first host of the inventory, then inventory order
    with open(prod.file("inventories", "reports", "prod", "gds-fleet.json")) as f:  # beside the inventory
        report = json.load(f)
    rows = report["hosts"] if isinstance(report, dict) else report
    assert "ghost" in [r["host"] for r in rows]


# The install from the tarball, from a directory of one's own: tests/system/test_readme_steps.py


def test_9_nothing_left_behind(clone):
    subprocess.run(["make", "lab-down"], cwd=clone.path, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, check=False)
    assert orphans() == set()
