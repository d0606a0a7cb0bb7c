# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The read-only checks of gds_preflight: one message per failed check, naming the option."""

from __future__ import annotations

import copy

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._flows.gds_preflight import argument_spec
from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import preflight as _preflight

POLICY = dict((k, v.get("default")) for k, v in argument_spec().items())
UBUNTU = {"host": {"os": {"id": "ubuntu", "version_id": "24.04", "major": "24", "distribution": "Ubuntu"},
                   "architecture": "x86_64", "python": "3.12.3", "free_mb": {"/": 81234}},
          "nvidia": {"driver_loaded": True}, "secure_boot": "disabled", "mode": "compat", "reason": "no nvidia_fs",
          "versions": {"kernel": "6.8.0", "nvidia_driver": "580.95.05", "nvidia_fs": None, "ofed": "25.10-1.7.1"},
          "probe": {"ran": False}}


def facts(**changes):
    out = copy.deepcopy(UBUNTU)
    for path, value in changes.items():
        node = out
        keys = path.split("__")
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
    return out


def policy(**changes):
    return dict(POLICY, **changes)


def test_a_supported_host_passes_and_the_summary_says_where_it_starts():
    assert _preflight.checks(UBUNTU, POLICY) == ([], [])
    assert _preflight.summary(UBUNTU) == (
        "Ubuntu 24.04 x86_64, kernel 6.8.0, driver 580.95.05, nvidia_fs none, OFED 25.10-1.7.1, Secure Boot disabled; "
        "GDS now (inferred, no I/O) compat: no nvidia_fs")


def test_major_version_matches_and_numbers_in_the_policy_are_accepted():
    rhel = facts(host__os={"id": "rhel", "version_id": "9.4", "major": "9", "distribution": "RedHat"})
    assert _preflight.checks(rhel, POLICY) == ([], [])
    assert _preflight.checks(UBUNTU, policy(supported_os={"Ubuntu": [24.04]})) == ([], [])


def test_unsupported_os_fails_or_warns_naming_the_option():
    debian = facts(host__os={"id": "debian", "version_id": "12", "major": "12", "distribution": "Debian"})
    failures, warnings = _preflight.checks(debian, POLICY)
    assert warnings == [] and len(failures) == 1
    assert failures[0].startswith("Debian 12 is not a supported GDS host OS (gds_preflight_supported_os: Ubuntu "
                                  "22.04/24.04, RedHat 9, Rocky 9, AlmaLinux 9)")
    assert failures[0].endswith("set gds_preflight_fail_on_unsupported_os: false to go on anyway (or "
                                "nvidia_fs_allow_unsupported_os: true for the whole stack)")
    failures, warnings = _preflight.checks(debian, policy(fail_on_unsupported_os=False))
    assert failures == [] and warnings[0].endswith("going on because gds_preflight_fail_on_unsupported_os is false")


@pytest.mark.parametrize("change, pol, needle", [
    ({"host__architecture": "ppc64le"}, {}, "architecture ppc64le is not supported (gds_preflight_supported_architectures: "),
    ({"host__python": "3.6.8"}, {}, "Python 3.6.8 on the host is too old: the modules need 3.8 or later (gds_preflight_min_python)"),
    ({"host__python": "3.10.12"}, {"min_python": "3.11"}, "(gds_preflight_min_python)"),
    ({"host__free_mb": {"/": 100}}, {}, "only 100 MiB free on /, 2048 MiB needed"),
    ({"nvidia__driver_loaded": False}, {"require_driver": True}, "no NVIDIA driver loaded (no nvidia_fs); install the GPU "
                                                                 "driver first, or set gds_preflight_require_driver: false"),
    ({"secure_boot": "enabled"}, {"fail_on_secure_boot": True}, "Secure Boot is enabled and no MOK key is set: "),
])
def test_each_failed_check_is_one_message_naming_its_option(change, pol, needle):
    failures, warnings = _preflight.checks(facts(**change), policy(**pol))
    assert len(failures) == 1 and needle in failures[0], failures
    assert warnings == []


@pytest.mark.parametrize("change, pol", [
    ({"host__free_mb": {"/": 100}}, {"min_free_mb": 0}),
    ({"host__free_mb": {"/": None}}, {}),
    ({"nvidia__driver_loaded": False}, {}),
    ({"secure_boot": "enabled"}, {"fail_on_secure_boot": True, "mok_key": "/root/mok.key"}),
])
def test_switched_off_or_unknowable_checks_pass(change, pol):
    assert _preflight.checks(facts(**change), policy(**pol)) == ([], [])


def test_secure_boot_without_a_key_warns_by_default():
    failures, warnings = _preflight.checks(facts(secure_boot="enabled"), POLICY)
    assert failures == [] and warnings[0].endswith("(gds_preflight_fail_on_secure_boot is false: going on)")


def test_summary_of_a_probed_host_says_so():
    assert "GDS now (verified) gds: " in _preflight.summary(facts(verified=True, mode="gds"))
    assert "GDS now (probed) failed: " in _preflight.summary(facts(probe={"ran": True}, mode="failed"))
    assert _preflight.summary({}).startswith("- - -, kernel -, driver none")


def test_record_puts_the_checks_in_the_result_and_adds_warnings():
    result = {"warnings": ["from the module"]}
    failures = _preflight.record(result, facts(secure_boot="enabled", host__architecture="ppc64le"), POLICY)
    assert failures == result["preflight"]["failures"] and len(failures) == 1
    assert result["warnings"][0] == "from the module" and result["warnings"][1].startswith("Secure Boot is enabled")
