"""Every module's DOCUMENTATION, EXAMPLES and RETURN parse as YAML and its documented options
are its argument spec (doc fragments aside) - caught here in seconds, not by the slow sanity run."""

import importlib
import os

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODULES = sorted(f[:-3] for f in os.listdir(os.path.join(ROOT, "plugins", "modules")) if f.endswith(".py") and f != "__init__.py")
# ansible-core's own files fragment (add_file_common_args); our fragments are read below
FILES_OPTIONS = {"mode", "owner", "group", "seuser", "serole", "selevel", "setype", "attributes", "unsafe_writes"}


def fragment_options(doc):
    """The options the module's extends_documentation_fragment adds: ours read from
    plugins/doc_fragments, ansible-core's files fragment from FILES_OPTIONS."""
    options = set()
    for name in doc.get("extends_documentation_fragment") or []:
        if name == "ansible.builtin.files" or name == "files":
            options |= FILES_OPTIONS
            continue
        fragment, _dot, part = name.replace("gpudirect.storage.", "", 1).partition(".")
        mod = importlib.import_module("ansible_collections.gpudirect.storage.plugins.doc_fragments." + fragment)
        text = getattr(mod.ModuleDocFragment, part or "DOCUMENTATION")
        options |= set(yaml.safe_load(text).get("options") or {})
    return options


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
    assert options - fragment_options(doc) - documented == set() and documented - options == set()
