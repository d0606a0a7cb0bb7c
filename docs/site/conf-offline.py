
# --- appended by `make docs` (docs/site/conf-offline.py) ------------------------------------
# The build runs offline (CI reaches no docs site): no intersphinx inventories. References to
# the Ansible docs and to other collections' plugins therefore stay unresolved and are ignored
# by name below; every other dangling reference (one of this collection's own) still fails -W.
intersphinx_mapping = {}
nitpicky = True
nitpick_ignore_regex = [
    ("std:ref", r"(action_plugins|callback_plugins|common_return_values|ansible_configuration_settings)"),
    ("std:ref", r"ansible_collections\.(ansible\.builtin|kubernetes\.core)\..*"),
]
