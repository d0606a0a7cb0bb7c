# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The files under tests/fixtures, read for the unit tests."""

from __future__ import annotations

import json
import os

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "fixtures")


def fixture_text(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def k8s_items(name):
    """The items of a list captured from the Kubernetes API emulator."""
    return json.loads(fixture_text("k8s_emulator", "captured", name))["items"]


def captured(rel):
    """A file captured on a real host (tests/fixtures/captured)."""
    return fixture_text("captured", rel)
