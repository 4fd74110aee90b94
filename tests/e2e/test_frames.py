"""What the frames of a profile are called (docs/PROFILING.md, "Every frame
of a cell has a name"): the benchmarks game's C programs, pasted into cells
as docs/USAGE.md says, leave no "[unknown]" frame in cell code, and at most
0.5 % of samples with one anywhere.

About the bounds. Whether a sample lands in an unnamed stub is a coin
flipped at each sample, so the count of samples with an "[unknown]" frame is
binomial: the test asks whether the count seen is one that a share of
0.5 % (the bound the docs promise) makes unlikely, with a one-sided
binomial test at the 10^-4 level. With some 4,000 samples a run, that
fails a share of 1 % (which the docs' bound must not allow) almost surely,
and passes a share of 0.5 % or less but once in 10^4 runs.
"""
import math
import os
import pathlib

import pytest

from conftest import ancestors, by_id, flame, ok, rows_of, start_kernel

WORKLOADS = pathlib.Path(__file__).resolve().parent / "workloads"

# (file, the name main gets, arguments, runs): each about 0.3-0.4 s of CPU.
BENCHMARKS = [
    ("binarytrees.c", "bt_main", "16", 1),
    ("nbody.c", "nbody_main", "3500000", 1),
    ("spectralnorm.c", "spectralnorm_main", "2500", 1),
    ("fannkuchredux.c", "fannkuch_main", "10", 2),
]

UNKNOWN_SHARE = 0.005  # the most the docs allow
ALPHA = 1e-4           # the chance that the test fails a share within it


def kernel():
    """A kernel of the test's own, its address space capped (but under the
    sanitizers, whose shadow memory needs terabytes of it)."""
    return start_kernel(memory=None if os.environ.get("CFLAME_SANITIZED") else 4 << 30)


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
    under %%profview: at most 0.5 % of its samples have an unnamed frame
    (calls through the procedure linkage table are named NAME@plt)."""
    program = (WORKLOADS / source).read_text()
    with kernel() as (km, kc):
        ok(kc, f"#define main {name}\n{program}\n#undef main", timeout=60)
        bundle, reply, outputs = flame(
            kc, f"%%profview delay=0.0001\nchar *args[] = {{\"{name}\", \"{arg}\", 0}};\n"
                f"for (int r = 0; r < {runs}; r++) {name}(2, args);", timeout=180)
    rows = rows_of(bundle)
    total = max(r["count"] for r in rows)
    assert total >= 1000, f"{source}: too few samples to judge ({total}): {bundle['text/plain'][:300]}"
    unknown, where = unknown_samples(rows)
    p = binomial_sf(unknown, total, UNKNOWN_SHARE)
    assert p >= ALPHA, (
        f"{source}: {unknown} of {total} samples ({100 * unknown / total:.2f} %) have an [unknown] "
        f"frame; a share of {100 * UNKNOWN_SHARE} % gives that many with probability {p:.1e}: "
        + "; ".join(where))
    # Every address in a cell's object has a name: none there is unknown.
    in_cells = [r for r in rows if r["func"] == "[unknown]" and (r["module"] or "").startswith("cell[")]
    assert not in_cells, f"{source}: unnamed code in a cell: " + "; ".join(where)
