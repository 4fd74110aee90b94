# SPDX-License-Identifier: BSD-3-Clause
"""A command run with TMPDIR on a small file system of its own, to see what
cflame does when the disk its sample buffers live on is full.

The command runs in a mount namespace of its own (unshare -m) with a fresh
tmpfs of the size asked mounted on an empty directory, which it gets as
TMPDIR: nothing outside sees the mount, and it goes when the command ends.
Mounting needs root, as CI runs the tests: a test that cannot mount fails
and says so, never skips.
"""

import os

import pytest


def in_small_tmpdir(mount_point, size, argv):
    """The argv that runs argv with TMPDIR a tmpfs of size ("100k") mounted
    on mount_point (an existing, empty directory)."""
    if os.geteuid() != 0:
        pytest.fail("this test mounts a small tmpfs as TMPDIR (unshare -m, mount): it needs "
                    "root, as CI runs it")
    script = ('mount -t tmpfs -o size="$1" none "$0" || exit 99; '
              'TMPDIR="$0"; export TMPDIR; shift; exec "$@"')
    return ["unshare", "-m", "sh", "-c", script, str(mount_point), size, *map(str, argv)]
