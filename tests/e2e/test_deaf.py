"""A kernel that never goes deaf: what cells do to the kernel's channels, to
the worker's process and to their own children never leaves a request
without a reply, nor loses the session without a word.

Every test starts a kernel of its own and waits for each reply with a time
limit, so that a hang fails the test instead of stopping the suite."""
import os
import pathlib
import signal
import time

import pytest

from conftest import collect, errors, ok, run, send, start_kernel, stderr, stdout


@pytest.fixture
def kernel():
    with start_kernel() as (km, kc):
        ok(kc, "#include <unistd.h>\n#include <signal.h>\n#include <pthread.h>\n#include <fcntl.h>\n"
               "#include <sys/wait.h>\n"
               "int kept = 7;")
        yield km, kc


def processes(needle):
    """Pids of processes whose command line is needle (a list of words)."""
    found = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            words = (d / "cmdline").read_bytes().split(b"\0")[:-1]
        except OSError:
            continue
        if [w.decode(errors="replace") for w in words] == needle:
            found.append(int(d.name))
    return found


def gone(pids, within=5.0):
    """Whether every pid has ended (or is a zombie) within `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = []
        for pid in pids:
            try:
                state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if state != "Z":
                alive.append(pid)
        if not alive:
            return True
        time.sleep(0.05)
    return False


def assert_session_kept(kc):
    """The kernel still answers, and earlier definitions are still there."""
    assert ok(kc, 'printf("%d\\n", kept);') == "7\n"


# ---------------------------------------------------------------- the kernel's channels


@pytest.mark.parametrize("code", ["close(4);", "dup2(open(\"/dev/null\", O_WRONLY), 4);"])
def test_a_cell_that_takes_the_event_channel_is_reported(kernel, code):
    km, kc = kernel
    reply, outputs = run(kc, code, timeout=20)
    assert reply["status"] == "error", reply
    assert reply["ename"] == "ChannelError", reply
    assert "closed the kernel's channel (fd 4)" in reply["evalue"], reply["evalue"]
    assert "restarted" in reply["evalue"], reply["evalue"]
    assert_session_kept(kc)


def test_a_cell_that_closes_the_command_channel_is_reported(kernel):
    km, kc = kernel
    reply, outputs = run(kc, "close(3);", timeout=20)
    assert reply["status"] == "ok", reply
    # The worker can no longer read commands: it says so and ends, and the
    # next cell's output tells.
    time.sleep(0.5)
    reply, outputs = run(kc, 'printf("%d\\n", kept);', timeout=20)
    assert reply["status"] == "ok", reply
    assert "closed the kernel's channel (fd 3)" in stderr(outputs), outputs
    assert stdout(outputs) == "7\n"


def test_garbage_in_the_event_channel_says_why_the_worker_was_stopped(kernel):
    km, kc = kernel
    reply, outputs = run(kc, 'write(4, "garbage!garbage!garbage!", 24);\nsleep(1);', timeout=20)
    assert reply["status"] == "error", reply
    assert reply["ename"] == "ChannelError", reply
    assert "not the kernel's frames" in reply["evalue"], reply["evalue"]
    assert "SIGKILL" not in reply["evalue"]
    assert_session_kept(kc)


# ---------------------------------------------------------------- forks


def test_a_forked_child_that_keeps_running_hides_no_crash(kernel):
    km, kc = kernel
    out = ok(kc, "int child = fork();\nif (child == 0) { for (;;) sleep(1); }\n"
                 'printf("%d\\n", child);', timeout=20)
    child = int(out)
    t0 = time.monotonic()
    reply, outputs = run(kc, "volatile int *q = 0; *q = 1;", timeout=20)
    assert reply["status"] == "error" and reply["ename"] == "SIGSEGV", reply
    assert time.monotonic() - t0 < 10, "the crash was reported only when the child ended"
    # The worker's children went with it.
    assert gone([child]), f"the cell's child {child} outlived the worker"
    assert_session_kept(kc)


def test_a_bare_fork_never_makes_two_workers(kernel):
    km, kc = kernel
    reply, outputs = run(kc, "int fk = fork();", timeout=20)
    assert reply["status"] == "ok", reply
    for _ in range(3):
        assert ok(kc, 'printf("once\\n");', timeout=20) == "once\n"
    assert_session_kept(kc)


def test_a_forked_childs_output_still_streams(kernel):
    km, kc = kernel
    out = ok(kc, 'if (fork() == 0) { printf("from the child\\n"); fflush(stdout); _exit(0); }\n'
                 "wait(NULL);\n"
                 'printf("from the cell\\n");', timeout=20)
    assert "from the child\n" in out and "from the cell\n" in out, out


# ---------------------------------------------------------------- the worker's end


def test_the_worker_dying_between_cells_is_said(kernel):
    km, kc = kernel
    ok(kc, "int counter = 1;")
    ok(kc, "counter = 12345;")
    ok(kc, "alarm(1);")
    time.sleep(2.5)
    reply, outputs = run(kc, 'printf("%d\\n", counter);', timeout=20)
    assert reply["status"] == "ok", reply
    note = stderr(outputs)
    assert "between cells" in note and "SIGALRM" in note and "reset" in note, outputs
    assert stdout(outputs) == "1\n"
    assert_session_kept(kc)


def test_a_thread_crashing_after_its_cell_is_said(kernel):
    km, kc = kernel
    ok(kc, "static void *late(void *arg) { usleep(300000); volatile int *p = 0; *p = 1; return arg; }\n"
           "pthread_t t;\npthread_create(&t, NULL, late, NULL);")
    time.sleep(1.5)
    reply, outputs = run(kc, 'printf("%d\\n", kept);', timeout=20)
    assert "between cells" in stderr(outputs) and "SIGSEGV" in stderr(outputs), outputs
    assert stdout(outputs) == "7\n"


# ---------------------------------------------------------------- children of cells


def test_an_interrupt_reaches_the_cells_foreground_child(kernel):
    km, kc = kernel
    t0 = time.monotonic()
    msg_id = send(kc, 'system("sleep 37");\nprintf("after\\n");', stop_on_error=False)
    deadline = time.monotonic() + 10
    while not processes(["sleep", "37"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    sleepers = processes(["sleep", "37"])
    assert sleepers, "sleep 37 did not start"
    km.interrupt_kernel()
    r = collect(kc, msg_id, timeout=20, sent_t=t0)
    assert r.reply_t - t0 < 10, "the cell waited for sleep 37"
    assert gone(sleepers), "sleep 37 outlived the interrupt"
    assert_session_kept(kc)


def test_shutdown_ends_the_cells_children():
    with start_kernel() as (km, kc):
        ok(kc, "#include <unistd.h>\n"
               'system("sleep 41 &");\n'
               'if (fork() == 0) { execlp("sleep", "sleep", "43", (char *)0); _exit(1); }')
        deadline = time.monotonic() + 10
        while not (processes(["sleep", "41"]) and processes(["sleep", "43"])) and \
                time.monotonic() < deadline:
            time.sleep(0.05)
        children = processes(["sleep", "41"]) + processes(["sleep", "43"])
        assert len(children) == 2, children
    assert gone(children), f"children of cells outlived the kernel: {children}"
