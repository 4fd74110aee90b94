# SPDX-License-Identifier: BSD-3-Clause
"""Allocation profiles through the kernel (docs/PROFILING.md, "Allocation
profiles"):
%%profallocs with known answers (exact at sample_rate=1, within the
binomial bound when sampling), live=true, allocations made inside libc,
threads, weight=count, allocation baselines and diffs, and the refusals.
"""
import fcntl
import math
import os
import re
import signal
import struct
import termios
import time

import pytest

from conftest import (SpecStore, by_id, child_processes, collect, displays, fails, flame,
                      interrupt_when_printed, ok, rows_of, run, send, start_kernel, stdout, svg_of)

STORE = SpecStore("allocs")

DEFS = r"""
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void *kept[4000];
char *dups[100];
__attribute__((noinline)) void make_mallocs(int n) { for (int i = 0; i < n; i++) kept[i] = malloc(1024); }
__attribute__((noinline)) void make_callocs(int n) { for (int i = 0; i < n; i++) kept[1000 + i] = calloc(1, 1024); }
__attribute__((noinline)) void free_half(void) {
  for (int i = 0; i < 1000; i += 2) { free(kept[i]); kept[i] = 0; }
  for (int i = 1000; i < 4000; i += 2) { free(kept[i]); kept[i] = 0; }
}
__attribute__((noinline)) void free_all(void) { for (int i = 0; i < 4000; i++) { free(kept[i]); kept[i] = 0; } }
__attribute__((noinline)) void duplicate(void) {
  char s[100];
  memset(s, 'x', 99);
  s[99] = 0;
  for (int i = 0; i < 100; i++) dups[i] = strdup(s);
}
__attribute__((noinline)) void open_files(void) {
  FILE *f[10];
  for (int i = 0; i < 10; i++) f[i] = fopen("/dev/null", "r");
  for (int i = 0; i < 10; i++) fclose(f[i]);
}
__attribute__((noinline)) void churn(int n, size_t size) {
  for (int i = 0; i < n; i++) { void *volatile p = malloc(size); free(p); }
}
static void *thread_body(void *arg) { churn(25000, 64); return arg; }
__attribute__((noinline)) void busy(long n) { volatile double z = 0; for (long k = 0; k < n; k++) z += k; }
__attribute__((noinline)) void four_threads(void) {
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, thread_body, 0);
  for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
}
"""


@pytest.fixture(scope="module")
def kernel():
    with start_kernel() as (km, kc):
        ok(kc, "%ldflags -lpthread")
        ok(kc, DEFS)
        yield km, kc


def show(kc, code, name, timeout=60):
    bundle, reply, outputs = flame(kc, code, timeout=timeout)
    STORE.add(bundle, name)
    return bundle, rows_of(bundle)


def frames(rows, func):
    return [r for r in rows if r["func"] == func]


def total(rows, func, field="count"):
    return sum(r[field] for r in frames(rows, func))


def test_exact_bytes_and_counts_at_sample_rate_1(kc):
    bundle, rows = show(kc, "%%profallocs sample_rate=1\nmake_mallocs(1000);\nmake_callocs(3000);\nfree_all();",
                        "exact")
    assert total(rows, "make_mallocs") == 1_024_000, frames(rows, "make_mallocs")
    assert total(rows, "make_mallocs", "allocs") == 1000
    assert total(rows, "make_callocs") == 3_072_000, frames(rows, "make_callocs")
    assert total(rows, "make_callocs", "allocs") == 3000
    assert rows[0]["count"] == 4_096_000 and rows[0]["allocs"] == 4000
    # The allocator's frames are folded into their callers and marked.
    assert all(r["status"] & 2 for r in frames(rows, "make_mallocs")), frames(rows, "make_mallocs")
    assert "4,000 allocations" in bundle["text/plain"] and "sample_rate=1" in bundle["text/plain"]
    assert "bytes" in svg_of(bundle) and "allocations" in svg_of(bundle)
    # C=true shows the allocation functions as leaves under their callers.
    b, rows_c = show(kc, "%%profallocs sample_rate=1 C=true\nmake_mallocs(1000);\nmake_callocs(3000);\nfree_all();",
                     "exact-C")
    index = by_id(rows_c)
    mallocs = frames(rows_c, "malloc")
    callocs = frames(rows_c, "calloc")
    assert sum(r["count"] for r in mallocs) == 1_024_000 and sum(r["count"] for r in callocs) == 3_072_000
    assert {index[r["parent"]]["func"] for r in mallocs} == {"make_mallocs"}
    assert {index[r["parent"]]["func"] for r in callocs} == {"make_callocs"}


def test_weight_count_draws_allocation_counts(kc):
    bundle, rows = show(kc, "%%profallocs sample_rate=1 weight=count\nmake_mallocs(1000);\nmake_callocs(3000);\nfree_all();",
                        "count")
    assert total(rows, "make_mallocs") == 1000 and total(rows, "make_callocs") == 3000
    spec = bundle["application/vnd.vegalite.v5+json"]
    assert spec["usermeta"]["cflame"]["unit"] == "allocations"
    assert "Bytes" not in bundle["text/plain"]


def test_live_true_shows_what_was_not_freed(kc):
    code = "%%profallocs sample_rate=1 live=true\nmake_mallocs(1000);\nmake_callocs(3000);\nfree_half();"
    bundle, rows = show(kc, code, "live")
    assert total(rows, "make_mallocs") == 512_000 and total(rows, "make_mallocs", "allocs") == 500
    assert total(rows, "make_callocs") == 1_536_000 and total(rows, "make_callocs", "allocs") == 1500
    assert "live=true" in bundle["text/plain"]
    ok(kc, "free_all();")
    # Everything freed: nothing live, and the output says so.
    reply, outputs = run(kc, "%%profallocs sample_rate=1 live=true\nmake_mallocs(10);\nfree_all();")
    assert reply["status"] == "ok" and not displays(outputs)
    assert "Nothing is still allocated" in stdout(outputs), stdout(outputs)


@pytest.mark.skipif(bool(os.environ.get("CFLAME_SANITIZED")),
                    reason="under AddressSanitizer, strdup is ASan's and allocates from ASan "
                           "directly, not through the worker's malloc (flame/sample/fl_allocs_entry.c)")
def test_strdup_inside_libc_counts_under_its_caller(kc):
    bundle, rows = show(kc, "%%profallocs sample_rate=1\nduplicate();", "strdup")
    assert total(rows, "duplicate") == 100 * 100 and total(rows, "duplicate", "allocs") == 100
    b, rows_c = show(kc, "%profallocs sample_rate=1 C=true duplicate();", "strdup-C")
    index = by_id(rows_c)
    dup = [r for r in rows_c if "strdup" in r["func"]]
    assert dup and all(index[r["parent"]]["func"] == "duplicate" for r in dup), dup
    ok(kc, "for (int i = 0; i < 100; i++) free(dups[i]);")


def test_fopen_inside_libc_counts_under_its_caller(kc):
    """libc's fopen allocates its FILE with malloc: that is counted under
    the cell's call to fopen (in every build: a sanitizer's fopen calls
    libc's, whose malloc is the worker's)."""
    bundle, rows = show(kc, "%%profallocs sample_rate=1\nopen_files();", "fopen")
    assert total(rows, "open_files", "allocs") >= 10, frames(rows, "open_files")
    assert total(rows, "open_files") >= 10 * 400  # a FILE is about 472 bytes
    b, rows_c = show(kc, "%profallocs sample_rate=1 C=true open_files();", "fopen-C")
    index = by_id(rows_c)
    leaves = [r for r in rows_c if r["func"] == "malloc"]
    for leaf in leaves:
        chain = [leaf]
        while chain[-1]["parent"] is not None:
            chain.append(index[chain[-1]["parent"]])
        names = [r["func"] for r in chain]
        assert "open_files" in names and any("fopen" in n for n in names), names


def test_sampling_estimates_within_the_binomial_bound(kc):
    n, p, size = 20000, 0.1, 1000
    bundle, rows = show(kc, f"%%profallocs sample_rate={p}\nchurn({n}, {size});", "sampled")
    est = total(rows, "churn", "allocs")
    est_bytes = total(rows, "churn")
    # The number sampled is Binomial(n, p); the estimate divides it by p.
    bound = 4 * math.sqrt(n * p * (1 - p)) / p
    assert abs(est - n) <= bound, (est, n, bound)
    assert abs(est_bytes - n * size) <= bound * size, (est_bytes, n * size)
    assert "sample_rate=0.1" in bundle["text/plain"] and "estimated" in bundle["text/plain"]


def test_four_threads_at_rate_1_lose_nothing(kc):
    bundle, rows = show(kc, "%%profallocs sample_rate=1\nfour_threads();", "threads", timeout=120)
    assert total(rows, "churn", "allocs") == 100_000, frames(rows, "churn")
    assert total(rows, "churn") == 6_400_000


def test_allocation_baseline_and_diff(kc):
    out = ok(kc, "%%profbase alloc_base allocs=true sample_rate=1\nmake_mallocs(1000);\nmake_callocs(1000);\nfree_all();")
    assert "Baseline alloc_base" in out, out
    listing = ok(kc, "%profbase")
    assert re.search(r"alloc_base\s+alloc\b", listing), listing
    bundle, rows = show(kc, "%%profdiffview alloc_base\nmake_mallocs(500);\nmake_callocs(3000);\nfree_all();",
                        "alloc-diff")
    m, c = frames(rows, "make_mallocs")[0], frames(rows, "make_callocs")[0]
    assert m["change"] == "shrank" and m["base"] == 1_024_000 and m["count"] == 512_000, m
    assert c["change"] == "grew" and c["base"] == 1_024_000 and c["count"] == 3_072_000, c


def test_cpu_and_allocation_profiles_are_not_compared(kc):
    ok(kc, "%%profbase cpu_base\nchurn(100000, 64);")
    reply, _ = fails(kc, "%%profdiffview cpu_base allocs=true\nchurn(1000, 64);", "MagicError")
    assert "cannot be compared" in reply["evalue"] and "CPU profile" in reply["evalue"], reply["evalue"]
    ok(kc, "%%profbase a_base allocs=true sample_rate=1\nchurn(10, 64);")
    reply, _ = fails(kc, "%%profdiffview a_base allocs=false\nchurn(10, 64);", "MagicError")
    assert "cannot be compared" in reply["evalue"], reply["evalue"]
    # The session profile (CPU) against an allocation baseline.
    ok(kc, "%%profile\nchurn(200000, 64);")
    reply, _ = fails(kc, "%profdiffview a_base", "MagicError")
    assert "cannot be compared" in reply["evalue"], reply["evalue"]


@pytest.mark.parametrize("code, words", [
    ("%%profallocs delay=0.001\nchurn(10, 64);", ["delay=", "sample_rate="]),
    ("%%profallocs sample_rate=2\nchurn(10, 64);", ["sample_rate", "1"]),
    ("%%profallocs weight=pages\nchurn(10, 64);", ["bytes", "count"]),
    ("%%profview live=true\nchurn(10, 64);", ["live", "valid"]),
    ("%%profbase x allocs=false sample_rate=0.5\nchurn(10, 64);", ["allocation profiles"]),
])
def test_bad_options_name_what_is_valid_and_nothing_runs(kc, code, words):
    reply, outputs = fails(kc, code, "MagicError")
    for w in words:
        assert w in reply["evalue"], (w, reply["evalue"])


def test_no_allocations_explains_itself(kc):
    reply, outputs = run(kc, "%%profallocs\nint x = 1; (void)x;")
    assert reply["status"] == "ok" and not displays(outputs)
    assert "No allocations" in stdout(outputs), stdout(outputs)


def test_interrupted_allocation_profile_shows_what_ran(kernel):
    """An interrupt keeps the allocations recorded so far and draws them.
    The loop the interrupt finds spends most of its time in the cell's own
    code (busy), where the interrupt unwinds at once. One that finds the
    thread inside the allocator is forced out a moment later wherever it
    is (docs/PROFILING.md, "A cell that does not end"); inside AddressSanitizer's
    allocator that can leave its lock taken, and the worker is then
    restarted instead, a different outcome from the one tested here."""
    km, kc = kernel
    r, dt = interrupt_when_printed(km, kc, "%%profallocs\nfor (int i = 0; i < 20; i++) churn(1000, 64);\n"
                                   'printf("churning\\n");\nfflush(stdout);\n'
                                   "for (;;) { churn(100, 64); busy(1000000); }",
                                   "churning\n")
    assert r.reply["ename"] == "Interrupted", r.reply
    assert "The flame graph shows what the cell ran until then" in r.reply["evalue"], r.reply
    shown = displays(r.outputs)
    assert len(shown) == 1, [o["msg_type"] for o in r.outputs]
    bundle = shown[0]["data"]
    STORE.add(bundle, "interrupted")
    rows = rows_of(bundle)
    assert total(rows, "churn") > 1000, [(x["func"], x["count"]) for x in rows]



def pending_signals(pid):
    """The signals pending for process pid (its own and its threads'), as
    /proc/PID/status shows them."""
    status = dict(line.split(":\t", 1) for line in open(f"/proc/{pid}/status").read().splitlines()
                  if ":\t" in line)
    mask = int(status["SigPnd"], 16) | int(status["ShdPnd"], 16)
    return {s for s in range(1, 65) if mask >> (s - 1) & 1}


def wait_for(condition, what, within=60):
    """Polls condition until it holds; fails saying what did not happen."""
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {within} s"
        time.sleep(0.005)


def test_an_interrupt_before_the_worker_reads_the_run_ends_the_cell(kernel):
    """An interrupt that reaches the worker before it read the cell's run
    command (a worker that did not get the CPU for a while, on a busy machine
    or under a sanitizer: stopped here until the SIGINT and the SIGUSR2 that
    follows it are both pending) ends the cell as interrupted: the worker is
    not killed as a cell that "did not stop in time", and it runs the next
    cell."""
    km, kc = kernel
    workers = [p for p, (name, _) in child_processes(km.provisioner.process.pid).items()
               if name == "cflame-worker"]
    assert len(workers) == 1, workers
    worker = workers[0]
    commands = os.open(f"/proc/{worker}/fd/3", os.O_RDONLY | os.O_NONBLOCK)  # its command pipe
    os.kill(worker, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        msg_id = send(kc, "%%profallocs\nfor (;;) churn(1000, 64);", stop_on_error=False)
        # The cell compiled and its run command waits in the pipe, unread.
        unread = lambda: struct.unpack("i", fcntl.ioctl(commands, termios.FIONREAD, b"\0" * 4))[0]  # noqa: E731
        wait_for(lambda: unread() > 0, "the run command")
        km.interrupt_kernel()
        wait_for(lambda: {signal.SIGINT, signal.SIGUSR2} <= pending_signals(worker),
                 "the interrupt's SIGINT and SIGUSR2 at the worker")
    finally:
        os.kill(worker, signal.SIGCONT)
        os.close(commands)
    r = collect(kc, msg_id, timeout=60, sent_t=t0)
    assert r.reply["ename"] == "Interrupted", r.reply
    # Sent again once the run is under way, the interrupt finds the cell
    # before its entry (nothing ran, nothing to draw) or in it (the graph of
    # what it ran).
    said = r.reply["evalue"]
    if said == "the cell was interrupted before it started; nothing ran":
        assert not displays(r.outputs), r.outputs
    else:
        assert "The flame graph shows what the cell ran until then" in said, said
        assert len(displays(r.outputs)) == 1, r.outputs
    assert worker in child_processes(km.provisioner.process.pid), "the worker was restarted"
    assert ok(kc, 'printf("next\\n");') == "next\n"


def test_profsave_of_an_allocation_graph(kc, tmp_path):
    show(kc, "%%profallocs sample_rate=1\nmake_mallocs(1000);\nfree_all();", "save")
    folded = tmp_path / "a.folded"
    ok(kc, f"%profsave {folded}")
    lines = folded.read_text().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in lines) == 1_024_000, lines


WALK_DEFS = r"""
#include <pthread.h>
#include <sys/mman.h>
/* The worker's allocation recorder (exported by cflame-worker; see
 * include/cflame/fl_allocs.h), on a buffer of this cell's own. */
size_t fl_allocs_buffer_bytes(size_t n_words, size_t table_slots);
int fl_allocs_init(void *buf, size_t bytes, size_t table_slots, char *err, size_t err_size);
int fl_allocs_start(double sample_rate, uint64_t tag, char *err, size_t err_size);
uint64_t fl_allocs_stop(void);
uint64_t *own_buffer;
typedef void *(*grab_fn)(size_t);
__attribute__((noinline)) void *grab(size_t n) { void *p = malloc(n); __asm__ volatile("" ::: "memory"); return p; }
static void *grab_in_thread(void *fn) { free(((grab_fn)fn)(48)); return NULL; }
/* Records an allocation by fn on this thread and one on a new thread;
 * prints how many records the frame-pointer walk made (header word 10). */
__attribute__((noinline)) void count_walks(grab_fn fn) {
  char err[256];
  size_t bytes = fl_allocs_buffer_bytes(1 << 16, 1024);
  if (!own_buffer) {
    own_buffer = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fl_allocs_init(own_buffer, bytes, 1024, err, sizeof err) < 0) { printf("%s\n", err); return; }
  }
  pthread_t t;
  fl_allocs_start(1, 0, err, sizeof err);
  free(fn(40));
  pthread_create(&t, NULL, grab_in_thread, (void *)fn);
  pthread_join(t, NULL);
  fl_allocs_stop();
  printf("%llu of %llu\n", (unsigned long long)own_buffer[10], (unsigned long long)own_buffer[4]);
}
"""

DEFAULT_CFLAGS = "-std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall"


def walks(kc, fn):
    out = ok(kc, f"count_walks({fn});")
    m = re.fullmatch(r"(\d+) of (\d+)\n", out)
    assert m, out
    return int(m.group(1)), int(m.group(2))


def test_cells_with_frame_pointers_are_unwound_by_the_walk():
    """The kernel tells the worker which cells keep frame pointers, on run
    and on the reload after a restart; allocations from those cells (on the
    main thread up to call_entry, on a cell's thread up to the worker's
    thread start) are unwound by the frame-pointer walk, the others by
    libunwind. A kernel of its own: the cell takes over the recorder's
    buffer."""
    with start_kernel() as (km, kc):
        ok(kc, WALK_DEFS)
        fp, records = walks(kc, "grab")
        assert fp == 2 and records >= 2, (fp, records)
        ok(kc, "%cflags -std=gnu17 -O2 -g -Wall")
        ok(kc, "__attribute__((noinline)) void *grab_omitted(size_t n) {\n"
               "  void *p = malloc(n); __asm__ volatile(\"\" ::: \"memory\"); return p;\n}")
        ok(kc, f"%cflags {DEFAULT_CFLAGS}")
        assert walks(kc, "grab_omitted")[0] == 0
        fails(kc, "exit(3);", "Exit")
        assert walks(kc, "grab")[0] == 2
        assert walks(kc, "grab_omitted")[0] == 0


def test_zz_every_spec_passes_check_spec():
    STORE.check()


def test_one_allocation_is_said_in_the_singular():
    """A cell that makes one allocation call: "1 allocation call", not "1
    allocation calls", in the summary and in live=true's answer; the SVG's
    tooltips say "1 allocation" too."""
    with start_kernel(memory=4 << 30) as (km, kc):
        cell = "void *volatile one = malloc(10); free(one);"
        bundle, reply, outputs = flame(kc, f"%%profallocs sample_rate=1\n{cell}")
        first = bundle["text/plain"].splitlines()
        summary = next(line for line in first if "allocation" in line)
        assert "the run made 1 allocation call" in summary and "1 allocation calls" not in summary, \
            summary
        assert summary.startswith("1 allocation of 10 B"), summary
        titles = re.findall(r"<title>(.*?)</title>", svg_of(bundle), re.S)
        assert titles and all("1 allocations" not in t and "\n1 bytes" not in t for t in titles), \
            titles
        reply, outputs = run(kc, f"%%profallocs sample_rate=1 live=true\n{cell}", timeout=60)
        said = stdout(outputs)
        assert "of the 1 allocation call the cell made" in said, said
