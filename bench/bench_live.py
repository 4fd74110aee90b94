#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Live graphs (every=) against none: the cell's CPU time and the kernel's
answers on control, measured side by side (docs/PERFORMANCE.md).

Run by Debian's /usr/bin/python3; scripts/bench builds the kernel and runs
this file.

One kernel runs, round after round, the same CPU-bound cell (a fixed number
of iterations, calibrated to --work-seconds) under %%profview every=0, and
under each period of --every, in an order that turns with the round. The
cell prints the CPU time its process used over the loop: what live graphs
may cost the cell is that time over the same round's every=0. While each
cell runs, a kernel_info_request goes to control every 50 ms, one at a time,
and the time to its reply is kept: what live graphs, drawn off the kernel's
loop, may cost its answers.

Targets (issue 37): the cell's CPU time within 2 % of the same cell without
updates at every=1; control answered within 50 ms at the 95th percentile
during the updates. Figures are medians of per-round ratios; nothing here
asserts. Raw timings go to --json.
"""
import argparse
import datetime
import json
import os
import pathlib
import statistics
import sys
import tempfile
import time

import zmq

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_kernel import Kernel, kernel_argv, machine_info  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent

DEFS = r"""
#include <stdio.h>
#include <time.h>
static volatile double sink;
__attribute__((noinline)) void step(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink += z; }
static double process_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
"""

CONTROL_EVERY_S = 0.05


def cell(every, steps):
    return (f"%%profview every={every}\n"
            f"double c0 = process_cpu();\n"
            f"for (long i = 0; i < {steps}; i++) step(10000);\n"
            f'printf("{{\\"cpu\\": %.6f}}\\n", process_cpu() - c0);\n')


def run_cell(k, code, timeout_s=600):
    """Runs code; meanwhile asks control for kernel_info every 50 ms, one
    request at a time. Returns {cpu, graphs, updates, control: [seconds]}."""
    msg = k.session.msg("execute_request", content={
        "code": code, "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True})
    msg_id = msg["header"]["msg_id"]
    k.session.send(k.shell, msg)
    poller = zmq.Poller()
    poller.register(k.iopub, zmq.POLLIN)
    poller.register(k.control, zmq.POLLIN)
    rec = {"stdout": "", "graphs": 0, "updates": 0, "control": []}
    pending, sent_at, next_at = None, 0.0, time.perf_counter() + CONTROL_EVERY_S
    deadline = time.perf_counter() + timeout_s
    while True:
        now = time.perf_counter()
        if now > deadline:
            raise TimeoutError(f"no idle for {code[:40]!r}")
        if pending is None and now >= next_at:
            pending, sent_at = k.send(k.control, "kernel_info_request"), time.perf_counter()
        wait = 0.5 if pending else max(0.0, next_at - now)
        for sock, _ in poller.poll(int(wait * 1000)):
            m = k.recv(sock, 0)
            if m is None:
                continue
            if sock is k.control:
                if pending and m["parent_header"].get("msg_id") == pending:
                    t = time.perf_counter()
                    rec["control"].append(t - sent_at)
                    pending, next_at = None, t + CONTROL_EVERY_S
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kind, c = m["msg_type"], m["content"]
            if kind == "stream" and c.get("name") == "stdout":
                rec["stdout"] += c["text"]
            elif kind in ("display_data", "update_display_data"):
                rec["graphs"] += 1
                rec["updates"] += kind == "update_display_data"
            elif kind == "error":
                raise RuntimeError(f"cell failed: {c.get('ename')}: {c.get('evalue')}")
            elif kind == "status" and c["execution_state"] == "idle":
                # the last control request is answered or dropped: one at a time
                if pending:
                    k.wait_reply(k.control, pending)
                line = [ln for ln in rec["stdout"].splitlines() if ln.startswith("{")][-1]
                rec["cpu"] = json.loads(line)["cpu"]
                return rec


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"), help="cflame's build tree")
    ap.add_argument("--json", help="write every raw timing here")
    ap.add_argument("--rounds", type=int, default=6, help="rounds of one cell per setting")
    ap.add_argument("--work-seconds", type=float, default=4.0, help="CPU seconds of a cell")
    ap.add_argument("--every", default="1,0.2", help="the periods compared with every=0")
    args = ap.parse_args()
    periods = ["0"] + args.every.split(",")
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": machine_info(), "loadavg_before": os.getloadavg(), "args": vars(args),
               "runs": []}
    with tempfile.TemporaryDirectory(prefix="cflame-bench-live-") as tmp:
        k = Kernel("cflame", kernel_argv("cflame", pathlib.Path(args.build)), tmp,
                   connect_iopub=True)
        k.start()
        try:
            k.wait_iopub_ready()
            k.execute(DEFS)
            # steps per CPU-second, from a run of about 0.5 s
            steps = 100
            while True:
                r = run_cell(k, cell(0, steps))
                if r["cpu"] > 0.5:
                    break
                steps *= 2
            steps = int(steps * args.work_seconds / r["cpu"])
            for rnd in range(args.rounds):
                order = periods[rnd % len(periods):] + periods[:rnd % len(periods)]
                for every in order:
                    r = run_cell(k, cell(every, steps))
                    r.update(round=rnd, every=every)
                    del r["stdout"]
                    results["runs"].append(r)
                    print(f"round {rnd} every={every}: {r['cpu']:.3f} s CPU, "
                          f"{r['updates']} updates, control p95 "
                          f"{1e3 * quantile(r['control'], 0.95):.1f} ms", flush=True)
        finally:
            k.shutdown()
    runs = results["runs"]
    base = {r["round"]: r["cpu"] for r in runs if r["every"] == "0"}
    print(f"\n{'every':>6} {'CPU vs every=0':>15} {'p25..p75':>15} {'updates':>8} "
          f"{'control p50':>11} {'p95':>7} {'max':>7}")
    rows = []
    for every in periods:
        mine = [r for r in runs if r["every"] == every]
        ratios = [r["cpu"] / base[r["round"]] - 1 for r in mine]
        lat = [x for r in mine for x in r["control"]]
        row = {"every": every, "cpu_vs_off": statistics.median(ratios),
               "q": [quantile(ratios, 0.25), quantile(ratios, 0.75)],
               "updates": statistics.median(r["updates"] for r in mine),
               "control_p50": quantile(lat, 0.5), "control_p95": quantile(lat, 0.95),
               "control_max": max(lat), "n_control": len(lat)}
        rows.append(row)
        print(f"{every:>6} {100 * row['cpu_vs_off']:+14.2f}% "
              f"{100 * row['q'][0]:+6.2f}..{100 * row['q'][1]:+.2f}% {row['updates']:8.0f} "
              f"{1e3 * row['control_p50']:9.1f}ms {1e3 * row['control_p95']:5.1f}ms "
              f"{1e3 * row['control_max']:5.1f}ms")
    one = next((r for r in rows if r["every"] == "1"), None)
    if one:
        print(f"\ntarget: CPU within 2 % at every=1: {100 * one['cpu_vs_off']:+.2f} % "
              f"({'met' if abs(one['cpu_vs_off']) <= 0.02 else 'not met'}); control p95 under "
              f"50 ms during updates: {1e3 * max(r['control_p95'] for r in rows[1:]):.1f} ms "
              f"({'met' if max(r['control_p95'] for r in rows[1:]) <= 0.05 else 'not met'})")
    results["summary"] = rows
    results["loadavg_after"] = os.getloadavg()
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
