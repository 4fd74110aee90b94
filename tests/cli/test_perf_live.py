# SPDX-License-Identifier: BSD-3-Clause
"""A real perf recording, taken by the test itself, through cflame.

Compiles tests/data/perf/workload.c (main -> outer -> middle -> leaf),
records it with `perf record -g` (Debian's linux-perf), prints it with
`perf script`, and checks what `cflame --format folded` makes of it: the
known functions in their caller order, and counts that add up to the
number of samples perf script printed.

Where this machine does not allow perf_event (perf record fails with a
permission error) or has no perf, the test says so on stdout and checks the
captures checked in under tests/data/perf instead, which were recorded the
same way. With CFLAME_STACKCOLLAPSE_PL set to a copy of FlameGraph's
stackcollapse-perf.pl, the live capture's folded stacks are also compared
with the script's, byte for byte (it is not part of cflame).

Run with pytest -s, so that what the test says reaches stdout.
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

CFLAME = os.environ.get("CFLAME_BIN", "build/bin/cflame")
DATA = Path(os.environ.get("CFLAME_TEST_DATA", "tests/data")) / "perf"
CC = os.environ.get("CC", "cc")


def run(*args, **kw):
    return subprocess.run(list(map(str, args)), capture_output=True, text=True, timeout=120, **kw)


def cflame_folded(path):
    r = run(CFLAME, "--format", "folded", "--no-lines", path)
    assert r.returncode == 0, r.stderr
    return r.stdout


def sample_headers(perf_text):
    """The samples perf script printed: their header lines."""
    return [l for l in perf_text.splitlines() if l and not l[0].isspace() and l[0] != "#"]


def check_caller_order(folded, perf_text, leaf_share):
    counts = {}
    for line in folded.splitlines():
        stack, _, n = line.rpartition(" ")
        counts[stack] = counts.get(stack, 0) + int(n)
    # Every sample is one count: they add up to the samples perf printed.
    assert sum(counts.values()) == len(sample_headers(perf_text))
    # The process name is the root of every stack: the name its sample's
    # header gives, which for the first samples of a run can still be the
    # recorder's own ("perf-exec", before the exec completes).
    comms = {re.match(r"(.*?)\s+\d+(?:/\d+)?\s", h).group(1) for h in sample_headers(perf_text)}
    roots = {s.split(";")[0] for s in counts}
    assert roots <= comms, (roots, comms)
    assert "workload" in roots, roots
    # leaf runs under middle under outer under main, in that order, and
    # at least leaf_share of the samples are there. (A sample in leaf's first two instructions,
    # before it has pushed its frame pointer, misses middle: rare, allowed.)
    in_leaf = {s: n for s, n in counts.items() if "leaf" in s.split(";")}
    assert in_leaf, folded
    complete = 0
    for stack, n in in_leaf.items():
        frames = stack.split(";")
        i = frames.index("leaf")
        assert "outer" in frames[:i] and frames.index("main") < frames.index("outer"), stack
        complete += n * (frames[i - 3:i] == ["main", "outer", "middle"])
    assert complete >= 0.95 * sum(in_leaf.values()), folded
    assert sum(in_leaf.values()) >= leaf_share * sum(counts.values())


def perf_unavailable(tmp_path):
    """Why perf cannot record here, or None."""
    if not shutil.which("perf"):
        return "perf is not installed (Debian package linux-perf)"
    r = run("perf", "record", "-g", "-o", tmp_path / "probe.data", "true")
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[0]
        if re.search(r"perf_event|[Pp]ermission|paranoid|not permitted|EACCES", r.stderr):
            return f"perf record is not permitted on this machine ({why})"
        raise AssertionError(f"perf record -g failed: {r.stderr}")
    return None


def test_perf_record_through_cflame(tmp_path):
    why = perf_unavailable(tmp_path)
    if why:
        print(f"\nNOTE: {why}; checking the checked-in captures of tests/data/perf instead "
              "of a live recording")
        for name in ("single", "srcline"):
            text = (DATA / f"{name}.txt").read_text()
            check_caller_order(cflame_folded(DATA / f"{name}.txt"), text, 0.3)  # 30 ms of 100
        assert cflame_folded(DATA / "single.txt") == (DATA / "single.folded").read_text()
        return

    exe = tmp_path / "workload"
    r = run(CC, "-O2", "-g", "-fno-omit-frame-pointer", "-o", exe, DATA / "workload.c")
    assert r.returncode == 0, r.stderr
    r = run("perf", "record", "-g", "-o", tmp_path / "perf.data", exe, "200", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with open(tmp_path / "workload.perf", "w") as out:
        r = subprocess.run(["perf", "script", "-i", str(tmp_path / "perf.data")], stdout=out,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "workload.perf").read_text()
    folded = cflame_folded(tmp_path / "workload.perf")
    check_caller_order(folded, text, 0.5)  # 200 ms in leaf, about 30 elsewhere
    print(f"\nrecorded {len(sample_headers(text))} samples with perf record -g; cflame folded "
          f"them into {len(folded.splitlines())} stacks")

    script = os.environ.get("CFLAME_STACKCOLLAPSE_PL")
    if script:
        r = run("perl", script, tmp_path / "workload.perf")
        assert r.returncode == 0, r.stderr
        assert folded == r.stdout
        print(f"identical to {script}'s output")
    else:
        print("CFLAME_STACKCOLLAPSE_PL not set: not compared with stackcollapse-perf.pl here "
              "(tests/unit/test_io.c compares the checked-in captures)")
