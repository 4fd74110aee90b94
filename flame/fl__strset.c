#include "fl__strset.h"

#include <stdlib.h>
#include <string.h>

int fl__strset_init(fl__strset_t *set, size_t capacity) {
  set->slots = calloc(capacity, sizeof *set->slots);
  set->mask = capacity - 1;
  set->len = 0;
  return set->slots ? 0 : -1;
}

/* Doubles the table when it is half full, keeping probes short. */
static int grow(fl__strset_t *set) {
  size_t cap = (set->mask + 1) * 2;
  char **grown = calloc(cap, sizeof *grown);
  if (!grown) return -1;
  for (size_t i = 0; i <= set->mask; i++) {
    char *old = set->slots[i];
    if (!old) continue;
    size_t j = fl__hash_string(old) & (cap - 1);
    while (grown[j]) j = (j + 1) & (cap - 1);
    grown[j] = old;
  }
  free(set->slots);
  set->slots = grown;
  set->mask = cap - 1;
  return 0;
}

const char *fl__strset_intern(fl__strset_t *set, const char *s) {
  if (!s) return NULL;
  if ((set->len + 1) * 2 > set->mask + 1 && grow(set) < 0) return NULL;
  size_t i = fl__hash_string(s) & set->mask;
  for (; set->slots[i]; i = (i + 1) & set->mask)
    if (strcmp(set->slots[i], s) == 0) return set->slots[i];
  char *copy = strdup(s);
  if (!copy) return NULL;
  set->slots[i] = copy;
  set->len++;
  return copy;
}

void fl__strset_free(fl__strset_t *set) {
  if (set->slots)
    for (size_t i = 0; i <= set->mask; i++) free(set->slots[i]);
  free(set->slots);
  set->slots = NULL;
  set->mask = set->len = 0;
}
