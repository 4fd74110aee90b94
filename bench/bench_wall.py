#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The wall-clock profiler's cost (docs/PERFORMANCE.md): what
`cflame record --clock wall` does to a program that waits, against the
same program alone and under `--clock cpu`, side by side.

The program is bench/workloads/waits.c, which times itself (from its
threads' start to their end: the recorder's start-up and its work after
the program are not the program's). Each round runs every case three ways,
in an order that rotates from round to round:

  plain         the program alone
  clock=cpu     cflame record --clock cpu -o F.folded -- PROGRAM
  clock=wall    cflame record --clock wall -o F.folded -- PROGRAM

The cases:

  blocked   8 threads, each 300 rounds of 0.05 ms of CPU and a 0.95 ms
            nanosleep: mostly blocked. Target: the program's wall time under
            clock=wall at most 5% over plain.
  cpu       2 threads computing 300 ms each. Target: clock=wall costs the
            program no more CPU than clock=cpu (the waits' wrappers are not
            in a computing thread's way).
  pingpong  2 threads passing a byte through two pipes 20,000 times, every
            read blocking: the cost of one blocked interval, (wall under the
            profiler - plain) / waits, against the interval itself, and what
            clock=wall adds to clock=cpu's (whose per-thread perf event is
            switched in and out at each of those context switches).

Figures are medians over the rounds of each run's ratio to its round's
plain run (the pingpong's, of its difference). Nothing here asserts: the
table says which targets were met. Raw timings go to --json."""
import argparse
import datetime
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
CC = os.environ.get("CC", "cc")

CASES = {
    "blocked": ("blocked", 8, 300),
    "cpu": ("cpu", 2, 300),
    "pingpong": ("pingpong", 2, 20000),
}
WAYS = ("plain", "clock=cpu", "clock=wall")


def run_once(cflame, program, case, way, out):
    mode, threads, rounds = CASES[case]
    argv = [str(program), mode, str(threads), str(rounds)]
    if way != "plain":
        clock = way.split("=")[1]
        argv = [str(cflame), "record", "--clock", clock, "-o", str(out / f"{case}.folded"),
                "--", *argv]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: {r.returncode}\n{r.stderr}")
    fields = r.stdout.split()
    return float(fields[1]), float(fields[3])  # wall, cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"), help="cflame build tree")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--json", help="write every timing here")
    args = ap.parse_args()
    cflame = pathlib.Path(args.build) / "bin" / "cflame"
    if not cflame.exists():
        raise SystemExit(f"no {cflame}: build cflame first (scripts/bench builds it)")
    runs = {case: {way: [] for way in WAYS} for case in CASES}
    with tempfile.TemporaryDirectory(prefix="cflame-bench-wall-") as tmp:
        tmp = pathlib.Path(tmp)
        program = tmp / "waits"
        subprocess.run([CC, "-O2", "-g", "-pthread", "-o", program,
                        REPO / "bench" / "workloads" / "waits.c"], check=True)
        for r in range(args.rounds):
            for case in CASES:
                order = WAYS[r % 3:] + WAYS[:r % 3]
                for way in order:
                    runs[case][way].append(run_once(cflame, program, case, way, tmp))
    ratio = lambda case, way, k: statistics.median(  # noqa: E731
        runs[case][way][i][k] / runs[case]["plain"][i][k] - 1 for i in range(args.rounds))
    print(f"{'case':<10}{'way':<12}{'wall s':>9}{'cpu s':>9}{'wall vs plain':>15}{'cpu vs plain':>14}")
    for case in CASES:
        for way in WAYS:
            w = statistics.median(x[0] for x in runs[case][way])
            c = statistics.median(x[1] for x in runs[case][way])
            rel = "" if way == "plain" else f"{100 * ratio(case, way, 0):+14.1f}%"
            crel = "" if way == "plain" else f"{100 * ratio(case, way, 1):+13.1f}%"
            print(f"{case:<10}{way:<12}{w:>9.3f}{c:>9.3f}{rel:>15}{crel:>14}")
    blocked = 100 * ratio("blocked", "clock=wall", 0)
    cpu_wall, cpu_cpu = 100 * ratio("cpu", "clock=wall", 1), 100 * ratio("cpu", "clock=cpu", 1)
    waits = 2 * CASES["pingpong"][2]
    per_wait = statistics.median(
        (runs["pingpong"]["clock=wall"][i][0] - runs["pingpong"]["plain"][i][0]) / waits * 1e6
        for i in range(args.rounds))
    over_cpu = statistics.median(
        (runs["pingpong"]["clock=wall"][i][0] - runs["pingpong"]["clock=cpu"][i][0]) / waits * 1e6
        for i in range(args.rounds))
    interval = statistics.median(x[0] for x in runs["pingpong"]["plain"]) / waits * 1e6
    print("\ntargets (docs/PERFORMANCE.md):")
    print(f"  [{'met' if blocked <= 5 else 'MISSED'}] 8 threads mostly blocked, clock=wall: the "
          f"program's wall time {blocked:+.1f}% (target <= +5%)")
    print(f"  [{'met' if cpu_wall <= cpu_cpu + 0.5 else 'MISSED'}] computing threads: CPU "
          f"{cpu_wall:+.1f}% under clock=wall against {cpu_cpu:+.1f}% under clock=cpu (target: no more)")
    print(f"  blocked interval (pingpong): {per_wait:.2f} us more per wait under clock=wall, "
          f"for waits of {interval:.2f} us without the profiler; {over_cpu:.2f} us more than "
          f"under clock=cpu (the waits' wrappers and records; the rest is the CPU sampler's "
          f"perf event, switched at every context switch)")
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"on {os.cpu_count()} CPUs")
    if args.json:
        doc = {"when": datetime.datetime.now().isoformat(timespec="seconds"),
               "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                           "loadavg_end": load},
               "cases": {c: {"mode": m, "threads": t, "rounds": n} for c, (m, t, n) in CASES.items()},
               "runs": runs}
        pathlib.Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
