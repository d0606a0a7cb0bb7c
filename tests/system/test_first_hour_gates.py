# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gates of playbooks/site.yml on a fresh lab fleet (three prepared hosts, never rolled out):
a cautious dry run with a requirement, and the rollout settings that must stop the run before
any host is touched - a canary that is no GDS host, a batch size Ansible cannot read, an
inventory without gds_hosts, and gds_serial & co. where Ansible never reads them.

Every test leaves the fleet as it found it (check mode, or a stop before the first host task),
so the order of the tests does not matter. Run alone under the lab lock:
  .venv/bin/pytest -p no:cacheprovider tests/system/test_first_hour_gates.py
"""

from __future__ import annotations

import json
import os
import re
import types

import pytest
import yaml

from _reliability import parse_recap, playbook, prepared_lab
from conftest import ROOT

SITE = "playbooks/site.yml"
HOST_TASK = re.compile(r"^TASK \[(?:gpudirect\.storage\.(?!gds_rollout_settings)|Group the hosts)", re.M)


def flat(text):
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    lab = prepared_lab("gates", 3, tmp_path_factory.mktemp("gates"))
    try:
        yield lab
    finally:
        lab.down()


def names(lab):
    return [h["name"] for h in lab.hosts]


def fatal_messages(out):
    """msg of every failed task (JSON result format)."""
    fatal = re.compile(r"^fatal: \[[^\]]+\]: FAILED! => (\{.*\})$", re.M)
    return [json.loads(m.group(1)).get("msg", "") for m in fatal.finditer(out)]


def assert_stopped_before_any_host_task(out):
    assert not HOST_TASK.search(out), out[-4000:]
    assert "Unexpected Exception" not in out, out[-4000:]
    recap = parse_recap(out)
    assert all(r.get("changed", 0) == 0 for r in recap.values()), recap


def inventory_copy(lab, where, group="gds_hosts", extra_files=None):
    """The lab's inventory in a directory of its own, for playbook(): its hosts in ``group`` (under
    group lab), the lab's group_vars/all.yml, and ``extra_files`` ({relative path: text})."""
    with open(lab.inventory) as f:
        inventory = yaml.safe_load(f)
    children = inventory["all"]["children"]
    children.pop("gds_hosts", None)
    if group:
        children[group] = {"children": {"lab": {}}}
    os.makedirs(str(where / "group_vars"))
    os.symlink(os.path.join(ROOT, "inventories", "lab", "group_vars", "all.yml"), str(where / "group_vars" / "all.yml"))
    (where / "hosts.yml").write_text(yaml.safe_dump(inventory, sort_keys=False))
    for rel, text in (extra_files or {}).items():
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        (where / rel).write_text(text)
    return types.SimpleNamespace(inventory=str(where / "hosts.yml"))  # what playbook() reads of a lab


def test_1_a_check_run_with_require_mode_gds_says_what_it_would_require_and_ends_rc0(fleet, tmp_path):
    rc, out = playbook(fleet, SITE, "--check", "-e", "gds_verify_require_mode=gds", report_dir=tmp_path)
    assert rc == 0, out[-6000:]
    text = flat(out)
    for host in names(fleet):
        line = re.search(r"\[%s\][^{]*\{[^}]*check mode: would require gds after installing ([^;\"]+); not proven"
                         % re.escape(host), text)
        assert line, text[-6000:]
        assert "nvidia_fs" in line.group(1) and "cufile" in line.group(1), line.group(0)
    # the report of a check run claims no proof and says why
    report = text.split("PLAY [Write the GDS fleet report")[1]
    assert "3 hosts, 0 ready for GDS" in report and "check mode" in report, report[-3000:]
    assert os.listdir(str(tmp_path)) == []  # check mode writes no report


def test_3_a_canary_that_is_no_gds_host_stops_the_run_before_any_host_task(fleet):
    rc, out = playbook(fleet, SITE, "-e", '{"gds_canary": ["%s", "gpu-z99"]}' % names(fleet)[0])
    assert rc == 2, out[-4000:]
    assert_stopped_before_any_host_task(out)
    messages = " ".join(fatal_messages(out))
    assert "gds_canary" in messages and "gpu-z99" in messages and "gds_hosts" in messages, messages


def test_4_a_gds_serial_ansible_cannot_read_stops_the_run_naming_the_element_and_the_forms(fleet):
    rc, out = playbook(fleet, SITE, "-e", '{"gds_serial": [1, "ten%"]}')
    assert rc == 2, out[-4000:]
    assert_stopped_before_any_host_task(out)
    messages = " ".join(fatal_messages(out))
    assert "gds_serial" in messages and "'ten%'" in messages, messages
    assert '"N%"' in messages and "a list of them" in messages, messages


def test_5_an_inventory_without_gds_hosts_fails_and_keeps_the_last_report(fleet, tmp_path):
    inventory = inventory_copy(fleet, tmp_path / "inv", group=None)
    reports = tmp_path / "reports"
    reports.mkdir(mode=0o700)
    last_good = reports / "gds-fleet.json"
    last_good.write_text('{"hosts": [{"host": "gpu-01"}]}\n')
    last_good.chmod(0o600)
    rc, out = playbook(inventory, SITE, report_dir=reports)
    assert rc == 2, out[-4000:]
    assert_stopped_before_any_host_task(out)
    messages = " ".join(fatal_messages(out))
    assert "gds_hosts" in messages and "children" in messages, messages
    assert last_good.read_text() == '{"hosts": [{"host": "gpu-01"}]}\n'
    assert sorted(os.listdir(str(reports))) == ["gds-fleet.json"]


@pytest.mark.parametrize("where", ["group_vars/gds_hosts.yml", "host_vars/{host}.yml"])
def test_6_rollout_settings_in_the_inventory_stop_the_run_saying_where_and_how(fleet, tmp_path, where):
    rel = where.format(host=names(fleet)[1])
    inventory = inventory_copy(fleet, tmp_path / "inv", extra_files={
        rel: 'gds_serial: [1, "50%"]\ngds_max_fail_percentage: 10\n'})
    # --check: before this gate, the run went on with the default batches and budget
    rc, out = playbook(inventory, SITE, "--check")
    assert rc == 2, out[-4000:]
    assert_stopped_before_any_host_task(out)
    messages = flat(" ".join(fatal_messages(out)))
    for name in ("gds_serial", "gds_max_fail_percentage"):
        assert name in messages, messages
    assert rel in messages, messages
    assert """-e '{"gds_serial": [1, "50%"]""" in messages, messages


def test_6_the_same_settings_as_extra_vars_are_accepted(fleet, tmp_path):
    rc, out = playbook(fleet, SITE, "--check", "-e", '{"gds_serial": [1, "50%"], "gds_max_fail_percentage": 10}',
                       "-e", "gds_canary=%s" % names(fleet)[2], report_dir=tmp_path)
    assert rc == 0, out[-4000:]
    rollout = out[out.index("PLAY [Roll out"):]
    first = re.search(r"^(?:ok|changed): \[([^\]]+)\]", rollout, re.M)
    assert first and first.group(1) == names(fleet)[2], rollout[:3000]
