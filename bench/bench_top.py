#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""`cflame record --top`'s cost (docs/PERFORMANCE.md): what the live table
takes from the program, and what it takes cflame.

The program is tests/cli/record/top.c: SECONDS of its own CPU time in turns
of one() and three(), printing how many turns it made; turns per second of
its CPU is its speed. Each round runs it under `cflame record` and under
`cflame record --top`, in an order that alternates, both on a
pseudo-terminal of 40 x 120 (the table is drawn only on a terminal). The
figures: the program's speed with --top against the same round's without
(median over the rounds), and cflame's own CPU time (the command's rusage
less the program's CPU, which cflame's summary says) with and without the
table, per redraw.

Usage: bench/bench_top.py [--build DIR] [--json FILE] [--rounds N] [--seconds S]
(scripts/bench top runs it on build/.)
"""
import argparse
import json
import fcntl
import os
import pty
import re
import select
import statistics
import struct
import subprocess
import tempfile
import termios
from pathlib import Path

CFLAME = "build/bin/cflame"
SOURCE = Path(__file__).resolve().parent.parent / "tests/cli/record/top.c"


def in_terminal(argv):
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    out = b""
    while select.select([fd], [], [], 300)[0]:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    _, _, ru = os.wait4(pid, 0)
    return out, ru.ru_utime + ru.ru_stime


def run(prog, seconds, top, out):
    text, cpu = in_terminal([CFLAME, "record", *(["--top"] if top else []), "-o", out, "--",
                             prog, str(seconds)])
    turns = int(re.search(rb"\r\n(\d+) turns", text.replace(b"\x1b8", b"\r\n")).group(1))
    program_cpu = float(re.search(rb"the program took ([\d.]+) s CPU", text).group(1))
    return turns / program_cpu, cpu - program_cpu, text.count(b"cflame record --top:")


def main():
    global CFLAME
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="the build tree (default: build)")
    ap.add_argument("--json", help="write every round's figures here")
    ap.add_argument("--rounds", type=int, default=5, help="rounds (default: 5)")
    ap.add_argument("--seconds", type=float, default=5,
                    help="the program's CPU seconds a run (default: 5)")
    args = ap.parse_args()
    CFLAME = str(Path(args.build) / "bin" / "cflame")
    rounds, seconds = args.rounds, args.seconds
    with tempfile.TemporaryDirectory() as d:
        prog = f"{d}/top"
        subprocess.run(["cc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", prog, SOURCE],
                       check=True)
        ratios, own = [], {False: [], True: []}
        redraws = []
        for i in range(rounds):
            r = {}
            for top in ((False, True) if i % 2 == 0 else (True, False)):
                r[top] = run(prog, seconds, top, f"{d}/p.folded")
                own[top].append(r[top][1])
            ratios.append(r[True][0] / r[False][0] - 1)
            redraws.append(r[True][2])
    extra = statistics.median(own[True]) - statistics.median(own[False])
    n = statistics.median(redraws)
    print(f"program speed with --top: {100 * statistics.median(ratios):+.1f}% "
          f"(rounds {', '.join(f'{100 * x:+.1f}%' for x in ratios)})")
    print(f"cflame's own CPU: {statistics.median(own[False]):.3f} s without the table, "
          f"{statistics.median(own[True]):.3f} s with {n:.0f} redraws "
          f"({1e3 * extra / max(n, 1):.1f} ms a redraw)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rounds": rounds, "seconds": seconds, "speed_ratios": ratios,
                       "own_cpu": {"without": own[False], "with": own[True]},
                       "redraws": redraws}, f, indent=1)


if __name__ == "__main__":
    main()
