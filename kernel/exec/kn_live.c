/* SPDX-License-Identifier: BSD-3-Clause */
/* A profiled cell's graph while it runs (see kn_live.h). */
#define _GNU_SOURCE
#include "kn_live.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cflame/fl_render.h"
#include "fl__common.h"
#include "kn_names.h"
#include "kn_profmagic.h"

struct kn_live {
  kn_prof_t *kp;
  const kn_profreq_t *req;
  int cell;
  pid_t pid;
  kn_live_read_fn read;
  int64_t started_ns, due_ns;
  char display_id[64];
  bool line;       /* a line that refreshes, not a graph (kn_live_new) */
  size_t line_len; /* the characters of the line shown; 0: none shown */
  bool shown;
  uint64_t shown_records; /* the stacks the last graph shown was drawn from */
  /* The drawing under way (busy): the loop sets read_ns and clears the
   * results and cancel before it starts the thread, which reads them and
   * shown_records; the thread writes content, records and err before it
   * writes done_fd, and the loop reads them after pthread_join. */
  bool busy;
  pthread_t thread;
  int done_fd; /* eventfd, or -1 */
  fl_cancel_flag_t cancel;
  int64_t read_ns; /* when the drawing began to read */
  json_t *content;
  uint64_t records;
  char err[512];
};

kn_live_t *kn_live_new(kn_prof_t *kp, const kn_profreq_t *req, int cell, pid_t pid,
                       kn_live_read_fn read, int64_t now_ns, bool line) {
  static unsigned long long serial;
  kn_live_t *l = fl__xcalloc(1, sizeof *l);
  l->line = line;
  l->kp = kp;
  l->req = req;
  l->cell = cell;
  l->pid = pid;
  l->read = read;
  l->started_ns = now_ns;
  l->due_ns = now_ns + (int64_t)req->every_ns;
  l->done_fd = -1;
  atomic_init(&l->cancel, false);
  /* Unique in the session, and across kernels that write into one
   * notebook. */
  snprintf(l->display_id, sizeof l->display_id, "cflame-live-%d-%d-%llu", (int)getpid(), cell,
           ++serial);
  return l;
}

/* "live: 12.0 s so far, 11,873 samples": how long the cell has run, and
 * what the graph counts (sampled allocations for an allocation profile). */
static char *live_note(const kn_live_t *l, const fl_profile_t *prof) {
  const fl_profile_info_t *info = fl_profile_info_const(prof);
  const fl_kind_info_t *kind = fl_kind(info->kind);
  char count[64];
  if (kind->allocs)
    fl_count_noun(info->samples, "sampled allocation", "sampled allocations", count, sizeof count);
  else if (kind->time)
    fl_count_noun(info->total_weight, "sample", "samples", count, sizeof count);
  else
    fl_count_noun(info->samples, "stack", "stacks", count, sizeof count);
  return fl__xasprintf("live: %.1f s so far, %s", (double)(l->read_ns - l->started_ns) / 1e9,
                       count);
}

/* A stream message's content: text (freed here) on stderr. */
static json_t *on_stderr(char *text) {
  json_t *content = json_pack("{s:s, s:s}", "name", "stderr", "text", text);
  free(text);
  return content;
}

/* The stream content that turns the line shown into note: a carriage
 * return, note, and blanks over what is left of a longer line. */
static json_t *line_content(const kn_live_t *l, const char *note) {
  size_t len = strlen(note);
  int pad = l->line_len > len ? (int)(l->line_len - len) : 0;
  return on_stderr(fl__xasprintf("\r%s%*s", note, pad, ""));
}

static void *draw_main(void *arg) {
  kn_live_t *l = arg;
  fl_profile_t *prof = l->read(l->kp, l->req, l->cell, l->pid, l->err, sizeof l->err);
  if (prof) {
    l->records = fl_profile_info_const(prof)->samples;
    if (l->records && l->records != l->shown_records && !atomic_load(&l->cancel)) {
      char root[32], *note = live_note(l, prof);
      snprintf(root, sizeof root, KN_CELL_FILE_FMT, l->cell);
      if (l->line)
        l->content = line_content(l, note);
      else
        l->content = kn_prof_show_live(l->kp, prof, l->req, root, note, &l->cancel, l->err,
                                       sizeof l->err);
      free(note);
    }
    fl_profile_destroy(&prof);
  }
  uint64_t one = 1;
  /* One write to a fresh eventfd cannot fail or block. */
  (void)!write(l->done_fd, &one, sizeof one);
  return NULL;
}

int kn_live_tick(kn_live_t *l, int64_t now_ns) {
  if (l->busy || l->due_ns == INT64_MAX) return -1;
  if (now_ns < l->due_ns) return (int)((l->due_ns - now_ns + 999999) / 1000000);
  l->due_ns = now_ns + (int64_t)l->req->every_ns;
  l->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (l->done_fd < 0) return (int)(l->req->every_ns / 1000000); /* none this time */
  l->content = NULL;
  l->records = 0;
  l->err[0] = '\0';
  l->read_ns = now_ns;
  atomic_store(&l->cancel, false);
  /* The kernel's signals are the main thread's (kn_kernel.c). */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  int rc = pthread_create(&l->thread, NULL, draw_main, l);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    close(l->done_fd);
    l->done_fd = -1;
    return (int)(l->req->every_ns / 1000000);
  }
  l->busy = true;
  return -1;
}

int kn_live_fd(const kn_live_t *l) {
  return l->busy ? l->done_fd : -1;
}

bool kn_live_busy(const kn_live_t *l) {
  return l->busy;
}

bool kn_live_ended(const kn_live_t *l) {
  struct pollfd p = {.fd = l->done_fd, .events = POLLIN};
  return l->busy && poll(&p, 1, 0) == 1;
}

/* Waits for the drawing under way; afterwards nothing is under way. */
static void join(kn_live_t *l) {
  pthread_join(l->thread, NULL);
  close(l->done_fd);
  l->done_fd = -1;
  l->busy = false;
}

json_t *kn_live_take(kn_live_t *l, bool *update) {
  *update = l->shown;
  if (!l->busy) return NULL;
  join(l);
  json_t *content = l->content;
  l->content = NULL;
  if (!content || atomic_load(&l->cancel)) {
    json_decref(content);
    return NULL;
  }
  if (l->line)
    l->line_len = strlen(json_string_value(json_object_get(content, "text"))) - 1;
  else
    l->shown = true;
  l->shown_records = l->records;
  return content;
}

bool kn_live_line(const kn_live_t *l) {
  return l->line;
}

json_t *kn_live_erase(kn_live_t *l) {
  if (!l->line_len) return NULL;
  json_t *content = on_stderr(fl__xasprintf("\r%*s\r", (int)l->line_len, ""));
  l->line_len = 0;
  return content;
}

void kn_live_stop(kn_live_t *l) {
  l->due_ns = INT64_MAX;
  if (!l->busy) return;
  atomic_store(&l->cancel, true);
  join(l);
  json_decref(l->content);
  l->content = NULL;
}

const char *kn_live_error(const kn_live_t *l) {
  return l->err;
}

const char *kn_live_display_id(const kn_live_t *l) {
  return l->shown ? l->display_id : NULL;
}

void kn_live_destroy(kn_live_t **lp) {
  kn_live_t *l = *lp;
  if (!l) return;
  kn_live_stop(l);
  free(l);
  *lp = NULL;
}
