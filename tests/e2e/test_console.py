# SPDX-License-Identifier: BSD-3-Clause
"""The kernel in `jupyter console`, the real one, in a pseudo-terminal.

A console prints display_data and ignores update_display_data, so a live
graph there (every=SECONDS, docs/PROFILING.md "Live graphs") is one line,
"live: 2.5 s so far, 766 samples", that each update rewrites with a carriage
return; the line is erased before the final graph, which the console prints
as any graph. Bounds come from the samples the run took, never from how
long it should take: the machine may be busy."""
import os
import pty
import re
import select
import signal
import time

from conftest import CFLAME_JUPYTER_PATH, COUNT, WAIT_SCALE, count

DEFS = [
    "#include <time.h>",
    "static double cpu_now(void) { struct timespec t; "
    "clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }",
    "volatile double sink;",
    "__attribute__((noinline)) void spin(void) { for (int k = 0; k < 100000; k++) sink += k * 0.5; }",
]
# Three seconds of the cell's own CPU time, six periods of 0.5 s at least.
LIVE_CELL = ["%%profview every=0.5",
             "double t0 = cpu_now(); while (cpu_now() - t0 < 3.0) spin();",
             ""]

LIVE_RE = re.compile(rf"\rlive: ([\d.]+) s so far, ({COUNT}) samples?")
ERASE_RE = re.compile(r"\r +\r")
FINAL_RE = re.compile(rf"({COUNT}) samples? every 1 ms of CPU represent")


class Console:
    """jupyter-console started with the cflame kernel on a pseudo-terminal;
    everything it wrote is in .out."""

    def __init__(self):
        env = dict(os.environ, JUPYTER_PATH=CFLAME_JUPYTER_PATH, TERM="dumb")
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execvpe("jupyter-console", ["jupyter-console", "--kernel=cflame"], env)
        self.out = ""

    def read_until(self, pattern, start, timeout):
        """Reads until pattern is found in .out after start; its match."""
        end = time.monotonic() + timeout
        while True:
            m = re.compile(pattern).search(self.out, start)
            if m:
                return m
            left = end - time.monotonic()
            assert left > 0, f"no {pattern!r} in {timeout:.0f} s; the console wrote: {self.out[start:][-3000:]!r}"
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    self.out += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:  # the console has ended
                    pass

    def run(self, lines, prompt):
        """Types lines (Enter after each) and waits for the prompt In [prompt];
        what the console wrote meanwhile."""
        start = len(self.out)
        for line in lines:
            os.write(self.fd, (line + "\r").encode())
            time.sleep(0.2)
        m = self.read_until(rf"In \[{prompt}\]:", start, 120 * WAIT_SCALE)
        return self.out[start:m.start()]

    def close(self):
        try:
            os.write(self.fd, b"exit\r")
            self.read_until("Shutting down kernel", 0, 30 * WAIT_SCALE)
        finally:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.waitpid(self.pid, 0)
            os.close(self.fd)


def test_a_live_graph_in_the_console_is_one_line_that_refreshes():
    c = Console()
    try:
        c.read_until(r"In \[1\]:", 0, 60 * WAIT_SCALE)
        for i, line in enumerate(DEFS):
            out = c.run([line], i + 2)
            assert "Error" not in out, out
        out = c.run(LIVE_CELL, len(DEFS) + 2)
    finally:
        c.close()
    lives = [(m.start(), float(m.group(1)), count(m.group(2))) for m in LIVE_RE.finditer(out)]
    final = FINAL_RE.search(out)
    assert final, f"no final graph: {out[-3000:]!r}"
    # The line refreshed while the cell ran, and each update held more
    # samples, over a longer run, than the one before.
    assert len(lives) >= 2, out[-3000:]
    for (_, s0, n0), (_, s1, n1) in zip(lives, lives[1:]):
        assert n1 > n0 and s1 > s0, lives
    # Each update rewrote the same line: nothing but the line itself between
    # two of them.
    for (a, _, _), (b, _, _) in zip(lives, lives[1:]):
        assert "\n" not in out[a:b], repr(out[a:b])
    # The line was erased before the final graph, which holds every sample
    # the last update had, and no update came after it.
    last = lives[-1][0]
    erase = ERASE_RE.search(out, last + 1)
    assert erase and erase.end() <= final.start(), repr(out[last:final.start() + 80])
    assert "\n" not in out[last:erase.end()], repr(out[last:erase.end()])
    assert count(final.group(1)) >= lives[-1][2], (final.group(0), lives[-1])
    assert not LIVE_RE.search(out, final.start()), out[final.start():]
    assert len(FINAL_RE.findall(out)) == 1, out[-3000:]
