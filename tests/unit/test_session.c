/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_session: cells compiled with the real compiler, loaded with dlopen in
 * this process the way the worker loads them, and run. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kn_session.h"
#include "test.h"

static kn_session_t *session;

/* Compiles, loads and runs code as cell n; returns the entry's value, or
 * -1000 if it did not compile, -2000 if it did not load. */
static int run_cell(int n, const char *code) {
  kn_compiled_t *c;
  char *diag = NULL, err[512] = "";
  int rc = kn_session_compile(session, n, code, 1, &c, &diag, err, sizeof err);
  if (rc != 0) {
    fprintf(stderr, "cell %d did not compile (%d): %s%s\n", n, rc, diag ? diag : "", err);
    free(diag);
    return -1000;
  }
  void *h = dlopen(c->so_path, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    fprintf(stderr, "cell %d did not load: %s\n", n, dlerror());
    kn_compiled_destroy(&c);
    return -2000;
  }
  int (*entry)(void);
  *(void **)&entry = dlsym(h, c->entry);
  kn_session_commit(session, &c);
  return entry ? entry() : -3000;
}

static void *sym(const char *name) { return dlsym(RTLD_DEFAULT, name); }

static void test_definitions_persist(void) {
  CHECK_INT(run_cell(1, "int counter = 5;\n"
                        "int add(int a, int b) { return a + b; }\n"
                        "static int twice(int x) { return 2 * x; }\n"),
            0);
  int *counter = sym("cflame_c1_counter");
  CHECK(counter != NULL);
  if (!counter) return;
  /* A constant initializer stays static: it holds before any statement. */
  CHECK_INT(*counter, 5);
  CHECK_INT(run_cell(2, "counter = add(counter, twice(10));"), 0);
  CHECK_INT(*counter, 25);

  /* Redefinition: code compiled afterwards binds to the new add. */
  CHECK_INT(run_cell(3, "int add(int a, int b) { return a * b; }"), 0);
  CHECK_INT(run_cell(4, "counter = add(3, 4);"), 0);
  CHECK_INT(*counter, 12);
  CHECK(sym("cflame_c1_add") != NULL && sym("cflame_c3_add") != NULL);
}

static void test_globals_with_runtime_initializers(void) {
  CHECK_INT(run_cell(10, "struct P { int x, y; } origin = {1, 2};\n"
                         "double *buf = malloc(10 * sizeof *buf);\n"
                         "const int n = add(2, 5);\n"),
            0);
  CHECK_INT(run_cell(11, "buf[0] = origin.y + n;\nint got = (int)buf[0];"), 0);
  int *got = sym("cflame_c11_got");
  CHECK(got && *got == 12);
  const int *n = sym("cflame_c10_n");
  CHECK(n && *n == 10);
}

static void test_types_and_typedefs(void) {
  CHECK_INT(run_cell(20, "typedef struct { int v; } box_t;\n"
                         "#define SQUARE(x) ((x) * (x))\n"),
            0);
  CHECK_INT(run_cell(21, "box_t b = {3};\nint sq = SQUARE(b.v);"), 0);
  int *sq = sym("cflame_c21_sq");
  CHECK(sq && *sq == 9);
  /* A macro redefined in a later cell replaces the old one, without a
   * redefinition warning breaking anything. */
  CHECK_INT(run_cell(22, "#define SQUARE(x) ((x) + (x))\nint sq2 = SQUARE(4);"), 0);
  int *sq2 = sym("cflame_c22_sq2");
  CHECK(sq2 && *sq2 == 8);
}

static void test_main_is_called(void) {
  CHECK_INT(run_cell(30, "int main(void) { return 7; }"), 7);
  /* A later cell that does not define main does not call it. */
  CHECK_INT(run_cell(31, "int unused_here = 1;"), 0);
}

/* A program pasted in with its main renamed by a macro: nothing is called,
 * the function is compiled under the name the macro gave it, and later
 * cells call it by that name; a second such program in the same session
 * too, although its directives repeat the first one's. */
static void test_main_renamed_by_a_macro(void) {
  const char *prog = "#define main %s\n"
                     "int main(int argc, char **argv) { return argc * %d; }\n"
                     "#undef main\n";
  char code[256];
  snprintf(code, sizeof code, prog, "first_main", 10);
  CHECK_INT(run_cell(33, code), 0);
  CHECK(sym("cflame_c33_first_main") != NULL);
  CHECK(sym("cflame_c33_main") == NULL);
  snprintf(code, sizeof code, prog, "second_main", 100);
  CHECK_INT(run_cell(34, code), 0);
  CHECK_INT(run_cell(35, "return first_main(2, 0) + second_main(3, 0);"), 320);
  /* main is main again after the #undef. */
  CHECK_INT(run_cell(36, "int main(void) { return 5; }"), 5);
}

static void test_compile_error_keeps_nothing(void) {
  kn_compiled_t *c = NULL;
  char *diag = NULL, err[512];
  int rc = kn_session_compile(session, 40, "int fine = 1;\nint x = ;\n", 1, &c, &diag, err,
                              sizeof err);
  CHECK_INT(rc, 1);
  CHECK(c == NULL);
  CHECK(diag && strstr(diag, "cell[40]:2:9: error") != NULL);
  if (diag && !strstr(diag, "cell[40]:2:9: error")) fprintf(stderr, "%s\n", diag);
  /* Nothing of the generated wrapper leaks into the diagnostics. */
  CHECK(diag && strstr(diag, "cflame_run_") == NULL);
  free(diag);
  /* fine was not kept: a later cell cannot see it. */
  rc = kn_session_compile(session, 41, "int y = fine;\n", 1, &c, &diag, err, sizeof err);
  CHECK_INT(rc, 1);
  /* The compiler quotes with ' or with ‘ ’, by locale. */
  CHECK(diag && (strstr(diag, "'fine' undeclared") || strstr(diag, "\xe2\x80\x98" "fine\xe2\x80\x99 undeclared")));
  CHECK(diag && strstr(diag, "cell[41]:1:9:") != NULL);
  free(diag);
}

static void test_prototype_before_definition_in_one_cell(void) {
  CHECK_INT(run_cell(50, "int later(int);\n"
                         "int use_later = 0;\n"
                         "use_later = later(4);\n"
                         "int later(int v) { return v + 1; }\n"),
            0);
  int *u = sym("cflame_c50_use_later");
  CHECK(u && *u == 5);
}

static void test_clean_message(void) {
  char *m = kn_session_clean_message("cell[3]: In function 'cflame_run_3':\n"
                                     "cell[3]:1:5: error: 'cflame_c2_f' undeclared\n");
  CHECK_STR(m, "cell[3]:1:5: error: 'f' undeclared\n");
  free(m);
}

static void test_compiler_settings(void) {
  char err[512];
  CHECK_STR(kn_session_cflags(session), KN_DEFAULT_CFLAGS);
  CHECK_INT(kn_session_set_cc(session, "no-such-compiler-xyz", err, sizeof err), -1);
  CHECK(strstr(err, "no-such-compiler-xyz") != NULL);
  CHECK_INT(kn_session_set_cflags(session, "-std=gnu17 -O0 -g -DEXTRA=41", err, sizeof err), 0);
  CHECK_INT(run_cell(60, "int extra = EXTRA + 1;"), 0);
  int *x = sym("cflame_c60_extra");
  CHECK(x && *x == 42);
}

/* Which flags keep frame pointers in all of a cell's code (for the
 * allocation recorder's frame-pointer walk); unknown is no. */
static void test_frame_pointer_flags(void) {
  CHECK(kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS, KN_DEFAULT_LDFLAGS));
  CHECK(kn_session_flags_keep_frame_pointers("-O0 -g", "-lm"));
  CHECK(
      kn_session_flags_keep_frame_pointers("-O3 -fomit-frame-pointer -fno-omit-frame-pointer", ""));
  CHECK(kn_session_flags_keep_frame_pointers("-O2", "-fno-omit-frame-pointer -lpthread"));
  CHECK(!kn_session_flags_keep_frame_pointers("-O2 -g", "-lm"));
  CHECK(!kn_session_flags_keep_frame_pointers("-g", "")); /* the compiler's default level */
  /* Tail calls: the base flags keep them as calls unless the user's flags,
   * which come later, say otherwise. */
  CHECK(kn_session_flags_keep_tail_calls("cc " KN_BASE_CFLAGS " " KN_DEFAULT_CFLAGS " -lm"));
  CHECK(!kn_session_flags_keep_tail_calls("cc " KN_BASE_CFLAGS " -O2 -foptimize-sibling-calls"));
  CHECK(kn_session_flags_keep_tail_calls("-foptimize-sibling-calls -fno-optimize-sibling-calls"));
  CHECK(!kn_session_flags_keep_tail_calls("-O2"));
  CHECK(!kn_session_flags_keep_frame_pointers("-O0 -O2", ""));
  CHECK(!kn_session_flags_keep_frame_pointers("-O0 -fomit-frame-pointer", ""));
  CHECK(!kn_session_flags_keep_frame_pointers("-fno-omit-frame-pointer -fomit-frame-pointer", ""));
  CHECK(!kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS, "-fomit-frame-pointer"));
  /* Code compiled elsewhere may come in. */
  CHECK(!kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS, "helper.o -lm"));
  CHECK(!kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS, "/opt/lib/libfoo.a"));
  CHECK(!kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS, "-L. -lfoo"));
  CHECK(!kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS, "-l:libfoo.a"));
  CHECK(!kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS, "-Wl,-Bstatic -lm"));
  CHECK(!kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS " fast.S", "-lm"));
  CHECK(!kn_session_flags_keep_frame_pointers(KN_DEFAULT_CFLAGS, "\"unclosed"));
  /* A compiled cell knows, and so does the session once it is committed. */
  size_t before = kn_session_n_objects(session);
  CHECK_INT(run_cell(70, "int fp_default = 1;"), 0);
  CHECK(kn_session_object_frame_pointers(session, before));
  CHECK(!kn_session_object_frame_pointers(session, before + 1)); /* no such object */
  char err[512];
  CHECK_INT(kn_session_set_cflags(session, "-std=gnu17 -O2", err, sizeof err), 0);
  CHECK_INT(run_cell(71, "int fp_omitted = 1;"), 0);
  CHECK(!kn_session_object_frame_pointers(session, before + 1));
  CHECK_INT(kn_session_set_cflags(session, KN_DEFAULT_CFLAGS, err, sizeof err), 0);
}

/* The unit for a cell, as compiling it would write it, without compiling
 * or writing anything. */
static void test_unit_text(void) {
  CHECK_INT(run_cell(80, "struct unit_pt { int x, y; };\nint unit_twice(int v) { return 2 * v; }"),
            0);
  size_t objects = kn_session_n_objects(session);
  char *text = kn_session_unit_text(session, 81, "struct unit_pt p;\nunit_twice(p.x);", 1);
  CHECK(text != NULL);
  if (!text) return;
  CHECK(strstr(text, "#include <stdio.h>") != NULL);          /* the prelude */
  CHECK(strstr(text, "struct unit_pt { int x, y; };") != NULL); /* earlier cells */
  CHECK(strstr(text, "int unit_twice(int v) __asm__(\"cflame_c80_unit_twice\")") != NULL);
  CHECK(strstr(text, "#line 2 \"cell[81]\"\nunit_twice(p.x);") != NULL); /* this cell */
  CHECK(strstr(text, "int cflame_run_81(void)") != NULL);
  CHECK_INT(kn_session_n_objects(session), objects);
  char path[4096];
  snprintf(path, sizeof path, "%s/cell_81.c", kn_session_dir(session));
  struct stat st;
  CHECK(stat(path, &st) != 0); /* nothing written */
  free(text);
}

/* A cell whose code does not load again leaves the session: its object
 * and the functions and globals in it; its types and macros stay. */
/* %reset empties the directory mkdtemp made and keeps it: never removed
 * and made again by its name, which another user could take first. */
static void test_reset_keeps_directory(void) {
  int fd = open(kn_session_dir(session), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  CHECK(fd >= 0);
  CHECK_INT(run_cell(90, "int kept_before_reset = 1;"), 0);
  kn_session_reset(session);
  struct stat st;
  CHECK(fstat(fd, &st) == 0 && st.st_nlink >= 2 && (st.st_mode & 0777) == 0700);
  DIR *d = fdopendir(fd);
  size_t entries = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) entries++;
  CHECK_INT(entries, 0);
  if (d) closedir(d);
  CHECK_INT(run_cell(91, "int made_after_reset = 2;"), 0);
}

static void test_drop_object(void) {
  CHECK_INT(run_cell(90,
                     "struct drop_pt { int x; };\n#define DROP_K 4\n"
                     "int drop_f(void) { return DROP_K; }\nint drop_g = 2;"),
            0);
  size_t objects = kn_session_n_objects(session);
  char *path = strdup(kn_session_object(session, objects - 1));
  CHECK_INT(kn_session_drop_object(session, path), 90);
  CHECK_INT(kn_session_drop_object(session, path), -1);
  CHECK_INT(kn_session_n_objects(session), objects - 1);
  struct stat st;
  CHECK(stat(path, &st) != 0); /* the object is removed */
  char *text = kn_session_unit_text(session, 91, "struct drop_pt p = {DROP_K};", 1);
  CHECK(text != NULL);
  if (text) {
    CHECK(strstr(text, "struct drop_pt { int x; };") != NULL);
    CHECK(strstr(text, "#define DROP_K 4") != NULL);
    CHECK(strstr(text, "cflame_c90_drop_f") == NULL);
    CHECK(strstr(text, "cflame_c90_drop_g") == NULL);
  }
  free(text);
  free(path);
}

int main(void) {
  char err[512];
  session = kn_session_new(err, sizeof err);
  CHECK(session != NULL);
  if (!session) return TEST_DONE();
  char *dir = strdup(kn_session_dir(session));
  test_definitions_persist();
  test_globals_with_runtime_initializers();
  test_types_and_typedefs();
  test_main_is_called();
  test_main_renamed_by_a_macro();
  test_compile_error_keeps_nothing();
  test_prototype_before_definition_in_one_cell();
  test_clean_message();
  test_compiler_settings();
  test_frame_pointer_flags();
  test_unit_text();
  test_drop_object();
  test_reset_keeps_directory();
  kn_session_destroy(&session);
  struct stat st;
  CHECK(stat(dir, &st) != 0); /* the private directory is gone */
  free(dir);
  return TEST_DONE();
}
