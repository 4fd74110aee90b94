# SPDX-License-Identifier: BSD-3-Clause
"""Bad input and faults (docs/USAGE.md, "When things go wrong"): what the
user gets when a cell does not compile, does not link, crashes, never
ends, exits, or floods its output; and for unknown magics. Nothing here may
stop the kernel, and the session keeps its definitions. (Profiling rows are
tested elsewhere.)"""
import re
import time

import pytest

from cflame_text import COUNT  # (tests/lib)
from cflame_tmpfs import in_small_tmpdir
from conftest import (_read, collect, fails, interrupt_when_printed, ok, request, run, send,
                      start_kernel, stderr, stdout)


def traceback_text(reply):
    return "\n".join(reply["traceback"])


# ---------------------------------------------------------------- compile and link


def test_compile_error_names_cell_line_and_column(kc):
    reply, outputs = fails(kc, "int a = 1;\nint b = ;", "CompileError")
    n = reply["execution_count"]
    assert any(f"cell[{n}]:2:9: error" in line for line in reply["traceback"]), reply["traceback"]
    assert f"cell[{n}]:2:9: error" in reply["evalue"]
    # Nothing the compiler did not complain about is reported against line 1.
    assert not any(f"cell[{n}]:1:" in line and "error" in line for line in reply["traceback"]), (
        reply["traceback"]
    )
    assert stdout(outputs) == ""


def test_a_compile_error_in_a_functions_signature_is_reported_once(kc):
    """The compiler's complaint about a line of the cell comes once, as gcc
    gives it for the cell alone, though the kernel's unit declares the
    function (its prototype) before it defines it; the error's value still
    says what failed."""
    reply, outputs = fails(kc, "typedef struct { double x[8]; } vec8;\n"
                               "vec9 norm9(vec9 a) { return a; }", "CompileError")
    n = reply["execution_count"]
    text = traceback_text(reply)
    for col in (1, 12):
        assert text.count(f"cell[{n}]:2:{col}: error: unknown type name") == 1, text
    assert text.count("    2 | vec9 norm9(vec9 a)") == 2, text  # a quote under each
    assert reply["evalue"].startswith(f"cell[{n}]:2:1: error: unknown type name"), reply["evalue"]
    assert stderr(outputs) == "", outputs


def test_compile_error_keeps_nothing_from_the_cell(kc):
    fails(kc, 'int kept_x = 1;\nint kept_y = ;\nprintf("ran\\n");', "CompileError")
    reply, outputs = fails(kc, 'printf("%d\\n", kept_x);', "CompileError")
    assert re.search(r"kept_x.{0,3} undeclared", traceback_text(reply)), reply["traceback"]
    # The session still works, and the name can be defined anew.
    assert ok(kc, 'int kept_x = 2;\nprintf("%d\\n", kept_x);') == "2\n"


def test_compile_error_line_after_magic_lines(kc):
    # Line numbers count the cell's own lines, magic lines included.
    reply, outputs = fails(kc, "%cflags\n\nint c = 1;\nint d = ;", "CompileError")
    n = reply["execution_count"]
    assert any(f"cell[{n}]:4:9: error" in line for line in reply["traceback"]), reply["traceback"]


@pytest.mark.parametrize("code,at,message", [
    # The kernel's own code follows the cell's statements: an unfinished
    # statement is reported where the cell ends, not against a line of the
    # kernel's that the cell does not have.
    ("int z = 5 *", "1:12", "expected expression at the end of the cell"),
    ("int m = 1;\nm = m +  \n\n", "2:8", "expected expression at the end of the cell"),
    ("for (int i = 0; i < 3; i++) {\n  i++;", "2:7", "expected declaration or statement at end of input"),
    ('int main(void) {\n  printf("x\\n")\n', "2:16", "expected ‘;’"),
])
def test_unfinished_statement_is_reported_at_the_end_of_the_cell(kc, code, at, message):
    reply, outputs = fails(kc, code, "CompileError")
    n = reply["execution_count"]
    text = traceback_text(reply)
    assert f"cell[{n}]:{at}: error: {message}" in text, text
    assert "return" not in text and "cflame" not in text and "non-void" not in text, text
    last = code.rstrip().count("\n") + 1
    assert not re.search(rf"cell\[{n}\]:(\d+):", text) or all(
        int(m) <= last for m in re.findall(rf"cell\[{n}\]:(\d+):", text)), text


def test_unfinished_statement_under_clang(fresh):
    # clang quotes the line it complains about, even one of the kernel's.
    km, kc = fresh
    ok(kc, "%cc clang")
    reply, outputs = fails(kc, "int z = 5 *", "CompileError")
    n = reply["execution_count"]
    text = traceback_text(reply)
    assert f"cell[{n}]:1:12: error: expected expression" in text, text
    assert "return" not in text and "cflame" not in text, text


def test_undefined_symbol_is_a_link_error(kc):
    reply, outputs = fails(kc, "void nothere(void);\nnothere();", "LinkError")
    assert "undefined symbol: nothere" in reply["evalue"]
    assert ok(kc, 'printf("usable\\n");') == "usable\n"


# ---------------------------------------------------------------- crashes


CRASH_CELL = """void crash(void) {
  int *p = 0;
  *p = 1;
}
crash();"""


def test_segfault_names_signal_line_and_function(kc):
    ok(kc, "int still_here(void) { return 42; }\nint seg_global = 5;")
    ok(kc, "seg_global = 99;")
    reply, outputs = fails(kc, CRASH_CELL, "SIGSEGV")
    n = reply["execution_count"]
    assert "Segmentation fault" in reply["evalue"]
    assert f"cell[{n}]:3" in reply["evalue"], reply["evalue"]
    assert "crash" in reply["evalue"]
    assert any(line.startswith("Backtrace") for line in reply["traceback"]), reply["traceback"]
    assert any("crash" in line and f"cell[{n}]:3" in line for line in reply["traceback"])
    assert "global variables were reset" in reply["evalue"]
    # Earlier definitions remain usable; globals are back at their initial value.
    assert ok(kc, 'printf("%d %d\\n", still_here(), seg_global);') == "42 5\n"
    # The crashed cell's function is part of the session too.
    assert ok(kc, "void (*crash_ptr)(void) = crash;\nprintf(\"%d\\n\", crash_ptr != 0);") == "1\n"


def test_segfault_without_globals_says_nothing_about_globals(fresh):
    km, kc = fresh
    ok(kc, "int no_globals_here(void) { return 1; }")
    reply, outputs = fails(kc, CRASH_CELL, "SIGSEGV")
    assert "global variables were reset" not in reply["evalue"]
    assert ok(kc, 'printf("%d\\n", no_globals_here());') == "1\n"


def test_abort(kc):
    reply, outputs = fails(kc, "void give_up(void) {\n  abort();\n}\ngive_up();", "SIGABRT")
    n = reply["execution_count"]
    assert "Aborted" in reply["evalue"]
    assert f"cell[{n}]:2" in reply["evalue"], reply["evalue"]
    assert "give_up" in reply["evalue"]
    assert ok(kc, 'printf("after abort\\n");') == "after abort\n"


def test_integer_division_by_zero(kc):
    reply, outputs = fails(kc, 'volatile int divisor = 0;\nprintf("%d\\n", 10 / divisor);', "SIGFPE")
    n = reply["execution_count"]
    assert "Floating point exception" in reply["evalue"]
    assert f"cell[{n}]:2" in reply["evalue"], reply["evalue"]
    assert stdout(outputs) == ""


def test_bus_error(kc):
    reply, outputs = fails(kc, "#include <sys/mman.h>\n"
                               "FILE *bus_f = tmpfile();\n"
                               "char *bus_p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fileno(bus_f), 0);\n"
                               'printf("%d\\n", bus_p[0]);', "SIGBUS")
    n = reply["execution_count"]
    assert "Bus error" in reply["evalue"]
    assert f"cell[{n}]:4" in reply["evalue"], reply["evalue"]


def test_stack_overflow(kc):
    reply, outputs = fails(kc, "int recurse(int n) {\n"
                               "  volatile char pad[256];\n"
                               "  pad[0] = (char)n;\n"
                               "  return recurse(n + 1) + pad[0];\n"
                               "}\n"
                               'printf("%d\\n", recurse(0));', "SIGSEGV")
    assert "Stack overflow" in reply["evalue"], reply["evalue"]
    assert "recurse" in reply["evalue"]
    assert ok(kc, 'printf("after overflow\\n");') == "after overflow\n"


def test_stack_overflow_in_a_thread(kc):
    # The crash handler runs on an alternate stack on every thread a cell
    # starts, not only on the main one.
    ok(kc, "int before_thread_overflow(void) { return 31; }")
    reply, outputs = fails(kc, "#include <pthread.h>\n"
                               "int thread_recurse(int n) {\n"
                               "  volatile char pad[256];\n"
                               "  pad[0] = (char)n;\n"
                               "  return thread_recurse(n + 1) + pad[0];\n"
                               "}\n"
                               "void *overflow_main(void *arg) {\n"
                               "  return (void *)(long)thread_recurse((int)(long)arg);\n"
                               "}\n"
                               "pthread_t overflow_thread;\n"
                               "pthread_create(&overflow_thread, NULL, overflow_main, NULL);\n"
                               "pthread_join(overflow_thread, NULL);", "SIGSEGV")
    n = reply["execution_count"]
    assert "Stack overflow" in reply["evalue"], reply["evalue"]
    # Where in the function the stack ran out depends on the compiler.
    assert re.search(rf"cell\[{n}\]:[2-5] in thread_recurse\(\)", reply["evalue"]), reply["evalue"]
    assert any(line.startswith("Backtrace") for line in reply["traceback"]), reply["traceback"]
    assert sum("thread_recurse" in line and f"cell[{n}]:5" in line
               for line in reply["traceback"]) >= 5, reply["traceback"]
    assert ok(kc, 'printf("%d\\n", before_thread_overflow());') == "31\n"


# A thread prints lines as fast as it can while the main thread crashes.
# The cell first makes thousands of mappings, so that the crash report
# (which carries /proc/self/maps) is several times what the pipe to the
# kernel holds: its writer blocks part-way while the printing thread
# wants the pipe too.
CRASH_WHILE_PRINTING_CELL = r"""#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
static volatile long lines_printed;
void *chatter(void *arg) {
  char line[1000];
  memset(line, 'x', sizeof line - 2);
  line[sizeof line - 2] = '\n';
  line[sizeof line - 1] = '\0';
  for (;;) {
    fputs(line, stdout);
    lines_printed++;
  }
  return arg;
}
void crash_while_printing(void) {
  int *p = 0;
  *p = 1;
}
for (int i = 0; i < 4000; i++)
  mmap(NULL, 4096, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
pthread_t chatter_thread;
pthread_create(&chatter_thread, NULL, chatter, NULL);
while (lines_printed < 2000)
  ;
crash_while_printing();"""


def test_crash_while_another_thread_prints(kc):
    ok(kc, "int survives_the_crash(void) { return 17; }\nint crash_global = 3;")
    ok(kc, "crash_global = 4;")
    reply, outputs = fails(kc, CRASH_WHILE_PRINTING_CELL, "SIGSEGV", timeout=60)
    n = reply["execution_count"]
    line = CRASH_WHILE_PRINTING_CELL.split("\n").index("  *p = 1;") + 1
    assert "Segmentation fault" in reply["evalue"], reply["evalue"]
    assert f"cell[{n}]:{line} in crash_while_printing()" in reply["evalue"], reply["evalue"]
    assert any(line.startswith("Backtrace") for line in reply["traceback"]), reply["traceback"]
    assert any("crash_while_printing" in tb and f"cell[{n}]:{line}" in tb
               for tb in reply["traceback"]), reply["traceback"]
    assert stdout(outputs).startswith("x" * 998 + "\n")
    # The kernel goes on, with the session's definitions.
    assert ok(kc, 'printf("%d %d\\n", survives_the_crash(), crash_global);') == "17 3\n"


# Eight threads wait for each other and then all write through NULL at
# once: several are in the crash handler at the same time.
FAULT_TOGETHER_CELL = r"""#include <pthread.h>
static volatile int fault_ready;
void *fault_together(void *arg) {
  __atomic_add_fetch(&fault_ready, 1, __ATOMIC_SEQ_CST);
  while (__atomic_load_n(&fault_ready, __ATOMIC_SEQ_CST) < 8)
    ;
  *(volatile int *)arg = 1;
  return arg;
}
pthread_t fault_threads[8];
for (int i = 0; i < 8; i++)
  pthread_create(&fault_threads[i], NULL, fault_together, NULL);
for (int i = 0; i < 8; i++)
  pthread_join(fault_threads[i], NULL);"""


def test_threads_faulting_at_once_are_reported_whole():
    # The first fault is reported, with its backtrace, however many
    # threads fault with it; the others wait for the worker's end instead
    # of ending it before the report is out.
    with start_kernel(memory=2 << 30) as (km, kc):
        ok(kc, "int after_the_faults(void) { return 23; }")
        line = FAULT_TOGETHER_CELL.split("\n").index("  *(volatile int *)arg = 1;") + 1
        for attempt in range(6):
            reply, outputs = fails(kc, FAULT_TOGETHER_CELL, "SIGSEGV", timeout=60)
            n = reply["execution_count"]
            assert "Segmentation fault" in reply["evalue"], (attempt, reply["evalue"])
            assert f"cell[{n}]:{line} in fault_together()" in reply["evalue"], \
                (attempt, reply["evalue"])
            assert any(tb.startswith("Backtrace") for tb in reply["traceback"]), \
                (attempt, reply["traceback"])
            assert ok(kc, 'printf("%d\\n", after_the_faults());', timeout=60) == "23\n"


def test_exit_is_reported_and_the_session_reloaded(kc):
    ok(kc, "int exit_helper(void) { return 11; }")
    reply, outputs = fails(kc, 'printf("bye\\n");\nexit(3);', "Exit")
    assert "exit(3)" in reply["evalue"]
    assert stdout(outputs) == "bye\n"
    assert ok(kc, 'printf("%d\\n", exit_helper());') == "11\n"


# ---------------------------------------------------------------- interrupts


def test_interrupt_endless_loop_keeps_state(kernel):
    km, kc = kernel
    ok(kc, "int before_loop = 0;\nint loop_helper(void) { return 8; }")
    r, dt = interrupt_when_printed(km, kc, 'before_loop = 7;\nprintf("looping\\n");\nfflush(stdout);\n'
                                   "for (;;);", "looping\n")
    assert r.reply["status"] == "error"
    assert r.reply["ename"] == "Interrupted"
    assert dt < 1.0, f"the reply came {dt:.2f} s after the interrupt"
    assert ok(kc, 'printf("%d %d\\n", before_loop, loop_helper());') == "7 8\n"


def test_interrupt_sleep(kernel):
    km, kc = kernel
    r, dt = interrupt_when_printed(km, kc, '#include <unistd.h>\nprintf("sleeping\\n");\nfflush(stdout);\n'
                                   'sleep(100);\nprintf("after sleep\\n");', "sleeping\n")
    assert r.reply["status"] == "error"
    assert r.reply["ename"] == "Interrupted"
    assert dt < 1.0, f"the reply came {dt:.2f} s after the interrupt"
    assert stdout(r.outputs) == "sleeping\n"
    assert ok(kc, 'printf("awake\\n");') == "awake\n"


def test_interrupt_printing_loop(kernel):
    km, kc = kernel
    r, dt = interrupt_when_printed(km, kc, 'for (long i = 0;; i++) printf("line %ld\\n", i);', "line 1\n")
    assert r.reply["status"] == "error"
    assert r.reply["ename"] == "Interrupted"
    assert dt < 1.0, f"the reply came {dt:.2f} s after the interrupt"
    assert stdout(r.outputs).startswith("line 0\nline 1\n")
    assert ok(kc, 'printf("quiet now\\n");') == "quiet now\n"


def test_threads_print_after_an_interrupted_printing_loop(fresh):
    # The interrupt unwinds the main thread out of its write to the kernel:
    # the next cell's threads can still write.
    km, kc = fresh
    r, dt = interrupt_when_printed(km, kc, 'for (long i = 0;; i++) printf("line %ld\\n", i);', "line 1\n")
    assert r.reply["ename"] == "Interrupted"
    assert ok(kc, "#include <pthread.h>\n"
                  'void *say_hello(void *arg) { printf("hello from a thread\\n"); return arg; }\n'
                  "pthread_t hello_thread;\n"
                  "pthread_create(&hello_thread, NULL, say_hello, NULL);\n"
                  "pthread_join(hello_thread, NULL);", timeout=10) == "hello from a thread\n"


# ---------------------------------------------------------------- output flood


def test_output_flood_is_cut_and_the_kernel_stays_responsive(kc):
    # 1,000,000 lines of 50 bytes: 50 MB.
    reply, outputs = run(kc, 'for (int i = 0; i < 1000000; i++) printf("%049d\\n", i);', timeout=120)
    assert reply["status"] == "ok"
    text = stdout(outputs)
    total = sum(len(o["text"]) for o in outputs if o["msg_type"] == "stream")
    assert 0 < total < 5_000_000, total
    assert text.startswith("0" * 49 + "\n" + "0" * 48 + "1\n")
    assert "output passed the limit" in stderr(outputs)
    t = time.monotonic()
    info = request(kc, "kernel_info", timeout=5)
    assert info["content"]["status"] == "ok"
    assert time.monotonic() - t < 2
    assert ok(kc, 'printf("small\\n");') == "small\n"


# ---------------------------------------------------------------- magics


def test_unknown_line_magic(kc):
    reply, outputs = fails(kc, '%nosuch\nprintf("should not run\\n");', "MagicError")
    assert "unknown magic %nosuch" in reply["evalue"]
    assert "%cflags" in reply["evalue"] and "%lsmagic" in reply["evalue"]
    assert stdout(outputs) == ""


def test_unknown_cell_magic(kc):
    reply, outputs = fails(kc, '%%nosuch\nprintf("should not run\\n");', "MagicError")
    assert "%%nosuch" in reply["evalue"]
    assert "%%timeit" in reply["evalue"]
    assert stdout(outputs) == ""


def test_unknown_timeit_flag(kc):
    reply, outputs = fails(kc, '%%timeit -q 5\nprintf("should not run\\n");', "MagicError")
    assert "-q" in reply["evalue"]
    assert "-n" in reply["evalue"] and "-r" in reply["evalue"]
    assert stdout(outputs) == ""


def test_errors_do_not_stop_the_kernel(kernel):
    # After all of the above, the module's kernel process still serves.
    km, kc = kernel
    assert km.is_alive()
    assert ok(kc, 'printf("%d\\n", 6 * 7);') == "42\n"
    assert request(kc, "kernel_info")["content"]["status"] == "ok"


def test_threads_read_input_after_an_interrupted_read(fresh):
    # The interrupt unwinds the main thread out of its wait for the
    # frontend's answer: the next cell's threads can still read input.
    km, kc = fresh
    msg_id = send(kc, 'char line[64];\nif (fgets(line, sizeof line, stdin)) printf("got %s", line);',
                  allow_stdin=True, stop_on_error=False)
    msg = _read(kc, "stdin", msg_id, 10)
    assert msg is not None and msg["msg_type"] == "input_request"
    km.interrupt_kernel()
    r = collect(kc, msg_id, timeout=20)
    assert r.reply["ename"] == "Interrupted"
    assert ok(kc, "#include <pthread.h>\n"
                  "void *ask(void *arg) {\n"
                  '  char l[64]; if (fgets(l, sizeof l, stdin)) printf("thread got %s", l);\n'
                  "  return arg;\n}\n"
                  "pthread_t asker;\n"
                  "pthread_create(&asker, NULL, ask, NULL);\n"
                  "pthread_join(asker, NULL);",
              allow_stdin=True, inputs=["hello"], timeout=10) == "thread got hello\n"
    assert ok(kc, "int n = 0; read(0, &n, 0); scanf(\"%d\", &n); printf(\"%d\\n\", n);",
              allow_stdin=True, inputs=["41"], timeout=10) == "41\n"


# Statements that fill TMPDIR's file system with $TMPDIR/filler (fd, its
# written bytes), for the cells below (which include <fcntl.h>, <stdlib.h>
# and <unistd.h>).
FILL_TMPDIR = r"""char path[4096];
snprintf(path, sizeof path, "%s/filler", getenv("TMPDIR"));
int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
static char block[1 << 16];
long written = 0, w;
while ((w = write(fd, block, sizeof block)) > 0) written += w;
"""


# A profiled cell that fills TMPDIR's file system, then leaves 2 MiB of it
# free, and between the two spends some 0.5 s of CPU deep in a recursion:
# each sample is a deep stack, written to the sample buffer after the disk
# is full.
FILL_THEN_RECURSE = r"""%%profile
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static volatile unsigned long sink;
static unsigned long down(int d) {
  if (d == 0) { unsigned long s = 0; for (int i = 0; i < 2000; i++) s += i * sink; return s; }
  return down(d - 1) + 1;
}
""" + FILL_TMPDIR + r"""clock_t t0 = clock();
while (clock() - t0 < CLOCKS_PER_SEC / 2) sink += down(400);
ftruncate(fd, written > (2 << 20) ? written - (2 << 20) : 0);
close(fd);
printf("filled %ld bytes\n", written);
"""


def test_a_tmpdir_that_fills_up_never_kills_the_worker(tmp_path):
    """The kernel's TMPDIR on a 48 MiB tmpfs that a profiled cell fills:
    the cell runs to its end and the session keeps a global defined
    before (the sample buffer was given its blocks before the cell ran,
    not written into holes of a full disk: SIGBUS). A profile whose
    larger buffer (n=) does not fit is refused before the cell runs, with
    an error naming TMPDIR and the bytes needed, and the global stays."""
    mnt = tmp_path / "tmpdir"
    mnt.mkdir()
    with start_kernel(wrapper=in_small_tmpdir(mnt, "48m", [])) as (km, kc):
        ok(kc, "int kept = 42;")
        out = ok(kc, FILL_THEN_RECURSE, timeout=120)
        assert "filled" in out, out
        assert ok(kc, 'printf("%d\\n", kept);') == "42\n"
        reply, outputs = run(kc, "%%profile n=4000000\nkept++;", timeout=60)
        text = reply.get("evalue", "") + stderr(outputs)
        assert reply["status"] == "error", _text(outputs)
        assert re.search(rf"needs {COUNT} bytes, and TMPDIR's file system "
                         rf"\({re.escape(str(mnt))}\) is full", text), text
        assert ok(kc, 'printf("%d\\n", kept);') == "42\n"


FILL_THEN_ALLOCATE = r"""%%profallocs sample_rate=1
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
static void *keep[100000];
static void *down(int d, int i) { return d ? down(d - 1, i) : malloc(16 + i % 64); }
""" + FILL_TMPDIR + r"""for (int r = 0; r < 10; r++)
  for (int i = 0; i < 100000; i++) { free(keep[i]); keep[i] = down(200, i); }
ftruncate(fd, 0);
close(fd);
printf("filled %ld bytes\n", written);
"""


def test_a_tmpdir_that_fills_up_loses_allocation_records_not_the_worker(tmp_path):
    """%%profallocs of a cell that fills the kernel's TMPDIR (a 48 MiB
    tmpfs), then makes a million sampled allocations with deep stacks:
    their records outgrow what the buffer had on disk. The cell runs to its
    end, the records that fit are drawn, the output says the rest were
    lost because TMPDIR's file system filled up (naming it), and a global
    defined before is kept."""
    mnt = tmp_path / "tmpdir"
    mnt.mkdir()
    with start_kernel(wrapper=in_small_tmpdir(mnt, "48m", [])) as (km, kc):
        ok(kc, "int kept = 42;")
        reply, outputs = run(kc, FILL_THEN_ALLOCATE, timeout=180)
        assert reply["status"] == "ok", _text(outputs)
        assert "filled" in stdout(outputs), _text(outputs)
        assert re.search(rf"{COUNT} sampled allocations were lost because TMPDIR's file system "
                         rf"\({re.escape(str(mnt))}\) filled up", stderr(outputs)), _text(outputs)
        assert ok(kc, 'printf("%d\\n", kept);') == "42\n"


def _text(outputs):
    return repr(outputs)[:2000]
