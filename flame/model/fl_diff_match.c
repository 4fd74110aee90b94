/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_diff_match: the matching of two full trees, frame by frame, level by
 * level from the roots, and the agreement of subtrees it pairs by (steps
 * and rules: fl_diff.c's top comment). */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fl__diff.h"

enum {
  AGREE_DEPTH = 8,           /* levels of a subtree that agreement looks at */
  MAX_ALIGN_CELLS = 1 << 16, /* larger alignments pair frames in order */
  MAX_FALLBACK_GROUPS = 64,  /* per side, the widest; the rest stay unpaired */
};

/* Cell-code frames of different names pair only when their subtrees share
 * at least this much of their weight. */
static const double MIN_AGREEMENT = 0.1;

/* ---- one side of the matching ---- */

void fl__diff_side_free(side_t *s) {
  free(s->name);
  free(s->end);
  free(s->partner);
  memset(s, 0, sizeof *s);
}

/* Names frames by their function, but a root (depth 1) whose name starts
 * with root_prefix (not NULL) by root_prefix, so that such roots pair. */
void fl__diff_side_init(side_t *s, const fl_tree_t *t, fl__strset_t *names,
                        const char *root_prefix) {
  s->t = t;
  s->n = fl_tree_n_nodes(t);
  s->name = fl__xmalloc(s->n, sizeof *s->name);
  s->end = fl__xmalloc(s->n, sizeof *s->end);
  s->partner = fl__xmalloc(s->n, sizeof *s->partner);
  size_t prefix_len = root_prefix ? strlen(root_prefix) : 0;
  for (size_t i = s->n; i-- > 0;) {
    const fl_node_t *node = fl_tree_node(t, i);
    bool by_prefix =
        root_prefix && node->depth == 1 && !strncmp(node->frame.func, root_prefix, prefix_len);
    s->name[i] = fl__strset_intern(names, by_prefix ? root_prefix : node->frame.func);
    s->end[i] =
        node->n_children ? s->end[node->children[node->n_children - 1]->id] : (uint32_t)i + 1;
    s->partner[i] = NONE;
  }
}

/* ---- histograms of subtrees, for agreement ---- */

typedef struct hent {
  uintptr_t key; /* an interned name, or 0 for the frames' own self weight */
  double w;
} hent_t;

typedef struct hist {
  hent_t *e;
  size_t n, cap;
  double total;
} hist_t;

static void hist_free(hist_t *h) {
  free(h->e);
  memset(h, 0, sizeof *h);
}

static void hist_push(hist_t *h, uintptr_t key, double w) {
  h->e = fl__grow(h->e, &h->cap, h->n + 1, sizeof *h->e);
  h->e[h->n++] = (hent_t){.key = key, .w = w};
}

/* Adds the subtree of node id (see "agreement" in the file comment). */
static void hist_add_subtree(hist_t *h, const side_t *s, uint32_t id) {
  const fl_node_t *top = fl_tree_node(s->t, id);
  for (uint32_t u = id; u < s->end[id];) {
    const fl_node_t *n = fl_tree_node(s->t, u);
    if (n->depth - top->depth >= AGREE_DEPTH) {
      hist_push(h, (uintptr_t)s->name[u], (double)n->count);
      u = s->end[u];
      continue;
    }
    if (n->self) hist_push(h, u == id ? 0 : (uintptr_t)s->name[u], (double)n->self);
    u++;
  }
  h->total += (double)top->count;
}

static int cmp_hent(const void *pa, const void *pb) {
  const hent_t *a = pa, *b = pb;
  return (a->key > b->key) - (a->key < b->key);
}

/* Sorts by key and sums equal keys. */
static void hist_finish(hist_t *h) {
  if (!h->n) return;
  qsort(h->e, h->n, sizeof *h->e, cmp_hent);
  size_t k = 0;
  for (size_t i = 1; i < h->n; i++) {
    if (h->e[i].key == h->e[k].key)
      h->e[k].w += h->e[i].w;
    else
      h->e[++k] = h->e[i];
  }
  h->n = k + 1;
}

/* The agreement of two finished histograms, in [0, 1]. */
static double agreement(const hist_t *a, const hist_t *b) {
  if (a->total <= 0 || b->total <= 0) return 0;
  double sum = 0;
  size_t i = 0, j = 0;
  while (i < a->n && j < b->n) {
    if (a->e[i].key < b->e[j].key) {
      i++;
    } else if (a->e[i].key > b->e[j].key) {
      j++;
    } else {
      double x = a->e[i].w / a->total, y = b->e[j].w / b->total;
      sum += x < y ? x : y;
      i++;
      j++;
    }
  }
  return sum > 1 ? 1 : sum;
}

/* ---- matching ---- */

static void pair_up(matcher_t *m, uint32_t d, uint32_t o) {
  m->d.partner[d] = o;
  m->o.partner[o] = d;
  m->work[m->n_work++] = (pair_t){.d = d, .o = o};
}

/* A child at the level being matched. */
typedef struct kid {
  const char *name; /* interned */
  uint32_t id;
  uint32_t pos; /* among its siblings */
  uint8_t side; /* 0 drawn, 1 other */
} kid_t;

static int cmp_kid(const void *pa, const void *pb) {
  const kid_t *a = pa, *b = pb;
  if (a->name != b->name) return (uintptr_t)a->name < (uintptr_t)b->name ? -1 : 1;
  if (a->side != b->side) return a->side < b->side ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

/* An alignment's value, compared in this order. */
typedef struct score {
  uint32_t pairs;
  double agree;
  uint32_t same_line;
} score_t;

static int cmp_score(score_t a, score_t b) {
  if (a.pairs != b.pairs) return a.pairs < b.pairs ? -1 : 1;
  if (fabs(a.agree - b.agree) > 1e-9) return a.agree < b.agree ? -1 : 1;
  return (a.same_line > b.same_line) - (a.same_line < b.same_line);
}

/* Pairs frames dk[0..a) with ok[0..b) (each in source order) without
 * crossing: as many pairs as possible, then the most agreement, then the
 * most equal lines. */
static void align(matcher_t *m, const kid_t *dk, size_t a, const kid_t *ok, size_t b) {
  if (a == 1 && b == 1) {
    pair_up(m, dk[0].id, ok[0].id);
    return;
  }
  if (a * b > MAX_ALIGN_CELLS) {
    for (size_t i = 0; i < a && i < b; i++) pair_up(m, dk[i].id, ok[i].id);
    return;
  }
  hist_t *h = fl__xcalloc(a + b, sizeof *h);
  score_t *best = fl__xmalloc((a + 1) * (b + 1), sizeof *best);
  uint8_t *move = fl__xmalloc((a + 1) * (b + 1), 1); /* 0 skip drawn, 1 skip other, 2 pair */
  for (size_t i = 0; i < a + b; i++) {
    const side_t *s = i < a ? &m->d : &m->o;
    hist_add_subtree(&h[i], s, i < a ? dk[i].id : ok[i - a].id);
    hist_finish(&h[i]);
  }
#define AT(i, j) ((i) * (b + 1) + (j))
  for (size_t i = 0; i <= a; i++) {
    for (size_t j = 0; j <= b; j++) {
      if (i == 0 || j == 0) {
        best[AT(i, j)] = (score_t){0, 0, 0};
        move[AT(i, j)] = i == 0 ? 1 : 0;
        continue;
      }
      score_t s = best[AT(i - 1, j)];
      uint8_t mv = 0;
      if (cmp_score(best[AT(i, j - 1)], s) > 0) {
        s = best[AT(i, j - 1)];
        mv = 1;
      }
      score_t p = best[AT(i - 1, j - 1)];
      p.pairs++;
      p.agree += agreement(&h[i - 1], &h[a + j - 1]);
      p.same_line += fl_tree_node(m->d.t, dk[i - 1].id)->frame.line ==
                     fl_tree_node(m->o.t, ok[j - 1].id)->frame.line;
      if (cmp_score(p, s) > 0) {
        s = p;
        mv = 2;
      }
      best[AT(i, j)] = s;
      move[AT(i, j)] = mv;
    }
  }
  for (size_t i = a, j = b; i > 0 && j > 0;) {
    uint8_t mv = move[AT(i, j)];
    if (mv == 2)
      pair_up(m, dk[--i].id, ok[--j].id);
    else if (mv == 1)
      j--;
    else
      i--;
  }
#undef AT
  for (size_t i = 0; i < a + b; i++) hist_free(&h[i]);
  free(h);
  free(best);
  free(move);
}

/* The frames of one side sharing a name, at one level. */
typedef struct group {
  const kid_t *kids; /* n, in source order */
  size_t n;
  uint32_t pos; /* the first one's position among its siblings */
  uint64_t count;
  hist_t h;
  bool used;
} group_t;

static int cmp_group_width(const void *pa, const void *pb) {
  const group_t *a = pa, *b = pb;
  if (a->count != b->count) return a->count > b->count ? -1 : 1;
  return (a->pos > b->pos) - (a->pos < b->pos);
}

typedef struct candidate {
  double agree;
  uint32_t dist;
  uint32_t dpos;
  group_t *dg, *og;
} candidate_t;

static int cmp_candidate(const void *pa, const void *pb) {
  const candidate_t *a = pa, *b = pb;
  if (a->agree != b->agree) return a->agree > b->agree ? -1 : 1;
  if (a->dist != b->dist) return a->dist < b->dist ? -1 : 1;
  return (a->dpos > b->dpos) - (a->dpos < b->dpos);
}

/* Pairs unpaired groups of cell code across names, the best agreeing pair
 * first. */
static void pair_cell_groups(matcher_t *m, group_t *dg, size_t nd, group_t *og, size_t no) {
  if (!nd || !no) return;
  if (nd > MAX_FALLBACK_GROUPS) {
    qsort(dg, nd, sizeof *dg, cmp_group_width);
    nd = MAX_FALLBACK_GROUPS;
  }
  if (no > MAX_FALLBACK_GROUPS) {
    qsort(og, no, sizeof *og, cmp_group_width);
    no = MAX_FALLBACK_GROUPS;
  }
  size_t nc = 0;
  candidate_t *c = fl__xmalloc(nd * no, sizeof *c);
  for (size_t i = 0; i < nd + no; i++) {
    group_t *g = i < nd ? &dg[i] : &og[i - nd];
    const side_t *s = i < nd ? &m->d : &m->o;
    for (size_t k = 0; k < g->n; k++) hist_add_subtree(&g->h, s, g->kids[k].id);
    hist_finish(&g->h);
  }
  for (size_t i = 0; i < nd; i++)
    for (size_t j = 0; j < no; j++) {
      double a = agreement(&dg[i].h, &og[j].h);
      if (a < MIN_AGREEMENT) continue;
      uint32_t dist = dg[i].pos > og[j].pos ? dg[i].pos - og[j].pos : og[j].pos - dg[i].pos;
      c[nc++] =
          (candidate_t){.agree = a, .dist = dist, .dpos = dg[i].pos, .dg = &dg[i], .og = &og[j]};
    }
  qsort(c, nc, sizeof *c, cmp_candidate);
  for (size_t k = 0; k < nc; k++) {
    if (c[k].dg->used || c[k].og->used) continue;
    c[k].dg->used = c[k].og->used = true;
    align(m, c[k].dg->kids, c[k].dg->n, c[k].og->kids, c[k].og->n);
  }
  free(c);
}

/* Matches the children of the matched pair (d, o). */
static void match_children(matcher_t *m, uint32_t d, uint32_t o) {
  const fl_node_t *dn = fl_tree_node(m->d.t, d), *on = fl_tree_node(m->o.t, o);
  size_t n = dn->n_children + on->n_children;
  if (!dn->n_children || !on->n_children) return;
  kid_t *k = fl__xmalloc(n, sizeof *k);
  /* Unpaired cell groups: drawn ones, then other ones. */
  group_t *groups = fl__xcalloc(n, sizeof *groups);
  size_t nd = 0, no = 0;
  for (size_t i = 0; i < dn->n_children; i++) {
    uint32_t id = dn->children[i]->id;
    k[i] = (kid_t){.name = m->d.name[id], .id = id, .pos = (uint32_t)i, .side = 0};
  }
  for (size_t i = 0; i < on->n_children; i++) {
    uint32_t id = on->children[i]->id;
    k[dn->n_children + i] = (kid_t){.name = m->o.name[id], .id = id, .pos = (uint32_t)i, .side = 1};
  }
  qsort(k, n, sizeof *k, cmp_kid);
  group_t *og = groups + dn->n_children; /* room for every other-side child */
  for (size_t i = 0; i < n;) {
    size_t j = i, split;
    while (j < n && k[j].name == k[i].name) j++;
    for (split = i; split < j && k[split].side == 0; split++) continue;
    if (split > i && split < j) {
      align(m, k + i, split - i, k + split, j - split);
    } else {
      const side_t *s = split > i ? &m->d : &m->o;
      const fl_node_t *first = fl_tree_node(s->t, k[i].id);
      if (first->frame.flags & FL_FRAME_REPL) {
        group_t *g = split > i ? &groups[nd++] : &og[no++];
        g->kids = k + i;
        g->n = j - i;
        g->pos = k[i].pos;
        for (size_t q = i; q < j; q++) g->count += fl_tree_node(s->t, k[q].id)->count;
      }
    }
    i = j;
  }
  pair_cell_groups(m, groups, nd, og, no);
  for (size_t i = 0; i < n; i++) hist_free(&groups[i].h);
  free(groups);
  free(k);
}

/* The only root of each side (see "Roots" in fl_diff.h) pair whatever
 * their names, unless they are cell code, which pairs by its own rule.
 * Returns whether it paired them. */
static bool pair_single_roots(matcher_t *m) {
  const fl_node_t *dr = fl_tree_root(m->d.t), * or = fl_tree_root(m->o.t);
  if (dr->n_children != 1 || or->n_children != 1) return false;
  const fl_node_t *a = dr->children[0], *b = or->children[0];
  if (m->d.partner[a->id] != NONE || m->o.partner[b->id] != NONE ||
      ((a->frame.flags | b->frame.flags) & FL_FRAME_REPL))
    return false;
  pair_up(m, a->id, b->id);
  return true;
}

/* Matches the two full trees from their roots. */
void fl__diff_match_trees(matcher_t *m) {
  size_t cap = m->d.n < m->o.n ? m->d.n : m->o.n;
  m->work = fl__xmalloc(cap, sizeof *m->work);
  m->n_work = 0;
  pair_up(m, 0, 0);
  m->n_work = 0;
  match_children(m, 0, 0);
  m->single_roots = pair_single_roots(m);
  while (m->n_work) {
    pair_t p = m->work[--m->n_work];
    match_children(m, p.d, p.o);
  }
}
