# SPDX-License-Identifier: BSD-3-Clause
"""Shared set-up of cflame's end-to-end tests: start the real kernel through
jupyter_client and run cells the way a frontend does.

The kernelspec comes from the build tree: CMake passes CFLAME_JUPYTER_PATH
(build/share/jupyter); run by hand, the tests fall back to
../../build/share/jupyter next to this file. It is put first in JUPYTER_PATH
at import, so that jupyter_kernel_test's own start-up finds it too.
"""
import contextlib
import os
import pathlib
import queue
import shutil
import subprocess
import sys
import time
import weakref

import pytest
import zmq
from jupyter_client import KernelManager
from jupyter_client.session import Session

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "lib"))
from cflame_bundle import (chart_bars_of, frames_of, sandwich_halves_of,  # noqa: E402,F401
                           svg_of, svg_of_file, top_rows_of, view_of)  # (tests/lib)
from cflame_text import COUNT, count, count_in  # noqa: E402,F401 (tests/lib)

CFLAME_JUPYTER_PATH = os.environ.get("CFLAME_JUPYTER_PATH") or str(
    HERE.parent.parent / "build" / "share" / "jupyter"
)
_old = os.environ.get("JUPYTER_PATH")
os.environ["JUPYTER_PATH"] = CFLAME_JUPYTER_PATH + (os.pathsep + _old if _old else "")

KERNEL_JSON = pathlib.Path(CFLAME_JUPYTER_PATH) / "kernels" / "cflame" / "kernel.json"


def pytest_sessionstart(session):
    if not KERNEL_JSON.is_file():
        raise pytest.UsageError(
            f"no cflame kernelspec at {KERNEL_JSON}: build first (cmake --build build) "
            "or set CFLAME_JUPYTER_PATH"
        )


# How much longer than a test's own figure a wait for an answer may last.
# A loaded machine (and AddressSanitizer, several times slower) stretches
# every answer, and a wait ends as soon as its answer is complete, so a
# passing run never pays for the margin. Waits that show that something
# does NOT come (a replay not answered) are not scaled.
WAIT_SCALE = float(os.environ.get("CFLAME_TEST_WAIT_SCALE") or
                   (6 if os.environ.get("CFLAME_SANITIZED") else 3))


# ---------------------------------------------------------------- kernels


# A cap for start_kernel(memory=...): what a test kernel that is fed
# something hostile may take, so that a regression fails the test, not the
# machine.
MEMORY_CAP = 4 << 30


def describe_processes(pid):
    """What a kernel that does not answer is doing: its state and where it
    waits, with its threads and child processes, and their stacks when gdb
    is installed."""
    lines = []

    def describe(p, indent):
        try:
            stat = pathlib.Path(f"/proc/{p}/stat").read_text()
            cmd = pathlib.Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            wchan = pathlib.Path(f"/proc/{p}/wchan").read_text()
        except OSError:
            return
        state = stat.rsplit(")", 1)[1].split()[0]
        lines.append(f"{indent}{p} state {state} wchan {wchan or '-'}: {cmd[:200]}")
        for task in sorted(os.listdir(f"/proc/{p}/task")):
            with contextlib.suppress(OSError):
                tstat = pathlib.Path(f"/proc/{p}/task/{task}/stat").read_text()
                twchan = pathlib.Path(f"/proc/{p}/task/{task}/wchan").read_text()
                lines.append(f"{indent}  thread {task} state {tstat.rsplit(')', 1)[1].split()[0]} "
                             f"wchan {twchan or '-'}")
        with contextlib.suppress(OSError):
            for child in pathlib.Path(f"/proc/{p}/task/{p}/children").read_text().split():
                describe(int(child), indent + "  ")

    describe(pid, "")
    if shutil.which("gdb"):
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            lines.append(subprocess.run(["gdb", "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                                        capture_output=True, text=True, timeout=60).stdout)
    return "\n".join(lines)


@contextlib.contextmanager
def start_kernel(env=None, transport="tcp", ip=None, stderr=None, ready_timeout=30,
                 memory=None, wrapper=None):
    """Starts a cflame kernel; yields (km, kc); shuts it down afterwards.

    env: extra environment variables for the kernel (None values remove a
    variable from the kernel's environment). ip: the address, or for the ipc
    transport the path prefix of the sockets. stderr: a file for the
    kernel's log (default: inherited). memory: a cap in bytes on the
    address space of the kernel and of what it starts (prlimit --as), so
    that a regression cannot take the machine down; under ASan, which
    reserves terabytes of address space, on their resident memory.
    wrapper: an argv the kernel's command is appended to (tests/lib's
    in_small_tmpdir)."""
    km = KernelManager(kernel_name="cflame", transport=transport, **({"ip": ip} if ip else {}))
    if memory and os.environ.get("CFLAME_SANITIZED"):
        asan = (env or {}).get("ASAN_OPTIONS", os.environ.get("ASAN_OPTIONS", ""))
        env = {**(env or {}), "ASAN_OPTIONS": f"{asan}:hard_rss_limit_mb={int(memory) >> 20}"}
    elif memory:
        km.kernel_spec.argv[:0] = ["prlimit", f"--as={int(memory)}"]
    if wrapper:
        km.kernel_spec.argv[:0] = list(map(str, wrapper))
    kenv = dict(os.environ)
    for key, value in (env or {}).items():
        if value is None:
            kenv.pop(key, None)
        else:
            kenv[key] = value
    km.start_kernel(env=kenv, **({"stderr": stderr} if stderr is not None else {}))
    kc = km.client()
    kc.start_channels()
    try:
        try:
            kc.wait_for_ready(timeout=ready_timeout * WAIT_SCALE)
        except RuntimeError as e:
            raise RuntimeError(f"{e}\n{describe_processes(km.provisioner.process.pid)}") from e
        yield km, kc
    finally:
        kc.stop_channels()
        if km.has_kernel:
            km.shutdown_kernel(now=False)


@pytest.fixture(scope="module")
def kernel():
    """One kernel per test module: (km, kc)."""
    with start_kernel() as (km, kc):
        yield km, kc


@pytest.fixture(scope="module")
def kc(kernel):
    return kernel[1]


@pytest.fixture(scope="module")
def km(kernel):
    return kernel[0]


@pytest.fixture
def fresh():
    """A kernel of the test's own, for tests that crash, reset or restart."""
    with start_kernel() as (km, kc):
        yield km, kc


# ---------------------------------------------------------------- raw messages
# For what no client sends: a socket of the test's own, and messages signed
# with the kernel's key by jupyter_client's Session.


def raw_socket(km, port="shell_port"):
    """A DEALER socket of our own to the kernel, and the session that signs
    for it."""
    info = km.get_connection_info()
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    ip = info["ip"]
    sock.connect(f"{info['transport']}://{ip}:{info[port]}")
    return sock, Session(key=info["key"], signature_scheme=info["signature_scheme"])


def execute_msg(session, code, **content):
    body = {"silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False,
            "stop_on_error": False}
    if code is not MISSING:
        body["code"] = code
    body.update(content)
    return session.msg("execute_request", content=body)


MISSING = object()  # a content key left out


def replies(sock, session, n, timeout=10.0):
    """The next n replies on sock (deserialized), or fewer at the timeout."""
    out = []
    deadline = time.monotonic() + timeout
    while len(out) < n and sock.poll(max(0, int(1000 * (deadline - time.monotonic())))):
        idents, msg = session.feed_identities(sock.recv_multipart())
        out.append(session.deserialize(msg))
    return out


# ---------------------------------------------------------------- running cells


class Run:
    """What one execute_request produced.

    reply: the execute_reply content; outputs: stream / error / display_data /
    execute_result / input_request messages in arrival order, each a dict of
    the content plus "msg_type" and "t" (monotonic arrival time); msgs: every
    iopub message of the request (full messages, with "t" added); reply_t:
    arrival time of the execute_reply; sent_t: when the request was sent."""

    def __init__(self, msg_id, sent_t):
        self.msg_id = msg_id
        self.sent_t = sent_t
        self.reply = None
        self.reply_msg = None
        self.reply_t = None
        self.outputs = []
        self.msgs = []
        self.idle_t = None


def send(kc, code, allow_stdin=False, stop_on_error=True, silent=False, store_history=True,
         cell_id=None):
    """Sends an execute_request without waiting; returns its msg_id. With
    cell_id, its metadata says which cell it is, as JupyterLab's does."""
    if cell_id is not None:
        content = {"code": code, "silent": silent, "store_history": store_history,
                   "user_expressions": {}, "allow_stdin": allow_stdin,
                   "stop_on_error": stop_on_error}
        msg = kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
        kc.shell_channel.send(msg)
        return msg["header"]["msg_id"]
    return kc.execute(
        code,
        silent=silent,
        store_history=store_history,
        allow_stdin=allow_stdin,
        stop_on_error=stop_on_error,
    )


# Messages read while waiting for another request's are kept here, per
# client and channel, until their own request's turn comes.
_STASH_MAX = 5000
_stashes = weakref.WeakKeyDictionary()


def _stash(kc, channel):
    return _stashes.setdefault(kc, {"iopub": [], "shell": [], "stdin": []})[channel]


def _take(kc, channel, msg_id):
    """Removes and returns the stashed messages of channel for msg_id."""
    st = _stash(kc, channel)
    mine = [m for m in st if m["parent_header"].get("msg_id") == msg_id]
    if mine:
        st[:] = [m for m in st if m["parent_header"].get("msg_id") != msg_id]
    return mine


def _read(kc, channel, msg_id, timeout):
    """The next message of channel for msg_id, from the stash or the socket
    (stashing others); None if none came within timeout (0: just look)."""
    mine = _take(kc, channel, msg_id)
    if mine:
        st = _stash(kc, channel)
        st[:0] = mine[1:]
        return mine[0]
    get = getattr(kc, f"get_{channel}_msg")
    deadline = time.monotonic() + timeout
    while True:
        try:
            msg = get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        msg["t"] = time.monotonic()
        if msg["parent_header"].get("msg_id") == msg_id:
            return msg
        st = _stash(kc, channel)
        st.append(msg)
        del st[:-_STASH_MAX]
        if time.monotonic() >= deadline:
            return None


def collect(kc, msg_id, timeout=30, inputs=None, sent_t=None):
    """Collects everything the kernel sends for request msg_id: the iopub
    messages up to status idle, the execute_reply, and input_requests on the
    stdin channel (answered in turn from `inputs`, a list of strings).
    Waits up to timeout * WAIT_SCALE seconds. Returns a Run."""
    r = Run(msg_id, sent_t if sent_t is not None else time.monotonic())
    answers = list(inputs or [])
    timeout *= WAIT_SCALE
    deadline = time.monotonic() + timeout
    while r.idle_t is None or r.reply is None:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"no complete answer within {timeout} s "
                f"(idle: {r.idle_t is not None}, reply: {r.reply is not None}); "
                f"outputs so far: {_summary(r.outputs)}"
            )
        while r.idle_t is None:
            msg = _read(kc, "iopub", msg_id, 0.01)
            if msg is None:
                break
            t = msg["t"]
            r.msgs.append(msg)
            mt = msg["msg_type"]
            if mt in ("stream", "error", "display_data", "execute_result", "update_display_data"):
                out = dict(msg["content"])
                out["msg_type"] = mt
                out["t"] = t
                out["date"] = msg["header"].get("date")
                r.outputs.append(out)
            elif mt == "status" and msg["content"]["execution_state"] == "idle":
                r.idle_t = t
        while True:
            msg = _read(kc, "stdin", msg_id, 0)
            if msg is None:
                break
            if msg["msg_type"] == "input_request":
                out = dict(msg["content"])
                out["msg_type"] = "input_request"
                out["t"] = msg["t"]
                out["date"] = msg["header"].get("date")
                r.outputs.append(out)
                if answers:
                    kc.input(answers.pop(0))
                else:
                    raise AssertionError(f"unexpected input_request {msg['content']!r}")
        if r.reply is None:
            msg = _read(kc, "shell", msg_id, 0 if r.idle_t is None else 0.01)
            if msg is not None:
                r.reply_t = msg["t"]
                r.reply_msg = msg
                r.reply = msg["content"]
    return r


def run_full(kc, code, allow_stdin=False, timeout=30, stop_on_error=True, inputs=None, **kw):
    t = time.monotonic()
    msg_id = send(kc, code, allow_stdin=allow_stdin, stop_on_error=stop_on_error, **kw)
    return collect(kc, msg_id, timeout=timeout, inputs=inputs, sent_t=t)


def run(kc, code, allow_stdin=False, timeout=30, stop_on_error=True, inputs=None, **kw):
    """Runs a cell; returns (reply_content, outputs). kw: send's (cell_id)."""
    r = run_full(kc, code, allow_stdin=allow_stdin, timeout=timeout,
                 stop_on_error=stop_on_error, inputs=inputs, **kw)
    return r.reply, r.outputs


def stdout(outputs):
    return "".join(o["text"] for o in outputs if o["msg_type"] == "stream" and o["name"] == "stdout")


def stderr(outputs):
    return "".join(o["text"] for o in outputs if o["msg_type"] == "stream" and o["name"] == "stderr")


def errors(outputs):
    return [o for o in outputs if o["msg_type"] == "error"]


def _summary(outputs, limit=2000):
    text = repr([{k: v for k, v in o.items() if k != "t"} for o in outputs])
    return text if len(text) <= limit else text[:limit] + "..."


def ok(kc, code, **kw):
    """Runs a cell that must succeed; returns its stdout."""
    reply, outputs = run(kc, code, **kw)
    assert reply["status"] == "ok", (
        f"cell {code!r} failed: {reply.get('ename')}: {reply.get('evalue')}\n"
        f"traceback: {reply.get('traceback')}\noutputs: {_summary(outputs)}"
    )
    return stdout(outputs)


def fails(kc, code, ename, stop_on_error=False, **kw):
    """Runs a cell that must fail with ename; returns (reply, outputs). Also
    checks that the error was published on iopub with the same content.

    The request says stop_on_error=False unless told otherwise, so that the
    test's next cell is never taken for a queued request to abort (whether
    the kernel gets that right is test_protocol's business)."""
    reply, outputs = run(kc, code, stop_on_error=stop_on_error, **kw)
    assert reply["status"] == "error", f"cell {code!r} did not fail: outputs {_summary(outputs)}"
    assert reply["ename"] == ename, (
        f"cell {code!r}: expected {ename}, got {reply['ename']}: {reply['evalue']}\n"
        f"traceback: {reply.get('traceback')}"
    )
    errs = errors(outputs)
    assert len(errs) == 1, f"expected one error message on iopub, got {_summary(outputs)}"
    assert errs[0]["ename"] == ename and errs[0]["evalue"] == reply["evalue"]
    return reply, outputs


def request(kc, method, *args, timeout=10, **kwargs):
    """Sends a shell request with kc.<method>(...) and returns its reply
    message; waits up to timeout * WAIT_SCALE seconds."""
    msg_id = getattr(kc, method)(*args, **kwargs)
    timeout *= WAIT_SCALE
    msg = _read(kc, "shell", msg_id, timeout)
    if msg is None:
        raise TimeoutError(f"no reply to {method} within {timeout} s")
    return msg


def control_request(kc, msg_type, timeout, content=None):
    """Sends msg_type on the control channel and waits up to timeout
    seconds (not scaled: the caller measures how long the answer takes) for
    its reply. Returns (reply content, seconds from send to reply), or
    (None, timeout) when no reply came."""
    msg = kc.session.msg(msg_type, content or {})
    t = time.monotonic()
    kc.control_channel.send(msg)
    deadline = t + timeout
    while time.monotonic() < deadline:
        try:
            reply = kc.get_control_msg(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply["content"], time.monotonic() - t
    return None, timeout


def drain_iopub(kc, quiet=0.2):
    """Reads iopub until it has been quiet for `quiet` seconds; returns the
    messages (those stashed before included)."""
    st = _stash(kc, "iopub")
    msgs = list(st)
    st.clear()
    while True:
        try:
            msgs.append(kc.get_iopub_msg(timeout=quiet))
        except queue.Empty:
            return msgs


# ---------------------------------------------------------------- flame graph outputs
# Helpers of the profiling tests (test_profile.py, test_profile_truth.py).

import json  # noqa: E402
import re  # noqa: E402

VL_MIME = "application/vnd.vegalite.v5+json"
SOURCE_DIR = pathlib.Path(os.environ.get("CFLAME_SOURCE_DIR") or HERE.parent.parent)
CHECK_SPEC = SOURCE_DIR / "tests" / "render" / "check_spec.mjs"


def displays(outputs):
    return [o for o in outputs if o["msg_type"] == "display_data"]


def flame(kc, code, timeout=60, **kw):
    """Runs a cell that must succeed and answer with exactly one
    display_data; returns (bundle, reply, outputs)."""
    reply, outputs = run(kc, code, timeout=timeout, **kw)
    assert reply["status"] == "ok", (
        f"cell {code!r} failed: {reply.get('ename')}: {reply.get('evalue')}\n"
        f"outputs: {_summary(outputs)}"
    )
    ds = displays(outputs)
    assert len(ds) == 1, f"cell {code!r}: expected one display_data, got {_summary(outputs)}"
    return ds[0]["data"], reply, outputs


def rows_of(bundle):
    """The data rows of a flame graph bundle (or of a bare Vega-Lite spec)."""
    return frames_of(bundle)


_SUMMARY_RE = re.compile(
    rf"(?P<samples>{COUNT}) samples? every (?P<interval>[\d.]+) (?P<unit>ms|ns) of CPU"
    r" represents? (?P<represented>[\d.]+) s of CPU"
    rf", from (?P<stacks>{COUNT}) stacks? recorded"
    rf"(?: \((?P<rate>{COUNT}) per CPU-second\))?"
    r"(?:; the run used (?P<cpu>[\d.]+) s CPU, (?P<wall>[\d.]+) s wall)?"
)


def summary_of(text):
    """Parses the summary line of a profile ("N samples every 1 ms of CPU
    represent X s of CPU, from S stacks recorded (R per CPU-second); the run
    used Y s CPU, Z s wall") found in text (a bundle's text/plain, or
    %profprint's output). Returns a dict: samples (intervals of CPU, the
    unit of every count), stacks (recorded), interval (seconds), rate
    (stacks per CPU-second), represented, cpu, wall (None where the line
    leaves them out), line."""
    if isinstance(text, dict):
        text = text["text/plain"]
    m = _SUMMARY_RE.search(text)
    assert m, f"no profile summary line in {text[:500]!r}"
    scale = 1e-3 if m["unit"] == "ms" else 1e-9
    num = lambda k: float(m[k]) if m[k] is not None else None  # noqa: E731
    return {
        "samples": count(m["samples"]),
        "stacks": count(m["stacks"]),
        "interval": float(m["interval"]) * scale,
        "rate": float(count(m["rate"])) if m["rate"] is not None else None,
        "represented": num("represented"),
        "cpu": num("cpu"),
        "wall": num("wall"),
        "line": m.group(0),
    }


def by_id(rows):
    return {r["id"]: r for r in rows}


def ancestors(rows, row, index=None):
    """The rows above row's frame, its parent first, up to the root."""
    index = index or by_id(rows)
    out = []
    p = row["parent"]
    while p is not None:
        out.append(index[p])
        p = index[p]["parent"]
    return out


def children(rows, row):
    return [r for r in rows if r["parent"] == row["id"]]


class SpecStore:
    """Collects flame graph bundles (and Vega-Lite specs) to check them with
    tests/render/check_spec.mjs: the real vega-lite 5 and vega 5."""

    def __init__(self, tag):
        import tempfile

        self.dir = pathlib.Path(tempfile.mkdtemp(prefix=f"cflame-{tag}-"))
        self.n = 0

    def add(self, bundle, name="bundle"):
        self.n += 1
        path = self.dir / f"{self.n:03d}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)[:60]}.json"
        path.write_text(json.dumps(bundle))
        return path

    def check(self):
        """Runs check_spec.mjs over everything added; fails with its report."""
        assert self.n > 0, "no flame graph was collected"
        check_spec(self.dir)
        shutil.rmtree(self.dir, ignore_errors=True)


def check_spec(*paths, timeout=300):
    """Runs tests/render/check_spec.mjs on the files or directories; fails
    with its report unless every one passes. Returns its output."""
    node = os.environ.get("CFLAME_NODE") or shutil.which("node")
    assert node, "no node to run check_spec.mjs (set CFLAME_NODE)"
    p = subprocess.run([node, str(CHECK_SPEC), *map(str, paths)], capture_output=True, text=True,
                       timeout=timeout)
    report = p.stdout + p.stderr
    assert p.returncode == 0, f"check_spec.mjs failed:\n{report[-20000:]}"
    return report


def interrupt_when_printed(km, kc, code, marker, interrupt=None):
    """Sends code and interrupts the kernel once the cell has printed marker
    (the cell prints it when it has done the work the test needs before the
    interrupt), so that the interrupt finds the cell running however slow
    the machine is; an interrupt that comes before a cell starts stops it
    before it runs. interrupt: how (default km.interrupt_kernel). Returns
    (Run, seconds from the interrupt to the reply). The messages read while
    waiting stay for collect()."""
    t0 = time.monotonic()
    msg_id = send(kc, code, stop_on_error=False)
    seen, printed = [], ""
    deadline = t0 + 60 * WAIT_SCALE
    while marker not in printed:
        msg = _read(kc, "iopub", msg_id, max(0.0, deadline - time.monotonic()))
        if msg is None:
            raise TimeoutError(f"the cell did not print {marker!r}; it printed {printed[-300:]!r}")
        seen.append(msg)
        if msg["msg_type"] == "stream":
            printed += msg["content"]["text"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            raise AssertionError(f"the cell ended before it printed {marker!r}: {seen}")
    _stash(kc, "iopub")[:0] = seen
    t_int = time.monotonic()
    (interrupt or km.interrupt_kernel)()
    r = collect(kc, msg_id, timeout=20, sent_t=t0)
    return r, r.reply_t - t_int


def child_processes(pid):
    """{pid: (name, state)} of the processes whose parent is pid (state as
    /proc shows it: "S", "R", "Z"...)."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            out[int(entry)] = (stat[stat.index("(") + 1:stat.rindex(")")], fields[0])
    return out


def processes_gone(pids, within=20):
    """Whether every process of pids has ended (or is a zombie) within
    `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = []
        for p in pids:
            try:
                with open(f"/proc/{p}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        left.append(p)
            except OSError:
                pass
        if not left:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


# Work of known cost: the same loop (a chain of dependent floating-point
# additions, so its speed is steady) run u times in a(), 3u times in b().
# calib() is a copy for measuring the machine without touching a or b; the
# clocks read the process's and the thread's CPU time, and the monotonic
# clock, in seconds. The cell of timed_split's loop runs after these.
SPLIT_DEFS = r"""
#include <stdio.h>
#include <time.h>

static volatile double sink;
__attribute__((noinline)) void a(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink += z; }
__attribute__((noinline)) void b(long u) { double z = 0; for (long k = 0; k < 3 * u; k++) z += k * 0.5; sink += z; }
__attribute__((noinline)) void calib(long u) { double z = 0; for (long k = 0; k < u; k++) z += k * 0.5; sink += z; }

static double cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double thread_cpu_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
static double mono_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
"""


def timed_split(count, ua, ub, fa="a", fb="b", cpu=None):
    """C (after SPLIT_DEFS) for a loop of count calls a(ua); b(ub) (fa and
    fb: other names for a and b) that measures the thread CPU time each
    call took and prints b's measured share: the truth the
    sampled share is held to. It is 75 % by construction, but a loaded
    machine (caches refilled after each preemption) moves it a little, and
    the profiler must report what happened, not what was meant. Each
    interval also holds about one clock read (the end of the one that
    started it and the start of the one that ended it), which the samples
    put outside a and b: its cost, measured first, is taken off, or short
    calls would read as a share they do not have.

    With cpu (seconds), the loop runs until the thread has used that much
    CPU instead of count times: PER_MS was measured earlier, perhaps while
    other work shared the core, and a count from it can run a third short
    when the core is free again."""
    more = (f"thread_cpu_now() - c_loop < {cpu}" if cpu is not None else f"i < {count}")
    return (f"{{ double in_a = 0, in_b = 0, c0 = thread_cpu_now();\n"
            f"for (int k = 0; k < 10000; k++) thread_cpu_now();\n"
            f"double clock_cost = (thread_cpu_now() - c0) / 10001;\n"
            f"double c_loop = thread_cpu_now(); long i;\n"
            f"for (i = 0; {more}; i++) {{\n"
            f"  double t0 = thread_cpu_now(); {fa}({ua});\n"
            f"  double t1 = thread_cpu_now(); {fb}({ub});\n"
            f"  in_b += thread_cpu_now() - t1; in_a += t1 - t0;\n"
            f"}}\n"
            f"(void)c_loop; in_a -= i * clock_cost; in_b -= i * clock_cost;\n"
            f'printf("b measured %.4f\\n", 100 * in_b / (in_a + in_b)); }}')


def measured_b_share(out):
    """b's share of a + b (percent) as the cell measured it (timed_split).

    The check here is only that the workload is what it means to be, b
    clearly the larger part: the profile is held to the share measured, not
    to 75 %. Two copies of one loop at different addresses need not cost the
    same per iteration (their code's placement against the CPU's fetch
    blocks differs), and on some machines b's measured share sits near
    64 %."""
    truth = float(re.search(r"b measured ([\d.]+)", out).group(1))
    assert 55 <= truth <= 90, f"the workload is not a 1:3 split: b took {truth} %"
    return truth


def share_bound(p, n, s=None, z=4.0, spread=1.0):
    """The largest difference, in points, between a share p (a fraction)
    and its estimate from a count of n samples that is not yet evidence of
    a bias: z standard deviations of a binomial share, and one sample. A
    test's bound comes from the samples it took, so that a loaded machine
    (fewer samples) widens it instead of failing a true profile.

    The trials are the stacks recorded, not the samples (intervals of CPU)
    they weigh: when the timer fell behind, a stack stands for more than
    one interval. With s (the profile's summary_of), n is turned into the
    stacks it stands for, in the profile's ratio of stacks to samples.
    spread: how much wider than a binomial's the sampler's spread is for
    the workload (a loop whose period is about the interval: 1.35, see
    bench/alias_sim.py)."""
    trials = n * s["stacks"] / s["samples"] if s else n
    return 100.0 * (z * spread * (p * (1 - p) / trials) ** 0.5 + 1.0 / trials)


def open_files(pid):
    """The files, pipes and pidfds process pid holds open: what a leak would
    pile up. Left out: ZeroMQ's sockets and event descriptors, which follow
    the clients' connections (a busy machine makes them reconnect), and a
    system library's separate debug information under /usr/lib/debug, which
    the symbolizer holds while it holds that library's DWARF (one file per
    library, read again when a restarted worker maps it elsewhere; never
    one per cell)."""
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if not target.startswith(("socket:", "anon_inode:[eventfd]", "anon_inode:[eventpoll]",
                                  "/usr/lib/debug/")):
            n += 1
    return n
