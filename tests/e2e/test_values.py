# SPDX-License-Identifier: BSD-3-Clause
"""The value of a cell's trailing expression, through the real kernel.

A cell whose last statement is an expression without ';' shows its value as
an execute_result (Out[n]) in the form "(TYPE) VALUE", the type being the
compiler's (read from the cell's DWARF in the worker); a ';' suppresses it,
as in IPython. docs/USAGE.md shows what a person sees."""
import re

import pytest

from conftest import fails, ok, run, run_full, start_kernel, stderr, stdout


def results(outputs):
    return [o for o in outputs if o["msg_type"] == "execute_result"]


def value(kc, code):
    """Runs a cell that must succeed and show exactly one value; returns its
    text/plain."""
    reply, outputs = run(kc, code)
    assert reply["status"] == "ok", (reply.get("ename"), reply.get("evalue"), reply.get("traceback"))
    res = results(outputs)
    assert len(res) == 1, f"{code!r}: expected one execute_result, got {outputs}"
    assert res[0]["execution_count"] == reply["execution_count"]
    return res[0]["data"]["text/plain"]


@pytest.fixture(scope="module")
def session(kc):
    ok(kc, "enum colour { RED, GREEN, BLUE };\n"
           "typedef struct { double alpha; int beta; } P;\n"
           "P pt = {1.5, 2};\n"
           "struct node { int v; struct node *next; };\n"
           "struct node n1 = {1, 0}, n2 = {2, 0};\n"
           "struct flags { unsigned ready : 1; int level : 4; unsigned mode : 3; };\n"
           "union num { int i; float f; };\n"
           "union bytes8 { char c[8]; long l; };\n"
           "int square(int x) { return x * x; }\n"
           "int values_seen = 0;\n"
           "int counted(void) { return ++values_seen; }\n")
    return kc


@pytest.mark.parametrize("code,shown", [
    ("40 + 2", "(int) 42"),
    ("sqrt(2.0)", "(double) 1.4142135623730951"),
    ("1.0f / 3", "(float) 0.33333334"),  # the shortest that reads back
    ("(unsigned char)200", "(unsigned char) 200"),
    ("-5L", "(long) -5"),
    ("1ULL << 63", "(unsigned long long) 9223372036854775808"),
    ("(short)-3", "(short) -3"),
    ("(_Bool)1", "(_Bool) true"),
    ("(char)'A'", "(char) 'A'"),
    ("(char)'\\n'", "(char) '\\n'"),
    ("(enum colour)1", "(enum colour) GREEN"),
    ("(enum colour)7", "(enum colour) 7"),
    ('"hello"', '(char[6]) "hello"'),
    ('(const char *)"a\\tb\\"c"', '(const char *) "a\\tb\\"c"'),
    ("(int[3]){7, 8, 9}", "(int[3]) { 7, 8, 9 }"),
    ("(int[2][2]){{1, 2}, {3, 4}}", "(int[2][2]) { { 1, 2 }, { 3, 4 } }"),
    ("pt", "(P) { .alpha = 1.5, .beta = 2 }"),
    ("(struct flags){1, -3, 5}", "(struct flags) { .ready = 1, .level = -3, .mode = 5 }"),
    ("(union num){.i = 1065353216}", "(union num) { .i = 1065353216, .f = 1 }"),
    ("square", "(int(int)) square"),
    ("(int (*)(int))square", "(int (*)(int)) square"),
    ("(void *)0", "(void *) 0x0"),
    # Bytes that are not UTF-8 are escaped as C writes them, so that the value
    # is shown (a JSON string must be UTF-8) and reads back as the same bytes.
    # An escape followed by a character that would extend it (a hex digit after
    # \xff) ends the literal, and the next one starts: "\xff" "a".
    ('"\\xff"', '(char[2]) "\\xff"'),
    ("(char)0xff", "(char) '\\xff'"),
    ("(char[3]){'A', (char)0xff}", '(char[3]) "A\\xff"'),
    ("(char[2]){(char)0xff, 'q'}", '(char[2]) "\\xffq"'),
    ('(const char *)"\\xfe\\xff"', '(const char *) "\\xfe\\xff"'),
    ('"caf\\xc3\\xa9"', '(char[6]) "caf\u00e9"'),  # UTF-8 passes through
    ('"\\xc3(\\xe2\\x82"', '(char[5]) "\\xc3(\\xe2\\x82"'),  # cut sequences
    ('"\\xed\\xa0\\x80"', '(char[4]) "\\xed\\xa0\\x80"'),  # a UTF-16 surrogate
    ('"\\xff" "a"', '(char[3]) "\\xff" "a"'),
    ('"\\x01" "2"', '(char[3]) "\\x01" "2"'),
    ('"\\xffz"', '(char[3]) "\\xffz"'),
    ("(union bytes8){.l = 0xF8}", '(union bytes8) { .c = "\\xf8", .l = 248 }'),
    # Each floating type prints in the shortest form that reads back as the
    # same value of that type: binary128 (_Float128, __float128) through
    # strfromf128, _Float16 through double, which holds it exactly.
    ("(_Float128)2.5", "(_Float128) 2.5"),
    ("(_Float128)1/3", "(_Float128) 0.3333333333333333333333333333333333"),
    ("(__float128)-2.5e-4000Q", "(_Float128) -2.5e-4000"),
    ("-(_Float128)1/0", "(_Float128) -inf"),
    ("(_Float16)2.5", "(_Float16) 2.5"),
    ("(_Float16)1/3", "(_Float16) 0.3333"),
    ("(_Float16)65504", "(_Float16) 6.55e+04"),  # as (double)100000 is 1e+05
    ("(_Float16)-6e-8", "(_Float16) -6e-08"),
    ("(long double)1/3", "(long double) 0.33333333333333333334"),
    ("(long double)0.1L", "(long double) 0.1"),
    ("(_Complex long double)1", "(complex long double) 1 + 0i"),
    ("(_Complex _Float128)(0.5 - 1.0i)", "(complex _Float128) 0.5 - 1i"),
    ("(_Complex _Float16)2.5", "(complex _Float16) 2.5 + 0i"),
])
def test_each_type_prints(session, code, shown):
    assert value(session, code) == shown


def test_escaped_values_read_back_as_the_same_bytes(session):
    for code in ['"\\xff" "a"', '"\\x01" "2"', '"A\\xfe\\xffF0\\x7f" "9"', '"\\xc3\\xa9\\xc3"',
                 '"\\t\\x1b[0m\\\\\\""']:
        shown = value(session, code)
        literal = shown.split(") ", 1)[1]
        assert value(session, f"sizeof({literal}) == sizeof({code}) && "
                              f"!memcmp({literal}, {code}, sizeof({code}))") == "(int) 1", shown
    assert value(session, "(char)0xff == " + value(session, "(char)0xff").split(") ", 1)[1]) == \
        "(int) 1"


def test_floating_values_read_back(session):
    # Compared as stored: C may compute _Float16 arithmetic, and even its
    # constants, in float.
    for i, (typ, code, suffix) in enumerate([
            ("_Float128", "(_Float128)1/3", "f128"), ("_Float128", "(_Float128)0.1", "f128"),
            ("_Float128", "(_Float128)2/3 * 1e300", "f128"), ("_Float16", "(_Float16)1/3", "f16"),
            ("_Float16", "(_Float16)0.1", "f16"), ("long double", "(long double)2/3", "L")]):
        text = value(session, code).split(") ", 1)[1]
        assert value(session, f"{typ} computed_{i} = {code}, read_back_{i} = {text}{suffix};\n"
                              f"computed_{i} == read_back_{i}") == "(int) 1", (code, text)


def test_pointers_show_address_and_type(session):
    text = value(session, "&pt")
    assert re.fullmatch(r"\(P \*\) 0x[0-9a-f]+", text), text
    text = value(session, "&n1")
    assert re.fullmatch(r"\(struct node \*\) 0x[0-9a-f]+", text), text


def test_a_cycle_prints_once(session):
    ok(session, "n1.next = &n2; n2.next = &n1;")
    text = value(session, "n1")
    assert re.fullmatch(r"\(struct node\) \{ \.v = 1, \.next = 0x[0-9a-f]+ \}", text), text
    assert value(session, "n1.next->next == &n1") == "(int) 1"


def test_output_is_bounded(session):
    # 200 elements, strings of 200 characters, runs of equal elements
    # counted, as gdb's print does.
    text = value(session, "(int[500]){1, [499] = 2}")
    assert text == "(int[500]) { 1, 0 <repeats 498 times>, 2 }", text
    ok(session, "int ramp[300]; for (int i = 0; i < 300; i++) ramp[i] = i;")
    text = value(session, "ramp")
    assert text.startswith("(int[300]) { 0, 1, 2, ") and text.endswith(", 199, ... }"), text
    ok(session, "char long_text[400]; memset(long_text, 'x', 399); long_text[399] = 0;")
    assert value(session, "long_text") == "(char[400]) \"" + "x" * 200 + "\"..."
    assert value(session, "(const char *)long_text") == "(const char *) \"" + "x" * 200 + "\"..."


def test_nesting_is_bounded(session):
    ok(session, "struct d4 { int v; }; struct d3 { struct d4 n; }; struct d2 { struct d3 n; };\n"
                "struct d1 { struct d2 n; }; struct d0 { struct d1 n; };\n"
                "struct e2 { struct d0 n; }; struct e1 { struct e2 n; }; struct e0 { struct e1 n; };\n"
                "struct f0 { struct e0 n; };")
    assert value(session, "(struct d0){{{{{7}}}}}") == \
        "(struct d0) { .n = { .n = { .n = { .n = { .v = 7 } } } } }"
    text = value(session, "(struct f0){0}")
    assert text == "(struct f0) { .n = { .n = { .n = { .n = { .n = { .n = { .n = { .n = {...} } } } } } } } }", text
    text = value(session, "(int[2][1][1][1][1][1][1][1][1][2]){0}")
    assert text.count("{...}") == 2 and text.startswith("(int[2][1][1][1][1][1][1][1][1][2]) { {"), text


def test_semicolon_suppresses_the_value(session):
    reply, outputs = run(session, "40 + 2;")
    assert reply["status"] == "ok" and results(outputs) == []


def test_statements_run_before_the_value_and_once(session):
    text_before = ok(session, "printf(\"%d\\n\", values_seen);")
    reply, outputs = run(session, 'printf("first\\n");\ncounted(), printf("x\\n"), values_seen')
    assert reply["status"] == "ok"
    assert stdout(outputs) == "first\nx\n"
    assert results(outputs)[0]["data"]["text/plain"] == f"(int) {int(text_before) + 1}"
    # The value comes after the cell's output.
    kinds = [o["msg_type"] for o in outputs]
    assert kinds.index("execute_result") > max(i for i, k in enumerate(kinds) if k == "stream")


def test_a_void_expression_shows_nothing(session):
    reply, outputs = run(session, 'puts("void call"), (void)0')
    assert reply["status"] == "ok" and results(outputs) == []
    assert stdout(outputs) == "void call\n"


def test_a_bad_pointer_is_reported_and_the_worker_lives(session):
    reply, outputs = run(session, "(char *)0x10")
    assert reply["status"] == "ok"
    assert value(session, "(char *)0x10") == "(char *) 0x10 <cannot read memory there>"
    # The session keeps its definitions and its globals.
    assert value(session, "pt.beta") == "(int) 2"


def test_an_unprintable_value_says_why_and_still_runs(session):
    # A bit-field is a value C's typeof cannot take: the statement runs,
    # and the output says why no value is shown.
    ok(session, "struct flags fl = {1, 2, 3}; int ran_anyway = 0;")
    reply, outputs = run(session, "ran_anyway = 1;\nfl.level")
    assert reply["status"] == "ok" and results(outputs) == []
    assert "the value of the cell's last expression is not shown" in stderr(outputs)
    assert "bit-field" in stderr(outputs)
    assert value(session, "ran_anyway") == "(int) 1"
    # Its value through an expression GCC can type has a type C cannot name.
    assert value(session, "(0, fl.level)") in ("(int : 4) 2", "(int) 2")


def test_errors_in_the_expression_are_reported_once(session):
    reply, outputs = fails(session, "undeclared_thing + 1", "CompileError")
    text = "\n".join(reply["traceback"])
    assert text.count("undeclared_thing") <= 2, text  # the message and its quoted line
    reply, outputs = fails(session, "int m = 1;\nm = m +  \n", "CompileError")
    n = reply["execution_count"]
    assert f"cell[{n}]:2:8: error: expected expression at the end of the cell" in reply["traceback"]


def test_value_under_profview_follows_the_graph(session):
    reply, outputs = run(session, "%%profview\n"
                                  "long work(long n) { long s = 0; for (long i = 0; i < n; i++) "
                                  "s += i % 7; return s; }\n"
                                  "work(30000000)", timeout=120)
    want = sum(range(7)) * (30000000 // 7) + sum(range(30000000 % 7))
    assert reply["status"] == "ok", reply
    kinds = [o["msg_type"] for o in outputs]
    assert "display_data" in kinds and "execute_result" in kinds, kinds
    assert kinds.index("display_data") < kinds.index("execute_result")
    assert results(outputs)[0]["data"]["text/plain"] == f"(long) {want}"


def test_statement_magic_value(session):
    text = value(session, "%profile square(12)")
    assert text == "(int) 144"


def test_timeit_shows_times_not_values(session):
    reply, outputs = run(session, "%%timeit -n 3 -r 2\nsquare(3)")
    assert reply["status"] == "ok" and results(outputs) == []
    assert "per loop" in stdout(outputs)


def test_silent_execution_shows_no_value(session):
    r = run_full(session, "square(5)", silent=True, store_history=False)
    assert r.reply["status"] == "ok"
    assert results(r.outputs) == []


def test_clang_and_missing_debug_information(fresh):
    km, kc = fresh
    ok(kc, "%cc clang")
    assert value(kc, "struct Q { int a; double b; } q = {1, 2.5}; q") == \
        "(struct Q) { .a = 1, .b = 2.5 }"
    assert value(kc, "(char)65") == "(char) 'A'"
    ok(kc, "%cflags -O2")
    reply, outputs = run(kc, "6 * 7")
    assert reply["status"] == "ok" and results(outputs) == []
    assert "without debugging information (-g)" in stderr(outputs)


def test_a_huge_value_is_not_copied_and_the_session_keeps_its_globals():
    # The value of *hb is 100 MB, more than a value may have to be shown:
    # it is computed but never copied (a copy on the stack overflowed it),
    # the output says why nothing is shown, and the worker lives on.
    with start_kernel(memory=2 << 30) as (km, kc):
        ok(kc, "struct huge { char head[8]; char rest[100 << 20]; };\n"
               "struct huge *hb;\nint kept_global = 1;\nint huge_seen = 0;\n"
               "struct huge *seen(struct huge *p) { huge_seen++; return p; }")
        ok(kc, 'hb = calloc(1, sizeof *hb); strcpy(hb->head, "start"); kept_global = 2;')
        reply, outputs = run(kc, "*seen(hb)", timeout=60)
        assert reply["status"] == "ok", reply
        assert results(outputs) == [], outputs
        note = stderr(outputs)
        assert "the value of the cell's last expression is not shown" in note, note
        assert "104857608 bytes" in note and "1048576" in note, note
        assert value(kc, "kept_global") == "(int) 2"
        assert value(kc, "huge_seen") == "(int) 1"  # evaluated once
        assert value(kc, "hb->head") == '(char[8]) "start"'
        # An array decays: its start is shown, up to the element bound.
        ok(kc, "int *ramp_big = malloc(30000000 * sizeof *ramp_big);\n"
               "for (int i = 0; i < 30000000; i++) ramp_big[i] = i;")
        text = value(kc, "*(int (*)[30000000])ramp_big")
        assert text.startswith("(int[30000000]) { 0, 1, 2, ") and text.endswith(", 199, ... }"), text
        # A larger array is read as far as the bound, and says so.
        text = value(kc, "*(struct huge (*)[2])hb")
        assert text == ('(struct huge[2]) { { .head = "start", .rest = ""... }, ... } '
                        '<only the first 1048576 of 209715216 bytes were read>'), text
        assert ok(kc, 'printf("%d\\n", kept_global);') == "2\n"


def test_the_kernels_value_code_warns_of_nothing(fresh):
    # The value code asks the size of a function type, which -Wpedantic
    # warns of; the warning is the kernel's business, not the cell's.
    km, kc = fresh
    ok(kc, "%cflags -g -Wall -Wextra -Wpedantic")
    reply, outputs = run(kc, "int twice(int x) { return 2 * x; }\ntwice")
    assert results(outputs)[0]["data"]["text/plain"] == "(int(int)) twice"
    assert stderr(outputs) == ""
