"""Make this checkout importable as ``ansible_collections.gpudirect.storage`` for plain pytest.

ansible-test already puts the collection on sys.path; plain ``pytest`` from the repository
root does not, so a symlink tree under build/ is created once and prepended to sys.path.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _ensure_collection_importable():
    try:
        import ansible_collections.gpudirect.storage.plugins.module_utils._common.runner  # noqa: F401
        return
    except ImportError:
        pass
    base = os.path.join(ROOT, "build", "collections")
    link = os.path.join(base, "ansible_collections", "gpudirect", "storage")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        os.symlink(os.path.relpath(ROOT, os.path.dirname(link)), link)
    sys.path.insert(0, base)
    # ansible_collections is a namespace package: drop a cached one so the new path is seen.
    for name in [m for m in sys.modules if m == "ansible_collections" or m.startswith("ansible_collections.gpudirect")]:
        del sys.modules[name]


_ensure_collection_importable()
