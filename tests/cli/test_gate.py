# SPDX-License-Identifier: BSD-3-Clause
"""The CI gate of the cflame command line (docs/CLI.md, "A CI gate"):
`cflame --diff BASE NEW --fail-above PCT` exits 1 and lists the frames whose
share of their profile's total grew by more than PCT points, exits 0
otherwise, writes -o either way, and exits 2 for bad input (nothing
written then).

Environment as tests/cli/test_cli.py's (tests/CMakeLists.txt).
"""
import re
import xml.etree.ElementTree as ET

import pytest

from test_cli import SVG_NS, cflame


@pytest.fixture
def runs(tmp_path):
    """base: work 40%, parse 40%, io 20%. grown: work 60%, parse 20%,
    io 10%, fresh 10%. longer: base's shares, recorded ten times as long."""
    base, grown, longer = (tmp_path / n for n in ("base.folded", "grown.folded",
                                                  "longer.folded"))
    base.write_text("job;main;work 400\njob;main;parse 400\njob;main;io 200\n")
    grown.write_text("job;main;work 600\njob;main;parse 200\njob;main;io 100\n"
                     "job;main;fresh 100\n")
    longer.write_text("job;main;work 4000\njob;main;parse 4000\njob;main;io 2000\n")
    return base, grown, longer


def listed(stderr):
    """{frame: (base %, new %, growth)} of the gate's list."""
    out = {}
    for line in stderr.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+([\d.]+)%\s+\+([\d.]+)\s+(\S+)\s+\((.*)\)$", line)
        if m:
            out[m.group(4)] = (float(m.group(1)), float(m.group(2)), float(m.group(3)))
    return out


def test_gate_fails_lists_the_frames_and_writes_the_graph(runs, tmp_path):
    base, grown, _ = runs
    out = tmp_path / "diff.svg"
    r = cflame("--diff", base, grown, "--fail-above", "5", "-o", out)
    assert r.returncode == 1, r.stderr
    assert "2 frames grew by more than 5 points" in r.stderr, r.stderr
    assert listed(r.stderr) == {"work": (40.0, 60.0, 20.0), "fresh": (0.0, 10.0, 10.0)}
    assert "work  (job;main;work)" in r.stderr
    # the artifact: the diff graph, written all the same
    svg = ET.parse(out).getroot()
    assert svg.tag == SVG_NS + "svg"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["base.folded", "grown.folded", "longer.folded", "diff.svg"])


def test_gate_passes_and_writes_the_graph(runs, tmp_path):
    base, grown, longer = runs
    out = tmp_path / "diff.html"
    r = cflame("--diff", base, grown, "--fail-above", "25", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "passed; the largest growth is work, +20.00 points (40.00% -> 60.00%)" in r.stderr
    assert "<svg" in out.read_text()
    # shares, not counts: ten times the samples is no growth
    r = cflame("--diff", base, longer, "--fail-above", "0.5", "-o", tmp_path / "same.svg")
    assert r.returncode == 0 and "no frame's share grew" in r.stderr, r.stderr
    # the other way round, work shrank (60% -> 40%) and fresh vanished: not
    # failures; parse and io grew
    r = cflame("--diff", grown, base, "--fail-above", "5", "-f", "text", "-o", tmp_path / "d.txt")
    assert r.returncode == 1, r.stderr
    assert listed(r.stderr) == {"parse": (20.0, 40.0, 20.0), "io": (10.0, 20.0, 10.0)}
    r = cflame("--diff", grown, longer, "--fail-above", "20", "-o", tmp_path / "d2.svg")
    assert r.returncode == 0, r.stderr


def test_gate_options(runs, tmp_path):
    base, grown, _ = runs
    # self shares: main's own is 0 both times; work's self is its total here
    r = cflame("--diff", base, grown, "--fail-above", "5", "--delta", "self", "-o",
               tmp_path / "s.svg")
    assert r.returncode == 1 and "self share of each profile's total" in r.stderr
    # the gate compares BASE to the INPUTs whatever is drawn (--negate)
    r = cflame("--diff", base, grown, "--fail-above", "5", "--negate", "-o", tmp_path / "n.svg")
    assert r.returncode == 1 and set(listed(r.stderr)) == {"work", "fresh"}
    # pprof inputs, and tree options that apply to both sides
    ok_pb = [cflame(f, "-o", tmp_path / (f.stem + ".pb.gz")).returncode for f in (base, grown)]
    assert ok_pb == [0, 0]
    r = cflame("--diff", tmp_path / "base.pb.gz", tmp_path / "grown.pb.gz", "--fail-above", "5",
               "-o", tmp_path / "p.svg")
    assert r.returncode == 1 and set(listed(r.stderr)) == {"work", "fresh"}
    r = cflame("--diff", base, grown, "--fail-above", "5", "--filter", "parse", "-o",
               tmp_path / "f.svg")
    assert r.returncode == 0, r.stderr  # only parse's stacks: 100% both times


def test_gate_on_a_comparison_its_options_emptied_is_an_error(runs, tmp_path):
    """A filter gone stale after a rename must not turn the gate off."""
    base, grown, _ = runs
    for args, what in ((["--filter", "zzz"], "--filter left no sample of either side"),
                       (["--filter", "fresh"], "--filter left no sample of BASE")):
        r = cflame("--diff", base, grown, "--fail-above", "5", *args, "-o", tmp_path / "e.svg")
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert f"--fail-above 5: nothing to compare: {what}" in r.stderr, r.stderr
        assert "passed" not in r.stderr
    r = cflame("--diff", grown, base, "--fail-above", "5", "--filter", "fresh", "-o",
               tmp_path / "e.svg")
    assert r.returncode == 2 and "--filter left no sample of the INPUTs" in r.stderr, r.stderr


def test_gate_bad_input_exits_2_and_writes_nothing(runs, tmp_path):
    base, grown, _ = runs
    out = tmp_path / "diff.svg"
    garbage = tmp_path / "garbage.folded"
    garbage.write_text("job;main;work 3\njob;main;parse lots\n")
    cut = tmp_path / "cut.pb.gz"
    assert cflame(grown, "-o", tmp_path / "whole.pb.gz").returncode == 0
    cut.write_bytes((tmp_path / "whole.pb.gz").read_bytes()[:30])
    for args, why in (
        (["--diff", base, tmp_path / "missing.folded"], "cannot open"),
        (["--diff", tmp_path / "missing.folded", grown], "cannot open"),
        (["--diff", base, garbage], f"{garbage}:2: not a line of folded stacks"),
        (["--diff", base, cut], f"{cut} starts as a gzip file"),
    ):
        r = cflame(*args, "--fail-above", "5", "-o", out)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert why in r.stderr, r.stderr
        assert not out.exists()
    # an output that cannot be written is an error too, not a verdict
    r = cflame("--diff", base, grown, "--fail-above", "5", "-o", tmp_path / "no" / "d.svg")
    assert r.returncode == 2 and "cannot write" in r.stderr
    # and a bad command line
    for args, why in ((["--fail-above", "5", grown], "--fail-above needs --diff BASE"),
                      (["--diff", base, "--fail-above", "five", grown], "--fail-above five"),
                      (["--diff", base, "--fail-above", "101", grown], "from 0 to 100"),
                      (["--diff", base, "--fail-above", "nan", grown], "--fail-above nan"),
                      (["--diff", base, "--fail-above", "-inf", grown], "from 0 to 100"),
                      (["--diff", base, "--fail-above", "inf", grown], "from 0 to 100")):
        r = cflame(*args)
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)


# ---- two builds of one program, named differently ----

def recorded(path, program, stacks):
    """A folded file as `cflame record` writes one: every stack under a root
    frame named after its program (or process)."""
    path.write_text("".join(f"{program};main;{stack} {n}\n" for stack, n in stacks))
    return path


def test_programs_of_other_names_are_compared_as_one(tmp_path):
    # bt against bt_slow: work grew from 40% to 60%, nothing else moved
    # but what work took from parse and io
    base = recorded(tmp_path / "bt.folded", "bt",
                    [("work", 400), ("parse", 400), ("io", 200)])
    slow = recorded(tmp_path / "bt_slow.folded", "bt_slow",
                    [("work", 600), ("parse", 200), ("io", 200)])
    r = cflame("--diff", base, slow, "--fail-above", "5", "-f", "text", "-o", tmp_path / "d.txt")
    assert r.returncode == 1, r.stderr
    assert listed(r.stderr) == {"work": (40.0, 60.0, 20.0)}, r.stderr
    assert "1 frame grew by more than 5 points" in r.stderr
    assert ("cflame: note: each profile is one program: the target's bt_slow is compared with "
            "the baseline's bt") in r.stderr
    # the programs and main matched: no frame is new, none vanished, and the
    # header says why the two programs were compared
    text = (tmp_path / "d.txt").read_text()
    assert "each profile is one program: the target's bt_slow is compared with the baseline's bt" \
        in text
    assert re.search(r"^grew: .*, new: 0, vanished: 0;", text, re.M), text
    # so a run of the same shares passes
    same = recorded(tmp_path / "bt2.folded", "bt2", [("work", 40), ("parse", 40), ("io", 20)])
    r = cflame("--diff", base, same, "--fail-above", "1", "-o", tmp_path / "s.svg")
    assert r.returncode == 0 and "no frame's share grew" in r.stderr, r.stderr


def test_root_prefix_matches_processes_by_the_start_of_their_names(tmp_path):
    # two processes each: a program and its helper, named by pid as
    # `cflame record` names processes of one program
    base = tmp_path / "base.folded"
    base.write_text("bt (pid 11);main;work 400\nbt (pid 12);main;parse 400\n"
                    "sh;main;io 200\n")
    slow = tmp_path / "slow.folded"
    slow.write_text("bt_slow (pid 31);main;work 600\nbt_slow (pid 32);main;parse 200\n"
                    "sh;main;io 200\n")
    # by name, the bt processes are all new
    r = cflame("--diff", base, slow, "--fail-above", "5", "-o", tmp_path / "n.svg")
    assert r.returncode == 1 and "+60.00" in r.stderr, r.stderr
    r = cflame("--diff", base, slow, "--fail-above", "5", "--root-prefix", "bt", "-f", "text",
               "-o", tmp_path / "p.txt")
    assert r.returncode == 1, r.stderr
    # the process that works, its main and work grew by 20 points, and
    # nothing else: bt (pid 11) is compared with bt_slow (pid 31)
    grown = listed(r.stderr)
    assert "work" in grown and {g for _, _, g in grown.values()} == {20.0}, r.stderr
    assert "bt_slow (pid 31);main;work)" in r.stderr
    text = (tmp_path / "p.txt").read_text()
    assert 'roots whose names start with "bt" are compared with each other' in text
    assert re.search(r"^grew: .*, new: 0, vanished: 0;", text, re.M), text
    # the option needs --diff, and a text
    r = cflame("--root-prefix", "bt", slow)
    assert r.returncode == 2 and "--root-prefix need --diff BASE" in r.stderr, r.stderr
    r = cflame("--diff", base, "--root-prefix", "", slow)
    assert r.returncode == 2 and "--root-prefix: the text is empty" in r.stderr, r.stderr
