# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options of gpudirect.storage.gds_rollout_check (a controller-side check by its action
plugin): one spec for the module file (ansible-doc, AnsibleModule) and the action plugin.
PRIVATE to the collection. No sequence here: the module runs only through its action plugin."""

from __future__ import annotations


def argument_spec():
    return dict(
        group=dict(type="str", default="gds_hosts"),
    )
