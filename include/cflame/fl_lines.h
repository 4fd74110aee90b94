/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_lines: a profile's weight per source line, self and inclusive.
 *
 * The shape a source view (each line of a file with its share) and a top
 * list by line are drawn from. It is built from a tree (fl_tree.h), whose
 * thread filter, filter and minwidth say which samples count
 * (fl_tree_node_of); the lines are those of the frames the profile
 * recorded, inlined ones included, so inlined code counts on the line it
 * came from. For each sample:
 *  - self: its weight goes to the line of its innermost frame that has a
 *    file and a line, passing over frames with any of skip_flags
 *    (FL_FRAME_SYSTEM | FL_FRAME_ALLOC puts a call into the C library on the
 *    caller's line, as C=false draws it); none when no frame qualifies;
 *  - total: its weight goes to every line on its stack once, however often
 *    the line appears (recursion).
 * Weights are the profile's (fl_kind says their unit). */
#ifndef FL_LINES_H
#define FL_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"
#include "cflame/fl_tree.h"

CFLAME_BEGIN_DECLS

typedef struct fl_line_total {
  const char *file; /* the profile's string; borrowed */
  int line;
  uint64_t self, total;
} fl_line_total_t;

/* The lines of tree t's samples, sorted by file name then line, into *out
 * (new: free it; NULL when there are none). Returns how many. Out of memory
 * aborts, as everywhere in the flame library. */
size_t fl_lines_totals(const fl_tree_t *t, uint32_t skip_flags, fl_line_total_t **out);

CFLAME_END_DECLS

#endif
