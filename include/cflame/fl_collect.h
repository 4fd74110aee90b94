/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_collect: what the in-process recorders wrote, as a profile.
 *
 * The sampler (fl_sampler.h) and the allocation recorder (fl_allocs.h)
 * write records of thread ids and instruction addresses. A collection
 * turns one process's buffer into stacks of frames and adds them to a
 * profile:
 *  - each distinct address is symbolized once (fl_symbol.h: function,
 *    file:line, and the functions inlined there as frames of their own);
 *  - each frame is described (fl_collect_describe): its module's file
 *    name, its address in the module, and what kind of code it is;
 *  - the caller's rule sees each frame, innermost first, and may change its
 *    description and say what it is to the stack (fl_collect_verdict_t):
 *    kept, hidden (left out, the stack goes on), or the stack's base, where
 *    the profiler's or the C library's machinery begins (the frame and its
 *    callers are left out, or the frame is kept as the outermost);
 *  - a stack that never reaches a base hangs under a frame that says why:
 *    "[deeper than N frames]" when the recorder kept its limit of frames
 *    (the leaf side of a deeper stack), "[incomplete stack]" when the
 *    unwinder found no caller (code without unwind information);
 *  - threads are numbered as the notebook numbers them: 1 for the
 *    process's main thread, then 2, 3, ... in the order of their thread
 *    ids (the order the system created them, until ids wrap), and named
 *    as the sampler found them named (a thread that has the main thread's
 *    name inherited it, and stays a number);
 *  - each sample keeps its time stamp (the sampler's CLOCK_MONOTONIC);
 *  - opts->root, when given, becomes every stack's first frame (one
 *    process among several in one profile).
 * cflame's kernel collects its worker's buffers with a rule that cuts the
 * worker's own frames and names cell code; `cflame record` with one that
 * cuts the C library's start-up and its preloaded library. */
#ifndef FL_COLLECT_H
#define FL_COLLECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"
#include "cflame/fl_profile.h"
#include "cflame/fl_symbol.h"

CFLAME_BEGIN_DECLS

typedef enum fl_collect_verdict {
  FL_COLLECT_KEEP,      /* a frame of the stack */
  FL_COLLECT_HIDE,      /* left out; the stack goes on with its caller */
  FL_COLLECT_BASE,      /* the machinery below the stack: this frame and its
                           callers are left out, and the stack is complete */
  FL_COLLECT_KEEP_BASE, /* the stack's outermost frame: kept, its callers left
                           out; the stack is complete */
} fl_collect_verdict_t;

/* The caller's rule for one symbolized frame (info). frame holds
 * fl_collect_describe's description, which the rule may change; strings it
 * points frame to must stay valid until the rule returns. Called once per
 * distinct (address, frame). */
typedef fl_collect_verdict_t (*fl_collect_rule_fn)(void *ctx, const fl_frame_info_t *info,
                                                   fl_frame_t *frame);

typedef struct fl_collect_opts {
  fl_collect_rule_fn rule; /* NULL: every frame kept (and no stack complete) */
  void *ctx;               /* the rule's */
  int main_tid;            /* the thread numbered 1: the process's pid */
  const fl_frame_t *root;  /* NULL, or a frame above every stack */
  /* The run's other buffer (an allocation recording's samples of CPU
   * time), whose threads are numbered too, so that a thread has one
   * number in the samples of both kinds. NULL: none. */
  const void *also;
  size_t also_bytes;
  bool also_allocs; /* also is an allocation buffer, else a sample buffer */
} fl_collect_opts_t;

/* The description of a frame the symbolizer found at pc: func (NULL:
 * "[unknown]"), file and line as found, module the file name of
 * info->module ("libc.so.6"), addr pc's offset in the module, and flags:
 * FL_FRAME_ALLOC for the allocator's functions (malloc, free and their
 * kin, their PLT stubs, glibc's internals of them, a sanitizer runtime's
 * allocator), else
 * FL_FRAME_SYSTEM for a module under /lib, /lib64, /usr/lib, /usr/lib64 or
 * /usr/local/lib, the vDSO or a module named in brackets; and
 * FL_FRAME_INLINED for an inlined frame. Strings are borrowed from info
 * (or static). */
void fl_collect_describe(const fl_frame_info_t *info, uint64_t pc, fl_frame_t *frame);

/* Whether func is one of the allocator's functions (FL_FRAME_ALLOC), or
 * the PLT stub of one ("malloc@plt", fl_symbol.h). */
bool fl_collect_is_allocator(const char *func);

/* Adds the records of a sample buffer (bytes long, as fl_sampler writes
 * it; it may still be written to) to prof, a CPU profile: each record's
 * stack with its weight. sym symbolizes the process that wrote it. The
 * profile takes the buffer's interval when it has none, and adds its
 * dropped samples. A buffer cut short (a reservation never filled, after a
 * crash) ends at the cut; an empty one (0 bytes) adds nothing. Returns 0,
 * or -1 with err when the buffer is not a sample buffer or a record is
 * corrupt: prof then holds the records before the fault. */
int fl_collect_samples(fl_profile_t *prof, fl_symbolizer_t *sym, const void *buf, size_t bytes,
                       const fl_collect_opts_t *opts, char *err, size_t err_size);

/* How allocation records weigh. */
typedef struct fl_collect_allocs_opts {
  bool live;         /* only the records not freed while recording */
  bool weight_count; /* weights are allocation counts, not bytes */
} fl_collect_allocs_opts_t;

/* The allocation kind of a profile collected with aopts. */
fl_profile_kind_t fl_collect_allocs_kind(const fl_collect_allocs_opts_t *aopts);

/* Adds the records of an allocation buffer (as fl_allocs writes it) to
 * prof, an allocation profile: each record's stack with the allocation
 * function (malloc, calloc, realloc, memalign) as its leaf frame, weighed
 * by bytes (or by count), both scaled by 1 / the buffer's sample rate (the
 * running totals are rounded, so that totals are the sums divided by the
 * rate; a 0-byte allocation weighs nothing by bytes). The profile takes
 * the buffer's sample rate and the kind aopts ask for
 * (fl_collect_allocs_kind; prof must be empty or of a comparable kind),
 * and adds its calls and dropped records. Returns 0, or -1 with err (not an allocation buffer, or a
 * corrupt one: prof then holds the records before the fault). */
int fl_collect_allocs(fl_profile_t *prof, fl_symbolizer_t *sym, const void *buf, size_t bytes,
                      const fl_collect_opts_t *opts, const fl_collect_allocs_opts_t *aopts,
                      char *err, size_t err_size);

CFLAME_END_DECLS

#endif
