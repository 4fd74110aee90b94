/* SPDX-License-Identifier: BSD-3-Clause */
/* The profiled runs of the session (see kn_profhist.h). */
#include "kn_profhist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cflame/fl_render.h"
#include "kn_text.h"

typedef struct run {
  int number;
  int cell;
  char *key;
  fl_profile_t *prof;
  size_t bytes; /* what its copy of the profile holds (fl_profile_bytes) */
} run_t;

struct kn_profhist {
  run_t *runs; /* oldest first */
  size_t n, cap;
  size_t bytes, budget;
  int next_number;
};

kn_profhist_t *kn_profhist_new(size_t budget_bytes) {
  kn_profhist_t *h = fl__xcalloc(1, sizeof *h);
  h->budget = budget_bytes;
  h->next_number = 1;
  return h;
}

static void run_free(run_t *r) {
  free(r->key);
  fl_profile_destroy(&r->prof);
}

void kn_profhist_destroy(kn_profhist_t **hp) {
  kn_profhist_t *h = *hp;
  if (!h) return;
  for (size_t i = 0; i < h->n; i++) run_free(&h->runs[i]);
  free(h->runs);
  free(h);
  *hp = NULL;
}

char *kn_profhist_key(const json_t *request_metadata, const char *code) {
  const char *id = json_string_value(json_object_get(request_metadata, "cellId"));
  fl__buf_t key = FL__BUF_INIT;
  if (id && id[0]) {
    fl__buf_printf(&key, "id:%s", id);
  } else {
    const char *body = strchr(code, '\n');
    fl__buf_printf(&key, "code:%016llx", (unsigned long long)fl__fnv1a(body ? body + 1 : ""));
  }
  return fl__buf_take(&key);
}

void kn_profhist_add(kn_profhist_t *h, const fl_profile_t *run, const char *key, int cell) {
  h->runs = fl__grow(h->runs, &h->cap, h->n + 1, sizeof *h->runs);
  run_t *r = &h->runs[h->n++];
  *r = (run_t){.number = h->next_number++,
               .cell = cell,
               .key = fl__xstrdup(key),
               .prof = fl_profile_copy(run)};
  r->bytes = fl_profile_bytes(r->prof) + strlen(key) + 1;
  h->bytes += r->bytes;
  size_t drop = 0;
  while (drop + 1 < h->n && h->bytes > h->budget) h->bytes -= h->runs[drop++].bytes;
  for (size_t i = 0; i < drop; i++) run_free(&h->runs[i]);
  memmove(h->runs, h->runs + drop, (h->n - drop) * sizeof *h->runs);
  h->n -= drop;
}

const fl_profile_t *kn_profhist_last(const kn_profhist_t *h, const char *key, int *cell) {
  for (size_t i = h->n; i-- > 0;) {
    if (strcmp(h->runs[i].key, key) != 0) continue;
    if (cell) *cell = h->runs[i].cell;
    return h->runs[i].prof;
  }
  return NULL;
}

const fl_profile_t *kn_profhist_run(const kn_profhist_t *h, int n) {
  for (size_t i = 0; i < h->n; i++)
    if (h->runs[i].number == n) return h->runs[i].prof;
  return NULL;
}

char *kn_profhist_list(const kn_profhist_t *h) {
  fl__buf_t b = FL__BUF_INIT;
  if (h->n == 0) {
    fl__buf_puts(&b,
                 "No profiled runs yet: every %%profview, %%profdiffview, %%profile and "
                 "%%profbase run is kept here.\n");
    return fl__buf_take(&b);
  }
  fl__buf_printf(&b, "%zu profiled run%s kept (about %.1f of %.0f MB; the oldest go first):\n",
                 h->n, h->n == 1 ? "" : "s", (double)h->bytes / (1 << 20),
                 (double)h->budget / (1 << 20));
  fl__buf_printf(&b, "%5s  %-10s %-8s %10s  %-12s %s\n", "Run", "Cell", "Time", "Samples", "Kind",
                 "Show it with");
  for (size_t i = 0; i < h->n; i++) {
    const run_t *r = &h->runs[i];
    const fl_profile_info_t *info = fl_profile_info_const(r->prof);
    char cell[32], when[16] = "?", samples[48];
    snprintf(cell, sizeof cell, "cell[%d]", r->cell);
    time_t t = (time_t)info->taken_unix;
    struct tm tm;
    if (t && localtime_r(&t, &tm)) strftime(when, sizeof when, "%H:%M:%S", &tm);
    /* What the graph's header counts: a time profile's samples are its
     * weight (a stack recorded late stands for several), an allocation
     * profile's its sampled allocations. */
    bool time = fl_kind(info->kind)->time;
    fl_count_noun(time ? info->total_weight : info->samples, "", "", samples, sizeof samples);
    fl__buf_printf(&b, "%5d  %-10s %-8s %10s  %-12s %%profhistory %d\n", r->number, cell, when,
                   samples, fl_kind(info->kind)->name, r->number);
  }
  fl__buf_puts(&b, "%%profdiffview prev compares a cell's run with its previous one.\n");
  return fl__buf_take(&b);
}
