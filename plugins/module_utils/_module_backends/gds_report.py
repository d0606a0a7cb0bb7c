# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options of gpudirect.storage.gds_report, for its module file and its action plugin.
PRIVATE to the collection."""

from __future__ import annotations


def argument_spec():
    return dict(
        hosts=dict(type="list", elements="str"),
        verified_hosts=dict(type="bool", default=True),
        dest=dict(type="path"),
        formats=dict(type="list", elements="str", choices=["json", "md", "html"], default=["json", "md", "html"]),
        title=dict(type="str", default="GDS fleet readiness"),
        facts=dict(type="dict"),
        journal=dict(type="path"),
        k8s_nodes=dict(type="list", elements="dict", default=[]),
    )
