# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Messages a new user reads in the first hour say each thing once and plainly."""

from __future__ import annotations

from ansible_collections.gpudirect.storage.plugins.plugin_utils._gds import role_options as _role_options


def test_an_empty_choice_is_named_not_printed_as_a_leading_comma():
    errors = _role_options.check("gds_verify", {"gds_verify_require_mode": "bogus"})
    assert len(errors) == 1
    assert "one of: ," not in errors[0], errors[0]
    assert 'must be one of: compat, p2pdma, gds or "" (empty), got: bogus' in errors[0], errors[0]
