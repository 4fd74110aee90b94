# SPDX-License-Identifier: BSD-3-Clause
"""The Jupyter messaging protocol 5.3 over ZeroMQ: HMAC-SHA256 signatures
(a forged, unsigned or malformed message is dropped and logged, and the
kernel goes on), the heartbeat while a cell runs, the requests and
replies, status busy/idle around every request, interrupts (by message on
control, as the kernelspec asks, and by SIGINT), stop_on_error, restart,
shutdown, and the ipc transport."""
import glob
import os
import re
import signal
import time

import pytest
import zmq
from jupyter_client.session import Session

from conftest import (MEMORY_CAP, _read, collect, drain_iopub, execute_msg, fails,
                      interrupt_when_printed, ok, raw_socket,
                      replies, request, run, run_full, send, start_kernel, stdout)


def endpoint(info, port_name):
    if info["transport"] == "ipc":
        return f"ipc://{info['ip']}-{info[port_name]}"
    return f"tcp://{info['ip']}:{info[port_name]}"


def iopub_texts(msgs):
    return "".join(m["content"].get("text", "") for m in msgs if m["msg_type"] == "stream")


# ---------------------------------------------------------------- the wire


def test_forged_unsigned_and_malformed_messages_are_dropped(tmp_path):
    log_path = tmp_path / "kernel.log"
    with open(log_path, "w") as log, start_kernel(stderr=log) as (km, kc):
        _send_bad_messages(km, kc)
    log = log_path.read_text()
    dropped = [line for line in log.splitlines() if "dropped" in line]
    # Nine bad messages, each dropped and logged.
    assert len(dropped) >= 9, log


def _send_bad_messages(km, kc):
    info = km.get_connection_info()
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoint(info, "shell_port"))
    try:
        drain_iopub(kc)
        real = Session(key=info["key"], signature_scheme=info["signature_scheme"])
        forged = Session(key=b"not-the-kernel-key", signature_scheme=info["signature_scheme"])
        unsigned = Session(key=b"")
        assert forged.sign([b"{}"]) != real.sign([b"{}"])

        def execute(session, text):
            return session.msg("execute_request", content={
                "code": f'printf("{text}\\n");', "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})

        # (a) correct format, wrong HMAC; (b) empty signature.
        forged.send(sock, execute(forged, "FORGED"))
        unsigned.send(sock, execute(unsigned, "UNSIGNED"))
        # (a') a real message whose signature was altered in one place.
        frames = real.serialize(execute(real, "TAMPERED"))
        sig = frames[1]
        frames[1] = (b"0" if sig[:1] != b"0" else b"1") + sig[1:]
        sock.send_multipart(frames)
        # (a'') a real signature over a changed content.
        frames = real.serialize(execute(real, "ORIGINAL"))
        frames[5] = frames[5].replace(b"ORIGINAL", b"SWAPPED!")
        sock.send_multipart(frames)
        # (c) garbage: random bytes, no delimiter, too few frames, bad JSON.
        sock.send_multipart([os.urandom(64)])
        sock.send_multipart([os.urandom(16), os.urandom(300), os.urandom(5)])
        sock.send_multipart([b"<IDS|MSG>"])
        sock.send_multipart([b"<IDS|MSG>", b"", b"{", b"{}", b"{}", b"{}"])
        bad_json = [b"{not json", b"{}", b"{}", b"{}"]
        sock.send_multipart([b"<IDS|MSG>", real.sign(bad_json)] + bad_json)
        # A properly signed request on the same socket runs: the socket and
        # the checks above are what the kernel saw.
        good = execute(real, "SIGNED")
        real.send(sock, good)
        assert sock.poll(10000), "no reply to the properly signed request"
        idents, reply = real.feed_identities(sock.recv_multipart())
        reply = real.deserialize(reply)
        assert reply["parent_header"]["msg_id"] == good["header"]["msg_id"]
        assert reply["content"]["status"] == "ok"
        # Nothing else answered on the raw socket.
        assert not sock.poll(300)
    finally:
        sock.close()
    text = iopub_texts(drain_iopub(kc, quiet=0.5))
    assert "SIGNED" in text
    for word in ("FORGED", "UNSIGNED", "TAMPERED", "ORIGINAL", "SWAPPED"):
        assert word not in text
    assert request(kc, "kernel_info")["content"]["status"] == "ok"
    assert ok(kc, 'printf("still serving\\n");') == "still serving\n"


def test_heartbeat_answers_while_a_cell_runs(km, kc):
    info = km.get_connection_info()
    ctx = zmq.Context.instance()
    hb = ctx.socket(zmq.REQ)
    hb.setsockopt(zmq.LINGER, 0)
    hb.connect(endpoint(info, "hb_port"))
    try:
        t0 = time.monotonic()
        msg_id = send(kc, '#include <unistd.h>\nsleep(3);\nprintf("slept\\n");')
        time.sleep(0.3)
        for i in range(5):
            ping = f"ping {i}".encode()
            t = time.monotonic()
            hb.send(ping)
            assert hb.poll(1000), f"no heartbeat echo within 1 s (ping {i})"
            assert hb.recv() == ping
            assert time.monotonic() - t < 1.0
            time.sleep(0.3)
        r = collect(kc, msg_id, timeout=15, sent_t=t0)
    finally:
        hb.close()
    assert r.reply["status"] == "ok"
    assert stdout(r.outputs) == "slept\n"
    assert r.reply_t - t0 >= 2.5, "the pings were not sent while the cell ran"



def signed_frames(session, msg_type, content_bytes, header=None):
    """The frames of a message whose content frame is content_bytes as they
    are (whatever JSON, or none), signed with session's key. Returns
    (frames, header)."""
    header = header or session.msg_header(msg_type)
    parts = [session.pack(header), b"{}", b"{}", content_bytes]
    return [b"<IDS|MSG>", session.sign(parts)] + parts, header


@pytest.mark.parametrize("content,says", [
    (b"[]", "content is not a JSON object"),
    (b'{"code": "\\ud800", "silent": false}', "content is not JSON"),
    (b'{"code": "x", "silent": false', "content is not JSON"),
])
def test_a_well_signed_request_with_bad_content_gets_an_error_reply(content, says):
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        sock, session = raw_socket(km)
        try:
            frames, header = signed_frames(session, "execute_request", content)
            sock.send_multipart(frames)
            got = replies(sock, session, 1, timeout=20)
            assert got, f"no reply to an execute_request whose content is {content!r}"
            reply = got[0]
            assert reply["msg_type"] == "execute_reply"
            assert reply["parent_header"]["msg_id"] == header["msg_id"]
            assert reply["content"]["status"] == "error", reply["content"]
            assert reply["content"]["ename"] == "RequestError", reply["content"]
            assert says in reply["content"]["evalue"], reply["content"]
            # The same on control, for a request of another type.
            control, _ = raw_socket(km, "control_port")
            try:
                frames, header = signed_frames(session, "kernel_info_request", content)
                control.send_multipart(frames)
                got = replies(control, session, 1, timeout=20)
                assert got and got[0]["msg_type"] == "kernel_info_reply", got
                assert got[0]["parent_header"]["msg_id"] == header["msg_id"]
                assert got[0]["content"]["status"] == "error", got[0]["content"]
            finally:
                control.close()
        finally:
            sock.close()
        assert ok(kc, 'printf("still serving\\n");') == "still serving\n"


def test_a_well_signed_request_with_too_many_frames_gets_an_error_reply():
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        ok(kc, "int kept = 5;")
        sock, session = raw_socket(km)
        try:
            msg = execute_msg(session, 'printf("ran\\n");')
            frames = session.serialize(msg) + [b"x"] * 100000
            sock.send_multipart(frames)
            got = replies(sock, session, 1, timeout=30)
            assert got, "no reply to a well-signed execute_request of 100,006 frames"
            assert got[0]["parent_header"]["msg_id"] == msg["header"]["msg_id"]
            content = got[0]["content"]
            assert content["status"] == "error" and content["ename"] == "RequestError", content
            # 100,006 frames, and the routing identity the kernel's socket adds.
            assert "has 100007 frames" in content["evalue"], content
            assert "at most 1024 frames" in content["evalue"], content
            # A message of a normal size on the same socket runs.
            msg = execute_msg(session, 'printf("%d\\n", kept);')
            session.send(sock, msg)
            got = replies(sock, session, 1, timeout=30)
            assert got and got[0]["content"]["status"] == "ok", got
        finally:
            sock.close()


def test_a_second_client_of_the_same_session_is_answered():
    """km.client() twice gives two clients of one session, whose sockets
    share their ZeroMQ identity: the newest connection takes it over (as
    with ipykernel), so the second client is answered on every channel."""
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        assert request(kc, "kernel_info")["content"]["status"] == "ok"
        kc2 = km.client()
        kc2.start_channels()
        try:
            assert kc2.session.bsession == kc.session.bsession
            assert request(kc2, "kernel_info", timeout=20)["content"]["status"] == "ok"
            # stdin: the input_request reaches the second client, and its
            # answer the cell.
            reply, outputs = run(kc2, '#include <stdio.h>\nchar b[32];\n'
                                      'if (fgets(b, sizeof b, stdin)) printf("got %s", b);',
                                 allow_stdin=True, inputs=["typed"], timeout=30)
            assert reply["status"] == "ok", reply
            assert stdout(outputs) == "got typed\n"
            # control
            msg = kc2.session.msg("kernel_info_request")
            kc2.control_channel.send(msg)
            got = kc2.get_control_msg(timeout=20)
            assert got["parent_header"]["msg_id"] == msg["header"]["msg_id"]
        finally:
            kc2.stop_channels()


def test_latin1_bytes_from_headers_keep_errors_and_inspections(tmp_path):
    """Text that is not UTF-8 (here Latin-1, from the user's headers) is
    cleaned on its way to the wire, never lost: the bytes become U+FFFD."""
    broken = tmp_path / "broken.h"
    broken.write_bytes(b"#error caf\xe9 au lait\n")
    defs = tmp_path / "defs.h"
    defs.write_bytes(b'#define CAFE "caf\xe9"\n/* cr\xe8me */\nstatic int cafe_fn(int x) { return x; }\n')
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        reply, outputs = fails(kc, f'#include "{broken}"\nint x = 1;', "CompileError")
        assert "caf\ufffd au lait" in reply["evalue"], reply
        assert any("caf\ufffd au lait" in line for line in reply["traceback"]), reply
        ok(kc, f'#include "{defs}"\nint y = 2;')
        for word, says in (("CAFE", '"caf\ufffd"'), ("cafe_fn", "cr\ufffdme")):
            content = request(kc, "inspect", word, len(word), timeout=30)["content"]
            assert content["status"] == "ok" and content["found"], content
            assert says in content["data"].get("text/plain", ""), content
            assert says in content["data"].get("text/markdown", ""), content
        assert ok(kc, 'printf("still serving\\n");') == "still serving\n"


# ---------------------------------------------------------------- the worker's frames


def test_interrupts_that_escalate_never_break_a_frame():
    """A cell that prints in a tight loop with SIGINT blocked: every
    interrupt escalates to SIGUSR2, which unwinds the worker's main thread
    wherever it is, except inside the event channel, where it waits for
    the frame to be written whole. So each run ends Interrupted, never with
    a ChannelError, the worker is kept, and the channel is free for other
    threads afterwards. (The last resort, ending the worker when the
    unwind has not come within 800 ms, may be reached on a loaded machine
    under ASan; most runs must end by the unwind, or nothing was shown.)"""
    with start_kernel(memory=MEMORY_CAP) as (km, kc):
        ok(kc, "#include <pthread.h>\n#include <signal.h>\n#include <stdio.h>\n#include <string.h>\n"
               "int kept = 3;\n"
               "static char big[20000];\n"
               "void spew(void) {\n"
               "  sigset_t s; sigemptyset(&s); sigaddset(&s, SIGINT);\n"
               "  sigprocmask(SIG_BLOCK, &s, NULL);\n"
               "  memset(big, 'x', sizeof big);\n"
               "  for (long i = 0;; i++) {\n"
               "    printf(\"line %ld\\n\", i);\n"
               "    if (i % 64 == 0) fwrite(big, 1, sizeof big, stdout);\n"
               "  }\n"
               "}\n"
               "void *say(void *arg) { printf(\"from a thread\\n\"); return arg; }")
        rounds, ended = 25, 0
        for i in range(rounds):
            t0 = time.monotonic()
            msg_id = send(kc, "spew();", stop_on_error=False)
            # Once it prints (its output then is not needed), at varied times.
            while True:
                msg = _read(kc, "iopub", msg_id, 30)
                assert msg is not None, "spew() printed nothing within 30 s"
                if msg["msg_type"] == "stream":
                    break
            time.sleep(0.01 * (i % 10))
            km.interrupt_kernel()
            r = collect(kc, msg_id, timeout=30, sent_t=t0)
            assert r.reply["status"] == "error", r.reply
            assert r.reply["ename"] == "Interrupted", (i, r.reply["ename"], r.reply["evalue"])
            ended += "process was ended" in r.reply["evalue"]
        assert ended <= rounds // 4, f"{ended} of {rounds} interrupts had to end the worker"
        # The channel is free: another thread writes, and the session is kept.
        assert ok(kc, "pthread_t t; pthread_create(&t, NULL, say, NULL); pthread_join(t, NULL);",
                  timeout=30) == "from a thread\n"
        assert ok(kc, 'printf("%d\\n", kept);') == "3\n"


# ---------------------------------------------------------------- requests


def status_sequence(msgs, msg_id):
    return [m["content"]["execution_state"] for m in msgs
            if m["msg_type"] == "status" and m["parent_header"].get("msg_id") == msg_id]


def test_kernel_info_reply(kc):
    drain_iopub(kc)
    reply = request(kc, "kernel_info")
    c = reply["content"]
    assert c["status"] == "ok"
    assert c["protocol_version"] == "5.3"
    assert c["implementation"] == "cflame"
    assert c["language_info"]["name"] == "c"
    assert c["language_info"]["file_extension"] == ".c"
    assert reply["header"]["version"] == "5.3"
    msgs = drain_iopub(kc)
    assert status_sequence(msgs, reply["parent_header"]["msg_id"]) == ["busy", "idle"]


def test_execution_count_and_execute_input(kc):
    r1 = run_full(kc, 'printf("one\\n");')
    r2 = run_full(kc, 'printf("two\\n");')
    n1, n2 = r1.reply["execution_count"], r2.reply["execution_count"]
    assert n2 == n1 + 1
    for r, n, code in ((r1, n1, 'printf("one\\n");'), (r2, n2, 'printf("two\\n");')):
        inputs = [m for m in r.msgs if m["msg_type"] == "execute_input"]
        assert len(inputs) == 1
        assert inputs[0]["content"]["code"] == code
        assert inputs[0]["content"]["execution_count"] == n
    # An error counts too.
    r3 = run_full(kc, "int count_err = ;", stop_on_error=False)
    assert r3.reply["status"] == "error"
    assert r3.reply["execution_count"] == n2 + 1


def test_status_busy_then_idle_around_execute(kc):
    r = run_full(kc, 'printf("x\\n");')
    types = [m["msg_type"] for m in r.msgs]
    assert types[0] == "status" and r.msgs[0]["content"]["execution_state"] == "busy"
    assert types[-1] == "status" and r.msgs[-1]["content"]["execution_state"] == "idle"
    assert types.index("execute_input") < types.index("stream")
    assert status_sequence(r.msgs, r.msg_id) == ["busy", "idle"]


def test_history_tail(kc):
    c1, c2 = 'printf("h1\\n");', 'printf("h2\\n");'
    r1 = run_full(kc, c1)
    r2 = run_full(kc, c2)
    reply = request(kc, "history", hist_access_type="tail", n=2, output=False, raw=True)
    assert reply["content"]["status"] == "ok"
    hist = reply["content"]["history"]
    assert [h[2] for h in hist] == [c1, c2]
    assert [h[1] for h in hist] == [r1.reply["execution_count"], r2.reply["execution_count"]]


def test_comm_info(kc):
    reply = request(kc, "comm_info")
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["comms"] == {}


@pytest.mark.parametrize("code,status", [
    ("int x = 1;", "complete"),
    ("int f(void) {", "incomplete"),
    ("}", "invalid"),
    ('printf("a\\n");\nfor (int i = 0; i < 3; i++) {\n  if (i) {', "incomplete"),
    ("/* open comment", "incomplete"),
    ("%cflags -O0\nint y = (1 +", "incomplete"),
    # A cell magic's body ends with a blank line, as in IPython's console.
    ("%%profview", "incomplete"),
    ("%%profview\nwork();", "incomplete"),
    ("%%profview\nwork();\n", "complete"),
])
def test_is_complete(kc, code, status):
    reply = request(kc, "is_complete", code)
    assert reply["content"]["status"] == status
    if status == "incomplete":
        assert isinstance(reply["content"].get("indent"), str)


def test_complete_session_names_keywords_and_magics(kc):
    ok(kc, "int my_counter = 0;\nint my_cube(int x) { return x * x * x; }")
    c = request(kc, "complete", "my_c", 4)["content"]
    assert c["status"] == "ok"
    assert "my_counter" in c["matches"] and "my_cube" in c["matches"]
    assert all(m.startswith("my_c") for m in c["matches"])
    assert (c["cursor_start"], c["cursor_end"]) == (0, 4)

    c = request(kc, "complete", "whi", 3)["content"]
    assert "while" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (0, 3)

    c = request(kc, "complete", "%cfl", 4)["content"]
    assert "%cflags" in c["matches"]
    assert (c["cursor_start"], c["cursor_end"]) == (0, 4)

    # In the middle of a line: only the word before the cursor is replaced.
    code = "x = my_cou + 1;"
    c = request(kc, "complete", code, 10)["content"]
    assert c["matches"] == ["my_counter"]
    assert (c["cursor_start"], c["cursor_end"]) == (4, 10)


def test_inspect(kc):
    ok(kc, "int add(int a, int b) { return a + b; }")
    c = request(kc, "inspect", "add", 3)["content"]
    assert c["status"] == "ok"
    assert c["found"] is True
    assert "int add(int a, int b)" in c["data"]["text/plain"]

    c = request(kc, "inspect", "%cflags", 7)["content"]
    assert c["found"] is True
    assert "%cflags" in c["data"]["text/plain"]
    assert "-std=gnu17" in c["data"]["text/plain"]

    c = request(kc, "inspect", "no_such_name_here", 5)["content"]
    assert c["status"] == "ok"
    assert c["found"] is False


def test_silent_execute_has_no_count_and_no_input(kc):
    before = run_full(kc, 'printf("counted\\n");').reply["execution_count"]
    r = run_full(kc, "int silent_g = 3;", silent=True, store_history=False)
    assert r.reply["status"] == "ok"
    assert [m for m in r.msgs if m["msg_type"] == "execute_input"] == []
    after = run_full(kc, 'printf("%d\\n", silent_g);')
    assert after.reply["execution_count"] == before + 1
    assert stdout(after.outputs) == "3\n"


# ---------------------------------------------------------------- interrupts


def test_kernelspec_asks_for_message_interrupts(km):
    assert km.kernel_spec.interrupt_mode == "message"
    assert km.kernel_spec.language == "c"


def test_sigint_to_the_kernel_interrupts(km, kc):
    # jupyter console 6.4 never sends Ctrl-C on: the banner it shows says
    # what interrupts a cell from a terminal.
    info = request(kc, "kernel_info")
    assert f"kill -INT {km.provisioner.process.pid}" in info["content"]["banner"], info["content"]["banner"]
    r, latency = interrupt_when_printed(
        km, kc, 'int sigint_g = 1;\nsigint_g = 5;\nputs("looping"); fflush(stdout);\nfor (;;);',
        "looping", interrupt=lambda: os.kill(km.provisioner.process.pid, signal.SIGINT))
    assert r.reply["status"] == "error"
    assert r.reply["ename"] == "Interrupted"
    assert latency < 1.0
    assert km.is_alive()
    assert ok(kc, 'printf("%d\\n", sigint_g);') == "5\n"


def test_interrupt_reply_on_control(km, kc):
    t0 = time.monotonic()
    msg_id = send(kc, "for (;;);", stop_on_error=False)
    time.sleep(0.3)
    msg = kc.session.msg("interrupt_request", {})
    kc.control_channel.send(msg)
    reply = kc.get_control_msg(timeout=5)
    assert reply["msg_type"] == "interrupt_reply"
    assert reply["parent_header"]["msg_id"] == msg["header"]["msg_id"]
    assert reply["content"]["status"] == "ok"
    r = collect(kc, msg_id, timeout=20, sent_t=t0)
    assert r.reply["ename"] == "Interrupted"


# ---------------------------------------------------------------- stop_on_error


def test_stop_on_error_aborts_queued_requests(kc):
    # The failing cell runs half a second first, so that the requests sent
    # after it are queued when it fails, however loaded the machine: a
    # compile error comes so soon that a starved client may not have
    # delivered them yet, and then they are not queued but new.
    ids = [send(kc, "#include <unistd.h>\nint main(void) { usleep(500000); return 3; }"),
           send(kc, 'printf("SHOULD NOT RUN 1\\n");'),
           send(kc, 'printf("SHOULD NOT RUN 2\\n");')]
    runs = [collect(kc, i, timeout=30) for i in ids]
    assert runs[0].reply["status"] == "error"
    assert runs[0].reply["ename"] == "MainReturned"
    assert [r.reply["status"] for r in runs[1:]] == ["aborted", "aborted"]
    assert all(stdout(r.outputs) == "" for r in runs[1:])
    # (A request sent right after an aborted reply is the business of
    # test_request_sent_after_the_error_reply_is_not_aborted.)
    time.sleep(0.2)
    assert ok(kc, 'printf("runs again\\n");') == "runs again\n"


def test_stop_on_error_false_runs_queued_requests(kc):
    ids = [send(kc, "int soe2 = ;", stop_on_error=False),
           send(kc, 'printf("ran\\n");')]
    runs = [collect(kc, i, timeout=30) for i in ids]
    assert runs[0].reply["status"] == "error"
    assert runs[1].reply["status"] == "ok"
    assert stdout(runs[1].outputs) == "ran\n"


def test_request_sent_after_the_error_reply_is_not_aborted(kc):
    # stop_on_error aborts what was queued when the error happened, not a
    # request the frontend sends after it saw the error (as a user at
    # `jupyter console` does). Each request here is sent as soon as the
    # reply to the one before arrived.
    statuses = []
    for i in range(40):
        for code in (f"int after_err{i} = ;", 'printf("next\\n");'):
            msg_id = send(kc, code, stop_on_error=True)
            while True:
                reply = kc.get_shell_msg(timeout=30)
                if reply["parent_header"].get("msg_id") == msg_id:
                    break
            statuses.append(reply["content"]["status"])
    drain_iopub(kc)
    aborted = statuses.count("aborted")
    assert aborted == 0, f"{aborted} of 80 requests sent after the previous reply were aborted"
    assert statuses == ["error", "ok"] * 40


# ---------------------------------------------------------------- lifecycle


def test_restart(fresh):
    km, kc = fresh
    ok(kc, "int before_restart = 1;")
    km.restart_kernel()
    kc.wait_for_ready(timeout=30)
    r = run_full(kc, 'printf("after restart\\n");')
    assert r.reply["status"] == "ok"
    assert stdout(r.outputs) == "after restart\n"
    assert r.reply["execution_count"] == 1
    reply, outputs = fails(kc, 'printf("%d\\n", before_restart);', "CompileError")


def _children(pid):
    kids = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                text = f.read()
        except OSError:
            continue
        comm = text[text.index("(") + 1:text.rindex(")")]
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[1]) == pid:
            kids.append((int(stat.split("/")[2]), comm))
    return kids


def _session_dirs(pid):
    """The cflame session directories whose cell objects process pid maps."""
    dirs = set()
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            m = re.search(r"(/\S*/cflame-[^/\s]+)/\S+\.so", line)
            if m:
                dirs.add(m.group(1))
    return dirs


def _gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return True


def test_shutdown_ends_the_worker_and_removes_the_session_dir():
    with start_kernel() as (km, kc):
        ok(kc, 'int shut_g = 1;\nprintf("hi\\n");')
        proc = km.provisioner.process
        workers = [pid for pid, comm in _children(proc.pid) if comm == "cflame-worker"]
        assert len(workers) == 1, _children(proc.pid)
        dirs = _session_dirs(workers[0])
        assert len(dirs) == 1 and all(os.path.isdir(d) for d in dirs), dirs
        km.shutdown_kernel()
        assert proc.poll() is not None
        deadline = time.monotonic() + 3
        while not _gone(workers[0]) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(workers[0]), "the cflame-worker process outlived the kernel"
        for d in dirs:
            assert not os.path.exists(d), f"{d} was left behind"
        # A clean exit: nothing killed it, and (under ASan) no leak report.
        assert proc.returncode == 0


def test_ipc_transport(tmp_path):
    with start_kernel(transport="ipc", ip=str(tmp_path / "kernel")) as (km, kc):
        assert km.get_connection_info()["transport"] == "ipc"
        assert ok(kc, 'printf("over ipc\\n");') == "over ipc\n"
        reply = request(kc, "kernel_info")
        assert reply["content"]["implementation"] == "cflame"
