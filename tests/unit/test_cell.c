/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for kn_cell: a table of tricky cells (braces and semicolons in
 * strings, chars and comments; function pointers; multi-declarator globals;
 * structs with trailing variables; K&R and attribute-laden functions;
 * preprocessor continuations and groups; unbalanced input) checked item by
 * item, then the GLOBAL and FUNC fields, positions, typedef names, and
 * kn_cell_completeness. */
#include "kn_cell.h"

#include "test.h"

#include "kn_text.h"

static const char *kind_name(kn_item_kind_t k) {
  static const char *const names[] = {"PREPROC", "TYPE",   "FUNC", "PROTO",
                                      "EXTERN",  "GLOBAL", "STMT"};
  return names[k];
}

/* One line per item: "KIND name|text", name "-" when NULL. */
static char *summary(const kn_items_t *items) {
  fl__buf_t sb = FL__BUF_INIT;
  for (size_t i = 0; i < items->n; i++) {
    const kn_item_t *it = &items->items[i];
    fl__buf_printf(&sb, "%s %s|%s\n", kind_name(it->kind), it->name ? it->name : "-", it->text);
  }
  return fl__buf_take(&sb);
}

typedef struct split_case {
  const char *code;
  const char *want; /* summary() of the items */
} split_case_t;

static const split_case_t split_cases[] = {
    /* the basics */
    {"int main(void) { return 0; }", "FUNC main|int main(void) { return 0; }\n"},
    {"int x = f(3);", "GLOBAL x|int x = f(3);\n"},
    {"int a[] = {1,2,3};", "GLOBAL a|int a[] = {1,2,3};\n"},
    {"x = 3;", "STMT -|x = 3;\n"},
    {"*p = 4;", "STMT -|*p = 4;\n"},
    {"++i;", "STMT -|++i;\n"},
    {"f();", "STMT -|f();\n"},
    {"i--; x += 2; a[1] = 3; s.f = 1; p->g = 2;",
     "STMT -|i--;\nSTMT -|x += 2;\nSTMT -|a[1] = 3;\nSTMT -|s.f = 1;\nSTMT -|p->g = 2;\n"},
    {"(void)f(); \"lit\"; 42;", "STMT -|(void)f();\nSTMT -|\"lit\";\nSTMT -|42;\n"},
    {"size_t n = 10;", "GLOBAL n|size_t n = 10;\n"},
    {"my_t *p = NULL;", "GLOBAL p|my_t *p = NULL;\n"},
    {"my_t v;", "GLOBAL v|my_t v;\n"},
    {"my_t **pp, *q;", "GLOBAL pp|my_t **pp, *q;\nGLOBAL q|my_t **pp, *q;\n"},
    {"node_t *mk(int v);", "PROTO mk|node_t *mk(int v);\n"},
    {"vec add(vec a, vec b) { return a; }", "FUNC add|vec add(vec a, vec b) { return a; }\n"},
    {"a * b + c;", "STMT -|a * b + c;\n"},
    {"x ? f() : g();", "STMT -|x ? f() : g();\n"},
    {"sizeof x; sizeof(int);", "STMT -|sizeof x;\nSTMT -|sizeof(int);\n"},
    /* control flow */
    {"for (int i = 0; i < 3; i++) printf(\"%d\", i);",
     "STMT -|for (int i = 0; i < 3; i++) printf(\"%d\", i);\n"},
    {"if (x) a(); else b();", "STMT -|if (x) a(); else b();\n"},
    {"if (x) a(); b();", "STMT -|if (x) a();\nSTMT -|b();\n"},
    {"if (a)\n  if (b) x(); else y();\nelse\n  z();\nw();",
     "STMT -|if (a)\n  if (b) x(); else y();\nelse\n  z();\nSTMT -|w();\n"},
    {"if (a) x(); else if (b) y(); else if (c) z(); else { w(); }",
     "STMT -|if (a) x(); else if (b) y(); else if (c) z(); else { w(); }\n"},
    {"do { x++; } while (x < 3);", "STMT -|do { x++; } while (x < 3);\n"},
    {"do x++; while (x < 3); y();", "STMT -|do x++; while (x < 3);\nSTMT -|y();\n"},
    {"while (x--) { f(); } g();", "STMT -|while (x--) { f(); }\nSTMT -|g();\n"},
    {"for (;;) for (;;) break;", "STMT -|for (;;) for (;;) break;\n"},
    {"switch (x) { case 1: f(); break; default: g(); }",
     "STMT -|switch (x) { case 1: f(); break; default: g(); }\n"},
    {"label: x++;", "STMT -|label: x++;\n"},
    {"goto end; end: ;", "STMT -|goto end;\nSTMT -|end: ;\n"},
    {"{ int t = 1; }", "STMT -|{ int t = 1; }\n"},
    {"return 0;", "STMT -|return 0;\n"},
    {"x = ({ int t = 3; t; }); p = (struct P){1, 2};",
     "STMT -|x = ({ int t = 3; t; });\nSTMT -|p = (struct P){1, 2};\n"},
    /* braces, semicolons and quotes inside literals and comments */
    {"printf(\"}{;\");", "STMT -|printf(\"}{;\");\n"},
    {"printf(\"\\\"}\\\\\"); x = 1;", "STMT -|printf(\"\\\"}\\\\\");\nSTMT -|x = 1;\n"},
    {"char a = '{'; char b = ';'; char c = '\\'';",
     "GLOBAL a|char a = '{';\nGLOBAL b|char b = ';';\nGLOBAL c|char c = '\\'';\n"},
    {"f(); // } ;\ng(); /* ; { */ h();", "STMT -|f();\nSTMT -|g();\nSTMT -|h();\n"},
    {"f(1 /* ) */, 2); // {", "STMT -|f(1 /* ) */, 2);\n"},
    {"int f(void) {\n  // }\n  return '}';\n}", "FUNC f|int f(void) {\n  // }\n  return '}';\n}\n"},
    {"puts(L\"{\"); puts(u8\"}\"); puts(U\"{\"); x = u'}';",
     "STMT -|puts(L\"{\");\nSTMT -|puts(u8\"}\");\nSTMT -|puts(U\"{\");\nSTMT -|x = u'}';\n"},
    {"puts(\"h\xc3\xa9llo {\");", "STMT -|puts(\"h\xc3\xa9llo {\");\n"},
    {"s = \"a\\\nb;\"; t();", "STMT -|s = \"a\\\nb;\";\nSTMT -|t();\n"},
    {"\n\n  /* lead */ // more\n\nx = 1;  \n\n", "STMT -|x = 1;\n"},
    {"", ""},
    {"  // only a comment\n", ""},
    {";;", ""},
    /* declarations */
    {"typedef struct node { int v; struct node *next; } node_t;",
     "TYPE node_t|typedef struct node { int v; struct node *next; } node_t;\n"},
    {"struct P { int x, y; } p1, p2 = {1, 2};",
     "TYPE struct P|struct P { int x, y; };\n"
     "GLOBAL p1|struct P { int x, y; } p1, p2 = {1, 2};\n"
     "GLOBAL p2|struct P { int x, y; } p1, p2 = {1, 2};\n"},
    {"struct { int a; } anon;", "GLOBAL anon|struct { int a; } anon;\n"},
    {"struct P { int x; };", "TYPE struct P|struct P { int x; };\n"},
    {"struct fwd;", "TYPE struct fwd|struct fwd;\n"},
    {"enum color { RED, GREEN };", "TYPE enum color|enum color { RED, GREEN };\n"},
    {"enum { K1 = 3, K2 };", "TYPE -|enum { K1 = 3, K2 };\n"},
    {"union U { int i; float f; } u;",
     "TYPE union U|union U { int i; float f; };\nGLOBAL u|union U { int i; float f; } u;\n"},
    {"struct Q { char c; int i; } __attribute__((packed)) q;",
     "TYPE struct Q|struct Q { char c; int i; } __attribute__((packed));\n"
     "GLOBAL q|struct Q { char c; int i; } __attribute__((packed)) q;\n"},
    {"typedef enum { A, B } ab_t;", "TYPE ab_t|typedef enum { A, B } ab_t;\n"},
    {"typedef int (*cmp_t)(const void *, const void *);",
     "TYPE cmp_t|typedef int (*cmp_t)(const void *, const void *);\n"},
    {"typedef int a_t, *b_t; a_t x; b_t y;",
     "TYPE a_t|typedef int a_t, *b_t;\nGLOBAL x|a_t x;\nGLOBAL y|b_t y;\n"},
    {"int (*fp)(int) = abs;", "GLOBAL fp|int (*fp)(int) = abs;\n"},
    {"void (*handlers[4])(int);", "GLOBAL handlers|void (*handlers[4])(int);\n"},
    {"int f(int), g(void);", "PROTO f|int f(int);\nPROTO g|int g(void);\n"},
    {"int f(void);", "PROTO f|int f(void);\n"},
    {"int x, f(void);", "GLOBAL x|int x, f(void);\nPROTO f|int f(void);\n"},
    {"struct S { int a; } mk(void);",
     "TYPE struct S|struct S { int a; };\nPROTO mk|struct S mk(void);\n"},
    {"int printf(const char *, ...);", "PROTO printf|int printf(const char *, ...);\n"},
    {"void die(const char *m) __attribute__((noreturn));",
     "PROTO die|void die(const char *m) __attribute__((noreturn));\n"},
    {"extern int errno_like;", "EXTERN errno_like|extern int errno_like;\n"},
    {"extern int e1, e2[];", "EXTERN e1|extern int e1, e2[];\n"},
    {"extern void ef(void);", "PROTO ef|extern void ef(void);\n"},
    {"int x, y = 2, *z = &x;",
     "GLOBAL x|int x, y = 2, *z = &x;\nGLOBAL y|int x, y = 2, *z = &x;\n"
     "GLOBAL z|int x, y = 2, *z = &x;\n"},
    {"static const int n = 10;", "GLOBAL n|static const int n = 10;\n"},
    {"_Thread_local int tl;", "GLOBAL tl|_Thread_local int tl;\n"},
    {"__thread int tl;", "GLOBAL tl|__thread int tl;\n"},
    {"unsigned long long big = 1ULL << 40;", "GLOBAL big|unsigned long long big = 1ULL << 40;\n"},
    {"int m[3][3] = {{1}, {2}};", "GLOBAL m|int m[3][3] = {{1}, {2}};\n"},
    {"double *a = malloc(n * sizeof *a);", "GLOBAL a|double *a = malloc(n * sizeof *a);\n"},
    {"_Static_assert(sizeof(int) == 4, \"int\");",
     "STMT -|_Static_assert(sizeof(int) == 4, \"int\");\n"},
    /* functions */
    {"void (*signal_like(int sig, void (*h)(int)))(int) { return h; }",
     "FUNC signal_like|void (*signal_like(int sig, void (*h)(int)))(int) { return h; }\n"},
    {"__attribute__((noinline)) static int g(void) { return 1; }",
     "FUNC g|__attribute__((noinline)) static int g(void) { return 1; }\n"},
    {"static inline int sq(int x) { return x * x; }",
     "FUNC sq|static inline int sq(int x) { return x * x; }\n"},
    {"int __attribute__((hot)) hot(void) { return 0; }",
     "FUNC hot|int __attribute__((hot)) hot(void) { return 0; }\n"},
    {"int (paren)(int x) { return x; }", "FUNC paren|int (paren)(int x) { return x; }\n"},
    {"int (*getarr(void))[3] { return 0; }", "FUNC getarr|int (*getarr(void))[3] { return 0; }\n"},
    {"int knr(a, b) int a; char *b; { return a; } x = 1;",
     "FUNC knr|int knr(a, b) int a; char *b; { return a; }\nSTMT -|x = 1;\n"},
    {"int f(void) { return 1; };\ng();", "FUNC f|int f(void) { return 1; }\nSTMT -|g();\n"},
    {"struct P mkp(int x) {\n  struct P p = {x};\n  return p;\n}\n",
     "FUNC mkp|struct P mkp(int x) {\n  struct P p = {x};\n  return p;\n}\n"},
    /* preprocessor */
    {"#include <stdio.h>", "PREPROC -|#include <stdio.h>\n"},
    {"#include \"a.h\" // note\nx;", "PREPROC -|#include \"a.h\" // note\nSTMT -|x;\n"},
    {"#define SQ(x) \\\n ((x)*(x))\nint y;",
     "PREPROC SQ|#define SQ(x) \\\n ((x)*(x))\nGLOBAL y|int y;\n"},
    {"  #  define N 3 /* a\n  b */\nx;", "PREPROC N|#  define N 3 /* a\n  b */\nSTMT -|x;\n"},
    {"#ifdef X\nint a;\n#endif", "PREPROC -|#ifdef X\nint a;\n#endif\n"},
    {"#if A\n#if B\n{\n#endif\n#else\nx;\n#endif\ny;",
     "PREPROC -|#if A\n#if B\n{\n#endif\n#else\nx;\n#endif\nSTMT -|y;\n"},
    {"#undef N\n#pragma once", "PREPROC -|#undef N\nPREPROC -|#pragma once\n"},
    {"#error don't\nx;", "PREPROC -|#error don't\nSTMT -|x;\n"},
    {"#endif\nx;", "STMT -|#endif\nSTMT -|x;\n"},
    {"#ifdef X\nint a;\n", "STMT -|#ifdef X\nint a;\n"},
    {"x = 1; # define N 2\n", "STMT -|x = 1;\nSTMT -|# define N 2\n"}, /* not first on its line */
    {"void f(void) {\n#ifdef X\n  g();\n#endif\n}",
     "FUNC f|void f(void) {\n#ifdef X\n  g();\n#endif\n}\n"},
    {"#pragma omp parallel for\nfor (int i = 0; i < n; i++)\n  a[i] = i;\nx;",
     "STMT -|#pragma omp parallel for\nfor (int i = 0; i < n; i++)\n  a[i] = i;\nSTMT -|x;\n"},
    {"#pragma GCC unroll 4\n#pragma GCC ivdep\nfor (;;) { f(); }",
     "STMT -|#pragma GCC unroll 4\n#pragma GCC ivdep\nfor (;;) { f(); }\n"},
    {"#pragma omp declare simd\nint f(int x);",
     "PREPROC -|#pragma omp declare simd\nPROTO f|int f(int x);\n"},
    {"#pragma pack(1)\nx = 1;", "PREPROC -|#pragma pack(1)\nSTMT -|x = 1;\n"},
    {"_Pragma(\"omp parallel for\") for (;;) { a; b; } c;",
     "STMT -|_Pragma(\"omp parallel for\") for (;;) { a; b; }\nSTMT -|c;\n"},
    /* unbalanced or unrecognised: a STMT, never a crash */
    {"int f( {", "STMT -|int f( {\n"},
    {"}", "STMT -|}\n"},
    {"x = 1; } y = 2;\n\n", "STMT -|x = 1;\nSTMT -|} y = 2;\n"},
    {"f(];", "STMT -|f(];\n"},
    {"int x = 3", "STMT -|int x = 3\n"},
    {"if (x", "STMT -|if (x\n"},
    {"do { } while", "STMT -|do { } while\n"},
    {"int;", "STMT -|int;\n"},
    {"int = 3; y;", "STMT -|int = 3;\nSTMT -|y;\n"},
    {"int x { 3 } y;", "STMT -|int x { 3 }\nSTMT -|y;\n"},
    {"x = \"open", "STMT -|x = \"open\n"},
    {"/* open", ""},
    {"struct P { int x;", "STMT -|struct P { int x;\n"},
    {"typedef int t_t { }", "STMT -|typedef int t_t { }\n"},
};

static void test_split_table(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(split_cases); i++) {
    kn_items_t items;
    CHECK_INT(kn_cell_split(split_cases[i].code, NULL, 1, &items), 0);
    char *got = summary(&items);
    if (strcmp(got, split_cases[i].want) != 0)
      fprintf(stderr, "case %zu: code:\n%s\n", i, split_cases[i].code);
    CHECK_STR(got, split_cases[i].want);
    free(got);
    kn_items_free(&items);
    CHECK(items.items == NULL && items.n == 0);
  }
}

/* The first item of that kind named name, or NULL (saying so on stderr). */
static const kn_item_t *find(const kn_items_t *items, kn_item_kind_t kind, const char *name) {
  for (size_t i = 0; i < items->n; i++) {
    const kn_item_t *it = &items->items[i];
    if (it->kind == kind && it->name && strcmp(it->name, name) == 0) return it;
  }
  fprintf(stderr, "no %s named %s\n", kind_name(kind), name);
  return NULL;
}

typedef struct global_case {
  const char *code, *name;
  const char *decl, *decl_mutable, *init;
  bool init_is_static, unsized, is_static, thread_local;
} global_case_t;

static const global_case_t global_cases[] = {
    {"int x = f(3);", "x", "int x", "int x", "f(3)", false, false, false, false},
    {"int a[] = {1,2,3};", "a", "int a[]", "int a[]", "{1,2,3}", true, true, false, false},
    {"char s[] = \"hi\";", "s", "char s[]", "char s[]", "\"hi\"", true, true, false, false},
    {"const char *msg = \"a\" \"b\";", "msg", "const char *msg", "const char *msg", "\"a\" \"b\"",
     true, false, false, false},
    {"static const int n = 10;", "n", "const int n", "int n", "10", false, false, true, false},
    {"int const k = 1;", "k", "int const k", "int k", "1", false, false, false, false},
    {"char *const cp = buf;", "cp", "char *const cp", "char *cp", "buf", false, false, false,
     false},
    {"const char *const names[] = {\"a\"};", "names", "const char *const names[]",
     "const char *names[]", "{\"a\"}", true, true, false, false},
    {"int (*const fpc)(int) = abs;", "fpc", "int (*const fpc)(int)", "int (*fpc)(int)", "abs",
     false, false, false, false},
    {"const int (*pa)[3];", "pa", "const int (*pa)[3]", "const int (*pa)[3]", NULL, false, false,
     false, false},
    {"static double *a = malloc(n * sizeof *a);", "a", "double *a", "double *a",
     "malloc(n * sizeof *a)", false, false, true, false},
    {"int m[3][3];", "m", "int m[3][3]", "int m[3][3]", NULL, false, false, false, false},
    {"int u[][2] = {{1, 2}};", "u", "int u[][2]", "int u[][2]", "{{1, 2}}", true, true, false,
     false},
    {"struct P { int x, y; } p1, p2 = {1, 2};", "p1", "struct P p1", "struct P p1", NULL, false,
     false, false, false},
    {"struct P { int x, y; } p1, p2 = {1, 2};", "p2", "struct P p2", "struct P p2", "{1, 2}", true,
     false, false, false},
    {"static const struct P { int x; } cp1 = {1};", "cp1", "const struct P cp1", "struct P cp1",
     "{1}", true, false, true, false},
    {"struct { int a; } anon;", "anon", "struct { int a; } anon", "struct { int a; } anon", NULL,
     false, false, false, false},
    {"struct {\n  int a; // the a\n  const char *b;\n} multi;", "multi",
     "struct { int a; const char *b; } multi", "struct { int a; const char *b; } multi", NULL,
     false, false, false, false},
    {"int (*fp)(int) = abs;", "fp", "int (*fp)(int)", "int (*fp)(int)", "abs", false, false, false,
     false},
    {"int x, y = 2, *z = &x;", "z", "int *z", "int *z", "&x", false, false, false, false},
    {"int x, y = 2, *z = &x;", "y", "int y", "int y", "2", false, false, false, false},
    {"_Thread_local int tl;", "tl", "_Thread_local int tl", "_Thread_local int tl", NULL, false,
     false, false, true},
    {"static __thread int tl2 = 5;", "tl2", "__thread int tl2", "__thread int tl2", "5", false,
     false, true, true},
    {"register int r; auto int au;", "r", "int r", "int r", NULL, false, false, false, false},
    {"int al __attribute__((aligned(16))) = 3;", "al", "__attribute__((aligned(16))) int al",
     "__attribute__((aligned(16))) int al", "3", false, false, false, false},
    {"int renamed __asm__(\"other\");", "renamed", "int renamed", "int renamed", NULL, false, false,
     false, false},
    {"pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;", "mu", "pthread_mutex_t mu",
     "pthread_mutex_t mu", "PTHREAD_MUTEX_INITIALIZER", true, false, false, false},
    {"atomic_int c = ATOMIC_VAR_INIT(0);", "c", "atomic_int c", "atomic_int c",
     "ATOMIC_VAR_INIT(0)", true, false, false, false},
    {"int lim = MAX_LEN;", "lim", "int lim", "int lim", "MAX_LEN", false, false, false, false},
    {"int /* count */ cnt = /* three */ 3 /* ! */;", "cnt", "int cnt", "int cnt", "3", false, false,
     false, false},
    {"struct P p = { .x = 1,\n  .y = 2 };", "p", "struct P p", "struct P p",
     "{ .x = 1,\n  .y = 2 }", true, false, false, false},
    {"int x = (struct P){1}.x;", "x", "int x", "int x", "(struct P){1}.x", false, false, false,
     false},
};

static void test_globals(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(global_cases); i++) {
    const global_case_t *c = &global_cases[i];
    kn_items_t items;
    kn_cell_split(c->code, NULL, 1, &items);
    const kn_item_t *it = find(&items, KN_ITEM_GLOBAL, c->name);
    CHECK(it != NULL);
    if (it) {
      CHECK_STR(it->decl, c->decl);
      CHECK_STR(it->decl_mutable, c->decl_mutable);
      CHECK_STR(it->init, c->init);
      CHECK_INT(it->init_is_static, c->init_is_static);
      CHECK_INT(it->is_array_unsized, c->unsized);
      CHECK_INT(it->is_static, c->is_static);
      CHECK_INT(it->is_thread_local, c->thread_local);
      if (!c->init) CHECK_INT(it->init_line, 0);
    }
    kn_items_free(&items);
  }
}

typedef struct func_case {
  const char *code, *name, *signature, *definition;
  bool is_static, is_inline;
} func_case_t;

static const func_case_t func_cases[] = {
    {"int main(void) { return 0; }", "main", "int main(void)", "int main(void) { return 0; }",
     false, false},
    {"__attribute__((noinline)) static int g(void) { return 1; }", "g",
     "__attribute__((noinline))        int g(void)",
     "__attribute__((noinline))        int g(void) { return 1; }", true, false},
    {"static inline int sq(int x) { return x * x; }", "sq", "       inline int sq(int x)",
     "       inline int sq(int x) { return x * x; }", true, true},
    {"__inline__ int q(void) {\n  static int calls;\n  return ++calls;\n}", "q",
     "__inline__ int q(void)",
     "__inline__ int q(void) {\n  static int calls;\n  return ++calls;\n}", false, true},
    {"int f(int a[static 3]) { return a[0]; }", "f", "int f(int a[static 3])",
     "int f(int a[static 3]) { return a[0]; }", false, false},
    {"int cf(void) // c\n{ return 2; }", "cf", "int cf(void)", "int cf(void) // c\n{ return 2; }",
     false, false},
    {"static\nint\nml(int a,\n   int b) /* body: */\n{\n  return a + b;\n}", "ml",
     "      \nint\nml(int a,\n   int b)",
     "      \nint\nml(int a,\n   int b) /* body: */\n{\n  return a + b;\n}", true, false},
    {"int knr(a, b) int a; char *b; { return a; }", "knr", "int knr(    )",
     "int knr(a, b) int a; char *b; { return a; }", false, false},
    {"int old(a) { return a; }", "old", "int old( )", "int old(a) { return a; }", false, false},
    {"void (*signal_like(int sig, void (*h)(int)))(int) { return h; }", "signal_like",
     "void (*signal_like(int sig, void (*h)(int)))(int)",
     "void (*signal_like(int sig, void (*h)(int)))(int) { return h; }", false, false},
    {"static _Noreturn void die(void) { for (;;); }", "die", "       _Noreturn void die(void)",
     "       _Noreturn void die(void) { for (;;); }", true, false},
    {"my_t *mk(size_t n) { return 0; }", "mk", "my_t *mk(size_t n)",
     "my_t *mk(size_t n) { return 0; }", false, false},
};

static void test_funcs(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(func_cases); i++) {
    const func_case_t *c = &func_cases[i];
    kn_items_t items;
    kn_cell_split(c->code, NULL, 1, &items);
    CHECK_INT(items.n, 1);
    const kn_item_t *it = find(&items, KN_ITEM_FUNC, c->name);
    CHECK(it != NULL);
    if (it) {
      CHECK_STR(it->text, c->code);
      CHECK_STR(it->signature, c->signature);
      CHECK_STR(it->definition, c->definition);
      CHECK_INT(strlen(it->definition), strlen(it->text));
      CHECK_INT(it->is_static, c->is_static);
      CHECK_INT(it->is_inline, c->is_inline);
    }
    kn_items_free(&items);
  }
}

/* Lines and columns of items and initializers in a multi-line cell, with and
 * without a first_line offset (the body after magic lines). */
static void test_positions(void) {
  const char *code =
      "#include <stdio.h>\n"              /* 1 */
      "\n"                                /* 2 */
      "int counter = 0, *pc =\n"          /* 3 */
      "    &counter;\n"                   /* 4 */
      "  /* a comment */ int sq(int x)\n" /* 5 */
      "{\n"                               /* 6 */
      "  return x * x;\n"                 /* 7 */
      "}\n"                               /* 8 */
      "for (int i = 0;\n"                 /* 9 */
      "     i < 3; i++)\n"                /* 10 */
      "  counter += sq(i); x = 1;\n"      /* 11 */
      "\tstruct T { int t; } tv = {\n"    /* 12 */
      "  7 };\n";                         /* 13 */
  for (int first = 1; first <= 4; first += 3) {
    int off = first - 1;
    kn_items_t items;
    kn_cell_split(code, NULL, first, &items);
    CHECK_INT(items.n, 8);
    if (items.n == 8) {
      const kn_item_t *v = items.items;
      CHECK_INT(v[0].kind, KN_ITEM_PREPROC);
      CHECK_INT(v[0].line, 1 + off);
      CHECK_INT(v[0].col, 1);
      CHECK_INT(v[1].kind, KN_ITEM_GLOBAL);
      CHECK_STR(v[1].name, "counter");
      CHECK_INT(v[1].line, 3 + off);
      CHECK_INT(v[1].col, 1);
      CHECK_INT(v[1].init_line, 3 + off);
      CHECK_INT(v[1].init_col, 15);
      CHECK_STR(v[2].name, "pc");
      CHECK_STR(v[2].init, "&counter");
      CHECK_INT(v[2].init_line, 4 + off);
      CHECK_INT(v[2].init_col, 5);
      CHECK_STR(v[2].text, "int counter = 0, *pc =\n    &counter;");
      CHECK_INT(v[3].kind, KN_ITEM_FUNC);
      CHECK_INT(v[3].line, 5 + off);
      CHECK_INT(v[3].col, 19);
      CHECK_STR(v[3].signature, "int sq(int x)");
      CHECK_INT(v[4].kind, KN_ITEM_STMT);
      CHECK_INT(v[4].line, 9 + off);
      CHECK_STR(v[4].text, "for (int i = 0;\n     i < 3; i++)\n  counter += sq(i);");
      CHECK_INT(v[5].line, 11 + off);
      CHECK_INT(v[5].col, 21);
      CHECK_INT(v[6].kind, KN_ITEM_TYPE);
      CHECK_STR(v[6].text, "struct T { int t; };");
      CHECK_INT(v[6].line, 12 + off);
      CHECK_INT(v[6].col, 2);
      CHECK_INT(v[7].kind, KN_ITEM_GLOBAL);
      CHECK_INT(v[7].line, 12 + off);
      CHECK_INT(v[7].col, 2);
      CHECK_INT(v[7].init_line, 12 + off);
      CHECK_INT(v[7].init_col, 27);
      CHECK_STR(v[7].init, "{\n  7 }");
      CHECK(v[7].init_is_static);
    }
    kn_items_free(&items);
  }
  /* CRLF line endings and a directive's continuation lines. */
  kn_items_t items;
  kn_cell_split("#define A \\\r\n  1\r\nint a = A;\r\n  f();\r\n", NULL, 1, &items);
  CHECK_INT(items.n, 3);
  if (items.n == 3) {
    CHECK_STR(items.items[0].text, "#define A \\\r\n  1");
    CHECK_INT(items.items[1].line, 3);
    CHECK_INT(items.items[2].line, 4);
    CHECK_INT(items.items[2].col, 3);
  }
  kn_items_free(&items);
}

/* Typedef names known from the session (or standard, or declared earlier in
 * the cell) decide what the IDENT IDENT rule cannot: a typedef name followed
 * by a parenthesised declarator, which otherwise reads as a call. */
static void test_typedefs(void) {
  static const char *const session[] = {"vec", "handler_t", NULL};
  kn_items_t items;
  kn_cell_split("vec (*pv)[2]; handler_t (h); other_t (o);", session, 1, &items);
  char *got = summary(&items);
  CHECK_STR(got, "GLOBAL pv|vec (*pv)[2];\nGLOBAL h|handler_t (h);\nSTMT -|other_t (o);\n");
  free(got);
  kn_items_free(&items);

  /* Without the session list the same text is a call. */
  kn_cell_split("vec (*pv)[2];", NULL, 1, &items);
  CHECK_INT(items.n, 1);
  if (items.n) CHECK_INT(items.items[0].kind, KN_ITEM_STMT);
  kn_items_free(&items);

  /* A typedef earlier in the same cell counts, for every declarator. */
  kn_cell_split("typedef double real, *preal; real (r); preal (pr) = 0;", NULL, 1, &items);
  got = summary(&items);
  CHECK_STR(got,
            "TYPE real|typedef double real, *preal;\nGLOBAL r|real (r);\n"
            "GLOBAL pr|preal (pr) = 0;\n");
  free(got);
  kn_items_free(&items);

  /* Standard typedef names are known without being declared. */
  kn_cell_split("FILE *f; uint64_t (u); pthread_t (th)[4];", NULL, 1, &items);
  got = summary(&items);
  CHECK_STR(got, "GLOBAL f|FILE *f;\nGLOBAL u|uint64_t (u);\nGLOBAL th|pthread_t (th)[4];\n");
  free(got);
  kn_items_free(&items);

  /* A typedef name is a declarator name once a type has been given. */
  kn_cell_split("int size_t_like; long vec;", session, 1, &items);
  got = summary(&items);
  CHECK_STR(got, "GLOBAL size_t_like|int size_t_like;\nGLOBAL vec|long vec;\n");
  free(got);
  kn_items_free(&items);
}

/* PROTO and PREPROC fields. */
static void test_misc_fields(void) {
  kn_items_t items;
  kn_cell_split(
      "static int helper(int);\n#define  MAX(a, b) ((a) > (b) ? (a) : (b))\n"
      "#define EMPTY\n#undef EMPTY",
      NULL, 1, &items);
  CHECK_INT(items.n, 4);
  if (items.n == 4) {
    CHECK_INT(items.items[0].kind, KN_ITEM_PROTO);
    CHECK(items.items[0].is_static);
    CHECK(items.items[0].signature == NULL && items.items[0].decl == NULL);
    CHECK_STR(items.items[1].name, "MAX");
    CHECK_STR(items.items[2].name, "EMPTY");
    CHECK_STR(items.items[3].name, NULL);
  }
  kn_items_free(&items);
  kn_items_free(NULL);
}

/* Deep nesting and long chains: no crash, and the result is still one STMT. */
static void test_stress(void) {
  fl__buf_t sb = FL__BUF_INIT;
  for (int i = 0; i < 5000; i++) fl__buf_puts(&sb, "if (a) x(); else ");
  fl__buf_puts(&sb, "y();");
  kn_items_t items;
  kn_cell_split(sb.data, NULL, 1, &items);
  CHECK_INT(items.n, 1);
  kn_items_free(&items);

  fl__buf_clear(&sb);
  for (int i = 0; i < 5000; i++) fl__buf_puts(&sb, "if (a) ");
  fl__buf_puts(&sb, "y();");
  kn_cell_split(sb.data, NULL, 1, &items);
  CHECK_INT(items.n, 1);
  if (items.n) CHECK_INT(items.items[0].kind, KN_ITEM_STMT);
  kn_items_free(&items);

  fl__buf_clear(&sb);
  for (int i = 0; i < 5000; i++) fl__buf_puts(&sb, "({[");
  kn_cell_split(sb.data, NULL, 1, &items);
  CHECK_INT(items.n, 1);
  kn_items_free(&items);
  CHECK_STR(kn_cell_completeness(sb.data), "incomplete");

  fl__buf_clear(&sb);
  for (int i = 0; i < 5000; i++) fl__buf_puts(&sb, "__extension__ ");
  fl__buf_puts(&sb, "int x;");
  kn_cell_split(sb.data, NULL, 1, &items);
  CHECK_INT(items.n, 1);
  if (items.n) CHECK_INT(items.items[0].kind, KN_ITEM_GLOBAL);
  kn_items_free(&items);
  fl__buf_free(&sb);
}

typedef struct completeness_case {
  const char *code, *want;
} completeness_case_t;

static const completeness_case_t completeness_cases[] = {
    {"", "complete"},
    {"x = 1;", "complete"},
    {"int f(void) {\n  return 1;\n}\n", "complete"},
    {"int x = 3", "complete"}, /* the compiler reports the missing ';' */
    {"int f(void) {", "incomplete"},
    {"f(1,\n", "incomplete"},
    {"int a[3", "incomplete"},
    {"x = 1; /* note", "incomplete"},
    {"#define SQ(x) \\", "incomplete"},
    {"#define SQ(x) \\\n", "incomplete"},
    {"x = 1 + \\  \n", "incomplete"},
    {"}", "invalid"},
    {"x = 1; }", "invalid"},
    {"f(]", "invalid"},
    {"f(1));", "invalid"},
    {"printf(\"abc", "invalid"},
    {"c = 'a", "invalid"},
    {"printf(\"}{\"); c = '{'; // {", "complete"},
    {"/* { */ x;", "complete"},
    {"#define OPEN {\nx;", "complete"},
    {"%profview width=(\nf();", "complete"},
    {"\n%%timeit -n 3 {\n%cflags -O3 (\nfor (;;) {", "incomplete"},
    {"\n%%timeit -n 3 {\n%cflags -O3 (\nfor (;;) {\n\n", "incomplete"},
    {"%%profview", "incomplete"}, /* a cell magic's body ends with a blank line */
    {"%%profview\nf();", "incomplete"},
    {"%%profview\nf();\n", "complete"},
    {"  %%profview delay=0.0001\nf();\n  \n", "complete"},
    {"%%profview\nf(\n\n", "incomplete"},
    {"%profview f();", "complete"},
    {"%profile f(\n", "complete"},
    {"x = 1;\n%profile f(", "incomplete"}, /* not a magic once code has started */
};

static void test_completeness(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(completeness_cases); i++) {
    const char *got = kn_cell_completeness(completeness_cases[i].code);
    if (strcmp(got, completeness_cases[i].want) != 0)
      fprintf(stderr, "completeness case %zu: %s\n", i, completeness_cases[i].code);
    CHECK_STR(got, completeness_cases[i].want);
  }
}

static void test_keywords(void) {
  bool seen_int = false, seen_attr = false, seen_static_assert = false;
  size_t n = 0;
  for (; kn_c_keywords[n]; n++) {
    if (!strcmp(kn_c_keywords[n], "int")) seen_int = true;
    if (!strcmp(kn_c_keywords[n], "__attribute__")) seen_attr = true;
    if (!strcmp(kn_c_keywords[n], "_Static_assert")) seen_static_assert = true;
  }
  CHECK(seen_int && seen_attr && seen_static_assert);
  CHECK(n >= 44);
}

int main(void) {
  test_split_table();
  test_globals();
  test_funcs();
  test_positions();
  test_typedefs();
  test_misc_fields();
  test_stress();
  test_completeness();
  test_keywords();
  return TEST_DONE();
}
