"""The fleet report keeps what failed tasks said to itself: credentials in a failed task's stderr
or message never reach the run journal or gds-fleet.{json,md,html}, and another local user can
read none of those files.

A real ansible-playbook run on this machine: one host whose shell task fails with credentials on
stderr, one whose fail task says them, then the report play (role gpudirect.storage.gds_report)
with the gds_report callback, writing into a directory every user can pass through.
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

from controller_users import local_user, run_as

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
ATTACKER = "gdsreportreader"

NGC_LEGACY = "YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo6MDEyMzQ1NjctODlhYi1jZGVmLTAxMjMtNDU2Nzg5YWJjZGVm"
SECRETS = ["Sup3rS3cretPw", "eyJzdWIiOiJ4In0", "nvapi-AbCdEf0123456789ghIJKLmnopQRSTuvwxYZ", NGC_LEGACY,
           "Hunter2Hunter2", "ghp0123456789abcdefABCDEF", "kubeT0kenValue"]
STDERR = ("curl: (22) https://admin:Sup3rS3cretPw@registry.example/v2/ 401; "
          "Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl; "
          "NGC_API_KEY=nvapi-AbCdEf0123456789ghIJKLmnopQRSTuvwxYZ; old key " + NGC_LEGACY + "; "
          "helm registry login --password=Hunter2Hunter2 nvcr.io; token=ghp0123456789abcdefABCDEF")
MESSAGE = "kubectl --token kubeT0kenValue get nodes failed; see https://admin:Sup3rS3cretPw@registry.example"


def plays(report_dir):
    leak = [{"name": "a task that fails with credentials on stderr",
             "ansible.builtin.shell": "echo '%s' >&2; exit 3" % STDERR,
             "when": "inventory_hostname == 'leaky-01'"},
            {"name": "a task that fails with credentials in its message",
             "ansible.builtin.fail": {"msg": MESSAGE}, "when": "inventory_hostname == 'leaky-02'"}]
    report = {"name": "gds_report", "role": "gpudirect.storage.gds_report"}
    return [{"name": "Leak", "hosts": "leaky", "gather_facts": False, "tasks": leak},
            {"name": "Report", "hosts": "localhost", "gather_facts": False, "roles": [report],
             "vars": {"gds_report_hosts": ["leaky-01", "leaky-02"], "gds_report_dir": report_dir}}]


@pytest.fixture(scope="module", params=["report play", "fallback report"])
def report_run(request):
    """The report play writes the report when a healthy host keeps the run going; without one the
    run ends after the failures and the callback writes its fallback report."""
    base = tempfile.mkdtemp(prefix="gds-report-attack.")
    os.chmod(base, 0o755)  # any user may pass through, as a project checkout or a home directory
    report_dir = os.path.join(base, "reports")
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    leaky = {"leaky-01": local, "leaky-02": local}
    if request.param == "report play":
        leaky["healthy-03"] = local
    inventory = {"all": {"children": {"leaky": {"hosts": leaky}}, "hosts": {"localhost": local}}}
    for name, doc in (("hosts.yml", inventory), ("leak.yml", plays(report_dir))):
        with open(os.path.join(base, name), "w") as f:
            json.dump(doc, f)
    journal = os.path.join(base, "journal", "run.jsonl")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), GDS_REPORT_JOURNAL=journal,
               ANSIBLE_COLLECTIONS_PATH=os.path.join(ROOT, "build", "collections"), ANSIBLE_NOCOLOR="1")
    done = subprocess.run([PLAYBOOK, "-i", "hosts.yml", "leak.yml"], cwd=base, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    assert ("the run ended before its report play" in done.stdout) == (request.param == "fallback report"), done.stdout
    if request.param == "fallback report":  # the callback's default place: beside the inventory (hosts.yml)
        report_dir = os.path.join(base, "reports", "hosts")
    yield {"base": base, "dir": report_dir, "journal": journal, "output": done.stdout}
    subprocess.run(["rm", "-rf", "--", base], check=False)


def report_files(run):
    return [os.path.join(run["dir"], name) for name in ("gds-fleet.json", "gds-fleet.md", "gds-fleet.html")]


def test_the_report_names_both_failures(report_run):
    with open(os.path.join(report_run["dir"], "gds-fleet.json")) as f:
        report = json.load(f)
    failures = dict((h["host"], h["failure"]) for h in report["hosts"])
    assert failures["leaky-01"]["task"] == "a task that fails with credentials on stderr", report_run["output"]
    assert "registry.example" in failures["leaky-01"]["msg"]
    assert "kubectl --token" in failures["leaky-02"]["msg"]


@pytest.mark.attack
def test_credentials_from_failed_tasks_never_reach_the_report_or_the_journal(report_run):
    for path in report_files(report_run) + [report_run["journal"]]:
        with open(path) as f:
            text = f.read()
        assert [s for s in SECRETS if s in text] == [], path


@pytest.mark.attack
def test_another_user_cannot_read_the_report_or_the_journal(report_run):
    paths = report_files(report_run) + [report_run["journal"]]
    for path in paths:
        assert os.stat(path).st_mode & 0o077 == 0, "%s is %o" % (path, os.stat(path).st_mode & 0o777)
    for path in (report_run["dir"], os.path.dirname(report_run["journal"])):
        assert os.stat(path).st_mode & 0o027 == 0, "%s is %o" % (path, os.stat(path).st_mode & 0o777)
    read = "import sys\nfor p in sys.argv[1:]:\n    try:\n        open(p).read(); print(p)\n    except OSError:\n" \
           "        pass\n"
    with local_user(ATTACKER) as user:
        assert run_as(user, read, *paths).stdout.split() == []
