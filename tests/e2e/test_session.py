# SPDX-License-Identifier: BSD-3-Clause
"""Cells (docs/USAGE.md, "Cells"): what persists from cell to cell, how
cells run, their output and input, and the compiler magics.

One kernel serves the whole module (names are unique per test so that the
tests do not depend on each other); tests that reset the session start their
own kernel."""
import os
import re

import pytest


from conftest import errors, fails, ok, run, run_full, stderr, stdout

DEFAULT_CFLAGS = "-std=gnu17 -O2 -g -fno-omit-frame-pointer -Wall"


def streams(outputs):
    """The stream messages as (name, text), consecutive chunks of the same
    stream joined."""
    out = []
    for o in outputs:
        if o["msg_type"] != "stream":
            continue
        if out and out[-1][0] == o["name"]:
            out[-1] = (o["name"], out[-1][1] + o["text"])
        else:
            out.append((o["name"], o["text"]))
    return out


# ---------------------------------------------------------------- persistence


def test_preprocessor_lines_persist(kc):
    assert ok(kc, "#include <limits.h>\n#define SQUARE(x) ((x) * (x))\n#define GREETING \"hi\"") == ""
    assert ok(kc, 'printf("%d %d %s\\n", INT_MAX, SQUARE(7), GREETING);') == "2147483647 49 hi\n"


def test_types_persist(kc):
    ok(kc, "struct pt { int x, y; };\n"
           "union num { int i; char c[8]; };\n"
           "enum color { RED, GREEN = 5, BLUE };\n"
           "typedef unsigned long ulong_t;")
    out = ok(kc, "struct pt p = {3, 4};\n"
                 "union num u;\n"
                 "u.i = 7;\n"
                 "ulong_t big = 1UL << 40;\n"
                 'printf("%d %zu %d %d %lu\\n", p.x * p.y, sizeof(union num), u.i, BLUE, big);')
    assert out == "12 8 7 6 1099511627776\n"


def test_struct_defined_in_one_cell_used_in_a_later_one(kc):
    ok(kc, "struct account { const char *owner; long cents; };")
    ok(kc, "long total(const struct account *a, int n) {\n"
           "  long t = 0;\n"
           "  for (int i = 0; i < n; i++) t += a[i].cents;\n"
           "  return t;\n"
           "}")
    out = ok(kc, 'struct account accts[] = {{"ann", 150}, {"bob", 250}};\n'
                 'printf("%ld %s\\n", total(accts, 2), accts[1].owner);')
    assert out == "400 bob\n"


def test_typedef_used_for_a_global_in_a_later_cell(kc):
    ok(kc, "typedef struct { double re, im; } cplx;")
    ok(kc, "cplx z0 = {1.5, -2.0};")
    assert ok(kc, 'printf("%.1f %.1f\\n", z0.re, z0.im);') == "1.5 -2.0\n"


def test_functions_persist(kc):
    ok(kc, "int add3(int a, int b, int c) { return a + b + c; }")
    ok(kc, "int add3_twice(int a) { return add3(a, a, a) * 2; }")
    assert ok(kc, 'printf("%d %d\\n", add3(1, 2, 3), add3_twice(5));') == "6 30\n"


def test_prototypes_persist(kc):
    # getpagesize is declared by <unistd.h>, which no earlier cell includes:
    # the later cell compiles cleanly only if the prototype persisted.
    ok(kc, "int getpagesize(void);")
    reply, outputs = run(kc, 'printf("%d\\n", getpagesize() >= 4096);')
    assert reply["status"] == "ok"
    assert stdout(outputs) == "1\n"
    assert "implicit declaration" not in stderr(outputs)


def test_prototype_then_definition_in_later_cells(kc):
    ok(kc, "double half(double v);")
    ok(kc, "double half(double v) { return v / 2; }")
    assert ok(kc, 'printf("%.2f\\n", half(5));') == "2.50\n"


def test_globals_persist(kc):
    ok(kc, "int counter41 = 41;")
    ok(kc, "counter41++;")
    assert ok(kc, 'printf("%d\\n", counter41);') == "42\n"


def test_static_functions_and_globals_persist(kc):
    ok(kc, "static int next_of(int x) { return x + 1; }\nstatic int static_g = 10;")
    assert ok(kc, 'printf("%d %d\\n", next_of(1), next_of(static_g));') == "2 11\n"


# ---------------------------------------------------------------- running


def test_top_level_statements_run_in_order(kc):
    out = ok(kc, 'printf("a\\n");\n'
                 'for (int i = 0; i < 3; i++) {\n'
                 '  printf("%d\\n", i);\n'
                 '}\n'
                 'printf("b\\n");')
    assert out == "a\n0\n1\n2\nb\n"


def test_global_initializers_run_in_order_with_statements(kc):
    out = ok(kc, "int ord1 = 5;\n"
                 'printf("%d\\n", ord1);\n'
                 "ord1 = 6;\n"
                 "int ord2 = ord1 * 2;\n"
                 'printf("%d\\n", ord2);')
    assert out == "5\n12\n"


def test_global_with_any_initializer(kc):
    ok(kc, "double *a = malloc(4 * sizeof *a);\n"
           "size_t name_len = strlen(\"hello\");")
    ok(kc, "for (int i = 0; i < 4; i++) a[i] = i * 1.5;")
    assert ok(kc, 'printf("%.1f %.1f %zu\\n", a[1], a[3], name_len);') == "1.5 4.5 5\n"


def test_redefined_function_new_code_uses_new_old_code_keeps_old(kc):
    ok(kc, "int f(void) { return 1; }")
    ok(kc, "int g(void) { return f(); }")
    ok(kc, "int f(void) { return 2; }")
    assert ok(kc, 'printf("%d %d", f(), g());') == "2 1"


def test_redefined_global_and_type(kc):
    ok(kc, "int rg = 1;\nstruct rt { int a; };")
    ok(kc, "double rg = 2.5;\nstruct rt { int a, b; };")
    assert ok(kc, 'struct rt rv = {1, 2};\nprintf("%.1f %d\\n", rg, rv.b);') == "2.5 2\n"


def test_main_is_called(kc):
    out = ok(kc, "int main(int argc, char **argv) {\n"
                 '  printf("in main, argc=%d\\n", argc);\n'
                 "  return 0;\n"
                 "}")
    assert out == "in main, argc=1\n"


def test_main_returning_non_zero_is_an_error(kc):
    reply, outputs = fails(kc, 'int main(void) {\n  printf("ran\\n");\n  return 3;\n}', "MainReturned")
    assert reply["evalue"] == "main returned 3"
    assert stdout(outputs) == "ran\n"



@pytest.mark.parametrize("code", ["exit", "quit", "  quit\n", "\n\texit  \n\n"])
def test_exit_or_quit_alone_asks_the_console_to_leave(kc, code):
    """`exit` or `quit` alone leaves `jupyter console` as IPython's do: the
    reply asks the frontend to exit and to end the kernel (the messaging
    spec's ask_exit payload), and nothing runs or prints."""
    reply, outputs = run(kc, code)
    assert reply["status"] == "ok", reply
    assert reply["payload"] == [{"source": "ask_exit", "keepkernel": False}], reply
    assert [o for o in outputs if o["msg_type"] != "execute_input"] == [], outputs


def test_exit_in_c_still_runs_as_c(kc):
    """Only the bare word leaves: a call of exit() is the cell's, and a
    cell that mentions exit among other code runs as C."""
    reply, _ = fails(kc, "exit(3);", "Exit")
    assert reply.get("payload", []) == [], reply
    reply, outputs = run(kc, 'int quit_code = 0;\nif (quit_code) exit(1);\nprintf("stayed\\n");')
    assert reply["status"] == "ok" and reply["payload"] == [] and stdout(outputs) == "stayed\n", reply


# How a whole program is brought into a notebook: its main renamed by a
# macro, to be called later with arguments of one's choice.
PROGRAM_AS_MACRO = r"""#define main nbody_main
int main(int argc, char **argv) {
  int n = atoi(argv[1]);          /* crashes when argv[1] is NULL */
  printf("steps=%d\n", n);
  return 0;
}
#undef main"""


def test_main_renamed_by_a_macro_is_not_called(kc):
    out = ok(kc, PROGRAM_AS_MACRO)
    assert out == "", out
    assert ok(kc, 'char *nb_args[] = {"nbody", "1000", 0};\nnbody_main(2, nb_args);') == "steps=1000\n"
    # The usage-printing kind: it would exit if it were called with argc 1.
    out = ok(kc, "#define main fannkuch_main\n"
                 "int main(int argc, char **argv) {\n"
                 '  if (argc < 2) { fprintf(stderr, "usage: fannkuch N\\n"); exit(2); }\n'
                 "  return 0;\n"
                 "}\n"
                 "#undef main\n"
                 'printf("defined\\n");')
    assert out == "defined\n", out
    assert ok(kc, 'char *fk[] = {"fk", "7", 0};\nprintf("%d\\n", fannkuch_main(2, fk));') == "0\n"
    # A real main still runs, after the renamed one.
    assert ok(kc, 'int main(void) { printf("real main\\n"); return 0; }') == "real main\n"

def test_a_renamed_main_pasted_again_is_the_new_code(kc):
    """Pasting a program again after changing it must replace its renamed
    main as any function is replaced: the newest definition runs, and no
    later cell carries a warning it did not cause."""
    def program(result):
        return ("#define main again_main\n"
                f"int main(int argc, char **argv) {{ (void)argc; (void)argv; return {result}; }}\n"
                "#undef main")
    for result in (1, 2, 3):
        reply, outputs = run(kc, program(result))
        assert reply["status"] == "ok", reply
        assert stderr(outputs) == "", stderr(outputs)
        assert ok(kc, 'printf("%d\\n", again_main(0, 0));') == f"{result}\n"
    reply, outputs = run(kc, "int again_g = 5;")
    assert reply["status"] == "ok" and stderr(outputs) == "" and stdout(outputs) == "", outputs
    # A real main after the renamed one: both stay callable.
    assert ok(kc, 'int main(void) { printf("%d\\n", again_main(0, 0)); return 0; }') == "3\n"
    # Another program's main, renamed otherwise, leaves this one as it is.
    assert ok(kc, "#define main other_main\nint main(void) { return 7; }\n#undef main\n"
                  'printf("%d %d\\n", other_main(), again_main(0, 0));') == "7 3\n"


# ---------------------------------------------------------------- output


def test_stdout_and_stderr_stream_in_order(kc):
    reply, outputs = run(kc, 'printf("one\\n");\nfprintf(stderr, "two\\n");\nprintf("three\\n");')
    assert reply["status"] == "ok"
    assert streams(outputs) == [("stdout", "one\n"), ("stderr", "two\n"), ("stdout", "three\n")]


def test_write_to_descriptors_and_child_processes_reach_the_streams(kc):
    reply, outputs = run(kc, "#include <unistd.h>\n"
                             'write(1, "raw\\n", 4);\n'
                             'system("echo child");\n'
                             'write(2, "raw err\\n", 8);\n'
                             'system("echo child err >&2");')
    assert reply["status"] == "ok"
    assert stdout(outputs) == "raw\nchild\n"
    assert stderr(outputs) == "raw err\nchild err\n"


def test_output_streams_while_the_cell_runs(kc):
    r = run_full(kc, "#include <unistd.h>\n"
                     'printf("start\\n");\n'
                     "fflush(stdout);\n"
                     "usleep(1500000);\n"
                     'printf("end\\n");')
    assert r.reply["status"] == "ok"
    assert stdout(r.outputs) == "start\nend\n"
    first = next(o for o in r.outputs if o["msg_type"] == "stream" and "start" in o["text"])
    assert "end" not in first["text"]
    assert r.reply_t - first["t"] >= 1.0, (
        f"'start' arrived only {r.reply_t - first['t']:.2f} s before the reply"
    )


# ---------------------------------------------------------------- stdin


def input_requests(outputs):
    return [o for o in outputs if o["msg_type"] == "input_request"]


def test_fgets_asks_the_frontend(kc):
    reply, outputs = run(kc, 'char buf[64];\nfgets(buf, sizeof buf, stdin);\nprintf("got %s", buf);',
                         allow_stdin=True, inputs=["hello"])
    assert reply["status"] == "ok"
    assert len(input_requests(outputs)) == 1
    assert stdout(outputs) == "got hello\n"


def test_scanf_asks_the_frontend(kc):
    reply, outputs = run(kc, 'int sv = 0;\nif (scanf("%d", &sv) == 1) printf("twice %d\\n", 2 * sv);',
                         allow_stdin=True, inputs=["21"])
    assert reply["status"] == "ok"
    assert len(input_requests(outputs)) == 1
    assert stdout(outputs) == "twice 42\n"


def test_a_prompt_printed_before_scanf_is_the_requests_prompt(kc):
    """What the cell printed before it reads comes first, and its unfinished
    last line is the input_request's prompt (shown once, before the answer,
    as a terminal shows it), whether scanf or read(2) reads."""
    for read in ('scanf("%d", &pa)', 'if (read(0, pbuf, sizeof pbuf - 1) > 0) sscanf(pbuf, "%d", &pa)'):
        reply, outputs = run(kc, '#include <unistd.h>\nint pa = 0; char pbuf[64] = {0};\n'
                                 'printf("reading\\ngive a: ");\n'
                                 f'{read};\nprintf("twice %d\\n", 2 * pa);',
                             allow_stdin=True, inputs=["21"])
        assert reply["status"] == "ok", reply
        requests = input_requests(outputs)
        assert [r["prompt"] for r in requests] == ["give a: "], requests
        # The line before it went out first (by the kernel's dates: iopub and
        # stdin are two sockets, which may deliver in either order); the
        # prompt is not repeated.
        sent = sorted(outputs, key=lambda o: o["date"])
        kinds = [(o["msg_type"], o.get("text", o.get("prompt"))) for o in sent]
        assert kinds[0] == ("stream", "reading\n"), kinds
        assert stdout(outputs) == "reading\ntwice 42\n", outputs


def test_raw_read_on_fd0_asks_the_frontend(kc):
    reply, outputs = run(kc, "#include <unistd.h>\n"
                             "char rbuf[32];\n"
                             "ssize_t rn = read(0, rbuf, sizeof rbuf);\n"
                             'printf("%zd [%.*s]\\n", rn, (int)rn, rbuf);',
                         allow_stdin=True, inputs=["abc"])
    assert reply["status"] == "ok"
    assert len(input_requests(outputs)) == 1
    assert stdout(outputs) == "4 [abc\n]\n"


def test_stdin_not_allowed_reads_end_of_file(kc):
    reply, outputs = run(kc, "#include <unistd.h>\n"
                             'printf("%d\\n", getchar());\n'
                             "char nbuf[8];\n"
                             'printf("%zd\\n", read(0, nbuf, sizeof nbuf));',
                         allow_stdin=False, timeout=10)
    assert reply["status"] == "ok"
    assert input_requests(outputs) == []
    assert stdout(outputs) == "-1\n0\n"


# ---------------------------------------------------------------- compiler magics


def test_cflags_default(kc):
    assert ok(kc, "%cflags") == DEFAULT_CFLAGS + "\n"


def test_cc_default(kc):
    assert ok(kc, "%cc") == (os.environ.get("CC") or "cc") + "\n"


def test_ldflags_default(kc):
    assert ok(kc, "%ldflags") == "-lm\n"


def test_cflags_can_be_changed(kc):
    try:
        assert ok(kc, "%cflags -O0 -g -DFOO=3") == ""
        assert ok(kc, "%cflags") == "-O0 -g -DFOO=3\n"
        assert ok(kc, 'printf("%d", FOO);') == "3"
    finally:
        ok(kc, "%cflags " + DEFAULT_CFLAGS)
    assert ok(kc, "%cflags") == DEFAULT_CFLAGS + "\n"


def test_ldflags_can_be_changed(kc):
    try:
        ok(kc, "%ldflags -lm -lpthread")
        assert ok(kc, "%ldflags") == "-lm -lpthread\n"
        assert ok(kc, 'printf("%.1f\\n", sqrt(2.25));') == "1.5\n"
    finally:
        ok(kc, "%ldflags -lm")


def test_bad_compiler_is_an_error_and_the_session_goes_on(kc):
    ok(kc, "int before_cc(void) { return 17; }")
    reply, outputs = fails(kc, "%cc nonexistent-cc", "MagicError")
    assert "nonexistent-cc" in reply["evalue"]
    assert ok(kc, "%cc") == (os.environ.get("CC") or "cc") + "\n"
    assert ok(kc, 'printf("%d\\n", before_cc());') == "17\n"


def test_timeit(kc):
    ok(kc, "int timeit_runs = 0;")
    out = ok(kc, "%%timeit -n 10 -r 3\ntimeit_runs++;\nfor (volatile int i = 0; i < 1000; i++);")
    assert re.search(r"per loop \(mean ± std\. dev\. of 3 runs, 10 loops each\)", out), out
    assert re.match(r"^\d+(\.\d+)? (ns|µs|ms|s) ± \d+(\.\d+)? (ns|µs|ms|s) per loop", out), out
    assert ok(kc, 'printf("%d\\n", timeit_runs);') == "30\n"


def test_lsmagic_lists_the_magics(kc):
    out = ok(kc, "%lsmagic")
    for name in ("%cc", "%cflags", "%ldflags", "%%timeit", "%reset", "%lsmagic", "%%profview",
                 "%profsave", "%profload", "%%profallocs"):
        assert name in out, f"{name} missing from %lsmagic:\n{out}"
    # Each magic's summary is a whole sentence, wrapped to fit a console.
    lines = out.splitlines()
    assert all(len(line) <= 90 for line in lines if line.startswith("      ")), out
    summaries = " ".join(line.strip() for line in lines if line.startswith("      "))
    assert "reporting the mean and standard deviation per loop, as IPython does." in summaries
    assert "(e.g. %cc clang)." in summaries
    assert "%NAME?" in lines[-1]


@pytest.mark.parametrize("code,usage", [
    ("%profview?", "%%profview [opts]"),
    ("%%timeit?\nhelp_kept++;", "%%timeit [-n N] [-r R]"),
    ("%profsave ??", "%profsave PATH [opts]"),
])
def test_magic_help(kc, code, usage):
    ok(kc, "int help_kept = 4;")
    out = ok(kc, code)
    assert out.startswith(usage), out
    # Nothing ran: a %%timeit help does not run its body.
    assert ok(kc, 'printf("%d\\n", help_kept);') == "4\n"


def test_magic_help_says_what_each_option_means_and_its_default(kc):
    """As IPython's magic help does: one line per option, its meaning and
    its default."""
    out = ok(kc, "%profview?")
    options = out.split("Options:\n", 1)[1].splitlines()
    keys = [line.split("=", 1)[0].strip() for line in options]
    for key in ("delay", "n", "threads", "C", "combine", "lines", "recur", "pruned", "filter",
                "minwidth", "width", "height", "title", "icicle", "theme"):
        assert key in keys, f"{key}= missing from %profview?:\n{out}"
    for line in options:
        assert re.match(r"  \S+=\S+ +\S", line), line
        assert "default" in line, f"no default in {line!r}"
    assert any(l.strip().startswith("C=true|false") and "system libraries" in l for l in options), out
    # Each magic lists the options it takes, and only those.
    diff = ok(kc, "%profdiffview?")
    assert "negate=true|false" in diff and "noise=X" in diff
    assert "negate=" not in out and "format=" not in out
    assert "Options:" not in ok(kc, "%cc?")


def test_help_on_an_unknown_magic_names_the_valid_ones(kc):
    reply, outputs = fails(kc, "%profveiw?", "MagicError")
    assert "unknown magic %profveiw" in reply["evalue"] and "%profview" in reply["evalue"]


def test_reset_forgets_definitions(fresh):
    km, kc = fresh
    ok(kc, "int reset_global = 5;\nint before_reset(void) { return 7; }")
    assert ok(kc, 'printf("%d %d\\n", reset_global, before_reset());') == "5 7\n"
    reply, outputs = run(kc, "%reset")
    assert reply["status"] == "ok"
    reply, outputs = fails(kc, 'printf("%d\\n", reset_global);', "CompileError")
    assert re.search(r"reset_global.{0,3} undeclared", "\n".join(reply["traceback"]))
    # gcc 12 only warns about the implicit declaration: then the missing
    # symbol is reported when the cell is loaded.
    reply, outputs = run(kc, 'printf("%d\\n", before_reset());', stop_on_error=False)
    assert reply["status"] == "error"
    assert reply["ename"] in ("CompileError", "LinkError")
    assert "before_reset" in reply["evalue"]
    assert ok(kc, 'printf("still fine\\n");') == "still fine\n"


# ---------------------------------------------------------------- odd cells


def test_cell_of_only_an_include_is_ok(kc):
    reply, outputs = run(kc, "#include <math.h>")
    assert reply["status"] == "ok"
    assert outputs == []


def test_cell_of_only_comments_is_ok(kc):
    for code in ("// just a comment", "/* a block\n   comment */", "", "\n\n"):
        reply, outputs = run(kc, code)
        assert reply["status"] == "ok", code
        assert outputs == [], code


def test_warnings_shown_and_cell_still_runs(kc):
    reply, outputs = run(kc, "int warn_fn(void) {\n  int unused_var;\n  return 0;\n}\nprintf(\"ran %d\\n\", warn_fn());")
    assert reply["status"] == "ok"
    assert errors(outputs) == []
    assert stdout(outputs) == "ran 0\n"
    err = stderr(outputs)
    assert "unused variable" in err and "unused_var" in err, err
    n = reply["execution_count"]
    assert f"cell[{n}]:2:" in err, err
