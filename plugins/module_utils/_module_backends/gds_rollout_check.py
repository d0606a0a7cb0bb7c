# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options of gpudirect.storage.gds_rollout_check, for its module file and its action plugin.
PRIVATE to the collection."""

from __future__ import annotations


def argument_spec():
    return dict(
        group=dict(type="str", default="gds_hosts"),
    )
