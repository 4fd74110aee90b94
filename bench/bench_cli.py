#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The cflame command line on a large profile (docs/PERFORMANCE.md).

Generates a folded stacks file of 10^6 samples in 10^5 distinct stacks
(deterministic: a fixed seed), then times, side by side:

  cflame --format svg INPUT -o OUT.svg
  cflame --format vegalite INPUT -o OUT.vl.json
  cflame --format pprof INPUT -o OUT.pb.gz       (pprof write)
  cflame --format svg OUT.pb.gz -o OUT2.svg      (pprof read, and drawn)
  perl flamegraph.pl INPUT > OUT.svg       (when FLAMEGRAPH_PL names a copy)
  cflame --view V --format vegalite LINES.folded -o OUT.vl.json
                                           (each view V of the same stacks
                                           with a source line on each frame;
                                           the chart of TIMED.pb.gz, a pprof
                                           file of the same stacks as 10^6
                                           samples, each with a time stamp
                                           and a thread)
  cflame --format vegalite TIMED.pb.gz     ("timed pprof": the chart's
                                           yardstick)
  cflame --format F TIMED.pb.gz -o OUT     (F pprof, speedscope, trace: the
                                           10^6 timed samples written in
                                           each data format; speedscope's
                                           and the trace's time against
                                           pprof's, the same reading in all
                                           three; target: no slower)

Each is run --runs times (flamegraph.pl --pl-runs times, it is slow), the
runs interleaved; the figures are the median wall-clock time and the peak
resident memory of each (the child's ru_maxrss). The targets: cflame
does each in at most 1 s, and draws the SVG and the Vega-Lite spec at
least 20 times faster than flamegraph.pl on the same input. The pprof
file read is the one pprof write makes (10^5 samples, one per distinct
stack, weighing 10^6 in all), written once before the rounds. Nothing here
asserts: the table says which targets were met. Raw timings go to --json.

The profile. Stacks are paths in a random call tree: a few thousand
function names (C-like, "module_name_function" of 12 to 40 characters),
each function calling a handful of others (its callees fixed by a hash of
its name, so the tree looks like a program's), stack depths uniform in
5..40, callees picked with a skew so that stacks share prefixes as real ones
do. Counts are heavy-tailed (a few stacks hold most samples) and add up to
exactly --samples.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parent.parent

TARGET_SECONDS = 1.0
TARGET_RATIO = 20.0
VIEWS = ("flame", "callers", "top", "source", "chart", "sandwich")
EXPORTS = {"pprof": ".pb.gz", "speedscope": ".speedscope.json", "trace": ".trace.json"}

WORDS = ("alloc buffer cache chunk decode encode entry fetch flush frame hash heap index "
         "insert lookup merge node parse query queue read reduce render scan schedule "
         "send sort split stream table task tree update write yield").split()
MODULES = ("core net io db json http ui gfx math text sched mem log auth zip crypto "
           "kv rpc fs vm").split()


def function_names(rng, n):
    names = set()
    while len(names) < n:
        parts = [rng.choice(MODULES)] + rng.sample(WORDS, rng.randint(1, 3))
        name = "_".join(parts)
        if rng.random() < 0.3:
            name += f"_{rng.randint(2, 99)}"
        names.add(name)
    return sorted(names)


def generate(path, samples, stacks, names, seed):
    """Writes the folded file; returns (lines, samples, distinct functions)."""
    rng = random.Random(seed)
    funcs = function_names(rng, names)
    fanout = 6
    callees = {}

    def callees_of(f):
        c = callees.get(f)
        if c is None:
            r = random.Random(f"{seed}:{f}")
            c = callees[f] = [funcs[r.randrange(len(funcs))] for _ in range(fanout)]
        return c

    roots = funcs[:8]
    seen = set()
    out = []
    while len(out) < stacks:
        depth = rng.randint(5, 40)
        frame = roots[min(int(rng.expovariate(1.0)), len(roots) - 1)]
        stack = [frame]
        for _ in range(depth - 1):
            k = min(int(rng.expovariate(0.9)), fanout - 1)  # skewed: shared prefixes
            frame = callees_of(frame)[k]
            stack.append(frame)
        text = ";".join(stack)
        if text not in seen:
            seen.add(text)
            out.append(text)
    # Heavy-tailed counts, at least 1 each, adding up to exactly `samples`.
    weights = [1.0 / (i + 1) ** 0.9 for i in range(stacks)]
    rng.shuffle(weights)
    spare = samples - stacks
    scale = spare / sum(weights)
    counts = [1 + int(w * scale) for w in weights]
    short = samples - sum(counts)
    for i in range(short):
        counts[i % stacks] += 1
    assert sum(counts) == samples
    with open(path, "w") as f:
        for text, count in zip(out, counts):
            f.write(f"{text} {count}\n")
    return len(out), sum(counts), len({f for s in out for f in s.split(";")})


# ---- a pprof file of the same stacks, each sample on its own with a time
# stamp and a thread, and each frame at a source line: what the views that
# need them (source, chart) read. Encoded by hand: protobuf's wire format is
# varints and length-delimited fields (profile.proto's field numbers).

def _varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, payload):
    """A length-delimited field."""
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def _int_field(num, n):
    return _varint(num << 3) + _varint(n)


def write_timed_pprof(path, folded, threads, seed):
    """Writes path: folded's stacks and counts as one sample a count, in a
    random order 1 ms apart, on `threads` threads (thread_id labels), each
    function at one line of a file named after its module."""
    import gzip
    rng = random.Random(seed)
    strings = {"": 0}

    def sid(s):
        return strings.setdefault(s, len(strings))

    funcs, stacks, counts = {}, [], []
    for line in folded.read_text().splitlines():
        text, count = line.rsplit(" ", 1)
        stack = [funcs.setdefault(f, len(funcs) + 1) for f in text.split(";")]
        stacks.append(_field(1, b"".join(_varint(i) for i in reversed(stack))))
        counts.append(int(count))
    body = bytearray()
    body += _field(1, _int_field(1, sid("samples")) + _int_field(2, sid("count")))
    order = [k for k, c in enumerate(counts) for _ in range(c)]
    rng.shuffle(order)
    key_t, key_ns, key_th = sid("timestamp_ns"), sid("nanoseconds"), sid("thread_id")
    one = _field(2, _varint(1))
    for i, k in enumerate(order):
        labels = (_field(3, _int_field(1, key_t) + _int_field(3, 10**9 + i * 10**6) +
                         _int_field(4, key_ns)) +
                  _field(3, _int_field(1, key_th) + _int_field(3, 1 + k % threads)))
        body += _field(2, stacks[k] + one + labels)
    for name, i in funcs.items():
        file, number = source_line(name)
        body += _field(4, _int_field(1, i) + _field(4, _int_field(1, i) + _int_field(2, number)))
        body += _field(5, _int_field(1, i) + _int_field(2, sid(name)) + _int_field(4, sid(file)))
    body += _field(11, _int_field(1, sid("cpu")) + _int_field(2, sid("nanoseconds")))
    body += _int_field(12, 10**6)
    for s in strings:  # insertion order is the index order
        body += _field(6, s.encode())
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(bytes(body))


def source_line(func):
    """The made-up place of a function: a line of a file named after its
    module."""
    return f"src/{func.split('_', 1)[0]}.c", 10 + zlib_crc(func) % 500


def with_lines(folded, path):
    """folded's stacks with each frame at its source_line, "func (file:line)"."""
    with open(path, "w") as out:
        for line in folded.read_text().splitlines():
            text, count = line.rsplit(" ", 1)
            frames = ["%s (%s:%d)" % (f, *source_line(f)) for f in text.split(";")]
            out.write(";".join(frames) + " " + count + "\n")


def zlib_crc(s):
    import zlib
    return zlib.crc32(s.encode())


def timed(argv, stdout_path=None):
    """Runs argv; returns (seconds, peak RSS in MiB). Fails on a non-zero exit."""
    out = open(stdout_path, "wb") if stdout_path else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
    finally:
        if stdout_path:
            out.close()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, argv))} failed ({proc.returncode}):\n{err}")
    return seconds, usage.ru_maxrss / 1024.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(REPO / "build"), help="cflame build tree")
    ap.add_argument("--samples", type=int, default=10**6)
    ap.add_argument("--stacks", type=int, default=10**5)
    ap.add_argument("--names", type=int, default=3000, help="distinct function names")
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pl-runs", type=int, default=1, help="runs of flamegraph.pl")
    ap.add_argument("--json", help="write every timing here")
    args = ap.parse_args()

    cflame = pathlib.Path(args.build) / "bin" / "cflame"
    if not cflame.exists():
        raise SystemExit(f"no {cflame}: build cflame first (scripts/bench builds it)")
    pl = os.environ.get("FLAMEGRAPH_PL")
    if pl and not pathlib.Path(pl).exists():
        raise SystemExit(f"FLAMEGRAPH_PL={pl}: no such file")

    with tempfile.TemporaryDirectory(prefix="cflame-bench-cli-") as tmp:
        tmp = pathlib.Path(tmp)
        folded = tmp / "bench.folded"
        t0 = time.perf_counter()
        lines, total, funcs = generate(folded, args.samples, args.stacks, args.names, args.seed)
        size_mb = folded.stat().st_size / 1e6
        print(f"input: {lines:,} distinct stacks, {total:,} samples, {funcs:,} functions, "
              f"{size_mb:.1f} MB (generated in {time.perf_counter() - t0:.1f} s, seed {args.seed})")

        pprof = tmp / "out.pb.gz"
        timed([cflame, "--format", "pprof", folded, "-o", pprof])  # what "pprof read" reads
        lines_folded = tmp / "lines.folded"
        with_lines(folded, lines_folded)
        timed_pb = tmp / "timed.pb.gz"
        t0 = time.perf_counter()
        # In a child, so that this process does not grow by what it takes:
        # a command's peak RSS counts the pages it was forked with.
        pid = os.fork()
        if pid == 0:
            write_timed_pprof(timed_pb, folded, 4, args.seed)
            os._exit(0)
        if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
            raise SystemExit("could not write the timed pprof file")
        n_timed = total
        print(f"views' input: the same stacks as {n_timed:,} samples with time stamps, 4 threads "
              f"and source lines, {timed_pb.stat().st_size / 1e6:.1f} MB of pprof "
              f"(generated in {time.perf_counter() - t0:.1f} s)")
        # The function most samples pass through below the roots, for the
        # sandwich: the first frame of the heaviest stack's second level.
        heavy = max(folded.read_text().splitlines(), key=lambda l: int(l.rsplit(" ", 1)[1]))
        focus = heavy.split(";")[1]
        cases = {
            "cflame svg": ([cflame, "--format", "svg", folded, "-o", tmp / "out.svg"], None),
            "cflame vegalite": ([cflame, "--format", "vegalite", folded, "-o", tmp / "out.vl.json"],
                                None),
            "pprof write": ([cflame, "--format", "pprof", folded, "-o", pprof], None),
            "pprof read": ([cflame, "--format", "svg", pprof, "-o", tmp / "pprof.svg"], None),
        }
        # Each view to its Vega-Lite spec: from the folded stacks with a
        # line on every frame, and the chart, which needs time stamps, from
        # the pprof file of the same samples one by one (the flame graph of
        # that file, "timed pprof", is its yardstick: most of it is reading).
        for view in VIEWS:
            extra = ["--focus", focus] if view == "sandwich" else []
            source = timed_pb if view == "chart" else lines_folded
            cases[f"view {view}"] = ([cflame, "--view", view, *extra, "--format", "vegalite",
                                      source, "-o", tmp / f"view-{view}.vl.json"], None)
        cases["timed pprof"] = ([cflame, "--format", "vegalite", timed_pb, "-o",
                                 tmp / "timed.vl.json"], None)
        for fmt, ending in EXPORTS.items():
            cases[f"timed -> {fmt}"] = ([cflame, "--format", fmt, timed_pb, "-o",
                                         tmp / f"export{ending}"], None)
        if pl:
            cases["flamegraph.pl"] = (["perl", pl, folded], tmp / "pl.svg")
        times = {name: [] for name in cases}
        rss = {name: [] for name in cases}
        # Rounds, each running every command once (flamegraph.pl only in
        # the first --pl-runs rounds), so that a change in the machine's
        # load falls on all of them.
        for i in range(max(args.runs, args.pl_runs if pl else 0)):
            for name, (argv, stdout) in cases.items():
                if i >= (args.pl_runs if name == "flamegraph.pl" else args.runs):
                    continue
                s, m = timed(argv, stdout)
                times[name].append(s)
                rss[name].append(m)
        sizes = {f"view {v}": (tmp / f"view-{v}.vl.json").stat().st_size for v in VIEWS}
        sizes["timed pprof"] = (tmp / "timed.vl.json").stat().st_size
        for fmt, ending in EXPORTS.items():
            sizes[f"timed -> {fmt}"] = (tmp / f"export{ending}").stat().st_size
        sizes |= {"cflame svg": (tmp / "out.svg").stat().st_size,
                 "cflame vegalite": (tmp / "out.vl.json").stat().st_size,
                 "pprof write": pprof.stat().st_size,
                 "pprof read": (tmp / "pprof.svg").stat().st_size}
        if pl:
            sizes["flamegraph.pl"] = (tmp / "pl.svg").stat().st_size

    load = os.getloadavg()
    med = {name: statistics.median(v) for name, v in times.items()}
    print()
    print(f"{'command':<18} {'median s':>9} {'runs':>5} {'peak RSS':>9} {'output':>9}  target")
    pl_s = med.get("flamegraph.pl")
    for name in times:
        if name == "flamegraph.pl":
            target = "(reference)"
        else:
            ok_time = med[name] <= TARGET_SECONDS
            target = f"<= {TARGET_SECONDS:g} s: {'met' if ok_time else 'MISSED'}"
            if name in ("timed -> speedscope", "timed -> trace"):
                ratio = med[name] / med["timed -> pprof"]
                target += (f"; {ratio:.2f}x pprof's time (<= 1x: "
                           f"{'met' if ratio <= 1 else 'MISSED'})")
            elif name.startswith("pprof") or name.startswith("view") or name.startswith("timed"):
                pass
            elif pl_s:
                ratio = pl_s / med[name]
                met = "met" if ratio >= TARGET_RATIO else "MISSED"
                target += f"; {ratio:.0f}x faster than flamegraph.pl (>= {TARGET_RATIO:g}x: {met})"
            else:
                target += "; flamegraph.pl: not measured (set FLAMEGRAPH_PL to a copy)"
        print(f"{name:<18} {med[name]:>9.3f} {len(times[name]):>5} "
              f"{max(rss[name]):>6.0f} MB {sizes[name] / 1e6:>6.2f} MB  {target}")
    if not pl:
        print("\nflamegraph.pl: not measured; set FLAMEGRAPH_PL=/path/to/flamegraph.pl to compare")
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} "
          f"on {os.cpu_count()} CPUs")

    if args.json:
        doc = {
            "when": datetime.datetime.now().isoformat(timespec="seconds"),
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                        "loadavg_end": load},
            "input": {"stacks": lines, "samples": total, "functions": funcs, "mb": size_mb,
                      "seed": args.seed},
            "seconds": times,
            "peak_rss_mb": rss,
            "output_bytes": sizes,
            "flamegraph_pl": pl,
        }
        pathlib.Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
