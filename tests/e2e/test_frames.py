# SPDX-License-Identifier: BSD-3-Clause
"""What the frames of a profile are called (docs/PROFILING.md, "Every frame
of a cell has a name" and "Tail calls keep their caller"): the benchmarks
game's C programs, pasted into cells as docs/USAGE.md says, leave no
"[unknown]" frame in cell code, and at most 0.5 % of samples with one
anywhere; a function that ends by calling another keeps its frame.

About the bounds. Whether a sample lands in an unnamed stub is a coin
flipped at each sample, so the count of samples with an "[unknown]" frame is
binomial: the test asks whether the count seen is one that a share of
0.5 % (the bound the docs promise) makes unlikely, with a one-sided
binomial test at the 10^-4 level. With some 4,000 stacks a run, that
fails a share of 1 % (which the docs' bound must not allow) almost surely,
and passes a share of 0.5 % or less but once in 10^4 runs. A share
measured between two functions of known cost (1:3) is held to 5 standard
deviations of its estimate, computed from the stacks the run recorded.
"""
import math
import pathlib

import pytest

from conftest import MEMORY_CAP, ancestors, by_id, flame, ok, rows_of, start_kernel, summary_of

WORKLOADS = pathlib.Path(__file__).resolve().parent / "workloads"

# (file, the name main gets, arguments, runs): each about 0.4-0.5 s of CPU
# in a cell (spectral-norm calls eval_A through the PLT there: a cell's
# functions can be redefined, so the compiler does not inline them).
BENCHMARKS = [
    ("binarytrees.c", "bt_main", "16", 1),
    ("nbody.c", "nbody_main", "3500000", 1),
    ("spectralnorm.c", "spectralnorm_main", "1600", 1),
    ("fannkuchredux.c", "fannkuch_main", "10", 2),
]

UNKNOWN_SHARE = 0.005  # the most the docs allow
ALPHA = 1e-4           # the chance that the test fails a share within it
SIGNATURE = "-fno-optimize-sibling-calls"


def summary_line(bundle):
    """The line of text/plain that says how the profile was taken."""
    return next(line for line in bundle["text/plain"].splitlines() if " samples " in line)


def kernel():
    """A kernel of the test's own, its memory capped."""
    return start_kernel(memory=MEMORY_CAP)


def binomial_sf(k, n, p):
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    return min(1.0, sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                                 + i * log_p + (n - i) * log_q) for i in range(k, n + 1)))


def unknown_samples(rows):
    """Samples whose stack has an "[unknown]" frame (counted once, at the
    outermost), and those frames' parents' names, for the message."""
    index = by_id(rows)
    count, where = 0, []
    for r in rows:
        if r["func"] != "[unknown]":
            continue
        if any(a["func"] == "[unknown]" for a in ancestors(rows, r, index)):
            continue
        count += r["count"]
        parent = index.get(r["parent"])
        where.append(f"{r['count']} under {parent['func'] if parent else '-'} ({r['module']})")
    return count, where


@pytest.mark.parametrize("source,name,arg,runs", BENCHMARKS, ids=[b[0][:-2] for b in BENCHMARKS])
def test_benchmark_frames_are_named(source, name, arg, runs):
    """A benchmarks-game program pasted into a cell (#define main NAME), run
    under %%profview: no frame of cell code is unnamed (calls through the
    procedure linkage table are named NAME@plt), and at most 0.5 % of its
    stacks have an unnamed frame anywhere."""
    program = (WORKLOADS / source).read_text()
    with kernel() as (km, kc):
        ok(kc, f"#define main {name}\n{program}\n#undef main", timeout=60)
        bundle, reply, outputs = flame(
            kc, f"%%profview delay=0.0001\nchar *args[] = {{\"{name}\", \"{arg}\", 0}};\n"
                f"for (int r = 0; r < {runs}; r++) {name}(2, args);", timeout=180)
    rows = rows_of(bundle)
    unknown, where = unknown_samples(rows)
    # Every address in a cell's object has a name: none there is unknown.
    in_cells = [r for r in rows if r["func"] == "[unknown]" and (r["module"] or "").startswith("cell[")]
    assert not in_cells, f"{source}: unnamed code in a cell: " + "; ".join(where)
    # The trials are the stacks recorded; a stack recorded late weighs more
    # than one sample (a timer that fires on the scheduler's tick), so the
    # unknown weight is counted in stacks at the profile's mean weight.
    s = summary_of(bundle)
    n = s["stacks"]
    if n < 1000:
        pytest.skip(f"{source}: {n} stacks recorded, too few to judge a 0.5 % share: {s['line']}")
    k = math.ceil(unknown * n / s["samples"])
    p = binomial_sf(k, n, UNKNOWN_SHARE)
    assert p >= ALPHA, (
        f"{source}: {k} of {n} stacks ({100 * k / n:.2f} %) have an [unknown] frame; a share of "
        f"{100 * UNKNOWN_SHARE} % gives that many with probability {p:.1e}: " + "; ".join(where))


# ---------------------------------------------------------------- tail calls

# helper(u) costs u loop iterations; work_a ends by calling it (a tail
# call at -O2), work_b calls it for three times the work and adds to the
# result, which is no tail call. So work_a has 1/4 of their time.
TAIL = r"""
static volatile double sink;
__attribute__((noinline)) double helper(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink = z; return z; }
double work_a(long u) { return helper(u); }
double work_b(long u) { return helper(3 * u) + 1.0; }
"""
TAIL_RUN = ("%%profview delay=0.0005\n"
            "for (int i = 0; i < 60; i++) { work_a(2000000); work_b(2000000); }")
O2 = "-std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall"


def top_child(rows, func):
    """The frames of func right under the cell's top-level scope."""
    tops = {r["id"] for r in rows if r["func"] == "top-level scope"}
    return [r for r in rows if r["func"] == func and r["parent"] in tops]


def test_tail_calls_keep_their_caller():
    """At -O2 (set with %cflags), work_a, which only returns helper(n),
    shows in the graph with a quarter of the time, helper under it; the
    header note says why. -foptimize-sibling-calls in %cflags turns the
    optimization back on: then helper sits directly under the top-level
    scope, and the note says that instead."""
    with kernel() as (km, kc):
        ok(kc, f"%cflags {O2}")
        ok(kc, TAIL)
        bundle, _, _ = flame(kc, TAIL_RUN, timeout=180)
        rows = rows_of(bundle)
        a, b = top_child(rows, "work_a"), top_child(rows, "work_b")
        assert a and b, f"work_a or work_b is not under the top-level scope: {bundle['text/plain']}"
        na, nb = sum(r["count"] for r in a), sum(r["count"] for r in b)
        n = na + nb
        s = summary_of(bundle)
        stacks = n * s["stacks"] / s["samples"]  # the trials: stacks, at the mean weight
        assert stacks >= 300, f"too few stacks to judge ({stacks:.0f}): {s['line']}"
        share = na / n
        sd = math.sqrt(0.25 * 0.75 / stacks)
        assert abs(share - 0.25) <= 5 * sd, (
            f"work_a has {100 * share:.1f} % of work_a + work_b, expected 25 % +- {500 * sd:.1f}: "
            f"{bundle['text/plain']}")
        index = by_id(rows)
        under_a = [r for r in rows
                   if r["func"] == "helper" and index[r["parent"]]["func"] == "work_a"]
        assert sum(r["count"] for r in under_a) >= 0.9 * na, bundle["text/plain"]
        assert not top_child(rows, "helper"), f"helper lost its caller: {bundle['text/plain']}"
        assert SIGNATURE in summary_line(bundle), bundle["text/plain"][:400]

        ok(kc, f"%cflags {O2} -foptimize-sibling-calls")
        ok(kc, TAIL)
        bundle, _, _ = flame(kc, TAIL_RUN, timeout=180)
        rows = rows_of(bundle)
        total = max(r["count"] for r in rows)
        helper_top = sum(r["count"] for r in top_child(rows, "helper"))
        work_a = sum(r["count"] for r in top_child(rows, "work_a"))
        # work_a's own instructions before its jump: a few per call.
        assert work_a <= 0.02 * total, bundle["text/plain"]
        assert helper_top >= 0.15 * total, bundle["text/plain"]
        note = summary_line(bundle)
        assert "-foptimize-sibling-calls" in note, note


def test_the_compile_flags_are_said_once_per_session():
    """The sentence on tail calls is the session's, not each graph's: the
    first graph says it, the next ones do not, and a %cflags that changes
    what it says makes the next graph say the new one, once."""
    busy = "%%profview\nvolatile double z = 0; for (long k = 0; k < 30000000; k++) z += k;"
    with kernel() as (km, kc):
        notes = []
        for flags in (None, None, f"{O2} -foptimize-sibling-calls", None):
            if flags:
                ok(kc, f"%cflags {flags}")
            bundle, _, _ = flame(kc, busy, timeout=120)
            notes.append(summary_line(bundle))
        assert SIGNATURE in notes[0], notes[0]
        assert "sibling" not in notes[1], f"said again on the second graph: {notes[1]}"
        assert "-foptimize-sibling-calls" in notes[2], notes[2]
        assert "sibling" not in notes[3], f"said again after the flags' graph: {notes[3]}"


def test_timeit_keeps_tail_calls():
    """%%timeit compiles as cells do: a tail call in its cell stays a call,
    as in the cells that are profiled. g reads its caller's frame pointer:
    f's own when f calls it, the timed loop's when f jumps to it."""
    with kernel() as (km, kc):
        ok(kc, "void *loop_fp, *caller_fp;\n"
               "__attribute__((noinline)) void g(void) "
               "{ caller_fp = *(void **)__builtin_frame_address(0); __asm__ volatile(\"\"); }")
        timed = "void f(void) { g(); }\nloop_fp = __builtin_frame_address(0);\nf();"
        ok(kc, "%%timeit -n 3 -r 1\n" + timed, timeout=60)
        assert ok(kc, 'printf("%d", caller_fp != loop_fp);') == "1", "f ended in a jump to g"
        # The same check tells a tail call when one is made.
        ok(kc, f"%cflags {O2} -foptimize-sibling-calls")
        ok(kc, "%%timeit -n 3 -r 1\n" + timed, timeout=60)
        assert ok(kc, 'printf("%d", caller_fp != loop_fp);') == "0", "f did not jump to g"


def test_a_function_does_not_sit_on_itself_unless_it_recursed():
    """gcc gives some functions' out-of-line copies an inlined copy of the
    function itself, "called" at its own first line: glibc's
    __GI__IO_default_xsputn holds an inlined _IO_default_xsputn at
    genops.c:370, which is that function's declaration. That is the
    function's body, not a call: a cell that formats strings (snprintf, whose
    output goes through _IO_default_xsputn) shows no frame, of its own or of
    libc, under a frame of the same function, since nothing in it recurses."""
    with kernel() as (km, kc):
        ok(kc, "#include <stdio.h>")
        bundle, _, _ = flame(kc, "%%profview C=true\nchar buf[64];\nunsigned long sum = 0;\n"
                                 "for (int i = 0; i < 6000000; i++) {\n"
                                 '  snprintf(buf, sizeof buf, "word%d", i);\n  sum += buf[5];\n}',
                             timeout=180)
        rows = rows_of(bundle)
        index = by_id(rows)
        assert any(r["func"] == "_IO_default_xsputn" for r in rows), \
            f"no sample in _IO_default_xsputn, which the test is about: {bundle['text/plain'][:2000]}"
        on_itself = [(r["func"], r.get("line"), index[r["parent"]].get("line")) for r in rows
                     if r.get("parent") in index and index[r["parent"]]["func"] == r["func"]]
        assert not on_itself, f"frames under a frame of the same function: {on_itself}"
