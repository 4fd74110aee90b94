# SPDX-License-Identifier: BSD-3-Clause
"""`cflame record -- PROGRAM` (docs/CLI.md), run as a user runs it.

The programs are compiled here with cc (and mpicc): tests/cli/record/prog.c
runs known work in functions of its own and prints the CPU time each took,
which the profile's shares are held to (within 2 points: the bounds come
from what the program measured, never from the wall clock, on a busy
machine). Profiles are read back as folded stacks (--no-lines, one frame
per function).

Run with -s: the perf_event_paranoid test says on stdout what it checked
(as root it sets the sysctl to 3 and records as an unprivileged user; where
it cannot, it says what it recorded under instead).

Environment (set by tests/cli/CMakeLists.txt): CFLAME_BIN, the cflame binary;
CFLAME_SANITIZED=1 in a sanitizer build, whose --allocs is refused.
"""
import fcntl
import json
import os
import pty
import re
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import termios
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cflame_bundle import check_deep_drawing
from cflame_load import busy_loops  # (tests/lib)
from cflame_text import COUNT, count, count_in, folded_stacks as folded  # (tests/lib)
from cflame_tmpfs import in_small_tmpdir

CFLAME = os.path.abspath(os.environ.get("CFLAME_BIN", "build/bin/cflame"))
SOURCES = Path(__file__).resolve().parent / "record"
CC = os.environ.get("CC", "cc")
CFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer"]
# Work of one() in prog's rounds: about 20 ms of CPU on this machine's VMs,
# so that 10 rounds of one() and three() take some 0.8 s (800 samples at
# 1 ms), and each call is long against a scheduler tick (4 ms at 250 Hz),
# on which CPU timers fire where perf events are refused.
ITERS = 14_000_000
# A build with CFLAME_SANITIZE (tests/cli/CMakeLists.txt says).
SANITIZED = os.environ.get("CFLAME_SANITIZED") == "1"


# ---- building and running ----

@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    d = tmp_path_factory.mktemp("record-bins")
    os.chmod(d, 0o755)  # the paranoid test runs them as another user
    def cc(out, *args, compiler=CC):
        subprocess.run([compiler, *CFLAGS, "-o", d / out, *map(str, args)], check=True,
                       capture_output=True, text=True)
        return d / out
    b = {"prog": cc("prog", SOURCES / "prog.c", "-pthread"),
         "other": cc("other", SOURCES / "other.c")}
    b["hostile"] = cc("hostile", SOURCES / "hostile.c")
    b["deep"] = cc("deep", SOURCES / "deep.c", "-pthread")
    b["rawclone"] = cc("rawclone", SOURCES / "rawclone.c")
    b["static"] = cc("static", SOURCES / "other.c", "-static")
    workloads = SOURCES.parent.parent.parent / "bench/workloads"
    b["cycles"] = cc("dlopen_cycles", workloads / "dlopen_cycles.c")
    b["plugin"] = cc("plugin.so", workloads / "dlopen_plugin.c", "-shared", "-fPIC")
    b["setuid"] = d / "setuid"
    shutil.copy(b["other"], b["setuid"])
    os.chmod(b["setuid"], 0o4755)
    b["dir"] = d
    return b


def record(*args, cwd, stdin=None, env=None, timeout=180):
    return subprocess.run([CFLAME, "record", *map(str, args)], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else os.environ)


def recorded(*args, cwd, **kw):
    r = record(*args, cwd=cwd, **kw)
    assert r.returncode == 0, f"cflame record {' '.join(map(str, args))}: {r.returncode}\n{r.stderr}"
    return r


def weight(stacks, *frames, root=None):
    """Weight of the stacks that pass through every frame named (and start
    at root, when given)."""
    total = 0
    for stack, count in stacks.items():
        parts = stack.split(";")
        if root is not None and parts[0] != root:
            continue
        if all(f in parts for f in frames):
            total += count
    return total


def share_points(part, whole):
    return 100.0 * part / whole


def binomial_bound(p, n, z=4.0):
    """The largest difference of a share p measured over n samples that is
    not yet evidence of a bias: z standard deviations, and a sample."""
    return z * (p * (1 - p) / n) ** 0.5 + 1.0 / n


def check_share(got, measured, n, *context):
    """The profile's share got (in points, from n samples) is the share the
    program measured, within what n samples can tell: a bound from the
    samples the test took, not a fixed number of points, so that a loaded
    machine (coarser timers, fewer samples) does not fail a true profile."""
    bound = 100.0 * binomial_bound(measured / 100.0, n)
    assert abs(got - measured) <= bound, (got, measured, n, bound, *context)


def samples_in(stderr):
    """How many samples cflame record says it wrote."""
    return count_in(r": {count} samples? ", stderr)


def program_json(stdout):
    return json.loads([ln for ln in stdout.splitlines() if ln.startswith("{")][-1])


def split_share(r, folded_path):
    """three()'s share of one() and three() in points: the profile's (in the
    folded file) and what the program measured (on its stdout); and the
    samples the profile's share is of."""
    cpu = program_json(r.stdout)
    stacks = folded(folded_path)
    measured = share_points(cpu["three"], cpu["one"] + cpu["three"])
    n = weight(stacks, "one") + weight(stacks, "three")
    return share_points(weight(stacks, "three"), n), measured, n


# ---- the profile's truth ----

def test_a_recording_is_drawn_by_function_unless_lines_are_asked_for(bins, tmp_path):
    """The program is built with -g: its frames have lines. By default each
    function is one frame (perf report's and flamegraph.pl's picture);
    --lines draws one per line."""
    recorded("-o", "f.folded", "--", bins["prog"], "split", ITERS // 10, cwd=tmp_path)
    recorded("-o", "l.folded", "--lines", "--", bins["prog"], "split", ITERS // 10,
             cwd=tmp_path)
    by_func, by_line = folded(tmp_path / "f.folded"), folded(tmp_path / "l.folded")
    assert any(";burn" in s for s in by_func), by_func
    assert not any(re.search(r"\(\S+:\d+\)", s) for s in by_func), list(by_func)[:5]
    assert any(re.search(r";burn \(\S+:\d+\)", s) for s in by_line), list(by_line)[:5]


def test_one_to_three_split(bins, tmp_path):
    r = recorded("-o", "split.folded", "--no-lines", "--", bins["prog"], "split", ITERS,
                 cwd=tmp_path)
    got, measured, n = split_share(r, tmp_path / "split.folded")
    # A 1:3 split: the program's own CPU clock says 75%, and so does the profile.
    assert abs(measured - 75) <= 4, f"the work itself was not 1:3 here: {r.stdout}"
    check_share(got, measured, n)
    # Every stack hangs under the program's root and main, the work under one and three.
    stacks = folded(tmp_path / "split.folded")
    assert {s.split(";")[0] for s in stacks} == {"prog"}, stacks.keys()
    # No burn() lost its caller. one() may keep a sample of its own (the
    # timer can fire on its call or its store after the call), but its
    # work is burn()'s: a stack that skipped burn() wholesale would leave
    # far more than the 3% allowed here.
    assert weight(stacks, "burn") == (weight(stacks, "main", "one", "burn")
                                      + weight(stacks, "main", "three", "burn")), stacks
    assert weight(stacks, "main", "one", "burn") >= 0.97 * weight(stacks, "one"), stacks
    assert "wrote split.folded" in r.stderr


def test_source_view_of_a_recording(bins, tmp_path):
    """cflame record -o FILE.pb.gz, then --view source: the file of the
    hot loop (work.h, read from disk) comes first; the loop's line has
    nearly all the self time; the lines of one() and three() that call
    burn() carry their calls' totals, split as the program measured."""
    r = recorded("-o", "split.pb.gz", "--", bins["prog"], "split", ITERS, cwd=tmp_path)
    cpu = program_json(r.stdout)
    measured = share_points(cpu["three"], cpu["one"] + cpu["three"])
    out = subprocess.run([CFLAME, "--view", "source", "--source-root", SOURCES, "-f", "text",
                          "split.pb.gz"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    work_h = str(SOURCES / "work.h")
    first = re.search(r"\n\n(\S+)  self ", text)
    assert first and first.group(1) == work_h, text[:800]
    rows = {}
    for line in text.split(f"\n\n{work_h}  self ")[1].split("\n\n")[0].splitlines()[2:]:
        cells = line.split(None, 5)
        if len(cells) >= 5 and cells[4].isdigit():
            rows[int(cells[4])] = (cells[0], cells[2], cells[5] if len(cells) > 5 else "")
    source = (SOURCES / "work.h").read_text().splitlines()
    loop = next(i + 1 for i, s_ in enumerate(source) if "x = x * 0.999999 + 1.0" in s_)
    call1 = next(i + 1 for i, s_ in enumerate(source) if s_.strip() == "burn(n);")
    call3 = next(i + 1 for i, s_ in enumerate(source) if s_.strip() == "burn(3 * n);")
    cell = lambda c: 0 if c == "." else count(c)  # noqa: E731
    total = count_in(r"^Total: {count} samples", text)
    assert cell(rows[loop][0]) >= 0.9 * total, (rows[loop], total)
    assert rows[loop][2] == source[loop - 1].strip(), rows[loop]
    n1, n3 = cell(rows[call1][1]), cell(rows[call3][1])
    check_share(share_points(n3, n1 + n3), measured, n1 + n3, rows[call1], rows[call3])


# A recursive fib in Python, its calls through map (C), so that each level
# of Python is several of the interpreter's C frames (Python 3.11 calls
# Python functions from Python without a C frame of their own).
DEEP_PYTHON = """
import sys
sys.setrecursionlimit(100000)
def fib(n):
    return n if n < 2 else sum(map(fib, (n - 1, n - 2)))
def down(n):
    return fib(19) if n == 0 else sum(map(down, (n - 1,)))
for _ in range(80):
    down(150)
"""


def test_a_deep_python_recursion_keeps_its_labels_and_a_band(tmp_path):
    """`cflame record -- python3 -c` of a recursion hundreds of C frames
    deep: the SVG keeps the root and every frame wide enough labelled, the
    deepest levels are a band that says how many it holds, and the notes
    name height= and recur=flat (tests/lib's check_deep_drawing)."""
    out = tmp_path / "deep.svg"
    recorded("-o", out, "--", sys.executable, "-c", DEEP_PYTHON, cwd=tmp_path)
    check_deep_drawing(out.read_text())


def test_two_threads_both_with_their_shares(bins, tmp_path):
    r = recorded("-o", "threads.folded", "--no-lines", "--", bins["prog"], "threads", ITERS,
                 cwd=tmp_path)
    cpu = program_json(r.stdout)
    stacks = folded(tmp_path / "threads.folded")
    wa, wb = weight(stacks, "thread_a", "one"), weight(stacks, "thread_b", "three")
    assert wa and wb, stacks
    # Each thread's stacks begin at its start routine (the wrapper below it is
    # cut), but for a sample in the wrapper's own exit hook, after the routine
    # returned: the recorder's cost, under its own name (the hook, or the
    # recorder's leave_thread that it calls).
    assert all(s.split(";")[1] in ("main", "thread_a", "thread_b", "fl__thread_leave",
                                   "leave_thread")
               for s in stacks), stacks
    got, measured = share_points(wb, wa + wb), share_points(cpu["b"], cpu["a"] + cpu["b"])
    check_share(got, measured, wa + wb, cpu)
    assert "1 process, 3 threads" in r.stderr or "1 process, 2 threads" in r.stderr, r.stderr
    # --threads: 2 is the first thread the program started, thread_a.
    recorded("-o", "a.folded", "--no-lines", "--threads", "2", "--", bins["prog"], "threads",
             ITERS // 4, cwd=tmp_path)
    only = folded(tmp_path / "a.folded")
    assert weight(only, "thread_a") > 0 and weight(only, "thread_b") == 0, only


def test_forked_child_has_its_own_root(bins, tmp_path):
    r = recorded("-o", "fork.folded", "--no-lines", "--", bins["prog"], "fork", ITERS,
                 cwd=tmp_path)
    pids = program_json(r.stdout)
    stacks = folded(tmp_path / "fork.folded")
    parent, child = f"prog (pid {pids['parent']})", f"prog (pid {pids['child']})"
    assert {s.split(";")[0] for s in stacks} == {parent, child}, stacks.keys()
    assert weight(stacks, "child_work", root=child) > 0
    assert weight(stacks, "child_work", root=parent) == 0
    assert weight(stacks, "parent_work", root=parent) > 0
    assert weight(stacks, "parent_work", root=child) == 0
    # The child did three times the parent's work: its share of the CPU
    # the two measured (near 75%, but the two ran at once and shared the
    # machine) is its share of the samples.
    n = weight(stacks, "child_work") + weight(stacks, "parent_work")
    got = share_points(weight(stacks, "child_work"), n)
    measured = share_points(pids["child_cpu"], pids["child_cpu"] + pids["parent_cpu"])
    assert 60 <= measured <= 90, pids
    check_share(got, measured, n, pids)
    assert "2 processes" in r.stderr


def test_exec_is_its_own_program(bins, tmp_path):
    recorded("-o", "exec.folded", "--no-lines", "--", bins["prog"], "exec", ITERS, bins["other"],
             cwd=tmp_path)
    stacks = folded(tmp_path / "exec.folded")
    assert weight(stacks, "other_work", root="other") > 0, stacks.keys()
    assert weight(stacks, "parent_work", root="prog") > 0
    # The child's moment as prog, between fork and exec, is too short to sample;
    # nothing of other runs under prog.
    assert weight(stacks, "other_work", root="prog") == 0


def test_execs_in_a_row_are_not_hit_by_the_sampler(bins, tmp_path):
    # A sample that came due inside execve would be delivered in the new
    # program, before cflame's handler is there: it would die of SIGTRAP.
    # Sampling stops before each exec; 60 execs at 0.1 ms, each after a
    # little work, all get through.
    r = recorded("--delay", "0.0001", "-o", "chain.folded", "--no-lines", "--", bins["prog"],
                 "chain", ITERS // 50, 60, cwd=tmp_path)
    assert r.stdout == "chain done\n"
    assert weight(folded(tmp_path / "chain.folded"), "one") > 0


def test_a_child_keeps_the_descriptors_it_opened(bins, tmp_path):
    # The sampler's event of a forked child's thread has a descriptor; a
    # child that closes them all and opens files gets that number back.
    # Stopping the sampler before its exec must not close one of them.
    r = recorded("-o", "fd.folded", "--", bins["prog"], "keepfd", ITERS // 4, "out.txt",
                 cwd=tmp_path)
    assert r.stdout == "child status 0\n", r.stdout
    assert (tmp_path / "out.txt").read_text().split() == [str(fd) for fd in range(3, 20)]


# ---- what passes through ----

def test_stdin_stdout_stderr_and_status_pass_through(bins, tmp_path):
    r = record("--", bins["prog"], "io", 7, cwd=tmp_path, stdin="hello there\n")
    assert r.returncode == 7
    assert r.stdout == "out: hello there\n"
    lines = r.stderr.splitlines()
    assert lines[0] == "err: hello there"
    # Everything else on stderr is cflame's own, and says so.
    assert all(ln.startswith("cflame record: ") for ln in lines[1:]), lines


def test_signal_death_gives_128_plus_the_signal_and_a_profile(bins, tmp_path):
    r = record("-o", "killed.folded", "--no-lines", "--", bins["prog"], "kill", ITERS * 20,
               int(signal.SIGTERM), cwd=tmp_path)
    assert r.returncode == 128 + signal.SIGTERM, r.stderr
    assert "ended by signal 15 (TERM)" in r.stderr
    assert weight(folded(tmp_path / "killed.folded"), "one") > 0


def interrupted(args, cwd, interrupt, **popen):
    """Runs cflame record ARGS, in a session of its own, until the program
    prints "ready", calls interrupt(process), and returns (status, stdout,
    stderr). Whatever is left of the session is killed at the end."""
    popen.setdefault("start_new_session", True)
    # Unbuffered, and "ready" read a byte at a time: on a busy machine the
    # program may have printed more by the time it is read, which a
    # buffered readline would keep from communicate().
    p = subprocess.Popen([CFLAME, "record", *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, bufsize=0, **popen)
    try:
        line = b""
        while not line.endswith(b"\n") and (c := p.stdout.read(1)):
            line += c
        assert line == b"ready\n", line
        interrupt(p)
        out, err = (b.decode() for b in p.communicate(timeout=120))
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # the program too, should cflame be gone
        except ProcessLookupError:
            pass
        p.wait()
    return p.returncode, out, err


def test_a_raw_clone_child_is_named_with_its_cpu_time(bins, tmp_path):
    """A child made by syscall(SYS_clone, ...) runs without the sampler
    (no atfork handler starts it): cflame names it, pid and name, with the
    CPU time it used, instead of drawing 'in 1 process' and saying nothing.
    The CPU time said is what cflame saw at its last look, at most
    RC_RUN_WATCH_MS before the child ended: held to the CPU time the child
    measured itself, no more and (on a busy machine, loosely) not far
    less."""
    r = recorded("-o", tmp_path / "out.folded", "--", bins["rawclone"], "1.0", cwd=tmp_path)
    m = re.match(r"child (\d+) ([\d.]+)", r.stdout)
    assert m, r.stdout
    pid, used = int(m.group(1)), float(m.group(2))
    said = re.search(rf"pid {pid} \(rawclone\), below the program, was not followed: "
                     r"([\d.]+) s of CPU \(at least\) is in no stack", r.stderr)
    assert said, r.stderr
    assert 0.25 * used <= float(said.group(1)) <= used + 0.02, (used, r.stderr)


def program_of(cflame_pid, timeout=60):
    """The pid of the program cflame record runs (its only child)."""
    deadline = time.monotonic() + timeout
    path = Path(f"/proc/{cflame_pid}/task/{cflame_pid}/children")
    while time.monotonic() < deadline:
        children = path.read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.001)
    raise AssertionError("cflame record started no program")


def test_sigterm_while_converting_removes_the_recording_and_says_so(bins, tmp_path):
    """SIGTERM once the program has ended, while cflame turns 20,000
    dlopen/dlclose cycles (0.4 s of work after the program) into a profile:
    cflame ends by the signal as before (143 in a shell), and says that it
    wrote nothing and removed the recording, whose buffers are gone from
    $TMPDIR (they were left there, 110 MB for a long run, and nothing said)."""
    work = tmp_path / "tmp"
    work.mkdir()
    env = dict(os.environ, TMPDIR=str(work))
    out = tmp_path / "out.folded"
    p = subprocess.Popen([CFLAME, "record", "-o", out, "--", bins["cycles"], bins["plugin"],
                          "20000"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    program = program_of(p.pid)
    # cflame reaps the program as soon as it ends: gone from /proc, it has
    # ended and cflame is converting.
    while Path(f"/proc/{program}").exists():
        time.sleep(0.001)
    p.send_signal(signal.SIGTERM)
    stdout, stderr = p.communicate(timeout=180)
    assert "20000 cycles" in stdout
    assert "wrote" not in stderr, "SIGTERM came after the profile was written: " + stderr
    assert p.returncode == -signal.SIGTERM, stderr
    assert re.search(r"ended by SIGTERM while turning the recording into a profile: no profile "
                     r"written; the recording \(.*cflame-record-\w+\) is removed", stderr), stderr
    assert list(work.iterdir()) == []
    assert not out.exists()


def test_a_signal_ignored_when_cflame_started_stays_ignored_while_converting(bins, tmp_path):
    """cflame record started with SIGHUP ignored (as nohup starts it): a
    SIGHUP once the program has ended, while cflame turns the recording
    into a profile, neither ends cflame nor removes the recording (it did
    not end cflame before it started the program): the profile is
    written and cflame exits with the program's status. (A sanitizer's
    build takes longer over 2,000 cycles than the plain one over 20,000.)"""
    out = tmp_path / "out.folded"
    cycles = 2000 if SANITIZED else 20000
    p = subprocess.Popen([CFLAME, "record", "-o", out, "--", bins["cycles"], bins["plugin"],
                          str(cycles)], cwd=tmp_path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    program = program_of(p.pid)
    while Path(f"/proc/{program}").exists():
        time.sleep(0.001)
    p.send_signal(signal.SIGHUP)
    stdout, stderr = p.communicate(timeout=180)
    assert f"{cycles} cycles" in stdout
    assert p.returncode == 0, stderr
    assert "wrote" in stderr and out.exists(), stderr


def test_ctrl_c_is_forwarded_and_the_profile_written(bins, tmp_path):
    # SIGINT sent to cflame alone (kill -INT): the program gets it too, dies
    # of it, and cflame exits as a shell would, having written the profile.
    sigint = lambda p: p.send_signal(signal.SIGINT)
    status, out, err = interrupted(["-o", "int.folded", "--no-lines", "--", bins["prog"], "spin",
                                    ITERS], tmp_path, sigint)
    assert status == 128 + signal.SIGINT, err
    assert weight(folded(tmp_path / "int.folded"), "one") > 0
    # A program that handles it exits as it chooses.
    status, out, err = interrupted(["-o", "handled.folded", "--", bins["prog"], "spin", ITERS,
                                    "handle"], tmp_path, sigint)
    assert status == 0, err
    assert out == "interrupts 1\n"
    assert (tmp_path / "handled.folded").stat().st_size > 0


def on_terminal(args, cwd):
    """interrupted() with cflame in a session of its own whose terminal is a
    pty, interrupted by a ^C typed on it."""
    master, slave = pty.openpty()

    def own_terminal():
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    try:
        return interrupted(args, cwd, lambda p: os.write(master, b"\x03"), stdin=slave,
                           preexec_fn=own_terminal, start_new_session=False)
    finally:
        os.close(slave)
        os.close(master)


def test_terminal_ctrl_c_reaches_the_program_once(bins, tmp_path):
    # A terminal sends Ctrl-C to its foreground group, program and cflame
    # alike: the program dies of it, and cflame writes the profile.
    status, out, err = on_terminal(["-o", "tty.folded", "--no-lines", "--", bins["prog"], "spin",
                                    ITERS], tmp_path)
    assert status == 128 + signal.SIGINT, err
    assert weight(folded(tmp_path / "tty.folded"), "one") > 0
    # cflame does not send the terminal's Ctrl-C on: a program that left
    # the foreground group gets none (a second one, had it stayed).
    status, out, err = on_terminal(["-o", "alone.folded", "--", bins["prog"], "spin", ITERS,
                                    "alone"], tmp_path)
    assert status == 0, err
    assert out == "interrupts 0\n", out


# ---- output ----

def test_default_output_is_an_svg_named_after_the_program(bins, tmp_path):
    r = recorded("--", bins["prog"], "split", ITERS // 4, cwd=tmp_path)
    svg = tmp_path / "prog.cflame.svg"
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    assert any(t and t.startswith("three") for t in titles)
    assert "wrote prog.cflame.svg: " in r.stderr
    assert "samples every 1 ms of CPU" in r.stderr


@pytest.mark.parametrize("name,check", [
    ("p.txt", lambda text: "three" in text and "burn" in text),
    ("p.vl.json", lambda text: json.loads(text)["$schema"].endswith("vega-lite/v5.json")),
    ("p.html", lambda text: text.startswith("<!DOCTYPE html>") and "<svg" in text),
])
def test_format_from_the_ending(bins, tmp_path, name, check):
    recorded("-o", name, "--", bins["prog"], "split", ITERS // 4, cwd=tmp_path)
    assert check((tmp_path / name).read_text())


def go_pprof_cum(path, tmp_path, *args):
    """{function: cum %} from `go tool pprof -top` (the reference reader) of
    the pprof file path, and what it printed."""
    go = shutil.which("go")
    if not go:
        pytest.fail("go is missing: install Debian's golang-go (scripts/deps.sh lists it)")
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"),
               GOENV="off", GOPROXY="off")
    top = subprocess.run([go, "tool", "pprof", "-top", "-nodefraction=0", *args, str(path)],
                         capture_output=True, text=True, env=env, timeout=120)
    assert top.returncode == 0, top.stderr
    cum = {}
    for line in top.stdout.splitlines():
        m = re.match(r"\s*\S+\s+[\d.]+%\s+[\d.]+%\s+\S+\s+([\d.]+)%\s+(\S+)", line)
        if m:
            cum[m.group(2)] = float(m.group(1))
    return cum, top.stdout


def test_pprof_output_read_by_go_tool_pprof(bins, tmp_path):
    # The recording as pprof: go tool pprof, the reference reader, gives the
    # split the folded output gives.
    r = recorded("-o", "split.pb.gz", "--no-lines", "--", bins["prog"], "split", ITERS,
                 cwd=tmp_path)
    cum, said = go_pprof_cum(tmp_path / "split.pb.gz", tmp_path)
    cpu = program_json(r.stdout)
    measured = share_points(cpu["three"], cpu["one"] + cpu["three"])
    got = share_points(cum["three"], cum["one"] + cum["three"])
    n = samples_in(r.stderr) * (cum["one"] + cum["three"]) / 100.0
    check_share(got, measured, n, said)


def test_output_names_pid_and_format_option(bins, tmp_path):
    r = recorded("-o", "run.%p.%%.folded", "--", bins["prog"], "fork", ITERS // 4, cwd=tmp_path)
    pid = program_json(r.stdout)["parent"]
    assert (tmp_path / f"run.{pid}.%.folded").is_file()
    recorded("-o", "plain.data", "--format", "folded", "--no-lines", "--", bins["prog"], "split",
             ITERS // 4, cwd=tmp_path)
    assert weight(folded(tmp_path / "plain.data"), "main") > 0


def test_bad_output_names_fail_before_the_program_runs(bins, tmp_path):
    for args, message in [
        (["-o", "x.jpeg"], "cannot tell the format"),
        (["-o", "x.%q.svg"], "unknown %q"),
        (["-o", "x.%r.svg"], "%r is the MPI rank"),
        (["--delay", "0"], "--delay 0"),
        (["--live"], "need --allocs"),
        (["--colour", "red"], "unknown option --colour"),
    ]:
        env = {k: v for k, v in os.environ.items() if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK")}
        r = record(*args, "--", "sh", "-c", "touch ran", cwd=tmp_path, env=env)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert not (tmp_path / "ran").exists(), args
    r = record("-o", "x.svg", "sh", cwd=tmp_path)
    assert r.returncode == 2 and "give the program after --" in r.stderr


def test_sampling_ranges_are_the_notebooks(tmp_path):
    """--delay and --sample-rate are the option table's rows, as delay= and
    sample_rate= are in the notebook (tests/unit/test_magics.c): the same
    bounds and the same words. The bounds are taken; past them is a bad
    command line, and the program does not run."""
    for args, message in [
        (["--delay", "0.00005"], "--delay 0.00005: expected a number of seconds from 0.0001 to 10, such as 0.001"),
        (["--delay=11"], "--delay 11: expected a number of seconds from 0.0001 to 10"),
        (["--allocs", "--sample-rate", "0.0000001"],
         "--sample-rate 0.0000001: expected a share of the allocation calls from 0.000001 to 1"),
    ]:
        r = record(*args, "--", "sh", "-c", "touch ran", cwd=tmp_path)
        assert r.returncode == 2, (args, r.stderr)
        assert message in r.stderr, (args, r.stderr)
        assert not (tmp_path / "ran").exists(), args
    # A sanitizer build refuses --allocs itself (its allocator is ASan's).
    accepted = [["--delay", "0.0001"]] + ([] if SANITIZED else [["--allocs", "--sample-rate",
                                                                 "0.000001"]])
    for args in accepted:
        r = record(*args, "-o", "x.folded", "--", "sh", "-c", "touch ran", cwd=tmp_path)
        assert r.returncode == 0, (args, r.stderr)
        assert (tmp_path / "ran").exists(), args
        (tmp_path / "ran").unlink()


def test_help_lists_the_tables_recording_options():
    """--help's recording options are the table's rows, with their ranges'
    defaults: every flag the notebook shares is there."""
    r = subprocess.run([CFLAME, "record", "--help"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for flag in ("--delay SECONDS", "--clock cpu|wall", "--event NAME", "--allocs, --no-allocs",
                 "--sample-rate R", "--live, --no-live", "--weight bytes|count",
                 "--duration SECONDS", "--pid PID", "--buffer WORDS", "--top, --watch",
                 "--diff BASE"):
        assert "      " + flag in r.stdout, (flag, r.stdout)
    assert "(default: 0.001; 0.01\n                         with --pid)" in r.stdout, r.stdout


# ---- programs that cannot be recorded ----

@pytest.mark.parametrize("which,status,message", [
    ("static", 126, "is statically linked"),
    ("setuid", 126, "is set-user-ID (mode 4755)"),
    ("missing", 127, "No such file or directory"),
    ("not-in-path", 127, "no such program in PATH"),
    ("directory", 126, "is a directory"),
    ("not-executable", 126, "is not an executable file"),
])
def test_programs_that_cannot_be_recorded(bins, tmp_path, which, status, message):
    plain = tmp_path / "plain.c"
    plain.write_text("int main(void) { return 0; }\n")
    program = {"static": bins["static"], "setuid": bins["setuid"],
               "missing": tmp_path / "nope", "not-in-path": "cflame-test-no-such-program",
               "directory": tmp_path, "not-executable": plain}[which]
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, TMPDIR=str(work))
    r = record("--", program, cwd=work, env=env)
    assert r.returncode == status, r.stderr
    assert message in r.stderr, r.stderr
    assert str(program) in r.stderr  # the error names the program
    # Nothing is written: no profile, no recording left behind.
    assert list(work.iterdir()) == []


def test_nothing_recorded_says_why_and_writes_nothing(bins, tmp_path):
    # env -i runs the program without LD_PRELOAD: nothing of it is recorded.
    # The status is still the program's.
    r = record("-o", "none.folded", "--", "env", "-i", bins["prog"], "split", ITERS // 10,
               cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    if SANITIZED and (tmp_path / "none.folded").exists():
        # AddressSanitizer's runtime, preloaded with the recorder, starts up
        # in env itself for a millisecond or more of CPU before env runs the
        # program: env may have samples of its own, never the program.
        stacks = folded(tmp_path / "none.folded")
        assert stacks and all(s.split(";")[0] == "env" for s in stacks), stacks
        assert not weight(stacks, "main") and not weight(stacks, "burn"), stacks
        return
    assert "env left no samples" in r.stderr and "clears LD_PRELOAD" in r.stderr
    assert not (tmp_path / "none.folded").exists()


# ---- programs that get in the recorder's way ----

# What the program did to the sampler, as cflame names it; None: nothing
# it needs to name, the recorder keeps sampling through it.
HOSTILE = {
    "closefds": None,
    "devnull": None,
    "blockall": r"hostile \(pid \d+\) blocked SIG(TRAP|PROF), which the sampler uses, on 1 "
                r"thread: samples stopped there",
    "handlers": r"hostile \(pid \d+\) replaced the handler of SIGPROF, which the sampler uses: "
                r"samples stopped there",
}


def hostile(bins, tmp_path, mode, before_s, after_s):
    """cflame record -- hostile MODE ...: (the run, its folded stacks or {},
    the program's report)."""
    out = tmp_path / f"{mode}.folded"
    report = tmp_path / f"{mode}.json"
    r = record("-o", out, "--no-lines", "--", bins["hostile"], mode, before_s, after_s, report,
               cwd=tmp_path)
    stacks = folded(out) if out.exists() else {}
    return r, stacks, json.loads(report.read_text())


@pytest.mark.parametrize("mode", sorted(HOSTILE))
def test_samples_before_the_program_interferes_are_kept(bins, tmp_path, mode):
    """The program works, interferes, works again. Its status passes
    through; what was sampled before is written, with its own weight (not
    the time after it, where samples stopped); where the recorder keeps its
    timers out of the program's way the work after is sampled too, in the
    share the program measured; where it cannot, cflame says why."""
    r, stacks, cpu = hostile(bins, tmp_path, mode, 0.2, 0.2)
    assert r.returncode == 0, r.stderr
    before, after = weight(stacks, "before_work"), weight(stacks, "after_work")
    assert before > 0, (r.stderr, stacks)
    cause = HOSTILE[mode]
    if cause is None:
        n = before + after
        measured = cpu["after"] / (cpu["before"] + cpu["after"])
        got = after / n
        assert abs(got - measured) <= binomial_bound(measured, n), (got, measured, n, r.stderr)
    else:
        assert re.search(cause, r.stderr), r.stderr
        assert after == 0, stacks
        # 1 ms samples: the work before is before_ms of them, within the
        # count's own spread; the work after, where nothing was sampled, is
        # not added to it.
        before_ms = cpu["before"] * 1e3
        assert before <= before_ms + 4 * before_ms ** 0.5 + 2, (before, cpu, r.stderr)
    if mode == "handlers":
        assert cpu["profs"] > 0, cpu  # the program's own timer reached its handler


@pytest.mark.parametrize("mode", sorted(HOSTILE))
def test_a_program_that_interferes_at_once_is_named_not_blamed(bins, tmp_path, mode):
    """The program interferes before any sample: where the recorder keeps
    sampling, its work is in the graph; where it cannot, nothing is written,
    cflame names what the program did instead of blaming too little CPU or
    LD_PRELOAD, and the program's status 0 is still cflame's."""
    r, stacks, cpu = hostile(bins, tmp_path, mode, 0, 0.4)
    assert r.returncode == 0, r.stderr
    cause = HOSTILE[mode]
    if cause is None:
        assert weight(stacks, "after_work") > 0, (r.stderr, stacks)
    else:
        assert re.search(cause, r.stderr), r.stderr
        assert "less than a sample" not in r.stderr and "LD_PRELOAD" not in r.stderr, r.stderr
        assert "nothing is written" in r.stderr, r.stderr


def small_stack():
    """RLIMIT_STACK of 8 MiB (or the hard limit, if lower): a main thread's
    stack with an end to reach."""
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    soft = 8 << 20 if hard == resource.RLIM_INFINITY else min(8 << 20, hard)
    resource.setrlimit(resource.RLIMIT_STACK, (soft, hard))


@pytest.mark.parametrize("where", ["main", "thread"])
def test_sampling_at_the_edge_of_the_stack(bins, tmp_path, where):
    """A program recursing until some 1.5 KiB of its stack are left and
    working there: the sampler's handler runs on an alternate stack of the
    thread's, so the samples that land there are taken, not a SIGSEGV."""
    r = subprocess.run([CFLAME, "record", "-o", "deep.folded", "--no-lines", "--", bins["deep"],
                        where, "0.3"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=180, preexec_fn=small_stack)
    assert r.returncode == 0, r.stderr
    assert program_json(r.stdout)["left"] < 2048, r.stdout
    assert weight(folded(tmp_path / "deep.folded"), "bottom_work") > 0, r.stderr


def record_in_small_tmpdir(bins, tmp_path, size):
    """cflame record of deep (0.5 s of CPU at the bottom of its stack: some
    4 KiB a sample) with TMPDIR a tmpfs of size."""
    mnt = tmp_path / "tmpdir"
    mnt.mkdir()
    argv = in_small_tmpdir(mnt, size, [CFLAME, "record", "-o", tmp_path / "deep.folded",
                                       "--no-lines", "--", bins["deep"], "main", "0.5"])
    r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=180,
                       preexec_fn=small_stack)
    assert r.returncode != 99, f"could not mount a tmpfs on {mnt}: {r.stderr}"
    return mnt, r


def test_a_full_tmpdir_at_start_is_an_error_naming_it(bins, tmp_path):
    """TMPDIR with no room for a process's first buffer chunk: cflame
    record says so before the program runs, naming TMPDIR and the bytes,
    instead of the program dying of SIGBUS at its first sample."""
    mnt, r = record_in_small_tmpdir(bins, tmp_path, "100k")
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "signal" not in r.stderr, r.stderr
    assert re.search(rf"TMPDIR's file system \({re.escape(str(mnt))}\) is full: .* needs "
                     rf"{COUNT} bytes", r.stderr), r.stderr
    assert r.stdout == "", "the program ran: " + r.stdout


def test_a_tmpdir_that_fills_up_loses_samples_not_the_program(bins, tmp_path):
    """TMPDIR with room for the start of the buffer but not for all the
    program records: the program runs to its end (no SIGBUS, status 0),
    the samples that fit are drawn, and the report says that the rest were
    lost because TMPDIR's file system filled up, naming it."""
    mnt, r = record_in_small_tmpdir(bins, tmp_path, "1536k")
    assert r.returncode == 0, (r.returncode, r.stderr)
    assert "left" in program_json(r.stdout), r.stdout
    assert re.search(rf"samples? were lost because TMPDIR's file system "
                     rf"\({re.escape(str(mnt))}\) filled up", r.stderr), r.stderr
    assert samples_in(r.stderr) > 0, r.stderr
    assert weight(folded(tmp_path / "deep.folded"), "bottom_work") > 0, r.stderr


# ---- allocations ----

def skip_allocs_in_sanitizer_builds(bins, tmp_path):
    """A sanitizer build of cflame preloads AddressSanitizer's allocator
    ahead of its own entry points: it says so instead of recording."""
    if not SANITIZED:
        return
    r = record("--allocs", "--", bins["prog"], "allocs", cwd=tmp_path)
    assert r.returncode == 1 and "--allocs needs a build of cflame without sanitizers" in r.stderr
    pytest.skip("--allocs in a sanitizer build: refused, as it should be")


def test_allocs_exact_at_sample_rate_1_and_live(bins, tmp_path):
    skip_allocs_in_sanitizer_builds(bins, tmp_path)
    base = ["--allocs", "--sample-rate", "1", "--no-lines"]
    recorded(*base, "--weight", "count", "-o", "count.folded", "--", bins["prog"], "allocs",
             cwd=tmp_path)
    stacks = folded(tmp_path / "count.folded")
    assert weight(stacks, "leaky", "malloc") == 1000, stacks
    assert weight(stacks, "zeroed", "calloc") == 300
    recorded(*base, "-o", "bytes.folded", "--", bins["prog"], "allocs", cwd=tmp_path)
    stacks = folded(tmp_path / "bytes.folded")
    assert weight(stacks, "leaky", "malloc") == 1000 * 48
    assert weight(stacks, "zeroed", "calloc") == 300 * 80
    r = recorded(*base, "--live", "--weight", "count", "-o", "live.folded", "--", bins["prog"],
                 "allocs", cwd=tmp_path)
    stacks = folded(tmp_path / "live.folded")
    assert weight(stacks, "leaky", "malloc") == 250
    assert weight(stacks, "zeroed") == 0
    assert "still allocated at exit" in r.stderr
    # The allocations are the program's: stacks begin at main.
    assert all(s.split(";")[1] == "main" for s in stacks if "leaky" in s)


def test_allocs_estimated_below_rate_1(bins, tmp_path):
    skip_allocs_in_sanitizer_builds(bins, tmp_path)
    r = recorded("--allocs", "--weight", "count", "--no-lines", "-o", "est.folded", "--",
                 bins["prog"], "allocs", cwd=tmp_path)
    assert "estimated from" in r.stderr and "sample rate 0.1" in r.stderr
    assert weight(folded(tmp_path / "est.folded"), "leaky", "malloc") > 0



def test_allocs_keep_the_cpu_samples_as_a_second_kind(bins, tmp_path):
    """--allocs also samples CPU time: one profile of two kinds. By default
    it draws the allocations (bytes split 1:3 between small_allocs() and
    big_allocs(), exact at --sample-rate 1), with --kind cpu the CPU time
    (one() and three() split as the program measured); go tool pprof, the
    reference reader, finds both in the pprof file."""
    skip_allocs_in_sanitizer_builds(bins, tmp_path)
    r = recorded("--allocs", "--sample-rate", "1", "--no-lines", "-o", "both.pb.gz", "--",
                 bins["prog"], "splitallocs", ITERS, cwd=tmp_path)
    assert re.search(r"and [\d,]+ samples every 1 ms of CPU \(--kind cpu\)", r.stderr), r.stderr
    both = tmp_path / "both.pb.gz"

    def drawn(name, *args):
        d = subprocess.run([CFLAME, str(both), "--no-lines", "-o", str(tmp_path / name), *args],
                           capture_output=True, text=True, timeout=120)
        assert d.returncode == 0, d.stderr
        return tmp_path / name

    stacks = folded(drawn("bytes.folded"))
    assert weight(stacks, "small_allocs", "malloc") == 1000 * 100, stacks
    assert weight(stacks, "big_allocs", "malloc") == 1000 * 300, stacks
    assert weight(stacks, "one") == weight(stacks, "three") == 0
    stacks = folded(drawn("cpu.folded", "--kind", "cpu"))
    assert weight(stacks, "small_allocs", "malloc") < 0.05 * weight(stacks, "three"), stacks
    cpu = program_json(r.stdout)
    measured = share_points(cpu["three"], cpu["one"] + cpu["three"])
    n = weight(stacks, "one") + weight(stacks, "three")
    check_share(share_points(weight(stacks, "three"), n), measured, n)
    text = drawn("cpu.txt", "--kind", "cpu").read_text()
    assert text.startswith("CPU time (--kind cpu); also holds: allocated bytes "
                           "(--kind alloc_bytes)\n"), text[:200]
    bad = subprocess.run([CFLAME, str(both), "--kind", "live_bytes"], capture_output=True,
                         text=True)
    assert bad.returncode != 0
    assert ("the profile holds no bytes still allocated at the end (live_bytes); choose cpu "
            "(CPU time) or alloc_bytes (allocated bytes)") in bad.stderr, bad.stderr
    # go tool pprof: the same file, each kind by its sample type.
    space, said = go_pprof_cum(both, tmp_path, "-sample_index=alloc_space")
    assert abs(space["big_allocs"] - 3 * space["small_allocs"]) < 0.1, said
    assert "one" not in space and "three" not in space, said
    on_cpu, said = go_pprof_cum(both, tmp_path, "-sample_index=cpu")
    got = share_points(on_cpu["three"], on_cpu["one"] + on_cpu["three"])
    check_share(got, measured, n, said)
    assert "small_allocs" not in on_cpu or on_cpu["small_allocs"] < 5, said



def test_allocs_and_cpu_samples_number_threads_alike(bins, tmp_path):
    """A thread has one number in both kinds of an --allocs recording: the
    burner, started first, allocates nothing; the allocator's allocations
    are on the thread its CPU samples name "allocator" (speedscope's
    profile per thread, "thread N: name")."""
    skip_allocs_in_sanitizer_builds(bins, tmp_path)
    recorded("--allocs", "--sample-rate", "1", "-o", "t.pb.gz", "--", bins["prog"],
             "threadallocs", ITERS, cwd=tmp_path)

    def threads(*args):
        out = tmp_path / "t.speedscope.json"
        d = subprocess.run([CFLAME, str(tmp_path / "t.pb.gz"), "-o", str(out), *args],
                           capture_output=True, text=True, timeout=120)
        assert d.returncode == 0, d.stderr
        doc = json.loads(out.read_text())
        return {p["name"]: sum(p["weights"]) for p in doc["profiles"]}

    allocs, cpu = threads(), threads("--kind", "cpu")
    named = [name for name in allocs if name.endswith(": allocator")]
    assert named and allocs[named[0]] >= 1000 * 100, (allocs, cpu)
    assert not any(name.endswith(": burner") for name in allocs), (allocs, cpu)
    assert named[0] in cpu and any(name.endswith(": burner") for name in cpu), (allocs, cpu)


# ---- MPI ----

def mpi_launcher():
    mpirun = shutil.which("mpirun")
    if not mpirun or not shutil.which("mpicc"):
        pytest.skip("Open MPI (openmpi-bin, libopenmpi-dev) is not installed")
    argv = [mpirun, "-n", "2", "--oversubscribe"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    return argv


@pytest.fixture(scope="module")
def solver(bins):
    mpi_launcher()
    out = bins["dir"] / "solver"
    subprocess.run(["mpicc", *CFLAGS, "-o", out, SOURCES / "solver.c"], check=True,
                   capture_output=True, text=True)
    return out


def solver_cpu(stdout):
    return {j["rank"]: j for j in map(json.loads,
                                       (ln for ln in stdout.splitlines() if ln.startswith("{")))}


def three_share(stacks, root=None):
    w1, w3 = weight(stacks, "one", root=root), weight(stacks, "three", root=root)
    return share_points(w3, w1 + w3)


def split_samples(stacks, root=None):
    return weight(stacks, "one", root=root) + weight(stacks, "three", root=root)


def test_mpi_one_profile_per_rank_and_merged(bins, solver, tmp_path):
    host = os.uname().nodename
    r = subprocess.run([*mpi_launcher(), CFLAME, "record", "-o", "prof.%h.%r.folded",
                        "--no-lines", "--", str(solver), str(ITERS)], cwd=tmp_path,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    cpu = solver_cpu(r.stdout)
    files = sorted(tmp_path.glob("prof.*.folded"))
    assert [f.name for f in files] == [f"prof.{host}.0.folded", f"prof.{host}.1.folded"]
    per_rank = [folded(f) for f in files]
    for rank, stacks in enumerate(per_rank):
        # One process each, under the program's own name: the ranks merge.
        assert {s.split(";")[0] for s in stacks} == {"solver"}, stacks.keys()
        measured = share_points(cpu[rank]["three"], cpu[rank]["one"] + cpu[rank]["three"])
        check_share(three_share(stacks), measured, split_samples(stacks), rank)
    # Merged by the cflame command: one root, both ranks' samples.
    merged = tmp_path / "merged.folded"
    subprocess.run([CFLAME, "--format", "folded", "-o", merged, *files], check=True)
    stacks = folded(merged)
    assert {s.split(";")[0] for s in stacks} == {"solver"}
    assert sum(stacks.values()) == sum(sum(s.values()) for s in per_rank)
    assert abs(three_share(stacks) - 75) <= 4


def test_record_mpirun_follows_the_ranks_with_the_same_shares(bins, solver, tmp_path):
    r = subprocess.run([CFLAME, "record", "-o", "all.folded", "--no-lines", "--", *mpi_launcher(),
                        str(solver), str(ITERS)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    cpu = solver_cpu(r.stdout)
    stacks = folded(tmp_path / "all.folded")
    roots = {s.split(";")[0] for s in stacks}
    assert {"solver (rank 0)", "solver (rank 1)"} <= roots, roots
    for rank in (0, 1):
        measured = share_points(cpu[rank]["three"], cpu[rank]["one"] + cpu[rank]["three"])
        root = f"solver (rank {rank})"
        check_share(three_share(stacks, root=root), measured, split_samples(stacks, root), rank)
    # mpirun forwards SIGTRAP to its ranks: cflame stops sampling it instead of
    # sending it traps, and says so.
    assert "mpirun" in r.stderr


def test_mpi_ranks_record_wall_clock_too(bins, solver, tmp_path):
    """mpirun -n 2 cflame record --clock wall: each rank writes a wall-clock
    profile (its summary says so, with its time running and waiting), and
    the computing split of each rank's running samples holds as under
    --clock cpu. (Its time waiting for a CPU on a busy machine is split
    the same way on average, but in a few heavy records, not as a
    binomial count.)"""
    r = subprocess.run([*mpi_launcher(), CFLAME, "record", "--clock", "wall", "-o",
                        "wall.%r.folded", "--no-lines", "--", str(solver), str(ITERS)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.count("of wall time") == 2 and r.stderr.count("s waiting") == 2, r.stderr
    cpu = solver_cpu(r.stdout)
    for rank in (0, 1):
        stacks = {s: c for s, c in folded(tmp_path / f"wall.{rank}.folded").items()
                  if "[off-CPU" not in s}
        measured = share_points(cpu[rank]["three"], cpu[rank]["one"] + cpu[rank]["three"])
        check_share(three_share(stacks), measured, split_samples(stacks), rank)


# ---- no perf_event permission ----

def test_records_where_perf_events_are_refused(bins, tmp_path):
    """perf_event_open refused to the program and its children by a seccomp
    filter (tests/cli/record/noperf.c), as Docker's default profile refuses
    it: the sampler falls back to CPU timers, and the split holds."""
    noperf = tmp_path / "noperf"
    subprocess.run([CC, "-O2", "-o", noperf, SOURCES / "noperf.c"], check=True)
    r = subprocess.run([noperf, CFLAME, "record", "-o", "p.folded", "--no-lines", "--",
                        bins["prog"], "split", str(ITERS)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    assert "taken by CPU timers, perf events being refused" in r.stderr
    check_share(*split_share(r, tmp_path / "p.folded"))


def test_records_with_perf_event_paranoid_3(bins, tmp_path):
    """As root: perf_event_paranoid set to 3 (restored after), the program
    recorded as an unprivileged user (uid 65534). Debian's kernels refuse
    perf events to such a user at 3; upstream kernels treat 3 as 2, which
    lets a user profile its own processes: the test says which it met.
    Without root: recorded as this user, and the test says so."""
    knob = Path("/proc/sys/kernel/perf_event_paranoid")
    before = knob.read_text().strip()
    can_set = os.geteuid() == 0 and os.access(knob, os.W_OK)
    # A directory that user can reach (pytest's are its owner's alone).
    work = Path(tempfile.mkdtemp(prefix="cflame-test-paranoid-"))
    os.chmod(work, 0o777)
    shutil.copy(bins["prog"], work / "prog")
    # cflame and the library it preloads, copied there too: the build tree
    # may sit in a directory only its owner can enter (a fresh clone in a
    # mkdtemp directory, say).
    (work / "bin").mkdir(mode=0o755)
    (work / "lib").mkdir(mode=0o755)
    shutil.copy(CFLAME, work / "bin" / "cflame")
    for lib in Path(CFLAME).resolve().parent.parent.joinpath("lib").glob("libcflame_preload*.so"):
        shutil.copy(lib, work / "lib" / lib.name)
    argv = [str(work / "bin" / "cflame"), "record", "-o", "p.folded", "--no-lines", "--",
            "./prog", "split", str(ITERS)]
    env = dict(os.environ, TMPDIR=str(work))
    perf_note = "perf is not installed to tell whether perf events were refused"
    try:
        if can_set:
            knob.write_text("3\n")
            nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
            argv = nobody + argv
            if shutil.which("perf"):
                p = subprocess.run([*nobody, "perf", "stat", "-e", "task-clock", "--", "true"],
                                   cwd=work, capture_output=True, text=True, env=env)
                perf_note = ("perf events refused to that user (perf stat failed)"
                             if p.returncode != 0 else
                             "this kernel still allows that user perf events on its own "
                             "processes at 3 (upstream treats 3 as 2; the seccomp test "
                             "covers a refusal)")
        r = subprocess.run(argv, cwd=work, capture_output=True, text=True, env=env, timeout=180)
        assert r.returncode == 0, r.stderr
        got, measured, n = split_share(r, work / "p.folded")
    finally:
        if can_set:
            knob.write_text(before + "\n")
        shutil.rmtree(work, ignore_errors=True)
    assert knob.read_text().strip() == before
    check_share(got, measured, n)
    timers = "CPU timers" if "taken by CPU timers" in r.stderr else "perf task-clock events"
    if can_set:
        print(f"\nperf_event_paranoid: set to 3 (was {before}, restored); recorded as uid 65534;"
              f" {perf_note}; sampled by {timers}: the 1:3 split came out {got:.1f}% against "
              f"{measured:.1f}% measured")
    else:
        print(f"\nperf_event_paranoid: {before}, which this test cannot set (uid {os.geteuid()}):"
              f" recorded as uid {os.geteuid()} under it, sampled by {timers}: the split came "
              f"out {got:.1f}% against {measured:.1f}% measured")


def test_clock_wall_shows_the_sleeps_off_cpu(bins, tmp_path):
    """cflame record --clock wall of a shell that sleeps 1 s, then starts
    yes in the background and sleeps 1 s more: each sleep process spends
    its second (or more) under nanosleep, off-CPU, and yes runs. (Its
    writes to /dev/null do not block; on a busy machine yes waits for a
    CPU, which is runnable time, and a write preempted is a wait.)"""
    r = recorded("--clock", "wall", "-o", "wall.folded", "--no-lines", "--", "sh", "-c",
                 "sleep 1; yes > /dev/null & sleep 1; kill $!", cwd=tmp_path)
    stacks = folded(tmp_path / "wall.folded")
    sleeps = {}
    for stack, count in stacks.items():
        frames = stack.split(";")
        if frames[0].startswith("sleep (pid") and frames[-1] == "[off-CPU: sleep]":
            assert "nanosleep" in frames or "clock_nanosleep" in frames, stack
            sleeps[frames[0]] = sleeps.get(frames[0], 0) + count
    # A sleep lasts its second or more (on a busy machine it wakes late),
    # and no longer than the whole program did.
    wall_ms = 1000 * float(re.search(r"took [\d.]+ s CPU, ([\d.]+) s wall", r.stderr).group(1))
    assert len(sleeps) == 2 and all(998 <= c <= wall_ms for c in sleeps.values()), (sleeps, wall_ms)
    # yes lives from before the second sleep starts until after it ends: a
    # second or more of wall time, each millisecond of it running or
    # waiting for a CPU (how much of each depends on how busy the machine
    # is), or in a write preempted.
    yes_running = sum(c for s, c in stacks.items() if s.startswith("yes") and "[off-CPU" not in s)
    yes_all = sum(c for s, c in stacks.items() if s.startswith("yes"))
    yes_waits = {s.split(";")[-1] for s in stacks if s.startswith("yes") and "[off-CPU" in s}
    assert yes_running >= 10 and yes_all >= 900, (yes_running, yes_all)
    assert yes_waits <= {"[off-CPU: write]", "[off-CPU: runnable]"}, yes_waits
    assert "of wall time" in r.stderr and "waiting" in r.stderr, r.stderr


def test_clock_wall_adds_up_beside_busy_loops(bins, tmp_path):
    """prog wall beside twice as many busy loops as cores: its main thread
    and the thread it starts each run 0.4 s of CPU and wait for a CPU much
    of the time. Each thread's stacks (running, waiting and runnable) add
    up to the wall time it measured around its work, within 2% plus an
    interval, whatever else took its time ([off-CPU: other]); their
    running part is the CPU time it measured and their [off-CPU: runnable]
    leaves the run delay (schedstat), within as much; the summary says the
    runnable time."""
    with busy_loops():
        r = recorded("--clock", "wall", "-o", "wall.pb.gz", "--no-lines", "--", bins["prog"],
                     "wall", ITERS, cwd=tmp_path)
    measured = program_json(r.stdout)
    interval = 0.001
    for thread, number in (("main", 1), ("thread", 2)):
        wall, delay, cpu, _ = measured[thread]
        out = tmp_path / f"thread{number}.folded"
        drawn = subprocess.run([CFLAME, tmp_path / "wall.pb.gz", "--threads", str(number),
                                "--no-lines", "-o", out], capture_output=True, text=True,
                               timeout=120)
        assert drawn.returncode == 0, drawn.stderr
        mine = folded(out)
        total = sum(mine.values()) * interval
        running = sum(c for s, c in mine.items() if "[off-CPU" not in s) * interval
        runnable = sum(c for s, c in mine.items() if s.endswith(";[off-CPU: runnable]")) * interval
        bound = 0.02 * wall + interval
        assert delay >= 0.2 * wall, f"{thread}: the busy loops left it no run delay: {measured}"
        assert abs(total - wall) <= bound, (thread, total, measured, r.stderr)
        assert abs(running - cpu) <= bound, (thread, running, measured, r.stderr)
        assert abs(runnable - delay) <= bound, (thread, runnable, measured, r.stderr)
    assert re.search(r"[\d.]+ s running, [\d.]+ s waiting, [\d.]+ s runnable\)", r.stderr), r.stderr


def test_clock_wall_and_allocs_are_one_or_the_other(bins, tmp_path):
    r = record("--clock", "wall", "--allocs", "--", bins["other"], cwd=tmp_path)
    assert r.returncode == 2 and "--clock wall" in r.stderr and "--allocs" in r.stderr, r.stderr
    r = record("--clock", "sometimes", "--", bins["other"], cwd=tmp_path)
    assert r.returncode == 2 and "--clock sometimes is not valid; choose cpu or wall" in r.stderr, r.stderr


def test_clock_wall_pprof_has_a_wall_sample_type(bins, tmp_path):
    """A wall-clock recording written as pprof: go tool pprof, the reference
    reader, reads a "wall" sample type in nanoseconds, and puts the second
    that sleep(1) waited (or more, on a busy machine: no more than the
    program ran) on [off-CPU: sleep]."""
    go = shutil.which("go")
    if not go:
        pytest.fail("go is missing: install Debian's golang-go (scripts/deps.sh lists it)")
    r = recorded("--clock", "wall", "-o", "wall.pb.gz", "--", "sleep", "1", cwd=tmp_path)
    wall = float(re.search(r"took [\d.]+ s CPU, ([\d.]+) s wall", r.stderr).group(1))
    env = dict(os.environ, HOME=str(tmp_path), GOCACHE=str(tmp_path / "gocache"),
               GOENV="off", GOPROXY="off")
    top = subprocess.run([go, "tool", "pprof", "-top", "-nodefraction=0", "-sample_index=wall",
                          str(tmp_path / "wall.pb.gz")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert top.returncode == 0, top.stderr
    assert "Type: wall" in top.stdout, top.stdout
    flat = re.search(r"^\s*([\d.]+)(ms|s)\s+[\d.]+%.*\[off-CPU: sleep\]$", top.stdout, re.M)
    assert flat, top.stdout
    seconds = float(flat.group(1)) / (1000 if flat.group(2) == "ms" else 1)
    assert 0.998 <= seconds <= wall, (seconds, wall, top.stdout)


def test_clock_wall_kinds_part_running_from_waiting(bins, tmp_path):
    """cflame record --clock wall of prog naps, whose main thread computes
    in one() and naps in nanosleep by turns: each sample is CPU time or
    off-CPU time. Drawn from the pprof file written (which keeps each
    sample's kind), --kind cpu is the CPU time the thread measured, all of
    it in one(), and --kind offcpu its naps, at least as long as asked and
    at most as long as they took, the rest of the waits time runnable
    (waiting for a CPU, in one() or woken in nap()),
    within 2% of the two plus an interval, as the wall tests above; --kind
    wall is the default graph, stack for stack the two added; --kind offcpu
    saved as pprof is an off-CPU profile go tool pprof reads."""
    r = recorded("--clock", "wall", "-o", "wall.pb.gz", "--no-lines", "--", bins["prog"], "naps",
                 ITERS, cwd=tmp_path)
    measured = program_json(r.stdout)

    def drawn(*args, out="kind.folded"):
        c = subprocess.run([CFLAME, str(tmp_path / "wall.pb.gz"), "--no-lines", *args, "-o",
                            str(tmp_path / out)], capture_output=True, text=True, timeout=120)
        assert c.returncode == 0, c.stderr
        return folded(tmp_path / out) if out.endswith(".folded") else None

    graphs = {kind: drawn("--kind", kind) for kind in ("wall", "cpu", "offcpu")}
    assert drawn() == graphs["wall"]
    summed = {}
    for kind in ("cpu", "offcpu"):
        for stack, n in graphs[kind].items():
            summed[stack] = summed.get(stack, 0) + n
    assert summed == graphs["wall"], (graphs, summed)

    interval = 0.001
    bound = 0.02 * (measured["cpu"] + measured["sleep"]) + interval
    cpu = graphs["cpu"]
    assert not [s for s in cpu if "[off-CPU" in s], cpu
    ran = sum(n for s, n in cpu.items() if "one" in s.split(";")) * interval
    assert abs(ran - measured["cpu"]) <= bound, (ran, measured, r.stderr)
    off = graphs["offcpu"]
    # The sleep drawn is at least the 10 naps of 30 ms the program asked for
    # and at most what they took. Their late wake-ups (a millisecond or more
    # each on a busy machine, the run delay only part of it) are drawn as
    # the sleep's or elsewhere, by where the thread's samples fell.
    naps = sum(n for s, n in off.items()
               if "nap" in s.split(";") and s.endswith(";[off-CPU: sleep]")) * interval
    assert 0.300 - bound <= naps <= measured["sleep"] + bound, (naps, measured, r.stderr)
    # The rest is runnable: preempted in one(), or woken in nap() and not
    # yet on a CPU, which the program did not count as sleep either. The
    # program's own reads of /proc/self/schedstat (run_delay) around each
    # nap may wait in read(), as any read of a file may; they are neither
    # workload nor nap, and the program counted them in neither. Time no
    # clock accounts for (a wait in no wrapped call, the host taking the
    # CPU) is other, at the top: it is not known where it was spent.
    assert all(s.endswith(";[off-CPU: runnable]") or s == "prog;[off-CPU: other]" for s in off
               if "run_delay" not in s.split(";")
               and ("nap" not in s.split(";") or not s.endswith(";[off-CPU: sleep]"))), off
    # The off-CPU part saved as pprof is an off-CPU profile, which go tool
    # pprof, the reference reader, reads: the naps' share of it as drawn.
    drawn("--kind", "offcpu", out="off.pb.gz")
    cum, said = go_pprof_cum(tmp_path / "off.pb.gz", tmp_path)
    assert "Type: off_cpu" in said, said
    under_nap = sum(n for s, n in off.items() if "nap" in s.split(";"))
    assert abs(cum["nap"] - 100 * under_nap / sum(off.values())) <= 0.1, (cum, said)
    held = subprocess.run([CFLAME, str(tmp_path / "wall.pb.gz"), "--kind", "alloc_bytes"],
                          capture_output=True, text=True, timeout=120)
    assert held.returncode != 0 and ("choose cpu (CPU time), wall (wall-clock time) or offcpu "
                                     "(off-CPU time)") in held.stderr, held.stderr


def test_a_kind_the_recording_cannot_hold_is_refused_before_the_program_runs(tmp_path):
    """--kind names what to draw of the recording: a kind that the
    recording's options do not record is refused at once, naming the
    options that record it, and the program is not run (a long run is not
    spent on a graph that cannot be drawn); a kind they record is drawn."""
    for args, hint in ((["--kind", "offcpu"], "--clock wall records it"),
                       (["--kind", "wall", "--allocs"], "--clock wall records it"),
                       (["--kind", "alloc_count", "--allocs"], "--allocs --weight count records it"),
                       (["--kind", "live_bytes"], "--allocs --live records it"),
                       (["--kind", "event", "--clock", "wall"], "--event NAME records it"),
                       (["--kind", "cpu", "--event", "page-faults"],
                        "every recording but --event's holds it")):
        r = record(*args, "-o", "x.folded", "--", "sh", "-c", "touch ran", cwd=tmp_path)
        assert r.returncode == 2, (args, r.returncode, r.stderr)
        assert f"--kind {args[1]} draws " in r.stderr and hint in r.stderr, (args, r.stderr)
        assert not (tmp_path / "ran").exists() and not (tmp_path / "x.folded").exists(), args
    recorded("--kind", "offcpu", "--clock", "wall", "-o", "off.folded", "--", "sleep", "0.2",
             cwd=tmp_path)
    off = folded(tmp_path / "off.folded")
    assert off and all("[off-CPU" in s for s in off), off


def test_event_page_faults_counts_the_pages_touched(bins, tmp_path):
    """cflame record --event page-faults of a program that maps 8,000 fresh
    pages and touches each once: the recording counts 8,000 page faults
    within 10%, nearly all in the function that touched them; an event
    this machine cannot count, or an unknown one, is refused before the
    program runs, with the events it counts."""
    src = tmp_path / "pages.c"
    src.write_text(r"""
#include <sys/mman.h>
__attribute__((noinline)) void touch_pages(char *p, long n) { for (long i = 0; i < n; i++) p[i * 4096] = 1; }
int main(void) {
    long n = 8000;
    char *p = mmap(0, n * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    touch_pages(p, n);
    return 0;
}""")
    subprocess.run([CC, *CFLAGS, "-o", tmp_path / "pages", src], check=True)
    r = recorded("--event", "page-faults", "-o", "pf.folded", "--no-lines", "--",
                 tmp_path / "pages", cwd=tmp_path)
    stacks = folded(tmp_path / "pf.folded")
    total = sum(stacks.values())
    assert abs(total - 8000) <= 800, (total, r.stderr)
    assert weight(stacks, "touch_pages") >= 0.9 * 8000, stacks
    assert "page-faults counted" in r.stderr, r.stderr
    r = record("--event", "banana", "--", tmp_path / "pages", cwd=tmp_path)
    assert r.returncode == 2 and "this machine counts: page-faults" in r.stderr, r.stderr


def test_time_in_the_vdso_is_named_vdso(bins, tmp_path):
    """A program that reads the clock in a loop spends its time in the
    vDSO's clock_gettime: the recording names that code [vdso], not a
    library that happens to be mapped elsewhere."""
    src = tmp_path / "clock.c"
    src.write_text(r"""
#include <time.h>
int main(void) {
    struct timespec t; long s = 0;
    for (long i = 0; i < 3000000; i++) { clock_gettime(CLOCK_MONOTONIC, &t); s += t.tv_nsec; }
    return s == 42;
}""")
    subprocess.run([CC, *CFLAGS, "-o", tmp_path / "clock", src], check=True)
    recorded("-o", "clock.folded", "--no-lines", "--", tmp_path / "clock", cwd=tmp_path)
    stacks = folded(tmp_path / "clock.folded")
    below = {s.split(";")[s.split(";").index("__clock_gettime") + 1]
             for s in stacks if "__clock_gettime" in s.split(";")[:-1]}
    assert below and all(b == "[vdso]" or b.startswith("__vdso") for b in below), below
