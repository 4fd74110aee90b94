/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_top: the live table while the program runs (see rc_top.h). */
#define _GNU_SOURCE
#include "rc_top.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"
#include "fl__common.h"
#include "rc_files.h"

#define PERIOD_NS 1000000000ll
/* A redraw waits at least this many times what the last one cost. */
#define COST_FACTOR 10
/* Below this many rows the terminal has no room for a table. */
#define MIN_ROWS 8

struct rc_top {
  const char *dir, *name;
  int pid;                 /* the attached process's, or 0 */
  rc_collect_opts_t copts; /* with keep */
  const fl_options_t *draw;
  int64_t start_ns, due_ns;
  int rows, cols; /* the terminal's size at the last redraw */
  int height;     /* rows the table holds at the bottom; 0: none yet */
};

/* Writes all of s to standard error in one write(2) where the terminal
 * takes it (a short write goes on). */
static void put(const char *s, size_t len) {
  while (len) {
    ssize_t n = write(STDERR_FILENO, s, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    s += n;
    len -= (size_t)n;
  }
}

rc_top_t *rc_top_new(const char *dir, int pid, const rc_collect_opts_t *copts,
                     const fl_options_t *draw, const char *name) {
  if (!isatty(STDERR_FILENO)) return NULL;
  rc_top_t *top = fl__xcalloc(1, sizeof *top);
  top->pid = pid;
  top->dir = dir;
  top->name = name;
  top->copts = *copts;
  top->copts.keep = rc_symbols_new();
  top->draw = draw;
  top->start_ns = fl__clock_ns(CLOCK_MONOTONIC);
  top->due_ns = top->start_ns + PERIOD_NS;
  return top;
}

/* Gives back the rows the table held (its scrolling region reset: that
 * homes the cursor, hence the save and restore) and clears them, into b. */
static void release(rc_top_t *top, fl__buf_t *b) {
  if (!top->height) return;
  fl__buf_printf(b, "\0337\033[r\033[%d;1H\033[J\0338", top->rows - top->height + 1);
  top->height = 0;
}

/* The headline: for how long, how much so far, then what is recorded
 * (last: a long command line is what a narrow terminal cuts). */
static void headline(const rc_top_t *top, const fl_profile_t *p, uint64_t total, int64_t now_ns,
                     char *out, size_t size) {
  const fl_profile_info_t *info = fl_profile_info_const(p);
  const fl_kind_info_t *k = fl_kind(info->kind);
  char n[64], iv[32] = "";
  fl_count_noun(total, k->one, k->many, n, sizeof n);
  if (k->time && info->interval_ns) fl_interval_text(info->interval_ns, iv, sizeof iv);
  snprintf(out, size, "cflame record --top: %.0f s, %s%s%s%s: %s",
           (double)(now_ns - top->start_ns) / 1e9, n, iv[0] ? " (interval " : "", iv,
           iv[0] ? ")" : "", top->name);
}

/* What an attach has recorded so far (rc_top_attached's), or none: the
 * recording directory. */
typedef struct sofar {
  const void *buf;
  size_t bytes;
  const fl_attach_result_t *r;
} sofar_t;

/* One image of an attach so far into *rec (rc_collect_image). */
static void collect_image(rc_top_t *top, int pid, const char *name, const void *buf, size_t bytes,
                          char *const *snapshots, size_t n_snapshots, rc_recording_t *rec) {
  fl__buf_t maps = {0};
  for (size_t i = 0; i < n_snapshots; i++) {
    fl__buf_puts(&maps, snapshots[i]);
    fl__buf_puts(&maps, RC_MAPS_END);
  }
  fl__buf_add(&maps, "", 0);
  rc_collect_image(pid, name, buf, bytes, maps.data, &top->copts, rec);
  fl__buf_free(&maps);
}

/* What is recorded so far into *rec: the target's image and, with
 * --follow-forks, each followed one's. Returns 0, or -1 when it cannot be
 * read (yet). */
static int collect(rc_top_t *top, const sofar_t *sofar, rc_recording_t *rec) {
  char err[512];
  if (!sofar) return rc_collect(top->dir, &top->copts, rec, err, sizeof err);
  const fl_attach_result_t *r = sofar->r;
  collect_image(top, top->pid, r->name, sofar->buf, sofar->bytes, r->maps, r->n_maps, rec);
  for (size_t i = 0; i < r->n_followed; i++) {
    const fl_attach_process_t *f = &r->followed[i];
    rc_recording_t more;
    collect_image(top, f->pid, f->name, f->buf, f->bytes, f->maps, f->n_maps, &more);
    fl_profile_merge(rec->profile, more.profile);
    rec->processes += more.processes;
    rec->threads += more.threads;
    rc_recording_free(&more);
  }
  return 0;
}

/* The table of what is recorded so far, for a terminal of rows and cols
 * (new text), or NULL when there is nothing to show yet. */
static char *table(rc_top_t *top, const sofar_t *sofar, int64_t now_ns, int max_lines, int cols) {
  rc_recording_t rec;
  char err[512], head[512];
  if (collect(top, sofar, &rec) < 0) return NULL;
  char *text = NULL;
  fl_tree_opts_t to = top->draw->tree;
  to.minwidth = 0; /* exact figures, as the top view's */
  fl_tree_t *t = fl_profile_n_samples(rec.profile)
                     ? fl_tree_build(rec.profile, &to, top->name, err, sizeof err)
                     : NULL;
  fl_text_opts_t o;
  fl_text_opts_init(&o);
  o.cols = cols;
  o.max_lines = (size_t)max_lines;
  if (t) {
    headline(top, rec.profile, fl_tree_root(t)->count, now_ns, head, sizeof head);
    text = fl_text_top_live(t, head, &o);
  } else {
    headline(top, rec.profile, 0, now_ns, head, sizeof head);
    text = fl__xasprintf("%.*s\n", cols, head);
  }
  fl_tree_destroy(&t);
  rc_recording_free(&rec);
  return text;
}

/* Redraws the table when it is due. */
static void redraw(rc_top_t *top, const sofar_t *sofar) {
  int64_t now = fl__clock_ns(CLOCK_MONOTONIC);
  if (now < top->due_ns) return;
  int64_t cpu0 = fl__clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  struct winsize ws;
  int rows = 24, cols = 80;
  if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
    rows = ws.ws_row, cols = ws.ws_col;
  fl__buf_t b = {0};
  if (top->height && (rows != top->rows || cols != top->cols)) release(top, &b);
  top->rows = rows;
  top->cols = cols;
  char *text = rows >= MIN_ROWS ? table(top, sofar, now, rows / 2, cols) : NULL;
  if (text && !top->height) {
    /* The table's rows: made at the bottom by scrolling what is there up
     * (newlines), then kept out of the scrolling region, the cursor back
     * on the line it was on. */
    top->height = rows / 2;
    for (int i = 0; i < top->height; i++) fl__buf_puts(&b, "\n");
    fl__buf_printf(&b, "\0337\033[1;%dr\0338\033[%dA", rows - top->height, top->height);
  }
  if (text) {
    fl__buf_puts(&b, "\0337");
    const char *line = text;
    for (int i = 0; i < top->height; i++) {
      const char *eol = line ? strchr(line, '\n') : NULL;
      fl__buf_printf(&b, "\033[%d;1H\033[2K", rows - top->height + 1 + i);
      if (eol) {
        fl__buf_add(&b, line, (size_t)(eol - line));
        line = eol + 1;
      }
      if (line && !*line) line = NULL;
    }
    fl__buf_puts(&b, "\0338");
  }
  put(b.data ? b.data : "", b.len);
  fl__buf_free(&b);
  free(text);
  int64_t cost = fl__clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  int64_t wait = cost * COST_FACTOR > PERIOD_NS ? cost * COST_FACTOR : PERIOD_NS;
  top->due_ns = fl__clock_ns(CLOCK_MONOTONIC) + wait;
}

void rc_top_tick(void *ctx) {
  redraw(ctx, NULL);
}

void rc_top_attached(void *ctx, const void *buf, size_t bytes, const fl_attach_result_t *sofar) {
  redraw(ctx, &(sofar_t){.buf = buf, .bytes = bytes, .r = sofar});
}

void rc_top_end(rc_top_t **topp) {
  rc_top_t *top = *topp;
  if (!top) return;
  fl__buf_t b = {0};
  release(top, &b);
  put(b.data ? b.data : "", b.len);
  fl__buf_free(&b);
  rc_symbols_destroy(&top->copts.keep);
  free(top);
  *topp = NULL;
}
