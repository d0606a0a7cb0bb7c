# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Chart values may carry registry passwords and NGC keys: helm gets them, the task's result and
its --diff do not. The values come back only when asked (show_values), with the secrets masked."""

from __future__ import annotations

import json

import pytest
import yaml

from ansible_collections.gpudirect.storage.plugins.modules import gpu_operator
from ansible_collections.gpudirect.storage.tests.unit.plugins.modules.test_gpu_operator import FakeHelm, deployed, run

SECRETS = ("nvapi-Sup3rSecretNgcKey0123", "Hunter2Hunter2", "nvapi-EnvListKey4567", "LegacyPw99")
VALUES = {"ngc": {"apiKey": SECRETS[0]},
          "operator": {"imagePullSecrets": ["ngc-secret"]},
          "driver": {"repository": "registry.example/nvidia", "registryPassword": SECRETS[1],
                     "env": [{"name": "NGC_API_KEY", "value": SECRETS[2]}]}}
INSTALLED = {"gds": {"enabled": True, "version": "2.29.4"}, "driver": {"registryPassword": SECRETS[3]}}


def leaked(res):
    text = json.dumps(res, default=str)
    return [s for s in SECRETS if s in text]


@pytest.mark.parametrize("check_mode", [False, True])
def test_secrets_in_values_reach_helm_but_not_the_result_or_the_diff(check_mode):
    helm = FakeHelm(*deployed(dict(INSTALLED)))
    res = run(helm, {"gds": {"version": "2.30.1"}, "values": VALUES}, check_mode=check_mode, diff=True)
    assert res["changed"] is True and not res.get("failed"), res
    assert leaked(res) == []
    assert "values" not in res and "applied_values" not in res
    assert "version: 2.29.4" in res["diff"]["before"] and "version: 2.30.1" in res["diff"]["after"]
    assert "apiKey: '********'" in res["diff"]["after"] and "ngc-secret" in res["diff"]["after"]
    if not check_mode:
        assert helm.values["ngc"]["apiKey"] == SECRETS[0]  # helm itself gets the real values


def test_removing_a_release_shows_no_secret_of_its_values():
    helm = FakeHelm(*deployed(dict(INSTALLED)))
    res = run(helm, {"state": "absent", "chart_ref": None}, diff=True)
    assert res["changed"] is True and leaked(res) == [] and "version: 2.29.4" in res["diff"]["before"]


def test_show_values_returns_the_applied_values_with_secrets_masked():
    helm = FakeHelm()
    res = run(helm, {"gds": {"version": "2.29.4"}, "values": VALUES, "show_values": True})
    assert leaked(res) == []
    applied = res["applied_values"]
    assert applied["gds"] == {"enabled": True, "version": "2.29.4"}
    assert applied["ngc"] == {"apiKey": "********"} and applied["driver"]["registryPassword"] == "********"
    assert applied["driver"]["env"] == [{"name": "NGC_API_KEY", "value": "nvapi-********"}]
    assert applied["operator"] == {"imagePullSecrets": ["ngc-secret"]}


def test_show_values_is_documented_and_no_return_value_is_named_values():
    # ansible-core 2.21's sanity test refuses a return value named values (bad-return-value-key)
    assert "values" not in yaml.safe_load(gpu_operator.RETURN)
    assert "applied_values" in yaml.safe_load(gpu_operator.RETURN)
    assert yaml.safe_load(gpu_operator.DOCUMENTATION)["options"]["show_values"]["default"] is False
