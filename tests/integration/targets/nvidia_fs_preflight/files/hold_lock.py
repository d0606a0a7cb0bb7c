# -*- coding: utf-8 -*-
# Copyright (c) gpudirect.storage contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Hold an fcntl write lock on argv[1] (as dpkg does on lock-frontend), write our pid to argv[2]
once locked, and keep it for argv[3] seconds."""
import fcntl
import os
import sys
import time

with open(sys.argv[1], "w") as lock:
    fcntl.lockf(lock, fcntl.LOCK_EX)
    with open(sys.argv[2], "w") as f:
        f.write("%d\n" % os.getpid())
    time.sleep(int(sys.argv[3]))
