#!/usr/bin/env python
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Discover the cufile.json keys each libcufile release names in its string table.

libcufile stores most JSON paths it reads as dotted strings (``properties.io_batchsize``); the
effective-configuration dump uses the same path followed by ``" :"`` (a display label, not a
key: ``properties.use_compat_mode :``). Some paths are not whole strings (the compiler keeps
short ones as immediates, or merges tails: 1.20 has ``properties.gpu_bounce_buffer_slab_config.slab_si``
glued to the next string), so this is a discovery aid for the sweep, not the truth: the sweep's
wrong-type probes decide whether a release reads a key.

Usage: strings_keys.py LIB_DIR [OUT.json]
LIB_DIR holds <release>/libcufile.so.0 (tests/gpu/fetch-cufile-wheels.sh makes .cufile-lib/).
Writes {"releases": {release: {"keys": [...], "labels": [...], "fragments": [...], "env": [...]}},
"changes": [{"from", "to", "added", "removed"}]}. Standard library only (no `strings` binary).
"""

from __future__ import annotations

import json
import os
import re
import sys

SECTIONS = ("logging", "profile", "execution", "properties", "fs", "block", "denylist", "miscellaneous")
PRINTABLE = re.compile(rb"[\x20-\x7e]{4,}")
_SECTION = "(?:%s)" % "|".join(SECTIONS)
KEY = re.compile(r"^%s(?:\.[A-Za-z0-9_]+)+$" % _SECTION)
LABEL = re.compile(r"^(%s(?:\.[A-Za-z0-9_]+)+) ?:$" % _SECTION)
FRAGMENT = re.compile(r"^(%s(?:\.[A-Za-z0-9_]+)+)" % _SECTION)
ENV = re.compile(r"^CUFILE_[A-Z0-9_]+$")


def version_key(release):
    return tuple(int(part) for part in release.split("."))


def printable_strings(data):
    """What `strings -n 4` prints: runs of 4+ printable ASCII bytes."""
    return [match.group().decode("ascii") for match in PRINTABLE.finditer(data)]


def classify(strings):
    """Split a string table into keys (whole dotted paths), labels (path + ' :'), fragments
    (a dotted path glued to other text) and CUFILE_* environment names."""
    keys, labels, fragments, env = set(), set(), set(), set()
    for text in strings:
        if KEY.match(text):
            keys.add(text)
            continue
        label = LABEL.match(text)
        if label:
            labels.add(label.group(1))
            continue
        if ENV.match(text):
            env.add(text)
            continue
        fragment = FRAGMENT.match(text)
        if fragment and len(fragment.group(1)) > len(fragment.group(1).split(".")[0]) + 1:
            fragments.add(fragment.group(1))
    return {"keys": sorted(keys), "labels": sorted(labels - keys), "fragments": sorted(fragments - keys),
            "env": sorted(env)}


def changes(releases):
    order = sorted(releases, key=version_key)
    out = []
    for old, new in zip(order, order[1:]):
        before, after = set(releases[old]["keys"]), set(releases[new]["keys"])
        out.append({"from": old, "to": new, "added": sorted(after - before), "removed": sorted(before - after)})
    return out


def scan(lib_dir):
    releases = {}
    for name in sorted(os.listdir(lib_dir)):
        path = os.path.join(lib_dir, name, "libcufile.so.0")
        if not os.path.isfile(path):
            continue
        with open(path, "rb") as f:
            releases[name] = classify(printable_strings(f.read()))
    return {"$comment": "Dotted JSON paths found in the string table of each release's libcufile.so.0 "
                        "(tests/gpu/cufile_sweep/strings_keys.py over the nvidia-cufile wheels of "
                        "tests/gpu/cufile-wheels.txt). keys: whole strings; labels: effective-config display "
                        "labels ('<path> :'), not keys; fragments: a path glued to other text (a key "
                        "candidate). Discovery data for the sweep, not the measured truth.",
            "releases": releases, "changes": changes(releases)}


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    result = scan(argv[1])
    text = json.dumps(result, indent=1, sort_keys=True) + "\n"
    if len(argv) == 3:
        with open(argv[2], "w") as f:
            f.write(text)
    for change in result["changes"]:
        print("%s -> %s: +%d -%d %s" % (change["from"], change["to"], len(change["added"]), len(change["removed"]),
                                        " ".join(["+" + k for k in change["added"]] + ["-" + k for k in change["removed"]])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
