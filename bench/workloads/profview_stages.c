/* SPDX-License-Identifier: BSD-3-Clause */
/* profview_stages: where %%profview's time goes after the cell has run.
 *
 *   profview_stages SESSION_DIR WORKER_PID CELL REPEATS [PROFVIEW_ARGS]
 *
 * Runs the kernel's own code (libcflame_kn, libcflame) on a real sample
 * buffer: SESSION_DIR/samples.buf, as the worker WORKER_PID left it after a
 * %%profview cell. The worker must still be alive (its /proc/PID/maps is
 * what the kernel symbolizes against) and idle. Each stage is timed REPEATS
 * times (CLOCK_MONOTONIC); the medians are printed as one JSON line:
 *
 *   symbolizer   fl_symbolizer_new_from_pid + destroy (maps, no lookups)
 *   symbolize    a new symbolizer and fl_symbolizer_lookup of each record's
 *                addresses, leaf first, up to the cell's entry function or
 *                the worker's own code, where kn_prof_collect stops
 *   collect      kn_prof_collect: the above, plus building the profile, as
 *                the kernel runs it from its second collection on: with the
 *                session's symbolizer refreshed, not new, so the debug
 *                information of modules still mapped is already read (the
 *                median of REPEATS runs; the first, which pays for
 *                reading it, is printed apart as collect_first_s)
 *   tree         fl_tree_build with the cell's options
 *   vegalite     fl_vegalite
 *   svg          fl_svg
 *   text         fl_text_tree (max_lines 200, as the bundle's text/plain)
 *   bundle       fl_bundle (the three, measured, re-drawn smaller if > 1 MB)
 *   show         kn_prof_show: tree + summary + bundle + copies for %profsave
 *   dump         the bundle as compact JSON (what the kernel's wire does)
 *
 * Nothing here changes the buffer or the worker. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_render.h"
#include "cflame/fl_sampler.h"
#include "cflame/fl_symbol.h"
#include "cflame/fl_tree.h"
#include "kn_names.h"
#include "kn_prof.h"
#include "kn_profmagic.h"

#define MAX_REPEATS 101
enum { S_SYMBOLIZER, S_SYMBOLIZE, S_COLLECT, S_TREE, S_VEGALITE, S_SVG, S_TEXT, S_BUNDLE,
       S_SHOW, S_DUMP, N_STAGES };
static const char *const names[N_STAGES] = {"symbolizer", "symbolize", "collect", "tree",
                                            "vegalite", "svg", "text", "bundle", "show", "dump"};
static double t[N_STAGES][MAX_REPEATS];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void die(const char *what, const char *err) {
  fprintf(stderr, "profview_stages: %s: %s\n", what, err);
  exit(1);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s SESSION_DIR WORKER_PID CELL REPEATS [PROFVIEW_ARGS]\n", argv[0]);
    return 2;
  }
  const char *dir = argv[1];
  pid_t pid = (pid_t)atoi(argv[2]);
  int cell = atoi(argv[3]);
  int repeats = atoi(argv[4]);
  if (repeats < 1) repeats = 1;
  if (repeats > MAX_REPEATS) repeats = MAX_REPEATS;
  const char *args = argc > 5 ? argv[5] : "";
  char err[512], root[32];
  snprintf(root, sizeof root, KN_CELL_FILE_FMT, cell);

  kn_prof_t *kp = kn_prof_new(dir);
  kn_profreq_t req;
  if (kn_profreq_parse(kp, "profview", args, KN_OPTS_PROFILER | KN_OPTS_TREE | KN_OPTS_VIEW, &req,
                       err, sizeof err) < 0)
    die("options", err);
  req.mode = KN_PROF_VIEW;

  /* The buffer, read-only, for the symbolize stage and the run's figures. */
  const char *buffer_path = kn_prof_buffer_path(kp);
  int fd = open(buffer_path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) die(buffer_path, "cannot open");
  size_t bytes = (size_t)st.st_size;
  const void *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) die(buffer_path, "cannot map");
  close(fd);
  const fl_sampler_header_t *h = map;
  uint64_t records = 0, pcs = 0, cpu_ns = 0;
  size_t pos = 0;
  fl_sampler_record_t rec;
  while (fl_sampler_next(map, bytes, &pos, &rec) == 1) {
    records++;
    pcs += rec.n_pcs;
    cpu_ns += rec.cpu_ns;
  }
  kn_prof_run_t run = {.interval_ns = h->interval_ns, .samples = h->samples,
                       .dropped = h->dropped, .cpu_seconds = (double)cpu_ns / 1e9,
                       .wall_seconds = (double)cpu_ns / 1e9, .cell = cell};
  snprintf(run.source, sizeof run.source, "bench");

  size_t nodes = 0, dump_bytes = 0, frames = 0;
  for (int r = 0; r < repeats; r++) {
    double t0 = now();
    fl_symbolizer_t *sym = fl_symbolizer_new_from_pid(pid, err, sizeof err);
    if (!sym) die("symbolizer", err);
    fl_symbolizer_destroy(&sym);
    t[S_SYMBOLIZER][r] = now() - t0;

    t0 = now();
    sym = fl_symbolizer_new_from_pid(pid, err, sizeof err);
    if (!sym) die("symbolizer", err);
    pos = 0;
    size_t n_frames = 0;
    while (fl_sampler_next(map, bytes, &pos, &rec) == 1) {
      bool end = false;
      for (size_t i = 0; i < rec.n_pcs && !end; i++) {
        fl_frame_info_t info[16];
        int k = fl_symbolizer_lookup(sym, rec.pcs[i], i > 0, info, 16);
        /* Where kn_prof_collect stops: the worker's own frames, or the
         * cell's entry function. */
        for (int j = 0; j < k && !end; j++) {
          kn_frame_kind_t kind = kn_frame_classify(&info[j], NULL);
          end = kind == KN_FRAME_WORKER || kind == KN_FRAME_ENTRY;
          n_frames++;
        }
      }
    }
    fl_symbolizer_destroy(&sym);
    t[S_SYMBOLIZE][r] = now() - t0;
    frames = n_frames;

    t0 = now();
    fl_profile_t *prof = kn_prof_collect(kp, pid, NULL, &run, err, sizeof err);
    if (!prof) die("kn_prof_collect", err);
    t[S_COLLECT][r] = now() - t0;

    t0 = now();
    fl_tree_t *tree = fl_tree_build(prof, &req.draw.tree, root, err, sizeof err);
    if (!tree) die("fl_tree_build", err);
    t[S_TREE][r] = now() - t0;
    nodes = fl_tree_n_nodes(tree);

    t0 = now();
    json_t *vl = fl_vegalite(tree, &req.draw.view, err, sizeof err);
    if (!vl) die("fl_vegalite", err);
    t[S_VEGALITE][r] = now() - t0;
    json_decref(vl);

    t0 = now();
    char *svg = fl_svg(tree, &req.draw.view);
    t[S_SVG][r] = now() - t0;
    free(svg);

    fl_text_opts_t to = req.draw.text;
    to.max_lines = 200;
    t0 = now();
    char *text = fl_text_tree(tree, &to);
    t[S_TEXT][r] = now() - t0;
    free(text);

    t0 = now();
    json_t *bundle = fl_bundle(tree, &req.draw.view, err, sizeof err);
    if (!bundle) die("fl_bundle", err);
    t[S_BUNDLE][r] = now() - t0;
    json_decref(bundle);
    fl_tree_destroy(&tree);

    t0 = now();
    json_t *content = kn_prof_show(kp, prof, &req, root, err, sizeof err);
    if (!content) die("kn_prof_show", err);
    t[S_SHOW][r] = now() - t0;

    t0 = now();
    char *s = json_dumps(content, JSON_COMPACT);
    t[S_DUMP][r] = now() - t0;
    dump_bytes = s ? strlen(s) : 0;
    free(s);
    json_decref(content);
    fl_profile_destroy(&prof);
  }

  printf("{\"records\": %llu, \"pcs\": %llu, \"frames\": %zu, \"tree_nodes\": %zu, "
         "\"content_bytes\": %zu, \"repeats\": %d, \"collect_first_s\": %.6f, \"median_s\": {",
         (unsigned long long)records, (unsigned long long)pcs, frames, nodes, dump_bytes,
         repeats, t[S_COLLECT][0]);
  for (int s = 0; s < N_STAGES; s++) {
    qsort(t[s], (size_t)repeats, sizeof t[s][0], cmp_double);
    printf("%s\"%s\": %.6f", s ? ", " : "", names[s], t[s][repeats / 2]);
  }
  printf("}}\n");
  kn_profreq_free(&req);
  kn_prof_destroy(&kp);
  return 0;
}
