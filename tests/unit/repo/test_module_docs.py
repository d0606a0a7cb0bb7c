"""Every module's DOCUMENTATION, EXAMPLES and RETURN parse as YAML and its documented options
are its argument spec (doc fragments aside) - caught here in seconds, not by the slow sanity run."""

import importlib
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules")) if f.endswith(".py") and f != "__init__.py")
FRAGMENT_OPTIONS = {"repo", "mode", "owner", "group", "seuser", "serole", "selevel", "setype", "attributes", "unsafe_writes"}


@pytest.mark.parametrize("name", MODULES)
def test_module_docs_parse_and_match_the_argument_spec(name):
    mod = importlib.import_module("ansible_collections.gpudirect.storage.plugins.modules." + name)
    doc = yaml.safe_load(mod.DOCUMENTATION)
    yaml.safe_load(mod.EXAMPLES)
    yaml.safe_load(mod.RETURN)
    assert doc["module"] == name
    # a module builds its AnsibleModule from its backend's bundle, arguments(), or from argument_spec()
    options = set(mod.arguments().argument_spec) if hasattr(mod, "arguments") else set(mod.argument_spec())
    documented = set(doc.get("options") or {})
    assert options - FRAGMENT_OPTIONS - documented == set() and documented - options == set()
