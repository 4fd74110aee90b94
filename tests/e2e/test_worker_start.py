# SPDX-License-Identifier: BSD-3-Clause
"""Starting the worker and loading the session's code into it never makes the
kernel deaf: a constructor that does not return, a reload that takes long, and
a kernel that dies while its worker spins.

Every test starts a kernel of its own under a memory cap and waits for each
reply with a time limit, so that a hang fails the test instead of stopping
the suite."""
import contextlib
import json
import os
import pathlib
import signal
import time

from conftest import MEMORY_CAP, collect, ok, run, send, start_kernel, stderr
from test_deaf import gone, raw_socket, replies

# How long the kernel lets one cell's code load when it restarts the worker
# (kn_worker.c): a reload that the tests see end sooner did not wait for it.
LOAD_BOUND_S = 10


def workers_of(kernel_pid):
    """The live cflame-worker processes whose parent is kernel_pid."""
    found = []
    for d in pathlib.Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            comm, rest = (d / "stat").read_text().rsplit(")", 1)
        except OSError:
            continue
        state, ppid = rest.split()[:2]
        if comm.endswith("(cflame-worker") and int(ppid) == kernel_pid and state != "Z":
            found.append(int(d.name))
    return found


def maps_object(pid, name):
    """Whether process pid has mapped a file named name."""
    try:
        return any(line.endswith("/" + name) for line in
                   pathlib.Path(f"/proc/{pid}/maps").read_text().splitlines())
    except OSError:
        return False


def wait_for(what, within=30.0):
    """Calls what() until it returns something true (returned), or None
    after `within` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.02)
    return None


def worker_loading(kernel_pid, name, other_than=()):
    """A worker of kernel_pid (not one of other_than) that has mapped name:
    its constructors are running or have run. Waits up to 30 s."""
    found = wait_for(lambda: [p for p in workers_of(kernel_pid)
                              if p not in other_than and maps_object(p, name)])
    assert found, f"no worker of the kernel loaded {name}"
    return found[0]


def control_request(km, msg_type, timeout=60):
    """Sends msg_type on control from a socket of our own; returns (seconds
    until its reply, the time it was sent), or fails at the timeout."""
    control, session = raw_socket(km, "control_port")
    try:
        msg = session.msg(msg_type, {})
        t0 = time.monotonic()
        session.send(control, msg)
        got = replies(control, session, 1, timeout=timeout)
        assert got and got[0]["parent_header"]["msg_id"] == msg["header"]["msg_id"], \
            f"no {msg_type} reply within {timeout} s"
        return time.monotonic() - t0, t0
    finally:
        control.close()


def value_of(kc, code):
    reply, outputs = run(kc, code, timeout=60)
    assert reply["status"] == "ok", (reply, outputs)
    results = [o for o in outputs if o["msg_type"] == "execute_result"]
    assert results, outputs
    return results[0]["data"]["text/plain"]


SPIN_CONSTRUCTOR = "__attribute__((constructor)) static void spin(void) { for (;;); }"


def test_a_constructor_that_never_returns_is_interrupted_and_not_kept():
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        kpid = km.provisioner.process.pid
        ok(kc, "int kept = 7;")
        t_sent = time.monotonic()
        msg_id = send(kc, SPIN_CONSTRUCTOR, stop_on_error=False)
        spinning = worker_loading(kpid, "cell_2.so")
        answered_in, t0 = control_request(km, "interrupt_request")
        r = collect(kc, msg_id, timeout=60, sent_t=t_sent)
        assert r.reply["status"] == "error" and r.reply["ename"] == "Interrupted", r.reply
        assert "not kept" in r.reply["evalue"], r.reply["evalue"]
        assert "could not be restarted" not in r.reply["evalue"], r.reply["evalue"]
        # It stopped the constructor itself; it did not wait for a reload of it.
        assert r.reply_t - t0 < LOAD_BOUND_S, (r.reply_t - t0, answered_in)
        assert gone([spinning]), "the worker spinning in the constructor outlived the interrupt"
        assert value_of(kc, "1+1") == "(int) 2"
        assert ok(kc, 'printf("%d\\n", kept);') == "7\n"


def hanging_on_reload(mark):
    """A cell whose constructor returns at once the first time, and never
    once its run has left the file mark."""
    return ("#include <unistd.h>\n"
            f'static const char *mark = "{mark}";\n'
            "__attribute__((constructor)) static void hang_when_reloaded(void) {\n"
            "  if (access(mark, F_OK) == 0) for (;;);\n"
            "}\n"
            "int from_the_hanging_cell(void) { return 3; }\n"
            'fclose(fopen(mark, "w"));')


def crash_and_watch_the_reload(km, kc, tmp_path):
    """Defines the hanging cell (cell 1) and a global after it, then crashes
    the worker. Returns the crash's msg_id, when it was sent, and the new
    worker hung in cell 1's constructor."""
    ok(kc, hanging_on_reload(tmp_path / "mark"))
    ok(kc, "int kept = 7;")
    kpid = km.provisioner.process.pid
    old = workers_of(kpid)
    t_sent = time.monotonic()
    msg_id = send(kc, "*(volatile int *)0 = 0;", stop_on_error=False)
    hung = worker_loading(kpid, "cell_1.so", other_than=old)
    return msg_id, t_sent, hung


def assert_dropped_and_kept(kc, r, why):
    assert r.reply["ename"] == "SIGSEGV", r.reply
    err = stderr(r.outputs)
    assert "cell 1 was dropped from the session" in err and why in err, err
    assert "could not be restarted" not in r.reply["evalue"], r.reply["evalue"]
    assert ok(kc, 'printf("%d\\n", kept);') == "7\n"
    reply, _ = run(kc, "from_the_hanging_cell()", timeout=60)
    assert reply["status"] == "error", "the dropped cell's function is still there"


def test_a_cell_whose_reload_hangs_is_dropped(tmp_path):
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        msg_id, t_sent, hung = crash_and_watch_the_reload(km, kc, tmp_path)
        # Control is answered while the reload hangs.
        answered_in, t_asked = control_request(km, "kernel_info_request")
        assert answered_in < LOAD_BOUND_S, f"kernel_info waited {answered_in:.1f} s"
        r = collect(kc, msg_id, timeout=90, sent_t=t_sent)
        assert t_asked + answered_in < r.reply_t, "kernel_info waited for the reload"
        assert_dropped_and_kept(kc, r, f"did not return within {LOAD_BOUND_S} s")
        assert gone([hung]), "the worker hung in the constructor outlived the reload"


def test_an_interrupt_ends_a_reload_that_hangs(tmp_path):
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        msg_id, t_sent, hung = crash_and_watch_the_reload(km, kc, tmp_path)
        _, t0 = control_request(km, "interrupt_request")
        r = collect(kc, msg_id, timeout=90, sent_t=t_sent)
        assert r.reply_t - t0 < LOAD_BOUND_S, "the interrupt waited for the load's bound"
        assert_dropped_and_kept(kc, r, "interrupt")
        assert gone([hung]), "the worker hung in the constructor outlived the interrupt"


def test_an_interrupt_between_cells_ends_a_reload_that_hangs(tmp_path):
    """The worker dies while no cell runs and its successor hangs in cell 1's
    constructor: an interrupt ends the load, and the next cell, which waited,
    says what happened before it runs."""
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        ok(kc, hanging_on_reload(tmp_path / "mark"))
        ok(kc, "int kept = 7;")
        kpid = km.provisioner.process.pid
        old = workers_of(kpid)
        ok(kc, "alarm(1);")
        hung = worker_loading(kpid, "cell_1.so", other_than=old)
        t_sent = time.monotonic()
        waiting = send(kc, 'printf("%d\\n", kept);')
        answered_in, t0 = control_request(km, "interrupt_request")
        r = collect(kc, waiting, timeout=90, sent_t=t_sent)
        assert r.reply["status"] == "ok", r.reply
        assert r.reply_t - t0 < LOAD_BOUND_S, "the interrupt waited for the load's bound"
        err = stderr(r.outputs)
        assert "between cells, the worker process died of SIGALRM" in err, err
        assert "cell 1 was dropped from the session" in err and "interrupt" in err, err
        assert "7\n" in "".join(o.get("text", "") for o in r.outputs if o.get("name") == "stdout")
        assert gone([hung]), "the worker hung in the constructor outlived the interrupt"


def test_control_is_answered_while_slow_constructors_reload():
    """Three cells whose constructors take 7 s each: after a crash, their
    reload takes some 21 s, and kernel_info on control is answered while it
    runs; a cell sent meanwhile gets its reply once the reload is done."""
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        kpid = km.provisioner.process.pid
        for i in range(3):
            ok(kc, "#include <unistd.h>\n"
                   f"__attribute__((constructor)) static void slow{i}(void) {{ sleep(7); }}\n"
                   f"int v{i} = {i + 1};", timeout=60)
        old = workers_of(kpid)
        crash = send(kc, "*(volatile int *)0 = 0;", stop_on_error=False)
        worker_loading(kpid, "cell_1.so", other_than=old)
        t_loading = time.monotonic()
        later = send(kc, 'printf("%d\\n", v0 + v1 + v2);')
        answered_in, t_asked = control_request(km, "kernel_info_request")
        # The reload of the first cell alone takes 7 s from t_loading.
        assert t_asked + answered_in - t_loading < 7, (
            f"kernel_info waited {answered_in:.1f} s, for the reload")
        r = collect(kc, crash, timeout=120)
        assert r.reply["ename"] == "SIGSEGV", r.reply
        assert t_asked + answered_in < r.reply_t, "kernel_info was answered after the reload"
        assert "dropped" not in stderr(r.outputs), r.outputs
        r = collect(kc, later, timeout=120)
        assert r.reply["status"] == "ok", r.reply
        assert stderr(r.outputs) == "" and "6" in "".join(
            o.get("text", "") for o in r.outputs), r.outputs


def start_spinning(km, kc, code, name):
    """Runs code, which spins, and returns the worker that spins in it."""
    send(kc, code, stop_on_error=False)
    return worker_loading(km.provisioner.process.pid, name)


def test_no_worker_outlives_a_killed_kernel():
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        spinning = start_spinning(km, kc, "for (;;);", "cell_1.so")
        os.kill(km.provisioner.process.pid, signal.SIGKILL)
        assert gone([spinning]), "the worker outlived the kernel's SIGKILL"


def test_no_worker_outlives_a_shutdown_now():
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        spinning = start_spinning(km, kc, SPIN_CONSTRUCTOR, "cell_1.so")
        km.shutdown_kernel(now=True)
        assert gone([spinning]), "the worker outlived shutdown_kernel(now=True)"


@contextlib.contextmanager
def kernel_started_by(tmp_path, wrapper):
    """Makes start_kernel run the kernel under wrapper (a command line that
    ends by running its arguments)."""
    built = pathlib.Path(os.environ["JUPYTER_PATH"].split(os.pathsep)[0]) / "kernels" / "cflame"
    spec = json.loads((built / "kernel.json").read_text())
    spec["argv"] = [*wrapper, *spec["argv"]]
    (tmp_path / "kernels" / "cflame").mkdir(parents=True)
    (tmp_path / "kernels" / "cflame" / "kernel.json").write_text(json.dumps(spec))
    old = os.environ["JUPYTER_PATH"]
    os.environ["JUPYTER_PATH"] = str(tmp_path) + os.pathsep + old
    try:
        yield
    finally:
        os.environ["JUPYTER_PATH"] = old


def test_the_worker_has_none_of_the_kernels_descriptors(tmp_path):
    """A descriptor the kernel has open, however high (1500, which it was
    started with), is not the worker's: cells see only their own."""
    opens_1500 = ["bash", "-c", 'ulimit -n 4096 && exec 1500</dev/null && exec "$@"', "bash"]
    with kernel_started_by(tmp_path, opens_1500):
        with start_kernel(memory=MEMORY_CAP) as (km, kc):
            kpid = km.provisioner.process.pid
            assert os.path.exists(f"/proc/{kpid}/fd/1500"), "the kernel was not given descriptor 1500"
            assert ok(kc, '#include <fcntl.h>\nprintf("%d\\n", fcntl(1500, F_GETFD));') == "-1\n"
