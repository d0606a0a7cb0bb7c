# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Offline stand-in for the get-pip bootstrap script ansible-test downloads.

ansible-test fetches get-pip.py from a host that is unreachable here; `make ansible-test-offline`
places this file in ansible-test's cache under the name it looks for. It bootstraps pip with
the interpreter's own ensurepip and then runs `pip install` with the arguments it was given.
"""

from __future__ import annotations

import subprocess
import sys

DROPPED = {"--no-setuptools", "--no-wheel"}


def main():
    subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
    args = [a for a in sys.argv[1:] if a not in DROPPED]
    if args:
        subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)


if __name__ == "__main__":
    main()
