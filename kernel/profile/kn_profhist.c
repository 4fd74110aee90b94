/* SPDX-License-Identifier: BSD-3-Clause */
/* The profiled runs of the session (see kn_profhist.h). */
#include "kn_profhist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>

#include "cflame/fl_render.h"
#include "kn_text.h"

/* The prefix of a key that is a cell's code (kn_profhist_key). */
#define CODE_KEY "code:"

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
    fl__buf_printf(&key, "%s%s", CODE_KEY, body ? body + 1 : "");
  }
  return fl__buf_take(&key);
}

static int cmp_u16(const void *a, const void *b) {
  return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/* s's pairs of adjacent bytes, sorted, into a new array; *n their count. */
static uint16_t *bigrams(const char *s, size_t *n) {
  size_t len = strlen(s);
  *n = len > 1 ? len - 1 : 0;
  uint16_t *b = fl__xmalloc(*n ? *n : 1, sizeof *b);
  for (size_t i = 0; i < *n; i++)
    b[i] = (uint16_t)((unsigned char)s[i] << 8 | (unsigned char)s[i + 1]);
  qsort(b, *n, sizeof *b, cmp_u16);
  return b;
}

/* How alike a and b are, 0 to 1: Dice's coefficient of their bigrams
 * (each pair counted as often as it occurs); equal texts are 1. */
static double alike(const char *a, const char *b) {
  if (!strcmp(a, b)) return 1;
  size_t na, nb, common = 0;
  uint16_t *x = bigrams(a, &na), *y = bigrams(b, &nb);
  for (size_t i = 0, j = 0; i < na && j < nb;) {
    if (x[i] == y[j])
      common++, i++, j++;
    else if (x[i] < y[j])
      i++;
    else
      j++;
  }
  free(x);
  free(y);
  return na + nb ? 2.0 * (double)common / (double)(na + nb) : 0;
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

const fl_profile_t *kn_profhist_prev(const kn_profhist_t *h, const char *key,
                                     kn_profhist_found_t *found, char *why, size_t why_size) {
  const run_t *best = NULL;
  double best_alike = -1; /* any run of code is closer than none */
  for (size_t i = h->n; i-- > 0 && !best;)
    if (!strcmp(h->runs[i].key, key)) best = &h->runs[i];
  bool by_code = strncmp(key, CODE_KEY, strlen(CODE_KEY)) == 0;
  if (!best && by_code) {
    /* Newest first: of equally alike runs, the last one is the previous. */
    const char *code = key + strlen(CODE_KEY);
    for (size_t i = h->n; i-- > 0;) {
      const run_t *r = &h->runs[i];
      if (strncmp(r->key, CODE_KEY, strlen(CODE_KEY)) != 0) continue;
      double a = alike(code, r->key + strlen(CODE_KEY));
      if (a > best_alike) best_alike = a, best = r;
    }
    if (best && best_alike < KN_PROFHIST_ALIKE) {
      if (why_size)
        snprintf(why, why_size,
                 "the front end sends no cell id, so a cell is found by its code, and no "
                 "earlier profiled code is like this cell's: the closest, run %d (cell[%d]), "
                 "has %.0f%% of its character pairs in common, less than the %.0f%% an edit "
                 "keeps",
                 best->number, best->cell, 100 * best_alike, 100 * KN_PROFHIST_ALIKE);
      return NULL;
    }
  }
  if (!best) {
    if (why_size)
      snprintf(why, why_size, "%s",
               h->n == 0 ? "no cell has a profiled run kept yet"
               : by_code ? "the front end sends no cell id, and no run kept was of code"
                           " (they came with cell ids)"
                         : "this cell (by its cell id) has no profiled run kept");
    return NULL;
  }
  if (found) *found = (kn_profhist_found_t){best->number, best->cell, strcmp(best->key, key) != 0};
  return best->prof;
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
