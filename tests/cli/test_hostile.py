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
