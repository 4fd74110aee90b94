/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_attach: an attach written as a recording directory (see rc_attach.h). */
#define _GNU_SOURCE
#include "rc_attach.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "fl__common.h"
#include "rc_files.h"

static const int stopping[] = {SIGINT, SIGTERM, SIGHUP};

/* Writes len bytes of data to dir/PID.GEN.suffix. Returns 0, or -1 with
 * err. */
static int write_file(const char *dir, int pid, int gen, const char *suffix, const void *data,
                      size_t len, char *err, size_t err_size) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, RC_FILE_FMT, dir, pid, gen, suffix);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const char *p = data;
  while (fd >= 0 && len) {
    ssize_t put = write(fd, p, len);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) break;
    p += put;
    len -= (size_t)put;
  }
  int e = fd < 0 ? errno : len ? (errno ? errno : ENOSPC) : 0;
  if (fd >= 0 && close(fd) < 0 && !e) e = errno;
  if (!e) return 0;
  snprintf(err, err_size, "cannot write the recording (%s): %s", path, strerror(e));
  return -1;
}

/* The info file, the maps snapshots and the samples of one process
 * image, as the preloaded library writes them (rc_files.h). */
static int write_image(const char *dir, const fl_attach_process_t *im, char *err, size_t err_size) {
  char *info = fl__xasprintf(RC_INFO_PID " %d\n" RC_INFO_PPID " %d\n" RC_INFO_NAME " %s\n", im->pid,
                             im->ppid, im->name[0] ? im->name : "?");
  fl__buf_t maps = {0};
  for (size_t i = 0; i < im->n_maps; i++) {
    fl__buf_puts(&maps, im->maps[i]);
    fl__buf_puts(&maps, RC_MAPS_END);
  }
  fl__buf_add(&maps, "", 0);
  char *maps_text = fl__buf_take(&maps);
  int rc = write_file(dir, im->pid, im->image, RC_SUFFIX_INFO, info, strlen(info), err, err_size);
  if (rc == 0)
    rc = write_file(dir, im->pid, im->image, RC_SUFFIX_MAPS, maps_text, strlen(maps_text), err,
                    err_size);
  if (rc == 0)
    rc = write_file(dir, im->pid, im->image, RC_SUFFIX_SAMPLES, im->buf, im->bytes, err, err_size);
  free(info);
  free(maps_text);
  return rc;
}

/* The target's image (PID.0), and each followed one's (CHILD.IMAGE). */
static int write_recording(const char *dir, int pid, const fl_attach_result_t *r, char *err,
                           size_t err_size) {
  fl_attach_process_t target = {.pid = pid,
                                .ppid = r->ppid,
                                .buf = r->buf,
                                .bytes = r->bytes,
                                .maps = r->maps,
                                .n_maps = r->n_maps};
  snprintf(target.name, sizeof target.name, "%s", r->name);
  int rc = write_image(dir, &target, err, err_size);
  for (size_t i = 0; rc == 0 && i < r->n_followed; i++)
    rc = write_image(dir, &r->followed[i], err, err_size);
  return rc;
}

/* The target's command line, its arguments joined by spaces (new). */
static char *command_of(int pid) {
  char path[64], buf[4096];
  snprintf(path, sizeof path, "/proc/%d/cmdline", pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
  if (fd >= 0) close(fd);
  if (n <= 0) return fl__xasprintf("pid %d", pid);
  buf[n] = '\0';
  while (n > 0 && buf[n - 1] == '\0') n--;
  for (ssize_t i = 0; i < n; i++)
    if (buf[i] == '\0') buf[i] = ' ';
  buf[n] = '\0';
  return fl__xstrdup(buf);
}

static void say_attached(void *ctx, int pid, size_t threads) {
  (void)ctx;
  fprintf(stderr,
          "cflame record: attached to pid %d (%zu thread%s); Ctrl-C or SIGTERM ends the "
          "recording\n",
          pid, threads, threads == 1 ? "" : "s");
}

int rc_attach(int pid, uint64_t interval_ns, double duration_s, bool follow_forks,
              uint64_t buffer_words, const char *dir,
              void (*progress)(void *ctx, const void *buf, size_t bytes,
                               const fl_attach_result_t *sofar),
              void *ctx, rc_attached_t *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  /* The signals that end the attach are read from a signalfd, blocked
   * meanwhile: the loop sees them between ticks, and none arrives in the
   * middle of a stop. What came is read before they are unblocked. */
  sigset_t set, old;
  sigemptyset(&set);
  for (size_t i = 0; i < FL__ARRAY_SIZE(stopping); i++) sigaddset(&set, stopping[i]);
  sigprocmask(SIG_BLOCK, &set, &old);
  int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  out->command = command_of(pid);
  fl_attach_opts_t opts = {.interval_ns = interval_ns,
                           .buffer_words = buffer_words,
                           .duration_s = duration_s,
                           .stop_fd = sfd,
                           .follow_forks = follow_forks,
                           .attached = say_attached,
                           .progress = progress,
                           .ctx = ctx};
  int rc = fl_attach_run(pid, &opts, &out->result, err, err_size);
  if (sfd >= 0) {
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) continue;
    close(sfd);
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  if (rc == 0) rc = write_recording(dir, pid, &out->result, err, err_size);
  if (rc < 0) rc_attached_free(out);
  return rc;
}

void rc_attached_free(rc_attached_t *a) {
  fl_attach_result_free(&a->result);
  free(a->command);
  a->command = NULL;
}
