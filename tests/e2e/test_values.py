"""The value of a cell's trailing expression, through the real kernel.

A cell whose last statement is an expression without ';' shows its value as
an execute_result (Out[n]) in the form "(TYPE) VALUE", the type being the
compiler's (read from the cell's DWARF in the worker); a ';' suppresses it,
as in IPython. docs/USAGE.md shows what a person sees."""
import re

import pytest

from conftest import fails, ok, run, run_full, stderr, stdout


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
])
def test_each_type_prints(session, code, shown):
    assert value(session, code) == shown


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
