# SPDX-License-Identifier: BSD-3-Clause
"""A kernel leaves with its client: when the process that started it ends
without shutting it down (a script killed, a crashed frontend), the kernel,
its worker, libclang's process and a cell's children are gone within 5 s
(docs/USAGE.md). The process watched is JPY_PARENT_PID where the client set
it (jupyter_client does), else the kernel's parent at its start."""
import os
import pathlib
import signal
import subprocess
import sys

import pytest

from conftest import CFLAME_JUPYTER_PATH, KERNEL_JSON
from test_deaf import gone
from test_worker_start import wait_for

# A client that starts the kernel, asks for a completion (libclang's
# process starts), runs a cell that starts a child and spins, prints the pid
# of the process it started, then waits to be killed.
CLIENT = r"""
import json, os, subprocess, sys, time
from jupyter_client import BlockingKernelClient, KernelManager
from jupyter_client.connect import write_connection_file

mode, spec_path, conn_path = sys.argv[1:4]
argv = json.load(open(spec_path))["argv"]
if mode == "jpy_parent_pid":
    # jupyter_client's own start, which sets JPY_PARENT_PID to this
    # process; the kernel runs under a shell that waits for it, so its
    # parent outlives this client.
    km = KernelManager(kernel_name="cflame")
    km.kernel_spec.argv[:0] = ["sh", "-c", '"$@"; exit $?', "sh"]
    km.start_kernel()
    kc = km.client()
    started = km.provisioner.process.pid
else:
    write_connection_file(conn_path)
    env = {k: v for k, v in os.environ.items() if k != "JPY_PARENT_PID"}
    proc = subprocess.Popen([a.replace("{connection_file}", conn_path) for a in argv], env=env)
    kc = BlockingKernelClient(connection_file=conn_path)
    kc.load_connection_file()
    started = proc.pid
kc.start_channels()
kc.wait_for_ready(timeout=120)
kc.complete("int main(void) { pri", 20, reply=True, timeout=120)
kc.execute('#include <unistd.h>\n'
           'if (fork() == 0) { execlp("sleep", "sleep", "300", (char *)0); _exit(1); }\n'
           'for (;;);')
print(started, flush=True)
time.sleep(600)
"""


def descendants(pid):
    """pid and every process below it, by /proc's children lists."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                todo += [int(c) for c in pathlib.Path(f"/proc/{p}/task/{t}/children").read_text().split()]
            except OSError:
                pass
    return found


def comm(pid):
    try:
        return pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.parametrize("mode", ["jpy_parent_pid", "parent"])
def test_the_kernel_and_its_children_leave_with_a_killed_client(mode, tmp_path):
    env = dict(os.environ, JUPYTER_PATH=CFLAME_JUPYTER_PATH, JUPYTER_RUNTIME_DIR=str(tmp_path))
    client = subprocess.Popen([sys.executable, "-c", CLIENT, mode, str(KERNEL_JSON),
                               str(tmp_path / "kernel.json")],
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        started = int(client.stdout.readline())
        # The worker spins in the cell, the cell's sleep and libclang's
        # process run: what must not outlive the client.
        wanted = {"cflame-kernel", "cflame-worker", "cflame-clang", "sleep"}
        tree = wait_for(lambda: (lambda t: t if wanted <= {comm(p) for p in t} else None)(
            descendants(started)), within=60)
        assert tree, f"not all of {wanted} started: {[comm(p) for p in descendants(started)]}"
        client.send_signal(signal.SIGKILL)
        client.wait()
        assert gone(tree, within=5.0), (
            f"still running 5 s after the client was killed: "
            f"{[(p, comm(p)) for p in tree if comm(p)]}")
    finally:
        client.kill()
        client.wait()
        for p in descendants(started) if "started" in locals() else []:
            if comm(p):
                os.kill(p, signal.SIGKILL)
