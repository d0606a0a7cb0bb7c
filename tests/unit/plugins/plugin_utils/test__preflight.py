# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The read-only checks of gds_preflight: one message per failed check, naming the option."""

from __future__ import annotations

import copy
import re

import pytest

from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.gds_preflight import argument_spec
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
    assert _preflight.checks(UBUNTU, policy(supported_os={"ubuntu": ["24.04"]})) == ([], [])


def test_unsupported_os_fails_or_warns_naming_the_option():
    debian = facts(host__os={"id": "debian", "version_id": "12", "major": "12", "distribution": "Debian"})
    failures, warnings = _preflight.checks(debian, POLICY)
    assert warnings == [] and len(failures) == 1
    assert failures[0].startswith("Debian 12 is not a supported GDS host OS (gds_preflight_supported_os: Ubuntu "
                                  "22.04/24.04, RHEL 9, Rocky Linux 9, AlmaLinux 9")
    assert failures[0].endswith("set gds_preflight_unsupported_os: warn to go on anyway (or "
                                "gds_unsupported_os: warn for the whole stack)")
    failures, warnings = _preflight.checks(debian, policy(unsupported_os="warn"))
    assert failures == [] and warnings[0].endswith("going on because gds_preflight_unsupported_os is warn")


@pytest.mark.parametrize("change, pol, needle", [
    ({"host__architecture": "ppc64le"}, {}, "architecture ppc64le is not supported (gds_preflight_supported_architectures: "),
    ({"host__free_mb": {"/": 100}}, {}, "only 100 MiB free on /, 2048 MiB needed"),
    ({"nvidia__driver_loaded": False}, {"require_driver": True}, "no NVIDIA driver loaded (no nvidia_fs); install the GPU "
                                                                 "driver first, or set gds_preflight_require_driver: false"),
    ({"secure_boot": "enabled"}, {"fail_on_secure_boot": True}, "Secure Boot is enabled and the DKMS-built nvidia-fs.ko "
                                                                "would not be signed with an enrolled key"),
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


@pytest.mark.parametrize("mok, pol, problem", [
    ({"cert": "/var/lib/mok/nvfs.der", "enrolled": False, "default_enrolled": False}, {"mok_key": "/k.priv"},
     "the MOK certificate /var/lib/mok/nvfs.der is not enrolled; run 'mokutil --import /var/lib/mok/nvfs.der'"),
    ({"cert": "/var/lib/mok/nvfs.der", "enrolled": True, "default_enrolled": False}, {"mok_key": "/k.priv"}, None),
    ({"cert": None, "enrolled": None, "default_enrolled": True}, {}, None),  # DKMS signs with its enrolled default key
    ({"cert": None, "enrolled": None, "default_enrolled": False}, {}, "would not be signed with an enrolled key"),
])
def test_secure_boot_checks_enrolment_as_nvidia_fs_does(mok, pol, problem):
    """A key that is set but not enrolled is refused at load time just like no key."""
    host = facts(secure_boot="enabled")
    host["mok"] = mok
    failures, warnings = _preflight.checks(host, policy(fail_on_secure_boot=True, **pol))
    if problem is None:
        assert failures == [] and warnings == []
    else:
        assert len(failures) == 1 and problem in failures[0]
        assert "set gds_preflight_fail_on_secure_boot: false" in failures[0]
        again, warnings = _preflight.checks(host, policy(**pol))
        assert again == [] and len(warnings) == 1 and problem in warnings[0]


def test_no_check_that_cannot_fail():
    """min_python is gone: the module already ran on the host's interpreter."""
    assert "min_python" not in argument_spec()
    assert _preflight.checks(facts(host__python="2.7.18"), POLICY) == ([], [])


def test_one_knob_spelling_for_unsupported_os():
    from ansible_collections.gpudirect.storage.plugins.module_utils._module_backends.nvidia_fs import argument_spec as nvfs_spec
    from ansible_collections.gpudirect.storage.plugins.modules.gpu_operator import argument_spec as operator_spec
    for spec in (argument_spec(), nvfs_spec(), operator_spec()):
        assert spec["unsupported_os"]["choices"] == ["fail", "warn"] or \
            sorted(spec["unsupported_os"]["choices"]) == ["fail", "warn"]
        assert not [k for k in spec if "unsupported_os" in k and k != "unsupported_os"]


def test_one_os_table_decides_for_nvidia_fs_preflight_and_gpu_operator():
    from ansible_collections.gpudirect.storage.plugins.module_utils._common import os_policy
    from ansible_collections.gpudirect.storage.plugins.module_utils._k8s import operator_values as _gpu_operator
    from ansible_collections.gpudirect.storage.plugins.module_utils._kernel import nvfs as _nvfs
    cases = [("ubuntu", "24.04"), ("ubuntu", "20.04"), ("rhel", "9.4"), ("rocky", "9"), ("debian", "12"),
             ("rhcos", "4.16"), ("almalinux", "8.10")]
    for os_id, version in cases:
        entry = os_policy.GDS_SUPPORTED_OS.get(os_id) or {"versions": (), "bare_metal": False, "gpu_operator": False}
        in_table = entry["versions"] is None or any(version == v or version.startswith(v + ".") for v in entry["versions"])
        bare = bool(entry["bare_metal"] and in_table)
        host = facts(host__os={"id": os_id, "version_id": version, "major": version.split(".", maxsplit=1)[0],
                               "distribution": os_id.capitalize()})
        assert (_preflight.checks(host, POLICY)[0] == []) is bare, (os_id, version)
        assert (_nvfs.unsupported_os({"id": os_id, "version_id": version}) is None) is bare, (os_id, version)
        assert _gpu_operator.os_supported({"id": os_id, "version_id": version}) is bool(entry["gpu_operator"] and in_table)


class _Summary(object):
    """A module warning as ansible-core 2.19+ hands it to an action (WarningSummary)."""

    def __init__(self, msg):
        self.event = type("Event", (), {"msg": msg})()


STAGE_OS_WARNING = ("Debian GNU/Linux 12 (bookworm) is not an OS GDS supports (Ubuntu 22.04/24.04, RHEL 9, "
                    "Rocky Linux 9, AlmaLinux 9); going on because unsupported_os=warn")


@pytest.mark.parametrize("stage_warning", [STAGE_OS_WARNING, _Summary(STAGE_OS_WARNING)])
def test_the_os_warning_is_the_nvidia_fs_stages_alone_which_the_rollout_repeats_word_for_word(stage_warning):
    """The rollout's nvidia_fs task gives the same warning: Ansible shows a warning text once per
    run, so the plan keeps the stage's and adds none of its own (the table still has the OS row)."""
    debian = facts(host__os={"id": "debian", "version_id": "12", "major": "12", "distribution": "Debian"})
    other = _Summary("probe_path=auto found no mounted file system GDS can serve")
    result = {"warnings": [stage_warning, other]}
    assert _preflight.record(result, debian, policy(unsupported_os="warn")) == []
    assert result["warnings"] == [stage_warning, other]
    assert [r["status"] for r in result["preflight"]["checks"]][0] == "warning"


def test_the_stage_os_warning_stays_where_preflight_has_nothing_to_say_about_the_os():
    result = {"warnings": [STAGE_OS_WARNING]}
    assert _preflight.record(result, UBUNTU, POLICY) == []
    assert result["warnings"] == [STAGE_OS_WARNING]


@pytest.mark.parametrize("free", [76538, 76500, 150, 50])
def test_the_free_space_a_failure_suggests_still_passes_after_a_little_more_is_used(free):
    failures, _warnings = _preflight.checks(facts(host__free_mb={"/": free}), policy(min_free_mb=10 ** 8))
    suggested = int(re.search(r"set gds_preflight_min_free_mb: (\d+)", failures[0]).group(1))
    assert 0 < suggested < free  # the disk moves between the two runs: a few MiB used must not fail it
    assert _preflight.checks(facts(host__free_mb={"/": suggested}), policy(min_free_mb=suggested))[0] == []
