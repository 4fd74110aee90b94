/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_tree: the flame graph of a profile.
 *
 * Each node is a frame at a position in the call tree: its count is the
 * weight of every sample whose stack passes through it (inclusive), its self
 * count the weight of samples that end in it. Children are ordered as the
 * source is: where some frame is drawn by line, by their own (file, line,
 * func), frames without a file first; where every frame is drawn by
 * function, by the line in the parent where the call
 * happens (the smallest seen), then by name. Each node occupies the sample
 * range [x0, x1) of the axis, the children packed from the parent's x0 and
 * the parent's self (and anything minwidth hid) left empty at the end. The
 * root (depth 0, FL_FRAME_ROOT, func = root_name) stands for the whole
 * run.
 *
 * Options follow FlameGraphs.jl's flamegraph():
 *   C        false: frames of system libraries (FL_FRAME_SYSTEM,
 *            FL_FRAME_ALLOC) are folded into the nearest caller that is not
 *            one (the root if none); the caller's status records what was
 *            folded in (FL_FRAME_SYSTEM gives FL_STATUS_SYSTEM,
 *            FL_FRAME_ALLOC gives FL_STATUS_ALLOC). Frames they call hang
 *            under that caller: a comparator called by qsort shows under
 *            the cell frame that called qsort.
 *   combine  true: one frame per source line; false: one per instruction
 *            address.
 *   lines    FL_LINES_OFF: one frame per function (func, module; line 0,
 *            the function's file kept), as perf-style flame graphs draw
 *            them. Wins over combine=false. FL_LINES_ON: one frame per
 *            source line everywhere. FL_LINES_AUTO (the default): a
 *            notebook cell's code (FL_FRAME_REPL) by line, where a line is
 *            what the user edits, and every other frame (a program's, a
 *            library's, anything read from a file) by function, so that
 *            the code the user did not write is not cut into frames too
 *            narrow to draw.
 *   whole_functions  names of functions drawn one frame per function even
 *            with lines on (a diff uses it for a function redefined between
 *            its two profiles, whose lines do not correspond).
 *   recur    FL_RECUR_FLAT: a function (func, module) already on the path
 *            rewinds to its earlier frame (or, for another line of it, to
 *            that frame's parent), so self-recursion looks like a loop.
 *   pruned   exact function names whose subtrees are cut (the frame stays
 *            and takes its subtree's weight as self).
 *   filter   keep only samples whose stack has a frame whose function name
 *            contains the text (or matches the POSIX extended regex when
 *            filter_is_regex). Every recorded frame counts, also those that
 *            C=false folds away.
 *   kind     keep only samples of this kind (fl_profile_kind_t;
 *            FL_TREE_KIND_MAIN: the profile's info.kind). A profile that
 *            holds samples but none of kind is an error naming the kinds
 *            it holds. Every shape built from the tree (its timeline,
 *            lines, totals, the views and writers) takes the samples it
 *            takes (fl_tree_node_of).
 *   threads  keep only samples of these n_threads threads (NULL: all).
 *   minwidth hide frames whose count is below this share of the root's
 *            count, with their subtrees (their weight stays in the parent's
 *            count, not in its self; fl_tree_hidden says how many). The
 *            hidden children of each drawn node are kept as a list
 *            (fl_tree_narrow), which the drawings show as one merged frame
 *            per parent; the nodes, the samples' nodes and the data
 *            formats never include them.
 *   demangle false: a frame with a symbol (fl_frame_t.system_name: a
 *            mangled C++ or Rust name) is named by it, not by its readable
 *            name; filter and pruned match the name shown.
 *   inverted true: the callers' tree. Each sample's path (after C=false,
 *            recur and pruned have made it) is turned around, so that the
 *            frames samples ended in (the leaves) are the root's children
 *            and each frame's callers are its children; a child of the
 *            root is as wide as the self weight of its frame, summed over
 *            every place it was called from. Children are ordered by their
 *            key (lines) or name (no lines): there is no call site. */
#ifndef FL_TREE_H
#define FL_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_budget.h"
#include "cflame/fl_profile.h"

#include "cflame/fl_api.h"

CFLAME_BEGIN_DECLS

enum {
  FL_STATUS_SYSTEM = 1u << 0, /* system-library frames were folded into this one */
  FL_STATUS_ALLOC = 1u << 1,  /* allocator frames were folded into this one */
  FL_STATUS_MERGED = 1u << 2, /* a drawing's merged frame: a parent's narrow
                                 children (fl_tree_narrow), never a tree's node */
};

typedef enum fl_recur { FL_RECUR_OFF, FL_RECUR_FLAT } fl_recur_t;

/* Which frames are drawn one per source line (see lines above). AUTO is
 * 0: the option table has no default for lines, so it is the zero. */
typedef enum fl_lines { FL_LINES_AUTO, FL_LINES_ON, FL_LINES_OFF } fl_lines_t;

/* fl_tree_opts_t.kind's default: the profile's info.kind. */
#define FL_TREE_KIND_MAIN (-1)

typedef struct fl_tree_opts {
  int kind; /* a fl_profile_kind_t, or FL_TREE_KIND_MAIN (the default) */
  bool C;
  bool combine;
  fl_lines_t lines;
  fl_recur_t recur;
  const char *const *whole_functions; /* NULL-terminated, or NULL */
  const char *const *pruned;          /* NULL-terminated, or NULL */
  const char *filter;                 /* NULL: no filter */
  bool filter_is_regex;
  const int *threads; /* NULL: all threads */
  size_t n_threads;
  double minwidth;
  bool inverted; /* the callers' tree: where time was spent at the root */
  bool demangle; /* false: frames named by their symbols (system_name) */
  /* The memory building the tree, and drawing it, may take: a budget of
   * max_memory bytes (0: fl_budget_default_bytes()) unless budget (borrowed)
   * is given, which is then charged instead and may cancel the build. */
  size_t max_memory;
  fl_budget_t *budget;
} fl_tree_opts_t;

/* The defaults, from the option table (fl_options.h). */
void fl_tree_opts_init(fl_tree_opts_t *opts);

/* What tells a frame from a drawn sibling of the same function name. */
enum {
  FL_LABEL_NAME,   /* no sibling has its name */
  FL_LABEL_LINE,   /* another line of the function: "f:18" */
  FL_LABEL_MODULE, /* the same line of another cell or module: "f:18 (cell[3])" */
  FL_LABEL_ADDR,   /* the same line at another address (combine=false): "f:18 @0x1a2" */
};

typedef struct fl_node fl_node_t;
struct fl_node {
  fl_frame_t frame; /* strings borrowed from the profile */
  uint64_t count;   /* inclusive weight */
  uint64_t self;    /* exclusive weight */
  uint64_t allocs;  /* allocation profiles: inclusive allocation count */
  uint64_t self_allocs;
  uint64_t x0, x1;      /* sample range; x1 - x0 == count */
  int depth;            /* root 0 */
  uint32_t status;      /* FL_STATUS_* */
  uint8_t label_detail; /* FL_LABEL_*: what fl_node_label adds to the name to
                           tell the frame from its drawn siblings */
  uint32_t id;          /* 0 for the root, then in depth-first pre-order */
  fl_node_t *parent;
  fl_node_t **children; /* in source order */
  size_t n_children;
};

typedef struct fl_tree fl_tree_t;

/* Builds the tree of profile p (which must outlive the tree and not change
 * while it lives). root_name names the root frame ("cell[5]", a program;
 * copied; NULL: "all"); opts NULL: the defaults. Returns a new tree, or
 * NULL with err: a bad filter regex, naming it and why; a tree that needs
 * more than the budget allows (opts' max_memory, or its budget), or a
 * build cancelled (fl_budget_message about "the flame graph"). The memory
 * a tree's nodes take is charged before it is allocated; out of memory
 * otherwise aborts with a message, as everywhere in the flame library
 * (docs/LIBRARY.md). */
fl_tree_t *fl_tree_build(const fl_profile_t *p, const fl_tree_opts_t *opts, const char *root_name,
                         char *err, size_t err_size);
void fl_tree_destroy(fl_tree_t **t);

const fl_node_t *fl_tree_root(const fl_tree_t *t);
const fl_profile_t *fl_tree_profile(const fl_tree_t *t);
/* The kind of the samples t takes (fl_tree_opts_t.kind, resolved). */
fl_profile_kind_t fl_tree_kind(const fl_tree_t *t);
/* The profile's info as t draws it: its kind is t's, and samples,
 * total_weight and total_allocs that kind's totals (fl_profile_kind_totals).
 * What every drawing of t reads for units, words and totals. Borrowed. */
const fl_profile_info_t *fl_tree_info(const fl_tree_t *t);
/* The visible nodes in depth-first pre-order (the root first), node i
 * having id i; borrowed. fl_tree_node: NULL when i is out of range. */
size_t fl_tree_n_nodes(const fl_tree_t *t);
const fl_node_t *fl_tree_node(const fl_tree_t *t, size_t i);
int fl_tree_max_depth(const fl_tree_t *t);
/* Whether t is the callers' tree (fl_tree_opts_t.inverted). */
bool fl_tree_inverted(const fl_tree_t *t);
/* How many frames minwidth hid (descendants of hidden frames included),
 * and their total weight (that of the topmost hidden frames). */
size_t fl_tree_hidden(const fl_tree_t *t, uint64_t *hidden_weight);

/* A child minwidth hid, with its subtree: its frame (strings borrowed from
 * the profile) and inclusive counts. */
typedef struct fl_narrow {
  fl_frame_t frame;
  uint64_t count;
  uint64_t allocs;
} fl_narrow_t;

/* The children of drawn node n that minwidth hid (their descendants are
 * in their counts), widest first, then by name and line: *items borrowed
 * (NULL when there are none). Returns how many; *weight (may be NULL) is
 * their summed count, which is n's count less its self and its drawn
 * children's. */
size_t fl_tree_narrow(const fl_tree_t *t, const fl_node_t *n, const fl_narrow_t **items,
                      uint64_t *weight);

/* The drawn node sample s (of the tree's profile) ends in: the node its
 * weight is self weight of. NULL when the tree leaves it out (its kind,
 * its thread or the filter) or minwidth hides its node. */
const fl_node_t *fl_tree_node_of(const fl_tree_t *t, const fl_sample_t *s);

/* What a frame is called on the graph: its function name, and where a
 * drawn sibling has the same name, what tells them apart (label_detail):
 * "count_primes:18". A C programmer reading four frames
 * "count_primes" side by side takes it for a bug. The renderers and the
 * text report draw this; tooltips and data keep func, file and line. New
 * string. */
char *fl_node_label(const fl_node_t *n);

/* Nodes to draw, at most max_rows (0: no limit): the visible nodes in
 * pre-order; when there are more, the narrowest are dropped (a dropped
 * node's descendants go too; ties go to the earlier node, so a parent is
 * never dropped before its child) until max_rows remain. *rows is new (free
 * it; the nodes are borrowed). Returns the count; *n_merged (may be NULL)
 * says how many were left out. */
size_t fl_tree_rows(const fl_tree_t *t, size_t max_rows, const fl_node_t ***rows, size_t *n_merged);

CFLAME_END_DECLS

#endif
