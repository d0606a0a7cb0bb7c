# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The rolling batches of playbooks/site.yml follow the inventory order (or gds_canary first),
whatever order the plan's results came back in: the rollout play's own `hosts` expression, run
by ansible-playbook on local hosts that joined gds_rollout in reverse order."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
INVENTORY = {"all": {"children": {"gds_hosts": {"hosts": dict(
    ("gpu-%02d" % n, {"ansible_connection": "local", "ansible_python_interpreter": sys.executable})
    for n in (3, 1, 4, 2))}}}}
pytestmark = pytest.mark.skipif(not os.path.exists(PLAYBOOK), reason="ansible-playbook of this venv missing")


def rollout_play():
    with open(os.path.join(ROOT, "playbooks", "site.yml")) as f:
        return next(p for p in yaml.safe_load(f) if p.get("name", "").startswith("Roll out"))


def batches(tmp_path, *extra):
    play = rollout_play()
    plays = [
        {"hosts": "gds_hosts", "gather_facts": False, "tasks": [
            # the plan's results arrive in any order: join gds_rollout in the reverse of the inventory
            {"ansible.builtin.add_host": {"name": "{{ item }}", "groups": ["gds_rollout"]},
             "loop": ["gpu-02", "gpu-04", "gpu-03"], "run_once": True}]},
        {"hosts": play["hosts"], "gather_facts": False, "serial": [1, 2], "tasks": [
            {"ansible.builtin.debug": {"msg": "BATCH={{ ansible_play_batch | join(',') }}"}, "run_once": True}]},
    ]
    (tmp_path / "inventory.yml").write_text(yaml.safe_dump(INVENTORY, sort_keys=False))
    (tmp_path / "play.yml").write_text(yaml.safe_dump(plays, sort_keys=False))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_CONFIG=str(tmp_path / "ansible.cfg"), ANSIBLE_CALLBACK_RESULT_FORMAT="json",
               ANSIBLE_LOCALHOST_WARNING="false")
    out = subprocess.run([PLAYBOOK, "-i", "inventory.yml", "play.yml"] + list(extra), cwd=str(tmp_path), env=env,
                         capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    return re.findall(r"BATCH=([\w,-]+)", out.stdout)


def test_batches_follow_the_inventory_order(tmp_path):
    # inventory order: gpu-03, gpu-01, gpu-04, gpu-02; gpu-01 is converged (not in gds_rollout)
    assert batches(tmp_path) == ["gpu-03", "gpu-04,gpu-02"]


def test_gds_canary_names_the_first_batch(tmp_path):
    assert batches(tmp_path, "-e", "gds_canary=gpu-02") == ["gpu-02", "gpu-03,gpu-04"]
    assert batches(tmp_path, "-e", '{"gds_canary": ["gpu-04", "gpu-01"]}') == ["gpu-04", "gpu-03,gpu-02"]
