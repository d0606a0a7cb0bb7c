# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options of gpudirect.storage.gds_preflight, for its module file and its action plugin.
PRIVATE to the collection."""

from __future__ import annotations


def argument_spec():
    return dict(
        supported_os=dict(type="dict"),  # None: _common/os_policy.GDS_SUPPORTED_OS (bare metal)
        unsupported_os=dict(type="str", choices=["fail", "warn"], default="fail"),
        supported_architectures=dict(type="list", elements="str", default=["x86_64", "aarch64"]),
        min_free_mb=dict(type="int", default=2048),
        require_driver=dict(type="bool", default=False),
        fail_on_secure_boot=dict(type="bool", default=False),
        mok_key=dict(type="path", no_log=False),
        mok_cert=dict(type="path"),
        facts=dict(type="dict", default={"probe": False}),
    )
