# SPDX-License-Identifier: BSD-3-Clause
"""`cflame record --top` (docs/CLI.md): the live table, as a user sees it.

tests/cli/record/top.c spends 3 s of CPU in turns of one() and three(),
three() doing three times one()'s work in a loop of its own, and prints a
line every 50 turns. Under a pseudo-terminal (python's pty, 30 rows of 100
columns) cflame record --top draws its table at the bottom, and the test
reads what the terminal was sent: the table drawn at least twice while the
program ran, growing, within the terminal, naming three() with a self share
that agrees with the final profile's (its samples are a prefix of the
final's: the bound is the binomial interval of the table's own count); the
program's own lines all there; the final profile what a run without --top
writes. The same attached to the program running (--pid), and to a shell
whose child does the work (--follow-forks). On pipes (no terminal) --top writes nothing more: the output is
that of a run without it, but for the numbers.

Environment (set by tests/cli/CMakeLists.txt): CFLAME_BIN, the cflame binary.
"""
import fcntl
import math
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path

import pytest
from cflame_text import COUNT, count, folded_stacks as folded  # (tests/lib)

CFLAME = os.path.abspath(os.environ.get("CFLAME_BIN", "build/bin/cflame"))
SOURCES = Path(__file__).resolve().parent / "record"
ROWS, COLS = 30, 100
SECONDS = 3.0
# A net for a hung run, scaled for a sanitizer build; never a bound on
# what is measured.
NET_S = 120 * (4 if os.environ.get("CFLAME_SANITIZED") == "1" else 1)


@pytest.fixture(scope="module")
def top_bin(tmp_path_factory):
    d = tmp_path_factory.mktemp("top-bin")
    out = d / "top"
    subprocess.run(["cc", "-O2", "-g", "-fno-omit-frame-pointer", "-o", out,
                    SOURCES / "top.c"], check=True, capture_output=True, text=True)
    return out


def in_terminal(argv, cwd):
    """Runs argv with a pseudo-terminal of ROWS x COLS as its standard
    input, output and error; returns (exit status, bytes the terminal was
    sent)."""
    pid, fd = pty.fork()
    if pid == 0:
        try:
            os.chdir(cwd)
            os.execv(argv[0], [str(a) for a in argv])
        finally:
            os._exit(127)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    out = b""
    while True:
        ready, _, _ = select.select([fd], [], [], NET_S)
        assert ready, f"no output for {NET_S} s: {out[-2000:]!r}"
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            break
        if not data:
            break
        out += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), out


# A table as drawn: a line moved to (row, 1) and cleared, then its text.
LINE_RE = re.compile(rb"\x1b\[(\d+);1H\x1b\[2K([^\x1b]*)")
HEAD_RE = re.compile(rf"^cflame record --top: \d+ s, ({COUNT}) samples \(interval \d+ ms\): ")


def tables(out):
    """Each drawn table, as [(row, text)], in the order drawn: a table is
    the lines between a save of the cursor and its restore."""
    found = []
    for m in re.finditer(rb"\x1b7((?:\x1b\[\d+;1H\x1b\[2K[^\x1b]*)+)\x1b8", out):
        found.append([(int(r), t.decode()) for r, t in LINE_RE.findall(m.group(1))])
    return found


def self_share(table, func):
    """(self samples of func, samples in all) in a drawn table."""
    total = count(HEAD_RE.match(table[0][1]).group(1))
    for _, text in table:
        cells = text.split()
        if len(cells) >= 6 and cells[5] == func:
            return count(cells[0]), total
    raise AssertionError(f"{func} is not in the table: {table}")


def drawn_tables(out):
    """The tables drawn, each within the bottom half of the terminal and
    its width, their counts growing; at least two."""
    text = out.decode(errors="replace")
    drawn = [t for t in tables(out) if t and HEAD_RE.match(t[0][1])]
    assert len(drawn) >= 2, f"the table was drawn {len(drawn)} times: {text[-3000:]}"
    counts = [count(HEAD_RE.match(t[0][1]).group(1)) for t in drawn]
    assert counts == sorted(counts) and counts[-1] > counts[0], counts
    for table in drawn:
        for row, line in table:
            assert ROWS // 2 < row <= ROWS, (row, line)
            assert len(line) <= COLS, line
    # The terminal is given back: its scrolling region reset, the table
    # cleared, before cflame says what became of the program (a followed
    # child left running) and what it wrote.
    assert re.search(r"\x1b\[r\x1b\[\d+;1H\x1b\[J\x1b8(?:cflame record: [^\x1b]*?\r\n)*"
                     r"cflame record: wrote top\.folded", text), text[-1000:]
    return drawn


def check_agrees(table, folded_path):
    """three()'s self share in the table agrees with the final profile's."""
    stacks = folded(folded_path)
    final_total = sum(stacks.values())
    final_three = sum(n for s, n in stacks.items() if s.split(";")[-1] == "three")
    p = final_three / final_total
    assert 0.6 < p < 0.9, f"three() has {p:.1%} of the final profile"
    live_three, live_total = self_share(table, "three")
    q = live_three / live_total
    # The table's samples are a prefix of the final profile's: its share
    # differs from the final one by less than the binomial interval of
    # its own count (4 sigma).
    bound = 4 * math.sqrt(p * (1 - p) / live_total)
    assert abs(q - p) <= bound, f"table {q:.3f} of {live_total}, final {p:.3f}, bound {bound:.3f}"


def test_top_on_a_terminal(top_bin, tmp_path):
    status, out = in_terminal([CFLAME, "record", "--top", "-o", "top.folded", "--no-lines", "--",
                               top_bin, SECONDS], tmp_path)
    text = out.decode(errors="replace")
    assert status == 0, text[-3000:]
    drawn = drawn_tables(out)
    # The program's own output reached the terminal whole.
    plain = re.sub(r"\x1b(?:\[[\d;]*[A-Za-z]|[78])", "", text)  # the escape sequences left out
    turns = int(re.search(r"(\d+) turns", plain).group(1))
    assert turns > 0
    said = re.findall(r"turn (\d+)\r\n", plain)
    assert said == [str(t) for t in range(50, turns + 1, 50)], (said, turns)
    check_agrees(drawn[-1], tmp_path / "top.folded")


def test_top_while_attached(top_bin, tmp_path):
    target = subprocess.Popen([top_bin, "60"], stdout=subprocess.DEVNULL)
    try:
        status, out = in_terminal([CFLAME, "record", "--top", "--pid", target.pid, "--duration",
                                   SECONDS, "-o", "top.folded", "--no-lines"], tmp_path)
        text = out.decode(errors="replace")
        assert status == 0, text[-3000:]
        assert "attached to pid" in text
        check_agrees(drawn_tables(out)[-1], tmp_path / "top.folded")
        assert target.poll() is None, "the target did not go on"
    finally:
        target.kill()
        target.wait()


def test_top_while_attached_shows_the_children_it_follows(top_bin, tmp_path):
    """--top --follow-forks on a shell that, once attached to, runs the
    work as a child: the table is of the child's samples too, and agrees
    with the final profile. (Without the children, the table had nothing
    but the shell's.)"""
    target = subprocess.Popen(["sh", "-c", 'read go; "$0" 60; exit 0', top_bin],
                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                              start_new_session=True)
    ran = {}
    argv = [CFLAME, "record", "--top", "--follow-forks", "--pid", target.pid, "--duration",
            SECONDS, "-o", "top.folded", "--no-lines"]
    watching = threading.Thread(target=lambda: ran.update(r=in_terminal(argv, tmp_path)))
    watching.start()
    try:
        # Seized: what the shell forks from now on is followed.
        status_file = Path(f"/proc/{target.pid}/status")
        while re.search(r"TracerPid:\s*0\n", status_file.read_text()) and watching.is_alive():
            time.sleep(0.01)
        target.stdin.write(b"go\n")
        target.stdin.flush()
        watching.join(NET_S)
        status, out = ran["r"]
        text = out.decode(errors="replace")
        assert status == 0, text[-3000:]
        check_agrees(drawn_tables(out)[-1], tmp_path / "top.folded")
    finally:
        os.killpg(target.pid, signal.SIGKILL)
        target.wait()


def normalized(text):
    """text with its numbers and the recording's temporary names made
    alike: what stays is its structure."""
    return re.sub(r"\d+(?:[.,]\d+)*", "N", text)


def test_top_without_a_terminal_writes_nothing_more(top_bin, tmp_path):
    runs = {}
    for name, extra in (("plain", []), ("top", ["--top"])):
        r = subprocess.run([CFLAME, "record", *extra, "-o", f"{name}.folded", "--no-lines", "--",
                            top_bin, "1"], cwd=tmp_path, capture_output=True, timeout=NET_S)
        assert r.returncode == 0, r.stderr.decode()
        runs[name] = r
    for stream in ("stdout", "stderr"):
        plain = getattr(runs["plain"], stream).decode()
        top = getattr(runs["top"], stream).decode()
        assert "\x1b" not in top, top
        assert normalized(top) == normalized(plain.replace("plain.folded", "top.folded")), \
            (stream, plain, top)
    # The same stacks: main's calls of one() and three().
    def funcs(path):
        return {s for s, n in folded(path).items() if n >= 10}
    assert funcs(tmp_path / "top.folded") == funcs(tmp_path / "plain.folded")
