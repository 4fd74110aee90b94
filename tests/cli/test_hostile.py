# SPDX-License-Identifier: BSD-3-Clause
"""Profiles from elsewhere may be hostile: each file here is one a
colleague, a CI artifact or a bug report could hand over, and cflame must
answer it with a clear error or a correct result, never a crash, a forged
report or a gate that passes on nothing."""
from pprof_write import profile
from test_cli import cflame, ok


def test_a_pprof_without_period_or_values_is_refused_not_divided_by(tmp_path):
    zero = tmp_path / "zero.pb"
    zero.write_bytes(profile(["main"], [([0], 0)]))
    r = cflame("--format", "folded", zero)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"no samples found in {zero}: every sample's value is 0" in r.stderr


def test_control_characters_in_names_neither_forge_lines_nor_break_round_trips(tmp_path):
    evil = tmp_path / "evil.pb"
    evil.write_bytes(profile(
        ["main", "evil\nTotal: 999 samples", ("bell\x07\x1b[2J", "dir\r/x.c")],
        [([1, 0], 3000), ([2, 0], 1000)], period_type=("cpu", "nanoseconds"), period=1000))
    text = ok("-f", "text", evil)
    lines = text.splitlines()
    # one line per frame, the header's total the only "Total:" line
    assert [l for l in lines if l.startswith("Total:")] == [lines[0]], text
    assert "evil\\x0aTotal: 999 samples" in text and "bell\\x07\\x1b[2J" in text, text
    assert "\x1b" not in text and "\x07" not in text
    # folded stacks read back, found to be folded stacks, as the same profile
    folded = tmp_path / "evil.folded"
    ok("-f", "folded", "-o", folded, evil)
    assert ok("-f", "folded", folded) == folded.read_text()
    assert "\x1b" not in folded.read_text()
    # and pprof too
    again = tmp_path / "again.pb"
    ok("-f", "pprof", "-o", again, folded)
    assert ok("-f", "folded", again) == folded.read_text()
