#!/usr/bin/env python
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Unzip only ``nvidia/*/lib/libcufile.so.0`` of each libcufile wheel into
``<dest>/<release>/libcufile.so.0`` and write ``<dest>/manifest.json``: per release the wheel,
the member unzipped, its size and sha256, and every cufile.json the wheel carries (none in the
wheels checked so far; the next phase needs to know where a shipped default can come from).

Usage: unpack.py WHEEL_DIR DEST_DIR     (stdlib only)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import zipfile

WHEEL_RE = re.compile(r"^nvidia_cufile(?:_cu\d+)?-(\d+)\.(\d+)\.(\d+)(?:\.(\d+))?-.*\.whl$")
LIB_RE = re.compile(r"^nvidia/[^/]+/lib/libcufile\.so\.0$")


def release_of(wheel_name):
    """'nvidia_cufile-1.15.1.6-py3-none-manylinux...whl' -> ('1.15', '1.15.1.6'); None if not a cufile wheel."""
    match = WHEEL_RE.match(os.path.basename(wheel_name))
    if not match:
        return None
    full = ".".join(part for part in match.groups() if part is not None)
    return "%s.%s" % match.groups()[:2], full


def unpack(wheel_dir, dest):
    manifest = {}
    for name in sorted(os.listdir(wheel_dir)):
        found = release_of(name)
        if not found:
            continue
        minor, full = found
        with zipfile.ZipFile(os.path.join(wheel_dir, name)) as wheel:
            members = wheel.namelist()
            libs = [m for m in members if LIB_RE.match(m)]
            if len(libs) != 1:
                raise SystemExit("%s: expected one nvidia/*/lib/libcufile.so.0, found %r" % (name, libs))
            data = wheel.read(libs[0])
            configs = [m for m in members if os.path.basename(m) == "cufile.json"]
            out_dir = os.path.join(dest, minor)
            os.makedirs(out_dir, exist_ok=True)
            with open(os.path.join(out_dir, "libcufile.so.0"), "wb") as f:
                f.write(data)
            for member in configs:  # keep any shipped default next to the library
                with open(os.path.join(out_dir, "cufile.json"), "wb") as f:
                    f.write(wheel.read(member))
        manifest[minor] = {"release": full, "wheel": name, "member": libs[0], "size": len(data),
                           "sha256": hashlib.sha256(data).hexdigest(), "cufile_json": configs,
                           "members": len(members)}
    with open(os.path.join(dest, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")
    return manifest


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    manifest = unpack(argv[1], argv[2])
    for minor, entry in sorted(manifest.items(), key=lambda kv: tuple(int(p) for p in kv[0].split("."))):
        print("%-5s %-12s %8d bytes  cufile.json in wheel: %s" % (
            minor, entry["release"], entry["size"], ", ".join(entry["cufile_json"]) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
