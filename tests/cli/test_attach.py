# SPDX-License-Identifier: BSD-3-Clause
"""`cflame record --pid PID` (docs/CLI.md): attaching to a program that is
already running, as a user does.

The programs are tests/cli/record's, compiled here: prog.c's known work
(`prog await MODE ...` waits for a line on stdin, so that the test attaches
before the work starts, and the whole of it is sampled; with --follow-forks
its children's too, and other.c, which one of them execs), whose CPU time per
function the profile's shares are held to within the binomial interval of
the samples the profile has (test_record.py's check_share); unharmed.c,
which checks every result of its own calls while it is sampled. Bounds come
from what the tests measured (samples, the program's CPU time), never from
the wall clock: the machine may be busy.

Environment (tests/cli/CMakeLists.txt): CFLAME_BIN, the cflame binary.
"""
import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from test_record import (CC, CFLAGS, CFLAME, ITERS, SOURCES, check_share, folded,
                         program_json, samples_in, share_points, weight)


@pytest.fixture(scope="module")
def bins(tmp_path_factory):
    d = tmp_path_factory.mktemp("attach-bins")
    os.chmod(d, 0o755)  # the permission test runs cflame as another user

    def cc(out, *args):
        subprocess.run([CC, *CFLAGS, "-o", d / out, *map(str, args)], check=True,
                       capture_output=True, text=True)
        return d / out

    return {"prog": cc("prog", SOURCES / "prog.c", "-pthread"),
            "unharmed": cc("unharmed", SOURCES / "unharmed.c", "-pthread"),
            "other": cc("other", SOURCES / "other.c")}


class Attached:
    """cflame record --pid PID ARGS..., started and attached (it says so
    on stderr before the test goes on)."""

    def __init__(self, pid, *args, cwd, user=None):
        cmd = [CFLAME, "record", "--pid", str(pid), *map(str, args)]
        if user:
            cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
        # Unbuffered, and the first line read a byte at a time: a buffered
        # readline would keep what cflame wrote next from communicate().
        self.p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, bufsize=0)
        first = b""
        while not first.endswith(b"\n") and (c := self.p.stderr.read(1)):
            first += c
        self.first = first.decode()

    def attached(self):
        assert "attached to pid" in self.first, self.first + self.p.stderr.read().decode()
        return self

    def finish(self, timeout=300):
        out, err = (b.decode() for b in self.p.communicate(timeout=timeout))
        return self.p.returncode, out, self.first + err


def started(bins, *args, **popen):
    return subprocess.Popen([bins["prog"], *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, **popen)


def go(prog):
    prog.stdin.write("go\n")
    prog.stdin.flush()


@contextlib.contextmanager
def spinning(bins, cwd):
    """`prog spin ... handle`, ready (it has worked a little): yields it,
    then sends it the SIGINT it handles to end, and checks it exited 0
    having received exactly that one."""
    prog = started(bins, "spin", ITERS, "handle", cwd=cwd)
    assert prog.stdout.readline() == "ready\n"
    try:
        yield prog
    finally:
        prog.send_signal(signal.SIGINT)
        out, _ = prog.communicate(timeout=120)
    assert prog.returncode == 0 and out == "interrupts 1\n", out


def tracer_of(pid):
    """TracerPid and State of a live process."""
    status = Path(f"/proc/{pid}/status").read_text()
    return (int(re.search(r"TracerPid:\s*(\d+)", status).group(1)),
            re.search(r"State:\s*(\S)", status).group(1))


def cpu_seconds(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_states(pid):
    tasks = Path(f"/proc/{pid}/task")
    return [re.search(r"State:\s*(\S)", (t / "status").read_text()).group(1)
            for t in tasks.iterdir()]


def wait_stopped(pid):
    """Returns once every thread of pid is stopped; fails when it has used
    0.2 s of CPU meanwhile: it runs on, not stopped."""
    start = cpu_seconds(pid)
    while not all(st in "tT" for st in thread_states(pid)):
        assert cpu_seconds(pid) - start < 0.2, thread_states(pid)
        os.sched_yield()


def wakeups(cflame):
    """How many times cflame's loop has waited (voluntary context
    switches): it drains the threads' events at least every 2 ms."""
    status = Path(f"/proc/{cflame}/status").read_text()
    return int(re.search(r"voluntary_ctxt_switches:\s*(\d+)", status).group(1))


def held_stopped(pid, cflame):
    """Checks that every thread of pid stays stopped while cflame goes
    through ten of its loop's rounds, and that pid's CPU clock does not
    move meanwhile. The rounds are counted from cflame's second since the
    stop was seen: a stop signal first stops a traced thread at its
    delivery, and cflame passes it on in its next round, when the thread
    is running ('R') for the moment it takes to enter the stop proper."""
    first, cpu = wakeups(cflame), cpu_seconds(pid)
    while wakeups(cflame) - first < 2:
        os.sched_yield()
    start = wakeups(cflame)
    while wakeups(cflame) - start < 10:
        states = thread_states(pid)
        assert all(st in "tT" for st in states), states
        os.sched_yield()
    assert cpu_seconds(pid) - cpu <= 0.02


def wait_for_cpu(pid, seconds, cflame=None):
    """Returns once process pid has used this much more CPU: a bound from
    the program's own clock, however busy the machine. With cflame (its
    tracer's pid): fails, saying what both were doing, when pid stays
    stopped while cflame goes through 500 rounds of its loop."""
    start, stopped_since = cpu_seconds(pid), None
    while cpu_seconds(pid) - start < seconds:
        if cflame and all(st in "tT" for st in thread_states(pid)):
            stopped_since = wakeups(cflame) if stopped_since is None else stopped_since
            if wakeups(cflame) - stopped_since >= 500:
                raise AssertionError("the program stays stopped under cflame:\n" +
                                     diagnosis(pid, cflame))
        else:
            stopped_since = None
        os.sched_yield()


def diagnosis(pid, cflame):
    """What a stuck program and its tracer were doing, for a failure."""
    lines = []
    for p in (pid, cflame):
        for t in Path(f"/proc/{p}/task").iterdir():
            status = (t / "status").read_text()
            keep = [ln for ln in status.splitlines()
                    if ln.split(":")[0] in ("Name", "State", "TracerPid", "SigPnd", "ShdPnd",
                                            "SigBlk", "SigCgt", "voluntary_ctxt_switches")]
            lines.append(f"task {t.name} of {p}: wchan {(t / 'wchan').read_text()}; " +
                         "; ".join(" ".join(k.split()) for k in keep))
    return "\n".join(lines)


# ---- the profile's truth ----

def test_one_to_three_split_of_a_program_that_exits_while_attached(bins, tmp_path):
    """The whole of the program's work is sampled: it starts after the
    attach and the program exits while attached, which ends the recording
    (no --duration, no signal). The split is the program's own CPU clock's,
    within the binomial interval of the samples taken."""
    prog = started(bins, "await", "split", 2 * ITERS, cwd=tmp_path)
    c = Attached(prog.pid, "-o", "split.folded", "--no-lines", cwd=tmp_path).attached()
    go(prog)
    out, _ = prog.communicate(timeout=300)
    assert prog.returncode == 0
    rc, _, err = c.finish()
    assert rc == 0, err
    assert f"prog (pid {prog.pid}) exited with status 0 while attached" in err, err
    cpu = program_json(out)
    measured = share_points(cpu["three"], cpu["one"] + cpu["three"])
    assert abs(measured - 75) <= 4, f"the work itself was not 1:3 here: {out}"
    stacks = folded(tmp_path / "split.folded")
    n1, n3 = weight(stacks, "one"), weight(stacks, "three")
    check_share(share_points(n3, n1 + n3), measured, n1 + n3, err)
    # The frames are a recording's: under the program's root and main,
    # the work under one and three, symbolized as any other.
    assert {s.split(";")[0] for s in stacks} == {"prog"}, stacks.keys()
    assert weight(stacks, "main", "one", "burn") == n1
    # At 100 Hz of CPU: the samples stand for the CPU time the program took.
    n = samples_in(err)
    took = cpu["one"] + cpu["three"]
    assert n == sum(stacks.values())
    assert 0.5 * took * 100 <= n <= took * 100 + 10, (n, took, err)
    assert "(each a stop of the thread by ptrace)" in err


def test_threads_started_after_the_attach_have_their_shares(bins, tmp_path):
    """thread_a runs one(), thread_b three(): both start after the attach,
    and are followed, with the CPU split their own clocks measured."""
    prog = started(bins, "await", "threads", 2 * ITERS, cwd=tmp_path)
    c = Attached(prog.pid, "-o", "threads.folded", "--no-lines", cwd=tmp_path).attached()
    go(prog)
    out, _ = prog.communicate(timeout=300)
    rc, _, err = c.finish()
    assert rc == 0 and prog.returncode == 0, err
    cpu = program_json(out)
    stacks = folded(tmp_path / "threads.folded")
    wa, wb = weight(stacks, "thread_a", "one"), weight(stacks, "thread_b", "three")
    assert wa and wb, stacks
    check_share(share_points(wb, wa + wb), share_points(cpu["b"], cpu["a"] + cpu["b"]), wa + wb,
                cpu, err)
    # Each thread's work is under its start routine, as in any recording. A
    # thread taken as it exits, in libc's teardown after its routine has
    # returned (__call_tls_dtors), is rightly under no routine.
    assert all(s.split(";")[1] in ("main", "thread_a", "thread_b") for s in stacks
               if s.endswith((";one", ";three", ";burn"))), stacks
    assert re.search(r"in 1 process, [23] threads", err), err


def test_forty_threads_started_at_once_while_attached_are_followed(bins, tmp_path):
    """Forty threads cloned at once while attached: cflame's table of
    threads grows under their clone events (under ASan, a stale pointer
    into it would be caught), each is followed, and the program ends
    unharmed."""
    prog = started(bins, "await", "many", ITERS, 40, cwd=tmp_path)
    c = Attached(prog.pid, "-o", "many.folded", "--no-lines", cwd=tmp_path).attached()
    go(prog)
    out, _ = prog.communicate(timeout=300)
    rc, _, err = c.finish()
    assert prog.returncode == 0 and program_json(out)["threads"] == 40, out
    assert rc == 0, err
    # Threads started after the attach were sampled (the count is of
    # threads with samples; each works about an interval of CPU, so not
    # every one need be).
    threads = int(re.search(r"in 1 process, (\d+) threads", err).group(1))
    assert threads >= 2, err
    assert weight(folded(tmp_path / "many.folded"), "thread_one") > 0


def test_a_forked_child_is_named_not_followed(bins, tmp_path):
    prog = started(bins, "await", "fork", ITERS // 2, cwd=tmp_path)
    c = Attached(prog.pid, "-o", "fork.folded", "--no-lines", cwd=tmp_path).attached()
    go(prog)
    out, _ = prog.communicate(timeout=300)
    rc, _, err = c.finish()
    assert rc == 0 and prog.returncode == 0, err
    child = program_json(out)["child"]
    assert (f"pid {child} (prog), forked by prog while attached, was not followed" in err), err
    stacks = folded(tmp_path / "fork.folded")
    assert weight(stacks, "parent_work") > 0 and weight(stacks, "child_work") == 0, stacks


# ---- --follow-forks ----

def followed(bins, tmp_path, *mode, extra=()):
    """`prog await MODE ...` recorded with --follow-forks (and extra) from
    before its work: checks that it and its child exited 0, as untraced;
    returns what it printed, the folded stacks and cflame's stderr."""
    prog = started(bins, "await", *mode, cwd=tmp_path)
    c = Attached(prog.pid, "--follow-forks", *extra, "-o", "follow.folded", "--no-lines",
                 cwd=tmp_path).attached()
    go(prog)
    out, _ = prog.communicate(timeout=300)
    rc, _, err = c.finish()
    assert rc == 0 and prog.returncode == 0, err
    pids = program_json(out)
    assert pids.get("status", 0) == 0, pids
    return pids, folded(tmp_path / "follow.folded"), err


def check_child_share(pids, child_weight, parent_weight, err):
    """The child's share of the samples is the share of the CPU time the
    program measured (its child's from wait4), within the binomial interval
    of the samples taken."""
    measured = share_points(pids["child_cpu"], pids["child_cpu"] + pids["parent_cpu"])
    n = child_weight + parent_weight
    check_share(share_points(child_weight, n), measured, n, pids, err)


def test_follow_forks_samples_a_forked_child_under_its_own_pid(bins, tmp_path):
    """prog fork, started after the attach: the child runs child_work, three
    times the parent's parent_work. With --follow-forks both processes are
    in the profile, each under a root naming its pid, at their shares."""
    pids, stacks, err = followed(bins, tmp_path, "fork", ITERS)
    parent, child = f"prog (pid {pids['parent']})", f"prog (pid {pids['child']})"
    assert {s.split(";")[0] for s in stacks} == {parent, child}, stacks.keys()
    wc, wp = weight(stacks, "child_work", root=child), weight(stacks, "parent_work", root=parent)
    assert weight(stacks, "child_work", root=parent) == 0
    assert weight(stacks, "parent_work", root=child) == 0
    check_child_share(pids, wc, wp, err)
    assert "in 2 processes, 2 threads" in err, err
    assert "was not followed" not in err, err


def test_follow_forks_follows_a_child_across_sh_and_exec(bins, tmp_path):
    """prog shexec: the child runs sh -c 'other N', which execs (or forks
    and execs) other. The child is followed across each exec, and other's
    samples are under other's own root, symbolized from its own program
    (other_work), at its share of the CPU the program measured."""
    pids, stacks, err = followed(bins, tmp_path, "shexec", ITERS, bins["other"])
    wo, wp = weight(stacks, "other_work", root="other"), weight(stacks, "parent_work", root="prog")
    assert wo > 0 and wp > 0, stacks
    assert weight(stacks, "other_work") == wo and weight(stacks, "parent_work") == wp, stacks
    check_child_share(pids, wo, wp, err)


def test_a_parent_that_vforks_again_and_again_is_never_held(bins, tmp_path):
    """prog spawn: 300 posix_spawns (a vfork each) in a row, with 20,000
    descriptors open, so that the program's CPU time is spent inside the
    vfork, and on one CPU with cflame, so that a program cflame resumes is
    still runnable when cflame looks at it next. A vfork's parent waits for
    its child, which is in its first stop until cflame resumes it: cflame
    must never wait for that parent to stop (it did, and hung, in every
    run before the fix). Every child runs and exits 0, and the program
    ends with its result."""
    cpu = min(os.sched_getaffinity(0))
    mask = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})  # inherited by the program and cflame
    try:
        pids, stacks, err = followed(bins, tmp_path, "spawn", 300, bins["other"], 0, 20000)
    finally:
        os.sched_setaffinity(0, mask)
    assert pids == {"spawned": 300, "failed": 0}, pids
    assert weight(stacks, "main", root="prog") > 0, (stacks, err)


def test_followed_children_still_running_at_the_end_are_detached(bins, tmp_path):
    """SIGTERM ends the attach while the followed child still works (it has
    used 0.1 s of its 2.4 s of CPU): the parent and the child are detached
    (no tracer), cflame says the child was still running, and the program
    ends as it would have: its child exits 0 and it prints its result."""
    prog = started(bins, "await", "fork", 4 * ITERS, cwd=tmp_path)
    c = Attached(prog.pid, "--follow-forks", "-o", "early.folded", "--no-lines",
                 cwd=tmp_path).attached()
    go(prog)
    children = Path(f"/proc/{prog.pid}/task/{prog.pid}/children")
    while not (kids := children.read_text().split()):
        os.sched_yield()
    child = int(kids[0])
    wait_for_cpu(child, 0.1)
    c.p.send_signal(signal.SIGTERM)
    rc, _, err = c.finish()
    assert rc == 0, err
    assert f"pid {child} (prog), followed, was still running as the recording ended" in err, err
    assert tracer_of(prog.pid)[0] == 0 and tracer_of(child)[0] == 0
    out, _ = prog.communicate(timeout=300)
    assert prog.returncode == 0 and program_json(out)["status"] == 0, out
    stacks = folded(tmp_path / "early.folded")
    assert weight(stacks, "child_work", root=f"prog (pid {child})") > 0, stacks


# ---- the target unharmed ----

def test_a_program_checking_its_own_calls_sees_no_error_and_no_eintr(bins, tmp_path):
    """unharmed writes 4 KiB records to a pipe the test drains in small
    reads (so its writes block on a full pipe), sleeps and polls between
    them, and a thread of it waits in epoll_wait, every result checked,
    all while sampled: its output is whole and in order, its sums right,
    and it exits 0 having seen no short write, no error and no EINTR."""
    rounds = 400
    prog = subprocess.Popen([bins["unharmed"], str(rounds)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, cwd=tmp_path)
    c = Attached(prog.pid, "-o", "unharmed.folded", "--no-lines", cwd=tmp_path).attached()
    prog.stdin.write(b"go\n")
    prog.stdin.flush()
    got = bytearray()
    while chunk := prog.stdout.read1(512):
        got += chunk
    prog.wait(timeout=300)
    rc, _, err = c.finish()
    lines = got.decode().splitlines()
    assert lines[-1] == f"end rounds={rounds} errors=0 eintr=0", lines[-1]
    assert prog.returncode == 0
    records = lines[:-1]
    assert len(records) == rounds and all(len(r) == 4095 for r in records)
    assert [int(r.split()[0]) for r in records] == list(range(rounds))
    assert rc == 0, err
    assert weight(folded(tmp_path / "unharmed.folded"), "known_sum") > 0, err


def test_a_call_blocked_at_the_detach_goes_on_without_eintr(bins, tmp_path):
    """To detach, cflame stops every thread, one blocked in epoll_wait too,
    which a stop otherwise ends with EINTR (as SIGSTOP and SIGCONT would):
    the program attached to for 0.3 s while it waits 3 s in epoll_wait
    sees its wait end as it would have, with 0 (the timeout), not EINTR."""
    prog = started(bins, "block", 1, 3000, cwd=tmp_path)
    assert prog.stdout.readline() == "ready\n"
    while not any(st == "S" for st in thread_states(prog.pid)):
        os.sched_yield()
    c = Attached(prog.pid, "-o", "block.folded", "--duration", "0.3", cwd=tmp_path).attached()
    rc, _, err = c.finish()
    out, _ = prog.communicate(timeout=120)
    assert prog.returncode == 0
    result = program_json(out)
    assert result == {"epoll_wait": 0, "errno": 0, "eintr": False}, (result, err)
    # It never ran, so nothing was sampled: cflame says so.
    assert "nothing is written" in err, err


def test_duration_ends_the_attach_and_the_program_goes_on(bins, tmp_path):
    with spinning(bins, tmp_path) as prog:
        c = Attached(prog.pid, "-o", "spin.folded", "--no-lines", "--duration", "1.5",
                     cwd=tmp_path).attached()
        rc, _, err = c.finish()
        assert rc == 0, err
        assert weight(folded(tmp_path / "spin.folded"), "spin", "burn") > 0
        assert "while attached" not in err, err  # it did not exit
        # Detached and running: no tracer, not stopped, and it still works.
        assert tracer_of(prog.pid)[0] == 0
        assert tracer_of(prog.pid)[1] in "RS", tracer_of(prog.pid)
        wait_for_cpu(prog.pid, 0.05)


def test_signals_and_stops_while_attached_reach_the_program(bins, tmp_path):
    """While attached: SIGSTOP stops the program (it uses no CPU until
    SIGCONT), SIGCONT lets it go on, and the SIGINT it handles reaches it
    once; it exits 0 as it chose, which ends the recording."""
    with spinning(bins, tmp_path) as prog:
        c = Attached(prog.pid, "-o", "stops.folded", "--no-lines", cwd=tmp_path).attached()
        wait_for_cpu(prog.pid, 0.1)
        os.kill(prog.pid, signal.SIGSTOP)
        wait_stopped(prog.pid)
        held_stopped(prog.pid, c.p.pid)
        os.kill(prog.pid, signal.SIGCONT)
        wait_for_cpu(prog.pid, 0.1, cflame=c.p.pid)
    rc, _, err = c.finish()
    assert rc == 0, err
    assert f"prog (pid {prog.pid}) exited with status 0 while attached" in err, err


def test_a_sigcont_that_overtakes_a_sigstop_lets_the_program_go_on(bins, tmp_path):
    """SIGSTOP, then SIGCONT before cflame has passed the SIGSTOP on (cflame
    is itself stopped meanwhile, so the SIGSTOP waits at its delivery): the
    program goes on, as it would untraced, and does not stop for good with
    the SIGCONT spent."""
    with spinning(bins, tmp_path) as prog:
        c = Attached(prog.pid, "-o", "overtaken.folded", "--no-lines", cwd=tmp_path).attached()
        wait_for_cpu(prog.pid, 0.05)
        # cflame stopped at a moment when the program is not at one of
        # cflame's own stops of it (a sample): then only the SIGSTOP can stop it.
        while True:
            os.kill(c.p.pid, signal.SIGSTOP)
            while thread_states(c.p.pid) != ["T"] * len(thread_states(c.p.pid)):
                os.sched_yield()
            if tracer_of(prog.pid)[1] in "RS":
                break
            os.kill(c.p.pid, signal.SIGCONT)
            wait_for_cpu(prog.pid, 0.01)
        os.kill(prog.pid, signal.SIGSTOP)
        wait_stopped(prog.pid)  # at the SIGSTOP's delivery, which cflame has not seen
        os.kill(prog.pid, signal.SIGCONT)
        os.kill(c.p.pid, signal.SIGCONT)
        # It runs on. Stopped for good, it would be seen stopped at every
        # look while cflame goes through 50 rounds of its loop.
        cpu, stopped_since = cpu_seconds(prog.pid), None
        while cpu_seconds(prog.pid) - cpu < 0.05:
            if all(st in "tT" for st in thread_states(prog.pid)):
                stopped_since = wakeups(c.p.pid) if stopped_since is None else stopped_since
                assert wakeups(c.p.pid) - stopped_since < 50, "the program stayed stopped"
            else:
                stopped_since = None
            os.sched_yield()
    rc, _, err = c.finish()
    assert rc == 0, err


def test_every_thread_stops_and_continues_with_the_process(bins, tmp_path):
    """SIGSTOP to a program of three threads while attached stops all of
    them (a group stop, kept while cflame samples on), SIGCONT lets all go
    on, and the work ends with its results as without the stop."""
    prog = started(bins, "await", "threads", 2 * ITERS, cwd=tmp_path)
    c = Attached(prog.pid, "-o", "stopped.folded", "--no-lines", cwd=tmp_path).attached()
    go(prog)
    try:
        tasks = Path(f"/proc/{prog.pid}/task")
        while len(list(tasks.iterdir())) < 3:
            os.sched_yield()
        wait_for_cpu(prog.pid, 0.1)
        os.kill(prog.pid, signal.SIGSTOP)
        wait_stopped(prog.pid)
        held_stopped(prog.pid, c.p.pid)
    finally:
        os.kill(prog.pid, signal.SIGCONT)
    out, _ = prog.communicate(timeout=300)
    assert prog.returncode == 0
    cpu = program_json(out)
    rc, _, err = c.finish()
    assert rc == 0, err
    stacks = folded(tmp_path / "stopped.folded")
    wa, wb = weight(stacks, "thread_a", "one"), weight(stacks, "thread_b", "three")
    check_share(share_points(wb, wa + wb), share_points(cpu["b"], cpu["a"] + cpu["b"]), wa + wb,
                cpu, err)


def test_cflame_killed_outright_leaves_the_program_running(bins, tmp_path):
    """SIGKILL gives cflame no chance to detach: the kernel does, and the
    program goes on untraced, as the docs say."""
    with spinning(bins, tmp_path) as prog:
        c = Attached(prog.pid, "-o", "killed.folded", cwd=tmp_path).attached()
        wait_for_cpu(prog.pid, 0.2)
        c.p.kill()
        c.p.wait()
        assert tracer_of(prog.pid)[0] == 0
        wait_for_cpu(prog.pid, 0.05)
        assert tracer_of(prog.pid)[1] in "RS"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_cflame_detaches_and_writes_the_profile(bins, tmp_path, sig):
    """kill -TERM (or Ctrl-C: SIGINT) to cflame ends the recording: cflame
    detaches, writes what it took and exits 0; the program never sees the
    signal and goes on."""
    with spinning(bins, tmp_path) as prog:
        c = Attached(prog.pid, "-o", "sig.folded", "--no-lines", cwd=tmp_path).attached()
        wait_for_cpu(prog.pid, 0.3)
        c.p.send_signal(sig)
        rc, _, err = c.finish()
        assert rc == 0, err
        n = samples_in(err)
        assert n > 0 and weight(folded(tmp_path / "sig.folded"), "spin", "burn") > 0.8 * n, err
        assert tracer_of(prog.pid)[0] == 0
        wait_for_cpu(prog.pid, 0.05)


# ---- what cannot be attached to ----

def test_another_users_process_names_the_user_and_the_command(bins, tmp_path):
    if os.geteuid() != 0:
        print("not root: cannot run cflame as another user; the check is left out")
        return
    with spinning(bins, tmp_path) as prog:
        rc, _, err = Attached(prog.pid, "-o", str(tmp_path / "x.folded"), cwd="/",
                              user=65534).finish()
        assert rc == 1, err
        assert (f"--pid {prog.pid}: attaching is not permitted: the process runs as another "
                "user (root, uid 0); attach as that user (sudo -u root cflame record --pid "
                f"{prog.pid} ...) or as root") in err, err
        assert tracer_of(prog.pid)[0] == 0


def test_a_process_that_is_gone(bins, tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    rc, _, err = Attached(gone.pid, "-o", "x.folded", cwd=tmp_path).finish()
    assert rc == 1 and "no such process" in err, err
    assert not (tmp_path / "x.folded").exists()


def test_a_zombie_is_said_to_have_exited(bins, tmp_path):
    zombie = subprocess.Popen(["true"])
    # Not waited for: once it has exited it stays a zombie until wait().
    while Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        os.sched_yield()
    try:
        rc, _, err = Attached(zombie.pid, "-o", "z.folded", cwd=tmp_path).finish()
        assert rc == 1, err
        assert f"--pid {zombie.pid}: the process has exited (a zombie" in err, err
    finally:
        zombie.wait()


def test_a_traced_process_names_its_tracer(bins, tmp_path):
    with spinning(bins, tmp_path) as prog:
        first = Attached(prog.pid, "-o", "first.folded", cwd=tmp_path).attached()
        rc, _, err = Attached(prog.pid, "-o", "second.folded", cwd=tmp_path).finish()
        assert rc == 1, err
        assert f"--pid {prog.pid}: the process is traced already, by pid {first.p.pid}" in err, err
        wait_for_cpu(prog.pid, 0.1)  # something for the first to have sampled
        first.p.send_signal(signal.SIGTERM)
        assert first.finish()[0] == 0


@pytest.mark.parametrize("args, message", [
    (["--pid", "1", "--", "true"], "--pid 1 attaches to a running program: give no -- PROGRAM"),
    (["--duration", "3", "--", "true"], "--duration needs --pid PID"),
    (["--follow-forks", "--", "true"], "--follow-forks needs --pid PID"),
    (["--pid", "1", "--allocs"], "--pid samples CPU time only: --allocs needs"),
    (["--pid", "1", "--delay", "0.0001"], "--delay 0.0001: with --pid, at least 0.001 s"),
    (["--pid", "x"], "--pid x: expected a process id"),
    (["--pid", "1", "--duration", "0"], "--duration 0: expected seconds, more than 0"),
])
def test_bad_command_lines(tmp_path, args, message):
    r = subprocess.run([CFLAME, "record", *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and message in r.stderr, r.stderr
