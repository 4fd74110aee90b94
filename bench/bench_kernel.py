#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Kernel benchmarks for cflame (docs/PERFORMANCE.md), measured side by side.

Run by Debian's /usr/bin/python3 (jupyter_client, pyzmq and ipykernel from
Debian's packages); scripts/bench builds the kernel and runs this file.

What it measures, in one run, interleaving the things it compares so that
the noise of a shared machine falls on both sides alike:

  start   Kernel start to kernel_info_reply, for cflame and for ipykernel:
          a fresh connection file (new key, free ports), the kernel started
          with subprocess.Popen from its kernelspec's argv, a DEALER socket
          already connected to the shell port (zmq queues the request until
          the kernel binds), one signed kernel_info_request; the time runs
          from Popen to the reply's receipt. Then shutdown_request on
          control, and kill if the kernel does not go within 10 s.

  cell    The trivial cell printf("hi\\n"); in a started cflame kernel, from
          sending execute_request to receiving status idle for it on iopub;
          next to it, the bare compiler run that builds that cell's shared
          object from the translation unit the kernel wrote (cell_N.c in its
          session directory), with the kernel's own compiler flags; and
          ipykernel's print("hi") for reference. The three are interleaved.
          With --reference BUILD, the trivial cell in a kernel of another
          build (an earlier commit, say) is interleaved with them too, and
          the table gives this build's median over that one's.

  value   A cell that ends in an expression and shows its value, against
          the same cell with a ';', interleaved in one kernel.

Figures are medians, and the targets are ratios of figures from the same run
(plus start-up's absolute target of 50 ms). Nothing here asserts: the
table says which targets were met. Raw timings go to --json.
"""
import argparse
import datetime
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

import jupyter_client
import zmq
from jupyter_client.connect import write_connection_file
from jupyter_client.session import Session

REPO = pathlib.Path(__file__).resolve().parent.parent

# The kernel's defaults (kernel/session/kn_session.h KN_DEFAULT_CC/CFLAGS/LDFLAGS),
# after KN_BASE_CFLAGS, plus the fixed flags kn_session_compile adds.
CC = os.environ.get("CC") or "cc"
CFLAGS = ["-fno-optimize-sibling-calls", "-std=gnu17", "-O2", "-g", "-fno-omit-frame-pointer",
          "-Wall"]
FIXED = ["-fPIC", "-shared", "-fdiagnostics-color=never"]
LDFLAGS = ["-lm"]

CELL_C = 'printf("hi\\n");'
CELL_PY = 'print("hi")'
# The trailing value's cost: the same expression shown, and with a ';'.
VALUE_SETUP = "int answer = 41;"
VALUE_CELL = "answer + 1"
VALUE_SHOWN = "(int) 42"

# The targets the table judges (docs/PERFORMANCE.md).
START_MAX_MS = 50.0
START_MIN_RATIO = 10.0
CELL_MAX_RATIO = 2.0
VALUE_MAX_RATIO = 1.10
# Against a reference build: slower by more than this is a regression.
REGRESSION_MAX_RATIO = 1.05

# Pause before each measurement of the cell benchmark.
SETTLE_S = 0.05


# ------------------------------------------------------------ kernelspecs


def kernel_argv(name, build_dir):
    """The argv of a kernelspec, with {connection_file} still in it."""
    if name == "cflame":
        spec = build_dir / "share" / "jupyter" / "kernels" / "cflame" / "kernel.json"
        if not spec.is_file():
            sys.exit(f"bench: no cflame kernelspec at {spec}; build first (scripts/bench does)")
        return json.loads(spec.read_text())["argv"]
    try:
        # Read kernel.json rather than ask get_kernel_spec, which for
        # ipykernel's native spec imports debugpy (and its warnings).
        from jupyter_client.kernelspec import KernelSpecManager

        d = KernelSpecManager().find_kernel_specs()[name]
        return json.loads((pathlib.Path(d) / "kernel.json").read_text())["argv"]
    except Exception:
        # ipykernel installed without a kernelspec: run it as Jupyter would.
        return [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]


# ------------------------------------------------------------ a small client


class Kernel:
    """A kernel process started from argv, and raw zmq sockets to it."""

    def __init__(self, name, argv, workdir, env=None, connect_iopub=False):
        self.name = name
        self.ctx = zmq.Context.instance()
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix=f"bench-{name}-", dir=workdir))
        key = uuid.uuid4().hex.encode()
        self.conn_file, self.conn = write_connection_file(
            fname=str(self.dir / "kernel.json"), ip="127.0.0.1", transport="tcp", key=key
        )
        self.session = Session(key=key, signature_scheme="hmac-sha256", username="bench")
        self.argv = [a.replace("{connection_file}", self.conn_file) for a in argv]
        self.env = env
        self.shell = self._socket(zmq.DEALER, "shell_port")
        self.control = self._socket(zmq.DEALER, "control_port")
        self.iopub = None
        if connect_iopub:
            self.iopub = self._socket(zmq.SUB, "iopub_port")
            self.iopub.setsockopt(zmq.SUBSCRIBE, b"")
        self.proc = None
        self.log = open(self.dir / "stderr.log", "wb")

    def _socket(self, kind, port_key):
        s = self.ctx.socket(kind)
        s.setsockopt(zmq.LINGER, 0)
        # Connected before the kernel binds: retry every millisecond (no
        # back-off: RECONNECT_IVL_MAX stays 0) rather than zmq's default
        # 100 ms, which would dominate a start time.
        s.setsockopt(zmq.RECONNECT_IVL, 1)
        s.setsockopt(zmq.RECONNECT_IVL_MAX, 0)
        s.connect(f"tcp://127.0.0.1:{self.conn[port_key]}")
        return s

    def start(self):
        """Starts the process; returns the perf_counter time just before Popen."""
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=self.log,
            env=self.env,
            cwd=str(self.dir),
        )
        return t0

    def send(self, sock, msg_type, content=None):
        msg = self.session.msg(msg_type, content=content or {})
        self.session.send(sock, msg)
        return msg["header"]["msg_id"]

    def recv(self, sock, timeout_s):
        """One message from sock, or None after timeout_s."""
        if not sock.poll(int(timeout_s * 1000)):
            return None
        idents, frames = self.session.feed_identities(sock.recv_multipart(copy=True))
        return self.session.deserialize(frames, content=True)

    def wait_reply(self, sock, msg_id, timeout_s=60):
        deadline = time.perf_counter() + timeout_s
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError(f"{self.name}: no reply to {msg_id} in {timeout_s} s")
            if self.proc and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; see {self.log.name}")
            msg = self.recv(sock, min(left, 0.5))
            if msg and msg["parent_header"].get("msg_id") == msg_id:
                return msg, time.perf_counter()

    def wait_iopub_ready(self, timeout_s=60):
        """A SUB socket misses what is published before it joins: ask for
        kernel_info until one status message comes through on iopub."""
        deadline = time.perf_counter() + timeout_s
        while time.perf_counter() < deadline:
            msg_id = self.send(self.shell, "kernel_info_request")
            self.wait_reply(self.shell, msg_id)
            end = time.perf_counter() + 0.2
            while time.perf_counter() < end:
                msg = self.recv(self.iopub, 0.05)
                if msg and msg["msg_type"] == "status":
                    self.drain_iopub()
                    return
        raise TimeoutError(f"{self.name}: iopub never came up")

    def drain_iopub(self, quiet_s=0.05):
        while self.recv(self.iopub, quiet_s) is not None:
            pass

    def execute(self, code):
        """Runs a cell; returns a record of its timings (seconds, perf_counter
        relative to the send; kernel-side times from the kernel's message
        dates, relative to the send on the wall clock)."""
        msg = self.session.msg(
            "execute_request",
            content={
                "code": code,
                "silent": False,
                "store_history": True,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        msg_id = msg["header"]["msg_id"]
        wall0 = time.time()
        t0 = time.perf_counter()
        self.session.send(self.shell, msg)
        rec = {"stdout": "", "recv": {}, "kernel": {}}
        while True:
            m = self.recv(self.iopub, 60)
            if m is None:
                raise TimeoutError(f"{self.name}: no idle for {code!r}")
            t = time.perf_counter() - t0
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            kind = m["msg_type"]
            if kind == "status":
                kind = m["content"]["execution_state"]
            elif kind == "stream" and m["content"].get("name") == "stdout":
                rec["stdout"] += m["content"]["text"]
            elif kind == "execute_result":
                rec["result"] = m["content"]["data"].get("text/plain")
            elif kind == "error":
                raise RuntimeError(f"{self.name}: {code!r} failed: {m['content'].get('evalue')}")
            rec["recv"].setdefault(kind, t)
            date = m["header"].get("date")
            if isinstance(date, datetime.datetime):
                if date.tzinfo is None:
                    date = date.replace(tzinfo=datetime.timezone.utc)
                rec["kernel"].setdefault(kind, date.timestamp() - wall0)
            if kind == "idle":
                rec["round_trip"] = t
                break
        reply, _ = self.wait_reply(self.shell, msg_id)
        rec["status"] = reply["content"]["status"]
        rec["execution_count"] = reply["content"].get("execution_count")
        return rec

    def shutdown(self, timeout_s=10):
        if self.proc and self.proc.poll() is None:
            try:
                self.send(self.control, "shutdown_request", {"restart": False})
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for s in (self.shell, self.control, self.iopub):
            if s is not None:
                s.close(0)
        self.log.close()

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


# ------------------------------------------------------------ measurements


def time_start(name, argv, workdir, env):
    """One start: Popen to kernel_info_reply, in seconds."""
    k = Kernel(name, argv, workdir, env)
    try:
        t0 = k.start()
        # One request suffices: zmq queues it until the kernel binds. Should
        # it get lost all the same, ask again each second; any of them counts.
        sent = {k.send(k.shell, "kernel_info_request")}
        last = t0
        while True:
            if k.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {k.proc.returncode} at start")
            msg = k.recv(k.shell, 0.005)
            if msg and msg["parent_header"].get("msg_id") in sent:
                t1 = time.perf_counter()
                reply = msg
                break
            now = time.perf_counter()
            if now - t0 > 60:
                raise TimeoutError(f"{name}: no kernel_info_reply in 60 s")
            if now - last > 1:
                sent.add(k.send(k.shell, "kernel_info_request"))
                last = now
        if reply["msg_type"] != "kernel_info_reply":
            raise RuntimeError(f"{name}: expected kernel_info_reply, got {reply['msg_type']}")
        return t1 - t0
    finally:
        k.shutdown()
        k.cleanup()


def bench_start(argvs, runs, warmup, workdir, env):
    raw = {name: [] for name in argvs}
    warm = {name: [] for name in argvs}
    for i in range(warmup + runs):
        # Alternate the order too, so neither kernel always goes first.
        names = list(argvs) if i % 2 == 0 else list(reversed(list(argvs)))
        for name in names:
            t = time_start(name, argvs[name], workdir, env)
            (warm if i < warmup else raw)[name].append(t)
    return raw, warm


def bare_compile(src, out_so, env):
    """Compiles src as the kernel does; returns (seconds, argv)."""
    argv = [CC, *CFLAGS, *FIXED, "-o", str(out_so), str(src), *LDFLAGS]
    t0 = time.perf_counter()
    r = subprocess.run(argv, cwd=str(src.parent), env=env, stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    t = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"bench: the bare compile failed:\n{' '.join(argv)}\n{r.stdout.decode()}")
    return t, argv


def bench_cell(argvs, runs, warmup, workdir, env):
    """The trivial cell against the bare compiler run and ipykernel; with a
    "reference" argv, against a kernel of another build too."""
    # The kernel makes its session directory under TMPDIR: give it one of
    # its own, so that the directory is found without guessing. The bare
    # compiler gets the same TMPDIR (gcc keeps its .s and .o there).
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tmp-", dir=workdir))
    cenv = dict(env)
    cenv["TMPDIR"] = str(tmp)
    ck = Kernel("cflame", argvs["cflame"], workdir, cenv, connect_iopub=True)
    pk = Kernel("ipykernel", argvs["ipykernel"], workdir, env, connect_iopub=True)
    # The reference kernel makes its session directory elsewhere, so that
    # this build's is the only one in tmp.
    rk = (Kernel("reference", argvs["reference"], workdir, env, connect_iopub=True)
          if "reference" in argvs else None)
    try:
        ck.start()
        pk.start()
        ck.wait_iopub_ready()
        pk.wait_iopub_ready()
        if rk:
            rk.start()
            rk.wait_iopub_ready()
            rk.execute(CELL_C)
        sessions = sorted(tmp.glob("cflame-*"))
        if len(sessions) != 1:
            sys.exit(f"bench: expected one cflame session directory in {tmp}, found {sessions}")
        sdir = sessions[0]

        # Warm-up cells (not counted); the first one's translation unit is
        # the file the bare compiler builds.
        for i in range(max(1, warmup)):
            rec = ck.execute(CELL_C)
            if rec["status"] != "ok" or rec["stdout"] != "hi\n":
                sys.exit(f"bench: cflame cell gave {rec['status']} {rec['stdout']!r}")
            pk.execute(CELL_PY)
        first = sdir / f"cell_{rec['execution_count']}.c"
        if not first.is_file():
            sys.exit(f"bench: no {first} (files: {sorted(p.name for p in sdir.iterdir())})")
        cdir = pathlib.Path(tempfile.mkdtemp(prefix="bare-", dir=workdir))
        src = cdir / first.name
        shutil.copyfile(first, src)
        bare_compile(src, cdir / "x.so", cenv)  # warm the page cache like the cells are

        raw = {"cflame_cell": [], "bare_compile": [], "ipykernel_cell": [], "cflame_detail": []}
        argv = None
        def cflame_cell():
            rec = ck.execute(CELL_C)
            if rec["status"] != "ok" or rec["stdout"] != "hi\n":
                sys.exit(f"bench: cflame cell {i} gave {rec['status']} {rec['stdout']!r}")
            raw["cflame_cell"].append(rec["round_trip"])
            raw["cflame_detail"].append(rec)

        def bare():
            nonlocal argv
            t, argv = bare_compile(src, cdir / "x.so", cenv)
            raw["bare_compile"].append(t)

        def ipykernel_cell():
            raw["ipykernel_cell"].append(pk.execute(CELL_PY)["round_trip"])

        def reference_cell():
            rec = rk.execute(CELL_C)
            if rec["status"] != "ok" or rec["stdout"] != "hi\n":
                sys.exit(f"bench: reference cell {i} gave {rec['status']} {rec['stdout']!r}")
            raw["reference_cell"].append(rec["round_trip"])

        if rk:
            raw["reference_cell"] = []
        for i in range(runs):
            # Alternate which of the compared pair goes first, and let each
            # measurement's tail (a kernel's work after idle, the page
            # cache) settle before the next one starts.
            order = [cflame_cell, bare] if i % 2 == 0 else [bare, cflame_cell]
            if rk:
                order.insert(1 if i % 2 == 0 else 0, reference_cell)
            for step in order + [ipykernel_cell]:
                time.sleep(SETTLE_S)
                step()
        return raw, {"translation_unit": src.read_text(), "compile_argv": argv}
    finally:
        for k in (ck, pk, rk):
            if k:
                k.shutdown()
                k.cleanup()


def bench_value(argvs, runs, warmup, workdir, env):
    """A cell that shows its value (VALUE_CELL) against the same cell with a
    ';' (VALUE_CELL + ";"), interleaved in one kernel."""
    k = Kernel("cflame", argvs["cflame"], workdir, env, connect_iopub=True)
    try:
        k.start()
        k.wait_iopub_ready()
        k.execute(VALUE_SETUP)
        raw = {"with_value": [], "with_semicolon": []}

        def with_value():
            rec = k.execute(VALUE_CELL)
            if rec.get("result") != VALUE_SHOWN:
                sys.exit(f"bench: {VALUE_CELL!r} showed {rec.get('result')!r}, not {VALUE_SHOWN!r}")
            raw["with_value"].append(rec["round_trip"])

        def with_semicolon():
            rec = k.execute(VALUE_CELL + ";")
            if rec.get("result") is not None:
                sys.exit(f"bench: {VALUE_CELL!r}; showed a value")
            raw["with_semicolon"].append(rec["round_trip"])

        for _ in range(max(1, warmup)):
            with_value()
            with_semicolon()
        raw = {name: [] for name in raw}
        for i in range(runs):
            for step in ([with_value, with_semicolon] if i % 2 == 0 else
                         [with_semicolon, with_value]):
                time.sleep(SETTLE_S)
                step()
        return raw
    finally:
        k.shutdown()
        k.cleanup()


def breakdown(details):
    """Where a cflame cell's time goes, from the kernel's message dates
    (wall clock, microseconds) and the client's receipt times; medians in
    seconds."""
    parts = {"request_to_execute_input": [], "execute_input_to_idle": [], "idle_to_receipt": []}
    for d in details:
        k = d["kernel"]
        if "execute_input" not in k or "idle" not in k:
            return None
        parts["request_to_execute_input"].append(k["execute_input"])
        parts["execute_input_to_idle"].append(k["idle"] - k["execute_input"])
        parts["idle_to_receipt"].append(d["round_trip"] - k["idle"])
    return {name: statistics.median(v) for name, v in parts.items()}


# ------------------------------------------------------------ reporting


def summary(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def machine_info():
    def run(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True).stdout.strip()
        except OSError:
            return None

    model = None
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cc = run(CC, "--version")
    git = run("git", "-C", str(REPO), "rev-parse", "--short", "HEAD")
    dirty = run("git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "nproc": int(run("nproc") or os.cpu_count() or 0),
        "cpu_model": model,
        "kernel": platform.release(),
        "os": run("sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"),
        "cc": CC,
        "cc_version": cc.splitlines()[0] if cc else None,
        "python": platform.python_version(),
        "jupyter_client": jupyter_client.__version__,
        "ipykernel": run(sys.executable, "-c", "import ipykernel; print(ipykernel.__version__)"),
        "pyzmq": zmq.__version__,
        "libzmq": zmq.zmq_version(),
        "cflame_commit": (git + ("-dirty" if dirty else "")) if git else None,
        "loadavg_before": os.getloadavg(),
    }


def kernel_env(build_dir):
    """Puts build_dir's kernelspec first in JUPYTER_PATH; returns the
    environment for a kernel of that build (exits when it is not built)."""
    spec_dir = build_dir.resolve() / "share" / "jupyter"
    if not (spec_dir / "kernels" / "cflame" / "kernel.json").is_file():
        sys.exit(f"bench: no cflame kernelspec under {spec_dir}; build first (scripts/bench does)")
    os.environ["JUPYTER_PATH"] = str(spec_dir)
    env = dict(os.environ)
    env.pop("CFLAME_DEBUG", None)
    return env


def write_results(res, path):
    """Writes res, every raw timing, as JSON to path (if given)."""
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(res, indent=1, default=str) + "\n")
        print(f"\nraw timings: {path}")


def ms(x):
    return f"{x * 1000:8.1f}"


def print_table(res):
    m = res["machine"]
    print(f"cflame kernel benchmarks  {m['date']}")
    print(f"  {m['nproc']} CPU(s), {m['cpu_model']}, Linux {m['kernel']}, {m['cc_version']}")
    print(f"  ipykernel {m['ipykernel']}, Python {m['python']}, commit {m['cflame_commit']}, "
          f"load before {m['loadavg_before'][0]:.2f} after {m['loadavg_after'][0]:.2f}")
    print()
    print(f"{'measurement':44s} {'median':>8s} {'min':>8s} {'max':>8s}   (ms)")
    rows = []
    if "start" in res:
        s = res["start"]["summary"]
        rows += [("kernel start to kernel_info_reply: cflame", s["cflame"]),
                 ("kernel start to kernel_info_reply: ipykernel", s["ipykernel"])]
    if "cell" in res:
        s = res["cell"]["summary"]
        rows += [('cflame cell printf("hi\\n"); request to idle', s["cflame_cell"]),
                 ("bare compiler run for the same cell", s["bare_compile"]),
                 ('ipykernel cell print("hi") request to idle', s["ipykernel_cell"])]
        if "reference_cell" in s:
            rows.append(("the same cell, reference build's kernel", s["reference_cell"]))
    if "value" in res:
        s = res["value"]["summary"]
        rows += [(f"cell {VALUE_CELL!r}, its value shown", s["with_value"]),
                 (f"cell {VALUE_CELL + ';'!r}, no value", s["with_semicolon"])]
    for label, s in rows:
        print(f"{label:44s} {ms(s['median'])} {ms(s['min'])} {ms(s['max'])}")
    print()
    print("targets (docs/PERFORMANCE.md):")
    for t in res["targets"]:
        print(f"  [{'met' if t['met'] else 'MISSED':6s}] {t['what']}: {t['value']} (target {t['target']})")
    b = res.get("cell", {}).get("breakdown")
    if b:
        print()
        print("where a cflame cell's time goes (medians; kernel message dates, wall clock):")
        print(f"  request sent -> execute_input published   {ms(b['request_to_execute_input'])} ms")
        print(f"  execute_input -> idle published           {ms(b['execute_input_to_idle'])} ms"
              f"  (of which the bare compile: {ms(res['cell']['summary']['bare_compile']['median'])} ms)")
        print(f"  idle published -> idle received           {ms(b['idle_to_receipt'])} ms")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20, help="timed runs of each measurement (20)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs first (1)")
    ap.add_argument("--build", type=pathlib.Path, default=REPO / "build",
                    help="cflame build directory (build)")
    ap.add_argument("--ipykernel", default="python3", help="ipykernel's kernelspec name (python3)")
    ap.add_argument("--reference", type=pathlib.Path,
                    help="another cflame build directory whose kernel runs the same cell, "
                         "interleaved (scripts/bench compare REF builds one)")
    ap.add_argument("--only", choices=["start", "cell", "value"], help="run one of the benchmarks")
    ap.add_argument("--json", type=pathlib.Path, help="write all raw timings here")
    args = ap.parse_args()

    argvs = {"cflame": kernel_argv("cflame", args.build.resolve()),
             "ipykernel": kernel_argv(args.ipykernel, args.build.resolve())}
    if args.reference:
        argvs["reference"] = kernel_argv("cflame", args.reference.resolve())
    env = dict(os.environ)
    env.pop("CFLAME_DEBUG", None)
    workdir = tempfile.mkdtemp(prefix="cflame-bench-")
    res = {"machine": machine_info(), "runs": args.runs, "warmup": args.warmup,
           "kernels": argvs, "targets": []}
    try:
        if args.only in (None, "start"):
            raw, warm = bench_start(argvs, args.runs, args.warmup, workdir, env)
            s = {name: summary(v) for name, v in raw.items()}
            res["start"] = {"seconds": raw, "warmup_seconds": warm, "summary": s}
            c, p = s["cflame"]["median"], s["ipykernel"]["median"]
            res["start"]["ratio_ipykernel_over_cflame"] = p / c
            res["targets"] += [
                {"what": "cflame start to kernel_info_reply", "value": f"{c * 1000:.1f} ms",
                 "target": f"<= {START_MAX_MS:.0f} ms", "met": c * 1000 <= START_MAX_MS},
                {"what": "ipykernel start / cflame start", "value": f"{p / c:.1f}x",
                 "target": f">= {START_MIN_RATIO:.0f}x", "met": p / c >= START_MIN_RATIO},
            ]
        if args.only in (None, "cell"):
            raw, extra = bench_cell(argvs, args.runs, args.warmup, workdir, env)
            details = raw.pop("cflame_detail")
            s = {name: summary(v) for name, v in raw.items()}
            res["cell"] = {"seconds": raw, "summary": s, "cflame_detail": details,
                           "breakdown": breakdown(details), **extra}
            r = s["cflame_cell"]["median"] / s["bare_compile"]["median"]
            res["cell"]["ratio_cell_over_bare_compile"] = r
            res["targets"].append(
                {"what": "cflame trivial cell / bare compile", "value": f"{r:.2f}x",
                 "target": f"<= {CELL_MAX_RATIO:.0f}x", "met": r <= CELL_MAX_RATIO})
            if "reference_cell" in s:
                q = s["cflame_cell"]["median"] / s["reference_cell"]["median"]
                res["cell"]["ratio_cell_over_reference"] = q
                res["targets"].append(
                    {"what": "this build's cell / the reference build's", "value": f"{q:.2f}x",
                     "target": f"<= {REGRESSION_MAX_RATIO:.2f}x (no regression)",
                     "met": q <= REGRESSION_MAX_RATIO})
        if args.only in (None, "value"):
            raw = bench_value(argvs, args.runs, args.warmup, workdir, env)
            s = {name: summary(v) for name, v in raw.items()}
            q = s["with_value"]["median"] / s["with_semicolon"]["median"]
            res["value"] = {"seconds": raw, "summary": s, "ratio": q}
            res["targets"].append(
                {"what": "a cell showing its value / the same cell with ';'", "value": f"{q:.2f}x",
                 "target": f"<= {VALUE_MAX_RATIO:.2f}x", "met": q <= VALUE_MAX_RATIO})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    res["machine"]["loadavg_after"] = os.getloadavg()
    print_table(res)
    write_results(res, args.json)


if __name__ == "__main__":
    main()
