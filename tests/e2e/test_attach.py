# SPDX-License-Identifier: BSD-3-Clause
"""%profattach PID (docs/PROFILING.md, "Attaching to a running program"):
a program that is already running, sampled from the notebook by a helper
(`cflame record --pid`), shown as a flame graph that becomes the session
profile. The program is tests/cli/record/prog.c's `spin` (it burns CPU in
spin() until the SIGINT it handles, then exits 0 saying it had one), so
the tests also see that it comes out unharmed and untraced.

Bounds come from the program's own CPU clock, never from the wall clock:
the machine may be busy."""
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (COUNT, SOURCE_DIR, SpecStore, collect, displays, fails, flame, ok,
                      rows_of, send, share_bound, start_kernel, stdout, summary_of)

STORE = SpecStore("attach")


@pytest.fixture(scope="module")
def prog_bin(tmp_path_factory):
    out = tmp_path_factory.mktemp("attach") / "prog"
    subprocess.run(["cc", "-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", str(out),
                    str(SOURCE_DIR / "tests" / "cli" / "record" / "prog.c")], check=True)
    return out


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tracer_and_state(pid):
    status = Path(f"/proc/{pid}/status").read_text()
    return (int(re.search(r"TracerPid:\s*(\d+)", status).group(1)),
            re.search(r"State:\s*(\S)", status).group(1))


class Spinning:
    """prog spin, ready; at the end the SIGINT it handles, and a check that
    it exited 0 having had exactly that one."""

    def __init__(self, prog_bin):
        self.p = subprocess.Popen([prog_bin, "spin", "100000000", "handle"],
                                  stdout=subprocess.PIPE, text=True)
        assert self.p.stdout.readline() == "ready\n"
        self.pid = self.p.pid

    def used(self, seconds):
        """Returns once it has used this much more CPU."""
        start = cpu_seconds(self.pid)
        while cpu_seconds(self.pid) - start < seconds:
            time.sleep(0.01)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.p.send_signal(signal.SIGINT)
        out, _ = self.p.communicate(timeout=120)
        if exc[0] is None:
            assert self.p.returncode == 0 and out == "interrupts 1\n", (self.p.returncode, out)


def spin_samples(bundle):
    """The samples of the graph's spin frames, and the graph's total."""
    rows = rows_of(bundle)
    return sum(r["count"] for r in rows if r["func"] == "spin"), summary_of(bundle)


def test_profattach_shows_the_running_program_and_leaves_it_running(kc, prog_bin):
    with Spinning(prog_bin) as prog:
        prog.used(0.05)
        before = cpu_seconds(prog.pid)
        bundle, reply, outputs = flame(kc, f"%profattach {prog.pid} duration=1", timeout=120)
        took = cpu_seconds(prog.pid) - before
        STORE.add(bundle, "profattach")
        spin, s = spin_samples(bundle)
        # At 100 Hz of the program's CPU: the samples stand for the CPU time
        # it took while attached (at most what it took in the whole cell).
        assert spin > 0, s["line"]
        assert s["samples"] <= took * 100 + 10, (s["line"], took)
        out = stdout(outputs)
        assert re.search(rf"{COUNT} samples every 10 ms of CPU", out), out
        assert "it is now the session profile" in out, out
        # Detached: no tracer, and it works on.
        assert tracer_and_state(prog.pid)[0] == 0
        prog.used(0.05)
    # The session profile is the attach's: %profprint lists spin.
    text = ok(kc, "%profprint")
    assert re.search(r"\bspin\b", text), text


def test_an_interrupt_ends_the_attach_and_shows_what_was_taken(km, kc, prog_bin):
    with Spinning(prog_bin) as prog:
        msg_id = send(kc, f"%profattach {prog.pid} duration=3600", stop_on_error=False)
        # Attached (a tracer) and sampled a while: the program's CPU moved.
        while tracer_and_state(prog.pid)[0] == 0:
            time.sleep(0.01)
        prog.used(0.3)
        km.interrupt_kernel()
        r = collect(kc, msg_id, timeout=120)
        assert r.reply["status"] == "ok", r.reply
        ds = displays(r.outputs)
        assert len(ds) == 1, r.outputs
        spin, s = spin_samples(ds[0]["data"])
        assert spin > 0, s["line"]
        assert stdout(r.outputs).startswith("Interrupted: "), stdout(r.outputs)
        assert tracer_and_state(prog.pid)[0] == 0
        prog.used(0.05)


def test_a_shutdown_during_an_attach_ends_it_and_leaves_the_program_running(prog_bin):
    """shutdown_request while %profattach samples for an hour (sent alone,
    without the interrupt jupyter_client's shutdown_kernel sends first):
    the helper detaches, the kernel exits cleanly (0), and the program runs
    on, untraced."""
    with Spinning(prog_bin) as prog, start_kernel() as (km, kc):
        send(kc, f"%profattach {prog.pid} duration=3600", stop_on_error=False)
        while tracer_and_state(prog.pid)[0] == 0:
            time.sleep(0.01)
        prog.used(0.1)
        proc = km.provisioner.process
        kc.shutdown()
        assert proc.wait(timeout=120) == 0, proc.returncode
        assert tracer_and_state(prog.pid)[0] == 0
        prog.used(0.05)


def test_follow_forks_shows_each_process_the_program_forks(kc, prog_bin):
    """`prog await fork`, attached with follow_forks=true before it works:
    its child runs child_work (three times the parent's parent_work). The
    graph has a root for each process, named with its pid, the child's work
    under the child's root at the share of the CPU the program measured
    (the child's from wait4), within the binomial bound of the samples; the
    program and its child exit 0, as untraced."""
    prog = subprocess.Popen([prog_bin, "await", "fork", "14000000"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    msg_id = send(kc, f"%profattach {prog.pid} follow_forks=true duration=3600",
                  stop_on_error=False)
    while tracer_and_state(prog.pid)[0] == 0:
        time.sleep(0.01)
    prog.stdin.write("go\n")
    prog.stdin.flush()
    out, _ = prog.communicate(timeout=300)
    r = collect(kc, msg_id, timeout=300)
    assert r.reply["status"] == "ok", r.reply
    pids = json.loads(out.splitlines()[-1])
    assert prog.returncode == 0 and pids["status"] == 0, out
    ds = displays(r.outputs)
    assert len(ds) == 1, r.outputs
    STORE.add(ds[0]["data"], "profattach_follow_forks")
    rows, s = rows_of(ds[0]["data"]), summary_of(ds[0]["data"])
    roots = {row["func"]: row for row in rows if row["depth"] == 1}
    parent, child = roots[f"prog (pid {pids['parent']})"], roots[f"prog (pid {pids['child']})"]
    assert set(roots) == {f"prog (pid {pids['parent']})", f"prog (pid {pids['child']})"}, roots

    def work_under(func, root):
        return sum(row["count"] for row in rows if row["func"] == func
                   and root["x0"] <= row["x0"] and row["x1"] <= root["x1"])

    wc, wp = work_under("child_work", child), work_under("parent_work", parent)
    assert work_under("child_work", parent) == 0 and work_under("parent_work", child) == 0
    p = pids["child_cpu"] / (pids["child_cpu"] + pids["parent_cpu"])
    got = 100.0 * wc / (wc + wp)
    assert abs(got - 100 * p) <= share_bound(p, wc + wp, s), (got, p, wc, wp, s["line"])
    assert "in 2 processes" in stdout(r.outputs), stdout(r.outputs)


def test_bad_pids_are_errors_and_the_session_goes_on(kc):
    ok(kc, "int kept = 41;")
    reply, _ = fails(kc, "%profattach", "MagicError")
    assert "needs one PID" in reply["evalue"], reply["evalue"]
    reply, _ = fails(kc, "%profattach twelve", "MagicError")
    assert "'twelve'" in reply["evalue"], reply["evalue"]
    # A pid past the kernel's pid_max is no process.
    reply, _ = fails(kc, "%profattach 2147483647 duration=1", "MagicError")
    assert "no such process" in reply["evalue"], reply["evalue"]
    reply, _ = fails(kc, "%profattach 1 duration=0", "MagicError")
    assert "duration" in reply["evalue"], reply["evalue"]
    assert ok(kc, 'printf("%d\\n", kept + 1);') == "42\n"


def test_the_graphs_render():
    STORE.check()
