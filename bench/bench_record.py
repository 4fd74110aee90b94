#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""`cflame record`'s overhead on a CPU-bound program against perf record -g
(docs/PERFORMANCE.md), measured side by side.

The program is bench/workloads/deepstack.c (the profiler benchmarks'
workload: a stack about 20 frames deep, libm, hashing and sorting leaves)
with bench/workloads/record_main.c as its main, compiled once with the cell
flags (-O2 -g -fno-omit-frame-pointer) into a plain dynamically linked
executable. Each round runs it three ways, in an order that rotates from
round to round (so that no variant always follows the same one):

  plain                       the program alone
  cflame record 1 ms          cflame record --delay 0.001 -o F.folded -- PROGRAM
  perf record -g -F 1000      perf record -F 1000 -g -o perf.data -- PROGRAM

The program prints its own CPU time as the last thing main does (getrusage
RUSAGE_SELF: a profiler's work inside the process counts, in cflame's
signal handler and preloaded library's start-up, in the kernel's sampling
interrupt for perf), and that of the work alone. Overhead = the run's
program CPU / the same round's plain run - 1; the figure is the median over
the rounds, and cflame's minus perf's, per round, with its distribution-free
95% interval, says whether cflame costs the program more than perf does.
What each profiler's own process costs afterwards (cflame symbolizing and
writing the graph, perf writing perf.data) is shown apart, with the
command's wall time: it is not the program's.

Whole runs seconds apart are at the mercy of a shared machine's swings of
speed (10-20% within a minute on these VMs): the rounds' ratios to their own
plain run, and many rounds, are what keeps the figure honest.

Nothing here asserts: the table says whether the target was met. Raw timings
go to --json.
"""
import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_kernel import CC, CFLAGS, machine_info  # noqa: E402
from bench_profiler import kernel_config, median_ci, perf_status, quantile, read_int  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
WORKLOADS = REPO / "bench" / "workloads"
SETTLE_S = 0.05


def build_program(out):
    """The workload as a program of its own. Returns its path."""
    exe = out / "record_main"
    r = subprocess.run([CC, *CFLAGS, "-o", exe, WORKLOADS / "deepstack.c",
                        WORKLOADS / "record_main.c", "-lm"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench: cannot build the workload:\n{r.stderr}")
    return exe


def run_variant(variant, exe, iters, cflame, workdir):
    argv = [str(exe), str(iters)]
    out = pathlib.Path(workdir) / "out.folded"
    data = pathlib.Path(workdir) / "perf.data"
    if variant == "cflame":
        argv = [str(cflame), "record", "--delay", "0.001", "-o", str(out), "--", *argv]
    elif variant == "perf":
        argv = ["perf", "record", "-F", "1000", "-g", "-o", str(data), "--", *argv]
    ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                       cwd=workdir)
    wall = time.perf_counter() - t0
    ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(argv)} failed ({r.returncode}):\n{r.stderr}")
    rec = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("{")][-1])
    rec["proc_cpu"] = rec["utime"] + rec["stime"]
    rec["command_wall"] = wall
    # Every process this run waited for: the program, and the profiler's own.
    children = (ch1.ru_utime - ch0.ru_utime) + (ch1.ru_stime - ch0.ru_stime)
    rec["profiler_cpu"] = children - rec["proc_cpu"]
    if variant == "cflame":
        rec["samples"] = sum(int(ln.rpartition(" ")[2]) for ln in out.read_text().splitlines())
        out.unlink()
    elif variant == "perf":
        data.unlink(missing_ok=True)
    return rec


def bench(exe, cflame, rounds, work_seconds, workdir, use_perf):
    probe = 20_000
    cal = min(run_variant("plain", exe, probe, cflame, workdir)["work_cpu"] for _ in range(2))
    iters = max(1000, int(probe * work_seconds / cal))
    variants = ["plain", "cflame"] + (["perf"] if use_perf else [])
    for v in variants:  # warm the page cache and each profiler's first start
        run_variant(v, exe, iters // 10, cflame, workdir)
    raw = {v: [] for v in variants}
    for i in range(rounds):
        order = variants[i % len(variants):] + variants[:i % len(variants)]
        for v in order:
            time.sleep(SETTLE_S)
            raw[v].append(run_variant(v, exe, iters, cflame, workdir))
    results = {r["result"] for rs in raw.values() for r in rs}
    if len(results) != 1:
        sys.exit(f"bench: the workload gave different results: {results}")
    return {"iters": iters, "variants": variants, "runs": raw}


def summarize(res):
    """Per variant: overhead against the same round's plain run (program
    CPU, and the work's alone), quartiles; cflame - perf per round."""
    raw = res["runs"]
    plain = raw["plain"]
    out = {}
    for v in res["variants"]:
        if v == "plain":
            continue
        s = {}
        for key in ("proc_cpu", "work_cpu"):
            ratios = [r[key] / p[key] - 1 for r, p in zip(raw[v], plain)]
            s[key] = {"median": statistics.median(ratios), "q1": quantile(ratios, 0.25),
                      "q3": quantile(ratios, 0.75)}
        s["profiler_cpu"] = statistics.median(r["profiler_cpu"] for r in raw[v])
        s["command_wall"] = statistics.median(r["command_wall"] for r in raw[v])
        if v == "cflame":
            s["samples"] = statistics.median(r["samples"] for r in raw[v])
        out[v] = s
    out["plain"] = {"proc_cpu": statistics.median(r["proc_cpu"] for r in plain),
                    "command_wall": statistics.median(r["command_wall"] for r in plain)}
    if "perf" in raw:
        diffs = [(c["proc_cpu"] - f["proc_cpu"]) / p["proc_cpu"]
                 for c, f, p in zip(raw["cflame"], raw["perf"], plain)]
        out["cflame_minus_perf"] = {"median": statistics.median(diffs), "ci95": median_ci(diffs)}
    return out


def pct(x):
    return f"{x * 100:+.1f}%"


def print_table(s, rounds, work_seconds):
    print(f"\n{rounds} rounds, about {work_seconds:g} s of CPU each run; overhead = program CPU "
          "against the same round's plain run (median, quartiles)")
    print(f"{'':28} {'program CPU':>24} {'work alone':>10} {'profiler CPU':>13} {'wall':>8}")
    print(f"{'plain':28} {s['plain']['proc_cpu']:>20.3f} s {'':>10} {'':>13} "
          f"{s['plain']['command_wall']:>6.2f} s")
    names = {"cflame": "cflame record --delay 0.001", "perf": "perf record -g -F 1000"}
    for v in ("cflame", "perf"):
        if v not in s:
            continue
        o = s[v]
        print(f"{names[v]:28} {pct(o['proc_cpu']['median']):>8} ({pct(o['proc_cpu']['q1'])}.."
              f"{pct(o['proc_cpu']['q3'])}) {pct(o['work_cpu']['median']):>10} "
              f"{o['profiler_cpu']:>11.3f} s {o['command_wall']:>6.2f} s")
    if "cflame_minus_perf" in s:
        d = s["cflame_minus_perf"]
        ci = d["ci95"]
        print(f"\ncflame - perf, same round: {d['median'] * 100:+.1f} points"
              + (f" (95% {ci[0] * 100:+.1f}..{ci[1] * 100:+.1f})" if ci else ""))
        met = d["median"] <= 0 or (ci and ci[0] <= 0)
        print(f"target: no higher than perf record -g at the same rate: "
              f"{'met' if d['median'] <= 0 else 'a tie within the noise' if met else 'MISSED'}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20, help="rounds of the three runs (20)")
    ap.add_argument("--work-seconds", type=float, default=1.0,
                    help="CPU seconds of the program's work (1.0)")
    ap.add_argument("--build", type=pathlib.Path, default=REPO / "build",
                    help="cflame build directory (build)")
    ap.add_argument("--json", type=pathlib.Path, help="write all raw timings here")
    args = ap.parse_args()

    cflame = args.build.resolve() / "bin" / "cflame"
    if not cflame.is_file():
        sys.exit(f"bench: no {cflame}; build first (scripts/bench does)")
    workdir = pathlib.Path(tempfile.mkdtemp(prefix="cflame-bench-record-"))
    res = {"machine": machine_info(), "rounds": args.rounds}
    m = res["machine"]
    m["perf_event_paranoid"] = read_int("/proc/sys/kernel/perf_event_paranoid")
    m["kernel_config"] = kernel_config("CONFIG_IRQ_TIME_ACCOUNTING", "CONFIG_HZ")
    try:
        exe = build_program(workdir)
        res["perf"] = perf_status(workdir)
        if not res["perf"]["available"]:
            print(f"perf record -g is not available here ({res['perf'].get('reason')}): "
                  "cflame record alone", file=sys.stderr)
        r = bench(exe, cflame, args.rounds, args.work_seconds, workdir, res["perf"]["available"])
        res.update(r)
        res["summary"] = summarize(r)
        print_table(res["summary"], args.rounds, args.work_seconds)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
