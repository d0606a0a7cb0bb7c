# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Load a script of this repository that is no package module (bench/run, lab/labctl, ...)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_script(name, *path):
    """The module ``name`` run from ROOT/``path``."""
    loader = importlib.machinery.SourceFileLoader(name, os.path.join(ROOT, *path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    return module
