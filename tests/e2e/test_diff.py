# SPDX-License-Identifier: BSD-3-Clause
"""Differential flame graphs through the kernel (docs/DIFF.md):
%%profbase keeps a baseline, %%profdiffview shows a profile against it.

The workload is ProfileVega's documentation example translated to C: f1(n)
sums 10,000 random numbers n times, then again; f2(n) sums 20,000 n times,
takes the maximum of 1,000 n times, then sums 5,000 n times."""
import json
import os
import pathlib
import re
import subprocess
import tempfile

import pytest

from conftest import errors, fails, frames_of, ok, run, start_kernel, stdout, svg_of

WORKLOAD = r"""
__attribute__((noinline)) double sum_rand(int k) {
    static unsigned s = 12345;
    double t = 0;
    for (int i = 0; i < k; i++) { s = s * 1103515245u + 12345u; t += (s >> 8) * 1e-7; }
    return t;
}
__attribute__((noinline)) double max_arr(int k) {
    static double a[1000];
    static unsigned s = 777;
    double m = -1;
    for (int r = 0; r < 8; r++)
        for (int i = 0; i < k; i++) { s = s * 1103515245u + 12345u; a[i] = s >> 8; if (a[i] > m) m = a[i]; }
    return m;
}
double f1(int n) {
    double res = 0;
    for (int i = 0; i < n; i++) res += sum_rand(10000);
    for (int i = 0; i < n; i++) res -= sum_rand(10000);
    return res;
}
double f2(int n) {
    double res = 0;
    for (int i = 0; i < n; i++) res += sum_rand(20000);
    for (int i = 0; i < n; i++) res += max_arr(1000);
    for (int i = 0; i < n; i++) res -= sum_rand(5000);
    return res;
}
"""

N = 20000  # about 0.5 s of CPU for f1, some 500 samples


def display(outputs):
    shown = [o for o in outputs if o["msg_type"] == "display_data"]
    assert len(shown) == 1, f"expected one flame graph, got {[o['msg_type'] for o in outputs]}"
    return shown[0]["data"]


def rows_of(data):
    return frames_of(data)


def check_with_vegalite(data, tmp):
    """The real vega-lite 5 and vega 5 accept the spec (tests/render)."""
    node = os.environ.get("CFLAME_NODE", "node")
    src = pathlib.Path(os.environ.get("CFLAME_SOURCE_DIR", pathlib.Path(__file__).parents[2]))
    spec_file = pathlib.Path(tmp) / "diff.vl.json"
    spec_file.write_text(json.dumps(data["application/vnd.vegalite.v5+json"]))
    proc = subprocess.run([node, str(src / "tests/render/check_spec.mjs"), str(spec_file)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def diffed(kc):
    ok(kc, WORKLOAD)
    out = ok(kc, f"%%profbase before\nprintf(\"%.1f\\n\", f1({N}));", timeout=120)
    assert "Baseline before:" in out, out
    reply, outputs = run(kc, f"%%profdiffview before\nprintf(\"%.1f\\n\", f2({N}));", timeout=120)
    assert reply["status"] == "ok", reply
    return display(outputs)


def frames(rows, func):
    return [r for r in rows if r["func"] == func]


def test_profbase_lists_the_baseline(kc, diffed):
    listing = ok(kc, "%profbase")
    line = next(l for l in listing.splitlines() if l.startswith("before"))
    assert "CPU" in line and "1 ms" in line and "-O2" in line


def test_diff_rows_carry_base_delta_change(diffed):
    rows = rows_of(diffed)
    for r in rows:
        assert {"base", "delta", "change"} <= r.keys()
        assert r["change"] in ("grew", "shrank", "same", "new")
        assert (r["base"] is None) == (r["change"] == "new")


def test_first_loop_grew_last_shrank_max_arr_new(diffed):
    rows = rows_of(diffed)
    # Under f2 (matched with f1, a renamed cell function) sum_rand appears
    # twice: the first loop (20,000 against 10,000) and the last (5,000
    # against 10,000). Frames are per line, so a sample or two can also land
    # on sum_rand's first or last line (its prologue, its return): frames of
    # their own, left out here by taking the two widest.
    widest = sorted(frames(rows, "sum_rand"), key=lambda r: r["count"], reverse=True)[:2]
    sums = sorted(widest, key=lambda r: r["x0"])
    assert len(sums) == 2, sums
    first, last = sums[0], sums[-1]
    assert first["change"] == "grew" and first["delta"] > 0, first
    assert last["change"] == "shrank" and last["delta"] < 0, last
    maxes = frames(rows, "max_arr")
    assert maxes and all(r["change"] == "new" and r["base"] is None for r in maxes), maxes
    f2 = frames(rows, "f2")
    assert f2 and f2[0]["base"] is not None, "f2 should pair with the baseline's f1"


def test_diff_bundle_holds_three_renderings_and_validates(diffed, tmp_path):
    assert set(diffed) == {"application/vnd.vegalite.v5+json", "text/markdown", "text/plain"}
    import xml.etree.ElementTree as ET
    ET.fromstring(svg_of(diffed))
    assert "before" in diffed["text/plain"]
    check_with_vegalite(diffed, tmp_path)


def test_negate_draws_the_baseline_layout(kc, diffed, tmp_path):
    reply, outputs = run(kc, f"%%profdiffview before negate=true\nf2({N});", timeout=120)
    assert reply["status"] == "ok"
    data = display(outputs)
    rows = rows_of(data)
    # The baseline's layout: f1's two loops of sum_rand, no max_arr.
    assert not frames(rows, "max_arr")
    assert frames(rows, "f1")
    check_with_vegalite(data, tmp_path)


def test_profsave_redraws_a_diff_against_the_same_baseline(kc, diffed, tmp_path):
    """%profsave with options draws the last diff again: its line under the
    title names the baseline, and long lines wrap inside the graph."""
    out = tmp_path / "self.svg"
    ok(kc, f"%profsave {out} delta=self")
    import xml.etree.ElementTree as ET
    texts = [t.text or "" for t in ET.parse(out).getroot().iter("{http://www.w3.org/2000/svg}text")]
    assert any(t.endswith("against baseline before") for t in texts), texts[:6]
    width = float(ET.parse(out).getroot().get("width"))
    assert all(len(t) * 6.5 <= width for t in texts[:6]), texts[:6]


def test_a_workload_against_itself_is_mostly_neutral(kc):
    # f1's time is in two frames of about half each, and the default
    # noise=2 colours a frame whose change passes 2 standard deviations:
    # one run in twenty of the same code would colour one of them. At 4
    # standard deviations a frame is coloured by chance once in 15,000.
    ok(kc, f"%%profbase self\nf1({N});", timeout=120)
    reply, outputs = run(kc, f"%%profdiffview self noise=4\nf1({N});", timeout=120)
    assert reply["status"] == "ok"
    rows = rows_of(display(outputs))
    total = rows[0]["count"]
    neutral = sum(r["self"] for r in rows if r["change"] == "same")
    assert neutral / total >= 0.8, [(r["func"], r["change"], r["delta"]) for r in rows]


def test_unknown_baseline_names_the_valid_ones(kc, diffed):
    reply, outputs = fails(kc, '%%profdiffview nosuch\nprintf("ran\\n");', "MagicError")
    assert "nosuch" in reply["evalue"] and "before" in reply["evalue"]
    assert stdout(outputs) == ""


def test_bad_diff_option_names_the_valid_ones(kc, diffed):
    reply, _ = fails(kc, "%%profdiffview before delta=both\nf2(10);", "MagicError")
    assert "total" in reply["evalue"] and "self" in reply["evalue"]


def test_statement_forms(kc, diffed):
    out = ok(kc, f"%profbase stmt f1({N // 2});", timeout=120)
    assert "Baseline stmt:" in out, out
    reply, outputs = run(kc, f"%profdiffview stmt delta=self f2({N // 2});", timeout=120)
    assert reply["status"] == "ok"
    assert rows_of(display(outputs))


FIB_CELLS = [
    "__attribute__((noinline)) long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }",
    "%%profbase fib1\nvolatile long r = 0; for (int i = 0; i < 3; i++) r += fib(38);",
    # The same function, redefined over four lines: its frames are other
    # lines in another cell.
    "__attribute__((noinline)) long fib(int n) {\n  if (n < 2)\n    return n;\n"
    "  return fib(n - 1) + fib(n - 2);\n}",
    "%%profdiffview fib1\nvolatile long r = 0; for (int i = 0; i < 3; i++) r += fib(38);",
]


def vanished_of(text):
    """(frame, baseline share in %) for each line under "Vanished"."""
    out, on = [], False
    for line in text.splitlines():
        if line.startswith("Vanished"):
            on = True
        elif on and "\u2014" in line:
            m = re.search(r"^\s+(\S+).*\(([\d.]+)%\)", line)
            out.append((m[1], float(m[2])))
    return out


def test_a_redefined_function_is_not_counted_twice(kc):
    """A recursive fib redefined in another cell compares with its old self:
    the baseline's samples of fib meet the new fib's frames instead of being
    listed as vanished while the new frames count as new."""
    for code in FIB_CELLS[:3]:
        ok(kc, code, timeout=120)
    reply, outputs = run(kc, FIB_CELLS[3], timeout=120)
    assert reply["status"] == "ok", reply
    data = display(outputs)
    rows = rows_of(data)
    text = data["text/plain"]
    top = [r for r in rows if r["func"] == "fib" and rows[r["parent"]]["func"] == "top-level scope"]
    widest = max(top, key=lambda r: r["count"])
    assert widest["base"] is not None, f"the new fib met no baseline frame: {widest}"
    gone = vanished_of(text)
    assert sum(share for _, share in gone) <= 3, f"baseline frames listed as vanished: {gone}\n{text[-3000:]}"
    # What is new is fib's own new lines (the test and the return), never
    # most of the graph.
    new = sum(r["count"] for r in rows if r["change"] == "new" and rows[r["parent"]]["change"] != "new")
    assert new <= 0.35 * rows[0]["count"], f"{new} of {rows[0]['count']} samples are in new frames"


REDEF_CELLS = [
    "__attribute__((noinline)) double keep(int k) {\n"
    "    volatile double t = 0; for (int i = 0; i < k; i++) t += i * 1e-9; return t;\n}\n"
    "__attribute__((noinline)) double redef(int k) {\n"
    "    volatile double t = 0; for (int i = 0; i < 3 * k; i++) t += i * 1e-9; return t;\n}",
    "%%profbase b1\nkeep(60000000); redef(60000000);",
    # redef again, in a later cell, doing a third of the work.
    "__attribute__((noinline)) double redef(int k) {\n"
    "    volatile double t = 0;\n    for (int i = 0; i < k; i++)\n        t += i * 1e-9;\n"
    "    return t;\n}",
]


def test_the_diff_table_pairs_what_the_graph_pairs(kc, tmp_path):
    """keep(); redef(); as a baseline, redef redefined in a later cell, the
    same statements again: the graph compares redef with redef and the
    cells' statements with each other, and so does view=top of the same
    run. It listed 'redef cell[3] +48 new' beside 'redef cell[1] -142
    shrank' (issue 35)."""
    for code in REDEF_CELLS:
        ok(kc, code, timeout=120)
    reply, outputs = run(kc, "%%profdiffview b1\nkeep(60000000); redef(60000000);", timeout=120)
    assert reply["status"] == "ok", reply
    rows = rows_of(display(outputs))
    graph = {r["func"]: r["change"] for r in rows if r["func"] in ("redef", "top-level scope")}
    assert graph.get("redef") == "shrank", graph
    out = tmp_path / "top.txt"
    ok(kc, f"%profsave {out} view=top")
    table = out.read_text()
    lines = {}
    for line in table.splitlines():
        m = re.match(r"^\s*([-+][\d,.]+)\s+(\S+)\s+(\S+)\s+(new|vanished|grew|shrank|same)\s+(.+?)  (\S+)$", line)
        if m:
            lines.setdefault(m[5], []).append((m[4], m[6]))
    assert set(lines) >= {"keep", "redef", "top-level scope"}, table
    for func in ("redef", "top-level scope"):
        assert len(lines[func]) == 1, f"{func} is {len(lines[func])} rows:\n{table}"
        assert lines[func][0][0] not in ("new", "vanished"), table
    assert lines["redef"][0][0] == "shrank", table


def test_profiles_of_two_programs_are_compared_as_one(tmp_path):
    """%profload of two recordings whose roots are their programs (bt and
    bt_slow, as `cflame record` names them) compares them frame by frame,
    says so in the notes; root_prefix= matches processes by the start of
    their names."""
    base, slow = tmp_path / "bt.folded", tmp_path / "bt_slow.folded"
    base.write_text("bt;main;work 400\nbt;main;parse 400\n")
    slow.write_text("bt_slow;main;work 600\nbt_slow;main;parse 200\n")
    pids_base, pids_slow = tmp_path / "pb.folded", tmp_path / "ps.folded"
    pids_base.write_text("bt (pid 11);main;work 400\nbt (pid 12);main;parse 400\n")
    pids_slow.write_text("bt_slow (pid 31);main;work 600\nbt_slow (pid 32);main;parse 200\n")
    with start_kernel(memory=4 << 30) as (km, kc):
        ok(kc, f"%profload {base} as=bt")
        ok(kc, f"%profload {slow}")
        reply, outputs = run(kc, "%profdiffview bt", timeout=60)
        data = display(outputs)
        rows = {r["func"]: r for r in rows_of(data)}
        assert rows["bt_slow"]["change"] != "new" and rows["bt_slow"]["base"] == 800, rows
        assert rows["work"]["change"] == "grew" and rows["parse"]["change"] == "shrank"
        text = data["text/plain"]
        assert ("each profile is one program: the target's bt_slow is compared with the "
                "baseline's bt") in text, text
        assert "vanished: 0" in text, text
        ok(kc, f"%profload {pids_base} as=pids")
        ok(kc, f"%profload {pids_slow}")
        reply, outputs = run(kc, "%profdiffview pids", timeout=60)
        # by name, the processes of bt_slow are new
        assert any(r["change"] == "new" for r in rows_of(display(outputs))), outputs
        reply, outputs = run(kc, "%profdiffview pids root_prefix=bt", timeout=60)
        data = display(outputs)
        assert [r["func"] for r in rows_of(data) if r["change"] == "new"] == [], rows_of(data)
        assert 'roots whose names start with "bt" are compared with each other' in \
            data["text/plain"]


# ---- history: %%profdiffview prev and %profhistory

def test_profdiffview_prev_compares_an_edited_cell_with_its_last_run(kc):
    """A cell (known to the kernel by the cell id in the request's metadata,
    as JupyterLab sends it) is profiled running f1, then edited to run f2
    under %%profdiffview prev: the diff's baseline is the first run (its
    total the first run's samples), f2's frames are new and f1's vanished,
    and the note says what it was compared with. %profhistory lists both
    runs with the command that shows each, and shows one."""
    ok(kc, WORKLOAD)
    reply, outputs = run(kc, f"%%profview\nprintf(\"%.1f\\n\", f1({N}));", cell_id="hist-a",
                         timeout=120)
    assert reply["status"] == "ok", reply
    first = display(outputs)
    first_total = rows_of(first)[0]["count"]
    reply, outputs = run(kc, f"%%profdiffview prev\nprintf(\"%.1f\\n\", f2({N}));",
                         cell_id="hist-a", timeout=120)
    assert reply["status"] == "ok", reply
    diff = display(outputs)
    rows = rows_of(diff)
    meta = diff["application/vnd.vegalite.v5+json"]["usermeta"]["cflame"]["diff"]
    assert abs(meta["other_total"] - first_total) <= 0.5, (meta["other_total"], first_total)
    assert any(r["func"] == "f2" and r["change"] == "new" for r in rows), [r["func"] for r in rows]
    listed = ok(kc, "%profhistory")
    runs = re.findall(r"^\s*(\d+)\s+cell\[(\d+)\].*%profhistory (\d+)$", listed, re.M)
    assert len(runs) >= 2 and all(a == c for a, _, c in runs), listed
    said = f"compared with run {runs[-2][0]}, cell[{runs[-2][1]}]: this cell's previous run"
    assert said in diff["text/plain"], (said, diff["text/plain"][:600])
    # each run's samples as its graph counts them, not its stacks
    samples = re.search(rf"^\s*{runs[-2][0]}\s+cell\[\d+\]\s+\S+\s+([\d,]+)\s", listed, re.M)
    assert samples and int(samples.group(1).replace(",", "")) == first_total, (listed, first_total)
    reply, outputs = run(kc, f"%profhistory {runs[-2][0]}")
    assert reply["status"] == "ok" and rows_of(display(outputs))[0]["count"] == first_total


def test_profdiffview_prev_without_an_earlier_run_says_what_to_do(kc):
    """A cell with no earlier profiled run (a new cell id) is refused with
    a message that says how to get one; %%profbase prev is refused, since
    prev names the previous run; a run number not kept is an error."""
    reply, outputs = fails(kc, "%%profdiffview prev\nf1(10);", "MagicError", cell_id="hist-new")
    assert "no earlier profiled run" in reply["evalue"] and "%%profview first" in reply["evalue"]
    assert reply["evalue"].startswith("%%profdiffview prev: "), reply["evalue"]
    reply, outputs = fails(kc, "%%profbase prev\nf1(10);", "MagicError")
    assert "choose another name" in reply["evalue"]
    reply, outputs = fails(kc, "%profhistory 999", "MagicError")
    assert "not a run kept" in reply["evalue"]


def test_profdiffview_prev_without_a_cell_id_goes_by_the_code(kc):
    """Without a cell id (jupyter console, nbconvert), a cell is its code
    after the magic line: the same code runs again under %%profdiffview
    prev and compares with its last run."""
    ok(kc, WORKLOAD)
    reply, _ = run(kc, f"%%profview\nf1({N // 4});", timeout=120)
    assert reply["status"] == "ok"
    reply, outputs = run(kc, f"%%profdiffview prev\nf1({N // 4});", timeout=120)
    assert reply["status"] == "ok", reply
    assert "this cell's previous run" in display(outputs)["text/plain"]


def last_run(kc):
    """The number and cell of the last run %profhistory lists."""
    listed = ok(kc, "%profhistory")
    runs = re.findall(r"^\s*(\d+)\s+cell\[(\d+)\].*%profhistory \d+$", listed, re.M)
    assert runs, listed
    return runs[-1]


def test_profdiffview_prev_after_an_edit_without_a_cell_id_goes_by_likeness(kc):
    """Notebook 6, jupyter console and nbconvert send no cell id. A cell
    profiled running f1, then edited to run f2 under %%profdiffview prev,
    is compared with the earlier profiled code most like it (the first
    run, by its total), and the note says which run that is; a cell like
    no earlier one is refused, saying why and what was closest."""
    ok(kc, WORKLOAD)
    body = "double edited_by_likeness = {}({});\nprintf(\"%.1f\\n\", edited_by_likeness);"
    reply, outputs = run(kc, "%%profview\n" + body.format("f1", N), timeout=120)
    assert reply["status"] == "ok", reply
    first_total = rows_of(display(outputs))[0]["count"]
    number, cell = last_run(kc)
    ok(kc, f"%%profview\nf2({N // 8});", timeout=120)  # a run between, of other code
    reply, outputs = run(kc, "%%profdiffview prev\n" + body.format("f2", N), timeout=120)
    assert reply["status"] == "ok", reply
    diff = display(outputs)
    meta = diff["application/vnd.vegalite.v5+json"]["usermeta"]["cflame"]["diff"]
    assert abs(meta["other_total"] - first_total) <= 0.5, (meta["other_total"], first_total)
    rows = rows_of(diff)
    assert any(r["func"] == "f2" and r["change"] == "new" for r in rows), [r["func"] for r in rows]
    said = f"compared with run {number}, cell[{cell}]: the earlier profiled code most like"
    assert said in diff["text/plain"], (said, diff["text/plain"][:600])
    reply, _ = fails(kc, "%%profdiffview prev\nunlike_any_code_run_before_QXZ(0);", "MagicError")
    why = reply["evalue"]
    assert "no earlier profiled run" in why and "sends no cell id" in why and "closest" in why, why

