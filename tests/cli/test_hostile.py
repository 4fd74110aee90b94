# SPDX-License-Identifier: BSD-3-Clause
"""Profiles from elsewhere may be hostile: each file here is one a
colleague, a CI artifact or a bug report could hand over, and cflame must
answer it with a clear error or a correct result, never a crash, a forged
report or a gate that passes on nothing."""
import gzip
import random
import subprocess

from pprof_write import profile
from test_cli import CFLAME, cflame, ok


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


def foreign_profile(tmp_path):
    """A profile from elsewhere naming /etc/passwd, a .env beside the
    project, a .c file whose link points out of the project, and the
    project's own source by a relative path."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / ".env").write_text("API_TOKEN=hunter2-private\n")
    (proj / "m.c").write_text("int main(void) {\n  return compute_answer();\n}\n")
    (proj / "link.c").symlink_to("/etc/passwd")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.c").write_text("int outside_the_root(void);\n")
    (proj / "escape.c").symlink_to(tmp_path / "elsewhere" / "secret.c")
    p = tmp_path / "p.folded"
    p.write_text("prog;main (/etc/passwd:1) 5\n"
                 f"prog;main;helper ({proj}/.env:1) 3\n"
                 "prog;main;linked (proj/link.c:1) 2\n"
                 "prog;main;escaped (proj/escape.c:1) 1\n"
                 "prog;main;run (proj/m.c:2) 4\n")
    return p, proj


SECRETS = ("root:", "hunter2-private", "outside_the_root")


def test_a_foreign_profile_reads_no_file_it_names(tmp_path):
    """Every output of a profile that names private files holds none of
    their text, and says which files it left out and which option shows
    them; the project's own source appears only under --source-root, and
    a link out of the root is still refused."""
    p, proj = foreign_profile(tmp_path)
    outputs = {}
    for name, args in (("page.html", []), ("src.txt", ["--view", "source"]),
                       ("src.svg", ["--view", "source"]), ("src.vl.json", ["--view", "source"]),
                       ("diff.html", ["--diff", p]), ("dsrc.txt", ["--view", "source", "--diff", p])):
        ok(*args, p, "-o", tmp_path / name, cwd=tmp_path)
        outputs[name] = (tmp_path / name).read_text()
    for name, text in outputs.items():
        for secret in SECRETS + ("compute_answer",):
            assert secret not in text, (name, secret)
    assert "2 files under no source root left unread (proj/m.c, proj/escape.c)" in outputs["src.txt"]
    assert "--source-root DIR" in outputs["src.txt"]
    # the project's own file, once its directory is a root; nothing else
    shown = ok("--view", "source", "-f", "text", "--source-root", "proj", p, cwd=tmp_path)
    assert "compute_answer" in shown
    for secret in SECRETS:
        assert secret not in shown
    assert "1 file under no source root left unread (proj/escape.c)" in shown


def test_an_input_truncated_while_read_is_never_a_signal(tmp_path):
    """Another process truncates and rewrites the input over and over while
    cflame reads it: each run ends with a profile or an error, never killed
    by a signal (a mapped file raises SIGBUS where it was cut)."""
    import threading
    import time

    path = tmp_path / "churned.folded"
    line = b"prog;main;" + b";".join(b"f%d" % i for i in range(50)) + b" 1\n"
    data = line * 200000  # 40 MB
    path.write_bytes(data)
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            with open(path, "r+b") as f:
                f.truncate(4096)
            time.sleep(0.002)
            with open(path, "r+b") as f:
                f.write(data)

    churner = threading.Thread(target=churn)
    churner.start()
    try:
        codes = [cflame("-f", "text", "--maxdepth", "2", path).returncode for _ in range(15)]
    finally:
        stop.set()
        churner.join()
    assert all(c >= 0 for c in codes), codes


# What a profile may cost: files of a few kilobytes that ask for gigabytes
# are refused with the limit and the option that raises it, never an abort
# (exit 134) after the memory ran out.
BUDGET = "of memory the budget allows; raise it with --max-memory SIZE"


def heavy(*args):
    """cflame on an input that takes gigabytes before the budget refuses
    it: 5 to 10 s of CPU, 30 under ASan, more on a loaded machine."""
    return subprocess.run([CFLAME, *map(str, args)], capture_output=True, text=True,
                          timeout=600)


def deep_folded(tmp_path):
    """One folded line of 6·10^7 frames: a 117 KB gzip."""
    path = tmp_path / "deep.folded.gz"
    path.write_bytes(gzip.compress((";".join(["a"] * 60_000_000) + " 1\n").encode(), 9))
    return path


def test_a_stack_of_60_million_frames_is_refused_not_an_abort(tmp_path):
    deep = deep_folded(tmp_path)
    assert deep.stat().st_size < 200_000
    r = heavy(deep, "-o", tmp_path / "deep.svg")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"the flame graph of {deep} (folded stacks) needs more than the " in r.stderr, r.stderr
    assert BUDGET in r.stderr, r.stderr
    assert not (tmp_path / "deep.svg").exists()


def test_pprof_files_that_ask_for_gigabytes_are_refused(tmp_path):
    refs = tmp_path / "refs.pb.gz"  # one sample of 5·10^7 location references
    refs.write_bytes(profile(["main"], [(b"\x01" * 50_000_000, 1)], gzipped=True))
    lines = tmp_path / "lines.pb.gz"  # a location of 3,000 lines, named 10,000 times
    lines.write_bytes(profile(["main", "work"], [(b"\x02" * 10_000 + b"\x01", 1)],
                              location_lines={1: 3000}, gzipped=True))
    assert refs.stat().st_size < 50_000 and lines.stat().st_size < 22_000
    for path in (refs, lines):
        r = heavy(path, "-o", tmp_path / "out.svg")
        assert r.returncode == 1, (path, r.returncode, r.stderr)
        assert f"the flame graph of {path} (pprof) needs more than the " in r.stderr, r.stderr
        assert BUDGET in r.stderr, r.stderr
        # a modest budget stops the reading itself, naming the file
        r = cflame("--max-memory", "64M", path, "-o", tmp_path / "out.svg")
        assert r.returncode == 1, (path, r.returncode, r.stderr)
        assert f"{path} needs more than the 64 MiB {BUDGET}" in r.stderr, r.stderr
    assert not (tmp_path / "out.svg").exists()


def test_a_string_table_of_25_million_strings_costs_what_the_budget_allows(tmp_path):
    strings = tmp_path / "strings.pb.gz"
    strings.write_bytes(profile(["main", "work"], [([1, 0], 5)], extra_strings=25_000_000,
                                gzipped=True))
    assert strings.stat().st_size < 50_000
    r = cflame("--max-memory", "64M", "-f", "folded", strings)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"{strings} needs more than the 64 MiB {BUDGET}" in r.stderr, r.stderr
    # the default allows the 25·10^6 strings: the profile is drawn (its one
    # sample's value of 5 ns is one interval of 5 ns)
    assert ok("-f", "folded", strings) == "main;work 1\n"


def test_a_modest_budget_refuses_a_large_profile_that_the_default_reads(tmp_path):
    """200,000 distinct stacks 20 to 40 frames deep (30 MB): read and drawn
    with the default budget, exactly; refused under max-memory 64M, whose
    error names the file, the limit and the option."""
    rng = random.Random(34)
    large = tmp_path / "large.folded"
    with large.open("w") as f:
        for _ in range(200_000):
            depth = rng.randint(20, 40)
            f.write(";".join(f"fn{k}_{rng.randint(0, 3)}" for k in range(depth)))
            f.write(f" {rng.randint(1, 9)}\n")
    expected = {}
    for line in large.read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        expected[stack] = expected.get(stack, 0) + int(count)
    folded = ok("-f", "folded", large)
    got = {s: int(c) for s, c in (l.rsplit(" ", 1) for l in folded.splitlines())}
    assert got == expected
    r = cflame("--max-memory", "64M", large, "-o", tmp_path / "large.svg")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"needs more than the 64 MiB {BUDGET}" in r.stderr, r.stderr
    assert str(large) in r.stderr, r.stderr
    for bad in ("lots", "0", "-1"):
        r = cflame("--max-memory", bad, large)
        assert r.returncode == 2 and f"--max-memory {bad}" in r.stderr, (bad, r.stderr)


def test_folded_output_that_would_take_gigabytes_is_refused_before_it_is_written(tmp_path):
    """A 32 KB pprof: 2,000 leaves under a location of 2,000 lines of a
    4,000-character name. Its tree has 4,000 nodes, but each folded line
    is the whole path's text: 16 GB of output, which the budget refuses
    before any of it is made; the SVG is drawn."""
    fns = ["main", "L" * 4000] + [f"leaf{i}" for i in range(2000)]
    amp = tmp_path / "amp.pb.gz"
    amp.write_bytes(profile(fns, [([i, 1, 0], 1) for i in range(2, 2002)],
                            location_lines={1: 2000}, gzipped=True))
    assert amp.stat().st_size < 40_000
    r = cflame("-f", "folded", amp, "-o", tmp_path / "amp.folded")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert f"writing the folded stacks of {amp} (pprof) needs more than the " in r.stderr
    assert BUDGET in r.stderr, r.stderr
    assert not (tmp_path / "amp.folded").exists()
    ok(amp, "-o", tmp_path / "amp.svg")
