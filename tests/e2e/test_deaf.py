# SPDX-License-Identifier: BSD-3-Clause
"""A kernel that never goes deaf: what cells do to the kernel's channels, to
the worker's process and to their own children never leaves a request
without a reply, nor loses the session without a word.

Every test starts a kernel of its own and waits for each reply with a time
limit, so that a hang fails the test instead of stopping the suite."""
import json
import os
import pathlib
import signal
import time

import pytest
import zmq

from conftest import (MISSING, collect, errors, execute_msg, ok, open_files, raw_socket, replies, rows_of,
                      run, send, start_kernel, stderr, stdout)


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


# ---------------------------------------------------------------- the wire


def test_a_nul_in_a_cell_gets_an_error_that_says_where(kernel):
    km, kc = kernel
    reply, outputs = run(kc, 'int a = 1;\nint b\x00 = 2;\nprintf("%d\\n", a);', timeout=20)
    assert reply["status"] == "error" and reply["ename"] == "RequestError", reply
    assert "NUL" in reply["evalue"] and "line 2, column 6" in reply["evalue"], reply["evalue"]
    assert_session_kept(kc)


@pytest.mark.parametrize("code", [MISSING, None, 5, ["printf"]])
def test_an_execute_request_without_code_text_gets_an_error(kernel, code):
    km, kc = kernel
    sock, session = raw_socket(km)
    try:
        msg = execute_msg(session, code)
        session.send(sock, msg)
        got = replies(sock, session, 1)
        assert got, "no reply"
        assert got[0]["parent_header"]["msg_id"] == msg["header"]["msg_id"]
        assert got[0]["content"]["status"] == "error", got[0]["content"]
        assert "'code' must be a string" in got[0]["content"]["evalue"], got[0]["content"]
    finally:
        sock.close()
    assert_session_kept(kc)


def test_a_replayed_message_runs_once(tmp_path):
    log_path = tmp_path / "kernel.log"
    with open(log_path, "w") as log, start_kernel(stderr=log) as (km, kc):
        ok(kc, "int replays = 0;")
        shell, session = raw_socket(km)
        control, _ = raw_socket(km, "control_port")
        try:
            frames = session.serialize(execute_msg(session, 'printf("run %d\\n", ++replays);'))
            shell.send_multipart(frames)
            assert len(replies(shell, session, 1)) == 1
            # The same signed message again, on the same socket and on another.
            shell.send_multipart(frames)
            control.send_multipart(frames)
            assert not replies(shell, session, 1, timeout=1.0), "a replay was answered"
        finally:
            shell.close()
            control.close()
        assert ok(kc, 'printf("%d\\n", replays);') == "1\n"
    dropped = [line for line in log_path.read_text().splitlines() if "replayed" in line]
    assert len(dropped) == 2, dropped


def test_the_heartbeat_echoes_what_it_got(kernel):
    km, kc = kernel
    info = km.get_connection_info()
    hb = zmq.Context.instance().socket(zmq.REQ)
    hb.setsockopt(zmq.LINGER, 0)
    hb.connect(f"{info['transport']}://{info['ip']}:{info['hb_port']}")
    try:
        for size in (1, 1024, 5000, 200000):
            ping = os.urandom(size)
            hb.send(ping)
            assert hb.poll(5000), f"no echo of a {size}-byte ping"
            assert hb.recv() == ping, f"a {size}-byte ping was not echoed whole"
    finally:
        hb.close()


# ---------------------------------------------------------------- a slow compiler


@pytest.fixture
def slow_cc(tmp_path):
    """A compiler that takes a minute before it compiles (but answers
    --version at once), as a cell whose macros explode would."""
    script = tmp_path / "slowcc"
    script.write_text('#!/bin/sh\ncase "$1" in --version) exec cc --version;; esac\n'
                      "sleep 61\nexec cc \"$@\"\n")
    script.chmod(0o755)
    return str(script)


def start_slow_compile(kc, slow_cc):
    """Sets the slow compiler and sends a cell; returns the pids of the
    compiler's sleep once it runs, and the request's msg_id."""
    ok(kc, f"%cc {slow_cc}")
    msg_id = send(kc, 'printf("compiled\\n");', stop_on_error=False)
    deadline = time.monotonic() + 10
    while not processes(["sleep", "61"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    sleeping = processes(["sleep", "61"])
    assert sleeping, "the slow compiler did not start"
    return sleeping, msg_id


def test_the_kernel_answers_while_a_cell_compiles(kernel, slow_cc):
    km, kc = kernel
    t0 = time.monotonic()
    sleeping, msg_id = start_slow_compile(kc, slow_cc)
    # kernel_info on control, and the heartbeat, while the compiler runs.
    control, session = raw_socket(km, "control_port")
    try:
        info = session.msg("kernel_info_request", {})
        session.send(control, info)
        got = replies(control, session, 1, timeout=5)
        assert got and got[0]["parent_header"]["msg_id"] == info["header"]["msg_id"], got
    finally:
        control.close()
    assert kc.hb_channel.is_beating()
    # An interrupt stops the compiler: nothing ran.
    km.interrupt_kernel()
    r = collect(kc, msg_id, timeout=20, sent_t=t0)
    assert r.reply["status"] == "error" and r.reply["ename"] == "Interrupted", r.reply
    assert "while it compiled" in r.reply["evalue"], r.reply["evalue"]
    assert r.reply_t - t0 < 30, "the reply waited for the compiler"
    assert gone(sleeping), "the compiler outlived the interrupt"
    assert "compiled" not in stdout(r.outputs)
    ok(kc, "%cc cc")
    assert_session_kept(kc)


def test_sigterm_ends_the_kernel_while_a_cell_compiles(slow_cc):
    with start_kernel() as (km, kc):
        sleeping, _ = start_slow_compile(kc, slow_cc)
        pid = km.provisioner.process.pid
        os.kill(pid, signal.SIGTERM)
        assert gone([pid], within=20), "the kernel did not end on SIGTERM"
    assert gone(sleeping), "the compiler outlived the kernel"


def test_shutdown_ends_a_compiler_under_way(slow_cc):
    with start_kernel() as (km, kc):
        sleeping, _ = start_slow_compile(kc, slow_cc)
        t0 = time.monotonic()
        km.shutdown_kernel(now=False)
        assert time.monotonic() - t0 < 20, "shutdown waited for the compiler"
        assert not km.is_alive()
    assert gone(sleeping), "the compiler outlived the kernel"


# ---------------------------------------------------------------- resources


def test_profiled_cells_keep_the_open_files_bounded(tmp_path):
    """Sixty %%profview cells in a kernel allowed 70 open files: every one
    runs, and the kernel's open files do not grow with the cells."""
    built = pathlib.Path(os.environ["JUPYTER_PATH"].split(os.pathsep)[0]) / "kernels" / "cflame"
    spec = json.loads((built / "kernel.json").read_text())
    spec["argv"] = ["prlimit", "--nofile=70:70", *spec["argv"]]
    (tmp_path / "kernels" / "cflame").mkdir(parents=True)
    (tmp_path / "kernels" / "cflame" / "kernel.json").write_text(json.dumps(spec))
    old = os.environ["JUPYTER_PATH"]
    os.environ["JUPYTER_PATH"] = str(tmp_path) + os.pathsep + old
    try:
        with start_kernel() as (km, kc):
            pid = km.provisioner.process.pid
            counts = []
            for i in range(60):
                # memset: every run samples libc too, so that its debug
                # information (a file opened once a session) is met at once.
                reply, outputs = run(kc, f"%%profview\nstatic char b{i}[65536];\n"
                                         f"volatile double s{i} = 0;\n"
                                         f"for (int k = 0; k < 30000000; k++) s{i} += k * 0.5;\n"
                                         f"void *(*volatile fill{i})(void *, int, size_t) = memset;\n"
                                         f"for (int k = 0; k < 300; k++) fill{i}(b{i}, k, sizeof b{i});",
                                     timeout=60)
                assert reply["status"] == "ok", (i, reply, outputs)
                assert [o for o in outputs if o["msg_type"] == "display_data"], (i, outputs)
                counts.append(open_files(pid))
            # After the first cells (libraries met once), constant.
            assert max(counts[10:]) == min(counts[10:]), counts
            assert ok(kc, "%reset") is not None
            assert ok(kc, 'printf("still here\\n");') == "still here\n"
    finally:
        os.environ["JUPYTER_PATH"] = old


# ---------------------------------------------------------------- the profiler's signals


@pytest.mark.parametrize("how", ["SIG_IGN", "on_trap"])
def test_a_cell_that_took_sigtrap_does_not_blind_the_profiler(kernel, how):
    km, kc = kernel
    ok(kc, "static int traps; static void on_trap(int sig) { traps++; }\n"
           "volatile double burn;\n"
           "__attribute__((noinline)) void spin(long n) { for (long i = 0; i < n; i++) burn += i * 0.5; }")
    ok(kc, f"signal(SIGTRAP, {how});")
    # The next profiled run takes the handler back and samples.
    reply, outputs = run(kc, "%%profview\nspin(300000000);", timeout=120)
    assert reply["status"] == "ok", reply
    shown = [o for o in outputs if o["msg_type"] == "display_data"]
    assert shown, outputs
    assert "No samples" not in stdout(outputs), outputs
    assert any(r["func"] == "spin" for r in rows_of(shown[0]["data"]))
    # Replaced during the run: said, not "shorter than the interval".
    reply, outputs = run(kc, f"%%profview\nsignal(SIGTRAP, {how});\nspin(300000000);", timeout=120)
    assert reply["status"] == "ok", reply
    assert "replaced the handler of SIGTRAP" in stderr(outputs), outputs
    assert "less than the sampling interval" not in stdout(outputs), outputs
