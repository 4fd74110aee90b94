/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests of fl_pprof: pprof written and read back (CPU and allocation
 * profiles, inlined frames, kinds of code), profiles built message by
 * message as other tools write them (Go's: only cpu/nanoseconds, ids that
 * are addresses, labels, unsymbolized locations), every check the reader
 * makes on a message, and gzip's errors. `go tool pprof` reading what
 * cflame writes is tests/cli/test_pprof.py's. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_io.h"
#include "cflame/fl_options.h"
#include "cflame/fl_output.h"
#include "fl__io.h" /* fl__gzip, fl__gunzip */
#include "fl_pprof.pb-c.h"
#include "profile_check.h"
#include "test.h"

typedef Perftools__Profiles__Profile pb_profile_t;

/* The pprof file of p (C on, lines on, minwidth 0). New; *size bytes. */
static char *pprof_of(const fl_profile_t *p, size_t *size) {
  fl_tree_t *t = whole_tree(p, true, true);
  char *out = fl_pprof(t, size);
  fl_tree_destroy(&t);
  return out;
}

static uint32_t add_frame(fl_profile_t *p, const char *func, const char *file, int line,
                          const char *module, uint32_t flags) {
  fl_frame_t f = {.func = func, .file = file, .line = line, .module = module, .flags = flags};
  return fl_profile_frame_id(p, &f);
}

/* ---- cflame's own profiles, there and back ---- */

static void test_cpu_round_trip(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 250000;
  fl_profile_info(p)->taken_unix = 1700000000;
  uint32_t start = add_frame(p, "_start", NULL, 0, "prog", FL_FRAME_CELL);
  uint32_t main_ = add_frame(p, "main", "prog.c", 10, "prog", FL_FRAME_CELL);
  uint32_t work = add_frame(p, "work", "prog.c", 4, "prog", FL_FRAME_CELL);
  uint32_t inl = add_frame(p, "square", "prog.h", 2, "prog", FL_FRAME_CELL | FL_FRAME_INLINED);
  uint32_t qsort_ =
      add_frame(p, "qsort", NULL, 0, "/usr/lib/x86_64-linux-gnu/libc.so.6", FL_FRAME_SYSTEM);
  uint32_t memcpy_ = add_frame(p, "memcpy", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM);
  uint32_t sys = add_frame(p, "do_syscall_64", NULL, 0, "[kernel.kallsyms]", FL_FRAME_KERNEL);
  uint32_t s1[] = {start, main_, work, inl};
  uint32_t s2[] = {start, main_, qsort_, work};
  uint32_t s3[] = {start, main_, memcpy_, sys};
  uint32_t s4[] = {start, main_, work};
  fl_profile_add_sample(p, s1, 4, 30, 0, 0);
  fl_profile_add_sample(p, s2, 4, 5, 0, 0);
  fl_profile_add_sample(p, s3, 4, 2, 0, 0);
  fl_profile_add_sample(p, s4, 3, 7, 0, 0);
  fl_profile_add_sample(p, NULL, 0, 1, 0, 0); /* the root's own */

  size_t size;
  char *file = pprof_of(p, &size);
  CHECK(size > 20 && (unsigned char)file[0] == 0x1f && (unsigned char)file[1] == 0x8b);
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  fl_input_kind_t kind;
  CHECK_INT(fl_read_profile(q, file, size, "p.pb.gz", FL_INPUT_AUTO, &kind, &err), 0);
  CHECK(kind == FL_INPUT_PPROF);
  const fl_profile_info_t *info = fl_profile_info_const(q);
  CHECK(info->kind == FL_PROFILE_CPU);
  CHECK_INT(info->interval_ns, 250000);
  CHECK_INT(info->total_weight, 45);
  CHECK_INT(info->taken_unix, 1700000000);
  for (int lines = 0; lines < 2; lines++) {
    char *a = folded_of(p, lines, true), *b = folded_of(q, lines, true);
    CHECK(a && b && strcmp(a, b) == 0);
    if (a && b && strcmp(a, b)) fprintf(stderr, "wrote:\n%s\nread:\n%s\n", a, b);
    free(a);
    free(b);
  }
  /* the kinds of code, the inlined frame, modules, files and lines */
  const fl_frame_t *f = frame_named(q, "square");
  CHECK(f && (f->flags & FL_FRAME_INLINED) && f->line == 2 && !strcmp(f->file, "prog.h"));
  CHECK(f && f->module && !strcmp(f->module, "prog"));
  f = frame_named(q, "work");
  CHECK(f && !(f->flags & FL_FRAME_INLINED) && (f->flags & FL_FRAME_CELL));
  CHECK((f = frame_named(q, "qsort")) && f->flags == FL_FRAME_SYSTEM);
  CHECK((f = frame_named(q, "memcpy")) && f->flags == FL_FRAME_SYSTEM); /* a bare soname */
  CHECK((f = frame_named(q, "do_syscall_64")) && f->flags == FL_FRAME_KERNEL);
  /* the same file again adds up: a CPU profile takes more CPU samples */
  CHECK_INT(fl_read_profile(q, file, size, "p.pb.gz", FL_INPUT_AUTO, NULL, &err), 0);
  CHECK_INT(fl_profile_info_const(q)->total_weight, 90);
  /* and bare, not gzipped */
  char *plain;
  size_t plain_len;
  char why[200];
  CHECK_INT(fl__gunzip(file, size, FL_INPUT_LIMIT_DEFAULT, &plain, &plain_len, why, sizeof why), 0);
  fl_profile_t *r = fl_profile_new(FL_PROFILE_CPU);
  CHECK_INT(fl_read_profile(r, plain, plain_len, "p.pb", FL_INPUT_AUTO, &kind, &err), 0);
  CHECK(kind == FL_INPUT_PPROF);
  CHECK_INT(fl_profile_info_const(r)->total_weight, 45);
  free(plain);
  fl_profile_destroy(&r);
  free(file);
  fl_profile_destroy(&q);

  /* an interval that is not known: samples alone */
  fl_profile_info(p)->interval_ns = 0;
  file = pprof_of(p, &size);
  q = fl_profile_new(FL_PROFILE_CPU);
  CHECK_INT(fl_read_profile(q, file, size, "p.pb.gz", FL_INPUT_AUTO, NULL, &err), 0);
  CHECK_INT(fl_profile_info_const(q)->interval_ns, 0);
  CHECK_INT(fl_profile_info_const(q)->total_weight, 45);
  free(file);
  fl_profile_destroy(&q);
  fl_profile_destroy(&p);
}

/* A wall-clock profile of 1 ms intervals with the frames main() and
 * work() of m.c, and no sample yet. New. */
static fl_profile_t *wall_main_work(uint32_t *main_, uint32_t *work) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_WALL);
  fl_profile_info(p)->interval_ns = 1000000;
  *main_ = add_frame(p, "main", "m.c", 3, "prog", FL_FRAME_CELL);
  *work = add_frame(p, "work", "m.c", 9, "prog", FL_FRAME_CELL);
  return p;
}

/* Threads, their names and time stamps go out as labels and come back;
 * the tree's thread filter and minwidth decide which samples go out, as
 * for a profile without them. */
static void test_labels_round_trip(void) {
  uint32_t main_, work;
  fl_profile_t *p = wall_main_work(&main_, &work);
  uint32_t s[] = {main_, work};
  static const struct {
    size_t n;
    uint64_t weight;
    int thread;
    uint64_t time_ns;
  } samples[] = {{2, 3, 1, 1000}, {1, 1, 2, 2000}, {2, 2, 2, 3000}, {2, 1, 1, 0}};
  for (size_t i = 0; i < 4; i++)
    fl_profile_add_sample_at(p, s, samples[i].n, samples[i].weight, 0, samples[i].thread,
                             samples[i].time_ns);
  fl_profile_set_thread_name(p, 2, "reader");
  size_t size;
  char *file = pprof_of(p, &size);
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  CHECK_INT(fl_read_profile(q, file, size, "w.pb.gz", FL_INPUT_AUTO, NULL, &err), 0);
  CHECK_INT(fl_profile_info_const(q)->kind, FL_PROFILE_WALL);
  CHECK_INT(fl_profile_n_samples(q), 4);
  fl_sample_t got;
  for (size_t i = 0; i < 4 && i < fl_profile_n_samples(q); i++) {
    fl_profile_sample(q, i, &got);
    CHECK_INT(got.n, samples[i].n);
    CHECK_INT(got.weight, samples[i].weight);
    CHECK_INT(got.thread, samples[i].thread);
    CHECK_INT(got.time_ns, samples[i].time_ns);
  }
  CHECK(fl_profile_thread_name(q, 1) == NULL);
  CHECK_STR(fl_profile_thread_name(q, 2), "reader");
  free(file);
  fl_profile_destroy(&q);

  /* threads=2 writes thread 2's samples only */
  int two = 2;
  fl_tree_opts_t o;
  fl_tree_opts_init(&o);
  o.minwidth = 0;
  o.threads = &two;
  o.n_threads = 1;
  char e[128];
  fl_tree_t *t = fl_tree_build(p, &o, NULL, e, sizeof e);
  file = fl_pprof(t, &size);
  q = fl_profile_new(FL_PROFILE_CPU);
  CHECK_INT(fl_read_profile(q, file, size, "w.pb.gz", FL_INPUT_AUTO, NULL, &err), 0);
  CHECK_INT(fl_profile_n_samples(q), 2);
  CHECK_INT(fl_profile_info_const(q)->total_weight, 3);
  free(file);
  fl_profile_destroy(&q);
  fl_tree_destroy(&t);
  fl_profile_destroy(&p);
}

static void test_alloc_round_trip(void) {
  for (int variant = 0; variant < 3; variant++) {
    fl_profile_t *p = fl_profile_new(fl_kind_alloc(variant == 2, variant == 1));
    fl_profile_info_t *info = fl_profile_info(p);
    info->sample_rate = 0.01;
    uint32_t main_ = add_frame(p, "main", "m.c", 3, "cell[1]", FL_FRAME_CELL);
    uint32_t malloc_ = add_frame(p, "malloc", NULL, 0, "libc.so.6", FL_FRAME_ALLOC);
    uint32_t s[] = {main_, malloc_};
    fl_profile_add_sample(p, s, 2, variant == 2 ? 300 : 4096, 300, 0);
    fl_profile_add_sample(p, s, 1, variant == 2 ? 100 : 100, 100, 0);
    size_t size;
    char *file = pprof_of(p, &size);
    fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU); /* empty: takes the file's kind */
    fl_io_error_t err;
    CHECK_INT(fl_read_profile(q, file, size, "a.pb.gz", FL_INPUT_AUTO, NULL, &err), 0);
    const fl_profile_info_t *got = fl_profile_info_const(q);
    CHECK(got->kind == info->kind);
    CHECK_INT(got->total_weight, info->total_weight);
    CHECK_INT(got->total_allocs, 400);
    CHECK(got->sample_rate == 0.01);
    char *a = folded_of(p, true, true), *b = folded_of(q, true, true);
    CHECK(a && b && strcmp(a, b) == 0);
    free(a);
    free(b);
    /* an allocation profile is not added to a CPU profile's samples */
    fl_profile_t *cpu = fl_profile_new(FL_PROFILE_CPU);
    CHECK_INT(fl_read_profile(cpu, "x 1\n", 4, "x", FL_INPUT_AUTO, NULL, &err), 0);
    CHECK_INT(fl_read_profile(cpu, file, size, "a.pb.gz", FL_INPUT_AUTO, NULL, &err), -1);
    CHECK_STR(err.message, "cannot add a.pb.gz, an allocation profile, to a CPU profile");
    CHECK_INT(fl_profile_info_const(cpu)->total_weight, 1);
    fl_profile_destroy(&cpu);
    free(file);
    fl_profile_destroy(&q);
    fl_profile_destroy(&p);
  }
}

/* The weight of p's samples of kind whose leaf is func. */
static uint64_t leaf_weight(const fl_profile_t *p, fl_profile_kind_t kind, const char *func) {
  uint64_t w = 0;
  fl_sample_t s;
  for (size_t i = 0; i < fl_profile_n_samples(p); i++) {
    fl_profile_sample(p, i, &s);
    if (s.kind == kind && s.n &&
        !strcmp(fl_profile_frame(p, fl_profile_sample_frame(p, &s, s.n - 1))->func, func))
      w += s.weight;
  }
  return w;
}

/* How many sample types a pprof file has. */
static size_t pprof_types(const char *file, size_t size) {
  char *plain, why[200];
  size_t len, n = 0;
  CHECK_INT(fl__gunzip(file, size, FL_INPUT_LIMIT_DEFAULT, &plain, &len, why, sizeof why), 0);
  pb_profile_t *pb = perftools__profiles__profile__unpack(NULL, len, (const uint8_t *)plain);
  CHECK(pb != NULL);
  if (pb) n = pb->n_sample_type;
  if (pb) perftools__profiles__profile__free_unpacked(pb, NULL);
  free(plain);
  return n;
}

/* p drawn as format with kind= (NULL: the default) and read back, and
 * how many sample types it had as pprof into *types (NULL: not asked).
 * New. */
static fl_profile_t *read_back(const fl_profile_t *p, const char *format, const char *kind,
                               size_t *types) {
  fl_options_t o;
  fl_options_init(&o, FL_FRONT_COMMAND);
  char err[256];
  if (kind) CHECK_INT(fl_options_set(&o, "kind", kind, err, sizeof err), 0);
  fl_output_req_t r = {.profile = p, .opts = &o, .format = format};
  size_t size = 0;
  char *file = fl_output_render(&r, &size, err, sizeof err);
  CHECK(file != NULL);
  fl_options_free(&o);
  if (types) *types = pprof_types(file, size);
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t e = {0};
  CHECK_INT(fl_read_profile(q, file, size, format, FL_INPUT_AUTO, NULL, &e), 0);
  free(file);
  return q;
}

/* A profile of CPU time split 1:3 between one() and three() and of
 * allocated bytes split 1:3 between small() and big(), written as pprof
 * drawing each kind and read back: one profile of both kinds again, each
 * sample of its own, the kind drawn the file's first (its default sample
 * type) and so the profile's. */
static void test_kinds_round_trip(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000000;
  uint32_t main_ = add_frame(p, "main", "prog.c", 3, "prog", FL_FRAME_CELL);
  uint32_t fn[4];
  const char *names[] = {"one", "three", "small", "big"};
  for (int i = 0; i < 4; i++)
    fn[i] = add_frame(p, names[i], "prog.c", 10 + i, "prog", FL_FRAME_CELL);
  for (int i = 0; i < 40; i++) {
    uint32_t st[] = {main_, fn[i < 10 ? 0 : 1]};
    fl_profile_add_sample_at(p, st, 2, 1, 0, 1, 1000000 * (uint64_t)(i + 1));
  }
  for (int i = 0; i < 8; i++) {
    uint32_t st[] = {main_, fn[i < 4 ? 2 : 3]};
    fl_profile_add_sample_of(p, FL_PROFILE_ALLOC_BYTES, st, 2, i < 4 ? 250 : 750, 1, 1,
                             1000000 * (uint64_t)(i + 1));
  }
  const char *kinds[] = {"cpu", "alloc_bytes"};
  for (int k = 0; k < 2; k++) {
    fl_profile_t *q = read_back(p, "pprof", kinds[k], NULL);
    const fl_profile_info_t *info = fl_profile_info_const(q);
    CHECK_INT(info->kind, k ? FL_PROFILE_ALLOC_BYTES : FL_PROFILE_CPU);
    CHECK_INT(fl_profile_kinds(q), 1u << FL_PROFILE_CPU | 1u << FL_PROFILE_ALLOC_BYTES);
    CHECK_INT(info->interval_ns, 1000000);
    CHECK_INT(leaf_weight(q, FL_PROFILE_CPU, "one"), 10);
    CHECK_INT(leaf_weight(q, FL_PROFILE_CPU, "three"), 30);
    CHECK_INT(leaf_weight(q, FL_PROFILE_ALLOC_BYTES, "small"), 1000);
    CHECK_INT(leaf_weight(q, FL_PROFILE_ALLOC_BYTES, "big"), 3000);
    CHECK_INT(leaf_weight(q, FL_PROFILE_CPU, "big"), 0);
    fl_kind_totals_t t;
    fl_profile_kind_totals(q, FL_PROFILE_ALLOC_BYTES, &t);
    CHECK_INT(t.samples, 8);
    CHECK_INT(t.allocs, 8);
    fl_profile_destroy(&q);
  }
  fl_profile_destroy(&p);
}

/* A wall-clock profile, its stacks as the collector writes them (the
 * waits' leaves named, "[off-CPU: sleep]"), written by default (kind=wall)
 * as pprof, and as speedscope, and read back: each sample is CPU time or
 * off-CPU time again, the waits are waits, and the profile wall-clock
 * time, the sum. Written with kind=cpu or kind=offcpu, a pprof file is
 * that part alone. */
static void test_wall_round_trip(void) {
  uint32_t main_, work;
  fl_profile_t *p = wall_main_work(&main_, &work);
  uint32_t sleep_ = add_frame(p, "nanosleep", NULL, 0, "libc.so.6", FL_FRAME_SYSTEM);
  uint32_t slept = add_frame(p, "[off-CPU: sleep]", NULL, 0, NULL, 0);
  uint32_t queued = add_frame(p, "[off-CPU: runnable]", NULL, 0, NULL, 0);
  uint32_t ran[] = {main_, work}, waited[] = {main_, sleep_, slept}, runnable[] = {main_, work, queued};
  for (int i = 0; i < 45; i++) {
    const uint32_t *st = i < 10 ? ran : i < 40 ? waited : runnable;
    fl_profile_add_sample_at(p, st, i < 10 ? 2 : 3, 1, 0, 1, 1000000 * (uint64_t)(i + 1));
  }
  const char *formats[] = {"pprof", "speedscope"};
  for (int k = 0; k < 2; k++) {
    size_t types = 0;
    fl_profile_t *q = read_back(p, formats[k], NULL, k ? NULL : &types);
    if (!k) CHECK_INT(types, 2); /* "samples" and "wall", as before */
    const fl_profile_info_t *info = fl_profile_info_const(q);
    CHECK_INT(info->kind, FL_PROFILE_WALL);
    CHECK_INT(fl_profile_kinds(q),
              1u << FL_PROFILE_CPU | 1u << FL_PROFILE_WALL | 1u << FL_PROFILE_OFFCPU);
    CHECK_INT(info->interval_ns, 1000000);
    CHECK_INT(info->total_weight, 45);
    CHECK_INT(leaf_weight(q, FL_PROFILE_CPU, "work"), 10);
    CHECK_INT(leaf_weight(q, FL_PROFILE_OFFCPU, "[off-CPU: sleep]"), 30);
    CHECK_INT(leaf_weight(q, FL_PROFILE_OFFCPU, "[off-CPU: runnable]"), 5);
    fl_kind_totals_t t;
    fl_profile_kind_totals(q, FL_PROFILE_CPU, &t);
    CHECK_INT(t.weight, 10);
    for (size_t id = 0; id < fl_profile_n_frames(q); id++) {
      const fl_frame_t *f = fl_profile_frame(q, (uint32_t)id);
      if (!strcmp(f->func, "[off-CPU: runnable]"))
        CHECK_INT(f->flags & (FL_FRAME_OFFCPU | FL_FRAME_RUNNABLE),
                  FL_FRAME_OFFCPU | FL_FRAME_RUNNABLE);
    }
    fl_profile_destroy(&q);
  }
  /* Drawn as one part, it is a profile of that part alone. */
  const fl_profile_kind_t parts[] = {FL_PROFILE_CPU, FL_PROFILE_OFFCPU};
  for (int k = 0; k < 2; k++) {
    size_t types = 0;
    fl_profile_t *q = read_back(p, "pprof", fl_kind(parts[k])->name, &types);
    CHECK_INT(types, 2); /* "samples" and the part's, no other */
    CHECK_INT(fl_profile_info_const(q)->kind, parts[k]);
    CHECK_INT(fl_profile_kinds(q), 1u << parts[k]);
    CHECK_INT(fl_profile_info_const(q)->total_weight, k ? 35 : 10);
    fl_profile_destroy(&q);
  }
  fl_profile_destroy(&p);
}

/* ---- profiles as other tools write them ---- */

/* A profile message built by hand: strings, and every message in arrays
 * the test fills in. */
typedef struct msg {
  pb_profile_t pb;
  char *strings[32];
  Perftools__Profiles__ValueType types[4], *type_ptrs[4], period_type;
  Perftools__Profiles__Sample samples[8], *sample_ptrs[8];
  uint64_t loc_ids[8][4];
  int64_t values[8][4];
  Perftools__Profiles__Label labels[8], *label_ptrs[8];
  Perftools__Profiles__Mapping maps[4], *map_ptrs[4];
  Perftools__Profiles__Location locs[8], *loc_ptrs[8];
  Perftools__Profiles__Line lines[8][3], *line_ptrs[8][3];
  Perftools__Profiles__Function fns[8], *fn_ptrs[8];
} msg_t;

static int64_t str(msg_t *m, const char *s) {
  for (size_t i = 0; i < m->pb.n_string_table; i++)
    if (!strcmp(m->strings[i], s)) return (int64_t)i;
  m->strings[m->pb.n_string_table] = (char *)s;
  return (int64_t)m->pb.n_string_table++;
}

/* A CPU profile as Go's runtime/pprof writes one, but with ids that are
 * addresses and only cpu/nanoseconds:
 *   main.main -> main.busy (+ main.inner inlined)     30 ms
 *   main.main -> [libfoo.so] (no lines)                10 ms, thread 42
 *   runtime.futex in [kernel.kallsyms]                 20 ms */
static void go_like(msg_t *m) {
  memset(m, 0, sizeof *m);
  perftools__profiles__profile__init(&m->pb);
  m->pb.string_table = m->strings;
  str(m, "");
  perftools__profiles__value_type__init(&m->types[0]);
  m->types[0].type = str(m, "cpu");
  m->types[0].unit = str(m, "nanoseconds");
  m->type_ptrs[0] = &m->types[0];
  m->pb.sample_type = m->type_ptrs;
  m->pb.n_sample_type = 1;
  perftools__profiles__value_type__init(&m->period_type);
  m->period_type.type = str(m, "cpu");
  m->period_type.unit = str(m, "nanoseconds");
  m->pb.period_type = &m->period_type;
  m->pb.period = 10000000;
  static const char *const map_files[] = {"/tmp/go-build/exe/prog", "/opt/libfoo.so",
                                          "[kernel.kallsyms]"};
  for (int i = 0; i < 3; i++) {
    perftools__profiles__mapping__init(&m->maps[i]);
    m->maps[i].id = 100 + (uint64_t)i;
    m->maps[i].filename = str(m, map_files[i]);
    m->map_ptrs[i] = &m->maps[i];
  }
  m->pb.mapping = m->map_ptrs;
  m->pb.n_mapping = 3;
  static const char *const fn_names[] = {"main.main", "main.busy", "main.inner", "runtime.futex"};
  for (int i = 0; i < 4; i++) {
    perftools__profiles__function__init(&m->fns[i]);
    m->fns[i].id = 7 + (uint64_t)i * 3;
    m->fns[i].name = str(m, fn_names[i]);
    m->fns[i].filename = str(m, i < 3 ? "/src/prog/main.go" : "");
    m->fn_ptrs[i] = &m->fns[i];
  }
  m->pb.function = m->fn_ptrs;
  m->pb.n_function = 4;
  /* locations: 0x401000 main.main:12; 0x402000 busy:20 with inner:30
   * inlined; 0x7f0000 in libfoo, no lines; 0xffffffff81000000 futex */
  static const uint64_t addrs[] = {0x401000, 0x402000, 0x7f0000, 0xffffffff81000000};
  static const uint64_t loc_map[] = {100, 100, 101, 102};
  for (int i = 0; i < 4; i++) {
    perftools__profiles__location__init(&m->locs[i]);
    m->locs[i].id = addrs[i];
    m->locs[i].address = addrs[i];
    m->locs[i].mapping_id = loc_map[i];
    m->loc_ptrs[i] = &m->locs[i];
  }
  struct {
    int loc, fn;
    int64_t line;
  } lines[] = {{0, 0, 12}, {1, 2, 30}, {1, 1, 20}, {3, 3, 0}};
  for (size_t k = 0; k < FL__ARRAY_SIZE(lines); k++) {
    Perftools__Profiles__Location *l = &m->locs[lines[k].loc];
    Perftools__Profiles__Line *line = &m->lines[lines[k].loc][l->n_line];
    perftools__profiles__line__init(line);
    line->function_id = m->fns[lines[k].fn].id;
    line->line = lines[k].line;
    m->line_ptrs[lines[k].loc][l->n_line] = line;
    l->line = m->line_ptrs[lines[k].loc];
    l->n_line++;
  }
  m->pb.location = m->loc_ptrs;
  m->pb.n_location = 4;
  struct {
    int n;
    uint64_t locs[3];
    int64_t ns;
  } samples[] = {{2, {0x402000, 0x401000}, 30000000},
                 {2, {0x7f0000, 0x401000}, 10000000},
                 {1, {0xffffffff81000000}, 20000000}};
  for (int i = 0; i < 3; i++) {
    Perftools__Profiles__Sample *s = &m->samples[i];
    perftools__profiles__sample__init(s);
    memcpy(m->loc_ids[i], samples[i].locs, sizeof samples[i].locs);
    s->location_id = m->loc_ids[i];
    s->n_location_id = (size_t)samples[i].n;
    m->values[i][0] = samples[i].ns;
    s->value = m->values[i];
    s->n_value = 1;
    m->sample_ptrs[i] = s;
  }
  perftools__profiles__label__init(&m->labels[0]);
  m->labels[0].key = str(m, "thread");
  m->labels[0].num = 42;
  m->label_ptrs[0] = &m->labels[0];
  m->samples[1].label = m->label_ptrs;
  m->samples[1].n_label = 1;
  m->pb.sample = m->sample_ptrs;
  m->pb.n_sample = 3;
}

/* Reads the message (bare) into a profile holding one sample already. 0
 * and the profile, or -1 with err (the profile then unchanged). */
static int read_msg(const msg_t *m, fl_profile_t **out, fl_io_error_t *err) {
  size_t size = perftools__profiles__profile__get_packed_size(&m->pb);
  uint8_t *buf = malloc(size);
  perftools__profiles__profile__pack(&m->pb, buf);
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_frame_t before = {.func = "before"};
  uint32_t id = fl_profile_frame_id(p, &before);
  fl_profile_add_sample(p, &id, 1, 1, 0, 0);
  int rc = fl_read_profile(p, (const char *)buf, size, "go.pb", FL_INPUT_PPROF, NULL, err);
  free(buf);
  if (rc < 0) {
    CHECK_INT(fl_profile_info_const(p)->total_weight, 1);
    CHECK_INT(fl_profile_n_frames(p), 1);
    fl_profile_destroy(&p);
  }
  *out = p;
  return rc;
}

static void test_go_like(void) {
  msg_t m;
  go_like(&m);
  fl_profile_t *p;
  fl_io_error_t err;
  CHECK_INT(read_msg(&m, &p, &err), 0);
  if (!p) {
    fprintf(stderr, "  %s\n", err.message);
    return;
  }
  /* times in units of their gcd, 10 ms, which is the interval */
  CHECK_INT(fl_profile_info_const(p)->interval_ns, 10000000);
  char *folded = folded_of(p, false, true);
  CHECK_STR(folded,
            "before 1\n"
            "main.main;[libfoo.so] 1\n"
            "main.main;main.busy;main.inner 3\n"
            "runtime.futex 2\n");
  free(folded);
  const fl_frame_t *f = frame_named(p, "main.inner");
  CHECK(f && (f->flags & FL_FRAME_INLINED) && f->line == 30 && f->addr == 0x402000);
  CHECK(f && !strcmp(f->module, "/tmp/go-build/exe/prog") && !strcmp(f->file, "/src/prog/main.go"));
  CHECK((f = frame_named(p, "main.busy")) && !(f->flags & FL_FRAME_INLINED) && f->line == 20);
  CHECK((f = frame_named(p, "runtime.futex")) && f->flags == FL_FRAME_KERNEL && !f->file);
  CHECK((f = frame_named(p, "[libfoo.so]")) && f->flags == FL_FRAME_CELL);
  int *threads;
  size_t n = fl_profile_threads(p, &threads);
  CHECK_INT(n, 2);
  CHECK(n == 2 && threads[0] == 0 && threads[1] == 42);
  free(threads);
  fl_profile_destroy(&p);

  /* with a samples count, the weight is that count and the period the
   * interval; a value of 0 adds nothing */
  go_like(&m);
  m.types[1] = m.types[0];
  m.types[0].type = str(&m, "samples");
  m.types[0].unit = str(&m, "count");
  m.type_ptrs[1] = &m.types[1];
  m.pb.n_sample_type = 2;
  int64_t counts[] = {3, 0, 2};
  for (int i = 0; i < 3; i++) {
    m.values[i][1] = m.values[i][0];
    m.values[i][0] = counts[i];
    m.samples[i].n_value = 2;
  }
  CHECK_INT(read_msg(&m, &p, &err), 0);
  if (p) {
    CHECK_INT(fl_profile_info_const(p)->interval_ns, 10000000);
    CHECK_INT(fl_profile_info_const(p)->total_weight, 6);
    fl_profile_destroy(&p);
  }

  /* Go's heap profile: the default sample type in bytes, with its objects */
  go_like(&m);
  static const char *const heap[][2] = {{"alloc_objects", "count"},
                                        {"alloc_space", "bytes"},
                                        {"inuse_objects", "count"},
                                        {"inuse_space", "bytes"}};
  for (int i = 0; i < 4; i++) {
    perftools__profiles__value_type__init(&m.types[i]);
    m.types[i].type = str(&m, heap[i][0]);
    m.types[i].unit = str(&m, heap[i][1]);
    m.type_ptrs[i] = &m.types[i];
  }
  m.pb.n_sample_type = 4;
  m.pb.default_sample_type = str(&m, "inuse_space");
  for (int i = 0; i < 3; i++) {
    int64_t v[] = {2, 2048, 1, 1024};
    memcpy(m.values[i], v, sizeof v);
    m.samples[i].n_value = 4;
  }
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  size_t size = perftools__profiles__profile__get_packed_size(&m.pb);
  uint8_t *buf = malloc(size);
  perftools__profiles__profile__pack(&m.pb, buf);
  CHECK_INT(fl_read_profile(q, (char *)buf, size, "heap.pb", FL_INPUT_AUTO, NULL, &err), 0);
  const fl_profile_info_t *info = fl_profile_info_const(q);
  CHECK(info->kind == FL_PROFILE_LIVE_BYTES);
  CHECK_INT(info->total_weight, 3 * 1024);
  CHECK_INT(info->total_allocs, 3);
  free(buf);
  fl_profile_destroy(&q);
  /* without a default, the last type is the one to show, as the format
   * says (Go 1.19's heap profiles): inuse_space again; with alloc_objects
   * as the default, alloc_space */
  for (int def = 0; def < 2; def++) {
    m.pb.default_sample_type = def ? str(&m, "alloc_objects") : 0;
    size = perftools__profiles__profile__get_packed_size(&m.pb);
    buf = malloc(size);
    perftools__profiles__profile__pack(&m.pb, buf);
    q = fl_profile_new(FL_PROFILE_CPU);
    CHECK_INT(fl_read_profile(q, (char *)buf, size, "heap.pb", FL_INPUT_AUTO, NULL, &err), 0);
    CHECK(fl_kind(fl_profile_info_const(q)->kind)->live == !def);
    CHECK_INT(fl_profile_info_const(q)->total_weight, def ? 3 * 2048 : 3 * 1024);
    CHECK_INT(fl_profile_info_const(q)->total_allocs, def ? 6 : 3);
    free(buf);
    fl_profile_destroy(&q);
  }
}

/* Each rule of the format, broken once: the error says what was wrong,
 * names the file, and the profile is left as it was. */
static void test_bad_messages(void) {
  msg_t m;
  fl_profile_t *p;
  fl_io_error_t err;
#define BROKEN(change, want)                                                                  \
  do {                                                                                        \
    go_like(&m);                                                                              \
    change;                                                                                   \
    CHECK_INT(read_msg(&m, &p, &err), -1);                                                    \
    CHECK_STR(err.file, "go.pb");                                                             \
    if (!strstr(err.message, want)) {                                                         \
      test_failures++;                                                                        \
      fprintf(stderr, "%s:%d: \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, err.message, want); \
    }                                                                                         \
    fl_profile_destroy(&p);                                                                   \
  } while (0)
  BROKEN(m.strings[0] = "x",
         "go.pb is not a valid pprof profile: its string table does not start with \"\"");
  BROKEN(m.fns[1].name = 99, "a function's name is string 99, but the string table has");
  BROKEN(m.maps[2].id = 100, "two mappings have id 100");
  BROKEN(m.locs[2].id = 0, "location 3 has id 0");
  BROKEN(m.locs[0].mapping_id = 5,
         "location 4198400 is in mapping 5, which the profile does not have");
  BROKEN(m.lines[0][0].function_id = 1, "names function 1, which the profile does not have");
  BROKEN(m.loc_ids[1][1] = 77, "sample 2 names location 77, which the profile does not have");
  BROKEN(m.samples[2].n_value = 0, "sample 3 has 0 values for 1 sample types");
  BROKEN(m.values[0][0] = -5, "sample 1 has the negative value -5");
  BROKEN(m.pb.n_sample_type = 0, "it has no sample types");
  BROKEN(m.types[0].unit = 1234, "a sample type's unit is string 1234");
  BROKEN(for (int i = 0; i < 3; i++) m.values[i][0] = 0,
         "no samples found in go.pb: every sample's value is 0");
  /* No period to take a unit from, and no value either: refused, never
   * divided by. */
  BROKEN(m.pb.period = 0; m.pb.period_type = NULL;
         for (int i = 0; i < 3; i++) m.values[i][0] = 0,
         "no samples found in go.pb: every sample's value is 0");
  BROKEN(m.pb.n_sample = 0, "no samples found in go.pb: the profile has no samples");
#undef BROKEN
}

/* ---- gzip ---- */

static void test_gzip_errors(void) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_info(p)->interval_ns = 1000;
  uint32_t a = add_frame(p, "a", NULL, 0, NULL, FL_FRAME_CELL);
  fl_profile_add_sample(p, &a, 1, 9, 0, 0);
  size_t size;
  char *file = pprof_of(p, &size);
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  /* truncated */
  CHECK_INT(fl_read_profile(q, file, size - 5, "t.pb.gz", FL_INPUT_AUTO, NULL, &err), -1);
  CHECK(strstr(err.message, "t.pb.gz starts as a gzip file") &&
        strstr(err.message, "the gzip data is truncated"));
  CHECK_INT(err.code, FL_IO_ERR_GZIP);
  /* damaged: a byte of the deflate data changed, or of its checksum */
  char *copy = malloc(size + 8);
  memcpy(copy, file, size);
  copy[size - 6] ^= 0x55;
  CHECK_INT(fl_read_profile(q, copy, size, "d.pb.gz", FL_INPUT_AUTO, NULL, &err), -1);
  CHECK(strstr(err.message, "the gzip data is damaged") != NULL);
  CHECK_INT(err.code, FL_IO_ERR_GZIP);
  /* something after it */
  memcpy(copy, file, size);
  memcpy(copy + size, "garbage!", 8);
  CHECK_INT(fl_read_profile(q, copy, size + 8, "g.pb.gz", FL_INPUT_AUTO, NULL, &err), -1);
  CHECK(strstr(err.message, "8 bytes after the end of the gzip data are not gzip") != NULL);
  CHECK_INT(err.code, FL_IO_ERR_GZIP);
  /* gzip of something else: text is read as text, binary is not pprof */
  size_t zlen;
  char *z = fl__gzip("a;b 3\nc", 7, &zlen);
  CHECK_INT(fl_read_profile(q, z, zlen, "f.gz", FL_INPUT_AUTO, NULL, &err), -1);
  CHECK_INT(err.line, 2);
  CHECK(strstr(err.message, "not a line of folded stacks") != NULL);
  CHECK_INT(err.code, FL_IO_ERR_NOT_FORMAT);
  free(z);
  z = fl__gzip("a;b 3\n", 6, &zlen);
  CHECK_INT(fl_read_profile(q, z, zlen, "f.gz", FL_INPUT_AUTO, NULL, &err), 0);
  free(z);
  z = fl__gzip("\x01\x02\x03\xff\xff", 5, &zlen);
  CHECK_INT(fl_read_profile(q, z, zlen, "b.gz", FL_INPUT_AUTO, NULL, &err), -1);
  CHECK_STR(err.message,
            "b.gz is gzip-compressed, but not a pprof profile: its unzipped bytes are not a "
            "valid profile.proto message (truncated, or another format)");
  CHECK_INT(err.code, FL_IO_ERR_NOT_FORMAT);
  free(z);
  CHECK_INT(fl_profile_info_const(q)->total_weight, 3);
  free(copy);
  free(file);
  fl_profile_destroy(&q);
  fl_profile_destroy(&p);
}

static void test_output_formats(void) {
  CHECK_STR(fl_output_format_of_path("a/b.pb.gz"), "pprof");
  CHECK_STR(fl_output_format_of_path("X.PB.GZ"), "pprof");
  CHECK_STR(fl_output_format_of_path("x.vl.json"), "vegalite");
  CHECK_STR(fl_output_format_of_path("x.svg"), "svg");
  CHECK_STR(fl_output_format_of_path("x.txt"), "text");
  CHECK(fl_output_format_of_path("x.gz") == NULL);
  CHECK(fl_output_format_of_path(".svg") == NULL);
  CHECK_STR(fl_output_format_of_path("x.speedscope.json"), "speedscope");
  CHECK_STR(fl_output_format_of_path("x.Trace.JSON"), "trace");
  CHECK(fl_output_format_of_path("x.json") == NULL);
  CHECK_STR(fl_output_endings(false),
            ".svg, .html, .vl.json, .folded, .txt, .pb.gz, "
            ".speedscope.json, .trace.json, .png, .pdf");
  CHECK_STR(fl_output_endings(true),
            ".svg, .html, .vl.json, .folded, .txt, .pb.gz, "
            ".speedscope.json, .trace.json, .png or .pdf");
}

/* Two runs' pprof files (durations 2.5 s and 4 s) read into one profile:
 * the profile's duration is their sum, and each input keeps its own, under
 * its name, through a merge and a copy. A folded file has none to keep. */
static void test_runs_of_merged_inputs(void) {
  char *files[2];
  size_t sizes[2];
  const double walls[2] = {2.5, 4.0};
  for (int k = 0; k < 2; k++) {
    fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
    fl_profile_info(p)->interval_ns = 1000000;
    fl_profile_info(p)->wall_seconds = walls[k];
    uint32_t main_ = add_frame(p, "main", "prog.c", 10, "prog", FL_FRAME_CELL);
    fl_profile_add_sample(p, &main_, 1, 10 + (uint64_t)k, 0, 0);
    files[k] = pprof_of(p, &sizes[k]);
    fl_profile_destroy(&p);
  }
  fl_profile_t *q = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t err;
  CHECK_INT(fl_read_profile(q, files[0], sizes[0], "A.pb.gz", FL_INPUT_AUTO, NULL, &err), 0);
  CHECK_INT(fl_read_profile(q, files[1], sizes[1], "B.pb.gz", FL_INPUT_AUTO, NULL, &err), 0);
  const char folded[] = "prog;main 5\n";
  CHECK_INT(fl_read_profile(q, folded, strlen(folded), "C.folded", FL_INPUT_AUTO, NULL, &err), 0);
  CHECK(fl_profile_info_const(q)->wall_seconds == 6.5);
  CHECK_INT(fl_profile_n_runs(q), 2);
  const fl_profile_run_t *a = fl_profile_run(q, 0), *b = fl_profile_run(q, 1);
  CHECK(a && b && fl_profile_run(q, 2) == NULL);
  if (a && b) {
    CHECK_STR(a->name, "A.pb.gz");
    CHECK(a->wall_seconds == 2.5 && a->cpu_seconds == 0);
    CHECK_STR(b->name, "B.pb.gz");
    CHECK(b->wall_seconds == 4.0);
  }
  fl_profile_t *copy = fl_profile_copy(q), *merged = fl_profile_new(FL_PROFILE_CPU);
  fl_profile_merge(merged, q);
  CHECK_INT(fl_profile_n_runs(copy), 2);
  CHECK_INT(fl_profile_n_runs(merged), 2);
  if (fl_profile_n_runs(merged) == 2) CHECK_STR(fl_profile_run(merged, 1)->name, "B.pb.gz");
  fl_profile_clear(merged);
  CHECK_INT(fl_profile_n_runs(merged), 0);
  fl_profile_destroy(&copy);
  fl_profile_destroy(&merged);
  fl_profile_destroy(&q);
  free(files[0]);
  free(files[1]);
}

int main(void) {
  test_kinds_round_trip();
  test_wall_round_trip();
  test_cpu_round_trip();
  test_alloc_round_trip();
  test_labels_round_trip();
  test_go_like();
  test_runs_of_merged_inputs();
  test_bad_messages();
  test_gzip_errors();
  test_output_formats();
  return TEST_DONE();
}
