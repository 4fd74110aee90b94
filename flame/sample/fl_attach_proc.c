/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_attach_proc: one process image an attach samples: its unwinder, maps
 * snapshots, name and sample buffer (see fl__attach.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fl__attach.h"
#include "fl__common.h"

/* The buffer's first size, in words; it doubles up to buffer_words. */
#define FIRST_WORDS 65536

char *fl__attach_read_proc(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  fl__buf_t b = {0};
  char chunk[8192];
  ssize_t got;
  while ((got = read(fd, chunk, sizeof chunk)) > 0) fl__buf_add(&b, chunk, (size_t)got);
  int e = errno;
  close(fd);
  if (got < 0) {
    fl__buf_free(&b);
    errno = e;
    return NULL;
  }
  fl__buf_add(&b, "", 0);
  return fl__buf_take(&b);
}

static char *debuginfo_path;
static const Dwfl_Callbacks callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

bool fl__attach_proc_look_at_maps(fl__attach_proc_t *p) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/maps", p->part.pid);
  char *text = fl__attach_read_proc(path);
  if (!text || (p->maps && !strcmp(text, p->maps))) {
    free(text);
    return false;
  }
  p->part.maps = fl__xrealloc(p->part.maps, p->part.n_maps + 1, sizeof *p->part.maps);
  p->part.maps[p->part.n_maps++] = text;
  p->maps = text;
  if (p->dwfl) {
    dwfl_report_begin(p->dwfl);
    dwfl_linux_proc_report(p->dwfl, p->part.pid);
    dwfl_report_end(p->dwfl, NULL, NULL);
  }
  return true;
}

static int on_frame(Dwfl_Frame *state, void *arg) {
  fl__attach_proc_t *p = arg;
  Dwarf_Addr pc;
  bool activation;
  if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
  /* Every address but the leaf is read as a return address (the
   * collector looks up pc - 1): an activation further up (a signal
   * handler's interrupted instruction) is stored one on. */
  p->pcs[p->n_pcs] = p->n_pcs && activation ? pc + 1 : pc;
  p->n_pcs++;
  return p->n_pcs < FL_SAMPLER_MAX_DEPTH ? DWARF_CB_OK : DWARF_CB_ABORT;
}

void fl__attach_proc_unwind(fl__attach_proc_t *p, int tid) {
  p->n_pcs = 0;
  for (int round = 0; p->dwfl && round < 2; round++) {
    p->n_pcs = 0;
    dwfl_getthread_frames(p->dwfl, tid, on_frame, p);
    if (p->n_pcs && dwfl_addrmodule(p->dwfl, p->pcs[0])) return;
    if (round == 0 && !fl__attach_proc_look_at_maps(p)) return;
  }
}

void fl__attach_proc_put(fl__attach_proc_t *p, const fl_sampler_record_t *rec) {
  while (fl_sampler_append(p->words, rec) < 0) {
    if (rec->n_pcs > FL_SAMPLER_MAX_DEPTH || p->n_words >= p->most_words) {
      ((fl_sampler_header_t *)p->words)->dropped++;
      return;
    }
    size_t more = p->n_words * 2 < p->most_words ? p->n_words * 2 : p->most_words;
    p->words = fl__xrealloc(p->words, more, sizeof *p->words);
    p->n_words = more;
    fl_sampler_buffer_grown(p->words, p->n_words * sizeof *p->words);
  }
}

size_t fl__attach_proc_bytes(const fl__attach_proc_t *p) {
  return fl_sampler_buffer_bytes(((const fl_sampler_header_t *)p->words)->used_words);
}

/* The program's file name (of /proc/PID/exe, without " (deleted)"), else
 * its main thread's name; and its parent's pid. */
static void read_name(fl__attach_proc_t *p) {
  char path[64], exe[PATH_MAX];
  int pid = p->part.pid;
  snprintf(path, sizeof path, "/proc/%d/exe", pid);
  ssize_t n = readlink(path, exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    const char *deleted = strstr(exe, " (deleted)");
    size_t len = deleted ? (size_t)(deleted - exe) : (size_t)n;
    size_t base = fl__path_base(exe, len);
    snprintf(p->part.name, sizeof p->part.name, "%.*s", (int)(len - base), exe + base);
  } else {
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    char *comm = fl__attach_read_proc(path);
    if (comm) snprintf(p->part.name, sizeof p->part.name, "%.*s", (int)strcspn(comm, "\n"), comm);
    free(comm);
  }
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  char *stat = fl__attach_read_proc(path);
  const char *paren = stat ? strrchr(stat, ')') : NULL;
  if (paren) sscanf(paren + 2, "%*c %d", &p->part.ppid);
  free(stat);
}

int fl__attach_proc_start(fl__attach_proc_t *p, int pid, int image, const fl_attach_opts_t *opts,
                          char *err, size_t err_size) {
  memset(p, 0, sizeof *p);
  p->part.pid = pid;
  p->part.image = image;
  p->most_words = (size_t)opts->buffer_words + FL_SAMPLER_HEADER_WORDS;
  p->n_words = FIRST_WORDS;
  p->words = fl__xcalloc(p->n_words, sizeof *p->words);
  fl_sampler_buffer_start(p->words, p->n_words * sizeof *p->words, opts->interval_ns,
                          FL_SAMPLER_SOURCE_PTRACE);
  read_name(p);
  if (!(p->dwfl = dwfl_begin(&callbacks))) {
    snprintf(err, err_size, "cannot start libdwfl: %s", dwfl_errmsg(-1));
    return -1;
  }
  fl__attach_proc_look_at_maps(p);
  /* Its threads are stopped by the caller before each unwind. */
  if (dwfl_linux_proc_attach(p->dwfl, pid, true) != 0) {
    snprintf(err, err_size, "--pid %d: cannot read its threads' state: %s", pid, dwfl_errmsg(-1));
    dwfl_end(p->dwfl);
    p->dwfl = NULL;
    return -1;
  }
  return 0;
}

void fl__attach_proc_end(fl__attach_proc_t *p) {
  if (p->dwfl) dwfl_end(p->dwfl);
  p->dwfl = NULL;
  if (!p->words) return;
  fl_sampler_header_t *h = (fl_sampler_header_t *)p->words;
  p->part.bytes = fl_sampler_buffer_bytes(h->used_words);
  h->capacity_words = p->part.bytes / sizeof(uint64_t) - FL_SAMPLER_HEADER_WORDS;
  p->part.buf = p->words;
  p->words = NULL;
}

void fl__attach_proc_free(fl__attach_proc_t *p) {
  if (p->dwfl) dwfl_end(p->dwfl);
  free(p->words);
  free(p->part.buf);
  for (size_t i = 0; i < p->part.n_maps; i++) free(p->part.maps[i]);
  free(p->part.maps);
  memset(p, 0, sizeof *p);
}
