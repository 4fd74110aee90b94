/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_collect: a recording directory (rc_files.h) read into one profile.
 *
 * Every process image that recorded something becomes stacks under a root
 * frame of its own, named after its program ("solver"). When several
 * images of one recording have the same program name, each root also says
 * which it is: its MPI rank when it has one ("solver (rank 1)"), else its
 * pid ("solver (pid 4242)"). So a recording of one process, or the
 * per-rank profiles of an MPI run, keep the same roots from run to run
 * (and merge and diff as such), while a program that forks itself shows
 * each process apart.
 *
 * Each image is symbolized from its own maps (every snapshot's modules, so
 * that a library it closed keeps its symbols), with libdw, after the
 * process has ended; images whose maps are the same share a symbolizer.
 * Stacks are cut as the kernel cuts a cell's (fl_collect.h): at main (kept)
 * or, below it, at the C library's start-up; at the thread wrapper a
 * thread starts in; the preloaded library's own frames are left out. The
 * program's own code is marked as such (FL_FRAME_CELL), system libraries
 * and the allocator as the describer marks them. */
#ifndef RC_COLLECT_H
#define RC_COLLECT_H

#include <stdbool.h>
#include <stddef.h>

#include "cflame/fl_collect.h"
#include "cflame/fl_profile.h"

/* Symbolizers kept from one collection of a recording to the next, while
 * it is still being written (`cflame record --top`): each module's DWARF
 * is read once, not once a second. */
typedef struct rc_symbols rc_symbols_t;
rc_symbols_t *rc_symbols_new(void);
void rc_symbols_destroy(rc_symbols_t **syms);

typedef struct rc_collect_opts {
  bool allocs;                    /* allocation buffers, not samples */
  bool wall;                      /* samples of wall time (--clock wall) */
  const char *event;              /* samples of a perf event (--event NAME), or NULL */
  fl_collect_allocs_opts_t aopts; /* with allocs */
  rc_symbols_t *keep;             /* NULL, or where symbolizers are kept (borrowed) */
} rc_collect_opts_t;

typedef struct rc_recording {
  fl_profile_t *profile; /* owned */
  size_t images;         /* process images that started recording */
  size_t processes;      /* ... and have records in the profile */
  size_t threads;        /* threads with records, over every image */
  bool cpu_timers;       /* some image sampled with CPU timers (no perf events) */
  bool interfered;       /* some program stopped its samples (warnings say how) */
  char **warnings;       /* what to tell the user (owned) */
  size_t n_warnings;
} rc_recording_t;

/* Reads the recording in dir into *rec; while the program still runs, what
 * it has recorded so far (the buffers are read as they are written: a
 * record is read once its writer has finished it, fl_sampler.h; an image
 * still starting is not read yet). Returns 0, or -1 with err when
 * the directory cannot be read. Images that cannot be read or symbolized
 * are left out with a warning; so is no other (memory that runs out ends
 * the command, fl__common.h). */
int rc_collect(const char *dir, const rc_collect_opts_t *opts, rc_recording_t *rec, char *err,
               size_t err_size);

/* The same for one process image that is not in a directory: the
 * buffer (bytes long) of process pid, whose program's file name is name,
 * with its maps' snapshots (each ended by RC_MAPS_END), as an attach has
 * them so far (`cflame record --pid --top`). */
void rc_collect_image(int pid, const char *name, const void *buf, size_t bytes,
                      const char *snapshots, const rc_collect_opts_t *opts, rc_recording_t *rec);

void rc_recording_free(rc_recording_t *rec);

/* The maps text to symbolize an image by, from its maps file (snapshots,
 * each ended by RC_MAPS_END): the file-backed lines of the last snapshot,
 * then those of earlier ones that overlap none kept, newest first, in
 * order of address; only the lines of files that have some mapping
 * executable (code, not data or the recording's own buffers). New
 * string. Linear in the snapshots (a program may dlopen and dlclose
 * tens of thousands of times): each line costs one lookup among the
 * kept ranges, O(log n). work, if not NULL, is set to the comparisons
 * those lookups made, so that a test can bound them. */
char *rc_collect_merge_maps(const char *snapshots, size_t *work);

#endif
