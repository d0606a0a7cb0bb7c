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
      - B(Checked before it is written), also in check mode - the key file exists on the host (or the
        key is given inline), a local directory exists, and the host of a URL resolves and answers
        (through the proxies of the environment or apt's C(Acquire::http(s)::Proxy)). Otherwise the task
        fails naming the suboption, and nothing is written.
      - When the task fails after writing it (the index refresh fails, or the repository lacks the
        packages asked for), the file is put back (or removed) and so is the package index
        (C(/var/lib/apt/lists), from a hard-link snapshot); the result then reports no change.
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
        description:
          - Keyring (apt C(Signed-By)) or key file (dnf C(gpgkey)) on the target; it must exist there.
          - With apt, the ASCII-armored public key itself (C(-----BEGIN PGP PUBLIC KEY BLOCK-----) ...)
            is written into the source's C(Signed-By) field instead.
        type: path
        required: true
"""
