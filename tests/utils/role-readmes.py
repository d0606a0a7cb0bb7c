# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Write roles/<role>/README.md from the role's own meta/argument_specs.yml and meta/main.yml
(Galaxy refuses a collection whose roles have no README). The options themselves stay in the
argument spec: `ansible-doc -t role gpudirect.storage.<role>` and the docs site (`make docs`)
show them. Run: `.venv/bin/python tests/utils/role-readmes.py` after editing a role's argument spec or
platforms; `--check` exits 1 when a README differs from what they say."""

import os
import re
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


MARKUP = re.compile(r"\b[MCVOIREP]\(([^()]*)\)")  # Ansible doc markup -> Markdown code


def _markdown(text):
    return MARKUP.sub(lambda m: "`%s`" % m.group(1), " ".join(text.split()))


def _paragraphs(value):
    if not value:
        return []
    return [_markdown(p) for p in ([value] if isinstance(value, str) else value)]


def _tested_note(meta_main):
    """The comment above ``platforms:`` in meta/main.yml: what was tested on which platform."""
    with open(meta_main) as handle:
        text = handle.read()
    above = text[:text.find("\n  platforms:")].splitlines()
    comment = []
    while above and above[-1].strip().startswith("#"):
        comment.insert(0, above.pop().strip().lstrip("#").strip())
    return re.sub(r"docs/platforms\.md$", "(docs/platforms.md)", " ".join(comment))


def readme(role):
    base = os.path.join(ROOT, "roles", role, "meta")
    with open(os.path.join(base, "argument_specs.yml")) as handle:
        specs = yaml.safe_load(handle)["argument_specs"]
    with open(os.path.join(base, "main.yml")) as handle:
        info = yaml.safe_load(handle)["galaxy_info"]
    main = specs["main"]
    lines = ["# gpudirect.storage.%s" % role, "", main["short_description"].rstrip(".") + ".", ""]
    for para in _paragraphs(main.get("description")):
        lines += [para, ""]
    lines += ["## Entry points", ""]
    for name, spec in sorted(specs.items()):
        options = ", ".join("`%s`" % o for o in sorted(spec.get("options") or {})) or "none"
        lines.append("- `%s`: %s Options: %s." % (name, spec["short_description"].rstrip(".") + ".", options))
    lines += ["", "## Platforms", ""]
    for platform in info.get("platforms") or []:
        lines.append("- %s: %s" % (platform["name"], ", ".join(str(v) for v in platform["versions"])))
    tested = _tested_note(os.path.join(base, "main.yml"))
    if tested:
        lines += ["", tested]
    lines += ["", "## Documentation", "",
              "Every option with its type, default and description: `ansible-doc -t role gpudirect.storage.%s`,"
              % role,
              "or the collection's docs site (`make docs`, then `build/docs/build/html/index.html`).", ""]
    return "\n".join(lines)


def main(argv):
    check = "--check" in argv
    stale = []
    for role in sorted(os.listdir(os.path.join(ROOT, "roles"))):
        path = os.path.join(ROOT, "roles", role, "README.md")
        text = readme(role)
        current = open(path).read() if os.path.exists(path) else None
        if current != text:
            stale.append(path)
            if not check:
                with open(path, "w") as handle:
                    handle.write(text)
    if check and stale:
        print("stale role READMEs (run tests/utils/role-readmes.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
