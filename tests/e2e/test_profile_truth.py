# SPDX-License-Identifier: BSD-3-Clause
"""The profiler's promises (docs/PROFILING.md, "What the numbers mean, and
why they can be trusted"): the profiler tells the truth, measured through
the real kernel on workloads whose answer is known.

Numbers come from what the user sees: the data rows of the Vega-Lite spec
(count, self, func, ...) and the summary line of text/plain ("N samples
every 1 ms of CPU represent X s of CPU, from S stacks recorded (R per
CPU-second); the run used Y s CPU, Z s wall").

About the tolerances. The shares are sampling estimates: at 1,000 samples
per CPU-second a 75 % share measured over one CPU-second has a standard
deviation of about 1.4 points, so the workloads that must land within
+-2 points run long enough (or sample often enough) for that to be 3 to 6
standard deviations, which keeps these tests from flaking while a real
bias (aliasing, lost samples, wrong weights) still fails them. Totals are
not estimates: every sample carries the CPU time of its thread since its
previous one, so totals are held to the 5 % the docs promise, and
per-thread shares to +-3 points, even on short runs.
"""
import re

import pytest

from conftest import (SPLIT_DEFS, VL_MIME, SpecStore, ancestors, by_id, children, flame,
                      measured_b_share, ok, rows_of, run, share_bound, start_kernel, stdout,
                      summary_of, svg_of, timed_split, top_rows_of, chart_bars_of,
                      sandwich_halves_of)

STORE = SpecStore("profile-truth")

# SPLIT_DEFS (conftest.py): a() and b() split the work 1:3, calib() and the
# clocks; and what the sleeping tests and the calibration add.
DEFS = r"""
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
""" + SPLIT_DEFS + r"""
/* For the sleeping tests: a thread that burns CPU until told to stop, and
 * one that writes a byte to a pipe after 50 ms. */
static volatile int burn_stop;
static void *burner(void *p) { while (!burn_stop) calib(1000); return NULL; }
static void *writer(void *p) { usleep(50000); if (write(*(int *)p, "x", 1) != 1) perror("write"); return NULL; }
/* Iterations of the loop per millisecond of CPU, measured over >= 50 ms. */
static long iters_per_ms(void) {
  long u = 1000;
  for (;;) {
    double t0 = cpu_now();
    calib(u);
    double dt = cpu_now() - t0;
    if (dt > 0.05) return (long)(u * 0.001 / dt);
    u *= 2;
  }
}
"""


@pytest.fixture(scope="module")
def kc():
    with start_kernel() as (km, kc):
        ok(kc, DEFS)
        out = ok(kc, 'long PER_MS = iters_per_ms();\nprintf("%ld\\n", PER_MS);')
        assert int(out) > 1000, out
        yield kc


def profile(kc, code, name, **kw):
    """Runs a profiled cell; returns (bundle, rows, summary, stdout)."""
    bundle, reply, outputs = flame(kc, code, **kw)
    STORE.add(bundle, name)
    return bundle, rows_of(bundle), summary_of(bundle), stdout(outputs)


def top_level(rows):
    tops = [r for r in rows if r["func"] == "top-level scope" and r["depth"] == 1]
    assert tops, f"no top-level scope under the root: {rows[:5]}"
    return tops


def func_total(rows, func, parents):
    """Samples of the frames of func whose parent is one of parents."""
    ids = {p["id"] for p in parents}
    return sum(r["count"] for r in rows if r["func"] == func and r["parent"] in ids)


def b_share(rows):
    """b's share of the time in a and b (in percent), and the samples in a + b."""
    tops = top_level(rows)
    na, nb = func_total(rows, "a", tops), func_total(rows, "b", tops)
    assert na + nb > 0, rows[:10]
    return 100.0 * nb / (na + nb), na + nb


def assert_totals_agree(s, root_count, where):
    """The represented CPU time agrees with what the run used, within 5 %."""
    assert s["cpu"] and s["cpu"] > 0, f"{where}: the summary does not say the CPU time: {s['line']}"
    assert abs(s["represented"] - s["cpu"]) <= 0.05 * s["cpu"], f"{where}: {s['line']}"
    weighted = root_count * s["interval"]
    assert abs(weighted - s["cpu"]) <= 0.05 * s["cpu"], (
        f"{where}: root count {root_count} x interval {s['interval']} s = {weighted:.3f} s, "
        f"but the run used {s['cpu']} s: {s['line']}")


# ---------------------------------------------------------------- the interval


def test_interval_is_honoured(kc):
    """delay=0.001 on a CPU-bound cell that runs until it has used 1 s of
    CPU (measured, so a busy machine's slower loop does not shorten it):
    about 1,000 samples per CPU-second, said in the summary; the samples
    represent the CPU time the run used."""
    bundle, rows, s, out = profile(
        kc, "%%profview\n{ double t0 = cpu_now(); while (cpu_now() - t0 < 1.0) a(10 * PER_MS); }",
        "interval")
    assert s["interval"] == pytest.approx(0.001), s["line"]
    assert 1.0 <= s["cpu"] <= 2.0, f"the workload should take 1 s of CPU: {s['line']}"
    assert s["rate"] is not None, f"the summary does not state the effective rate: {s['line']}"
    assert 800 <= s["rate"] <= 1100, f"not about 1,000 stacks per CPU-second: {s['line']}"
    # The printed rate is what the numbers say, and a sample is one interval.
    assert s["rate"] == pytest.approx(s["stacks"] / s["cpu"], rel=0.02, abs=2), s["line"]
    assert s["stacks"] <= s["samples"], s["line"]
    assert s["represented"] == pytest.approx(s["samples"] * s["interval"], rel=0.002, abs=0.001), s["line"]
    assert_totals_agree(s, rows[0]["count"], "1 s of a()")


def test_total_weight_matches_cell_cpu_time(kc):
    """Several functions, nested calls, a C library call and a second
    thread: the root's count x the interval is the cell's CPU time (measured
    by the cell itself with CLOCK_PROCESS_CPUTIME_ID) within 5 %, and so is
    what the summary says the samples represent."""
    ok(kc, r"""
__attribute__((noinline)) void tw_leaf(long u) { calib(u); sink += 1; }
__attribute__((noinline)) void tw_mid(long u) { tw_leaf(u); a(u / 2); sink += 1; }
__attribute__((noinline)) void *tw_thread(void *p) { b(*(long *)p); return NULL; }
static int tw_cmp(const void *x, const void *y) {
  double u = *(const double *)x, v = *(const double *)y;
  return (u > v) - (u < v);
}""")
    bundle, rows, s, out = profile(kc, r"""%%profview
double tw_t0 = cpu_now();
long tw_u = 100 * PER_MS;
pthread_t tw_th;
pthread_create(&tw_th, NULL, tw_thread, &tw_u);
tw_mid(2 * tw_u);
a(tw_u);
double *tw_v = malloc(300000 * sizeof *tw_v);
for (int r = 0; r < 3; r++) {
  for (int i = 0; i < 300000; i++) tw_v[i] = rand();
  qsort(tw_v, 300000, sizeof *tw_v, tw_cmp);
}
free(tw_v);
pthread_join(tw_th, NULL);
printf("cpu %.6f\n", cpu_now() - tw_t0);""", "total-weight")
    m = re.search(r"cpu ([\d.]+)", out)
    assert m, out
    cell_cpu = float(m.group(1))
    assert cell_cpu > 0.5, f"the workload should take most of a second: {cell_cpu} s"
    root = rows[0]
    weighted = root["count"] * s["interval"]
    assert abs(weighted - cell_cpu) <= 0.05 * cell_cpu, (
        f"root count {root['count']} x {s['interval']} s = {weighted:.3f} s, but the cell "
        f"measured {cell_cpu:.3f} s of CPU: {s['line']}")
    assert abs(s["represented"] - cell_cpu) <= 0.05 * cell_cpu, (s["line"], cell_cpu)
    assert abs(s["cpu"] - cell_cpu) <= 0.05 * cell_cpu, (s["line"], cell_cpu)
    # The functions are there, and the thread's hangs on the root.
    funcs = {r["func"] for r in rows}
    assert {"tw_mid", "tw_leaf", "a", "calib"} <= funcs, funcs
    assert any(r["func"] == "tw_thread" and r["parent"] == root["id"] for r in rows), funcs


# ---------------------------------------------------------------- shares


def test_one_to_three_split(kc):
    """a() does 1 unit and b() 3 units per iteration: b's share of a + b is
    the share the cell measured (about 75 %) within what its samples can tell (share_bound: about 3 points for
    the 3,000 samples of 3 s of CPU in units of 2 ms)."""
    bundle, rows, s, out = profile(
        kc, "%%profview\n" + timed_split(None, "2 * PER_MS", "2 * PER_MS", cpu=3.0), "split")
    truth = measured_b_share(out)
    share, n = b_share(rows)
    assert n > 2000, f"too few samples in a and b: {n}; {s['line']}"
    bound = share_bound(truth / 100, n, s)
    assert abs(share - truth) <= bound, (
        f"b's share is {share:.2f} %, not {truth:.2f} +- {bound:.2f} ({n} samples); {s['line']}")
    assert_totals_agree(s, rows[0]["count"], "1:3 split")


def test_one_to_three_split_at_a_tenth_of_a_millisecond(kc):
    """The same split at delay=0.0001, with short calls (a pair takes
    25 us): about 10,000 samples per CPU-second."""
    bundle, rows, s, out = profile(
        kc, "%%profview delay=0.0001\n" + timed_split(None, "PER_MS / 160", "PER_MS / 160", cpu=1.0),
        "split-fast")
    assert s["interval"] == pytest.approx(0.0001), s["line"]
    assert s["rate"] and 8000 <= s["rate"] <= 11000, f"not about 10,000 per CPU-second: {s['line']}"
    truth = measured_b_share(out)
    share, n = b_share(rows)
    assert n > 7000, f"too few samples in a and b: {n}; {s['line']}"
    bound = share_bound(truth / 100, n, s)
    assert abs(share - truth) <= bound, (
        f"b's share is {share:.2f} %, not {truth:.2f} +- {bound:.2f} ({n} samples); {s['line']}")
    assert_totals_agree(s, rows[0]["count"], "1:3 split at 0.1 ms")


# The 1:3 split through one shared leaf: one_part() and three_parts() spend
# their time in spin().
SHARED_LEAF = (
    "__attribute__((noinline)) void spin(long u) "
    "{ double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink += z; }\n"
    "__attribute__((noinline)) void one_part(long u) { spin(u); sink += 1; }\n"
    "__attribute__((noinline)) void three_parts(long u) { spin(3 * u); sink += 1; }")


def shared_leaf_split(kc, magic, name):
    """Runs the 1:3 split through the shared leaf under magic (its options
    included); returns (bundle, summary, three_parts' share as the cell
    measured it)."""
    ok(kc, SHARED_LEAF)
    bundle, reply, outputs = flame(
        kc, magic + "\n" + timed_split(None, "2 * PER_MS", "2 * PER_MS", "one_part", "three_parts", cpu=3.0))
    STORE.add(bundle, name)
    return bundle, summary_of(bundle), measured_b_share(stdout(outputs))


def test_callers_view_puts_the_shared_leaf_on_the_root(kc):
    """view=callers turns the 1:3 split around: one_part() and three_parts()
    both spend their time in one leaf, spin(), which sits on the root with
    nearly every sample, and its callers above it split as the cell
    measured (about 75 %, within what the samples can tell)."""
    ok(kc, SHARED_LEAF)
    bundle, rows, s, out = profile(
        kc, "%%profview view=callers lines=false C=true\n" +
        timed_split(None, "2 * PER_MS", "2 * PER_MS", "one_part", "three_parts", cpu=3.0), "callers")
    truth = measured_b_share(out)
    root = rows[0]
    # spin's loop is where the time goes: the leaf on the root
    leaves = {r["func"]: r for r in rows if r["parent"] == root["id"]}
    assert "spin" in leaves and leaves["spin"]["count"] >= 0.9 * root["count"], (
        sorted((r["count"], f) for f, r in leaves.items())[-5:])
    above = {r["func"]: r["count"] for r in rows if r["parent"] == leaves["spin"]["id"]}
    n1, n3 = above.get("one_part", 0), above.get("three_parts", 0)
    assert n1 + n3 > 2000, f"too few samples under spin: {above}; {s['line']}"
    share, bound = 100.0 * n3 / (n1 + n3), share_bound(truth / 100, n1 + n3, s)
    assert abs(share - truth) <= bound, (
        f"three_parts' share is {share:.2f} %, not {truth:.2f} +- {bound:.2f}; {s['line']}")
    # every rendering says it is the callers' graph
    assert bundle[VL_MIME]["description"].startswith("Callers graph"), bundle[VL_MIME]["description"]
    assert "Callers: each function where time was spent" in bundle["text/plain"]
    assert "callers: each function where time was spent" in svg_of(bundle)


def test_top_view_lists_self_and_total_by_function(kc):
    """view=top on the 1:3 split through a shared leaf: spin() has nearly
    all the self time and heads the "By self:" table; one_part() and
    three_parts() have no self time of their own, and their totals split as
    the cell measured (about 75 %, within what the samples can tell). Both tables
    are in the text, and the session profile re-drawn as the flame graph
    agrees with the table."""
    bundle, s, truth = shared_leaf_split(kc, "%%profview view=top C=true", "top")
    top = top_rows_of(bundle)
    total = bundle[VL_MIME]["usermeta"]["cflame"]["total"]
    assert top["spin"]["self"] >= 0.9 * total, (top["spin"], total)
    n1, n3 = top["one_part"]["total"], top["three_parts"]["total"]
    assert top["one_part"]["self"] <= 0.02 * n1 and top["three_parts"]["self"] <= 0.02 * n3, top
    share, bound = 100.0 * n3 / (n1 + n3), share_bound(truth / 100, n1 + n3, s)
    assert abs(share - truth) <= bound, (
        f"three_parts' share is {share:.2f} %, not {truth:.2f} +- {bound:.2f}; {s['line']}")
    text = bundle["text/plain"]
    by_self = text.split("\nBy self:\n")[1].split("\n")
    assert by_self[1].split()[5] == "spin", by_self[:3]
    assert "\nBy total:\n" in text
    # The same profile as the flame graph: one_part's frame has its total.
    flame_rows = rows_of(flame(kc, "%profshow lines=false C=true minwidth=0")[0])
    drawn = sum(r["count"] for r in flame_rows if r["func"] == "one_part")
    assert drawn == n1, (drawn, n1)


def test_source_view_puts_the_time_on_the_hot_line(kc):
    """view=source on a cell with a hot loop line and a cold one (each loop
    on one line, timed by the cell): the hot line has at least 70 % of the
    profile, the two lines split as the cell measured (within what the
    samples can tell), and the cell's other lines show no self time. The
    text is a pprof list-like table of the cell's own lines; the rows name
    the cell and its lines as the cell reads."""
    code = ("%%profview view=source\n"
            "{ double t0 = thread_cpu_now(), acc = 1;\n"
            "for (long i = 0; i < 1500 * PER_MS; i++) acc = acc * 1.0000001 + 0.5;\n"
            "double t1 = thread_cpu_now();\n"
            "for (long i = 0; i < 300 * PER_MS; i++) acc = acc * 0.9999999 + 0.25;\n"
            "double t2 = thread_cpu_now(); sink += acc;\n"
            'printf("hot measured %.4f\\n", 100 * (t1 - t0) / (t2 - t0)); }')
    bundle, reply, outputs = flame(kc, code)
    STORE.add(bundle, "source")
    s = summary_of(bundle)
    truth = float(re.search(r"hot measured ([\d.]+)", stdout(outputs)).group(1))
    spec = bundle[VL_MIME]
    assert spec["usermeta"]["cflame"]["view"] == "source"
    rows = spec["layer"][0]["data"]["values"]
    cell = rows[0]["file"]
    assert rows[0]["k"] == "file" and re.fullmatch(r"cell\[\d+\]", cell), rows[0]
    lines = {r["line"]: r for r in rows if r["k"] == "line" and r["file"] == cell}
    # the cell's own lines, as written
    assert [lines[n]["text"] for n in sorted(lines)] == code.split("\n"), lines
    total = spec["usermeta"]["cflame"]["total"]
    hot, cold = lines[3]["self"], lines[5]["self"]
    assert hot >= 0.7 * total, f"the hot line has {hot} of {total}; {s['line']}"
    share, bound = 100.0 * hot / (hot + cold), share_bound(truth / 100, hot + cold, s)
    assert abs(share - truth) <= bound, (
        f"the hot line's share of the two is {share:.2f} %, not {truth:.2f} +- {bound:.2f}")
    assert lines[1]["self"] == 0 and lines[4]["self"] <= 0.01 * total, lines
    text = bundle["text/plain"]
    assert re.search(r"\n +Self +Self% +Total +Total% +Line +Source\n", text), text[:600]
    hot_line = next(line for line in text.splitlines() if line.endswith(code.split("\n")[2]))
    assert hot_line.split()[0] == f"{hot:,}" and hot_line.split()[4] == "3", hot_line


def test_source_diff_follows_an_edited_cell_line_by_line(kc):
    """A cell with two loops (one line each) is profiled with view=source,
    then edited: a comment goes in above them and the first loop is
    halved, and it runs under %%profdiffview prev view=source. The diff's
    rows are the edited cell's lines as written. Each loop's baseline is
    exactly what the first run counted on its old line, its target what
    the second run counts on its new one; the first loop shrank, and its
    two counts split as the cells measured its time (within what the
    samples can tell)."""
    def cell(magic, units, comment):
        return "\n".join([magic] + (["// the first loop, halved"] if comment else []) + [
            "{ double t0 = thread_cpu_now(), acc = 1;",
            f"for (long i = 0; i < {units} * PER_MS; i++) acc = acc * 1.0000001 + 0.5;",
            "double t1 = thread_cpu_now();",
            "for (long i = 0; i < 400 * PER_MS; i++) acc = acc * 0.9999999 + 0.25;",
            'sink += acc; printf("first loop %.6f\\n", t1 - t0); }'])

    def lines_of(bundle):
        rows = bundle[VL_MIME]["layer"][0]["data"]["values"]
        cell_file = rows[0]["file"]
        return {r["line"]: r for r in rows if r["k"] == "line" and r["file"] == cell_file}

    first_code = cell("%%profview view=source", 800, False)
    first, _, outputs = flame(kc, first_code, cell_id="source-diff")
    s = summary_of(first)
    t_first = float(re.search(r"first loop ([\d.]+)", stdout(outputs)).group(1))
    code = cell("%%profdiffview prev view=source", 400, True)
    diff, _, outputs = flame(kc, code, cell_id="source-diff")
    STORE.add(diff, "source-diff")
    t_second = float(re.search(r"first loop ([\d.]+)", stdout(outputs)).group(1))
    second, _, _ = flame(kc, "%profshow view=source")
    meta = diff[VL_MIME]["usermeta"]["cflame"]
    assert meta["view"] == "source" and meta["diff"] is True, meta
    old, new, rows = lines_of(first), lines_of(second), lines_of(diff)
    assert [rows[n]["text"] for n in sorted(rows)] == code.split("\n"), rows
    # old line 3 is new line 4 (the first loop), old 5 is new 6
    for was, now in ((3, 4), (5, 6)):
        assert rows[now]["base_total"] == old[was]["total"], (now, rows[now], old[was])
        assert rows[now]["total"] == new[now]["total"], (now, rows[now], new[now])
    assert rows[4]["change"] == "shrank" and rows[4]["delta"] < 0, rows[4]
    assert rows[2]["change"] == "", rows[2]  # the comment has no samples in either
    a_new, a_old = rows[4]["total"], rows[4]["base_total"]
    truth = t_second / (t_first + t_second)
    share, bound = 100.0 * a_new / (a_new + a_old), share_bound(truth, a_new + a_old, s)
    assert abs(share - 100 * truth) <= bound, (
        f"the halved loop has {share:.2f} % of its two runs' samples, not "
        f"{100 * truth:.2f} +- {bound:.2f}; {s['line']}")
    text = diff["text/plain"]
    assert re.search(r"\n +Delta +Target +Baseline +Change +Line +Source\n", text), text[:800]
    assert "the baseline's lines are placed where they are" in text


def test_chart_puts_phases_in_order_and_threads_in_lanes(kc):
    """view=chart of a cell whose main thread runs phase_a() and then
    phase_b() while a thread it started runs th_chart(): every bar of
    phase_a ends before the first bar of phase_b begins, each thread has a
    lane of its own with its own functions, and each lane's top bars add up
    to the thread's samples (as threads= counts them)."""
    ok(kc, r"""
__attribute__((noinline)) void phase_a(void) { double t0 = thread_cpu_now(); while (thread_cpu_now() - t0 < 0.2) calib(PER_MS / 10); }
__attribute__((noinline)) void phase_b(void) { double t0 = thread_cpu_now(); while (thread_cpu_now() - t0 < 0.3) calib(PER_MS / 10); }
__attribute__((noinline)) void *th_chart(void *p) { double t0 = thread_cpu_now(); while (thread_cpu_now() - t0 < 0.25) calib(PER_MS / 10); return NULL; }""")
    bundle, reply, outputs = flame(kc, """%%profview view=chart
pthread_t th;
pthread_create(&th, NULL, th_chart, NULL);
phase_a();
phase_b();
pthread_join(th, NULL);""")
    STORE.add(bundle, "chart")
    bars = chart_bars_of(bundle)
    lanes = {}
    for b in bars:
        lanes.setdefault(b["thread"], []).append(b)
    assert len(lanes) == 2, sorted(lanes)
    main = next(t for t, bs in lanes.items() if any(b["func"] == "phase_a" for b in bs))
    other = next(t for t in lanes if t != main)
    funcs = lambda t: {b["func"] for b in lanes[t]}  # noqa: E731
    assert {"phase_a", "phase_b"} <= funcs(main) and "th_chart" not in funcs(main), funcs(main)
    assert "th_chart" in funcs(other) and not {"phase_a", "phase_b"} & funcs(other), funcs(other)
    a_end = max(b["t1"] for b in lanes[main] if b["func"] == "phase_a")
    b_start = min(b["t0"] for b in lanes[main] if b["func"] == "phase_b")
    assert a_end <= b_start + 1e-6, (a_end, b_start)
    for t, n in ((main, 1), (other, 2)):
        drawn = sum(b["count"] for b in lanes[t] if b["depth"] == 1)
        counted = rows_of(flame(kc, f"%profshow threads={n} minwidth=0")[0])[0]["count"]
        assert drawn == counted, (t, drawn, counted)
    assert "Chart: the samples in time order" in bundle["text/plain"]


def test_sandwich_splits_a_shared_leaf_between_its_callers(kc):
    """view=sandwich focus=spin on the 1:3 split through a shared leaf:
    above spin its callers one_part and three_parts split as the cell
    measured (about 75 %, within what the samples can tell); spin is as wide as
    its total in both halves, and the title gives its total and self."""
    bundle, s, truth = shared_leaf_split(
        kc, "%%profview view=sandwich focus=spin lines=false C=true", "sandwich")
    callers, callees = sandwich_halves_of(bundle)
    meta = bundle[VL_MIME]["usermeta"]["cflame"]
    for half in (callers, callees):
        under = [r for r in half if r["parent"] == half[0]["id"]]
        assert [(r["func"], r["count"]) for r in under] == [("spin", meta["total"])], under
    spin = next(r for r in callers if r["func"] == "spin")
    above = {r["func"]: r["count"] for r in callers if r["parent"] == spin["id"]}
    n1, n3 = above.get("one_part", 0), above.get("three_parts", 0)
    share, bound = 100.0 * n3 / (n1 + n3), share_bound(truth / 100, n1 + n3, s)
    assert abs(share - truth) <= bound, (
        f"three_parts' share is {share:.2f} %, not {truth:.2f} +- {bound:.2f}; {s['line']}")
    assert meta["self"] >= 0.9 * meta["total"], meta
    assert "Sandwich of spin: total" in bundle["text/plain"]


def test_no_aliasing_with_a_period_equal_to_the_interval(kc):
    """The 1:3 split in a loop whose iteration takes exactly 1 ms of CPU
    (calibrated on the pair itself inside the profiled cell, so the
    profiler's own cost is included): still the share measured, within what the samples can tell. Without
    jittered intervals every sample would land at the same point of the
    loop. With them, consecutive samples' phases in the loop are a random
    walk, which spreads the estimate up to 1.35 times as wide as independent
    samples would (bench/alias_sim.py, k=1 and 1.1), and the bound says so. (8 s
    of CPU: the bound is then about 2.6 points.)"""
    bundle, rows, s, out = profile(kc, r"""%%profview
long al_q = iters_per_ms() / 4; /* a(q) + b(q): 4q iterations, 1 ms */
/* The pair itself, timed as it runs here (profiled, beside whatever else
 * the machine runs), sets q: a calibration of the bare loop alone can be
 * off by a third on a busy machine. */
for (int r = 0; r < 3; r++) {
  double t0 = cpu_now();
  for (int k = 0; k < 100; k++) { a(al_q); b(al_q); }
  al_q = (long)(al_q * 0.1 / (cpu_now() - t0));
}
double al_t0 = cpu_now();
""" + timed_split(8000, "al_q", "al_q") + r"""
printf("%.4f ms per iteration\n", (cpu_now() - al_t0) / 8000 * 1e3);""", "aliasing")
    period = float(re.search(r"([\d.]+) ms per iteration", out).group(1))
    assert 0.8 <= period <= 1.25, f"the loop's period should be about 1 ms of CPU, it is {period} ms"
    truth = measured_b_share(out)
    share, n = b_share(rows)
    assert n > 6000, f"too few samples in a and b: {n}; {s['line']}"
    bound = share_bound(truth / 100, n, s, spread=1.35)
    assert abs(share - truth) <= bound, (
        f"b's share is {share:.2f} %, not {truth:.2f} +- {bound:.2f}, with a {period} ms loop "
        f"period ({n} samples); {s['line']}")


# ---------------------------------------------------------------- threads


def test_pthreads_are_sampled_with_their_thread(kc):
    """Two threads started by the cell, one burning 0.75 s of its CPU time,
    the other 0.25 s: each thread's share is 75 / 25 within what the
    samples can tell (share_bound), both from the rows of the thread functions (which hang on the root) and
    from threads=2 / threads=3 (the threads in creation order)."""
    ok(kc, r"""
__attribute__((noinline)) void *th_a(void *p) {
  double t0 = thread_cpu_now();
  while (thread_cpu_now() - t0 < 0.75) calib(PER_MS / 10);
  return NULL;
}
__attribute__((noinline)) void *th_b(void *p) {
  double t0 = thread_cpu_now();
  while (thread_cpu_now() - t0 < 0.25) calib(PER_MS / 10);
  return NULL;
}""")
    bundle, rows, s, out = profile(kc, """%%profview
pthread_t th1, th2;
pthread_create(&th1, NULL, th_a, NULL);
pthread_create(&th2, NULL, th_b, NULL);
pthread_join(th1, NULL);
pthread_join(th2, NULL);""", "pthreads")
    root = rows[0]
    na = sum(r["count"] for r in children(rows, root) if r["func"] == "th_a")
    nb = sum(r["count"] for r in children(rows, root) if r["func"] == "th_b")
    assert na and nb, f"the thread functions are not on the root: {[r['func'] for r in children(rows, root)]}"
    share, bound = 100.0 * na / (na + nb), share_bound(0.75, na + nb, s)
    assert abs(share - 75) <= bound, (
        f"thread A's share from the rows is {share:.2f} %, not 75 +- {bound:.2f}")
    assert_totals_agree(s, root["count"], "two threads")

    totals = {}
    for t in (2, 3):
        b2, _, _ = flame(kc, f"%profshow threads={t}")
        STORE.add(b2, f"pthreads-threads{t}")
        r2 = rows_of(b2)
        totals[t] = r2[0]["count"]
        names = {r["func"] for r in children(r2, r2[0])}
        want = "th_a" if t == 2 else "th_b"
        assert want in names, f"threads={t} shows {names}, expected {want}"
        assert ({"th_a", "th_b"} - {want}).isdisjoint(names), f"threads={t} shows {names}"
    share = 100.0 * totals[2] / (totals[2] + totals[3])
    bound = share_bound(0.75, totals[2] + totals[3], s)
    assert abs(share - 75) <= bound, (
        f"thread 2's share from threads= is {share:.2f} %, not 75 +- {bound:.2f}")


def test_openmp_threads_are_sampled(kc):
    """An OpenMP parallel loop on two threads: samples come from both. (A
    second of CPU: what starting the profiler costs a new thread, a warm-up
    unwind before its timer runs, is not in the samples, and under ASan on a
    busy machine it reached 6% of 0.44 s.)"""
    ok(kc, "%cflags -std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall -fopenmp")
    ok(kc, "%ldflags -lm -fopenmp")
    try:
        bundle, rows, s, out = profile(kc, """%%profview
#pragma omp parallel for num_threads(2) schedule(static)
for (int k = 0; k < 1000; k++) calib(PER_MS);
printf("done\\n");""", "openmp")
        assert out == "done\n"
        total = rows[0]["count"]
        assert total * s["interval"] > 0.2, s["line"]
        counts = {}
        for t in (1, 2):
            b2, _, _ = flame(kc, f"%profshow threads={t}")
            STORE.add(b2, f"openmp-threads{t}")
            counts[t] = rows_of(b2)[0]["count"]
        # schedule(static): each thread does half of the iterations.
        assert counts[2] >= 0.3 * total, f"thread 2 has {counts[2]} of {total} samples"
        assert counts[1] >= 0.3 * total, f"thread 1 has {counts[1]} of {total} samples"
        assert counts[1] + counts[2] == total, (counts, total)
        assert_totals_agree(s, total, "OpenMP")
    finally:
        ok(kc, "%cflags -std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall")
        ok(kc, "%ldflags -lm")


# ---------------------------------------------------------------- no EINTR


SLEEPS = r"""%%profview delay=DELAY
int sl_fail = 0;
burn_stop = 0;
pthread_t sl_burner;
pthread_create(&sl_burner, NULL, burner, NULL); /* keeps the profiler busy meanwhile */
for (int i = 0; i < 10; i++) {
  calib(PER_MS);                  /* some CPU time first: the thread's timer runs */
  double t0 = mono_now();
  int r = usleep(20000);
  double dt = mono_now() - t0;
  if (r != 0) { printf("usleep returned %d: %s\n", r, strerror(errno)); sl_fail++; }
  else if (dt < 0.0199) { printf("usleep(20000) returned after %.2f ms\n", dt * 1e3); sl_fail++; }
}
calib(PER_MS);
{
  double t0 = mono_now();
  int r = poll(NULL, 0, 100);
  double dt = mono_now() - t0;
  if (r != 0) { printf("poll returned %d: %s\n", r, strerror(errno)); sl_fail++; }
  else if (dt < 0.0999) { printf("poll(100 ms) returned after %.2f ms\n", dt * 1e3); sl_fail++; }
}
{
  int fds[2];
  if (pipe(fds)) { printf("pipe: %s\n", strerror(errno)); sl_fail++; }
  pthread_t w;
  pthread_create(&w, NULL, writer, &fds[1]);
  calib(PER_MS);
  char c;
  ssize_t n = read(fds[0], &c, 1);
  if (n != 1) { printf("read returned %zd: %s\n", n, strerror(errno)); sl_fail++; }
  pthread_join(w, NULL);
  close(fds[0]);
  close(fds[1]);
}
{
  struct timespec req = {0, 50000000}, rem;
  calib(PER_MS);
  if (nanosleep(&req, &rem)) { printf("nanosleep: %s\n", strerror(errno)); sl_fail++; }
}
burn_stop = 1;
pthread_join(sl_burner, NULL);
printf("failures: %d\n", sl_fail);"""


@pytest.mark.parametrize("delay", ["0.001", "0.0001"])
def test_sampling_causes_no_eintr(kc, delay):
    """Sleeps (usleep in 20 ms steps, poll with a 100 ms timeout, a blocking
    read of a pipe, nanosleep) while another thread of the cell burns CPU,
    all profiled: every call returns as it would unprofiled, none with
    EINTR, none early."""
    bundle, rows, s, out = profile(kc, SLEEPS.replace("DELAY", delay), f"eintr-{delay}")
    assert out == "failures: 0\n", out
    # 10 x 20 ms + 100 ms + 50 ms + 50 ms of sleeping, at least.
    assert s["wall"] is not None and s["wall"] >= 0.4, s["line"]
    assert s["samples"] > 0, s["line"]


# ---------------------------------------------------------------- stacks through libc


def test_qsort_comparator_shows_under_qsort(kc):
    """qsort (in Debian's libc, built without frame pointers) calls a
    comparator defined in an earlier cell. With C=true the comparator's
    frames have qsort (or its internals) below them, and under that the
    cell's top-level scope; with C=false (the default) the comparator sits
    directly on top-level scope, whose status says system-library frames
    were folded into it."""
    ok(kc, r"""
__attribute__((noinline)) int qs_cmp(const void *x, const void *y) {
  double u = *(const double *)x, v = *(const double *)y;
  return (u > v) - (u < v);
}
int QS_N = 1000000;
double *qs_v;""")
    bundle, rows, s, out = profile(kc, """%%profview C=true
qs_v = malloc(QS_N * sizeof *qs_v);
for (int r = 0; r < 2; r++) {
  for (int i = 0; i < QS_N; i++) qs_v[i] = rand();
  qsort(qs_v, QS_N, sizeof *qs_v, qs_cmp);
}""", "qsort-C")
    index = by_id(rows)
    root = rows[0]
    cmps = [r for r in rows if r["func"] == "qs_cmp"]
    assert cmps, "the comparator does not appear"
    in_cmp = sum(r["count"] for r in cmps if not any(p["func"] == "qs_cmp" for p in ancestors(rows, r, index)))
    # A real share of the sort, the weight of the topmost qsort frames that
    # it is part of: about 25% here, about 11% in the sanitizer build, whose
    # interceptors slow libc's copying inside qsort. Lost comparator frames
    # would give none.
    sort_rx = re.compile(r"qsort|msort|quicksort|introsort|heapsort|insertion_sort")
    in_sort = sum(r["count"] for r in rows if sort_rx.search(r["func"]) and
                  not any(sort_rx.search(p["func"]) for p in ancestors(rows, r, index)))
    assert in_sort > 0 and in_cmp >= 0.05 * in_sort, \
        f"the comparator has {in_cmp} of the sort's {in_sort} samples ({root['count']} in all)"
    sortish = re.compile(r"qsort|msort|quicksort|introsort|heapsort|insertion_sort")
    for r in cmps:
        chain = ancestors(rows, r, index)
        names = [p["func"] for p in chain]
        k = next((i for i, p in enumerate(chain) if sortish.search(p["func"])), None)
        assert k is not None, f"a comparator frame without qsort under it: {names}"
        # glibc's qsort; in a sanitizer build the runtime intercepts qsort
        # and its interceptor (in libasan) is the frame that calls back.
        assert re.search(r"libc|libasan", chain[k]["module"] or ""), chain[k]
        assert any(p["func"] == "top-level scope" for p in chain[k + 1:]), (
            f"qsort is not under the cell's top-level scope: {names}")
    # The stacks are complete: hardly anything is cut short.
    cut = sum(r["count"] for r in rows if r["func"] == "[incomplete stack]")
    assert cut <= 0.02 * root["count"], f"{cut} of {root['count']} samples have incomplete stacks"

    # The same profile with C=false (the default).
    b2, _, _ = flame(kc, "%profshow")
    STORE.add(b2, "qsort-noC")
    rows2 = rows_of(b2)
    index2 = by_id(rows2)
    cmps2 = [r for r in rows2 if r["func"] == "qs_cmp"]
    assert cmps2, "the comparator does not appear with C=false"
    assert not any("libc" in (r["module"] or "") for r in rows2), "C=false shows libc frames"
    for r in cmps2:
        parent = index2[r["parent"]]
        assert parent["func"] == "top-level scope", f"qs_cmp hangs under {parent['func']}"
        assert parent["status"] & 1, f"top-level scope's status {parent['status']} lacks bit 1"


# ---------------------------------------------------------------- every spec renders


def test_zz_every_spec_passes_check_spec():
    """Every flame graph produced above validates against the Vega-Lite 5
    schema, compiles with no warnings and renders (check_spec.mjs)."""
    STORE.check()
