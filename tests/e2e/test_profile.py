# SPDX-License-Identifier: BSD-3-Clause
"""The profiling magics and what their output holds (docs/PROFILING.md):
what a user checks in the flame graph output of %%profview and friends,
through the real kernel.

(Whether the numbers are right is test_profile_truth.py's business.)
Every bundle and spec produced here is also run through
tests/render/check_spec.mjs (the real vega-lite 5 and vega 5) at the end.
"""
import collections
import json
import os
import pathlib
import re
import resource
import xml.etree.ElementTree as ET

import pytest

from cflame_bundle import graph_drawing_of
from conftest import (COUNT, VL_MIME, SpecStore, ancestors, by_id, check_spec, children,
                      displays, errors, fails, flame, interrupt_when_printed, ok, rows_of, run,
                      start_kernel, stdout, summary_of, svg_of, svg_of_file)

STORE = SpecStore("profile")
MD_MIME = "text/markdown"

DEFS = r"""
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile double sink;
__attribute__((noinline)) void a(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink += z; }
__attribute__((noinline)) void c(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink += z; }
__attribute__((noinline)) void b(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink += z; c(2 * u); sink += 1; }
__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
/* Iterations of a()'s loop per millisecond of CPU. */
static long iters_per_ms(void) {
  long u = 1000;
  for (;;) {
    double t0 = cpu_now();
    a(u);
    double dt = cpu_now() - t0;
    if (dt > 0.03) return (long)(u * 0.001 / dt);
    u *= 2;
  }
}
long PER_MS = 1;
"""

# About 300 ms of CPU: per iteration a() 0.25 ms at line 3, b() 0.5 ms plus
# c() 1 ms at line 4, a() again 0.25 ms at line 5.
OPT_CELL = """%%profview{opts}
for (int i = 0; i < 150; i++) {{
  a(PER_MS / 4);
  b(PER_MS / 2);
  a(PER_MS / 4);
}}"""

REQUIRED = {
    "id": (int,), "parent": (int, type(None)), "depth": (int,), "x0": (int, float),
    "x1": (int, float), "count": (int, float), "self": (int, float), "pct": (int, float),
    "func": (str,), "file": (str, type(None)), "line": (int,), "module": (str, type(None)),
    "status": (int,),
}

MACHINERY_FUNCS = {"main", "run_once", "call_entry", "fl_sampler_call", "_start",
                   "__libc_start_main", "__libc_start_call_main", "dlopen", "dlsym", "_dl_open",
                   "dl_open_worker", "_dl_catch_exception"}


@pytest.fixture(scope="module")
def kernel():
    with start_kernel() as (km, kc):
        reply, outputs = run(kc, DEFS)
        assert reply["status"] == "ok", outputs
        ok(kc, 'PER_MS = iters_per_ms();\nprintf("%ld\\n", PER_MS);')
        yield km, kc


@pytest.fixture(scope="module")
def opt_profile(kc):
    """The bundle of OPT_CELL profiled with default options, and its cell
    number. Tests that use it may show the session profile with other
    options (%profshow), so they re-profile first if another test replaced
    it."""
    bundle, reply, outputs = flame(kc, OPT_CELL.format(opts=""))
    keep(bundle, "opt-default")
    return {"bundle": bundle, "cell": reply["execution_count"]}


def keep(bundle, name):
    """Checks what every flame graph must satisfy, and keeps it for
    check_spec.mjs."""
    assert set(bundle) == {VL_MIME, MD_MIME, "text/plain"}, sorted(bundle)
    # The markdown item carries the SVG, for exports and the classic
    # notebook (nbconvert 6.5 strips SVG items), and nothing else does;
    # JupyterLab ranks markdown (60) below Vega-Lite (57), and nothing it
    # ranks above Vega-Lite (text/html, 50) is in the bundle. Under it, one
    # line says where the interactive view is.
    md_lines = bundle[MD_MIME].splitlines()
    assert md_lines[0].startswith('<div class="cflame-flamegraph"'), md_lines[0]
    assert md_lines[1].startswith("<svg ") and md_lines[-3] == "</svg>", md_lines[-3:]
    assert bundle[MD_MIME].splitlines()[-2].startswith('<p class="cflame-hint"')
    assert "\n\n" not in bundle[MD_MIME].strip()
    assert_no_machinery(rows_of(bundle))
    STORE.add(bundle, name)
    return bundle


def show(kc, code, name, **kw):
    """Runs a cell answering with one flame graph; returns (bundle, rows, reply, outputs)."""
    bundle, reply, outputs = flame(kc, code, **kw)
    keep(bundle, name)
    return bundle, rows_of(bundle), reply, outputs


def assert_no_machinery(rows):
    """No frame of the kernel's machinery (worker loop, dlopen, the generated
    cell wrapper) appears."""
    for r in rows:
        f, m, file = r["func"], r["module"] or "", r["file"] or ""
        assert not f.startswith(("cflame_", "kw_", "kn_")), f"machinery frame {r}"
        assert f not in MACHINERY_FUNCS and not f.startswith("__libc_start"), f"machinery frame {r}"
        assert "cflame-worker" not in m, f"machinery frame {r}"
        assert not file.startswith("<cflame"), f"a frame in the generated cell wrapper: {r}"


def session_profile(kc, cell_opts_profile):
    """Makes sure the session profile is OPT_CELL's (re-profiling if a
    test in between replaced it); returns (bundle with default options,
    its cell number)."""
    reply, outputs = run(kc, "%profshow")
    ds = displays(outputs)
    tops = {r["module"] for r in rows_of(ds[0]["data"]) if r["func"] == "top-level scope"} if ds else set()
    if tops != {f"cell[{cell_opts_profile['cell']}]"}:
        bundle, reply, outputs = flame(kc, OPT_CELL.format(opts=""))
        keep(bundle, "opt-again")
        cell_opts_profile.update(bundle=bundle, cell=reply["execution_count"])
    return cell_opts_profile["bundle"], cell_opts_profile["cell"]


def dark(hex_colour):
    r, g, b = (int(hex_colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b < 0.3


# ---------------------------------------------------------------- the output


def test_profview_answers_one_display_with_three_representations(kc):
    reply, _ = run(kc, "__attribute__((noinline)) double work(long n) {\n"
                       "  double z = 0;\n"
                       "  for (long k = 0; k < n; k++) z += k * 0.5;\n"
                       "  return z;\n"
                       "}")
    k = reply["execution_count"]
    r = run(kc, '%%profview\ndouble w = 0;\nfor (int i = 0; i < 100; i++) w += work(2 * PER_MS);\n'
                'printf("%d\\n", w > 0);')
    reply, outputs = r
    assert reply["status"] == "ok", reply
    n = reply["execution_count"]
    assert stdout(outputs) == "1\n"
    assert not errors(outputs)
    ds = displays(outputs)
    assert len(ds) == 1, outputs
    assert not [o for o in outputs if o["msg_type"] == "execute_result"]
    bundle = keep(ds[0]["data"], "basic")
    spec = bundle[VL_MIME]
    assert "vega-lite/v5" in spec["$schema"], spec["$schema"]
    assert isinstance(svg_of(bundle), str) and svg_of(bundle).lstrip().startswith("<")
    text = bundle["text/plain"]
    assert summary_of(text)["samples"] > 0
    assert "top-level scope" in text and "work" in text

    rows = rows_of(bundle)
    for row in rows:
        for field, types in REQUIRED.items():
            assert field in row, f"row without {field}: {row}"
            assert isinstance(row[field], types), f"{field} of {row}"
    root = rows[0]
    assert root["depth"] == 0 and root["parent"] is None
    assert [r for r in rows if r["depth"] == 0] == [root]
    assert root["func"] == f"cell[{n}]", root
    assert root["count"] == root["x1"] - root["x0"] and root["pct"] == pytest.approx(100)
    tops = children(rows, root)
    assert tops and all(t["func"] == "top-level scope" for t in tops), tops
    assert all(t["module"] == f"cell[{n}]" and t["file"] == f"cell[{n}]" for t in tops), tops
    assert sum(t["count"] for t in tops) >= 0.9 * root["count"]
    works = [r for r in rows if r["func"] == "work"]
    assert works, [r["func"] for r in rows]
    for w in works:
        assert w["module"] == f"cell[{k}]" and w["file"] == f"cell[{k}]", w
        assert w["line"] in range(1, 6), w
        assert by_id(rows)[w["parent"]]["func"] == "top-level scope"
    # The tooltip and the drawing carry the same fields.
    assert "datum.module" in json.dumps(spec) and "datum.self" in json.dumps(spec)


def test_redefined_function_shows_plain_name_and_new_cell(kc):
    reply, _ = run(kc, "__attribute__((noinline)) double work2(long n) {\n"
                       "  double z = 0;\n"
                       "  for (long k = 0; k < n; k++) z += k * 0.5;\n"
                       "  return z;\n"
                       "}")
    k1 = reply["execution_count"]
    bundle, rows, _, _ = show(kc, "%%profview\nfor (int i = 0; i < 50; i++) work2(2 * PER_MS);", "work2-old")
    assert {r["module"] for r in rows if r["func"] == "work2"} == {f"cell[{k1}]"}
    reply, _ = run(kc, "__attribute__((noinline)) double work2(long n) {\n"
                       "  double z = 1;\n"
                       "  for (long k = 0; k < 2 * n; k++) z += k * 0.25;\n"
                       "  return z;\n"
                       "}")
    assert reply["status"] == "ok"
    k2 = reply["execution_count"]
    bundle, rows, _, _ = show(kc, "%%profview\nfor (int i = 0; i < 50; i++) work2(PER_MS);", "work2-new")
    ws = [r for r in rows if "work2" in r["func"]]
    assert ws and all(r["func"] == "work2" for r in ws), ws
    assert {r["module"] for r in ws} == {f"cell[{k2}]"}, ws


def test_svg_is_xml_with_a_titled_frame_per_row(kc, opt_profile):
    bundle = opt_profile["bundle"]
    rows = rows_of(bundle)
    svg = ET.fromstring(svg_of(bundle))
    assert svg.tag == "{http://www.w3.org/2000/svg}svg", svg.tag
    ns = "{http://www.w3.org/2000/svg}"
    titled = [frame for frame in svg.iter(ns + "path") if frame.find(ns + "title") is not None]
    assert len(titled) == len(rows), (len(titled), len(rows))
    # Each title is led by its frame's label: the function, with what tells
    # it from a sibling of the same name (a line).
    names = collections.Counter(frame.find(ns + "title").text.split("\n")[0] for frame in titled)
    assert names == collections.Counter(r["label"] for r in rows)
    # The tooltip of a frame gives file:line, module and samples.
    a_titles = [frame.find(ns + "title").text for frame in titled
                if frame.find(ns + "title").text.startswith("a\n")]
    assert a_titles and all("samples" in t and "cell[" in t for t in a_titles), a_titles


def test_siblings_of_one_function_are_labelled_apart(kc):
    """A function whose two loops are two lines: its frames sit side by side,
    and their labels say which line each is, in the Vega-Lite view and the
    SVG alike."""
    ok(kc, "__attribute__((noinline)) void two_loops(long u) {\n"
           "  double z = 0;\n"
           "  for (long k = 0; k < u; k++) z += k * 0.5;\n"
           "  for (long k = 0; k < u; k++) z = z * 0.999 + k;\n"
           "  sink += z;\n"
           "}")
    bundle, rows, _, _ = show(kc, "%%profview\nfor (int i = 0; i < 150; i++) two_loops(PER_MS);",
                              "two-lines")
    by_parent = collections.defaultdict(list)
    for r in rows:
        if r["func"] == "two_loops":
            by_parent[r["parent"]].append(r)
    side_by_side = max(by_parent.values(), key=len)
    assert len(side_by_side) >= 2, f"two_loops should show two lines: {side_by_side}"
    labels = [r["label"] for r in side_by_side]
    assert labels == [f"two_loops:{r['line']}" for r in side_by_side], labels
    assert len(set(labels)) == len(labels), labels
    # A frame alone keeps its plain name.
    assert all(r["label"] == r["func"] for r in rows if r["func"] == "top-level scope")
    ns = "{http://www.w3.org/2000/svg}"
    texts = [t.text for t in ET.fromstring(svg_of(bundle)).iter(ns + "text")]
    drawn = [t for t in texts if t and t.startswith("two_loops")]
    assert drawn and all(t.startswith("two_loops:") for t in drawn), drawn


def test_huge_profile_is_cut_to_size(kc, tmp_path):
    """300 distinct functions and a recursion 480 deep, whose first 380
    levels every call shares and whose last 100 follow ever different paths
    (tens of thousands of distinct frames): at most 5,000 rows, under 1 MB,
    still a valid spec that renders, and the output says what was left out.
    The cut drops the narrowest frames: the shared part of the recursion, as
    wide as all of it, is drawn whole however many samples the different
    paths get on this machine. (480 levels and the cell's frames stay within
    the sampler's 512 frames a stack.)"""
    funcs = "\n".join(
        f"__attribute__((noinline)) double hf{i}(long n) {{ double z = {i}; "
        f"for (long k = 0; k < n; k++) z += k * 0.5; return z; }}" for i in range(300))
    dispatch = ("double hdispatch(int i, long n) { switch (i) {"
                + "".join(f" case {i}: return hf{i}(n);" for i in range(300)) + " } return 0; }")
    recursion = r"""
__attribute__((noinline)) double hra(int d, unsigned s, long n);
__attribute__((noinline)) double hrb(int d, unsigned s, long n);
__attribute__((noinline)) double hra(int d, unsigned s, long n) {
  if (d == 0) return hdispatch(s % 300, n);
  double r = d > 100 || (s >> (d % 29)) & 1 ? hra(d - 1, s, n) : hrb(d - 1, s, n);
  return r + 1e-9;
}
__attribute__((noinline)) double hrb(int d, unsigned s, long n) {
  if (d == 0) return hdispatch((s / 7) % 300, n);
  double r = (s >> (d % 31)) & 1 ? hra(d - 1, s, n) : hrb(d - 1, s, n);
  return r + 2e-9;
}"""
    ok(kc, funcs + "\n" + dispatch + "\n" + recursion, timeout=120)
    bundle, rows, reply, outputs = show(
        kc, "%%profview\nvolatile double hs = 0;\n"
            "for (int i = 0; i < 300; i++) hs += hdispatch(i, 6 * PER_MS);\n"
            "for (unsigned i = 0; i < 3000; i++) hs += hra(480, i * 2654435761u, PER_MS / 10);",
        "huge", timeout=120)
    # Its size as the kernel sends it: compact JSON in UTF-8 (as
    # check_spec.mjs measures it too).
    compact = len(json.dumps(bundle, separators=(",", ":"), ensure_ascii=False).encode())
    assert len(rows) <= 5000, len(rows)
    assert compact < 1_000_000, f"the bundle is {compact} bytes"
    top = min(r["depth"] for r in rows if r["func"] == "hra")
    shared = {r["depth"] for r in rows if r["func"] == "hra" and r["depth"] < top + 380}
    assert len(shared) == 380, f"{len(shared)} of the 380 shared levels of the recursion are drawn"
    hf = {r["func"] for r in rows if re.fullmatch(r"hf\d+", r["func"])}
    assert len(hf) >= 100, f"only {len(hf)} of the 300 functions are drawn"
    meta = bundle[VL_MIME].get("usermeta", {}).get("cflame", {})
    if meta.get("merged") or meta.get("hidden"):
        said = json.dumps(bundle[VL_MIME].get("title")) + bundle["text/plain"]
        assert re.search(rf"{COUNT} (narrow )?frames", said), "the output does not say how many frames were left out"
    print(f"huge: {len(rows)} rows, {compact} bytes, depth {max(r['depth'] for r in rows)}, "
          f"{len(hf)} hf functions, {meta}")
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(bundle))
    check_spec(path)


def test_stack_deeper_than_the_limit_says_so(kc):
    """A recursion 1,500 deep: the sampler keeps the 512 frames on the leaf
    side, and the graph puts them under a frame on the root that says the
    stack was deeper, not under the cell as if the cell had called the
    recursion's middle."""
    ok(kc, r"""
__attribute__((noinline)) double dleaf(long n) { double z = 0; for (long k = 0; k < n; k++) z += k * 0.25; return z; }
__attribute__((noinline)) double ddeep(int d, long n) { return d == 0 ? dleaf(n) : ddeep(d - 1, n) + 1e-9; }""")
    bundle, rows, _, _ = show(kc, "%%profview\nvolatile double ds = 0;\n"
                                  "for (int i = 0; i < 200; i++) ds += ddeep(1500, PER_MS);",
                              "deeper-than-limit")
    index = by_id(rows)
    marks = [r for r in rows if r["func"] == "[deeper than 512 frames]"]
    assert len(marks) == 1 and marks[0]["depth"] == 1, marks
    leaf = sum(r["count"] for r in rows if r["func"] == "dleaf")
    under_mark = sum(r["count"] for r in rows if r["func"] == "dleaf"
                     and any(a["func"] == "[deeper than 512 frames]" for a in ancestors(rows, r, index)))
    assert leaf > 100 and under_mark == leaf, (leaf, under_mark)
    # The leaf side is whole: dleaf on top of 511 frames of ddeep.
    tip = max((r for r in rows if r["func"] == "dleaf"), key=lambda r: r["count"])
    assert tip["depth"] == 1 + 512, tip["depth"]
    assert not any(r["func"] == "[incomplete stack]" for r in rows)


def test_empty_profile_says_how_long_it_ran_and_what_to_do(kc):
    reply, outputs = run(kc, "%%profview\nint x = 1;")
    assert reply["status"] == "ok", reply
    assert not displays(outputs) and not errors(outputs), outputs
    out = stdout(outputs)
    assert "No samples" in out, out
    m = re.search(r"took ([\d.]+) ms of CPU \(([\d.]+) ms wall", out)
    assert m, out
    # One thread, CPU and wall time measured over the same window.
    assert float(m[1]) <= float(m[2]) + 0.002, out
    assert "delay=" in out and "loop" in out, out


# ---------------------------------------------------------------- bad options


def test_unknown_option_names_the_valid_ones(kc):
    """The message names the magic as it was typed (the cell form with
    two % signs), the word and the valid options."""
    reply, outputs = fails(kc, '%%profview wdth=3\nprintf("ran\\n");', "MagicError")
    assert reply["evalue"].startswith("%%profview: unknown option 'wdth'"), reply["evalue"]
    assert "width" in reply["evalue"], reply["evalue"]
    for valid in ("delay", "threads", "minwidth", "title", "icicle"):
        assert valid in reply["evalue"], reply["evalue"]
    assert stdout(outputs) == "" and not displays(outputs)


@pytest.mark.parametrize("option, valid", [
    ("delay=abc", ["delay", "number"]),
    ("recur=sideways", ["off", "flat"]),
    ("theme=blue", ["light", "dark"]),
    ("C=maybe", ["true", "false"]),
    ("width=wide", ["width", "integer"]),
    ("threads=first", ["threads", "all"]),
])
def test_bad_option_value_names_what_is_valid_and_nothing_runs(kc, option, valid):
    reply, outputs = fails(kc, f'%%profview {option}\nprintf("ran\\n");', "MagicError")
    for word in valid:
        assert word in reply["evalue"], reply["evalue"]
    assert stdout(outputs) == "" and not displays(outputs)


def test_statement_form_with_bad_option_runs_nothing(kc):
    reply, outputs = fails(kc, '%profview recur=sideways printf("ran\\n");', "MagicError")
    assert "flat" in reply["evalue"] and reply["evalue"].startswith("%profview: "), reply["evalue"]
    assert stdout(outputs) == ""


# ---------------------------------------------------------------- view options


def test_view_options(kc, opt_profile):
    base, cell = session_profile(kc, opt_profile)
    spec0 = base[VL_MIME]
    assert spec0["width"] == 800, spec0["width"]
    y0 = spec0["layer"][0]["encoding"]["y"]
    assert not dark(spec0["background"]), spec0["background"]

    b, rows, _, _ = show(kc, "%profshow width=600", "width600")
    assert b[VL_MIME]["width"] == 600
    svg_width = float(ET.fromstring(svg_of(b)).get("width"))
    assert 600 <= svg_width <= 700, svg_width

    b, rows, _, _ = show(kc, '%profshow title="hello"', "title")
    title = b[VL_MIME]["title"]
    assert (title["text"] if isinstance(title, dict) else title) == "hello", title
    assert "hello" in svg_of(b)

    b, rows, _, _ = show(kc, "%profshow icicle=true", "icicle")
    y1 = b[VL_MIME]["layer"][0]["encoding"]["y"]
    assert y1 != y0
    assert y1["field"] == "depth" and y1["scale"].get("reverse") is True, y1
    assert y0["scale"].get("reverse") in (False, None), y0
    assert [r["id"] for r in rows] == [r["id"] for r in rows_of(base)]

    b, rows, _, _ = show(kc, "%profshow theme=dark", "dark")
    assert dark(b[VL_MIME]["background"]), b[VL_MIME]["background"]
    m = re.search(r"<rect width='100%' height='100%' fill='(#[0-9a-fA-F]{6})'", svg_of(b))
    assert m is None or dark(m.group(1)), "the SVG's background is not dark"

    # All at once, straight on %%profview.
    b, rows, _, _ = show(kc, OPT_CELL.format(opts=' width=600 title="hello" icicle=true theme=dark'),
                         "all-view-options")
    spec = b[VL_MIME]
    assert spec["width"] == 600
    assert (spec["title"]["text"] if isinstance(spec["title"], dict) else spec["title"]) == "hello"
    assert spec["layer"][0]["encoding"]["y"]["scale"]["reverse"] is True
    assert dark(spec["background"])
    b, rows, _, _ = show(kc, OPT_CELL.format(opts=" height=400"), "height400")
    assert b[VL_MIME]["height"] == 400


def test_profview_view_icicle_is_the_flame_graph_upside_down(kc, tmp_path):
    """%%profview view=icicle: the cell's flame graph with the root at the
    top, as perf's and speedscope's users read it. Its spec says so and
    reverses the levels (check_spec.mjs has vega draw each frame below its
    parent); its SVG has the root's row above every other and each level
    below the one before; its frames are those %profshow draws of the same
    profile as the flame graph, and %profsave of the page writes its tab."""
    b, rows, _, _ = show(kc, OPT_CELL.format(opts=" view=icicle"), "view-icicle")
    spec = b[VL_MIME]
    assert spec["usermeta"]["cflame"]["icicle"] is True
    assert spec["layer"][0]["encoding"]["y"]["scale"]["reverse"] is True, spec["layer"][0]
    frames = graph_drawing_of(svg_of(b))["frames"]
    root = next(f for f in frames if f["name"] == rows[0]["func"])
    assert root["y"] == min(f["y"] for f in frames), "the icicle's root is not at the top"
    ys = sorted({f["y"] for f in frames})
    assert len(ys) >= 3, ys
    flame_b, flame_rows, _, _ = show(kc, "%profshow", "view-icicle-as-flame")
    assert flame_b[VL_MIME]["usermeta"]["cflame"]["icicle"] is False
    # The same frames (the root named for the session, not the cell).
    keys = ("id", "parent", "depth", "x0", "x1", "count", "self", "func", "file", "line", "module")
    assert [[r[k] for k in keys] for r in flame_rows[1:]] == [[r[k] for k in keys] for r in rows[1:]]
    assert flame_rows[0]["count"] == rows[0]["count"]
    flame_frames = graph_drawing_of(svg_of(flame_b))["frames"]
    assert sorted((f["name"], f["x"], f["w"]) for f in flame_frames[1:]) == \
        sorted((f["name"], f["x"], f["w"]) for f in frames if f is not root)
    assert flame_frames[0]["y"] == max(f["y"] for f in flame_frames)
    page = tmp_path / "icicle.html"
    ok(kc, f"%profsave {page} view=icicle")
    assert '<label for="cflame-tab-icicle">Icicle</label>' in page.read_text()


# ---------------------------------------------------------------- tree options


def outermost(rows, func):
    """Total count of the frames of func that have no frame of func below them."""
    index = by_id(rows)
    return sum(r["count"] for r in rows
               if r["func"] == func and not any(p["func"] == func for p in ancestors(rows, r, index)))


def test_lines_false_gives_one_frame_per_function(kc, opt_profile):
    base, cell = session_profile(kc, opt_profile)
    rows0 = rows_of(base)
    pairs0 = collections.Counter((r["parent"], r["func"]) for r in rows0)
    assert max(pairs0.values()) > 1, "with lines=true the calls on lines 3 and 5 should be apart"
    b, rows, _, _ = show(kc, "%profshow lines=false", "lines-false")
    pairs = collections.Counter((r["parent"], r["func"]) for r in rows)
    assert max(pairs.values()) == 1, [p for p, n in pairs.items() if n > 1]
    assert outermost(rows, "a") == outermost(rows0, "a")
    assert rows[0]["count"] == rows0[0]["count"]


def test_recur_flat_folds_self_recursion(kc):
    bundle, rows0, _, _ = show(kc, "%%profview\nvolatile long fs = 0;\nfor (int i = 0; i < 300; i++) fs += fib(24);",
                               "fib")
    assert len({r["depth"] for r in rows0 if r["func"] == "fib"}) > 3
    b, rows, _, _ = show(kc, "%profshow recur=flat", "fib-flat")
    depths = {r["depth"] for r in rows if r["func"] == "fib"}
    assert len(depths) == 1, depths
    assert sum(r["count"] for r in rows if r["func"] == "fib") == outermost(rows0, "fib")
    # And straight on %%profview.
    b, rows, _, _ = show(kc, "%%profview recur=flat\nvolatile long fs2 = 0;\n"
                             "for (int i = 0; i < 300; i++) fs2 += fib(24);", "fib-flat-view")
    assert len({r["depth"] for r in rows if r["func"] == "fib"}) == 1


def test_pruned_cuts_subtrees(kc, opt_profile):
    base, cell = session_profile(kc, opt_profile)
    rows0 = rows_of(base)
    bs0 = [r for r in rows0 if r["func"] == "b"]
    assert bs0 and any(children(rows0, r) for r in bs0), "b should call c"
    b, rows, _, _ = show(kc, "%profshow pruned=b", "pruned")
    bs = [r for r in rows if r["func"] == "b"]
    assert bs, "pruned=b removed b itself"
    assert not any(children(rows, r) for r in bs), "b still has children"
    assert not any(r["func"] == "c" for r in rows)
    assert sum(r["count"] for r in bs) == sum(r["count"] for r in bs0)
    assert rows[0]["count"] == rows0[0]["count"]


def test_filter_keeps_stacks_through_a_match(kc, opt_profile):
    base, cell = session_profile(kc, opt_profile)
    rows0 = rows_of(base)
    b, rows, _, _ = show(kc, "%profshow filter=b", "filter")
    root = rows[0]
    assert root["count"] == outermost(rows, "b") == outermost(rows0, "b"), (root, outermost(rows, "b"))
    assert root["count"] < rows0[0]["count"]
    assert not any(r["func"] == "a" for r in rows)
    b, rows, _, _ = show(kc, "%profshow filter=/^c$/", "filter-regex")
    assert rows[0]["count"] == outermost(rows, "c") == outermost(rows0, "c")


def test_minwidth_merges_narrow_frames(kc, opt_profile):
    base, cell = session_profile(kc, opt_profile)
    rows0 = rows_of(base)
    total = rows0[0]["count"]
    assert any(r["count"] < 0.2 * total for r in rows0), "no narrow frame to merge"
    b, rows, _, _ = show(kc, "%profshow minwidth=0.2", "minwidth")
    assert rows[0]["count"] == total
    # The same profile: exactly its frames of 20 % or more are drawn alone
    # (the root aside, which %profshow names "all"). Which those are is
    # measured: a() takes about 12.5 % per line, c() 50 %.
    def key(r):
        return (r["func"], r["file"], r["line"], r["depth"], r["count"])
    alone = [r for r in rows[1:] if not r["status"] & 4]
    assert sorted(map(key, alone)) == sorted(
        key(r) for r in rows0[1:] if r["count"] >= 0.2 * total), ([key(r) for r in rows0], b["text/plain"])
    assert any(r["func"] == "c" for r in rows), "c (50 %) is gone"
    # The narrower ones are drawn merged, one frame per parent, so that no
    # weight is out of sight: each frame weighs its self and its children.
    merged = [r for r in rows if r["status"] & 4]
    assert merged and all(re.fullmatch(rf"{COUNT} narrow frames?", r["func"]) for r in merged), rows
    assert len({r["parent"] for r in merged}) == len(merged), "two merged frames under one parent"
    kids = {}
    for r in rows[1:]:
        kids[r["parent"]] = kids.get(r["parent"], 0) + r["count"]
    assert all(r["count"] == r["self"] + kids.get(r["id"], 0) for r in alone + rows[:1]), rows
    assert "narrow frames merged into" in json.dumps(b[VL_MIME].get("title"))
    assert "hidden" in b["text/plain"]  # the text report's own line


ALLOC_FUNCS = re.compile(r"^(__libc_|__interceptor_)?(malloc|free|calloc|realloc)$|^_int_(malloc|free)|^tcache_|^alloc_perturb$|^malloc_consolidate$|^unlink_chunk$")


def test_C_true_shows_system_library_and_allocator_frames(kc):
    """A cell that spends its time in malloc/free (line 2) and in memset
    (line 3). With C=false (the default) those frames are folded into the
    cell's, whose status says which kinds were folded in (bit 1: system
    libraries, bit 2: the allocator); with C=true they show, from libc,
    coloured apart from cell code, with a legend naming the kinds."""
    ok(kc, "void *volatile keep_ptr;\nchar *mbuf = malloc(1 << 24);")
    code = ("%%profview{opts}\n"
            "for (int i = 0; i < 3000000; i++) { void *p = malloc(16 + i % 4000); keep_ptr = p; free(p); }\n"
            "for (int i = 0; i < 150; i++) { memset(mbuf, i, 1 << 24); sink += mbuf[i]; }")
    bundle, rows0, reply, _ = show(kc, code.replace("{opts}", ""), "alloc-memset")
    n = reply["execution_count"]
    assert not any("libc" in (r["module"] or "") for r in rows0), "C=false shows libc frames"
    tops = {r["line"]: r for r in rows0 if r["func"] == "top-level scope"}
    assert 2 in tops and 3 in tops, tops
    assert tops[2]["status"] & 2, f"the malloc line's status {tops[2]['status']} lacks bit 2 (allocator)"
    assert tops[3]["status"] & 1, f"the memset line's status {tops[3]['status']} lacks bit 1 (system libraries)"
    assert tops[3]["self"] >= 0.9 * tops[3]["count"]

    b, rows, _, _ = show(kc, "%profshow C=true", "alloc-memset-C")
    index = by_id(rows)
    # libc's, or (in a sanitizer build of cflame) the sanitizer runtime's
    # allocator and memset.
    libc = [r for r in rows if re.match(r"lib(c|asan)\.so", r["module"] or "")]
    assert libc, [(r["func"], r["module"]) for r in rows]
    # lines unset: libc's frames one per function (line 0), the cell's own
    # code by line; lines=true draws libc's lines too, where its debug
    # information (libc6-dbg) gives them
    assert all(r["line"] == 0 for r in libc), [(r["func"], r["line"]) for r in libc]
    assert {2, 3} <= {r["line"] for r in rows if r["func"] == "top-level scope"}
    lined = [r for r in rows_of(flame(kc, "%profshow C=true lines=true")[0])
             if (r["module"] or "").startswith("libc.so")]
    assert any(r["line"] > 0 for r in lined) or os.environ.get("CFLAME_SANITIZED"), \
        [(r["func"], r["line"]) for r in lined]
    alloc = [r for r in libc if ALLOC_FUNCS.search(r["func"])]
    # (A sanitizer's allocator calls memset itself, under malloc and free.)
    system = [r for r in libc if "memset" in r["func"]
              and not any(ALLOC_FUNCS.search(a["func"]) for a in ancestors(rows, r, index))]
    cell = [r for r in rows if r["module"] == f"cell[{n}]"]
    assert alloc and system and cell, [r["func"] for r in rows]
    # memset hangs on the memset line; malloc and free on the malloc line.
    assert all(ancestors(rows, r, index)[-2]["line"] == 3 for r in system), \
        [(r["func"], ancestors(rows, r, index)[-2]) for r in system]
    assert all(ancestors(rows, r, index)[-2]["line"] == 2 for r in alloc), \
        [(r["func"], ancestors(rows, r, index)[-2]) for r in alloc]
    # Three kinds, three palettes.
    colours = lambda rs: {r["color"] for r in rs}  # noqa: E731
    assert colours(alloc).isdisjoint(colours(system)), (colours(alloc), colours(system))
    assert colours(alloc).isdisjoint(colours(cell)) and colours(system).isdisjoint(colours(cell))
    legend = json.dumps([layer for layer in b[VL_MIME]["layer"] if layer.get("name") == "legend"])
    for kind in ("cell code", "system librar", "allocator"):
        assert kind in legend, legend


# ---------------------------------------------------------------- the session profile


def test_profile_accumulates_then_profshow_profprint_profclear(kc):
    ok(kc, "%profclear")
    reply, outputs = run(kc, "%%profile\nfor (int i = 0; i < 100; i++) a(PER_MS);")
    assert reply["status"] == "ok" and not displays(outputs) and stdout(outputs) == "", outputs
    c1 = reply["execution_count"]
    reply, outputs = run(kc, "%%profile\nfor (int i = 0; i < 40; i++) b(PER_MS);")
    assert reply["status"] == "ok" and not displays(outputs), outputs
    c2 = reply["execution_count"]
    reply, outputs = run(kc, "%profile a(50 * PER_MS);")
    assert reply["status"] == "ok" and not displays(outputs), outputs
    c3 = reply["execution_count"]

    bundle, rows, _, _ = show(kc, "%profshow", "profshow")
    index = by_id(rows)
    tops = {r["module"]: r for r in children(rows, rows[0]) if r["func"] == "top-level scope"}
    assert set(tops) == {f"cell[{c1}]", f"cell[{c2}]", f"cell[{c3}]"}, set(tops)
    assert any(r["func"] == "a" and index[r["parent"]]["module"] == f"cell[{c1}]" for r in rows)
    assert any(r["func"] == "b" and index[r["parent"]]["module"] == f"cell[{c2}]" for r in rows)
    s = summary_of(bundle)
    assert s["represented"] > 0.15, s["line"]

    out = ok(kc, "%profprint")
    assert summary_of(out)["samples"] == s["samples"]
    assert re.search(r"Count\s+Self\s+Frame", out), out
    assert re.search(rf"^\s*{COUNT}\s+{COUNT}\s+top-level scope\s+cell\[{c1}\]", out, re.M), out
    assert re.search(rf"^\s*{COUNT}\s+{COUNT}\s+b\s+cell\[", out, re.M), out

    out = ok(kc, "%profprint format=flat")
    assert re.search(r"Count\s+Self\s+Percent\s+Function", out), out
    assert re.search(rf"^\s*{COUNT}\s+{COUNT}\s+[\d.]+%\s+c\s", out, re.M), out

    assert ok(kc, "%profclear") == ""
    reply, outputs = run(kc, "%profshow")
    assert reply["status"] == "ok" and not displays(outputs)
    assert "empty" in stdout(outputs), stdout(outputs)
    assert "empty" in ok(kc, "%profprint")


def test_profile_and_profview_report_the_same_rate_and_cpu(kc):
    """The same work under %%profile (then %profprint) and under %%profview:
    one run's samples, CPU and wall time are counted once in the session
    profile, so both report the same rate and the samples represent the
    CPU the run used."""
    work = "for (int i = 0; i < 300; i++) a(PER_MS);"
    ok(kc, "%profclear")
    reply, outputs = run(kc, "%%profile\n" + work)
    assert reply["status"] == "ok", outputs
    merged = summary_of(ok(kc, "%profprint"))
    bundle, _, _, _ = show(kc, "%%profview\n" + work, "same-work")
    viewed = summary_of(bundle)
    for s in (merged, viewed):
        assert s["cpu"] and s["wall"], s["line"]
        assert abs(s["represented"] - s["cpu"]) <= 0.1 * s["cpu"], s["line"]
        assert s["cpu"] <= s["wall"] * 1.05 + 0.01, s["line"]
    assert abs(merged["rate"] - viewed["rate"]) <= 0.15 * viewed["rate"], (merged["line"], viewed["line"])
    # Both ran 300 ms of a(): their CPU times differ by noise, not twofold.
    assert 0.67 < merged["cpu"] / viewed["cpu"] < 1.5, (merged["line"], viewed["line"])


def test_profinit_shows_and_sets_the_interval(fresh):
    km, kc = fresh
    assert ok(kc, "%profinit").strip() == "n=1000000 delay=0.001"
    out = ok(kc, "%profinit delay=0.0005")
    assert "delay=0.0005" in out, out
    ok(kc, "__attribute__((noinline)) void spin(long n) { volatile double z = 0; for (long k = 0; k < n; k++) z += k; }")
    bundle, rows, _, _ = show(kc, "%%profview\nspin(100000000);", "profinit-0.5ms")
    s = summary_of(bundle)
    assert "every 0.5 ms" in s["line"], s["line"]
    assert s["interval"] == pytest.approx(0.0005)
    # delay= on the magic wins for that cell only.
    bundle, rows, _, _ = show(kc, "%%profview delay=0.002\nspin(100000000);", "delay-2ms")
    assert "every 2 ms" in summary_of(bundle)["line"]
    bundle, rows, _, _ = show(kc, "%%profview\nspin(100000000);", "profinit-again")
    assert "every 0.5 ms" in summary_of(bundle)["line"]
    assert ok(kc, "%profinit n=5000").strip() == "n=5000 delay=0.0005"
    fails(kc, "%profinit delay=fast", "MagicError")


def test_profsize_sets_the_default_size(fresh):
    km, kc = fresh
    ok(kc, "__attribute__((noinline)) void spin(long n) { volatile double z = 0; for (long k = 0; k < n; k++) z += k; }")
    out = ok(kc, "%profsize 600 300")
    assert "600" in out and "300" in out, out
    bundle, rows, _, _ = show(kc, "%%profview\nspin(100000000);", "profsize")
    assert bundle[VL_MIME]["width"] == 600 and bundle[VL_MIME]["height"] == 300
    # Options still win.
    bundle, rows, _, _ = show(kc, "%%profview width=700\nspin(100000000);", "profsize-width")
    assert bundle[VL_MIME]["width"] == 700 and bundle[VL_MIME]["height"] == 300
    fails(kc, "%profsize 600", "MagicError")


def test_profview_statement_form(kc):
    bundle, rows, reply, outputs = show(kc, "%profview a(100 * PER_MS);", "statement")
    n = reply["execution_count"]
    assert rows[0]["func"] == f"cell[{n}]"
    tops = children(rows, rows[0])
    assert [t["func"] for t in tops] == ["top-level scope"], tops
    assert any(r["func"] == "a" and r["parent"] == tops[0]["id"] for r in rows)
    bundle, rows, reply, outputs = show(kc, '%profview width=700 title="stmt" a(100 * PER_MS);',
                                        "statement-options")
    assert bundle[VL_MIME]["width"] == 700
    assert any(r["func"] == "a" for r in rows)


def test_profsave_writes_svg_vegalite_and_text(kc, tmp_path):
    bundle, rows, _, _ = show(kc, "%%profview\nfor (int i = 0; i < 100; i++) b(PER_MS);", "profsave")
    svg, vl, txt = tmp_path / "x.svg", tmp_path / "x.vl.json", tmp_path / "x.txt"
    for path in (svg, vl, txt):
        out = ok(kc, f"%profsave {path}")
        assert "Saved" in out and str(path) in out, out
        assert path.stat().st_size > 0
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert svg_of_file(svg.read_text()) == svg_of(bundle)
    spec = json.loads(vl.read_text())
    assert spec == bundle[VL_MIME]
    STORE.add(spec, "profsave.vl.json")
    text = txt.read_text()
    assert "top-level scope" in text and "samples" in text
    # Quoted paths with spaces.
    spaced = tmp_path / "with space.svg"
    ok(kc, f'%profsave "{spaced}"')
    assert svg_of_file(spaced.read_text()) == svg_of(bundle)
    # Options make a new graph of the same profile.
    wide = tmp_path / "wide.vl.json"
    ok(kc, f"%profsave {wide} width=1000")
    spec = json.loads(wide.read_text())
    assert spec["width"] == 1000
    STORE.add(spec, "profsave-wide.vl.json")


def test_profsave_unknown_extension_names_the_valid_ones(kc, tmp_path):
    path = tmp_path / "x.jpeg"
    reply, outputs = fails(kc, f"%profsave {path}", "MagicError")
    for ext in (".svg", ".vl.json", ".txt"):
        assert ext in reply["evalue"], reply["evalue"]
    assert not path.exists()


def test_profsave_html_and_folded(kc, tmp_path):
    show(kc, "%%profview\nfor (int i = 0; i < 100; i++) b(PER_MS);", "profsave-html")
    html, folded = tmp_path / "x.html", tmp_path / "x.folded"
    ok(kc, f"%profsave {html}")
    ok(kc, f"%profsave {folded}")
    assert "<html" in html.read_text().lower() and "vega" in html.read_text()
    lines = folded.read_text().splitlines()
    # (" N" with no frames is the root's own weight: samples taken in the
    # kernel's machinery around the cell, which flamegraph.pl reads too.)
    assert lines and all(re.fullmatch(r".* \d+", line) for line in lines), lines[:5]
    assert any(re.search(r";c \(cell\[\d+\]:\d+\) \d+$", line) for line in lines), lines[:5]


# ---------------------------------------------------------------- limits and faults


def test_full_buffer_stops_sampling_and_the_cell_goes_on(kc):
    bundle, rows, reply, outputs = show(
        kc, '%%profview n=2000\na(1000 * PER_MS);\nprintf("after the loop\\n");', "buffer-full")
    assert stdout(outputs) == "after the loop\n"
    s = summary_of(bundle)
    assert "buffer filled up" in bundle["text/plain"], bundle["text/plain"][:500]
    assert "n=" in bundle["text/plain"]
    assert s["cpu"] > 0.5 and s["represented"] < 0.7 * s["cpu"], s["line"]
    # The session goes on with the default buffer.
    bundle, rows, _, _ = show(kc, "%%profview\na(200 * PER_MS);", "after-full")
    assert "buffer filled up" not in bundle["text/plain"]


def test_crash_while_profiling_keeps_the_samples(fresh):
    km, kc = fresh
    ok(kc, "__attribute__((noinline)) double spin(long n) { double z = 0; for (long k = 0; k < n; k++) z += k * 0.5; return z; }")
    reply, outputs = fails(kc, '%%profview\nprintf("%g\\n", spin(200000000));\nint *p = 0;\n*p = 1;',
                           "SIGSEGV")
    crashed = reply["execution_count"]
    assert "Segmentation fault" in reply["evalue"]
    # The graph of what ran until the crash comes before the error.
    assert "The flame graph shows what the cell ran until then" in reply["evalue"], reply["evalue"]
    shown = displays(outputs)
    assert len(shown) == 1, [o["msg_type"] for o in outputs]
    rows = rows_of(keep(shown[0]["data"], "crashed"))
    assert sum(r["count"] for r in rows if r["func"] == "spin") >= 50, [(r["func"], r["count"]) for r in rows]
    assert ok(kc, 'printf("alive %g\\n", spin(10));').startswith("alive")
    bundle, rows, _, _ = show(kc, "%profshow", "after-crash")
    index = by_id(rows)
    spins = [r for r in rows if r["func"] == "spin" and index[r["parent"]]["module"] == f"cell[{crashed}]"]
    assert spins and sum(r["count"] for r in spins) >= 50, [(r["func"], r["module"]) for r in rows]
    # Profiling works in the new worker.
    bundle, rows, _, _ = show(kc, "%%profview\nspin(100000000);", "after-crash-profview")
    assert any(r["func"] == "spin" for r in rows)
    # A run cut short by a crash makes no baseline.
    reply, outputs = fails(kc, "%%profbase crashed\nspin(100000000);\nint *p = 0;\n*p = 1;", "SIGSEGV")
    assert "No baseline was kept" in reply["evalue"], reply["evalue"]
    reply, outputs = fails(kc, "%profdiffview crashed\nspin(10);", "MagicError")


def test_crash_in_profview_replaces_the_session_profile(fresh):
    km, kc = fresh
    ok(kc, "__attribute__((noinline)) double spin(long n) { double z = 0; for (long k = 0; k < n; k++) z += k * 0.5; return z; }")
    reply, outputs = run(kc, "%%profview\nspin(200000000);")
    before = reply["execution_count"]
    reply, outputs = fails(kc, "%%profview\nspin(200000000);\nint *p = 0;\n*p = 1;", "SIGSEGV")
    crashed = reply["execution_count"]
    bundle, _, _ = flame(kc, "%profshow")
    modules = {r["module"] for r in rows_of(bundle) if r["func"] == "top-level scope"}
    assert modules == {f"cell[{crashed}]"}, f"after %%profview of cell[{crashed}]: {modules} (cell[{before}] ran before)"
    s = summary_of(bundle)
    if s["cpu"]:
        assert abs(s["represented"] - s["cpu"]) <= 0.05 * s["cpu"], s["line"]


def test_interrupting_a_profiled_loop(kernel):
    km, kc = kernel
    # It prints once it has run 20 ms of CPU: samples before the interrupt.
    running = 'printf("running\\n");\nfflush(stdout);\n'
    r, dt = interrupt_when_printed(km, kc, f"%%profview\na(20 * PER_MS);\n{running}for (;;) a(PER_MS);",
                                   "running\n")
    assert r.reply["status"] == "error", r.reply
    assert r.reply["ename"] == "Interrupted", r.reply
    assert dt < 1.0, f"the reply came {dt:.2f} s after the interrupt"
    # Where a cell that does not end spends its time: the graph of what it
    # ran until the interrupt, before the error.
    assert "The flame graph shows what the cell ran until then" in r.reply["evalue"], r.reply
    shown = displays(r.outputs)
    assert len(shown) == 1, [o["msg_type"] for o in r.outputs]
    bundle = keep(shown[0]["data"], "interrupted")
    rows = rows_of(bundle)
    s = summary_of(bundle)
    assert sum(row["count"] for row in rows if row["func"] == "a") >= 0.8 * s["samples"], s["line"]
    # However busy the machine, the samples stand for the CPU the loop got
    # before the interrupt, and it got some: bounds from the run's own
    # figures, not from how long it should have run.
    assert s["cpu"] > 0 and s["samples"] >= 10, s["line"]
    assert abs(s["represented"] - s["cpu"]) <= 0.1 * s["cpu"] + 0.002, s["line"]
    assert s["cpu"] <= s["wall"] * 1.05 + 0.01, s["line"]
    assert ok(kc, 'printf("still here\\n");') == "still here\n"
    # %%profile adds what ran to the session profile; a baseline is not kept.
    ok(kc, "%profclear")
    r, dt = interrupt_when_printed(km, kc, f"%%profile\na(150 * PER_MS);\n{running}for (;;) a(1);",
                                   "running\n")
    assert "was added to the session profile" in r.reply["evalue"], r.reply
    assert not displays(r.outputs)
    assert summary_of(ok(kc, "%profprint"))["samples"] > 100
    r, dt = interrupt_when_printed(km, kc, f"%%profbase cut\n{running}for (;;) a(1);", "running\n")
    assert "No baseline was kept" in r.reply["evalue"], r.reply
    reply, outputs = fails(kc, "%profdiffview cut\na(1);", "MagicError")
    assert "cut" in reply["evalue"]
    bundle, rows, _, _ = show(kc, "%%profview\na(100 * PER_MS);", "after-interrupt")
    assert any(r["func"] == "a" for r in rows)


def test_openmp_frames_name_their_cell(kc):
    ok(kc, "%cflags -std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall -fopenmp")
    ok(kc, "%ldflags -lm -fopenmp")
    try:
        # Thread 1 finishes at once and waits for thread 2 in libgomp,
        # which is time spent in the cell's call into libgomp.
        bundle, reply, outputs = flame(
            kc, "%%profview\n#pragma omp parallel for num_threads(2) schedule(static)\n"
                "for (int k = 0; k < 2; k++) a(k ? 200 * PER_MS : 1);")
        STORE.add(bundle, "openmp")
        n = reply["execution_count"]
        cell_rows = [r for r in rows_of(bundle) if r["func"] == "top-level scope"]
        assert cell_rows
        assert all(r["file"] == f"cell[{n}]" for r in cell_rows), [(r["file"], r["line"]) for r in cell_rows]
        assert_no_machinery(rows_of(bundle))
    finally:
        ok(kc, "%cflags -std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall")
        ok(kc, "%ldflags -lm")


# ---------------------------------------------------------------- every spec renders


def test_samples_at_the_edge_of_the_stack_do_not_crash_the_cell(fresh):
    """A cell recursing until some 1.5 KiB of its stack (RLIMIT_STACK, as
    pthread_getattr_np reads it for the main thread) are left, and working
    there under %%profview: the sampler's handler runs on the worker's
    alternate signal stack, so the samples that land at the bottom are
    taken, and the cell is not reported as a stack overflow."""
    km, kc = fresh
    # The kernel's address space capped at what it has now and 2 GiB more.
    pid = km.provisioner.process.pid
    vm_kb = int(re.search(r"VmSize:\s+(\d+)", open(f"/proc/{pid}/status").read()).group(1))
    cap = vm_kb * 1024 + (2 << 30)
    resource.prlimit(pid, resource.RLIMIT_AS, (cap, cap))
    ok(kc, r"""
#include <pthread.h>
#include <stdint.h>
#include <time.h>
int pthread_getattr_np(pthread_t, pthread_attr_t *);
static uintptr_t edge_low;
static long edge_iters;
static volatile double edge_sink;
static double edge_cpu(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec + t.tv_nsec / 1e9; }
/* No call at the bottom, where there is no room for one: 0.3 s of CPU in
 * as many iterations as took that long at the top. */
__attribute__((noinline)) void edge_work(void) {
  for (long i = 0; i < edge_iters; i++) edge_sink = edge_sink * 0.999 + 1;
}
__attribute__((noinline)) void edge_recurse(long d) {
  volatile char f[256];
  f[0] = (char)d;
  if ((uintptr_t)f - edge_low > 1024 + 512) edge_recurse(d + 1); else edge_work();
  edge_sink += f[0];
}
void edge_find(void) {
  pthread_attr_t a; void *addr; size_t size;
  pthread_getattr_np(pthread_self(), &a);
  pthread_attr_getstack(&a, &addr, &size);
  pthread_attr_destroy(&a);
  edge_low = (uintptr_t)addr;
  double start = edge_cpu();
  for (long i = 0; i < 10000000; i++) edge_sink = edge_sink * 0.999 + 1;
  edge_iters = (long)(1e7 * 0.3 / (edge_cpu() - start));
}""")
    _, rows, _, _ = show(kc, "%%profview\nedge_find();\nedge_recurse(0);", "edge-of-stack",
                         timeout=120)
    assert sum(r["count"] for r in rows if r["func"] == "edge_work") > 0


def test_zz_every_spec_passes_check_spec():
    """Every flame graph produced above validates against the Vega-Lite 5
    schema, compiles with no warnings, renders, and passes the row and size
    checks (check_spec.mjs)."""
    STORE.check()


def test_the_bundle_text_is_the_report_and_its_markdown_says_how_to_trust(tmp_path):
    """A console shows text/plain: the report, from its first line, with no
    word of notebooks or trust. The classic notebook and exports show the
    markdown item (no Vega-Lite renderer): under the graph, one line says
    where the interactive view is and, for output shown without its picture
    (untrusted), how to trust the notebook. %profsave x.txt keeps the
    report alone."""
    with start_kernel(memory=4 << 30) as (km, kc):
        cell = "volatile double s = 0; for (long i = 0; i < 200000000; i++) s += i * 0.5;"
        for magic, base in (("%%profview", None), ("%%profbase b", "b"), ("%%profdiffview b", "b")):
            reply, outputs = run(kc, f"{magic}\n{cell}", timeout=120)
            assert reply["status"] == "ok", (magic, reply)
            if magic.startswith("%%profbase"):
                continue
            data = [o for o in outputs if o["msg_type"] == "display_data"][0]["data"]
            lines = data["text/plain"].splitlines()
            assert re.match(rf"{COUNT} samples? every ", lines[0]), lines[:2]
            assert not re.search(r"(?i)trust|notebook", data["text/plain"]), lines[:2]
            md = data["text/markdown"]
            hint = re.search(r"<p class=\"cflame-hint\"[^>]*>([^<]*)</p>\n</div>\n$", md)
            assert hint and "JupyterLab" in hint.group(1) and "%profsave" in hint.group(1), md[-300:]
            assert "File &gt; Trust Notebook" in hint.group(1) and "jupyter trust" in hint.group(1), \
                hint.group(1)
            assert "\n\n" not in md.strip()  # still one HTML block
        saved = tmp_path / "diff.txt"
        ok(kc, f"%profsave {saved}")
        text = saved.read_text()
        assert "Trust Notebook" not in text and re.match(rf"{COUNT} samples? every ", text), text[:300]


def test_restarted_worker_reuses_the_modules_read_before(tmp_path):
    """A profile taken after the worker restarted (%reset: a new process,
    its libraries at other addresses) reads no module again: libc, whose
    debug information is the costliest to read, is kept by build-id. The
    kernel's log says what each profile read, reused and kept, at the debug
    level (CFLAME_LOG=debug)."""
    log_path = tmp_path / "kernel.log"
    # Time in libc's memset, for libc's module to be looked up: the cell
    # runs until the samples show it (C=true draws libc's frames).
    cell = ("%%profview C=true\nstatic char buf[1 << 20];\n"
            "void *(*volatile fill)(void *, int, size_t) = memset;\n"
            "for (int k = 0; k < 400; k++) fill(buf, k, sizeof buf);")
    with open(log_path, "w") as log, start_kernel(stderr=log, env={"CFLAME_LOG": "debug"}) as (km, kc):
        pids = []
        for _ in range(2):
            ok(kc, "#include <string.h>")
            bundle, _, _ = flame(kc, cell)
            assert any(r["module"] == "libc.so.6" for r in rows_of(bundle)), rows_of(bundle)[:8]
            pids.append(worker_pid_of(km))
            ok(kc, "%reset")
        assert pids[0] != pids[1], "%reset did not start a new worker"
    lines = re.findall(r"^\[cflame\] profile of cell \d+: read in [\d.]+ ms; modules read (\d+), reused (\d+); "
                       r"kept (\d+)", log_path.read_text(), re.M)
    assert len(lines) == 2, log_path.read_text()
    (read1, reused1, kept1), (read2, reused2, kept2) = [tuple(map(int, x)) for x in lines]
    assert read1 >= 1 and kept1 == read1, lines  # libc at least, read for the first profile
    # The second worker's profile finds what the first read (reused), and
    # reads only modules the first did not meet (a library sampled only
    # now): nothing was dropped and read again.
    assert reused2 >= 1, f"the restarted worker's profile reused nothing: {lines}"
    assert kept2 == kept1 + read2, f"a kept module was dropped and read again: {lines}"


def test_the_kernels_log_is_quiet_unless_asked(tmp_path):
    """The kernel's stderr, which `jupyter console` and nbconvert print with
    the cells' output, holds no line of the kernel's own for requests
    served well and a profiled cell; CFLAME_LOG=debug brings those lines,
    and a level that is not one is named."""
    cell = "%%profview\nvolatile double s = 0;\nfor (long i = 0; i < 30000000; i++) s += i;"
    logs = {}
    for level in (None, "debug", "loud"):
        log_path = tmp_path / f"kernel-{level}.log"
        with open(log_path, "w") as log, start_kernel(stderr=log, env={"CFLAME_LOG": level}) as (km, kc):
            ok(kc, 'printf("hi\\n");')
            flame(kc, cell)
            kc.complete("pri", 3, reply=True, timeout=60)
        logs[level] = log_path.read_text()
    assert "[cflame]" not in logs[None], logs[None]
    assert re.search(r"^\[cflame\] profile of cell 2: read in", logs["debug"], re.M), logs["debug"]
    assert re.search(r"^\[cflame\] shell: execute_request$", logs["debug"], re.M), logs["debug"]
    assert "CFLAME_LOG=loud is not a log level: warn (the default) or debug" in logs["loud"], logs["loud"]
    assert "profile of cell" not in logs["loud"], logs["loud"]


def worker_pid_of(km):
    """The pid of the kernel's worker: its one child named cflame-worker."""
    kpid = km.provisioner.process.pid
    for child in (pathlib.Path(f"/proc/{kpid}/task/{kpid}/children").read_text().split()):
        if pathlib.Path(f"/proc/{child}/comm").read_text().strip().startswith("cflame-work"):
            return int(child)
    return None
