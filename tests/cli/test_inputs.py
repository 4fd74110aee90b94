# SPDX-License-Identifier: BSD-3-Clause
"""Many inputs on the cflame command line (docs/CLI.md, "Many inputs"):
merged into one profile, or each under a root of its own (--per-input),
and --diff between two of them, as two MPI ranks' profiles would be. The
inputs mix formats: folded stacks, perf script text, pprof. And what is
not an input (docs/CLI.md, "Inputs"): devices, FIFOs, directories, inputs
past the limit on their size and gzip bombs.

Environment as tests/cli/test_cli.py's (tests/CMakeLists.txt).
"""
import json
import os
import subprocess

import pytest

from cflame_bundle import frames_of
from pprof_write import profile
from test_cli import CFLAME, DATA, cflame, check_spec, folded_counts, ok


def ranks(tmp_path):
    """Two ranks' profiles: rank 0 folded stacks, rank 1 pprof."""
    r0, r1 = tmp_path / "prof.0.folded", tmp_path / "prof.1.folded"
    r0.write_text("solver;main;solve 300\nsolver;main;exchange 100\n")
    r1.write_text("solver;main;solve 200\nsolver;main;exchange 200\n")
    ok(r1, "-o", tmp_path / "prof.1.pb.gz")
    return r0, tmp_path / "prof.1.pb.gz"


def test_inputs_merge_by_default(tmp_path):
    r0, r1 = ranks(tmp_path)
    assert folded_counts(ok("-f", "folded", r0, r1)) == {
        "solver;main;solve": 500, "solver;main;exchange": 300}


def test_per_input_draws_each_under_its_own_root(tmp_path):
    r0, r1 = ranks(tmp_path)
    assert folded_counts(ok("-f", "folded", "--per-input", r0, r1)) == {
        f"{r0};solver;main;solve": 300, f"{r0};solver;main;exchange": 100,
        f"{r1};solver;main;solve": 200, f"{r1};solver;main;exchange": 200}
    out = tmp_path / "ranks.vl.json"
    ok("--per-input", r0, r1, "-o", out)
    rows = frames_of(json.loads(out.read_text()))
    roots = {r["func"]: r for r in rows if r["depth"] == 1}
    assert set(roots) == {str(r0), str(r1)}
    assert roots[str(r0)]["count"] == 400 and roots[str(r1)]["count"] == 400
    check_spec(out)
    # standard input is named so; the same file twice is one root, doubled
    both = folded_counts(ok("-f", "folded", "--per-input", r0, "-", stdin=r0.read_text()))
    assert both[f"{r0};solver;main;solve"] == 300 and both["standard input;solver;main;solve"] == 300
    twice = folded_counts(ok("-f", "folded", "--per-input", r0, r0))
    assert twice[f"{r0};solver;main;solve"] == 600
    # a perf capture among them keeps its own roots (process names) below
    mixed = folded_counts(ok("-f", "folded", "--per-input", r0, DATA / "single.txt"))
    assert all(s.startswith(f"{DATA / 'single.txt'};workload") for s in mixed
               if not s.startswith(str(r0)))


def test_diff_of_two_ranks(tmp_path):
    r0, r1 = ranks(tmp_path)
    rows = {r["func"]: r for r in
            frames_of(json.loads(ok("-f", "vegalite", "--diff", r0, r1)))}
    assert rows["exchange"]["change"] == "grew" and rows["exchange"]["base"] == 100
    assert rows["solve"]["change"] == "shrank" and rows["solve"]["count"] == 200
    assert ok("-f", "folded", "--diff", r0, r1).splitlines() == [
        "solver;main;exchange 100 200", "solver;main;solve 300 200"]


def test_per_input_top_tells_same_named_functions_apart(tmp_path):
    """--per-input --view top: solve and exchange of each rank are rows of
    their own, each naming its input, in the text, the SVG and the Vega-Lite
    spec (which the real vega-lite renders)."""
    ranks(tmp_path)
    names = ("prof.0.folded", "prof.1.pb.gz")
    text = ok("--per-input", "--view", "top", "-f", "text", *names, cwd=tmp_path)
    for func in ("solve", "exchange"):
        for name in names:
            assert f"  {func} ({name})" in text, text
    assert "  solve  " not in text and "  exchange  " not in text, text
    svg = ok("--per-input", "--view", "top", "-f", "svg", *names, cwd=tmp_path)
    assert ">solve (prof.0.folded)" in svg and ">solve (prof.1.pb.gz)" in svg, svg[:2000]
    ok("--per-input", "--view", "top", *names, "-o", "top.vl.json", cwd=tmp_path)
    out = tmp_path / "top.vl.json"
    values = json.loads(out.read_text())["layer"][0]["data"]["values"]
    froms = sorted((v["func"], v["from"]) for v in values if v["func"] in ("solve", "exchange"))
    assert froms == sorted((f, n) for f in ("solve", "exchange") for n in names), froms
    check_spec(out)
    # merged, a function of the two inputs is one row
    merged = ok("--view", "top", "-f", "text", *names, cwd=tmp_path)
    assert "%  solve\n" in merged and "(prof.0.folded)" not in merged, merged


def test_per_input_and_diff_do_not_mix(tmp_path):
    r0, r1 = ranks(tmp_path)
    r = cflame("--per-input", "--diff", r0, r1)
    assert r.returncode == 2 and "--per-input with --diff" in r.stderr, r.stderr


def test_a_cpu_and_an_allocation_profile_do_not_merge(tmp_path):
    """A pprof allocation profile (made from Go's heap profile's format by
    hand here: alloc_space in bytes) is not added to CPU samples."""
    r0, _ = ranks(tmp_path)
    heap = tmp_path / "heap.pb.gz"
    heap.write_bytes(alloc_pprof())
    assert ok("-f", "text", heap).splitlines()[0] == "Total: 64 B in 2 allocations"
    r = cflame(r0, heap)
    assert r.returncode == 1
    assert f"cannot add {heap}, an allocation profile, to a CPU profile" in r.stderr, r.stderr


def alloc_pprof():
    """A gzipped pprof of one allocation sample: alloc_objects/count 2,
    alloc_space/bytes 64, in main.grow."""
    return profile(["main.grow"], [([0], [2, 64])],
                   sample_type=[("alloc_objects", "count"), ("alloc_space", "bytes")], gzipped=True)


# ---- what is not an input ----

def capped(*args, stdin=None, timeout=60):
    """cflame under `prlimit --as` (4 GiB; none under ASan, whose shadow
    memory reserves terabytes), so that a runaway read ends the command,
    not the machine."""
    cap = [] if os.environ.get("CFLAME_SANITIZED") else ["prlimit", f"--as={4 << 30}"]
    return subprocess.run([*cap, CFLAME, *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=timeout)


def refused(r, what):
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert what in r.stderr, r.stderr
    assert "only regular files are read, or - for standard input" in r.stderr, r.stderr


def test_a_device_is_not_read(tmp_path):
    refused(capped("/dev/zero"), "/dev/zero is a character device")
    good = tmp_path / "good.folded"
    good.write_text("main;work 3\n")
    refused(capped("--diff", "/dev/zero", good), "/dev/zero is a character device")
    refused(capped(good, "--diff", "/dev/urandom"), "/dev/urandom is a character device")


def test_a_directory_is_not_read(tmp_path):
    refused(capped(tmp_path), f"{tmp_path} is a directory")


def test_a_fifo_without_writer_is_not_waited_for(tmp_path):
    fifo = tmp_path / "stacks.folded"
    os.mkfifo(fifo)
    try:
        refused(capped(fifo, timeout=30), f"{fifo} is a FIFO")
    finally:
        try:  # a command blocked in open() gets a writer, then end of file
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def test_standard_input_is_read_up_to_the_limit():
    text = "main;work 3\nmain;rest 1\n"
    assert folded_counts(ok("-f", "folded", "-", stdin=text)) == {"main;work": 3, "main;rest": 1}
    r = capped("-f", "folded", "--max-input-size", "10", "-", stdin=text)
    assert r.returncode == 1, r.stderr
    assert "standard input holds more than the limit of 10 bytes" in r.stderr, r.stderr
    assert "--max-input-size" in r.stderr, r.stderr


def test_a_file_past_the_limit_is_not_read(tmp_path):
    big = tmp_path / "big.folded"
    big.write_text("main;work 3\n" * 100)
    r = capped("--max-input-size", "1K", big)
    assert r.returncode == 1, r.stderr
    assert f"{big} is 1200 bytes, more than the limit of 1 KiB" in r.stderr, r.stderr
    assert "--max-input-size SIZE" in r.stderr, r.stderr
    ok("-f", "folded", "--max-input-size", "2K", big)
    for bad in ("lots", "0", "-1", "1X", "99999999999999999999"):
        r = cflame("--max-input-size", bad, big)
        assert r.returncode == 2 and f"--max-input-size {bad}" in r.stderr, (bad, r.stderr)


@pytest.fixture(scope="module")
def gzip_bomb(tmp_path_factory):
    """A 1.3 MB .pb.gz of 1.25 GiB of zeros: past the default limit of 1 GiB."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.pb.gz"
    subprocess.run(f"head -c {1280 << 20} /dev/zero | gzip -9 > {path}", shell=True, check=True)
    return path


def test_a_gzip_bomb_stops_at_the_limit(gzip_bomb, tmp_path):
    r = capped(gzip_bomb, "-o", tmp_path / "out.svg", timeout=120)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"{gzip_bomb} is gzip data that unzips to more than the limit of 1 GiB" in r.stderr, \
        r.stderr
    assert "--max-input-size SIZE" in r.stderr, r.stderr
    assert not (tmp_path / "out.svg").exists()
    r = capped("--max-input-size", "64M", gzip_bomb)
    assert r.returncode == 1 and "more than the limit of 64 MiB" in r.stderr, r.stderr
    # as --diff's BASE too
    r = capped("--diff", gzip_bomb, DATA / "single.folded", timeout=120)
    assert r.returncode == 1 and "unzips to more than the limit of 1 GiB" in r.stderr, r.stderr


def test_inputs_at_different_rates_merge_by_time(tmp_path):
    """1 s of CPU sampled at 1 kHz and 0.25 s at 4 kHz are 80/20 of
    1.25 s, whichever comes first; the graph's note says the rates
    differed and what a count is."""
    fast, slow = tmp_path / "fast.pb", tmp_path / "slow.pb"
    slow.write_bytes(profile(["main", "a"], [([1, 0], 1000 * 1000000)],
                             period_type=("cpu", "nanoseconds"), period=1000000))
    fast.write_bytes(profile(["main", "b"], [([1, 0], 1000 * 250000)],
                             period_type=("cpu", "nanoseconds"), period=250000))
    for order in ((slow, fast), (fast, slow)):
        assert folded_counts(ok("-f", "folded", *order)) == {"main;a": 4000, "main;b": 1000}
        svg = ok("-f", "svg", *order)
        assert ("inputs sampled at different intervals, merged by time: each count is an "
                "interval of 0.25 ms") in svg, svg[:2000]
    # one rate: nothing to say
    assert "merged by time" not in ok("-f", "svg", slow, slow)


def test_a_saved_diff_is_refused_as_one_profile(tmp_path):
    """A diff saved as folded stacks ("stack BASE TARGET") does not read
    back as a profile whose frames end in a count: it is refused, with
    what it is and how to compare."""
    base, target = tmp_path / "base.folded", tmp_path / "target.folded"
    base.write_text("p;main;a 50\np;main;b 5\n")
    target.write_text("p;main;a 10\np;main;c 7\n")
    d = tmp_path / "d.folded"
    ok("--diff", base, target, "-o", d)
    assert "p;main;a 50 10" in d.read_text()
    r = cflame("-f", "text", d)
    assert r.returncode != 0 and r.stdout == ""
    assert "ends in two counts: this is a diff's folded stacks" in r.stderr, r.stderr
    assert "--diff BASE TARGET" in r.stderr


def test_counts_past_pprof_values_are_refused_not_clamped(tmp_path):
    """pprof's values are int64: a count past 2^63 - 1 is an error naming
    the limit and a format that holds it, never written as another."""
    big = tmp_path / "big.folded"
    big.write_text(f"main;a {2**64 - 1}\n")
    r = cflame(big, "-o", tmp_path / "big.pb.gz")
    assert r.returncode != 0 and not (tmp_path / "big.pb.gz").exists()
    assert f"do not fit pprof's values, which go to {2**63 - 1}" in r.stderr, r.stderr
    # the largest that fits is written and reads back as it was
    fits = tmp_path / "fits.folded"
    fits.write_text(f"main;a {2**63 - 1}\n")
    ok(fits, "-o", tmp_path / "fits.pb.gz")
    assert folded_counts(ok("-f", "folded", tmp_path / "fits.pb.gz")) == {"main;a": 2**63 - 1}


def test_a_programs_own_library_stays_its_own_through_pprof(tmp_path):
    """A library of the program's (libfoo.so outside the system's
    directories, from perf script) is the program's code, not the
    system's, after a trip through pprof too: with system libraries
    folded (--no-C) its frames stay."""
    perf = tmp_path / "own.perf"
    perf.write_text("prog 1234 5678.901234: 250000 cpu-clock:\n"
                    "\t4011d6 foo_work+0x16 (/home/u/build/libfoo.so)\n"
                    "\t7f0010 qsort+0x20 (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
                    "\t401000 main+0x10 (/home/u/build/prog)\n\n")
    pb = tmp_path / "own.pb.gz"
    ok(perf, "--minwidth", "0", "-o", pb)
    want = {"prog;main;foo_work": 1}
    assert folded_counts(ok("-f", "folded", "--no-C", perf)) == want
    assert folded_counts(ok("-f", "folded", "--no-C", pb)) == want
    # and the module keeps its name
    assert "libfoo.so" in ok("-f", "text", "--view", "top", pb)
