#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""`cflame record --pid`'s cost to the program it attaches to
(docs/PERFORMANCE.md): the slowdown of a CPU-bound program sampled from
outside at 100 Hz (the default) and at 1 kHz, against the same program run
alone, as ratios measured in one run.

The program is bench_record.py's (bench/workloads/deepstack.c with
record_main.c as its main: a stack about 20 frames deep, libm, hashing and
sorting leaves), with one thread and then with eight (each doing the same
work at once: every snapshot stops and unwinds them all), started with
`await`: it waits for a line on stdin, so that cflame is attached before
the work begins and the whole of
it is sampled. Each round runs it three ways in a rotating order: alone (the
line written at once), and under `cflame record --pid PID --delay 0.01` and
`--delay 0.001`, the line written once cflame says it is attached. The
program measures its work itself: its wall time, its CPU time, and the time
it waited for a CPU (schedstat's run delay). A stopped thread loses wall
time, not CPU time; on a shared machine most of a run's wall time beyond
its CPU is run delay, which comes and goes with the other load. So the
time measured is the work's wall time less its run delay: its CPU time
and the time it was stopped (or blocked); with eight threads, each
thread's own, summed. Slowdown = the run's / the same
round's alone - 1; the figure is the median over rounds with its
distribution-free 95% interval, and the plain wall time's ratio is shown
beside it. Where perf may profile another process, `perf record -g -p PID`
at the same rates runs in the same rounds (attached before the work as
cflame is: once it holds its events), for the cost per sample of an
in-kernel sample with a frame-pointer stack beside a ptrace stop and a
libdw unwind. The profiler's own CPU (cflame's sampling, symbolizing and
drawing; perf's recording) is shown apart, with the samples taken and the
cost per sample to the program (the time it lost over the samples).

Whole runs seconds apart swing with a shared machine's load: the per-round
ratios and many rounds are what keep the figure honest. Nothing asserts:
the tables say whether the targets (at most 10% at 100 Hz on one thread,
15% on eight) were met.
"""
import argparse
import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_kernel import machine_info  # noqa: E402
from bench_profiler import median_ci, quantile  # noqa: E402
from bench_record import build_program  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
VARIANTS = {"alone": None, "attach 100 Hz": "0.01", "attach 1 kHz": "0.001",
            "perf record -g -p, 100 Hz": "100", "perf record -g -p, 1 kHz": "1000"}
SETTLE_S = 0.05


def perf_events_open(pid):
    """Whether process pid (perf) holds a perf event's descriptor yet."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if "perf_event" in os.readlink(f"/proc/{pid}/fd/{fd}"):
                return True
        except OSError:
            pass
    return False


def perf_usable():
    r = subprocess.run(["perf", "record", "-q", "-o", "/dev/null", "--", "true"],
                       capture_output=True, text=True)
    return r.returncode == 0


def run_variant(variant, exe, iters, cflame, workdir, threads):
    prog = subprocess.Popen([str(exe), str(iters), "await", f"threads={threads}"],
                            stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=workdir)
    out = pathlib.Path(workdir) / "out.folded"
    c = None
    ch0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if variant.startswith("perf"):
        c = subprocess.Popen(["perf", "record", "-q", "-F", VARIANTS[variant], "-g", "-p",
                              str(prog.pid), "-o", str(pathlib.Path(workdir) / "perf.data")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             cwd=workdir)
        while not perf_events_open(c.pid):
            if c.poll() is not None:
                sys.exit(f"bench: perf record -p failed: {c.stderr.read()}")
            time.sleep(0.001)
    elif VARIANTS[variant]:
        c = subprocess.Popen([str(cflame), "record", "--pid", str(prog.pid), "--delay",
                              VARIANTS[variant], "--no-lines", "-o", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             cwd=workdir)
        first = c.stderr.readline()
        if "attached" not in first:
            sys.exit(f"bench: cflame record --pid did not attach: {first}{c.stderr.read()}")
    prog.stdin.write("go\n")
    prog.stdin.flush()
    stdout, _ = prog.communicate()
    rec = json.loads([ln for ln in stdout.splitlines() if ln.startswith("{")][-1])
    rec["work_busy"] = rec["work_wall"] - rec["work_delay"]
    if c and variant.startswith("perf"):
        c.communicate()  # perf record -p ends with the process
        data = pathlib.Path(workdir) / "perf.data"
        r = subprocess.run(["perf", "script", "-F", "tid", "-i", str(data)],
                           capture_output=True, text=True)
        rec["samples"] = sum(1 for ln in r.stdout.splitlines() if ln.strip())
        data.unlink(missing_ok=True)
    elif c:
        err = c.communicate()[1]
        if c.returncode != 0:
            sys.exit(f"bench: cflame record --pid failed ({c.returncode}):\n{err}")
        rec["samples"] = sum(int(ln.rpartition(" ")[2]) for ln in out.read_text().splitlines())
        out.unlink()
    ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = (ch1.ru_utime - ch0.ru_utime) + (ch1.ru_stime - ch0.ru_stime)
    rec["cflame_cpu"] = children - (rec["utime"] + rec["stime"]) if c else 0.0
    return rec


def bench(exe, cflame, rounds, work_seconds, workdir, use_perf, threads):
    """Each variant rounds times with threads threads, whose work takes
    work_seconds of CPU in all."""
    probe = 20_000
    cal = min(run_variant("alone", exe, probe, cflame, workdir, threads)["work_cpu"]
              for _ in range(2))
    iters = max(1000, int(probe * work_seconds / cal))
    names = [v for v in VARIANTS if not v.startswith("perf") or use_perf]
    # Warm the page cache and cflame's first start (the whole work: a tenth
    # of it over eight threads may leave a thread no sample, which cflame
    # refuses to write).
    for v in names:
        run_variant(v, exe, iters, cflame, workdir, threads)
    raw = {v: [] for v in names}
    for i in range(rounds):
        for v in names[i % len(names):] + names[:i % len(names)]:
            time.sleep(SETTLE_S)
            raw[v].append(run_variant(v, exe, iters, cflame, workdir, threads))
    if len({r["result"] for rs in raw.values() for r in rs}) != 1:
        sys.exit("bench: the workload gave different results")
    return {"threads": threads, "iters": iters, "variants": names, "runs": raw}


def summarize(res):
    raw = res["runs"]
    alone = raw["alone"]
    out = {"alone": {k: statistics.median(r[k] for r in alone)
                     for k in ("work_wall", "work_busy", "work_cpu")}}
    for v in res["variants"]:
        if v == "alone":
            continue
        s = {}
        for key in ("work_busy", "work_wall", "work_cpu"):
            ratios = [r[key] / a[key] - 1 for r, a in zip(raw[v], alone)]
            s[key] = {"median": statistics.median(ratios), "ci95": median_ci(ratios),
                      "q1": quantile(ratios, 0.25), "q3": quantile(ratios, 0.75)}
        s["samples"] = statistics.median(r["samples"] for r in raw[v])
        s["cflame_cpu"] = statistics.median(r["cflame_cpu"] for r in raw[v])
        lost = [r["work_busy"] - a["work_busy"] for r, a in zip(raw[v], alone)]
        s["us_per_sample"] = statistics.median(lost) / s["samples"] * 1e6 if s["samples"] else None
        out[v] = s
    return out


def pct(x):
    return f"{x * 100:+.1f}%"


def report(res, summary, use_perf):
    a = summary["alone"]
    n = res["threads"]
    print(f"`cflame record --pid` on a CPU-bound program, {n} thread{'s' if n > 1 else ''} "
          f"({len(res['runs']['alone'])} rounds; alone: work {a['work_busy']:.3f} s wall less "
          f"run delay, {a['work_wall']:.3f} s wall, {a['work_cpu']:.3f} s CPU"
          f"{', summed over the threads' if n > 1 else ''})\n")
    print("| | slowdown: wall less run delay (95% interval) | wall | CPU | samples | "
          "per sample | profiler's CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for v in res["variants"]:
        if v == "alone":
            continue
        s = summary[v]
        ci = s["work_busy"]["ci95"]
        ci_text = f" ({pct(ci[0])}..{pct(ci[1])})" if ci else ""
        per = f"{s['us_per_sample']:.0f} µs" if s["us_per_sample"] is not None else "-"
        print(f"| {v} | {pct(s['work_busy']['median'])}{ci_text} | "
              f"{pct(s['work_wall']['median'])} | "
              f"{pct(s['work_cpu']['median'])} | {s['samples']:.0f} | {per} | "
              f"{s['cflame_cpu']:.3f} s |")
    if not use_perf:
        print("\nperf record is not usable here (not installed, or perf_event_open refused): "
              "no perf rows")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--work-seconds", type=float, default=1.0)
    ap.add_argument("--threads", default="1,8", help="the program's thread counts, a comma list")
    ap.add_argument("--build", default=str(REPO / "build"), help="cflame's build directory")
    ap.add_argument("--json", default=str(REPO / "bench" / "results" / "attach.json"))
    args = ap.parse_args()
    runs = []
    with tempfile.TemporaryDirectory(prefix="bench-attach-") as d:
        exe = build_program(pathlib.Path(d))
        cflame = pathlib.Path(args.build) / "bin" / "cflame"
        use_perf = perf_usable()
        for n in (int(t) for t in args.threads.split(",")):
            res = bench(exe, cflame, args.rounds, args.work_seconds, d, use_perf, n)
            summary = summarize(res)
            report(res, summary, use_perf)
            runs.append({"summary": summary, **res})
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"machine": machine_info(), "by_threads": runs}, f, indent=1)


if __name__ == "__main__":
    main()
