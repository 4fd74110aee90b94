/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__common: the allocators, the index, the string set and the buffer
 * (see fl__common.h). */
#include "fl__common.h"

#include <cflame/fl_alloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- memory ---- */

/* The program's handler, or NULL for the default. Atomic: set by one
 * thread, read by any that runs out of memory. */
static _Atomic(fl_oom_handler_t) oom_handler;

fl_oom_handler_t fl_set_oom_handler(fl_oom_handler_t handler) {
  return atomic_exchange(&oom_handler, handler);
}

void fl__oom(size_t bytes) {
  fl_oom_handler_t handler = atomic_load(&oom_handler);
  if (handler) handler(bytes);
  /* No allocation here: stdio's stderr is unbuffered. */
  if (bytes)
    fprintf(stderr, "cflame: out of memory (%zu bytes)\n", bytes);
  else
    fputs("cflame: out of memory\n", stderr);
  abort();
}

/* n * size, or out of memory when it overflows; at least 1. */
static size_t array_bytes(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) fl__oom(0);
  size_t bytes = n * size;
  return bytes ? bytes : 1;
}

void *fl__xmalloc(size_t n, size_t size) {
  size_t bytes = array_bytes(n, size);
  void *p = malloc(bytes);
  if (!p) fl__oom(bytes);
  return p;
}

void *fl__xcalloc(size_t n, size_t size) {
  size_t bytes = array_bytes(n, size);
  void *p = calloc(1, bytes);
  if (!p) fl__oom(bytes);
  return p;
}

void *fl__xrealloc(void *p, size_t n, size_t size) {
  size_t bytes = array_bytes(n, size);
  void *grown = realloc(p, bytes);
  if (!grown) fl__oom(bytes);
  return grown;
}

char *fl__xstrndup(const char *s, size_t n) {
  char *copy = fl__xmalloc(n + 1, 1);
  if (n) memcpy(copy, s, n);
  copy[n] = '\0';
  return copy;
}

char *fl__xstrdup(const char *s) {
  return fl__xstrndup(s, strlen(s));
}

char *fl__xasprintf(const char *fmt, ...) {
  fl__buf_t b = {0};
  va_list ap;
  va_start(ap, fmt);
  fl__buf_vprintf(&b, fmt, ap);
  va_end(ap);
  return fl__buf_take(&b);
}

void *fl__nonnull(void *p) {
  if (!p) fl__oom(0);
  return p;
}

void *fl__grow(void *array, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return array;
  size_t grown = *cap ? *cap : 16;
  while (grown < need) {
    if (grown > SIZE_MAX / 2) fl__oom(0);
    grown *= 2;
  }
  array = fl__xrealloc(array, grown, size);
  *cap = grown;
  return array;
}

/* ---- index ---- */

/* The smallest power of two, at least 16, that holds n items at most half
 * full. */
static size_t index_capacity(size_t n) {
  size_t cap = 16;
  while (cap / 2 < n) {
    if (cap > SIZE_MAX / 2) fl__oom(0);
    cap *= 2;
  }
  return cap;
}

void fl__index_init(fl__index_t *ix, size_t expected) {
  size_t cap = index_capacity(expected);
  ix->slots = fl__xcalloc(cap, sizeof *ix->slots);
  ix->mask = cap - 1;
  ix->n = 0;
}

void fl__index_free(fl__index_t *ix) {
  free(ix->slots);
  memset(ix, 0, sizeof *ix);
}

void fl__index_clear(fl__index_t *ix) {
  if (ix->slots) memset(ix->slots, 0, (ix->mask + 1) * sizeof *ix->slots);
  ix->n = 0;
}

/* Puts a slot into the first empty place of its probe. */
static void place(fl__index_slot_t *slots, size_t mask, fl__index_slot_t slot) {
  size_t at = slot.hash & mask;
  while (slots[at].item) at = (at + 1) & mask;
  slots[at] = slot;
}

void fl__index_add(fl__index_t *ix, uint64_t hash, uint32_t item) {
  if (!ix->slots || (ix->n + 1) * 2 > ix->mask + 1) {
    size_t cap = index_capacity(ix->n + 1);
    fl__index_slot_t *grown = fl__xcalloc(cap, sizeof *grown);
    if (ix->slots)
      for (size_t i = 0; i <= ix->mask; i++)
        if (ix->slots[i].item) place(grown, cap - 1, ix->slots[i]);
    free(ix->slots);
    ix->slots = grown;
    ix->mask = cap - 1;
  }
  place(ix->slots, ix->mask, (fl__index_slot_t){.hash = (uint32_t)hash, .item = item + 1});
  ix->n++;
}

/* ---- strset ---- */

const char *fl__strset_intern(fl__strset_t *set, const char *s) {
  if (!s) return NULL;
  uint32_t i = fl__strset_add(set, s); /* before reading strs, which it may move */
  return set->strs[i];
}

uint32_t fl__strset_add(fl__strset_t *set, const char *s) {
  size_t n = strlen(s);
  uint64_t h = fl__hash_bytes(s, n);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&set->index, h, &pr); i != FL__NONE;
       i = fl__index_next(&set->index, &pr))
    if (strcmp(set->strs[i], s) == 0) return i;
  if (set->n >= FL__NONE) fl__oom(0);
  set->strs = fl__grow(set->strs, &set->cap, set->n + 1, sizeof *set->strs);
  set->strs[set->n] = fl__xstrndup(s, n);
  fl__index_add(&set->index, h, (uint32_t)set->n);
  return (uint32_t)set->n++;
}

void fl__strset_free(fl__strset_t *set) {
  for (size_t i = 0; i < set->n; i++) free(set->strs[i]);
  free(set->strs);
  fl__index_free(&set->index);
  memset(set, 0, sizeof *set);
}

/* ---- buf ---- */

static void buf_reserve(fl__buf_t *b, size_t more) {
  if (more > SIZE_MAX - b->len - 1) fl__oom(0);
  if (b->len + more + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + more + 1) {
    if (cap > SIZE_MAX / 2) fl__oom(0);
    cap *= 2;
  }
  b->data = fl__xrealloc(b->data, cap, 1);
  b->cap = cap;
}

void fl__buf_add(fl__buf_t *b, const char *s, size_t n) {
  buf_reserve(b, n);
  if (n) memcpy(b->data + b->len, s, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void fl__buf_puts(fl__buf_t *b, const char *s) {
  fl__buf_add(b, s, strlen(s));
}

void fl__buf_putc(fl__buf_t *b, char c) {
  fl__buf_add(b, &c, 1);
}

void fl__buf_u64(fl__buf_t *b, uint64_t v) {
  char digits[20];
  size_t n = 0;
  do digits[sizeof digits - ++n] = (char)('0' + v % 10);
  while ((v /= 10) != 0);
  fl__buf_add(b, digits + sizeof digits - n, n);
}

void fl__buf_clear(fl__buf_t *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

void fl__buf_vprintf(fl__buf_t *b, const char *fmt, va_list ap) {
  char small[256];
  va_list again;
  va_copy(again, ap);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  if (n >= 0 && (size_t)n < sizeof small) {
    fl__buf_add(b, small, (size_t)n);
  } else if (n >= 0) {
    buf_reserve(b, (size_t)n);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, again);
    b->len += (size_t)n;
  }
  va_end(again);
}

void fl__buf_printf(fl__buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fl__buf_vprintf(b, fmt, ap);
  va_end(ap);
}

void fl__errf(char *err, size_t err_size, const char *fmt, ...) {
  if (!err || !err_size) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, err_size, fmt, ap);
  va_end(ap);
}

char *fl__buf_take(fl__buf_t *b) {
  char *s = b->data ? b->data : fl__xstrdup("");
  memset(b, 0, sizeof *b);
  return s;
}

void fl__buf_free(fl__buf_t *b) {
  free(b->data);
  memset(b, 0, sizeof *b);
}
