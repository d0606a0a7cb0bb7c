"""`make demo`, the README's first command: venv, 3 lab hosts, lab/prepare.yml, site.yml,
verify.yml and the fleet report, exactly as a user runs it."""

import json
import os
import re
import subprocess

from conftest import ROOT, orphans, run


def lab_hosts(n=3):
    """The host names of this checkout's lab (the Makefile names the lab after the checkout)."""
    name = re.search(r"--name (\S+)", run(["make", "-n", "-s", "lab-down"]).stdout).group(1)
    return ["%s-%02d" % (name, i) for i in range(1, n + 1)]


def test_make_demo_runs_site_and_verify_and_writes_the_report():
    hosts_of_the_lab = lab_hosts()
    try:
        res = run(["make", "demo", "N=3"], timeout=1500, check=False)
        assert res.returncode == 0, res.stdout[-8000:]
        out = res.stdout
        reports = os.path.join(ROOT, "inventories", "reports", "lab")  # beside the lab inventory
        assert "fleet report: %s/gds-fleet.html" % reports in out
        # site.yml did real work on the three hosts and verify.yml found them
        for host in hosts_of_the_lab:
            assert "| %s | ssh | ok | unavailable |" % host in out
        with open(os.path.join(reports, "gds-fleet.json")) as f:
            report = json.load(f)
        hosts = report["hosts"] if isinstance(report, dict) else report
        names = sorted(h["host"] for h in hosts)
        assert names == hosts_of_the_lab
        assert all(h["mode"] == "unavailable" and h["reason"] for h in hosts)
        assert os.path.getsize(os.path.join(reports, "gds-fleet.html")) > 1000
        # a second site.yml run on the demo lab changes nothing
        rerun = run([os.path.join(ROOT, ".venv/bin/ansible-playbook"), "playbooks/site.yml"], timeout=900)
        recap = [l for l in rerun.stdout.splitlines() if l.startswith(tuple(hosts_of_the_lab))]
        assert len(recap) == 3 and all("changed=0" in l and "failed=0" in l for l in recap), recap
    finally:
        subprocess.run(["make", "lab-down"], cwd=ROOT, check=False, stdout=subprocess.DEVNULL)
    assert orphans() == set()
