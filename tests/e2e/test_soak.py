# SPDX-License-Identifier: BSD-3-Clause
"""A soak: 500 cells that mix what a session meets, faults included, through
one kernel. Every request must get its reply, and the kernel must not grow:
its open files stay constant and its private resident memory grows by less
than 5 MB. The figures are printed (run with -s to see them)."""
import os
import time

from conftest import collect, open_files, send, start_kernel

CYCLES = 20  # of 25 cells: 500 cells

SETUP = r"""
#include <unistd.h>
#include <sys/wait.h>
volatile double soak_burn;
static char soak_buf[65536];
/* memset: every profiled run samples libc too, whose debug information
 * (a file of its own) the kernel reads again after each restart. */
__attribute__((noinline)) void soak_spin(long n) {
  for (long i = 0; i < n; i++) soak_burn += i * 0.5;
  void *(*volatile fill)(void *, int, size_t) = memset; /* libc's, never inlined */
  for (int k = 0; k < 3000; k++) fill(soak_buf, k, sizeof soak_buf);
}
int soak_n = 0;
"""


def cycle_cells(c):
    """The 25 cells of cycle c, as (code, expected status, interrupt after s).
    The faults come first and the profiled cells last, so that each cycle
    ends in the same state: the kernel has just symbolized a fresh worker's
    stacks, libc's debug information included."""
    cells = [
        ("volatile int *soak_q = 0; *soak_q = 1;", "error", None),
        ("if (fork() == 0) { printf(\"child\\n\"); _exit(0); }\nwait(NULL);", "ok", None),
        ("int soak_fk%d = fork();" % c, "ok", None),
        ("for (;;) soak_spin(1000);", "error", 0.3),
        ("int soak_bad = ;", "error", None),
        ("int soak_nul\x00 = 1;", "error", None),
        ("%profview?", "ok", None),
        (f'printf("%d\\n", soak_n + {c});', "ok", None),
    ]
    cells += [(f'printf("%d\\n", ++soak_n);', "ok", None) for _ in range(13)]
    cells += [(f"%%profview\nsoak_spin({3_000_000 + c});", "ok", None) for _ in range(4)]
    return cells


def kernel_figures(pid):
    """The kernel's open files (conftest.open_files), and its private and
    its whole resident memory in kB.

    A leak grows the private part (RssAnon: heap, arenas, stacks). The rest
    is pages of files the kernel maps: its libraries, the debug files its
    symbol store keeps (bounded by that store's limits), and libraries
    loaded once when first needed, at a moment this soak leaves to chance
    (libdw's debuginfod client, with libcurl and GnuTLS, some 4 MB of
    pages, was one until the kernel stopped loading it without servers)."""
    fds = open_files(pid)
    with open(f"/proc/{pid}/status") as f:
        status = {line.split(":")[0]: int(line.split()[1]) for line in f
                  if line.startswith(("VmRSS:", "RssAnon:"))}
    return fds, status["RssAnon"], status["VmRSS"]


def test_500_cells_of_faults_forks_interrupts_and_profiles():
    with start_kernel() as (km, kc):
        pid = km.provisioner.process.pid
        r = collect(kc, send(kc, SETUP), timeout=60)
        assert r.reply["status"] == "ok", r.reply
        figures, unanswered, wrong = [], [], []
        t0 = time.monotonic()
        n = 0
        for c in range(CYCLES):
            for code, want, interrupt_after in cycle_cells(c):
                msg_id = send(kc, code, stop_on_error=False)
                if interrupt_after:
                    time.sleep(interrupt_after)
                    km.interrupt_kernel()
                try:
                    r = collect(kc, msg_id, timeout=60)
                except TimeoutError as e:
                    unanswered.append((n, code, str(e)))
                    continue
                finally:
                    n += 1
                if r.reply["status"] != want:
                    wrong.append((n, code, r.reply.get("ename"), r.reply.get("evalue")))
            figures.append(kernel_figures(pid))
        seconds = time.monotonic() - t0
    fds = [f for f, _, _ in figures]
    rss = [r for _, r, _ in figures]
    whole = [w for _, _, w in figures]
    # Growth: the least of the last three cycles against the least of
    # cycles 2 to 4 (the first is a warm-up: libc's debug information, some
    # 16 MB once inflated, may come in its profiled cells or later), so
    # that a passing peak (that information inflated again for a restarted
    # worker) does not count.
    start_kb, end_kb = min(rss[1:4]), min(rss[-3:])
    grew_kb = end_kb - start_kb
    print(f"\nsoak: {n} cells in {seconds:.0f} s; every request answered: {not unanswered}; "
          f"kernel open files after each cycle {min(fds)}..{max(fds)} (first {fds[0]}, last {fds[-1]}); "
          f"kernel private RSS {start_kb} kB after the first cycles, {end_kb} kB at the end "
          f"(grew {grew_kb} kB, at most {max(rss)} kB)")
    print(f"soak: open files {fds}\nsoak: private RSS kB {rss}\nsoak: whole RSS kB {whole}")
    assert not unanswered, unanswered[:5]
    assert not wrong, wrong[:5]
    assert len(set(fds)) == 1, fds
    if os.environ.get("CFLAME_SANITIZED"):
        # AddressSanitizer's quarantine keeps freed memory: the kernel's
        # RSS says nothing there. The plain build holds the bound.
        print("soak: RSS not bounded under AddressSanitizer (its quarantine holds freed memory)")
    else:
        assert grew_kb < 5 * 1024, rss
