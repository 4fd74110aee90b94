/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of fl_io: the folded stacks reader and writer, the perf script
 * reader on real captures against stackcollapse-perf.pl's output for them
 * (tests/data/perf, see its README), round trips, errors, the HTML page,
 * the limit on an input and what is not read, and writing a file whole. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cflame/fl_io.h"
#include "cflame/fl_render.h"
#include "fl__io.h" /* fl__gzip */
#include "profile_check.h"
#include "test.h"

static const char *data_dir(void) {
  const char *d = getenv("CFLAME_TEST_DATA");
  return d ? d : "tests/data";
}

/* The contents of tests/data/perf/NAME, new; NULL when it cannot be read. */
static char *read_data(const char *name) {
  char path[512];
  snprintf(path, sizeof path, "%s/perf/%s", data_dir(), name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    return NULL;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  char chunk[65536];
  size_t got;
  while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, got, m);
  fclose(f);
  fclose(m);
  return buf;
}

static void data_path(const char *name, char *out, size_t size) {
  snprintf(out, size, "%s/perf/%s", data_dir(), name);
}

/* A profile of text (any kind), or NULL with *err. */
static fl_profile_t *read_text(const char *text, fl_input_kind_t *kind, fl_io_error_t *err) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  if (fl_read_profile(p, text, strlen(text), "test.txt", FL_INPUT_AUTO, kind, err) < 0)
    fl_profile_destroy(&p);
  return p;
}

/* Does a sample of p have a frame whose function is func? */
static bool in_samples(const fl_profile_t *p, const char *func) {
  for (size_t i = 0; i < fl_profile_n_samples(p); i++) {
    fl_sample_t s;
    fl_profile_sample(p, i, &s);
    for (size_t k = 0; k < s.n; k++)
      if (strcmp(fl_profile_frame(p, fl_profile_sample_frame(p, &s, k))->func, func) == 0)
        return true;
  }
  return false;
}

/* ---- folded stacks in ---- */

static void test_folded_counts(void) {
  fl_io_error_t err;
  fl_input_kind_t kind = FL_INPUT_AUTO;
  fl_profile_t *p = read_text("a;b;c 3\na;b 2\n\nd 5\n", &kind, &err);
  CHECK(p != NULL);
  if (!p) return;
  CHECK_INT(kind, FL_INPUT_FOLDED);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  CHECK_INT(info->total_weight, 10);
  CHECK_INT(fl_profile_n_samples(p), 3);
  CHECK_INT(fl_profile_n_frames(p), 4);
  fl_sample_t s;
  fl_profile_sample(p, 0, &s);
  CHECK_INT(s.n, 3);
  CHECK_INT(s.weight, 3);
  CHECK_STR(fl_profile_frame(p, fl_profile_sample_frame(p, &s, 0))->func, "a");
  CHECK_STR(fl_profile_frame(p, fl_profile_sample_frame(p, &s, 2))->func, "c");
  CHECK_STR(info->source, "test.txt (folded stacks)");
  fl_profile_destroy(&p);
}

static void test_folded_spaces_and_lines(void) {
  fl_io_error_t err;
  const char *text =
      "# written by hand\r\n"
      "my func;other thing  7\r\n"
      "main (cell[1]:5);work (cell[1]:12) 4\n"
      "main (cell[1]:5);g (x) 1\n"
      "h (a.c:0);k (:3);sys_read_[k];inl_[i] 2\n"
      "   \n"
      "zero;count 0\n"
      " 6\n";
  fl_profile_t *p = read_text(text, NULL, &err);
  CHECK(p != NULL);
  if (!p) {
    fprintf(stderr, "  %s:%zu: %s\n", err.file, err.line, err.message);
    return;
  }
  CHECK_INT(fl_profile_info_const(p)->total_weight, 20);
  CHECK(frame_named(p, "my func") != NULL);
  /* "  7": the stack keeps everything before the one separator */
  CHECK(frame_named(p, "other thing ") != NULL);
  const fl_frame_t *m = frame_named(p, "main");
  CHECK(m && m->file && strcmp(m->file, "cell[1]") == 0 && m->line == 5);
  const fl_frame_t *w = frame_named(p, "work");
  CHECK(w && w->line == 12 && (w->flags & FL_FRAME_CELL));
  /* not FILE:LINE with a positive line: the name as written */
  CHECK(frame_named(p, "g (x)") != NULL);
  CHECK(frame_named(p, "h (a.c:0)") != NULL);
  CHECK(frame_named(p, "k (:3)") != NULL);
  const fl_frame_t *k = frame_named(p, "sys_read_[k]");
  CHECK(k && k->flags == FL_FRAME_KERNEL);
  const fl_frame_t *i = frame_named(p, "inl_[i]");
  CHECK(i && (i->flags & FL_FRAME_INLINED));
  CHECK(frame_named(p, "zero") == NULL); /* a count of 0 adds nothing */
  /* " 6": weight of the root itself */
  size_t root_only = 0;
  for (size_t s = 0; s < fl_profile_n_samples(p); s++) {
    fl_sample_t smp;
    fl_profile_sample(p, s, &smp);
    if (smp.n == 0) root_only += smp.weight;
  }
  CHECK_INT(root_only, 6);
  fl_profile_destroy(&p);
}

/* A failed read names the file and line, says what is valid, gives the
 * kind of error as a code, and leaves the profile as it was. */
static const struct folded_error_case {
  const char *text;
  size_t len; /* 0: strlen(text) */
  size_t line;
  fl_io_code_t code;
  const char *says;
} folded_errors[] = {
    {"a;b 3\n\nc;d 1.5\n", 0, 3, FL_IO_ERR_NOT_FORMAT, "frame;frame;...;frame COUNT"},
    {"a;b 3\nc;d -2\n", 0, 2, FL_IO_ERR_NOT_FORMAT, "\"c;d -2\""},
    {"a;b 3\nno count here\n", 0, 2, FL_IO_ERR_NOT_FORMAT, "non-negative integer"},
    {"a 99999999999999999999\n", 0, 1, FL_IO_ERR_FORMAT, "too large"},
    {"a 18446744073709551615\nb 1\n", 0, 2, FL_IO_ERR_FORMAT, "add up"},
    /* fits alone, not with the 4 samples the profile holds */
    {"a 18446744073709551614\n", 0, 0, FL_IO_ERR_CANNOT_ADD, "add up"},
    {"", 0, 0, FL_IO_ERR_NO_SAMPLES, "no samples"},
    {"# only a comment\n\n", 0, 0, FL_IO_ERR_NO_SAMPLES, "no samples"},
    {"a;b 0\nc 0\n", 0, 0, FL_IO_ERR_NO_SAMPLES, "every count"},
    {"a;b 3\nc\0d 1\n", 12, 2, FL_IO_ERR_NOT_TEXT, "NUL"},
    /* the first line wrong: neither kind, and both are described */
    {"hello world\n", 0, 1, FL_IO_ERR_NOT_FORMAT, "perf script"},
};

static void test_folded_errors(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(folded_errors); i++) {
    const struct folded_error_case *c = &folded_errors[i];
    fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
    fl_io_error_t err;
    CHECK_INT(fl_read_profile(p, "x;y 4\n", 6, "before", FL_INPUT_AUTO, NULL, &err), 0);
    CHECK_INT(err.code, FL_IO_OK);
    size_t frames = fl_profile_n_frames(p), samples = fl_profile_n_samples(p);
    size_t len = c->len ? c->len : strlen(c->text);
    int rc = fl_read_profile(p, c->text, len, "bad.folded", FL_INPUT_AUTO, NULL, &err);
    CHECK_INT(rc, -1);
    CHECK_STR(err.file, "bad.folded");
    CHECK_INT(err.line, c->line);
    CHECK_INT(err.code, c->code);
    if (!strstr(err.message, c->says)) {
      fprintf(stderr, "  case %zu: message \"%s\" lacks \"%s\"\n", i, err.message, c->says);
      CHECK(!"the error says what is wrong");
    }
    CHECK_INT(fl_profile_n_frames(p), frames);
    CHECK_INT(fl_profile_n_samples(p), samples);
    CHECK_INT(fl_profile_info_const(p)->total_weight, 4);
    fl_profile_destroy(&p);
  }
}

/* ---- perf script in ---- */

/* stackcollapse-perf.pl's counts are multiples of ours: scales ours. */
static char *scale_counts(const char *folded, uint64_t factor) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  for (const char *line = folded; *line;) {
    const char *end = strchr(line, '\n');
    const char *sp = end;
    while (sp > line && sp[-1] != ' ') sp--;
    fprintf(f, "%.*s%" PRIu64 "\n", (int)(sp - line), line,
            (uint64_t)strtoull(sp, NULL, 10) * factor);
    line = end + 1;
  }
  fclose(f);
  return out;
}

/* Reads tests/data/perf/NAME.txt and checks its folded stacks against
 * NAME.folded (stackcollapse-perf.pl at ef64564) when there is one, and
 * against NAME.latest.folded (newer, counting periods) scaled by period. */
static fl_profile_t *check_capture(const char *name, bool has_old, uint64_t period) {
  char path[512], file[128];
  snprintf(file, sizeof file, "%s.txt", name);
  data_path(file, path, sizeof path);
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  fl_input_kind_t kind = FL_INPUT_AUTO;
  if (fl_read_profile_file(p, path, FL_INPUT_AUTO, &kind, &err) < 0) {
    fprintf(stderr, "  %s:%zu: %s\n", err.file, err.line, err.message);
    CHECK(!"the capture reads");
    fl_profile_destroy(&p);
    return NULL;
  }
  CHECK_INT(kind, FL_INPUT_PERF_SCRIPT);
  /* As stackcollapse-perf.pl: every frame, one per function. */
  char *ours = folded_of(p, false, true);
  CHECK(ours != NULL);
  if (has_old) {
    snprintf(file, sizeof file, "%s.folded", name);
    char *want = read_data(file);
    CHECK(want && ours && strcmp(ours, want) == 0);
    if (want && ours && strcmp(ours, want) != 0)
      fprintf(stderr, "  %s: folded stacks differ from stackcollapse-perf.pl's\n", name);
    free(want);
  }
  snprintf(file, sizeof file, "%s.latest.folded", name);
  char *want = read_data(file), *scaled = ours ? scale_counts(ours, period) : NULL;
  CHECK(want && scaled && strcmp(scaled, want) == 0);
  if (want && scaled && strcmp(scaled, want) != 0)
    fprintf(stderr, "  %s: folded stacks x %" PRIu64 " differ from the newer script's\n", name,
            period);
  free(want);
  free(scaled);
  free(ours);
  return p;
}

static void test_perf_captures(void) {
  fl_profile_t *p = check_capture("single", true, 250000);
  if (p) {
    const fl_profile_info_t *info = fl_profile_info_const(p);
    CHECK_INT(info->interval_ns, 250000); /* cpu-clock's period, in ns */
    CHECK_INT(info->total_weight, info->samples);
    const fl_frame_t *leaf = frame_named(p, "leaf");
    CHECK(leaf && leaf->flags == FL_FRAME_CELL && leaf->module &&
          strcmp(leaf->module, "workload") == 0);
    const fl_frame_t *libc = frame_named(p, "__libc_start_call_main");
    CHECK(libc && libc->flags == FL_FRAME_SYSTEM && strcmp(libc->module, "libc.so.6") == 0);
    const fl_frame_t *k = frame_named(p, "asm_exc_page_fault");
    CHECK(k && k->flags == FL_FRAME_KERNEL && strcmp(k->module, "[kernel.kallsyms]") == 0);
    int *threads = NULL;
    size_t n = fl_profile_threads(p, &threads);
    CHECK(n == 1 && threads[0] > 0);
    free(threads);
    /* C=false folds libc's frames into their callers */
    char *folded = folded_of(p, false, false);
    CHECK(folded && !strstr(folded, "__libc_start_call_main") && !strstr(folded, "__random"));
    CHECK(folded && strstr(folded, "\nworkload;main;outer;middle;leaf "));
    free(folded);
    fl_profile_destroy(&p);
  }
  p = check_capture("threads", true, 250000);
  if (p) {
    CHECK(frame_named(p, "hash_worker") != NULL); /* the process frame, spaces made _ */
    CHECK(frame_named(p, "t_") != NULL);          /* "t": the one-letter name */
    int *threads = NULL;
    CHECK(fl_profile_threads(p, &threads) >= 3);
    free(threads);
    fl_profile_destroy(&p);
  }
  p = check_capture("events", false, 250000);
  char *events = read_data("events.txt");
  if (p && events) {
    /* only the samples of cpu-clock, the first event */
    size_t cpu_clock = 0, headers = 0;
    for (const char *line = events; line && *line;
         line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
      if (*line == '\t' || *line == '\n' || *line == '#') continue;
      headers++;
      const char *eol = strchr(line, '\n');
      const char *ev = strstr(line, " cpu-clock:");
      cpu_clock += ev && (!eol || ev < eol);
    }
    CHECK(cpu_clock > 0 && cpu_clock < headers);
    CHECK_INT(fl_profile_info_const(p)->samples, cpu_clock);
  }
  free(events);
  fl_profile_destroy(&p);
  p = check_capture("pidtid", true, 1);
  if (p) {
    CHECK_INT(fl_profile_info_const(p)->interval_ns, 0); /* no period printed */
    fl_profile_destroy(&p);
  }
  p = check_capture("srcline", false, 250000);
  if (p) {
    const fl_frame_t *leaf = NULL;
    for (size_t i = 0; i < fl_profile_n_frames(p); i++) {
      const fl_frame_t *f = fl_profile_frame(p, (uint32_t)i);
      if (strcmp(f->func, "leaf") == 0 && f->line > 0) leaf = f;
    }
    CHECK(leaf && strcmp(leaf->file, "workload.c") == 0);
    /* with --no-lines, the old script's output exactly */
    char *ours = folded_of(p, false, true), *want = read_data("srcline.folded");
    CHECK(ours && want && strcmp(ours, want) == 0);
    free(ours);
    free(want);
    /* with lines, frames carry them in the folded text */
    ours = folded_of(p, true, true);
    CHECK(ours && strstr(ours, ";leaf (workload.c:"));
    free(ours);
    fl_profile_destroy(&p);
  }
  p = check_capture("synthetic", false, 1);
  if (p) {
    const fl_frame_t *f = frame_named(p, "nf_hook_slow");
    CHECK(f && f->flags == FL_FRAME_KERNEL); /* a bracketed module at a kernel address */
    f = frame_named(p, "[libv8.so]");
    CHECK(f && f->flags == FL_FRAME_SYSTEM && strcmp(f->module, "libv8.so") == 0);
    f = frame_named(p, "innermost_[i]");
    CHECK(f && (f->flags & FL_FRAME_INLINED));
    f = frame_named(p, "[unknown]");
    CHECK(f && f->flags == FL_FRAME_CELL);
    CHECK(!in_samples(p, "orphan_before_any_header"));
    CHECK(!in_samples(p, "skipped_other_event"));
    CHECK(!in_samples(p, "dropped_without_blank_line_at_end"));
    CHECK(in_samples(p, "spaced_module"));
    fl_profile_destroy(&p);
  }
}

/* perf record --call-graph dwarf prints functions inlined at an address
 * as "func (inlined)", without a module: libc's msort_with_tmp (inlined
 * into qsort_r) and __libc_start_main_impl are libc's code, coloured and
 * folded as such, never the program's. */
static void test_perf_dwarf_inlined(void) {
  char *text = read_data("dwarf.txt");
  CHECK(text != NULL);
  if (!text) return;
  fl_io_error_t err;
  fl_input_kind_t kind;
  fl_profile_t *p = read_text(text, &kind, &err);
  CHECK(p != NULL);
  free(text);
  if (!p) return;
  static const char *const libc_inlined[] = {"msort_with_tmp", "__libc_start_main_impl"};
  for (size_t i = 0; i < 2; i++) {
    const fl_frame_t *f = frame_named(p, libc_inlined[i]);
    CHECK(f && f->module && strcmp(f->module, "libc.so.6") == 0);
    CHECK(f && f->flags == (FL_FRAME_SYSTEM | FL_FRAME_INLINED));
  }
  const fl_frame_t *f = frame_named(p, "cmp");
  CHECK(f && f->flags == FL_FRAME_CELL && strcmp(f->module, "qsorter") == 0);
  /* C=false folds them into the program's frames: the comparator hangs
   * under main, no libc frame is left. */
  char *folded = folded_of(p, false, false);
  CHECK(folded && !strstr(folded, "msort_with_tmp") && !strstr(folded, "__libc_start_main_impl"));
  CHECK(folded && strstr(folded, "qsorter;_start;main;cmp "));
  free(folded);
  fl_profile_destroy(&p);
}

/* perf script's headers give each sample its thread id and time, and the
 * thread its name (the process name perf prints is the thread's comm). */
static void test_perf_time_and_threads(void) {
  static const char text[] =
      "my prog  2043/2043  [001]  9786.938382:     250000 cpu-clock:ppp: \n"
      "\t    1263 work+0x33 (/tmp/p)\n\n"
      "worker 2043/2050 9786.939000123: 250000 cpu-clock:ppp:\n"
      "\t    1263 work+0x33 (/tmp/p)\n\n"
      "worker 2043/2050 9786.940: 250000 cpu-clock:ppp:\n"
      "\t    1263 work+0x33 (/tmp/p)\n\n"
      "prog 2060 cpu-clock:\n"
      "\t    1263 work+0x33 (/tmp/p)\n\n";
  static const struct {
    int thread;
    uint64_t time_ns;
  } want[] = {{2043, 9786938382000}, {2050, 9786939000123}, {2050, 9786940000000}, {2060, 0}};
  fl_io_error_t err;
  fl_profile_t *p = read_text(text, NULL, &err);
  CHECK(p != NULL);
  if (!p) return;
  CHECK_INT(fl_profile_n_samples(p), 4);
  fl_sample_t s;
  for (size_t i = 0; i < 4 && i < fl_profile_n_samples(p); i++) {
    fl_profile_sample(p, i, &s);
    CHECK_INT(s.thread, want[i].thread);
    CHECK_INT(s.time_ns, want[i].time_ns);
  }
  CHECK_STR(fl_profile_thread_name(p, 2043), "my prog");
  CHECK_STR(fl_profile_thread_name(p, 2050), "worker");
  CHECK_STR(fl_profile_thread_name(p, 2060), "prog");
  /* folded stacks carry neither */
  fl_profile_t *q = read_text("a;b 3\n", NULL, &err);
  CHECK(q != NULL);
  if (q) {
    fl_profile_sample(q, 0, &s);
    CHECK_INT(s.thread, 0);
    CHECK_INT(s.time_ns, 0);
    fl_profile_destroy(&q);
  }
  fl_profile_destroy(&p);
}

static void test_perf_errors(void) {
  char *text = read_data("single.txt");
  CHECK(text != NULL);
  if (!text) return;
  /* a garbage line at line 10 */
  size_t line = 1;
  char *at = text;
  while (line < 10 && (at = strchr(at, '\n')) != NULL) {
    at++;
    line++;
  }
  CHECK(at != NULL);
  if (!at) return;
  char *bad = NULL;
  if (asprintf(&bad, "%.*sthis is not perf output\n%s", (int)(at - text), text, at) < 0) return;
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  fl_input_kind_t kind;
  CHECK_INT(fl_read_profile(p, bad, strlen(bad), "bad.perf", FL_INPUT_AUTO, &kind, &err), -1);
  CHECK_INT(kind, FL_INPUT_PERF_SCRIPT);
  CHECK_STR(err.file, "bad.perf");
  CHECK_INT(err.line, 10);
  CHECK(strstr(err.message, "this is not perf output") && strstr(err.message, "cpu-clock:"));
  CHECK_INT(err.code, FL_IO_ERR_NOT_FORMAT);
  CHECK_INT(fl_profile_n_samples(p), 0);
  CHECK_INT(fl_profile_n_frames(p), 0);
  free(bad);

  /* perf script of a recording without -g: headers, no call stacks */
  const char *flat =
      "prog 12 [000] 1.000: 250000 cpu-clock:ppp:  4011d6 main+0x1 (/x)\n"
      "prog 12 [000] 1.001: 250000 cpu-clock:ppp:  4011d6 main+0x1 (/x)\n";
  CHECK_INT(fl_read_profile(p, flat, strlen(flat), "flat", FL_INPUT_AUTO, &kind, &err), -1);
  CHECK_INT(kind, FL_INPUT_PERF_SCRIPT);
  CHECK(strstr(err.message, "perf record -g") != NULL);
  CHECK_INT(err.code, FL_IO_ERR_NO_SAMPLES);

  /* perf script forced on folded text */
  CHECK_INT(fl_read_profile(p, "a;b 3\n", 6, "f", FL_INPUT_PERF_SCRIPT, NULL, &err), -1);
  CHECK_INT(err.line, 1);
  /* a missing file names it and says why */
  CHECK_INT(fl_read_profile_file(p, "/nonexistent/x.folded", FL_INPUT_AUTO, NULL, &err), -1);
  CHECK_STR(err.file, "/nonexistent/x.folded");
  CHECK(strstr(err.message, "/nonexistent/x.folded") && strstr(err.message, "No such file"));
  CHECK_INT(err.code, FL_IO_ERR_SYSTEM);
  CHECK_INT(fl_profile_n_samples(p), 0);
  fl_profile_destroy(&p);

  /* allocation profiles take no CPU samples; an empty profile takes the
   * kind of what is read */
  p = fl_profile_new(FL_PROFILE_ALLOC_BYTES);
  fl_frame_t f = {.func = "malloc"};
  uint32_t id = fl_profile_frame_id(p, &f);
  fl_profile_add_sample(p, &id, 1, 64, 1, 0);
  CHECK_INT(fl_read_profile(p, "a 1\n", 4, "f", FL_INPUT_AUTO, NULL, &err), -1);
  CHECK_STR(err.message, "cannot add f, a CPU profile, to an allocation profile");
  CHECK_INT(err.code, FL_IO_ERR_CANNOT_ADD);
  CHECK_INT(fl_profile_n_samples(p), 1);
  fl_profile_clear(p);
  CHECK_INT(fl_read_profile(p, "a 1\n", 4, "f", FL_INPUT_AUTO, NULL, &err), 0);
  CHECK(fl_profile_info_const(p)->kind == FL_PROFILE_CPU);
  fl_profile_destroy(&p);
  free(text);
}

/* ---- folded stacks out, and back ---- */

static uint32_t add_frame(fl_profile_t *p, const char *func, const char *file, int line,
                          const char *module, uint32_t flags) {
  fl_frame_t f = {.func = func, .file = file, .line = line, .module = module, .flags = flags};
  return fl_profile_frame_id(p, &f);
}

/* A small profile with lines, a system library, a name with ';' and a
 * stack made only of system frames (the root's own time when C=false). */
static fl_profile_t *sample_profile(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t main5 = add_frame(p, "main", "cell[1]", 5, "cell[1]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t main7 = add_frame(p, "main", "cell[1]", 7, "cell[1]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t work = add_frame(p, "work", "cell[1]", 12, "cell[1]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t qsort_ = add_frame(p, "qsort", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM);
  uint32_t cmp = add_frame(p, "cmp", "cell[2]", 3, "cell[2]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t odd =
      add_frame(p, "odd;name with space", "cell[2]", 9, "cell[2]", FL_FRAME_CELL | FL_FRAME_REPL);
  uint32_t start = add_frame(p, "start_thread", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM);
  fl_profile_add_sample(p, (uint32_t[]){main5, work}, 2, 30, 0, 1);
  fl_profile_add_sample(p, (uint32_t[]){main5}, 1, 5, 0, 1);
  fl_profile_add_sample(p, (uint32_t[]){main7, qsort_, cmp}, 3, 12, 0, 1);
  fl_profile_add_sample(p, (uint32_t[]){main7, qsort_}, 2, 4, 0, 1);
  fl_profile_add_sample(p, (uint32_t[]){main7, odd}, 2, 2, 0, 1);
  fl_profile_add_sample(p, (uint32_t[]){start}, 1, 3, 0, 2);
  fl_profile_add_sample(p, (uint32_t[]){main5, work}, 2, 1, 0, 1);
  return p;
}

static void check_round_trip(bool lines, bool C) {
  fl_profile_t *p = sample_profile();
  fl_tree_t *t = whole_tree(p, lines, C);
  char *text = t ? fl_folded(t) : NULL;
  CHECK(text != NULL);
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t ioerr;
  int rc = text
               ? fl_read_profile(q, text, strlen(text), "saved.folded", FL_INPUT_AUTO, NULL, &ioerr)
               : -1;
  CHECK_INT(rc, 0);
  fl_tree_t *t2 = rc == 0 ? whole_tree(q, lines, C) : NULL;
  char *text2 = t2 ? fl_folded(t2) : NULL;
  CHECK(text2 && strcmp(text, text2) == 0);
  if (t && t2) {
    CHECK_INT(fl_tree_n_nodes(t2), fl_tree_n_nodes(t));
    CHECK_INT(fl_tree_root(t2)->count, fl_tree_root(t)->count);
    CHECK_INT(fl_tree_root(t2)->self, fl_tree_root(t)->self);
    /* With lines, children are in source order, which the lines keep;
     * without, the call sites that ordered them are not in the file. */
    for (size_t i = 0; lines && i < fl_tree_n_nodes(t) && i < fl_tree_n_nodes(t2); i++) {
      const fl_node_t *a = fl_tree_node(t, i), *b = fl_tree_node(t2, i);
      CHECK_INT(b->count, a->count);
      CHECK_INT(b->depth, a->depth);
      CHECK_INT(b->frame.line, a->frame.line);
    }
  }
  if (text && (!text2 || strcmp(text, text2) != 0))
    fprintf(stderr, "  lines=%d C=%d:\n%s---\n%s", lines, C, text, text2 ? text2 : "(null)");
  free(text);
  free(text2);
  fl_tree_destroy(&t);
  fl_tree_destroy(&t2);
  fl_profile_destroy(&p);
  fl_profile_destroy(&q);
}

static void test_folded_out(void) {
  fl_profile_t *p = sample_profile();
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.minwidth = 0; /* cells by line, C off: the defaults otherwise */
  char err[256];
  fl_tree_t *t = fl_tree_build(p, &o, "cell[3]", err, sizeof err);
  char *text = fl_folded(t);
  /* sorted bytewise; "func (file:line)"; ';' written ':'; the frames C=false
   * folded away gone, their time in the caller (and the root's own, " 3") */
  CHECK_STR(text,
            " 3\n"
            "main (cell[1]:5) 5\n"
            "main (cell[1]:5);work (cell[1]:12) 31\n"
            "main (cell[1]:7) 4\n"
            "main (cell[1]:7);cmp (cell[2]:3) 12\n"
            "main (cell[1]:7);odd:name with space (cell[2]:9) 2\n");
  free(text);
  fl_tree_destroy(&t);
  o.lines = FL_LINES_OFF;
  o.C = true;
  t = fl_tree_build(p, &o, NULL, err, sizeof err);
  text = fl_folded(t);
  CHECK_STR(text,
            "main 5\n"
            "main;odd:name with space 2\n"
            "main;qsort 4\n"
            "main;qsort;cmp 12\n"
            "main;work 31\n"
            "start_thread 3\n");
  free(text);
  fl_tree_destroy(&t);
  /* minwidth hides, and fl_folded writes what is drawn */
  o.minwidth = 0.1;
  t = fl_tree_build(p, &o, NULL, err, sizeof err);
  text = fl_folded(t);
  CHECK(text && !strstr(text, "odd") && strstr(text, "main;work 31\n"));
  free(text);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);

  /* two functions of one name in different modules: one line */
  p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t a = add_frame(p, "[unknown]", NULL, 0, "libx.so", FL_FRAME_SYSTEM);
  uint32_t b = add_frame(p, "[unknown]", NULL, 0, "liby.so", FL_FRAME_SYSTEM);
  uint32_t r = add_frame(p, "prog", NULL, 0, NULL, FL_FRAME_CELL);
  fl_profile_add_sample(p, (uint32_t[]){r, a}, 2, 2, 0, 0);
  fl_profile_add_sample(p, (uint32_t[]){r, b}, 2, 3, 0, 0);
  o.minwidth = 0;
  t = fl_tree_build(p, &o, NULL, err, sizeof err);
  text = fl_folded(t);
  CHECK_STR(text, "prog;[unknown] 5\n");
  free(text);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);

  check_round_trip(false, true);
  check_round_trip(true, true);
  check_round_trip(false, false);
  check_round_trip(true, false);
}

/* The words --input-format takes: each names its kind, the list for help
 * and errors holds each, and any other word names none. */
static void test_input_kind_words(void) {
  const char *words[] = {"auto", "folded", "perf", "pprof", "speedscope", "trace"};
  const fl_input_kind_t kinds[] = {FL_INPUT_AUTO,  FL_INPUT_FOLDED,     FL_INPUT_PERF_SCRIPT,
                                   FL_INPUT_PPROF, FL_INPUT_SPEEDSCOPE, FL_INPUT_TRACE};
  for (size_t i = 0; i < FL__ARRAY_SIZE(words); i++) {
    fl_input_kind_t kind = FL_INPUT_AUTO;
    CHECK_INT(fl_input_kind_parse(words[i], &kind), 0);
    CHECK_INT(kind, kinds[i]);
    CHECK(strstr(fl_input_kinds(), words[i]) != NULL);
  }
  CHECK_STR(fl_input_kinds(), "auto, folded, perf, pprof, speedscope, trace");
  CHECK_STR(fl_input_kind_name(FL_INPUT_PERF_SCRIPT), "perf script");
  fl_input_kind_t kind = FL_INPUT_PPROF;
  CHECK_INT(fl_input_kind_parse("perf script", &kind), -1);
  CHECK_INT(kind, FL_INPUT_PPROF);
}

/* fl_input_kinds on its first call from several threads at once: each
 * gets the whole list (each round a fresh process, so that the call is
 * the first). */
enum { KIND_THREADS = 8, KIND_ROUNDS = 1000 };
static pthread_barrier_t kinds_start;

static void *read_kinds(void *arg) {
  (void)arg;
  pthread_barrier_wait(&kinds_start);
  const char *list = fl_input_kinds();
  return (void *)(intptr_t)(strcmp(list, "auto, folded, perf, pprof, speedscope, trace") != 0);
}

static void test_input_kinds_threads(void) {
  int torn = 0;
  for (int round = 0; round < KIND_ROUNDS; round++) {
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      pthread_t t[KIND_THREADS];
      pthread_barrier_init(&kinds_start, NULL, KIND_THREADS);
      for (int i = 0; i < KIND_THREADS; i++) pthread_create(&t[i], NULL, read_kinds, NULL);
      int bad = 0;
      for (int i = 0; i < KIND_THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= (int)(intptr_t)r;
      }
      _exit(bad);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    torn += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  if (torn) fprintf(stderr, "  %d of %d rounds saw a torn list\n", torn, KIND_ROUNDS);
  CHECK_INT(torn, 0);
}

/* Names that would not split back into the same frames are written so that
 * they do (cases the fuzzer found). */
static void test_folded_out_escapes(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  uint32_t root = add_frame(p, "r", NULL, 0, NULL, FL_FRAME_CELL);
  uint32_t g = add_frame(p, "g (a.c:3)", NULL, 0, NULL, FL_FRAME_CELL);
  uint32_t h = add_frame(p, "h (p:1) (q:2)", NULL, 0, NULL, FL_FRAME_CELL);
  uint32_t x = add_frame(p, "x\ry\nz", NULL, 0, NULL, FL_FRAME_CELL);
  uint32_t k = add_frame(p, "k", "dir (1)/k.c", 4, NULL, FL_FRAME_CELL);
  uint32_t w = add_frame(p, "worker 2", NULL, 0, NULL, FL_FRAME_CELL);
  uint32_t year = add_frame(p, "2024", NULL, 0, NULL, FL_FRAME_CELL);
  fl_profile_add_sample(p, (uint32_t[]){root, g}, 2, 1, 0, 0);
  fl_profile_add_sample(p, (uint32_t[]){root, w}, 2, 5, 0, 0);
  fl_profile_add_sample(p, (uint32_t[]){year}, 1, 6, 0, 0);
  fl_profile_add_sample(p, (uint32_t[]){root, h}, 2, 2, 0, 0);
  fl_profile_add_sample(p, (uint32_t[]){root, x}, 2, 3, 0, 0);
  fl_profile_add_sample(p, (uint32_t[]){root, k}, 2, 4, 0, 0);
  char *text = folded_of(p, true, true);
  /* "r;worker 2 5" and "2024 6" would read as a diff's two counts. */
  CHECK_STR(text,
            "_2024 6\n"
            "r;g_(a.c:3) 1\n"
            "r;h_(p:1)_(q:2) 2\n"
            "r;k (dir_(1)/k.c:4) 4\n"
            "r;worker_2 5\n"
            "r;x\\x0dy\\x0az 3\n"); /* as the profile holds it (fl_profile_frame_id) */
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  CHECK_INT(text ? fl_read_profile(q, text, strlen(text), "t", FL_INPUT_FOLDED, NULL, &err) : -1,
            0);
  const fl_frame_t *back = frame_named(q, "k");
  CHECK(back && back->line == 4 && strcmp(back->file, "dir_(1)/k.c") == 0);
  CHECK(frame_named(q, "g_(a.c:3)") != NULL);
  char *again = folded_of(q, true, true);
  CHECK(text && again && strcmp(text, again) == 0);
  free(text);
  free(again);
  fl_profile_destroy(&p);
  fl_profile_destroy(&q);
}

/* Folded stacks of a real capture survive a round trip through a file. */
static void test_perf_round_trip(void) {
  char path[512];
  data_path("srcline.txt", path, sizeof path);
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  CHECK_INT(fl_read_profile_file(p, path, FL_INPUT_AUTO, NULL, &err), 0);
  for (int lines = 0; lines < 2; lines++) {
    char *a = folded_of(p, lines, true);
    fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
    CHECK_INT(a ? fl_read_profile(q, a, strlen(a), "a", FL_INPUT_AUTO, NULL, &err) : -1, 0);
    char *b = folded_of(q, lines, true);
    CHECK(a && b && strcmp(a, b) == 0);
    free(a);
    free(b);
    fl_profile_destroy(&q);
  }
  fl_profile_destroy(&p);
}

/* ---- the HTML page ---- */

static void test_html_page(void) {
  fl_profile_t *p = sample_profile();
  char err[256];
  fl_tree_t *t = fl_tree_build(p, NULL, "</script><!--", err, sizeof err);
  fl_view_opts_t v;
  fl_view_opts_init(&v);
  json_t *spec = fl_vegalite(t, &v, err, sizeof err);
  char *svg = fl_svg(t, &v);
  CHECK(spec && svg);
  char *html = fl_html_page(spec, svg, "Profile <b>\"x\" & 'y'</b>");
  CHECK(html != NULL);
  if (!html) return;
  CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0);
  CHECK(strstr(html, "<title>Profile &lt;b&gt;&quot;x&quot; &amp; &#39;y&#39;&lt;/b&gt;</title>"));
  CHECK(strstr(html, "<b>") == NULL);
  /* The SVG inline, made interactive by its own script: its drawing up to
   * the script, which comes before its end. */
  const char *end_tag = strstr(svg, "</svg>");
  CHECK(end_tag && memmem(html, strlen(html), svg, (size_t)(end_tag - svg)) != NULL);
  CHECK(strstr(html, "<script><![CDATA[") != NULL);
  /* Nothing loaded from anywhere. */
  CHECK(strstr(html, " src=") == NULL && strstr(html, "<link") == NULL);
  CHECK(strstr(html, "<p class=\"cflame-hint\">") != NULL);
  /* The spec: in its own script element, which no text in it can end;
   * parsed back, it is the spec. */
  const char *open = "<script class=\"cflame-spec\" type=\"application/json\">";
  const char *start = strstr(html, open);
  CHECK(start != NULL);
  if (start) {
    start += strlen(open);
    const char *end = strstr(start, "</script>");
    CHECK(end != NULL);
    if (end) {
      CHECK(memmem(start, (size_t)(end - start), "<", 1) == NULL);
      json_error_t jerr;
      json_t *back = json_loadb(start, (size_t)(end - start), 0, &jerr);
      CHECK(back && json_equal(back, spec));
      json_decref(back);
    }
  }
  free(html);
  html = fl_html_page(spec, svg, NULL);
  CHECK(html && strstr(html, "<title>cflame flame graph</title>"));
  free(html);
  json_decref(spec);
  free(svg);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

/* The limit: its words, an input past it raw or unzipped, and paths that
 * are not regular files. */
static void test_input_limit(void) {
  char text[32], why[256];
  size_t bytes = 0;
  fl_input_limit_text(FL_INPUT_LIMIT_DEFAULT, text);
  CHECK_STR(text, "1 GiB");
  fl_input_limit_text(64 << 20, text);
  CHECK_STR(text, "64 MiB");
  fl_input_limit_text(1500, text);
  CHECK_STR(text, "1500 bytes");
  CHECK_INT(fl_input_limit_parse("4G", &bytes, why, sizeof why), 0);
  CHECK(bytes == (size_t)4 << 30);
  CHECK_INT(fl_input_limit_parse("512kib", &bytes, why, sizeof why), 0);
  CHECK(bytes == 512 << 10);
  CHECK_INT(fl_input_limit_parse("100", &bytes, why, sizeof why), 0);
  CHECK(bytes == 100);
  const char *bad[] = {"", "0", "-1", "1X", "G", "1.5G", "99999999999999999999", "20000000T"};
  for (size_t i = 0; i < FL__ARRAY_SIZE(bad); i++) {
    why[0] = '\0';
    CHECK_INT(fl_input_limit_parse(bad[i], &bytes, why, sizeof why), -1);
    CHECK(strstr(why, "such as 4G") != NULL);
  }

  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  fl_read_opts_t o;
  fl_read_opts_init(&o);
  /* 1 MiB of zeros, gzipped: past a limit of 64 KiB once unzipped */
  char *zeros = calloc(1 << 20, 1);
  size_t gz_len;
  char *gz = fl__gzip(zeros, 1 << 20, &gz_len);
  char path[] = "/tmp/cflame-test-io-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0 && write(fd, gz, gz_len) == (ssize_t)gz_len && close(fd) == 0);
  o.max_bytes = 64 << 10;
  o.raise_with = "--max-input-size SIZE";
  CHECK_INT(fl_read_profile_file_opts(p, path, &o, NULL, &err), -1);
  CHECK(strstr(err.message,
               "is gzip data that unzips to more than the limit of 64 KiB on an "
               "input; raise it with --max-input-size SIZE") != NULL);
  CHECK_INT(err.code, FL_IO_ERR_TOO_LARGE);
  /* within the limit, the zeros are binary, not text with a NUL byte */
  o.max_bytes = 2 << 20;
  CHECK_INT(fl_read_profile_file_opts(p, path, &o, NULL, &err), -1);
  CHECK(strstr(err.message, "NUL") == NULL);
  CHECK(strstr(err.message, "gzip-compressed, but not a pprof profile") != NULL);
  CHECK_INT(err.code, FL_IO_ERR_NOT_FORMAT);
  /* raw, past the limit: said before a byte is read */
  o.max_bytes = 100;
  CHECK_INT(fl_read_profile_file_opts(p, path, &o, NULL, &err), -1);
  char expected[256];
  snprintf(expected, sizeof expected, "%s is %zu bytes, more than the limit of 100 bytes", path,
           gz_len);
  CHECK(strstr(err.message, expected) != NULL);
  CHECK_INT(err.code, FL_IO_ERR_TOO_LARGE);
  unlink(path);
  free(gz);
  free(zeros);

  /* not regular files: said what they are, nothing opened */
  const struct {
    const char *path, *what;
  } special[] = {{"/dev/zero", "/dev/zero is a character device, not a regular file"},
                 {"/tmp", "/tmp is a directory, not a regular file"}};
  fl_read_opts_init(&o);
  for (size_t i = 0; i < 2; i++) {
    CHECK_INT(fl_read_profile_file_opts(p, special[i].path, &o, NULL, &err), -1);
    CHECK(strstr(err.message, special[i].what) != NULL);
    CHECK_INT(err.code, FL_IO_ERR_NOT_REGULAR);
    CHECK(strstr(err.message, "or - for standard input") != NULL);
  }
  o.stdin_dash = false;
  CHECK_INT(fl_read_profile_file_opts(p, "/dev/zero", &o, NULL, &err), -1);
  CHECK(strstr(err.message, "standard input") == NULL);
  CHECK_INT(fl_read_profile_file_opts(p, "-", &o, NULL, &err), -1);
  CHECK(strstr(err.message, "cannot open -") != NULL);
  CHECK_INT(err.code, FL_IO_ERR_SYSTEM);
  char fifo[] = "/tmp/cflame-test-io-fifo-XXXXXX";
  CHECK(mkdtemp(fifo) != NULL);
  char fifo_path[64];
  snprintf(fifo_path, sizeof fifo_path, "%s/f.folded", fifo);
  CHECK_INT(mkfifo(fifo_path, 0600), 0);
  CHECK_INT(fl_read_profile_file_opts(p, fifo_path, &o, NULL, &err), -1);
  CHECK(strstr(err.message, "is a FIFO (named pipe), not a regular file") != NULL);
  CHECK_INT(err.code, FL_IO_ERR_NOT_REGULAR);
  unlink(fifo_path);
  rmdir(fifo);
  CHECK_INT(fl_profile_n_samples(p), 0);
  fl_profile_destroy(&p);
}

/* The names in dir, sorted, joined by spaces. */
static void dir_names(const char *dir, char *out, size_t size) {
  struct dirent **names;
  int n = scandir(dir, &names, NULL, alphasort);
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (names[i]->d_name[0] != '.')
      used += (size_t)snprintf(out + used, size - used, "%s%s", used ? " " : "", names[i]->d_name);
    free(names[i]);
  }
  free(names);
}

/* fl_write_file: whole, through a file of its own, leaving nothing
 * behind on error. */
static void test_write_file(void) {
  char dir[] = "/tmp/cflame-test-io-write-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  char path[128], special[128], err[512], names[256];
  snprintf(path, sizeof path, "%s/out.svg", dir);
  CHECK_INT(fl_write_file(path, "<svg/>", 6, false, err, sizeof err), 0);
  char *back = NULL;
  size_t len = 0;
  FILE *f = fopen(path, "r");
  CHECK(f && getdelim(&back, &len, '\0', f) == 6 && !strcmp(back, "<svg/>"));
  if (f) fclose(f);
  free(back);
  struct stat st;
  mode_t mask = umask(022);
  umask(mask);
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));
  /* a private file written over stays private */
  CHECK_INT(chmod(path, 0600), 0);
  CHECK_INT(fl_write_file(path, "<svg />", 7, false, err, sizeof err), 0);
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_size == 7);
  /* a FIFO, unless written in place: refused, without waiting for a
   * reader */
  snprintf(special, sizeof special, "%s/fifo.svg", dir);
  CHECK_INT(mkfifo(special, 0600), 0);
  CHECK_INT(fl_write_file(special, "x", 1, false, err, sizeof err), -1);
  CHECK(strstr(err, "is a FIFO (named pipe), not a regular file") != NULL);
  /* a directory, in place or not */
  snprintf(special, sizeof special, "%s/dir.svg", dir);
  CHECK_INT(mkdir(special, 0700), 0);
  CHECK_INT(fl_write_file(special, "x", 1, true, err, sizeof err), -1);
  CHECK(strstr(err, "is a directory") != NULL);
  /* /dev/null in place */
  CHECK_INT(fl_write_file("/dev/null", "x", 1, true, err, sizeof err), 0);
  /* a folder that is not there */
  snprintf(special, sizeof special, "%s/no/such.svg", dir);
  CHECK_INT(fl_write_file(special, "x", 1, false, err, sizeof err), -1);
  CHECK(strstr(err, "cannot write") && strstr(err, "No such file"));
  dir_names(dir, names, sizeof names);
  CHECK_STR(names, "dir.svg fifo.svg out.svg");
  snprintf(special, sizeof special, "%s/dir.svg", dir);
  rmdir(special);
  snprintf(special, sizeof special, "%s/fifo.svg", dir);
  unlink(special);
  unlink(path);
  rmdir(dir);
}

/* The JSON readers on other tools' files, and on bad ones: each error says
 * what was wrong, and the profile read into is left as it was. */
static void json_error(const char *input, const char *says) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t e;
  int rc = fl_read_profile(p, input, strlen(input), "x.json", FL_INPUT_AUTO, NULL, &e);
  CHECK_INT(rc, -1);
  if (!strstr(e.message, says)) {
    fprintf(stderr, "%s: \"%s\" lacks \"%s\"\n", input, e.message, says);
    test_failures++;
  }
  CHECK_INT(fl_profile_n_samples(p), 0);
  fl_profile_destroy(&p);
}

/* input read into a new profile, told apart as want. */
static fl_profile_t *json_read(const char *input, fl_input_kind_t want) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t e;
  fl_input_kind_t kind;
  CHECK_INT(fl_read_profile(p, input, strlen(input), "in.json", FL_INPUT_AUTO, &kind, &e), 0);
  CHECK_INT(kind, want);
  return p;
}

static void test_json_formats(void) {
  fl_io_error_t e;
  /* speedscope's own example shape: evented, in milliseconds. */
  const char *evented =
      "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":"
      "[{\"name\":\"a\"},{\"name\":\"b\",\"file\":\"b.c\",\"line\":4}]},\"profiles\":[{\"type\":"
      "\"evented\",\"name\":\"main\",\"unit\":\"milliseconds\",\"startValue\":0,\"endValue\":6,"
      "\"events\":[{\"type\":\"O\",\"frame\":0,\"at\":0},{\"type\":\"O\",\"frame\":1,\"at\":2},"
      "{\"type\":\"C\",\"frame\":1,\"at\":6},{\"type\":\"C\",\"frame\":0,\"at\":6}]}]}";
  fl_profile_t *p = json_read(evented, FL_INPUT_SPEEDSCOPE);
  /* a for 2 ms, b under it for 4: the interval divides both */
  CHECK_INT(fl_profile_info(p)->interval_ns, 2000000);
  CHECK_INT(fl_profile_info(p)->total_weight, 3);
  CHECK_STR(fl_profile_thread_name(p, 1), "main");
  fl_profile_destroy(&p);
  /* Trace events of another tool: nested by time, weighing microseconds. */
  const char *trace =
      "[{\"name\":\"outer\",\"ph\":\"X\",\"ts\":10,\"dur\":100,\"tid\":7},"
      "{\"name\":\"inner\",\"ph\":\"X\",\"ts\":20,\"dur\":30,\"tid\":7},"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"tid\":7,\"args\":{\"name\":\"io\"}},"
      "{\"name\":\"i\",\"ph\":\"i\",\"ts\":5}]";
  p = json_read(trace, FL_INPUT_TRACE);
  CHECK_INT(fl_profile_info(p)->total_weight, 100);
  CHECK_STR(fl_profile_thread_name(p, 7), "io");
  fl_tree_t *t = fl_tree_build(p, NULL, NULL, e.message, sizeof e.message);
  char *f = fl_folded(t);
  CHECK_STR(f, "outer 70\nouter;inner 30\n");
  free(f);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);

  json_error("{\"profiles\": [}", "not valid JSON");
  json_error("{\"a\": 1}", "no format cflame reads");
  json_error(
      "{\"profiles\":[{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[3]],"
      "\"weights\":[1]}],\"shared\":{\"frames\":[{\"name\":\"a\"}]}}",
      "not one of the 1 shared frames");
  json_error(
      "{\"profiles\":[{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]],"
      "\"weights\":[-1]}],\"shared\":{\"frames\":[{\"name\":\"a\"}]}}",
      "weight 0 is not a number from 0");
  json_error(
      "{\"profiles\":[{\"type\":\"sampled\",\"unit\":\"parsecs\",\"samples\":[],"
      "\"weights\":[]}],\"shared\":{\"frames\":[]}}",
      "nanoseconds, microseconds");
  json_error(
      "{\"profiles\":[{\"type\":\"evented\",\"unit\":\"none\",\"events\":[{\"type\":\"C\","
      "\"frame\":0,\"at\":1}]}],\"shared\":{\"frames\":[{\"name\":\"a\"}]}}",
      "closes a frame that is not the last one opened");
  json_error(
      "{\"cflame\":{\"kind\":\"cpu\",\"diff\":true},\"profiles\":[],\"shared\":{\"frames\":[]}}",
      "holds a diff");
  json_error("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"ts\":-1}]}", "microseconds from 0");
  json_error("{\"traceEvents\":[{\"ph\":\"B\",\"name\":\"a\",\"ts\":1}]}", "no complete events");
  json_error(
      "{\"otherData\":{\"cflame\":{\"kind\":\"cpu\"}},\"traceEvents\":[{\"ph\":\"X\","
      "\"name\":\"a\",\"ts\":1,\"cflame\":{\"depth\":3,\"weight\":1}}]}",
      "under no event of depth 2");
  json_error(
      "{\"otherData\":{\"cflame\":{\"kind\":\"cpu\"}},\"traceEvents\":[{\"ph\":\"X\","
      "\"name\":\"a\",\"ts\":1,\"dur\":5,\"cflame\":{\"depth\":1,\"weight\":1}},{\"ph\":\"X\","
      "\"name\":\"b\",\"ts\":1,\"cflame\":{\"depth\":2,\"weight\":2}}]}",
      "weighs more than the event");
  /* A document that would take jansson past the budget is refused first. */
  fl_budget_t b;
  fl_budget_init(&b, (size_t)1 << 20);
  fl_read_opts_t o;
  fl_read_opts_init(&o);
  o.budget = &b;
  fl__buf_t big = FL__BUF_INIT;
  fl__buf_puts(&big, "[{}");
  for (int i = 0; i < 20000; i++) fl__buf_puts(&big, ",[]");
  fl__buf_puts(&big, "]");
  p = fl_profile_new(FL_PROFILE_CPU);
  CHECK_INT(fl_read_profile_opts(p, big.data, big.len, "big.json", &o, NULL, &e), -1);
  CHECK_INT(e.code, FL_IO_ERR_BUDGET);
  fl_profile_destroy(&p);
  fl__buf_free(&big);
}

int main(void) {
  test_json_formats();
  test_input_kinds_threads();
  test_input_kind_words();
  test_folded_counts();
  test_folded_spaces_and_lines();
  test_folded_errors();
  test_perf_captures();
  test_perf_dwarf_inlined();
  test_perf_errors();
  test_perf_time_and_threads();
  test_folded_out();
  test_folded_out_escapes();
  test_perf_round_trip();
  test_html_page();
  test_input_limit();
  test_write_file();
  return TEST_DONE();
}
