# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The signed package repository option of mofed and nvidia_fs (arg spec:
``_packages.repos.REPO_ARG_SPEC``). PRIVATE to the collection."""

from __future__ import annotations


class ModuleDocFragment(object):

    DOCUMENTATION = r"""
options:
  repo:
    description:
      - Optional signed package repository (a vendor repository, a mirror, a local directory or
        a mounted ISO's C(DEBS)/C(RPMS) directory), written before installing to
        C(/etc/apt/sources.list.d/<name>.sources) (deb822 with C(Signed-By)) or
        C(/etc/yum.repos.d/<name>.repo) (C(gpgcheck=1)). Signature checks are never disabled.
    type: dict
    suboptions:
      name:
        description: File and repository name (default C(gpudirect-ofed) for mofed, C(gpudirect-cuda) for nvidia_fs).
        type: str
      url:
        description: Repository URL (C(http://), C(https://) or C(file:)).
        type: str
      path:
        description: Local directory (a mounted ISO, an extracted archive).
        type: path
      suite:
        description: apt suite; a value ending in C(/) is a flat repository.
        type: str
        default: ./
      components:
        description: apt components (non-flat repositories).
        type: list
        elements: str
        default: []
      signed_by:
        description: Keyring (apt C(Signed-By)) or key file (dnf C(gpgkey)) on the target.
        type: path
        required: true
"""
