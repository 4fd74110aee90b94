/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__attach: one process image an attach samples (fl_attach.h), shared
 * by fl_attach.c (the threads: seizing, stopping, waiting, detaching) and
 * fl_attach_proc.c (the process: its unwinder, maps snapshots, program
 * name and sample buffer).
 *
 * The target is one image; with follow_forks each process it forks is
 * another, and each program a followed child execs another again. An
 * image's threads are stopped by fl_attach.c before it is unwound: a
 * Dwfl reads a thread's registers and memory with ptrace, which only a
 * stopped thread allows. */
#ifndef FL__ATTACH_H
#define FL__ATTACH_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_attach.h"
#include "cflame/fl_sampler.h"

typedef struct fl__attach_proc {
  /* pid, ppid, image, name, and the maps snapshots so far; its buf and
   * bytes once it ends (fl__attach_proc_end). */
  fl_attach_process_t part;
  Dwfl *dwfl;       /* NULL: it is not unwound (libdwfl refused it), or it ended */
  const char *maps; /* the last snapshot (in part.maps) */
  uint64_t *words;  /* the sample buffer while it is sampled */
  size_t n_words;   /* its size in words, header included */
  size_t most_words;
  uint64_t pcs[FL_SAMPLER_MAX_DEPTH]; /* the last unwind's addresses, leaf first */
  size_t n_pcs;
} fl__attach_proc_t;

/* The whole text of a /proc file (new), or NULL with errno. */
char *fl__attach_read_proc(const char *path);

/* Starts image `image` of process pid, whose threads are traced already:
 * its buffer (opts' interval and buffer_words), its maps, its program's
 * name and ppid, and its unwinder. Returns 0, or -1 with err when libdwfl
 * cannot unwind it; *p is to be ended and freed either way. */
int fl__attach_proc_start(fl__attach_proc_t *p, int pid, int image, const fl_attach_opts_t *opts,
                          char *err, size_t err_size);
/* Takes a snapshot of the maps when they changed, and tells the unwinder
 * the modules. Returns whether they changed. */
bool fl__attach_proc_look_at_maps(fl__attach_proc_t *p);
/* Unwinds thread tid of p, stopped, into p->pcs (none when it cannot). A
 * leaf in no module known (code loaded since the maps were last read)
 * reads the maps again, once. */
void fl__attach_proc_unwind(fl__attach_proc_t *p, int tid);
/* Appends rec to p's buffer, growing it up to its most; counts it dropped
 * when it does not fit. */
void fl__attach_proc_put(fl__attach_proc_t *p, const fl_sampler_record_t *rec);
/* The bytes of p's buffer in use. */
size_t fl__attach_proc_bytes(const fl__attach_proc_t *p);
/* Ends p's sampling: its buffer becomes part.buf (trimmed to what is in
 * use), its unwinder is freed. Once. */
void fl__attach_proc_end(fl__attach_proc_t *p);
/* Frees what p still owns (part's buffer and maps when they were not
 * taken: moved out and zeroed by the caller). */
void fl__attach_proc_free(fl__attach_proc_t *p);

#endif
