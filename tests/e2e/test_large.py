# SPDX-License-Identifier: BSD-3-Clause
"""A large profile never makes the kernel deaf: while %profload reads
5·10^6 stacks (10^6 under ASan), or %profshow draws them, or a profiled
cell's graph is drawn, control keeps answering, an interrupt
(interrupt_request, or SIGINT to the kernel) stops the work and says so,
the session keeps what it had (its variables and its profiles, never part
of a cancelled load; a profiled cell's profile whether or not its graph
was drawn), and a shutdown does not wait for it.

Every bound is the test's own measure: a kernel_info round trip while the
kernel is idle, and how long the same work takes when nothing stops it."""
import os
import signal
import time
import zlib

import pytest

from conftest import (WAIT_SCALE, _read, _stash, collect, control_request, fails,
                      interrupt_when_printed, ok, send, start_kernel, stdout)

# Under ASan every step costs some five times as much: a fifth of the
# stacks keeps the load long beside a round trip, and the suite short.
N_STACKS = 1_000_000 if os.environ.get("CFLAME_SANITIZED") else 5_000_000


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Folded stacks, gzipped (some 17 MB for 5·10^6): N_STACKS lines,
    each its own stack."""
    path = tmp_path_factory.mktemp("large") / "big.folded.gz"
    z = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: a gzip stream
    with open(path, "wb") as f:
        for start in range(0, N_STACKS, 100_000):
            lines = "".join(f"main;run;work{i % 13};leaf{i} 1\n"
                            for i in range(start, start + 100_000))
            f.write(z.compress(lines.encode()))
        f.write(z.flush())
    return path


def idle_round_trip(kc):
    """The longest of five kernel_info round trips on control while the
    kernel does nothing: what answering costs on this machine now."""
    trips = []
    for _ in range(5):
        content, seconds = control_request(kc, "kernel_info_request", timeout=30 * WAIT_SCALE)
        assert content is not None and content["status"] == "ok"
        trips.append(seconds)
    return max(trips)


def started(kc, msg_id):
    """Waits until the kernel has taken the cell (its execute_input), after
    which it works on its magic; the messages read stay for collect()."""
    seen = []
    deadline = time.monotonic() + 60 * WAIT_SCALE
    while True:
        msg = _read(kc, "iopub", msg_id, max(0.0, deadline - time.monotonic()))
        assert msg is not None, "the kernel did not take the cell"
        seen.append(msg)
        if msg["msg_type"] == "execute_input":
            break
    _stash(kc, "iopub")[:0] = seen


def served_while_busy(kc, code, bound, then=None):
    """Runs code, asking kernel_info on control all the while; each must be
    answered within bound seconds. With then, sends that cell too once the
    kernel has taken code: it must run after code, printing what it
    prints. Returns (the cell's Run, how long the cell took from its
    execute_input, the round trips measured while it ran)."""
    msg_id = send(kc, code, stop_on_error=False)
    started(kc, msg_id)
    then_id = send(kc, then) if then else None
    t0 = time.monotonic()
    trips = []
    while True:
        reply = _read(kc, "shell", msg_id, 0)
        if reply is not None:
            _stash(kc, "shell").insert(0, reply)
            break
        content, seconds = control_request(kc, "kernel_info_request", timeout=bound)
        assert content is not None, (
            f"kernel_info on control was not answered within {bound:.2f} s while {code!r} ran "
            f"(answered before: {['%.3f' % t for t in trips]})")
        trips.append(seconds)
        time.sleep(0.1)
    r = collect(kc, msg_id, timeout=600)
    if then_id:
        later = collect(kc, then_id, timeout=60)
        assert later.reply["status"] == "ok", later.reply
        # By the kernel's clock: the messages' dates.
        assert later.outputs and later.outputs[0]["date"] >= r.reply_msg["header"]["date"], \
            f"{then!r} ran before {code!r} was answered"
    return r, r.reply_t - t0, trips


def interrupted(kc, code, interrupt, work_s):
    """Runs code and interrupts it once the kernel has taken it; the answer
    must be an Interrupted error, within a quarter of work_s (what the same
    work took when nothing stopped it) of the interrupt. Returns the Run."""
    msg_id = send(kc, code, stop_on_error=False)
    started(kc, msg_id)
    t_int = time.monotonic()
    interrupt()
    r = collect(kc, msg_id, timeout=600)
    took = r.reply_t - t_int
    assert r.reply["status"] == "error" and r.reply["ename"] == "Interrupted", r.reply
    assert took <= work_s / 4, (
        f"{code!r} was answered {took:.2f} s after the interrupt; the whole work takes "
        f"{work_s:.2f} s, and an interrupt must cut it short")
    return r


def test_a_large_load_and_render_leave_control_answering_and_stop_when_interrupted(big,
                                                                                   tmp_path):
    with start_kernel() as (km, kc):
        ok(kc, "int kept = 41;")
        bound = max(1.0, 10 * idle_round_trip(kc))

        # The load: control answers throughout, and the reply comes when
        # the stacks are in.
        # A cell sent meanwhile waits its turn: shell requests run in order.
        r, load_s, trips = served_while_busy(kc, f"%profload {big}", bound,
                                             then='printf("after\\n");')
        assert r.reply["status"] == "ok", r.reply
        assert f"in {N_STACKS} stacks" in stdout(r.outputs), stdout(r.outputs)
        assert trips, f"the load took {load_s:.2f} s: too short to ask anything meanwhile"

        # The graph of those stacks: the same.
        r, show_s, trips = served_while_busy(kc, "%profshow", bound)
        assert r.reply["status"] == "ok", r.reply
        assert [o for o in r.outputs if o["msg_type"] == "display_data"], r.outputs
        assert trips, f"%profshow took {show_s:.2f} s: too short to ask anything meanwhile"

        # SIGINT to the kernel stops a drawing, as an interrupt_request does.
        pid = km.provisioner.process.pid
        r = interrupted(kc, "%profshow", lambda: os.kill(pid, signal.SIGINT), show_s)
        assert "%profshow" in r.reply["evalue"], r.reply["evalue"]
        assert not [o for o in r.outputs if o["msg_type"] == "display_data"], \
            "an interrupted %profshow drew its graph all the same"

        # An interrupted load keeps nothing: the session profile is the one
        # before it, and no baseline appears.
        small = tmp_path / "small.folded"
        small.write_text("prog;small_only 7\n")
        ok(kc, f"%profload {small}")
        r = interrupted(kc, f"%profload {big}", km.interrupt_kernel, load_s)
        assert "changed nothing" in r.reply["evalue"], r.reply["evalue"]
        interrupted(kc, f"%profload {big} as=bigbase", km.interrupt_kernel, load_s)
        report = ok(kc, "%profprint format=flat")
        assert "small_only" in report and "leaf" not in report, report
        fails(kc, "%profdiffview bigbase", "MagicError")

        # The session goes on: its variable, and the runs it keeps; a cell's
        # magics and code still run in their order around the work off the
        # loop.
        out = ok(kc, f"%profload {small}\n%profprint format=flat\n"
                     'printf("%d\\n", kept + 1);')
        assert out.index("Loaded 7 samples") < out.index("small_only") < out.index("42\n"), out
        ok(kc, "%profhistory")

        # Shutdown while a load runs: answered on control, and the kernel
        # ends without waiting for the load.
        msg_id = send(kc, f"%profload {big}", stop_on_error=False)
        started(kc, msg_id)
        content, _ = control_request(kc, "shutdown_request", bound, {"restart": False})
        assert content is not None and content["status"] == "ok", content
        t = time.monotonic()
        while km.is_alive() and time.monotonic() - t < load_s:
            time.sleep(0.05)
        assert not km.is_alive(), f"the kernel still ran {load_s:.2f} s after its shutdown"
        ended = time.monotonic() - t
        assert ended <= max(bound, load_s / 4), (
            f"the kernel ended {ended:.2f} s after its shutdown_reply; the load takes "
            f"{load_s:.2f} s, and a shutdown must not wait for it")


# A profiled cell's own code: some 100 ms of CPU in spin, then a line the
# test waits for (the worker sends it with the cell's end).
PROFILED_CELL = ("%%profdiffview big\n"
                 "static volatile double sink;\n"
                 "__attribute__((noinline)) static void spin(void) {\n"
                 "  for (long i = 0; i < 100000000; i++) sink += i;\n"
                 "}\n"
                 "spin();\n"
                 'printf("ran\\n");\n'
                 "fflush(stdout);\n"
                 "kept + 1")


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """Folded stacks: a quarter of N_STACKS lines, each its own stack. A diff
    against them takes seconds to draw."""
    path = tmp_path_factory.mktemp("large") / "baseline.folded"
    with open(path, "w") as f:
        f.writelines(f"main;run;work{i % 13};leaf{i} 1\n" for i in range(N_STACKS // 4))
    return path


def test_the_graph_after_a_profiled_cell_leaves_control_answering_and_an_interrupt_skips_it(
        baseline, km, kc):
    """The graph after a profiled cell is drawn off the loop: here the diff
    of a short cell against a baseline of many stacks, which takes
    seconds to draw. Control answers meanwhile; an interrupt stops the
    drawing, keeps the cell's profile and says how to draw it."""
    ok(kc, "int kept = 41;")
    bound = max(1.0, 10 * idle_round_trip(kc))
    r = collect(kc, send(kc, f"%profload {baseline} as=big"), timeout=600)
    assert r.reply["status"] == "ok", r.reply

    r, _, trips = served_while_busy(kc, PROFILED_CELL, bound)
    assert r.reply["status"] == "ok", r.reply
    ran = [o for o in r.outputs if o["msg_type"] == "stream" and "ran" in o["text"]]
    shown = [o for o in r.outputs if o["msg_type"] == "display_data"]
    assert ran and len(shown) == 1, r.outputs
    # By the kernel's clock: the messages were read once the cell ended.
    draw_s = (shown[0]["date"] - ran[0]["date"]).total_seconds()
    # Asked every 0.1 s: a drawing of a second has been asked about.
    assert [t for t in trips if t], trips
    assert draw_s >= 1.0, (
        f"the graph was drawn {draw_s:.2f} s after the cell's end: too short to show that "
        "control answers meanwhile")
    # The cell's value comes after its graph, as Out[n].
    results = [o for o in r.outputs if o["msg_type"] == "execute_result"]
    assert results and results[0]["data"]["text/plain"] == "(int) 42", r.outputs
    assert results[0]["date"] >= shown[0]["date"], r.outputs

    # Interrupted once the cell has run: the reply comes before the graph
    # would have been drawn, and says what became of it.
    r, dt = interrupt_when_printed(km, kc, PROFILED_CELL, "ran\n")
    assert r.reply["status"] == "error" and r.reply["ename"] == "Interrupted", r.reply
    assert "not drawn" in r.reply["evalue"] and "%profshow" in r.reply["evalue"], r.reply
    assert not [o for o in r.outputs if o["msg_type"] == "display_data"], r.outputs
    assert dt <= draw_s / 2, (
        f"the interrupted cell was answered {dt:.2f} s after the interrupt; its graph takes "
        f"{draw_s:.2f} s to draw, and an interrupt must cut it short")
    # Its profile was kept: the session profile is this run's.
    report = ok(kc, "%profprint format=flat")
    assert "spin" in report and "leaf" not in report, report
    assert "42" in ok(kc, 'printf("%d\\n", kept + 1);')
