# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The role defaults agree on one CUDA release: the GDS user space the nvidia_fs role
installs by default (libcufile-<cuda>) is a release cufile_config knows - its shipped file and
its schema - and the cufile role takes the release from the host, never a fixed other one."""

from __future__ import annotations

import os

import yaml

from ansible_collections.gpudirect.storage.plugins.module_utils._cufile import shipped as _cufile_shipped
from ansible_collections.gpudirect.storage.plugins.plugin_utils._cufile.schema import available_versions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def defaults(role):
    with open(os.path.join(ROOT, "roles", role, "defaults", "main.yml")) as f:
        return yaml.safe_load(f)


def spec_default(role, name):
    with open(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml")) as f:
        return yaml.safe_load(f)["argument_specs"]["main"]["options"][name]["default"]


def test_nvidia_fs_installs_a_cuda_release_whose_libcufile_the_collection_knows():
    cuda = defaults("nvidia_fs")["nvidia_fs_cuda_version"].replace("-", ".")
    assert spec_default("nvidia_fs", "nvidia_fs_cuda_version").replace("-", ".") == cuda
    shipped_by = dict((entry["cuda"], release) for release, entry in _cufile_shipped.RELEASES.items())
    assert cuda in shipped_by, "nvidia_fs installs CUDA %s; cufile_config knows %s" % (cuda, sorted(shipped_by))
    assert shipped_by[cuda] in available_versions()  # and has its schema


def test_cufile_takes_the_release_from_the_host():
    assert defaults("cufile")["cufile_version"] == "auto" == spec_default("cufile", "cufile_version")
    assert not defaults("cufile")["cufile_settings"] and not defaults("cufile")["cufile_base"]
    assert not defaults("cufile")["cufile_src"]  # no option: the host's file is kept as it is


def test_every_known_release_has_its_schema_and_shipped_file():
    assert sorted(_cufile_shipped.RELEASES) == sorted(available_versions())
    for release in _cufile_shipped.known_releases():
        assert _cufile_shipped.shipped(release) and _cufile_shipped.release(release + ".9")["cuda"]
