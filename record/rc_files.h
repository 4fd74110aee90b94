/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_files: the names `cflame record` and its preloaded library agree on.
 *
 * `cflame record` (rc_record.c) makes a private recording directory, and
 * runs the program with LD_PRELOAD naming the preloaded library
 * (rc_preload.c) and the RC_ENV_* variables below in its environment.
 * Every process image that the library starts in (the program, each child
 * it forks, each program they exec, as long as they keep the environment)
 * writes its own files there, named after its pid and its generation (0
 * for the first image of a pid, 1 after its first exec that claimed files,
 * and so on):
 *
 *   PID.GEN.info     "KEY VALUE" lines: RC_INFO_* at start, and what
 *                    befell the recording later (errors, what the
 *                    program did that stopped samples)
 *   PID.GEN.samples  the sample buffer (fl_sampler.h), mapped shared
 *   PID.GEN.allocs   the allocation buffer (fl_allocs.h), with --allocs
 *                    (instead of samples)
 *   PID.GEN.maps     snapshots of /proc/self/maps, each ended by
 *                    RC_MAPS_END: one at start, one before each dlopen
 *                    and dlclose that follows a change, one at exit
 *
 * The info file is created first, exclusively: it claims the generation.
 * Everything here is read back through these definitions. */
#ifndef RC_FILES_H
#define RC_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_sampler.h"

/* The recording directory; unset: the library does nothing. */
#define RC_ENV_DIR "CFLAME_RECORD_DIR"
/* The sampling interval in nanoseconds; unset: no CPU samples. */
#define RC_ENV_INTERVAL "CFLAME_RECORD_INTERVAL_NS"
/* "wall": samples of wall time, the waits recorded (fl_sampler_set_clock);
 * unset: of CPU time. */
#define RC_ENV_CLOCK "CFLAME_RECORD_CLOCK"
/* A perf event's name (fl_events.h): samples weighed by it instead of
 * time; unset: time. */
#define RC_ENV_EVENT "CFLAME_RECORD_EVENT"
/* Words of each sample buffer, and of each allocation buffer. */
#define RC_ENV_WORDS "CFLAME_RECORD_WORDS"
/* The allocation sample rate (0 < rate <= 1); unset: no allocations. */
#define RC_ENV_ALLOCS "CFLAME_RECORD_ALLOCS"

/* The preloaded libraries, next to each other: the sampler, and with
 * --allocs the allocator's entry points, which use the first's recorder. */
#define RC_PRELOAD_LIB "libcflame_preload.so"
#define RC_PRELOAD_ALLOCS_LIB "libcflame_preload_allocs.so"

#define RC_SUFFIX_SAMPLES "samples"
#define RC_SUFFIX_ALLOCS "allocs"
#define RC_SUFFIX_MAPS "maps"
#define RC_SUFFIX_INFO "info"
/* DIR/PID.GEN.SUFFIX */
#define RC_FILE_FMT "%s/%d.%d.%s"

/* Live blocks the allocation table has room for at sample_rate 1. */
#define RC_ALLOCS_LIVE_BLOCKS (1ull << 22)
/* Record words one process's buffer starts with allocated on disk. The
 * buffer file is sparse and as large as --buffer; only its fixed part and
 * this much are given blocks (posix_fallocate) before the program runs, and
 * the recorders grow the rest as they use it (fl_sampler_use_file), so that
 * hundreds of processes on a tmpfs take memory for what they record, not
 * for 512 MiB each, and a full file system is an error at start or lost
 * samples, never SIGBUS. The one exception is the allocation table (16
 * bytes a slot: 128 MiB at --sample-rate 1), written at random slots: it
 * stays sparse, a page given blocks when first written to. */
#define RC_START_WORDS ((size_t)1 << 17)

/* The part of one process's buffer allocated up front: [0, *end) but for
 * the hole [*hole, *hole + *hole_bytes) (the allocation table; 0 bytes
 * for samples). Returns the bytes allocated. */
static inline size_t rc_start_bytes(bool allocs, double rate, size_t *end, size_t *hole,
                                    size_t *hole_bytes) {
  size_t slots = allocs ? fl_allocs_table_slots(RC_ALLOCS_LIVE_BLOCKS, rate) : 0;
  *end = allocs ? fl_allocs_buffer_bytes(RC_START_WORDS, slots)
                : fl_sampler_buffer_bytes(RC_START_WORDS);
  *hole = allocs ? FL_ALLOCS_HEADER_WORDS * sizeof(uint64_t) : 0;
  *hole_bytes = 2 * sizeof(uint64_t) * slots;
  return *end - *hole_bytes;
}

#define RC_MAPS_END "# end of maps\n"

/* Keys of the info file. */
#define RC_INFO_PID "pid"     /* the process's pid */
#define RC_INFO_PPID "ppid"   /* its parent's */
#define RC_INFO_NAME "name"   /* the program's file name, as the system names it (AT_EXECFN) */
#define RC_INFO_RANK "rank"   /* its MPI rank, when rc_mpi_rank gives one */
#define RC_INFO_ERROR "error" /* why it records nothing (the rest of the line) */
/* What the program did to the sampler, noted when sampling stops (at exit,
 * before an exec, as the program sets a handler): */
#define RC_INFO_REPLACED "replaced" /* a signal whose handler it replaced */
/* "SIGNAL THREADS": the sampling signal it blocked, on how many threads */
#define RC_INFO_BLOCKED "blocked"
/* threads whose timer ended with a descriptor it closed */
#define RC_INFO_CLOSED "closed"

/* The MPI rank this process runs as, or NULL: the first set of Open MPI's
 * variable and the PMI name that MPICH, Intel MPI and Slurm's srun set
 * (RC_RANK_ENVS_TEXT names them for messages). */
#define RC_RANK_ENVS_TEXT "OMPI_COMM_WORLD_RANK or PMI_RANK"
static inline const char *rc_mpi_rank(void) {
  static const char *const envs[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", NULL};
  for (const char *const *e = envs; *e; e++) {
    const char *v = getenv(*e);
    if (v && *v) return v;
  }
  return NULL;
}

#endif
