# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Shared attribute docs. PRIVATE to the collection."""

from __future__ import annotations


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
"""

    # Modules that only read the host and return ansible_facts.
    FACTS = r"""
options: {}
attributes:
  facts:
    description: Action returns an C(ansible_facts) dictionary that will update existing host facts.
"""

    FACTS_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details: This action does not modify state.
  diff_mode:
    support: N/A
    details: This action does not modify state.
  facts:
    support: full
"""

    # The modules that talk to the Kubernetes API; they share the connection options (_k8s_auth).
    ACTIONGROUP_K8S = r"""
options: {}
attributes:
  action_group:
    description: Use C(group/gpudirect.storage.k8s) in C(module_defaults) to set defaults for this module.
    support: full
    membership:
      - gpudirect.storage.k8s
"""
