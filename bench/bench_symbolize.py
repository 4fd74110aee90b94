#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Symbolizing a large program's profile against perf, and a big recording
(docs/PERFORMANCE.md).

1. A compiler as the profiled program: `gcc -O2 -c big.c`, where big.c has
   300 small functions calling sin and cos (written here), so that most
   samples land in cc1: a stripped executable whose .dynsym holds some
   29,000 symbols and whose static functions have none. Each round runs,
   in an order that rotates from round to round:

     plain     gcc alone
     cflame    cflame record -o F.folded -- gcc ...   (the whole command)
     perf      perf record -F 1000 -g -o perf.data -- gcc ...,
               then perf script -i perf.data > /dev/null (timed apart)

   cflame record says how long the program ran (wall); its time after the
   program ended is the command's wall time minus that. Targets, as medians
   over the rounds: cflame's time after the program <= perf script's, and
   cflame record end to end <= perf record + perf script.

2. The time to symbolize 10^5 distinct addresses spread evenly over the code
   of cc1 (symbols only) and of libc (with its debug information where
   libc6-dbg is installed: lines and inlined frames), with a new
   symbolizer each time (bench/workloads/symbolize.c); then the same
   lookups by a second new symbolizer, which finds the module kept by
   build-id, as a restarted worker's first profile does.

3. A big recording: bench/workloads/big_threads.c, 8 threads computing for
   --big-seconds (60) of wall time, recorded by `cflame record --delay
   0.00025`: on this 2-core machine that is as many samples as 8 cores
   would give at 1 ms (about 480,000). Reported: the time cflame record
   takes after the program ends (target < 2 s) and its peak resident
   memory, from GNU time (target < 200 MB).

4. Module tracking: bench/workloads/dlopen_cycles.c opens, calls and
   closes a small plugin (dlopen_plugin.c) --cycles times (250 and 20,000), recorded by
   cflame record, which saves the program's maps at each dlopen and
   dlclose and merges the snapshots after it. Reported: the time after
   the program per cycle, median of 3; target: 20,000 cycles within 2x
   the time of 250 per cycle (linear, not quadratic).

Nothing here asserts: the table says whether each target was met. Raw
timings go to --json.
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_kernel import machine_info  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
GCC = shutil.which("gcc") or "gcc"


def big_c(path, functions=300):
    lines = ["#include <math.h>"]
    for i in range(functions):
        lines.append(f"double f{i}(double x) {{ double s = 0; for (int k = 0; k < 10; k++) "
                     f"s += sin(x * {i + 1} + k) * cos(x - k * {i}); return s + x; }}")
    lines.append("double all(double x) { return " +
                 " + ".join(f"f{i}(x)" for i in range(functions)) + "; }")
    path.write_text("\n".join(lines) + "\n")


def timed(cmd, stdout=subprocess.PIPE):
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=stdout, stderr=subprocess.PIPE, text=True)
    t = time.monotonic() - t0
    if r.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))}: exit {r.returncode}\n{r.stderr}")
    return t, r


def build_helper(build, out):
    libs = subprocess.run(["pkg-config", "--libs", "libdw", "libelf", "jansson",
                           "libprotobuf-c", "zlib"], capture_output=True, text=True,
                          check=True).stdout.split()
    subprocess.run(["cc", "-O2", "-I", ROOT / "include", "-I", build / "include",
                    ROOT / "bench/workloads/symbolize.c", build / "lib/libcflame.a",
                    build / "lib/libcflame_buffers.a", *libs, "-liberty", "-lm", "-lpthread",
                    "-o", out], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build", type=pathlib.Path)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--addresses", type=int, default=100_000)
    ap.add_argument("--big-seconds", type=float, default=60,
                    help="the big recording's length in seconds (0: skip it)")
    ap.add_argument("--cycles", default="250,20000",
                    help="dlopen/dlclose cycles to record, comma-separated (empty: skip)")
    ap.add_argument("--json", type=pathlib.Path)
    args = ap.parse_args()
    build = args.build.resolve()
    cflame = build / "bin/cflame"
    perf = shutil.which("perf")
    work = pathlib.Path(tempfile.mkdtemp(prefix="cflame-bench-sym-"))
    big_c(work / "big.c")
    gcc = [GCC, "-O2", "-c", str(work / "big.c"), "-o", str(work / "big.o")]
    results = {"machine": machine_info(), "rounds": [], "symbolize": {}}

    variants = ["plain", "cflame"] + (["perf"] if perf else [])
    for r in range(args.rounds):
        row = {}
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for v in order:
            if v == "plain":
                row["plain"], _ = timed(gcc)
            elif v == "cflame":
                t, res = timed([cflame, "record", "-o", work / "out.folded", "--", *gcc])
                m = re.search(r"the program took [\d.]+ s CPU, ([\d.]+) s wall", res.stderr)
                row["cflame"] = t
                row["cflame_program"] = float(m.group(1)) if m else None
                row["cflame_after"] = t - row["cflame_program"] if m else None
            else:
                row["perf_record"], _ = timed([perf, "record", "-q", "-F", "1000", "-g", "-o",
                                               work / "perf.data", "--", *gcc])
                with open(os.devnull, "w") as null:
                    row["perf_script"], _ = timed([perf, "script", "-i", work / "perf.data"],
                                                  stdout=null)
        results["rounds"].append(row)
        print(f"round {r + 1}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()
                                             if v is not None), flush=True)

    def med(key):
        vals = [row[key] for row in results["rounds"] if row.get(key) is not None]
        return statistics.median(vals) if vals else None

    summary = {k: med(k) for k in ("plain", "cflame", "cflame_program", "cflame_after",
                                   "perf_record", "perf_script")}
    results["summary"] = summary

    helper = work / "symbolize"
    build_helper(build, helper)
    cc1 = subprocess.run([GCC, "-print-prog-name=cc1"], capture_output=True, text=True,
                         check=True).stdout.strip()
    libc = "/lib/x86_64-linux-gnu/libc.so.6"
    for name, path in (("cc1", cc1), ("libc", libc)):
        runs = []
        for _ in range(3):
            out = subprocess.run([helper, path, str(args.addresses)], capture_output=True,
                                 text=True, check=True).stdout.split()
            runs.append({"seconds": float(out[2]), "frames": int(out[3]), "named": int(out[4]),
                         "again_seconds": float(out[5])})
        results["symbolize"][name] = {
            "path": path, "addresses": args.addresses, "runs": runs,
            "median_seconds": statistics.median(r["seconds"] for r in runs),
            "median_again_seconds": statistics.median(r["again_seconds"] for r in runs)}

    big = None
    if args.big_seconds > 0 and shutil.which("/usr/bin/time"):
        exe = work / "big_threads"
        subprocess.run(["cc", "-O2", "-g", "-fno-omit-frame-pointer", "-pthread", "-o", exe,
                        ROOT / "bench/workloads/big_threads.c", "-lm"], check=True)
        t, res = timed(["/usr/bin/time", "-f", "maxrss_kb %M", cflame, "record", "--delay",
                        "0.00025", "-o", work / "big.folded", "--", exe, str(args.big_seconds)])
        m = re.search(r"wrote \S+: ([\d,]+) samples", res.stderr)
        w = re.search(r"the program took [\d.]+ s CPU, ([\d.]+) s wall", res.stderr)
        rss = re.search(r"maxrss_kb (\d+)", res.stderr)
        big = {"wall": t, "samples": int(m.group(1).replace(",", "")) if m else None,
               "program_wall": float(w.group(1)) if w else None,
               "maxrss_mb": int(rss.group(1)) / 1024 if rss else None}
        big["after"] = t - big["program_wall"] if big["program_wall"] else None
        results["big"] = big

    cycles = {}
    if args.cycles:
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", work / "plugin.so",
                        ROOT / "bench/workloads/dlopen_plugin.c"], check=True)
        subprocess.run(["cc", "-O2", "-o", work / "dlopen_cycles",
                        ROOT / "bench/workloads/dlopen_cycles.c"], check=True)
        for n in (int(c) for c in args.cycles.split(",")):
            afters = []
            for _ in range(3):
                t, res = timed([cflame, "record", "-o", work / "cycles.folded", "--",
                                work / "dlopen_cycles", work / "plugin.so", str(n)])
                w = re.search(r"the program took [\d.]+ s CPU, ([\d.]+) s wall", res.stderr)
                afters.append(t - float(w.group(1)))
            cycles[n] = {"after_runs": afters, "after": statistics.median(afters)}
        results["dlopen_cycles"] = cycles

    print()
    print(f"gcc -O2 -c big.c (300 functions), medians of {args.rounds} rounds:")
    print(f"  plain gcc                        {summary['plain']:.3f} s")
    print(f"  cflame record, end to end        {summary['cflame']:.3f} s "
          f"(the program {summary['cflame_program']:.3f} s, after it {summary['cflame_after']:.3f} s)")
    if perf:
        pr, ps = summary["perf_record"], summary["perf_script"]
        print(f"  perf record -g                   {pr:.3f} s")
        print(f"  perf script                      {ps:.3f} s")
        print(f"  target: cflame after <= perf script: {summary['cflame_after']:.3f} <= {ps:.3f} "
              f"{'met' if summary['cflame_after'] <= ps else 'MISSED'}")
        print(f"  target: cflame record <= perf record + perf script: {summary['cflame']:.3f} <= "
              f"{pr + ps:.3f} {'met' if summary['cflame'] <= pr + ps else 'MISSED'}")
    else:
        print("  perf is not installed: no reference")
    for name, s in results["symbolize"].items():
        r0 = s["runs"][0]
        print(f"  {args.addresses:,} distinct addresses in {name}: {s['median_seconds']:.3f} s "
              f"({r0['named']:,} named, {r0['frames']:,} frames with inlined ones); "
              f"by a second symbolizer, the module kept: {s['median_again_seconds']:.3f} s")
    if big:
        print(f"big recording: {big['samples']:,} samples of 8 threads in {big['program_wall']:.1f} s; "
              f"after the program {big['after']:.2f} s (target < 2 s: "
              f"{'met' if big['after'] < 2 else 'MISSED'}), cflame record's peak memory "
              f"{big['maxrss_mb']:.0f} MB (target < 200 MB: "
              f"{'met' if big['maxrss_mb'] < 200 else 'MISSED'})")
    if cycles:
        for n, c in cycles.items():
            print(f"dlopen/dlclose, {n:,} cycles: after the program {c['after']:.3f} s, "
                  f"{c['after'] / n * 1e3:.4f} ms per cycle")
        lo, hi = min(cycles), max(cycles)
        if hi > lo:
            a, b = cycles[lo]["after"] / lo, cycles[hi]["after"] / hi
            print(f"  target: {hi:,} cycles within 2x the time of {lo:,} per cycle: "
                  f"{b * 1e3:.4f} <= {2 * a * 1e3:.4f} ms {'met' if b <= 2 * a else 'MISSED'}")
            print(f"  each cycle beyond {lo:,}: "
                  f"{(cycles[hi]['after'] - cycles[lo]['after']) / (hi - lo) * 1e3:.4f} ms")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
