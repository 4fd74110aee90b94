# SPDX-License-Identifier: BSD-3-Clause
"""The cflame command's formats and views agree on generated profiles
(tests/unit/test_agree.c does the same through the library, over more).

Folded stacks are generated from a seed (random trees, recursion); the
command draws them as flame and top Vega-Lite specs, writes them as folded
stacks, pprof and speedscope and draws those again: every drawing's total and every
function's total and self equal what the generated stacks say. A diff of
two builds of a program (their roots named apart) drawn as a graph and as a
table says new for the same functions, and a diff saved as folded stacks is refused when read back.
A failure names its seed."""
import json
import random

import pytest

from cflame_bundle import frames_of, top_rows_of
from test_cli import cflame, ok

SEEDS = [3, 17, 101]


def generate(seed, rename=None, root="main"):
    """{stack tuple: weight} from seed: root at the root, then up to six
    frames of ten functions, a function sometimes calling itself."""
    rng = random.Random(seed)
    funcs = [f"fn{i}" for i in range(10)]
    if rename:
        funcs = [rename.get(f, f) for f in funcs]
    stacks = {}
    for _ in range(rng.randint(30, 80)):
        stack = [root]
        for _ in range(rng.randint(0, 6)):
            stack.append(stack[-1] if len(stack) > 1 and rng.random() < 0.25 else rng.choice(funcs))
        stacks[tuple(stack)] = stacks.get(tuple(stack), 0) + rng.randint(1, 20)
    return stacks


def write_folded(path, stacks):
    path.write_text("".join(f"{';'.join(s)} {w}\n" for s, w in stacks.items()))


def truth(stacks):
    """total, and per function (total: samples holding it once, self)."""
    per = {}
    for stack, w in stacks.items():
        for f in set(stack):
            per.setdefault(f, [0, 0])[0] += w
        per[stack[-1]][1] += w
    return sum(stacks.values()), per


def graph_numbers(spec):
    """The same, counted from a flame graph's frames."""
    rows = frames_of(spec)
    per = {}
    for i, r in enumerate(rows[1:], 1):
        children = sum(c["count"] for c in rows if c["parent"] == i)
        a, outer = r["parent"], True
        while a:
            outer &= rows[a]["func"] != r["func"]
            a = rows[a]["parent"]
        e = per.setdefault(r["func"], [0, 0])
        e[0] += r["count"] if outer else 0
        e[1] += r["count"] - children
    return rows[0]["count"], per


def draw(tmp_path, name, *args):
    out = tmp_path / name
    ok(*args, "--minwidth", "0", "-o", out)
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_every_format_and_view_counts_the_same(tmp_path, seed):
    stacks = generate(seed)
    src = tmp_path / "a.folded"
    write_folded(src, stacks)
    total, per = truth(stacks)
    graph = json.loads(draw(tmp_path, "a.vl.json", src).read_text())
    assert graph_numbers(graph) == (total, {f: v for f, v in per.items()}), f"seed {seed}: flame"
    top = top_rows_of(json.loads(draw(tmp_path, "top.vl.json", src, "--view", "top").read_text()))
    assert {f: [r["total"], r["self"]] for f, r in top.items()} == per, f"seed {seed}: top"
    for ending in ("folded", "pb.gz", "speedscope.json"):
        again = draw(tmp_path, f"again.{ending}", src)
        back = json.loads(draw(tmp_path, f"back-{ending}.vl.json", again).read_text())
        assert graph_numbers(back) == (total, per), f"seed {seed}: written as {ending}, read back"


@pytest.mark.parametrize("seed", SEEDS)
def test_a_diffs_graph_and_table_agree(tmp_path, seed):
    base, target = tmp_path / "base.folded", tmp_path / "target.folded"
    base_stacks = generate(seed)
    write_folded(base, base_stacks)
    in_base = {f for stack in base_stacks for f in stack}
    # Another build of the program: each profile is one program, compared
    # whatever its name (docs/DIFF.md, "Two programs").
    write_folded(target, generate(seed + 1, rename={"fn9": "fresh"}, root="main_v2"))
    graph = frames_of(json.loads(draw(tmp_path, "d.vl.json", "--diff", base, target).read_text()))
    table_spec = json.loads(
        draw(tmp_path, "dt.vl.json", "--diff", base, target, "--view", "top").read_text())
    table = top_rows_of(table_spec)
    names = [r["func"] for r in table_spec["layer"][0]["data"]["values"]]
    paired = {r["func"] for r in graph[1:] if r["base"] is not None}
    drawn = {r["func"] for r in graph[1:]}
    # A row is new exactly when the graph pairs none of its frames and the
    # baseline has no such function.
    for func, row in table.items():
        met = func in paired or func in in_base
        if row["change"] == "new":
            assert not met, f"seed {seed}: {func} is new in the table, met in the graph or baseline"
        elif row["change"] != "vanished":
            assert met, f"seed {seed}: {func} is {row['change']}, met nowhere"
    new_in_graph = drawn - paired - in_base
    assert all(table[f]["change"] == "new" for f in new_in_graph if f in table), (
        f"seed {seed}: {new_in_graph} new in the graph, {[table.get(f) for f in new_in_graph]}")
    assert len(names) == len(set(names)), f"seed {seed}: a function listed twice: {names}"


def test_a_saved_diff_is_refused_when_read(tmp_path):
    base, target = tmp_path / "base.folded", tmp_path / "target.folded"
    write_folded(base, generate(5))
    write_folded(target, generate(6))
    saved = draw(tmp_path, "d.folded", "--diff", base, target)
    r = cflame(saved, "-o", tmp_path / "x.svg")
    assert r.returncode != 0 and "diff" in r.stderr, r.stderr
    assert not (tmp_path / "x.svg").exists()
