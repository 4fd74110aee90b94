# SPDX-License-Identifier: BSD-3-Clause
"""The cflame command line (docs/CLI.md), run as a user runs it.

Each output format is checked by its real consumer: the SVG by an XML
parser, the Vega-Lite spec by vega-lite and vega (tests/render/check_spec.mjs
under node), the folded stacks against stackcollapse-perf.pl's output for
the same capture (tests/data/perf), the HTML page by extracting what it
embeds. Errors: exit status, the message on stderr, and that nothing is
written.

Environment (set by tests/CMakeLists.txt): CFLAME_BIN (the cflame binary),
CFLAME_TEST_DATA (tests/data), CFLAME_NODE and CFLAME_RENDER_DIR (node and
tests/render, for check_spec.mjs).
"""
import json
import os
import re
import stat
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from cflame_bundle import (chart_bars_of, check_deep_drawing, frames_of, graph_drawing_of,
                           top_rows_of, unlabelled)

CFLAME = str(Path(os.environ.get("CFLAME_BIN", "build/bin/cflame")).resolve())
DATA = Path(os.environ.get("CFLAME_TEST_DATA", "tests/data")) / "perf"
NODE = os.environ.get("CFLAME_NODE", "node")
RENDER = Path(os.environ.get("CFLAME_RENDER_DIR", "tests/render")).resolve()
SVG_NS = "{http://www.w3.org/2000/svg}"


def cflame(*args, stdin=None, cwd=None):
    return subprocess.run([CFLAME, *map(str, args)], input=stdin, capture_output=True,
                          text=True, cwd=cwd, timeout=60)


def ok(*args, **kw):
    r = cflame(*args, **kw)
    assert r.returncode == 0, f"cflame {' '.join(map(str, args))}: {r.returncode}\n{r.stderr}"
    return r.stdout


def interactive_ok(files, *flags):
    """Each SVG file, opened in headless Chromium with the network off, is
    interactive by itself: tests/render/interactive_test.mjs tries hover,
    zoom and search on it (and its --band checks, with flags)."""
    p = subprocess.run([NODE, str(RENDER / "interactive_test.mjs"), *flags, *map(str, files)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("ok   ") == len(files), p.stdout


def check_spec(*paths):
    """The real vega-lite 5 and vega 5 compile and render each, no warnings."""
    r = subprocess.run([NODE, str(RENDER / "check_spec.mjs"), *map(str, paths)],
                       capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr


def folded_counts(text):
    out = {}
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + int(count)
    return out


# ---- every format ----

def test_svg_is_xml_with_titled_frames(tmp_path):
    svg = ok(DATA / "single.txt")
    root = ET.fromstring(svg)
    assert root.tag == SVG_NS + "svg"
    titles = [t.text for t in root.iter(SVG_NS + "title")]
    assert any(t.startswith("leaf\n") for t in titles), titles[:5]
    assert any(t.startswith("all\n") for t in titles)
    # the default title names the input, the note counts its samples
    texts = [t.text for t in root.iter(SVG_NS + "text")]
    assert str(DATA / "single.txt") in texts
    samples = sum(folded_counts((DATA / "single.folded").read_text()).values())
    assert any(t and t.startswith(f"{samples} samples") for t in texts), texts[:4]


def test_callers_view_sums_each_function_s_self_time_on_the_root(tmp_path):
    """--view callers: on the root, each function with its self time summed
    over every caller (the flame graph's self counts of that function), and
    above it its callers; a diff can be drawn so too."""
    flame = frames_of(json.loads(ok("-f", "vegalite", "--no-lines", "--minwidth", "0",
                                    DATA / "threads.txt")))
    out = tmp_path / "callers.vl.json"
    ok("-f", "vegalite", "--view", "callers", "--no-lines", "--minwidth", "0", DATA / "threads.txt",
       "-o", out)
    callers = frames_of(json.loads(out.read_text()))
    assert callers[0]["count"] == flame[0]["count"]
    want = {}
    for r in flame[1:]:
        if r["self"]:
            want[r["func"]] = want.get(r["func"], 0) + r["self"]
    on_root = {r["func"]: r["count"] for r in callers if r["parent"] == callers[0]["id"]}
    assert on_root == want
    # above hash_block: the functions that call it in the flame graph
    by_id = {r["id"]: r for r in flame}
    hb = next(r for r in callers if r["func"] == "hash_block" and r["parent"] == callers[0]["id"])
    assert {r["func"] for r in callers if r["parent"] == hb["id"]} == {
        by_id[r["parent"]]["func"] for r in flame if r["func"] == "hash_block"}
    check_spec(out)
    text = ok("-f", "text", "--view", "callers", DATA / "threads.txt")
    assert "Callers: each function where time was spent" in text
    diff = frames_of(json.loads(ok("-f", "vegalite", "--view", "callers", "--diff",
                                   DATA / "single.txt", DATA / "threads.txt")))
    assert diff[0]["change"] and {r["func"] for r in diff if r["parent"] == 0} >= {"hash_block"}


def _levels(frames, root_y, down):
    """Each frame of graph_drawing_of's as (name, x, width, level): its
    level counted from the root's row, down (an icicle's) or up."""
    step = min(abs(f["y"] - root_y) for f in frames if abs(f["y"] - root_y) > 0.05)
    return sorted((f["name"], f["x"], f["w"], round((f["y"] - root_y) / step * (1 if down else -1)))
                  for f in frames)


def test_icicle_view_is_the_flame_graph_upside_down(tmp_path):
    """--view icicle, as perf's and speedscope's users read a profile: the
    flame graph's frames, each at the same x and as wide, the root's row at
    the top and every frame's row as far below it as the flame graph's is
    above (its SVG, read with an XML parser); its Vega-Lite spec passes
    vega-lite and vega, which draw each frame below its parent
    (check_spec.mjs); its text is the flame graph's tree; the page has its
    tab; PNG and PDF are drawn; a diff is drawn so too."""
    src = DATA / "threads.txt"
    flame = graph_drawing_of(ok(src, "-f", "svg"))["frames"]
    icicle = graph_drawing_of(ok("--view", "icicle", src, "-f", "svg"))["frames"]
    assert len(icicle) == len(flame) > 10
    root_f = next(f for f in flame if f["name"] == "all")
    root_i = next(f for f in icicle if f["name"] == "all")
    assert root_f["y"] == max(f["y"] for f in flame)
    assert root_i["y"] == min(f["y"] for f in icicle), "the icicle's root is not at the top"
    assert _levels(icicle, root_i["y"], True) == _levels(flame, root_f["y"], False)
    assert max(lv for *_, lv in _levels(icicle, root_i["y"], True)) >= 3
    out = tmp_path / "icicle.vl.json"
    ok("--view", "icicle", src, "-o", out)
    spec = json.loads(out.read_text())
    assert spec["usermeta"]["cflame"]["icicle"] is True
    assert frames_of(spec) == frames_of(json.loads(ok(src, "-f", "vegalite")))
    assert ok("--view", "icicle", src, "-f", "text") == ok(src, "-f", "text")
    page = ok("--view", "icicle", src, "-f", "html")
    assert re.search(r'<input type="radio" name="cflame-tab" id="cflame-tab-icicle" checked>'
                     r'<label for="cflame-tab-icicle">Icicle</label>', page), page[:3000]
    for ending, magic in ((".png", b"\x89PNG"), (".pdf", b"%PDF")):
        ok("--view", "icicle", src, "-o", tmp_path / f"icicle{ending}")
        assert (tmp_path / f"icicle{ending}").read_bytes().startswith(magic)
    diff = tmp_path / "diff.vl.json"
    ok("--view", "icicle", "--diff", DATA / "single.txt", src, "-o", diff)
    meta = json.loads(diff.read_text())["usermeta"]["cflame"]
    assert meta["icicle"] is True and "diff" in meta
    check_spec(out, diff)


def test_top_view_lists_functions_by_self_and_by_total(tmp_path):
    """--view top: each function's self and total as the flame graph of the
    same file has them (self summed over its frames, total once per sample
    however deep it recurses), the text's two tables in order with pprof's
    columns, the same table in the Vega-Lite rows and the SVG, and a clear
    error for a diff."""
    flame = frames_of(json.loads(ok("-f", "vegalite", "--no-lines", "--minwidth", "0",
                                    DATA / "threads.txt")))
    by_id = {r["id"]: r for r in flame}
    self_of, total_of = {}, {}
    for r in flame[1:]:
        self_of[r["func"]] = self_of.get(r["func"], 0) + r["self"]
        outer = True
        p = by_id.get(r["parent"])
        while p and p["id"] != 0:
            outer = outer and p["func"] != r["func"]
            p = by_id.get(p["parent"])
        if outer:
            total_of[r["func"]] = total_of.get(r["func"], 0) + r["count"]
    text = ok("-f", "text", "--view", "top", DATA / "threads.txt")
    table = text.split("\nBy self:\n")[1].split("\n\n")[0].splitlines()
    assert table[0].split()[:5] == ["Self", "Self%", "Sum%", "Total", "Total%"], table[0]
    listed = [(int(line.split()[0]), int(line.split()[3]), line.split()[5]) for line in table[1:]]
    assert len(listed) == min(50, len(self_of))
    for s_, t_, func in listed:
        assert (s_, t_) == (self_of[func], total_of[func]), func
    assert [x[0] for x in listed] == sorted((x[0] for x in listed), reverse=True)
    by_total = text.split("\nBy total:\n")[1].splitlines()[1:]
    totals = [int(line.split()[3]) for line in by_total if line.strip()]
    assert totals == sorted(totals, reverse=True) and totals[0] == max(total_of.values())
    out = tmp_path / "top.vl.json"
    ok("--view", "top", DATA / "threads.txt", "-o", out)
    rows = top_rows_of(json.loads(out.read_text()))
    assert {f: (r["self"], r["total"]) for f, r in rows.items()} == {
        f: (self_of[f], total_of[f]) for f in rows}
    check_spec(out)
    svg = ok("-f", "svg", "--view", "top", DATA / "threads.txt")
    assert svg.count("<title>") == len(listed) and "Self%" in svg
    # A diff as a table: the functions by |delta|, each change as the flame
    # diff's rule says (here every function is new or vanished).
    out = tmp_path / "top-diff.vl.json"
    ok("--view", "top", "--diff", DATA / "single.txt", DATA / "threads.txt", "-o", out)
    rows = json.loads(out.read_text())["layer"][0]["data"]["values"]
    deltas = [abs(r["delta"]) for r in rows]
    assert deltas == sorted(deltas, reverse=True), deltas
    new = {r["func"] for r in rows if r["change"] == "new"}
    assert "hash_worker" in new and "sort_worker" in new, new
    # what only the baseline has vanished, as the graph lists it
    assert all(r["change"] == "vanished" and r["delta"] < 0
               for r in rows if r["total"] == 0), rows[:3]
    check_spec(out)
    r = cflame("--view", "chart", "--diff", DATA / "single.txt", DATA / "threads.txt")
    assert r.returncode != 0 and "view=chart does not draw a diff" in r.stderr, r.stderr


def test_a_loaded_profile_is_drawn_by_function_unless_lines_are_asked_for():
    """srcline.txt has a file and line for most frames: by default each
    function is one frame, as perf report and flamegraph.pl draw it (no
    "(file:line)" in the folded stacks; the graph's "leaf" frames with the
    file and line 0); --lines draws a frame per line; --no-lines is the
    default's picture."""
    default = ok("-f", "folded", DATA / "srcline.txt")
    lined = ok("-f", "folded", "--lines", DATA / "srcline.txt")
    assert not re.search(r"\(\S+:\d+\)", default), default[:500]
    assert re.search(r";leaf \(\S*workload\.c:\d+\)", lined), lined[:500]
    assert default == ok("-f", "folded", "--no-lines", DATA / "srcline.txt")
    leaves = [r for r in frames_of(json.loads(ok("-f", "vegalite", DATA / "srcline.txt")))
              if r["func"] == "leaf"]
    leaf_lines = [r for r in frames_of(json.loads(ok("-f", "vegalite", "--lines",
                                                     DATA / "srcline.txt")))
                  if r["func"] == "leaf"]
    assert leaves and all(r["line"] == 0 and r["file"].endswith("workload.c") for r in leaves)
    assert leaf_lines and all(r["line"] > 0 for r in leaf_lines)


def test_a_filter_that_leaves_no_sample_says_so():
    """--threads naming no thread of the capture, --filter matching no
    function: the output says which option left nothing and what it was
    matched against, in the text and the SVG; the chart is refused with the
    same words."""
    text = ok("-f", "text", "--threads", "99", DATA / "threads.txt")
    assert text.startswith("--threads 99 leaves no sample: the profile's threads are 7618 (t) "
                           "with 3 samples, 7620 (hash worker) with 200 samples, 7621 (sort "
                           "worker) with 201 samples\n"), text
    svg = ok("--threads", "99", DATA / "threads.txt")
    assert "--threads 99 leaves no sample" in svg, svg[:1500]
    top = ok("-f", "text", "--view", "top", "--filter", "nosuch", DATA / "threads.txt")
    assert re.match(r'--filter nosuch leaves no sample: none of the profile\'s \d+ functions '
                    r'contains "nosuch"\n', top), top
    r = cflame("-f", "text", "--view", "chart", "--threads", "99", DATA / "threads.txt")
    assert r.returncode != 0 and "--threads 99 leaves no sample" in r.stderr, r.stderr


def test_source_view_of_a_diff_compares_line_by_line(tmp_path):
    """--view source --diff of a recording against itself, run where its
    source file is: every line with samples is "same" with delta 0, both
    sides carry the line's total as the plain source view counts it, and
    the lines are the file's own text."""
    data = DATA.resolve()
    plain = json.loads(ok("-f", "vegalite", "--view", "source", "--source-root", ".",
                          data / "srcline.txt", cwd=data))
    totals = {r["line"]: r["total"] for r in plain["layer"][0]["data"]["values"]
              if r["k"] == "line" and r["total"]}
    out = tmp_path / "source-diff.vl.json"
    ok("--view", "source", "--source-root", ".", "--diff", data / "srcline.txt",
       data / "srcline.txt", "-o", out, cwd=data)
    spec = json.loads(out.read_text())
    assert spec["usermeta"]["cflame"]["diff"] is True
    rows = [r for r in spec["layer"][0]["data"]["values"] if r["k"] == "line" and r["change"]]
    assert {r["line"]: r["total"] for r in rows} == totals
    assert all(r["change"] == "same" and r["delta"] == 0 and r["base_total"] == r["total"]
               for r in rows), rows
    source = (data / "workload.c").read_text().split("\n")
    assert all(r["text"] == source[r["line"] - 1].replace("\t", "        ") for r in rows), rows[:2]
    check_spec(out)


def test_chart_view_draws_a_lane_per_thread_in_time_order(tmp_path):
    """--view chart on perf script output of three threads: a lane per
    thread named as perf names it, each lane's top bars adding up to that
    thread's samples (as --threads counts them), bars within --from/--to,
    and a clear error for folded stacks, which have no time stamps."""
    out = tmp_path / "chart.vl.json"
    ok("--view", "chart", DATA / "threads.txt", "-o", out)
    spec = json.loads(out.read_text())
    bars = chart_bars_of(spec)
    lanes = {}
    for b in bars:
        lanes.setdefault(b["thread"], 0)
        lanes[b["thread"]] += b["count"] if b["depth"] == 1 else 0
    assert set(lanes) == {"7618: t", "7620: hash worker", "7621: sort worker"}, lanes
    for name, drawn in lanes.items():
        tid = name.split(":")[0]
        total = frames_of(json.loads(ok("-f", "vegalite", "--threads", tid, "--minwidth", "0",
                                        DATA / "threads.txt")))[0]["count"]
        assert drawn == total, (name, drawn, total)
    check_spec(out)
    cut = chart_bars_of(json.loads(ok("-f", "vegalite", "--view", "chart", "--from", "0.01",
                                      "--to", "0.02", DATA / "threads.txt")))
    assert cut and all(0.01 - 1e-6 <= b["t0"] <= b["t1"] <= 0.02 + 1e-6 for b in cut), cut[:3]
    text = ok("-f", "text", "--view", "chart", DATA / "threads.txt")
    assert "\nthread 7620: hash worker (200 samples)\n" in text, text[:500]
    r = cflame("--view", "chart", DATA / "single.folded")
    assert r.returncode != 0 and "carry no time stamps" in r.stderr, r.stderr


def test_vegalite_passes_vega_lite(tmp_path):
    out = tmp_path / "single.vl.json"
    ok("--format", "vegalite", DATA / "single.txt", "-o", out)
    spec = json.loads(out.read_text())
    assert spec["$schema"] == "https://vega.github.io/schema/vega-lite/v5.json"
    rows = frames_of(spec)
    leaf = [r for r in rows if r["func"] == "leaf"]
    assert leaf and leaf[0]["module"] == "workload"
    check_spec(out)


def test_html_holds_the_spec_and_the_svg(tmp_path):
    """The page holds a tab per view, each with its spec and its interactive
    SVG as the other formats write them: the flame graph's, --view icicle's
    and --view top's."""
    page = ok("--format", "html", "--title", "a <title> & more", DATA / "single.txt")
    for view in ("flame", "icicle", "top"):
        spec = json.loads(ok("--format", "vegalite", "--view", view, "--title", "a <title> & more",
                             DATA / "single.txt"))
        m = re.search(rf'<section class="cflame-panel" id="cflame-panel-{view}".*?'
                      r'<script class="cflame-spec" type="application/json">(.*?)</script>',
                      page, re.S)
        assert m and json.loads(m.group(1)) == spec, view
        # The SVG file's, without the line for viewers that run no script
        # (the page has its own).
        svg = ok("--format", "svg", "--view", view, "--title", "a <title> & more",
                 DATA / "single.txt")
        svg = re.sub(r"<text class='cflame-hint'[^>]*>[^<]*</text>\n", "", svg, count=1)
        assert svg in page, view
    assert "<title>a &lt;title&gt; &amp; more</title>" in page
    # It loads nothing: no script or style from anywhere.
    assert " src=" not in page and "<link" not in page


def test_folded_is_stackcollapse_perf(tmp_path):
    for name in ("single", "threads", "pidtid"):
        assert ok("--format", "folded", DATA / f"{name}.txt") == \
            (DATA / f"{name}.folded").read_text(), name
    # the folded output reads back as the same stacks
    out = tmp_path / "single.folded"
    ok("-f", "folded", DATA / "single.txt", "-o", out)
    assert ok("-f", "folded", out) == out.read_text()


def test_text_is_the_tree():
    text = ok("--format", "text", "--no-C", DATA / "single.txt")
    lines = text.splitlines()
    assert lines[0].startswith("Total: ")
    counts = folded_counts((DATA / "single.folded").read_text())
    total = sum(c for s, c in counts.items() if ";middle;leaf" in s)
    self = sum(c for s, c in counts.items() if s.endswith(";middle;leaf"))
    assert self > 0
    assert re.search(rf"^\s+{total}\s+{self}\s+leaf  workload$", text, re.M), text


def test_inputs_merge_and_stdin():
    single = (DATA / "single.txt").read_text()
    assert ok("-f", "folded", "-", stdin=single) == (DATA / "single.folded").read_text()
    both = folded_counts(ok("-f", "folded", DATA / "single.txt", DATA / "single.folded"))
    once = folded_counts((DATA / "single.folded").read_text())
    assert both == {k: 2 * v for k, v in once.items()}


def test_output_file(tmp_path):
    out = tmp_path / "g.svg"
    old = os.umask(0o022)
    try:
        assert cflame(DATA / "single.txt", "-o", out).stdout == ""
    finally:
        os.umask(old)
    assert out.read_text() == ok(DATA / "single.txt")
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.svg"]  # no temporary left
    # what is not a regular file is written as it is, not renamed over
    ok(DATA / "single.txt", "-o", "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert ok(DATA / "single.txt", "-o", "-") == ok(DATA / "single.txt")  # - is stdout


def test_tree_options():
    C_off = ok("-f", "folded", "--no-C", DATA / "single.txt")
    assert "__libc_start_call_main" not in C_off and "workload;main;outer;middle;leaf " in C_off
    filtered = folded_counts(ok("-f", "folded", "--filter", "middle", DATA / "single.txt"))
    assert filtered and all("middle" in s for s in filtered)
    regex = folded_counts(ok("-f", "folded", "--filter", "/^(leaf|compare)$/",
                             DATA / "single.txt"))
    assert regex and all(re.search(r";(leaf|compare)(;|$)", s) for s in regex)
    pruned = folded_counts(ok("-f", "folded", "--pruned", "outer,msort_with_tmp.part.0",
                              DATA / "single.txt"))
    assert not any(";outer;" in s for s in pruned) and any(s.endswith(";outer") for s in pruned)
    total = sum(folded_counts((DATA / "single.folded").read_text()).values())
    assert sum(pruned.values()) == total
    # minwidth hides frames narrower than 5% from the folded output, once
    # asked to: the lines left are those whose every frame is that wide
    full = folded_counts((DATA / "single.folded").read_text())
    wide = folded_counts(ok("-f", "folded", "--minwidth", "0.05", DATA / "single.txt"))

    def width(prefix):
        return sum(c for s, c in full.items() if s == prefix or s.startswith(prefix + ";"))

    def shown(stack):
        frames = stack.split(";")
        return all(width(";".join(frames[:i])) >= 0.05 * total for i in range(1, len(frames) + 1))

    assert wide == {s: c for s, c in full.items() if shown(s)}
    assert sum(wide.values()) < total


def test_threads_option():
    tids = sorted({int(m.group(1)) for m in
                   re.finditer(r"^hash worker\s+(\d+)", (DATA / "threads.txt").read_text(), re.M)})
    assert len(tids) == 1
    only = folded_counts(ok("-f", "folded", "--threads", tids[0], DATA / "threads.txt"))
    assert only and all(s.startswith("hash_worker;") for s in only)


# ---- diffs ----

def test_diff(tmp_path):
    base = tmp_path / "base.folded"
    target = tmp_path / "target.folded"
    base.write_text("main;parse 100\nmain;work 100\nmain;gone;read 40\n")
    target.write_text("main;parse 100\nmain;work 300\nmain;fresh;write 50\n")
    out = tmp_path / "diff.vl.json"
    ok("--format", "vegalite", "--diff", base, target, "-o", out)
    rows = {r["func"]: r for r in frames_of(json.loads(out.read_text()))}
    assert rows["work"]["change"] == "grew" and rows["work"]["base"] == 100
    assert rows["fresh"]["change"] == "new" and rows["fresh"]["base"] is None
    assert rows["parse"]["change"] == "same"
    check_spec(out)
    text = ok("--format", "text", "--diff", base, target)
    assert "Delta  Change  Frame" in text and "gone" in text.split("Vanished")[1]
    neg = json.loads(ok("--format", "vegalite", "--diff", base, "--negate", target))
    assert {r["func"] for r in frames_of(neg)} >= {"gone"}
    self_rows = json.loads(ok("-f", "vegalite", "--diff", base, "--delta", "self", target))
    assert all("base_self" in r for r in frames_of(self_rows) if r["base"] is not None)
    ET.fromstring(ok("--diff", base, target))
    assert "<svg" in ok("-f", "html", "--diff", base, target)
    # folded: difffolded.pl's "stack BASE TARGET"
    assert ok("-f", "folded", "--diff", base, target).splitlines() == [
        "main;fresh;write 0 50", "main;gone;read 40 0", "main;parse 100 100",
        "main;work 100 300"]
    # normalized: the baseline scaled to the target's total (450 / 240)
    lines = ok("-f", "folded", "--diff", base, "--normalize", target).splitlines()
    assert lines[2] == "main;parse 188 100"
    # all in noise with a huge threshold
    quiet = json.loads(ok("-f", "vegalite", "--diff", base, "--noise", "1000", target))
    assert {r["change"] for r in frames_of(quiet)} <= {"same", "new"}


# ---- errors ----

def test_bad_input_writes_nothing(tmp_path):
    bad = tmp_path / "bad.folded"
    bad.write_text("main;work 3\n\nmain;parse 2.5\n")
    out = tmp_path / "out.svg"
    r = cflame(bad, "-o", out)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"cflame: {bad}:3: "), r.stderr
    assert "frame;frame;...;frame COUNT" in r.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [bad]
    # an existing output file is left as it was
    out.write_text("before")
    assert cflame(DATA / "single.txt", bad, "-o", out).returncode == 1
    assert out.read_text() == "before"
    # and a bad baseline too
    assert cflame("--diff", bad, DATA / "single.txt", "-o", out).returncode == 1
    assert out.read_text() == "before"


def test_speedscope_and_trace_of_a_capture_and_what_they_refuse(tmp_path):
    """A perf capture of three threads as speedscope (a profile per thread,
    in nanoseconds) and as trace events (a track per thread, its thread
    named); each read back draws the capture's flame graph. Trace events
    of folded stacks (no time stamps) and of a diff are refused, saying
    why and what to write instead, and nothing is written."""
    capture = DATA / "threads.txt"
    ss, tr = tmp_path / "p.speedscope.json", tmp_path / "p.trace.json"
    ok(capture, "-o", ss)
    ok(capture, "-o", tr)
    doc = json.loads(ss.read_text())
    threads = ok(capture, "--view", "chart", "-f", "text").count("\nthread ")
    assert len(doc["profiles"]) == threads == 3, (len(doc["profiles"]), threads)
    assert {p["unit"] for p in doc["profiles"]} == {"nanoseconds"}
    events = json.loads(tr.read_text())["traceEvents"]
    assert len({e["tid"] for e in events if e["ph"] == "M"}) == threads
    folded = ok(capture, "-f", "folded", "--no-lines")
    for f in (ss, tr):
        assert ok(f, "-f", "folded", "--no-lines") == folded, f
    out = tmp_path / "x.trace.json"
    r = cflame(DATA / "single.folded", "-o", out)
    assert r.returncode == 1 and "no time stamps" in r.stderr and "folded" in r.stderr, r.stderr
    r = cflame("--diff", capture, capture, "-o", out)
    assert r.returncode == 1 and "diff" in r.stderr and "speedscope" in r.stderr, r.stderr
    assert not out.exists()
    r = cflame("--input-format", "speedscope", DATA / "single.folded")
    assert r.returncode == 1 and "not valid JSON" in r.stderr, r.stderr


def test_bad_perf_script_names_the_line(tmp_path):
    lines = (DATA / "single.txt").read_text().splitlines(keepends=True)
    lines.insert(6, "garbage in the middle\n")
    bad = tmp_path / "bad.perf"
    bad.write_text("".join(lines))
    r = cflame("-f", "folded", bad)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"cflame: {bad}:7: not a line of perf script output"), r.stderr


def test_unreadable_and_empty_inputs(tmp_path):
    r = cflame(tmp_path / "missing.folded")
    assert r.returncode == 1
    assert f"cannot open {tmp_path / 'missing.folded'}: No such file or directory" in r.stderr
    r = cflame("-", stdin="")
    assert r.returncode == 1 and "no samples found in <stdin>" in r.stderr
    r = cflame(DATA / "single.txt", "-o", tmp_path / "no" / "such" / "dir.svg")
    assert r.returncode == 1 and "cannot write" in r.stderr


def valid_options():
    """The options cflame itself lists as valid (from an unknown option)."""
    r = cflame("--no-such-option", DATA / "single.txt")
    m = re.search(r"valid options: (.*)", r.stderr)
    assert m, r.stderr
    return [o for item in m.group(1).split(", ") for o in item.split("/")]


def test_unknown_option_names_the_valid_ones():
    r = cflame("--bogus", DATA / "single.txt")
    assert r.returncode == 2 and r.stdout == ""
    assert "unknown option --bogus" in r.stderr
    opts = valid_options()
    for want in ("--format", "--output", "--diff", "--width", "--height", "--minwidth",
                 "--title", "--icicle", "--negate", "--normalize", "--delta", "--noise"):
        assert want in opts
    r = cflame("-x", DATA / "single.txt")
    assert r.returncode == 2 and "unknown option -x" in r.stderr
    r = cflame("--format", "jpeg", DATA / "single.txt")
    assert r.returncode == 2 and "svg, html, vegalite, folded, text, pprof, speedscope, trace, png, pdf" in r.stderr, r.stderr
    r = cflame("--width", "wide", DATA / "single.txt")
    assert r.returncode == 2 and "--width wide" in r.stderr
    r = cflame(DATA / "single.txt", "--format")
    assert r.returncode == 2 and "--format needs a value" in r.stderr
    r = cflame()
    assert r.returncode == 2 and "no INPUT" in r.stderr
    # every kind of input it reads is named, pprof too
    assert all(kind in r.stderr for kind in ("folded stacks", "perf script", "pprof")), r.stderr
    r = cflame("--negate", DATA / "single.txt")
    assert r.returncode == 2 and "need --diff" in r.stderr


def test_help_lists_every_option():
    text = ok("--help")
    assert text.startswith("Usage: cflame [OPTIONS] INPUT...")
    for opt in valid_options():
        assert re.search(rf"(^|[\s,]){re.escape(opt)}([\s,=]|$)", text, re.M), opt
    # each option with a value says its default
    for opt in ("--format", "--minwidth", "--width", "--height", "--title", "--theme",
                "--delta", "--noise", "--recur", "--input-format", "--filter", "--pruned",
                "--threads", "--diff", "--negate", "--normalize", "--output"):
        m = re.search(rf"^ {{2,6}}(-\w, )?{opt}\b.*?(?=^ {{2,6}}-|^$|\Z)", text, re.M | re.S)
        assert m and "default" in m.group(0), opt
    assert ok("--version").startswith("cflame ")


@pytest.mark.parametrize("flag", ["--C", "--no-C", "--lines", "--no-lines", "--icicle",
                                  "--theme=dark", "--recur=flat", "--height=300",
                                  "--width=500", "--input-format=perf"])
def test_each_view_and_tree_flag_is_accepted(flag):
    ET.fromstring(ok(flag, DATA / "single.txt"))


def test_drawing_options_take_their_value_either_way():
    # --NAME VALUE and --NAME=VALUE are one option, from the library's table
    # (fl_options.h), as the notebook's NAME=VALUE; a boolean has --no-NAME.
    apart = ok("-f", "text", "--minwidth", "0.5", "--no-lines", DATA / "single.txt")
    joined = ok("-f", "text", "--minwidth=0.5", "--no-lines", DATA / "single.txt")
    assert apart == joined
    assert ok("-f", "text", "--cols=40", DATA / "single.txt") != ok("-f", "text", DATA / "single.txt")
    # errors name the option as written, and what is valid
    r = cflame("--minwidth=2", DATA / "single.txt")
    assert r.returncode == 2 and "--minwidth 2 is out of range (0..1)" in r.stderr, r.stderr
    r = cflame("--theme=sepia", DATA / "single.txt")
    assert r.returncode == 2 and "choose light or dark" in r.stderr, r.stderr
    r = cflame("--threads", "x", DATA / "single.txt")
    assert r.returncode == 2 and "x is not a thread number" in r.stderr, r.stderr


def test_own_flags_are_rows_of_the_option_table(tmp_path):
    """--per-input, --max-input-size, --diff and --fail-above are rows of
    the one option table, as %profload's per_input= and max_input_size=
    are: a boolean has its --no- form, a value may follow '=', --help
    shows each with its default, and a bad value says what is valid."""
    single = DATA / "single.txt"
    assert ok("-f", "folded", "--per-input", "--no-per-input", single) == \
        ok("-f", "folded", single)
    assert ok("-f", "folded", "--max-input-size=4G", single) == ok("-f", "folded", single)
    r = cflame("--max-input-size", "4Q", single)
    assert r.returncode == 2 and "--max-input-size 4Q: expected a size in bytes" in r.stderr, \
        r.stderr
    r = cflame(f"--diff={single}", "--fail-above=101", single)
    assert r.returncode == 2 and ("--fail-above 101: expected points of the total, a number "
                                  "from 0 to 100") in r.stderr, r.stderr
    r = cflame("--diff=", single)
    assert r.returncode == 2 and "--diff: the text is empty" in r.stderr, r.stderr
    text = ok("--help")
    for flag, default in (("--per-input, --no-per-input", "--no-per-input"),
                          ("--max-input-size SIZE", "1G"), ("--diff BASE", "no diff"),
                          ("--fail-above PCT", "no gate")):
        m = re.search(rf"^      {re.escape(flag)} .*?(?=^ {{2,6}}-|^$)", text, re.M | re.S)
        assert m and f"(default: {default})" in " ".join(m.group(0).split()), (flag, text)


def png_pixels(data):
    """(width, height, rows of RGBA bytes) of an 8-bit RGBA or RGB PNG."""
    import struct
    import zlib
    assert data[:8] == b"\x89PNG\r\n\x1a\n", data[:8]
    pos, idat = 8, b""
    w = h = color = None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    bpp = 4 if color == 6 else 3
    raw, rows, prev = zlib.decompress(idat), [], bytearray(w * bpp)
    stride = w * bpp + 1
    for y in range(h):
        f, line = raw[y * stride], bytearray(raw[y * stride + 1:(y + 1) * stride])
        for i in range(len(line)):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 4 else bytes(
            v for j in range(0, len(line), 3) for v in (*line[j:j + 3], 255)))
        prev = line
    return w, h, rows


def ink(rows, w, h, cells=8):
    """Per cell of a cells x cells grid, the share of pixels that are not
    near white: the picture's layout, coarsely."""
    out = []
    for gy in range(cells):
        for gx in range(cells):
            n = dark = 0
            for y in range(gy * h // cells, (gy + 1) * h // cells):
                row = rows[y]
                for x in range(gx * w // cells, (gx + 1) * w // cells):
                    r, g, b, a = row[4 * x:4 * x + 4]
                    n += 1
                    dark += a > 0 and min(r, g, b) < 200
            out.append(dark / max(n, 1))
    return out


def test_png_and_pdf_pictures(tmp_path):
    """-o x.png draws the flame graph's SVG at 192 dpi: a PNG twice the
    SVG's size in pixels; dpi= changes it. -o x.pdf is one page the SVG's
    size in points, and pdftoppm draws it at 192 dpi with the PNG's size
    and layout (the share of ink in each cell of an 8 x 8 grid within 5
    points)."""
    ok(DATA / "threads.txt", "-o", tmp_path / "g.svg")
    root = ET.parse(tmp_path / "g.svg").getroot()
    w, h = int(float(root.get("width"))), int(float(root.get("height")))
    ok(DATA / "threads.txt", "-o", tmp_path / "g.png")
    pw, ph, rows = png_pixels((tmp_path / "g.png").read_bytes())
    assert (pw, ph) == (2 * w, 2 * h), ((pw, ph), (w, h))
    ok(DATA / "threads.txt", "--dpi", "96", "-o", tmp_path / "small.png")
    assert png_pixels((tmp_path / "small.png").read_bytes())[:2] == (w, h)
    ok(DATA / "threads.txt", "-o", tmp_path / "g.pdf")
    assert (tmp_path / "g.pdf").read_bytes()[:5] == b"%PDF-"
    subprocess.run(["pdftoppm", "-r", "192", "-png", "-singlefile", str(tmp_path / "g.pdf"),
                    str(tmp_path / "from-pdf")], check=True, timeout=60)
    qw, qh, qrows = png_pixels((tmp_path / "from-pdf.png").read_bytes())
    assert abs(qw - pw) <= 2 and abs(qh - ph) <= 2, ((qw, qh), (pw, ph))
    a, b = ink(rows, pw, ph), ink(qrows, qw, qh)
    worst = max(abs(x - y) for x, y in zip(a, b))
    assert worst <= 0.05, (worst, a, b)


def test_a_chart_says_what_it_answers_to_where_it_is_shown(tmp_path):
    """The chart's caption says what the drawing does where it is shown: the
    Vega-Lite spec pans and zooms with drag and wheel, the SVG's script
    zooms to a bar on a click (the page keeps its wheel), and a still
    picture (PDF, read back by pdftotext) says nothing of clicks, drags or
    wheels."""
    src = DATA / "threads.txt"
    spec = json.loads(ok(src, "--view", "chart", "-f", "vegalite"))
    notes = " ".join(spec["title"]["subtitle"] if isinstance(spec["title"]["subtitle"], list)
                     else [spec["title"]["subtitle"]])
    assert "drag to pan, wheel to zoom" in notes, notes
    ok(src, "--view", "chart", "-o", tmp_path / "c.svg")
    svg = (tmp_path / "c.svg").read_text()
    assert "click a bar to zoom to it" in svg and "wheel" not in svg and "drag" not in svg, svg[:2000]
    ok(src, "--view", "chart", "-o", tmp_path / "c.pdf")
    text = subprocess.run(["pdftotext", "-layout", str(tmp_path / "c.pdf"), "-"], check=True,
                          capture_output=True, text=True, timeout=60).stdout
    assert "the samples in time order" in text, text[:1000]
    for word in ("click", "drag", "wheel"):
        assert word not in text, f"a still picture says '{word}': {text[:1000]}"


def test_the_search_box_is_in_a_narrow_window(tmp_path):
    """A page narrower than an SVG can shrink it (a notebook's output area in
    a window 600 px wide) scrolls it sideways: the search box of a flame
    graph's and of a chart's page is still in the window. An SVG file in a
    window 600 px wide is drawn smaller than its size: hovering the gaps
    between its frames (the SVG itself) throws nothing."""
    for view in ("flame", "chart"):
        ok(DATA / "threads.txt", "--view", view, "-o", tmp_path / f"{view}.html")
    interactive_ok([tmp_path / "flame.html", tmp_path / "chart.html"], "--width", "480")
    ok(DATA / "threads.txt", "-o", tmp_path / "flame.svg")
    interactive_ok([tmp_path / "flame.svg"], "--width", "600")


def test_every_views_svg_is_interactive_by_itself(tmp_path):
    """Each view's SVG file (a profile's seven views, a diff's five, an icicle
    in the dark theme), opened on its own in Chromium with the network off:
    hovering a frame shows its title in a box, a click zooms (tables do
    not), reset and a double-click undo it, the search shows the matched
    share the titles add up to, Escape clears it, and no script throws
    (tests/render/interactive_test.mjs). Where the script does not run, the
    file's hint says to open it in a browser."""
    src = DATA / "srcline.txt"
    cases = {f"{v}.svg": ["--view", v, src]
             for v in ("flame", "icicle", "callers", "top", "source", "chart")}
    cases["sandwich.svg"] = ["--view", "sandwich", "--focus", "main", src]
    for v in ("flame", "icicle", "callers", "top", "source"):
        cases[f"diff-{v}.svg"] = ["--view", v, "--diff", DATA / "single.txt", src]
    cases["icicle-dark.svg"] = ["--icicle", "--theme", "dark", DATA / "threads.txt"]
    files = []
    for name, args in cases.items():
        out = tmp_path / name
        ok(*args, "-o", out)
        text = out.read_text()
        assert "Open this file in a web browser to hover, zoom and search." in text, name
        assert text.count("<script>") == 1 and len(re.findall(r"<title>", text)) > 1, name
        files.append(out)
    interactive_ok(files)


def test_a_title_longer_than_the_svg_stays_inside_it(tmp_path):
    """A frame whose name is wider than the SVG (a C++ name nested in many
    namespaces: 2,000 characters here), the widest frame below the root,
    hovered in the flame graph and in the chart, one lane high: the box
    shows its title wrapped to the SVG's width and cut to its height, and
    lies inside the SVG; after a click on it, every label lies inside too
    (tests/render/interactive_test.mjs)."""
    long_name = "::".join(f"level{i:03}" for i in range(200))
    samples = [("main;short", 5), (f"main;{long_name}", 50), ("main;other", 5)]
    text, t = [], 1000.0
    for stack, n in samples:
        for _ in range(n):
            text.append(f"prog  100 {t:.6f}:     1000000 cpu-clock:ppp: ")
            text += [f"\t{0x1000 + 16 * k:16x} {f}+0x1 (/tmp/prog)"
                     for k, f in enumerate(reversed(stack.split(";")))]
            text.append("")
            t += 0.001
    src = tmp_path / "long.txt"
    src.write_text("\n".join(text) + "\n")
    files = []
    for view in ("flame", "chart"):
        out = tmp_path / f"{view}.svg"
        ok("--view", view, src, "-o", out)
        assert long_name in out.read_text(), view
        files.append(out)
    interactive_ok(files)


def _deep_stacks(depth):
    """Folded stacks `depth` frames deep under the root: one chain of
    distinct functions, a branch off it at 400, a shallow side stack."""
    chain = ["main"] + [f"level_{i:04d}" for i in range(1, depth)]
    return "\n".join([";".join(chain) + " 100", ";".join(chain[:400] + ["branch_x"]) + " 20",
                      "main;side_a;side_b 30"]) + "\n"


@pytest.mark.parametrize("view", [[], ["--icicle"], ["--view", "callers"], ["--diff", "BASE"]],
                         ids=["flame", "icicle", "callers", "diff"])
def test_a_graph_deeper_than_its_height_keeps_its_labels_and_a_band(tmp_path, view):
    """1,000 levels of stacks, drawn at the default height: the root and
    every frame wide enough for text keep their labels, the levels that do
    not fit are a band that says how many it holds, and the notes name the
    height that draws them all, which does: every level, every label, no
    band. In a flame graph, an icicle, the callers' view and a diff."""
    src = tmp_path / "deep.folded"
    src.write_text(_deep_stacks(1000))
    base = tmp_path / "base.folded"
    base.write_text(_deep_stacks(990))
    view = [str(base) if a == "BASE" else a for a in view]
    out = tmp_path / "deep.svg"
    ok(*view, src, "-o", out)
    height = check_deep_drawing(out.read_text(), 1001)
    assert height >= 1001 * 10, height
    ok(*view, src, "--height", height, "-o", out)
    d = graph_drawing_of(out.read_text())
    assert d["band"] == [] and len({f["y"] for f in d["frames"]}) == 1001
    assert unlabelled(d) == [], unlabelled(d)[:5]


def test_a_deep_graph_s_pdf_keeps_its_labels_and_band(tmp_path):
    """The PDF of a 1,000-level graph, read back by poppler's pdftotext: it
    has the root's and the widest frames' labels, the band's words with the
    levels it holds (and no "click to open": a PDF cannot be clicked), and
    the note that names --height."""
    src = tmp_path / "deep.folded"
    src.write_text(_deep_stacks(1000))
    ok(src, "-o", tmp_path / "deep.svg")
    said = [p["levels"] for p in graph_drawing_of((tmp_path / "deep.svg").read_text())["band"]]
    ok(src, "-o", tmp_path / "deep.pdf")
    text = subprocess.run(["pdftotext", "-layout", str(tmp_path / "deep.pdf"), "-"], check=True,
                          capture_output=True, text=True, timeout=60).stdout
    words = set(text.split())
    assert {"all", "main", "level_0001", "level_0100"} <= words, sorted(words)[:40]
    assert f"{max(p for p in said if p):,}" in words and "levels" in words, text[:2000]
    assert "(click" not in words, text[:2000]
    assert "--height" in text, text[:2000]


def test_a_deep_graph_s_band_opens_in_the_browser(tmp_path):
    """The SVG files of a 1,000-level graph, its icicle and a sandwich of
    its middle, in Chromium: hovering the band says how many levels it
    holds, a click opens it (the frame it stood for drawn and labelled at
    the root's level, the levels above it drawn, a band of fewer levels
    left), Reset zoom closes it; and everything interactive_test.mjs tries
    of any graph. Their Vega-Lite views pass check_spec.mjs (the band's
    pieces and words, levels tall enough for labels)."""
    src = tmp_path / "deep.folded"
    src.write_text(_deep_stacks(1000))
    files = []
    views = {"deep": [], "deep-icicle": ["--icicle"],
             "deep-sandwich": ["--view", "sandwich", "--focus", "level_0500"]}
    for name, args in views.items():
        ok(*args, src, "-o", tmp_path / f"{name}.svg")
        files.append(tmp_path / f"{name}.svg")
        # The Vega-Lite view of the same, by the real vega-lite and vega.
        ok(*args, src, "-o", tmp_path / f"{name}.vl.json")
        check_spec(tmp_path / f"{name}.vl.json")
    interactive_ok(files, '--band')


def _to_terminal(args, env_extra):
    """cflame ARGS with its standard output a terminal (a pty) whose
    environment is env_extra's: (status, what the terminal got, stderr)."""
    import pty
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items()
           if k not in ("TERM", "TERM_PROGRAM", "LC_TERMINAL", "KITTY_WINDOW_ID", "CFLAME_TERM_PICTURE")}
    env.update(env_extra)
    p = subprocess.Popen([CFLAME, *map(str, args)], stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    got = b""
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed its side
            break
        if not data:
            break
        got += data
    os.close(master)
    err = p.stderr.read().decode()
    p.stderr.close()
    return p.wait(), got, err


def test_png_to_a_terminal_is_drawn_there_or_refused():
    """--format png to a terminal: kitty's protocol (chunks of base64 of at
    most 4,096 bytes, the first a=T,f=100, the last m=0) or iTerm2's, as the
    environment says; decoded, the very PNG a pipe gets. A terminal without
    either gets an error that says what to do, and no bytes."""
    import base64
    args = ["--format", "png", "-o", "-", DATA / "threads.txt"]
    png = subprocess.run([CFLAME, *map(str, args)], capture_output=True, check=True).stdout
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    for env in ({"TERM": "xterm-kitty"}, {"KITTY_WINDOW_ID": "1"}, {"CFLAME_TERM_PICTURE": "kitty"}):
        status, got, err = _to_terminal(args, env)
        assert status == 0, err
        chunks = re.findall(rb"\x1b_G([^;]*);([^\x1b]*)\x1b\\", got)
        assert chunks and chunks[0][0] == b"a=T,f=100,m=1" and chunks[-1][0] == b"m=0", env
        assert all(c[0] == b"m=1" for c in chunks[1:-1]) and all(len(c[1]) <= 4096 for c in chunks)
        assert base64.b64decode(b"".join(c[1] for c in chunks)) == png, env
    for env in ({"TERM_PROGRAM": "iTerm.app"}, {"LC_TERMINAL": "iTerm2"}):
        status, got, err = _to_terminal(args, env)
        assert status == 0, err
        m = re.fullmatch(rb"\x1b\]1337;File=inline=1;size=(\d+);preserveAspectRatio=1:([A-Za-z0-9+/=]+)\x07\r\n",
                         got)
        assert m and int(m.group(1)) == len(png) and base64.b64decode(m.group(2)) == png, env
    status, got, err = _to_terminal(args, {"TERM": "xterm-256color"})
    assert status == 1 and got == b"", got[:80]
    assert "does not show pictures" in err and "-o graph.png" in err, err
    # Text to the same terminal is text, as before.
    status, got, err = _to_terminal(["--format", "text", DATA / "threads.txt"], {"TERM": "xterm-kitty"})
    assert status == 0 and b"\x1b_G" not in got and b"Total:" in got
