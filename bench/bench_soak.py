#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Soak benchmark for cflame (docs/PERFORMANCE.md): 2,000 cells, 200 of them
under %%profview, and 200 completions, through one kernel.

Run by Debian's /usr/bin/python3 (jupyter_client and pyzmq from Debian's
packages); scripts/bench builds the kernel and runs this file.

What it measures: a cflame kernel (from the build tree's kernelspec) runs
cycles of 100 cells and 10 completions. A cycle holds what a long session
meets: definitions (a function, a global, a struct per cycle), plain
statements with output, values, a compile error, a crash, an interrupted
loop, 10 %%profview cells that sample the cell's code and libc, and
completions of session names, library names and members, one of them in a
cell that includes a header of 20 MB (libclang must not keep what it read).
After each cycle the kernel's resident memory (VmRSS) and its open files
(files, pipes and pidfds; ZeroMQ's sockets and event descriptors follow the
clients and are left out) are read from /proc.

The targets: every request answered; the kernel's RSS after the last cycle
is within +10 MB of its RSS after the warm-up (the least of cycles 2 to 4:
the first cycle loads libc's debug information); its open files are the
same after every cycle. Nothing here asserts a target: the
table says whether it was met. Raw figures go to --json.
"""
import argparse
import pathlib
import queue
import sys
import tempfile
import time

from jupyter_client import KernelManager

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_kernel import kernel_env, machine_info, write_results  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from conftest import open_files  # noqa: E402

RSS_GROWTH_MAX_KB = 10 * 1024
CELLS_PER_CYCLE = 100
PROFVIEWS_PER_CYCLE = 10
COMPLETIONS_PER_CYCLE = 10

SETUP = r"""
#include <string.h>
#include <unistd.h>
volatile double soak_burn;
static char soak_buf[65536];
__attribute__((noinline)) void soak_spin(long n) {
  for (long i = 0; i < n; i++) soak_burn += i * 0.5;
  void *(*volatile fill)(void *, int, size_t) = memset;
  for (int k = 0; k < 300; k++) fill(soak_buf, k, sizeof soak_buf);
}
int soak_n = 0;
"""


def cycle_cells(c):
    """The cells of cycle c: (code, expected status, interrupt after s)."""
    cells = [
        (f"typedef struct rec{c} {{ int id; double w{c}; struct rec{c} *next; }} rec{c}_t;\n"
         f"rec{c}_t pool_{c}[4];\n"
         f"double score_{c}(int k) {{ return pool_{c}[k % 4].w{c} * k + soak_n; }}", "ok", None),
        ("volatile int *soak_q = 0; *soak_q = 1;", "error", None),
        ("int soak_bad = ;", "error", None),
        ("for (;;) soak_spin(1000);", "error", 0.3),
        (f"score_{c}(3)", "ok", None),
        (f'"soak {c}"', "ok", None),
    ]
    plain = CELLS_PER_CYCLE - len(cells) - PROFVIEWS_PER_CYCLE
    cells += [(f'printf("%d\\n", ++soak_n);', "ok", None) for _ in range(plain)]
    cells += [(f"%%profview\nsoak_spin({1_000_000 + c});", "ok", None)
              for _ in range(PROFVIEWS_PER_CYCLE)]
    return cells


def cycle_completions(c, big_header):
    """The completions of cycle c: (code, a match the reply must hold, or None
    where the reply may be empty)."""
    base = [
        ("pri", "printf"),
        (f"score_{c}", f"score_{c}"),
        (f"rec{c}_t r; r.w", f"w{c}"),
        ("mem", "memcpy"),
        ("soak_", "soak_spin"),
        (f"pool_{c}[1].ne", "next"),
        ("whi", "while"),
        ("%%prof", "%%profview"),
        ("soak_n + sco", f"score_{c}"),
        (f'#include "{big_header}"\nsoak_', None),
    ]
    return base[:COMPLETIONS_PER_CYCLE]


def kernel_figures(pid):
    """The kernel's open files (conftest.open_files: ZeroMQ's sockets left
    out) and its resident memory in kB."""
    with open(f"/proc/{pid}/status") as f:
        rss_kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    return open_files(pid), rss_kb


def reply_to(kc, msg_id, timeout):
    """The content of the shell reply to msg_id, or None if none came in
    timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            reply = kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]
    return None


def execute(kc, km, code, timeout, interrupt_after=None):
    """Runs code, interrupting it after interrupt_after s if given; returns
    the execute_reply content, or None."""
    msg_id = kc.execute(code, stop_on_error=False)
    if interrupt_after:
        time.sleep(interrupt_after)
        km.interrupt_kernel()
    return reply_to(kc, msg_id, timeout)


def complete(kc, code, timeout):
    return reply_to(kc, kc.complete(code, len(code)), timeout)


def drain_iopub(kc):
    while True:
        try:
            kc.get_iopub_msg(timeout=0)
        except queue.Empty:
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cycles", type=int, default=20,
                    help=f"cycles of {CELLS_PER_CYCLE} cells and {COMPLETIONS_PER_CYCLE} "
                         "completions (20: 2,000 cells)")
    ap.add_argument("--build", type=pathlib.Path, default=REPO / "build",
                    help="cflame build directory (build)")
    ap.add_argument("--json", type=pathlib.Path, help="write all raw figures here")
    args = ap.parse_args()

    env = kernel_env(args.build)

    tmp = tempfile.TemporaryDirectory(prefix="cflame-soak-")
    big_header = pathlib.Path(tmp.name) / "big.h"
    with open(big_header, "w") as f:
        line = "int soak_big_%d;\n"
        for i in range(20 * 1024 * 1024 // len(line % 0)):
            f.write(line % i)

    res = {"machine": machine_info(), "cycles": args.cycles, "figures": [],
           "unanswered": [], "wrong": []}
    km = KernelManager(kernel_name="cflame")
    km.start_kernel(env=env)
    kc = km.client()
    kc.start_channels()
    t0 = time.monotonic()
    cells = completions = 0
    try:
        kc.wait_for_ready(timeout=60)
        pid = km.provisioner.process.pid
        content = execute(kc, km, SETUP, 120)
        if not content or content["status"] != "ok":
            sys.exit(f"bench: the set-up cell failed: {content}")
        for c in range(args.cycles):
            comps = cycle_completions(c, big_header)
            for i, (code, want, interrupt_after) in enumerate(cycle_cells(c)):
                content = execute(kc, km, code, 120, interrupt_after)
                cells += 1
                if content is None:
                    res["unanswered"].append({"cycle": c, "code": code})
                elif content["status"] != want:
                    res["wrong"].append({"cycle": c, "code": code, "status": content["status"],
                                         "ename": content.get("ename")})
                if i % (CELLS_PER_CYCLE // len(comps)) == 0 and i // 10 < len(comps):
                    ccode, must = comps[i // 10]
                    reply = complete(kc, ccode, 120)
                    completions += 1
                    if reply is None:
                        res["unanswered"].append({"cycle": c, "complete": ccode})
                    elif must is not None and must not in reply.get("matches", []):
                        res["wrong"].append({"cycle": c, "complete": ccode,
                                             "matches": reply.get("matches", [])[:10]})
                drain_iopub(kc)
            fds, rss_kb = kernel_figures(pid)
            res["figures"].append({"cycle": c, "open_files": fds, "rss_kb": rss_kb,
                                   "seconds": time.monotonic() - t0})
            print(f"  cycle {c + 1:3d}/{args.cycles}: {cells} cells, {completions} completions, "
                  f"kernel RSS {rss_kb} kB, open files {fds}", flush=True)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
        tmp.cleanup()

    rss = [f["rss_kb"] for f in res["figures"]]
    fds = [f["open_files"] for f in res["figures"]]
    start_kb = min(rss[1:4]) if len(rss) >= 4 else rss[0]
    end_kb = rss[-1]
    res.update(cells=cells, completions=completions, seconds=time.monotonic() - t0,
               rss_start_kb=start_kb, rss_end_kb=end_kb, rss_max_kb=max(rss))
    targets = [
        ("every request answered", len(res["unanswered"]) == 0,
         f"{len(res['unanswered'])} unanswered", "0"),
        ("every reply as expected", len(res["wrong"]) == 0, f"{len(res['wrong'])} wrong", "0"),
        ("kernel RSS growth after the warm-up", end_kb - start_kb <= RSS_GROWTH_MAX_KB,
         f"{end_kb - start_kb:+d} kB ({start_kb} -> {end_kb} kB, at most {max(rss)} kB)",
         f"<= +{RSS_GROWTH_MAX_KB} kB"),
        ("kernel open files after each cycle", len(set(fds)) == 1,
         f"{min(fds)}..{max(fds)}", "constant"),
    ]
    res["targets"] = [{"what": w, "met": m, "value": v, "target": t} for w, m, v, t in targets]
    m = res["machine"]
    print(f"\ncflame soak benchmark  {m['date']}")
    print(f"  commit {m['cflame_commit']}; {cells} cells ({args.cycles * PROFVIEWS_PER_CYCLE} "
          f"under %%profview) and {completions} completions in {res['seconds']:.0f} s")
    print("targets (docs/PERFORMANCE.md):")
    for t in res["targets"]:
        print(f"  [{'met' if t['met'] else 'MISSED':6s}] {t['what']}: {t['value']} "
              f"(target {t['target']})")
    for u in res["unanswered"][:5] + res["wrong"][:5]:
        print(f"  {u}")
    write_results(res, args.json)


if __name__ == "__main__":
    main()
