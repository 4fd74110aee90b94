# SPDX-License-Identifier: BSD-3-Clause
"""A busy machine made by the test itself: processes that spin while a
block runs, so that a profiled program's threads wait for a CPU (its run
delay), whatever else the machine runs (../shared/tools/under-load adds
its own on top)."""

import os
import subprocess
from contextlib import contextmanager


@contextmanager
def busy_loops(n=None):
    """n processes (twice the cores by default) that spin until the block
    ends: more runnable threads than cores."""
    n = n or 2 * os.cpu_count()
    procs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(n)]
    try:
        yield n
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()
