# SPDX-License-Identifier: BSD-3-Clause
"""Saving and loading profiles through the kernel (docs/PROFILING.md,
"Saving and loading profiles"): %profsave in every format
(.svg, .html, .vl.json, .folded, .txt, .pb.gz, .speedscope.json, .trace.json,
for plain and diff graphs),
and %profload of folded stacks, `perf script` text and pprof, into the
session profile or as a baseline, with the errors a user gets for bad
files. What the kernel writes as pprof is read by `go tool pprof` (Debian's
golang-go) too.

The readers and writers themselves are tested in tests/unit/test_io.c and
through the cflame CLI in tests/cli/; here what matters is what a notebook
user sees.
"""
import collections
import contextlib
import gzip
import json
import os
import pathlib
import re
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from conftest import (MEMORY_CAP, SOURCE_DIR, VL_MIME, SpecStore, ancestors, collect,
                      control_request, fails, flame, ok, open_files, rows_of, send, start_kernel,
                      svg_of, svg_of_file)

STORE = SpecStore("files")
PERF_DATA = SOURCE_DIR / "tests" / "data" / "perf"

DEFS = r"""
static volatile double sink;
__attribute__((noinline)) void leaf(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink += z; }
__attribute__((noinline)) void middle(long u) { leaf(u); leaf(u); }
__attribute__((noinline)) void other(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.25; sink += z; }
"""


@pytest.fixture(scope="module")
def kernel():
    with start_kernel() as (km, kc):
        ok(kc, DEFS)
        yield km, kc


def show(kc, code, name):
    bundle, reply, outputs = flame(kc, code)
    STORE.add(bundle, name)
    return bundle, rows_of(bundle), reply


def shape(rows):
    """The tree as a user reads it, without the root (whose name says where
    the profile came from): a multiset of (path of names, file, line,
    count)."""
    index = {r["id"]: r for r in rows}

    def path(r):
        out = []
        while r["parent"] is not None:
            out.append(r["func"])
            r = index[r["parent"]]
        return tuple(reversed(out))

    return collections.Counter((path(r), r["file"], r["line"], r["count"])
                               for r in rows if r["parent"] is not None)


def folded_lines(path):
    out = []
    for line in pathlib.Path(path).read_text().splitlines():
        # " N" with no frames is the root's own weight (samples taken in the
        # kernel's machinery around the cell), as flamegraph.pl reads it.
        m = re.fullmatch(r"(.*) (\d+)", line)
        assert m, f"not a folded line: {line!r}"
        out.append((m.group(1), int(m.group(2))))
    return out


PROFILED = "%%profview\nfor (int i = 0; i < 60; i++) { middle(300000); other(300000); }"


# ---------------------------------------------------------------- %profsave


def test_profsave_html_is_a_standalone_page_with_the_svg_inline(kc, tmp_path):
    bundle, rows, _ = show(kc, PROFILED, "html")
    html = tmp_path / "graph.html"
    out = ok(kc, f"%profsave {html}")
    assert f"Saved {html}" in out, out
    page = html.read_text()
    assert page.lstrip().lower().startswith("<!doctype html>"), page[:100]
    # The kernel's SVG, as sent in the bundle (its script too).
    assert svg_of(bundle) in page
    # It loads nothing from anywhere: the SVG is interactive by itself.
    assert " src=" not in page and "<link" not in page and "<script><![CDATA[" in page
    # The spec is in the page (escaped so that nothing in it ends a script).
    assert '"$schema"' in page and "vega-lite/v5" in page
    assert "</script" not in page.split("<script", 2)[-1].split(">", 1)[1].split("</script")[0]


def test_profsave_png_and_pdf_are_pictures_of_the_graph(kc, tmp_path):
    """%profsave x.png draws the graph's SVG at 192 dpi (twice its pixels),
    dpi=96 at its own size, and x.pdf is one page the SVG's size in points;
    any view is drawn so (view=top here)."""
    import struct
    import xml.etree.ElementTree as ET
    bundle, _, _ = show(kc, PROFILED, "png")
    root = ET.fromstring(svg_of(bundle))
    w, h = int(float(root.get("width"))), int(float(root.get("height")))
    size = lambda p: struct.unpack(">II", p.read_bytes()[16:24])  # noqa: E731
    ok(kc, f"%profsave {tmp_path / 'g.png'}")
    assert (tmp_path / "g.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert size(tmp_path / "g.png") == (2 * w, 2 * h)
    ok(kc, f"%profsave {tmp_path / 'small.png'} dpi=96")
    assert size(tmp_path / "small.png") == (w, h)
    ok(kc, f"%profsave {tmp_path / 'g.pdf'}")
    pdf = (tmp_path / "g.pdf").read_bytes()
    box = re.search(rb"/MediaBox \[ *0 0 ([\d.]+) ([\d.]+) *\]", pdf)
    assert pdf[:5] == b"%PDF-" and box, pdf[:400]
    assert abs(float(box[1]) - 0.75 * w) <= 1 and abs(float(box[2]) - 0.75 * h) <= 1, box[0]
    ok(kc, f"%profsave {tmp_path / 'top.png'} view=top")
    assert (tmp_path / "top.png").stat().st_size > 1000


def test_profsave_folded_round_trips_through_profload(kc, tmp_path):
    """%profsave x.folded writes every sample of the graph as folded
    stacks; %profload x.folded reads them back into the session profile,
    and the graph drawn from it is the same tree: the same frames, files,
    lines and counts."""
    show(kc, PROFILED, "round-trip-before")
    before = flame(kc, "%profshow minwidth=0")[0]
    folded = tmp_path / "x.folded"
    ok(kc, f"%profsave {folded}")
    lines = folded_lines(folded)
    total = rows_of(before)[0]["count"]
    assert sum(c for _, c in lines) == total, (sum(c for _, c in lines), total)
    # Root first, lines on: "top-level scope (cell[N]:L);middle (cell[M]:L);leaf (...)".
    assert all(s.startswith("top-level scope (cell[") for s, _ in lines if s), lines[:3]
    assert any(re.search(r";middle \(cell\[\d+\]:\d+\);leaf \(cell\[\d+\]:\d+\)$", s)
               for s, _ in lines), lines[:5]
    out = ok(kc, f"%profload {folded}")
    assert "Loaded" in out and "folded stacks" in out and "session profile" in out, out
    # A loaded profile is drawn by function; lines=true gives the same tree back.
    by_func = rows_of(flame(kc, "%profshow minwidth=0")[0])
    assert all(r["line"] == 0 for r in by_func[1:]), by_func[:3]
    after = flame(kc, "%profshow minwidth=0 lines=true")[0]
    STORE.add(after, "round-trip-after")
    assert shape(rows_of(after)) == shape(rows_of(before))
    # A second save of the loaded profile, by line, gives the same file.
    again = tmp_path / "again.folded"
    ok(kc, f"%profsave {again} lines=true")
    assert again.read_text() == folded.read_text()


def test_profsave_folded_follows_the_drawn_options(kc, tmp_path):
    show(kc, PROFILED, "folded-options")
    by_func = tmp_path / "f.folded"
    ok(kc, f"%profsave {by_func} lines=false")
    lines = folded_lines(by_func)
    assert all("(" not in s for s, _ in lines), lines[:3]
    assert ("top-level scope;middle;leaf" in {s for s, _ in lines}), lines


def test_profsave_svg_vegalite_txt_of_a_diff_and_its_folded_has_two_counts(kc, tmp_path):
    ok(kc, "%%profbase files_base\nfor (int i = 0; i < 200; i++) { middle(300000); other(100000); }")
    bundle, rows, _ = show(kc, "%%profdiffview files_base\n"
                               "for (int i = 0; i < 200; i++) { middle(50000); other(300000); }",
                           "diff-save")
    assert "change" in rows[0]
    svg, vl, txt, html, folded = (tmp_path / f"d.{e}" for e in ("svg", "vl.json", "txt", "html",
                                                                "folded"))
    for p in (svg, vl, txt, html, folded):
        ok(kc, f"%profsave {p}")
    # The file is the output's SVG, with a line for viewers that run no
    # script (an <img>) saying to open it in a browser.
    assert svg_of_file(svg.read_text()) == svg_of(bundle)
    ET.parse(svg)
    assert json.loads(vl.read_text()) == bundle[VL_MIME]
    assert "files_base" in txt.read_text()
    assert svg_of(bundle) in html.read_text()
    # difffolded.pl's format: "stack BASELINE TARGET", by function (lines=false)
    # so that the two cells' statements meet.
    rows3 = []
    for line in folded.read_text().splitlines():
        m = re.fullmatch(r"(.*) (\d+) (\d+)", line)
        assert m, f"not a two-count folded line: {line!r}"
        rows3.append((m.group(1), int(m.group(2)), int(m.group(3))))
    stacks = {s: (b, t) for s, b, t in rows3}
    leaf, oth = stacks["top-level scope;middle;leaf"], stacks["top-level scope;other"]
    # middle() runs leaf() twice, so within each run leaf and other split
    # 6:1, then 1:3: shares, which a busy machine's slower second run does
    # not move as it moves counts, and far enough apart that the few dozen
    # samples of an ASan run cannot swap them (the second run's leaf
    # drawing half its samples is four standard deviations out).
    assert leaf[0] > oth[0] and oth[1] > leaf[1], (leaf, oth)  # leaf shrank, other grew
    lined = tmp_path / "lines.folded"
    ok(kc, f"%profsave {lined} lines=true")
    assert re.search(r"^top-level scope \(cell\[\d+\]:\d+\);", lined.read_text(), re.M)


def go_tool_pprof(tmp_path, *args):
    """`go tool pprof ARGS`, Go's files in tmp_path."""
    go = shutil.which("go")
    assert go, "go is missing: install Debian's golang-go (scripts/deps.sh lists it)"
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"), GOENV="off")
    r = subprocess.run([go, "tool", "pprof", *map(str, args)], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_profsave_pprof_round_trips_through_profload(kc, tmp_path):
    """%profsave x.pb.gz writes the graph as pprof (gzipped profile.proto),
    which go tool pprof reads with the cell's functions, files and lines;
    %profload x.pb.gz reads it back into the same tree."""
    show(kc, PROFILED, "pprof-before")
    before = flame(kc, "%profshow minwidth=0")[0]
    saved = tmp_path / "x.pb.gz"
    out = ok(kc, f"%profsave {saved}")
    assert f"Saved {saved}" in out, out
    assert saved.read_bytes()[:2] == b"\x1f\x8b"
    top = go_tool_pprof(tmp_path, "-top", "-lines", "-nodefraction=0", saved)
    assert re.search(r"\bleaf cell\[\d+\]:\d+", top), top
    assert "Type: cpu" in top, top
    out = ok(kc, f"%profload {saved}")
    assert "Loaded" in out and "(pprof, interval read from the file)" in out, out
    after = flame(kc, "%profshow minwidth=0 lines=true")[0]
    STORE.add(after, "pprof-after")
    assert shape(rows_of(after)) == shape(rows_of(before))
    # pprof keeps how long the run lasted, not its CPU time: the summary
    # says the one it knows
    summary = next(line for line in after["text/plain"].splitlines() if " samples " in line)
    assert "the run lasted" in summary and " s CPU," not in summary, summary
    # saved again, the loaded profile gives the same samples, locations,
    # functions and mappings (the comment names where it came from)
    again = tmp_path / "again.pb.gz"
    ok(kc, f"%profsave {again}")

    def raw(path):
        return [line for line in go_tool_pprof(tmp_path, "-raw", path).splitlines()
                if not line.startswith("Comment:")]

    assert raw(again) == raw(saved)


def test_profsave_speedscope_and_trace_round_trip_through_profload(kc, tmp_path):
    """%profsave x.speedscope.json and x.trace.json write the graph for
    speedscope and the trace viewers: a profile (a track) per thread, the
    cell's functions in it; %profload reads each back into the same tree
    (the trace's by function: its events are the time chart's bars)."""
    show(kc, PROFILED, "exports-before")
    before = flame(kc, "%profshow minwidth=0")[0]
    speedscope = tmp_path / "x.speedscope.json"
    assert f"Saved {speedscope}" in ok(kc, f"%profsave {speedscope}")
    by_function = flame(kc, "%profshow minwidth=0 lines=false")[0]
    trace = tmp_path / "x.trace.json"
    assert f"Saved {trace}" in ok(kc, f"%profsave {trace}")
    doc = json.loads(speedscope.read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json", doc.keys()
    assert doc["profiles"] and all(
        p["type"] == "sampled" and p["unit"] == "nanoseconds" and p["name"].startswith("thread ")
        for p in doc["profiles"]), [p["name"] for p in doc["profiles"]]
    assert {"leaf", "other"} <= {f["name"] for f in doc["shared"]["frames"]}
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e["ph"] == "M" and e["name"] == "thread_name" for e in events), events[:3]
    assert {"leaf", "other"} <= {e["name"] for e in events if e["ph"] == "X"}
    assert "Loaded" in ok(kc, f"%profload {speedscope}")
    after = flame(kc, "%profshow minwidth=0 lines=true")[0]
    STORE.add(after, "speedscope-after")
    assert shape(rows_of(after)) == shape(rows_of(before))

    def named(rows):
        return collections.Counter((path, count) for path, _, _, count in shape(rows).elements())

    assert "Loaded" in ok(kc, f"%profload {trace}")
    after = flame(kc, "%profshow minwidth=0 lines=false")[0]
    STORE.add(after, "trace-after")
    assert named(rows_of(after)) == named(rows_of(by_function))


def test_profsave_pprof_of_allocations_and_of_a_diff(kc, tmp_path):
    bundle = flame(kc, "%%profallocs sample_rate=1\n"
                       "for (int i = 0; i < 100; i++) { char *volatile p = malloc(1000); "
                       "free(p); }")[0]
    STORE.add(bundle, "pprof-allocs")
    saved = tmp_path / "allocs.pb.gz"
    ok(kc, f"%profsave {saved}")
    raw = go_tool_pprof(tmp_path, "-raw", saved)
    assert "alloc_objects/count alloc_space/bytes" in raw, raw
    out = ok(kc, f"%profload {saved}")
    assert "Loaded an allocation profile" in out and "bytes" in out, out
    rows = rows_of(flame(kc, "%profshow minwidth=0")[0])
    assert rows[0]["count"] >= 100 * 1000 and rows[0]["allocs"] >= 100, rows[0]
    # a diff is two profiles, and a pprof file holds one
    ok(kc, "%%profbase pp_base\nfor (int i = 0; i < 50; i++) middle(300000);")
    flame(kc, "%%profdiffview pp_base\nfor (int i = 0; i < 50; i++) other(300000);")
    reply, _ = fails(kc, f"%profsave {tmp_path / 'diff.pb.gz'}", "MagicError")
    assert "a pprof file holds one profile" in reply["evalue"], reply["evalue"]
    assert not (tmp_path / "diff.pb.gz").exists()


def test_profload_of_two_kinds_draws_each_by_kind(kc, tmp_path):
    """A pprof file of two kinds (CPU time split 1:3 between one and three,
    samples of 1 ms; bytes split 1:3 between small and big; its last sample
    type, bytes, the format's default) loads as one profile: the graph draws the bytes and
    says what else it holds, kind=cpu the CPU time, %profsave kind=cpu
    saves it, and a kind it does not hold is refused naming those it
    does; %profload says which kinds it holds."""
    from pprof_write import profile  # (tests/lib)
    ms = 1_000_000
    data = profile(["main", "one", "three", "small", "big"],
                   [([1, 0], [1, ms, 0, 0])] * 10 + [([2, 0], [1, ms, 0, 0])] * 30
                   + [([3, 0], [0, 0, 4, 1000]), ([4, 0], [0, 0, 4, 3000])],
                   sample_type=[("samples", "count"), ("cpu", "nanoseconds"),
                                ("alloc_objects", "count"), ("alloc_space", "bytes")],
                   gzipped=True)
    path = tmp_path / "two.pb.gz"
    path.write_bytes(data)
    said = ok(kc, f"%profload {path}")
    assert ("Its kinds: allocated bytes (kind=alloc_bytes); also holds: CPU time (kind=cpu)."
            in said), said

    def counts(bundle):
        return {r["func"]: r["count"] for r in rows_of(bundle) if r["parent"] is not None}

    bundle = flame(kc, "%profshow minwidth=0")[0]
    STORE.add(bundle, "two-kinds-bytes")
    got = counts(bundle)
    assert (got["small"], got["big"]) == (1000, 3000) and "one" not in got, got
    assert ("allocated bytes (kind=alloc_bytes); also holds: CPU time (kind=cpu)"
            in bundle["text/plain"]), bundle["text/plain"]
    bundle = flame(kc, "%profshow minwidth=0 kind=cpu")[0]
    STORE.add(bundle, "two-kinds-cpu")
    got = counts(bundle)
    assert (got["one"], got["three"]) == (10, 30) and "small" not in got, got
    saved = tmp_path / "cpu.folded"
    ok(kc, f"%profsave {saved} kind=cpu")
    assert sorted(folded_lines(saved)) == [("main;one", 10), ("main;three", 30)]
    reply, _ = fails(kc, "%profshow kind=live_bytes", "MagicError")
    assert ("the profile holds no bytes still allocated at the end (live_bytes); choose cpu "
            "(CPU time) or alloc_bytes (allocated bytes)") in reply["evalue"], reply["evalue"]
    reply, _ = fails(kc, "%profshow kind=heap", "MagicError")
    assert "kind=heap is not valid; choose cpu, wall, offcpu, alloc_bytes" in reply["evalue"]


def test_profload_bad_pprof_names_the_file(kc, tmp_path):
    show(kc, PROFILED, "before-bad-pprof")
    good = tmp_path / "good.pb.gz"
    ok(kc, f"%profsave {good}")
    cut = tmp_path / "cut.pb.gz"
    cut.write_bytes(good.read_bytes()[:40])
    reply, _ = fails(kc, f"%profload {cut}", "MagicError")
    assert str(cut) in reply["evalue"] and "truncated" in reply["evalue"], reply["evalue"]
    foreign = tmp_path / "foreign.pb.gz"
    foreign.write_bytes(gzip.compress(bytes(range(1, 255))))
    reply, _ = fails(kc, f"%profload {foreign}", "MagicError")
    assert f"{foreign} is gzip-compressed, but not a pprof profile" in reply["evalue"]


def test_profsave_bad_paths(kc, tmp_path):
    show(kc, PROFILED, "bad-paths")
    reply, _ = fails(kc, f"%profsave {tmp_path / 'x.jpeg'}", "MagicError")
    for ext in (".svg", ".html", ".vl.json", ".folded", ".txt", ".pb.gz", ".speedscope.json",
                ".trace.json", ".png", ".pdf"):
        assert ext in reply["evalue"], reply["evalue"]
    missing = tmp_path / "no" / "such" / "dir" / "x.svg"
    reply, _ = fails(kc, f"%profsave {missing}", "MagicError")
    assert str(missing) in reply["evalue"] and "No such file" in reply["evalue"], reply["evalue"]
    assert not missing.parent.exists()


# ---------------------------------------------------------------- %profload


def test_profload_perf_script_gives_the_graph_of_stackcollapse_perf(kc):
    """A `perf script` capture loads into the same graph as the folded
    stacks Brendan Gregg's stackcollapse-perf.pl made of it (checked-in
    capture and output; see tests/data/perf/README)."""
    out = ok(kc, f"%profload {PERF_DATA / 'threads.txt'}")
    assert "perf script" in out and "threads.txt" in out, out
    from_perf = flame(kc, "%profshow minwidth=0 C=true")[0]
    STORE.add(from_perf, "perf-threads")
    rows = rows_of(from_perf)
    names = {r["func"] for r in rows}
    assert {"hash_worker", "sort_worker", "hash_block", "start_thread"} <= names, names
    ok(kc, f"%profload {PERF_DATA / 'threads.folded'}")
    from_folded = flame(kc, "%profshow minwidth=0 C=true")[0]
    paths = lambda rows: collections.Counter({k[0]: k[3] for k in shape(rows)})  # noqa: E731
    assert paths(rows) == paths(rows_of(from_folded))
    text = ok(kc, "%profprint C=true")
    assert "hash_block" in text and "samples" in text, text


def test_profload_per_input_top_tells_the_inputs_apart(kc, tmp_path):
    """%profload A B per_input=true, then view=top: diffuse and advect of
    each input are rows of their own, each naming its input, in the
    Vega-Lite data and table, the SVG and the text."""
    a, b = tmp_path / "A.folded", tmp_path / "B.folded"
    a.write_text("solver;main;diffuse 30\nsolver;main;advect 10\n")
    b.write_text("solver;main;diffuse 20\nsolver;main;advect 25\n")
    ok(kc, f"%profload {a} {b} per_input=true")
    bundle = flame(kc, "%profshow view=top")[0]
    values = bundle[VL_MIME]["layer"][0]["data"]["values"]
    rows = sorted((v["func"], v.get("from"), v["self"]) for v in values
                  if v["func"] in ("diffuse", "advect"))
    assert rows == [("advect", str(a), 10), ("advect", str(b), 25),
                    ("diffuse", str(a), 30), ("diffuse", str(b), 20)], rows
    text = bundle["text/plain"]
    assert text.count("diffuse (") == 4 and text.count("advect (") == 4, text  # two tables
    svg = next(v for k, v in bundle.items() if "svg" in k or k == "text/markdown")
    assert svg.count("<title>diffuse (") == 2, svg[:3000]


def test_profload_of_two_runs_gives_each_its_duration(kc, tmp_path):
    """Two runs saved as pprof (which keeps how long each lasted) and loaded
    together: the header gives each input's duration, not their sum as if
    the two were one run."""
    def summary(bundle):
        return next(line for line in bundle["text/plain"].splitlines() if " samples " in line)

    paths, lasted = [], []
    for name, loops in (("A.pb.gz", 30), ("B.pb.gz", 60)):
        show(kc, f"%%profview\nfor (int i = 0; i < {loops}; i++) middle(300000);", name)
        paths.append(tmp_path / name)
        ok(kc, f"%profsave {paths[-1]}")
        ok(kc, f"%profload {paths[-1]}")
        alone = summary(flame(kc, "%profshow")[0])
        lasted.append(re.search(r"the run lasted ([\d.]+) s", alone).group(1))
    ok(kc, f"%profload {paths[0]} {paths[1]}")
    both = summary(flame(kc, "%profshow")[0])
    assert "the run lasted" not in both, both
    assert (f"each input's run: {paths[0]} lasted {lasted[0]} s; {paths[1]} lasted {lasted[1]} s"
            in both), (both, lasted)


def func_counts(bundle):
    """Each function's count in the graph, over the frames it has."""
    out = collections.Counter()
    for r in rows_of(bundle):
        out[r["func"]] += r["count"]
    return out


def test_profiles_at_different_rates_merge_by_time(kc, tmp_path):
    """A cell profiled at delay=0.001 and another at delay=0.0001, each
    saved: loaded together, each weighs the time its samples stand for (in
    intervals of 0.1 ms, as the header says), not its count of samples."""
    counts = {}
    for name, delay, func in (("slow", "0.001", "slow_part"), ("fast", "0.0001", "fast_part")):
        ok(kc, f"__attribute__((noinline)) double {func}(long n) "
               "{ double z = 0; for (long k = 0; k < n; k++) z += k * 0.5; return z; }")
        show(kc, f"%%profview delay={delay} lines=false\n"
                 f"double s_{name} = 0; for (int i = 0; i < 200; i++) s_{name} += {func}(300000);",
             f"rate-{name}")
        ok(kc, f"%profsave {tmp_path / name}.pb.gz")
        counts[name] = func_counts(flame(kc, "%profshow lines=false")[0])
    out = ok(kc, f"%profload {tmp_path / 'slow'}.pb.gz {tmp_path / 'fast'}.pb.gz")
    assert ("inputs sampled at different intervals, merged by time: each count is an interval "
            "of 0.1 ms") in out, out
    bundle = flame(kc, "%profshow lines=false")[0]
    merged = func_counts(bundle)
    # the 1 ms profile's samples weigh ten each, the 0.1 ms one's one
    assert merged["slow_part"] == 10 * counts["slow"]["slow_part"], (merged, counts)
    assert merged["fast_part"] == counts["fast"]["fast_part"], (merged, counts)
    assert "merged by time" in bundle["text/plain"], bundle["text/plain"][:600]


def test_a_filter_that_leaves_no_sample_says_so_in_every_view(kc):
    """threads= naming a thread without samples, and a filter= that matches
    no function: each view says which filter left nothing and what it was
    matched against (the threads there are, the functions), the chart (which
    has no lanes to draw) as the magic's error; the kernel answers on."""
    show(kc, PROFILED, "empty-filter")
    for view in ("flame", "callers", "top", "source"):
        bundle = flame(kc, f"%profshow view={view} threads=9")[0]
        text = bundle["text/plain"]
        assert re.search(r"threads=9 leaves no sample: the profile's threads are 1 "
                         r"(\([^)]*\) )?with [\d,]+ samples", text), (view, text[:600])
        svg = bundle["text/markdown"]
        assert "threads=9 leaves no sample" in svg, (view, svg[:2000])
        assert "threads=9 leaves no sample" in json.dumps(bundle[VL_MIME]), view
    reply, _ = fails(kc, "%profshow view=chart threads=9", "MagicError")
    assert "threads=9 leaves no sample" in reply["evalue"], reply["evalue"]
    printed = ok(kc, "%profprint threads=9")
    assert "threads=9 leaves no sample: the profile's threads are 1 " in printed, printed
    text = flame(kc, "%profshow filter=no_such_function")[0]["text/plain"]
    assert re.search(r"filter=no_such_function leaves no sample: none of the profile's \d+ "
                     r"functions contains \"no_such_function\"", text), text[:600]
    # a filter that keeps samples says nothing of the kind
    assert "leaves no sample" not in flame(kc, "%profshow threads=1")[0]["text/plain"]


def test_profload_as_baseline_and_profdiffview_on_the_session(kc, tmp_path):
    base, target = tmp_path / "base.folded", tmp_path / "target.folded"
    base.write_text("main;work;slow 300\nmain;work;fast 100\nmain;gone 50\n")
    target.write_text("main;work;slow 100\nmain;work;fast 300\nmain;fresh 50\n")
    out = ok(kc, f"%profload {base} as=old_run")
    assert "baseline old_run" in out, out
    assert "old_run" in ok(kc, "%profbase")
    ok(kc, f"%profload {target}")
    bundle, reply, outputs = flame(kc, "%profdiffview old_run")
    STORE.add(bundle, "loaded-diff")
    rows = {r["func"]: r for r in rows_of(bundle)}
    assert rows["slow"]["change"] == "shrank" and rows["slow"]["base"] == 300
    assert rows["fast"]["change"] == "grew" and rows["fast"]["count"] == 300
    assert rows["fresh"]["change"] == "new"
    assert "gone" in bundle["text/plain"]  # vanished frames are listed
    folded = tmp_path / "diff.folded"
    ok(kc, f"%profsave {folded}")
    assert set(folded.read_text().splitlines()) == {
        "main;fresh 0 50", "main;gone 50 0", "main;work;fast 100 300", "main;work;slow 300 100"}


def test_profload_malformed_file_names_file_and_line_and_keeps_the_session(kc, tmp_path):
    bundle, rows, reply = show(kc, PROFILED, "before-bad-load")
    cell = reply["execution_count"]
    bad = tmp_path / "bad.folded"
    bad.write_text("main;a 3\nmain;b 4\nmain;c lots\n")
    reply, outputs = fails(kc, f"%profload {bad}", "MagicError")
    assert f"{bad}:3:" in reply["evalue"], reply["evalue"]
    assert "COUNT" in reply["evalue"] and "main;c lots" in reply["evalue"], reply["evalue"]
    # Nothing was loaded: the session profile is still the cell's.
    again = flame(kc, "%profshow")[0]
    assert any(r["module"] == f"cell[{cell}]" for r in rows_of(again))
    missing = tmp_path / "missing.folded"
    reply, _ = fails(kc, f"%profload {missing}", "MagicError")
    assert str(missing) in reply["evalue"] and "No such file" in reply["evalue"], reply["evalue"]
    # And the session's definitions are all there.
    assert ok(kc, 'middle(10); printf("still here\\n");') == "still here\n"


def test_profload_many_files_merged_or_each_its_own_root(kc, tmp_path):
    rank0, rank1 = tmp_path / "rank0.folded", tmp_path / "rank1.folded"
    rank0.write_text("main;solve 30\nmain;exchange 10\n")
    rank1.write_text("main;solve 20\nmain;exchange 40\n")
    ok(kc, f"%profload {rank0} {rank1}")
    rows = rows_of(flame(kc, "%profshow")[0])
    by_path = {tuple(r["func"] for r in ancestors(rows, row)[::-1][1:]) + (row["func"],): row
               for row in rows if row["parent"] is not None}
    assert by_path[("main", "solve")]["count"] == 50 and by_path[("main",)]["count"] == 100
    out = ok(kc, f"%profload {rank0} {rank1} per_input=true")
    assert "Loaded 100 samples" in out, out
    bundle = flame(kc, "%profshow")[0]
    STORE.add(bundle, "per-input")
    rows = rows_of(bundle)
    roots = {r["func"]: r for r in rows if r["depth"] == 1}
    assert set(roots) == {str(rank0), str(rank1)}, roots
    assert roots[str(rank0)]["count"] == 40 and roots[str(rank1)]["count"] == 60
    exchange = [r for r in rows if r["func"] == "exchange"]
    assert sorted(r["count"] for r in exchange) == [10, 40]
    reply, _ = fails(kc, f"%profload {rank0} per_input=maybe", "MagicError")
    assert "per_input=maybe" in reply["evalue"] and "true or false" in reply["evalue"]


def test_profload_input_format_names_the_reader(kc, tmp_path):
    """input_format= (the command's --input-format) reads a file as the
    format it names instead of telling it by content: folded stacks read
    as speedscope are refused by the JSON reader, and a word that names no
    format is refused with the valid ones; nothing loaded is lost."""
    f = tmp_path / "run.folded"
    f.write_text("main;solve 30\nmain;exchange 10\n")
    assert "Loaded 40 samples" in ok(kc, f"%profload {f} input_format=folded")
    reply, _ = fails(kc, f"%profload {f} input_format=speedscope", "MagicError")
    assert "not valid JSON" in reply["evalue"], reply["evalue"]
    reply, _ = fails(kc, f"%profload {f} input_format=xml", "MagicError")
    assert "input_format=xml" in reply["evalue"], reply["evalue"]
    assert "folded, perf, pprof, speedscope or trace" in reply["evalue"], reply["evalue"]
    rows = rows_of(flame(kc, "%profshow")[0])
    assert sum(r["count"] for r in rows if r["func"] == "solve") == 30, rows


@pytest.mark.parametrize("args, words", [
    ("", ["PATH", "perf script", "pprof", "as=NAME", "per_input=true"]),
    ("x.folded colour=red", ["colour", "as", "per_input", "max_input_size"]),
    ('x.folded as="two words"', ["baseline name", "letters"]),
    ("x.folded as=a;b", ["baseline name"]),
])
def test_profload_usage_errors(kc, args, words):
    reply, _ = fails(kc, f"%profload {args}", "MagicError")
    for w in words:
        assert w in reply["evalue"], (w, reply["evalue"])


def test_profdiffview_without_statement_needs_a_session_profile(kc, tmp_path):
    base = tmp_path / "b.folded"
    base.write_text("main;x 10\n")
    ok(kc, f"%profload {base} as=b")
    ok(kc, "%profclear")
    reply, _ = fails(kc, "%profdiffview b", "MagicError")
    assert "session profile is empty" in reply["evalue"], reply["evalue"]
    reply, _ = fails(kc, "%profdiffview nosuch", "MagicError")
    assert "no baseline named 'nosuch'" in reply["evalue"] and "b" in reply["evalue"]


# ---------------------------------------------------------------- files that are not profiles
# Each test starts a kernel of its own, its memory capped (conftest's
# memory=), with a global defined first: a path that is not a profile
# costs the %profload or %profsave, never the kernel or the session.


@contextlib.contextmanager
def capped_session():
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        ok(kc, "int kept_global = 41;")
        yield km, kc
        assert ok(kc, 'printf("%d\\n", kept_global + 1);') == "42\n"


@pytest.fixture(scope="module")
def gzip_bomb(tmp_path_factory):
    """A 1.3 MB .pb.gz of 1.25 GiB of zeros: past the default limit of 1 GiB."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.pb.gz"
    with gzip.open(path, "wb", compresslevel=9) as f:
        for _ in range(1280):
            f.write(bytes(1 << 20))
    return path


def test_profload_of_a_device_is_refused():
    with capped_session() as (km, kc):
        reply, _ = fails(kc, "%profload /dev/zero", "MagicError", timeout=60)
        assert "/dev/zero is a character device" in reply["evalue"], reply["evalue"]
        assert "regular file" in reply["evalue"], reply["evalue"]


def test_profload_of_a_directory_is_refused(tmp_path):
    with capped_session() as (km, kc):
        reply, _ = fails(kc, f"%profload {tmp_path}", "MagicError")
        assert f"{tmp_path} is a directory" in reply["evalue"], reply["evalue"]
        assert "regular file" in reply["evalue"], reply["evalue"]


def test_profload_of_a_fifo_without_writer_answers_at_once(tmp_path):
    """The main loop never waits for a writer: control is answered while
    the %profload is outstanding, and the %profload fails, naming the
    FIFO."""
    fifo = tmp_path / "stacks.folded"
    os.mkfifo(fifo)
    with capped_session() as (km, kc):
        try:
            t0 = time.monotonic()
            msg_id = send(kc, f"%profload {fifo}", stop_on_error=False)
            info, _ = control_request(kc, "kernel_info_request", timeout=20)
            assert info is not None and info["status"] == "ok", \
                "no kernel_info reply on control while %profload waited for the FIFO"
            r = collect(kc, msg_id, timeout=20, sent_t=t0)
            assert r.reply["status"] == "error" and r.reply["ename"] == "MagicError", r.reply
            assert f"{fifo} is a FIFO" in r.reply["evalue"], r.reply["evalue"]
            assert "regular file" in r.reply["evalue"], r.reply["evalue"]
        finally:
            # A kernel blocked in open() gets a writer, and then end of file.
            with contextlib.suppress(OSError):
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))


def test_profload_of_a_gzip_bomb_stops_at_the_limit(gzip_bomb):
    with capped_session() as (km, kc):
        reply, _ = fails(kc, f"%profload {gzip_bomb}", "MagicError", timeout=120)
        assert str(gzip_bomb) in reply["evalue"], reply["evalue"]
        assert "unzips to more than the limit of 1 GiB" in reply["evalue"], reply["evalue"]
        assert "max_input_size=" in reply["evalue"], reply["evalue"]
        # The limit is the option's; raised, the zeros unzip, and what they
        # are is said: gzipped, and not pprof (not "a NUL byte" of text).
        reply, _ = fails(kc, f"%profload {gzip_bomb} max_input_size=64M", "MagicError")
        assert "more than the limit of 64 MiB" in reply["evalue"], reply["evalue"]
        reply, _ = fails(kc, f"%profload {gzip_bomb} max_input_size=2G", "MagicError",
                         timeout=120)
        assert f"{gzip_bomb} is gzip-compressed, but not a pprof profile" in reply["evalue"], \
            reply["evalue"]


def test_profload_limit_applies_to_plain_files_and_is_checked(tmp_path):
    folded = tmp_path / "small.folded"
    folded.write_text("main;work 10\n" * 10)
    with capped_session() as (km, kc):
        reply, _ = fails(kc, f"%profload {folded} max_input_size=100", "MagicError")
        assert "is 130 bytes, more than the limit of 100 bytes" in reply["evalue"], reply["evalue"]
        assert "max_input_size=" in reply["evalue"], reply["evalue"]
        reply, _ = fails(kc, f"%profload {folded} max_input_size=lots", "MagicError")
        assert "max_input_size=lots" in reply["evalue"] and "4G" in reply["evalue"], \
            reply["evalue"]
        assert "Loaded 100 samples" in ok(kc, f"%profload {folded} max_input_size=1K")


def test_profsave_writes_through_no_planted_name_and_leaks_nothing(tmp_path):
    """%profsave writes a new file of its own making next to the target:
    a symlink planted where a predictable temporary name would be is not
    followed, an unwritable or non-regular target is an error, and no
    descriptor or temporary file is left behind either way."""
    folded = tmp_path / "in.folded"
    folded.write_text("main;work 30\nmain;rest 10\n")
    out = tmp_path / "out"
    out.mkdir()
    with capped_session() as (km, kc):
        pid = km.provisioner.process.pid
        ok(kc, f"%profload {folded}")
        victim = tmp_path / "victim"
        victim.write_text("not yours\n")
        (out / f"graph.svg.tmp-{pid}").symlink_to(victim)
        (out / f"full.svg.tmp-{pid}").symlink_to("/dev/full")
        before = open_files(pid)
        ok(kc, f"%profsave {out / 'graph.svg'}")
        assert victim.read_text() == "not yours\n"
        ok(kc, f"%profsave {out / 'full.svg'}")
        for name in ("graph.svg", "full.svg"):
            assert not (out / name).is_symlink() and (out / name).read_text().startswith("<svg")
        (out / "dir.svg").mkdir()
        os.mkfifo(out / "fifo.svg")
        reply, _ = fails(kc, f"%profsave {out / 'dir.svg'}", "MagicError")
        assert f"{out / 'dir.svg'}" in reply["evalue"], reply["evalue"]
        reply, _ = fails(kc, f"%profsave {out / 'fifo.svg'}", "MagicError", timeout=20)
        assert f"{out / 'fifo.svg'} is a FIFO" in reply["evalue"], reply["evalue"]
        reply, _ = fails(kc, f"%profsave {out / 'no' / 'such.svg'}", "MagicError")
        assert "No such file" in reply["evalue"], reply["evalue"]
        assert open_files(pid) == before
        assert sorted(p.name for p in out.iterdir()) == sorted(
            ["graph.svg", "full.svg", "dir.svg", "fifo.svg", f"graph.svg.tmp-{pid}",
             f"full.svg.tmp-{pid}"])


def test_zz_every_spec_passes_check_spec():
    STORE.check()
