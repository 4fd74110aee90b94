/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_profattach: %profattach PID, a running program sampled from the
 * notebook.
 *
 * The sampling is `cflame record --pid`'s, in a helper process: the
 * kernel never traces anything itself (a tracer's stops and waits would
 * hold its thread, and a ptrace tracer is a thread, not a process). The
 * helper writes a speedscope file (threads, frames with file and line,
 * time order: what the kernel's views need) into the session directory,
 * which the handler reads as %profload does, into the session profile,
 * then shows as %profshow does. follow_forks=true is the helper's
 * --follow-forks: the file then holds each followed process's threads
 * under a root frame of the process, as any recording of several does.
 *
 * The handler runs off the main loop (kn_job.h) and claims the profiling
 * state as soon as the helper runs, so that an interrupt no longer cancels
 * it: the interrupt is passed to the helper as SIGINT (as Ctrl-C ends
 * `cflame record --pid`), which detaches and writes what it took; that is
 * read and shown. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_io.h"
#include "fl__spawn.h"
#include "kn_profmagic.h"
#include "kn_profreq.h"
#include "kn_worker.h"

/* The helper's last line of output without its "cflame record: " (new):
 * its error, or what it wrote. */
static char *last_line(const fl__buf_t *log) {
  const char *text = log->data ? log->data : "";
  size_t end = log->len;
  while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r')) end--;
  size_t start = end;
  while (start > 0 && text[start - 1] != '\n') start--;
  static const char prefix[] = "cflame record: ";
  if (end - start >= sizeof prefix - 1 && !memcmp(text + start, prefix, sizeof prefix - 1))
    start += sizeof prefix - 1;
  return fl__xstrndup(text + start, end - start);
}

/* Runs the helper to its end, its output into log: SIGINT to it once an
 * interrupt comes. Returns its wait status, or -1 with err. */
static int run_helper(kn_prof_t *kp, char *const argv[], fl__buf_t *log, bool *interrupted,
                      char *err, size_t err_size) {
  fl__spawn_t how = {.path = argv[0], .argv = argv, .own_group = true, .empty_sigmask = true,
                     .close_others = true};
  pid_t pid;
  int fd, e = fl__spawn_piped(&how, true, &pid, &fd);
  if (e) {
    snprintf(err, err_size, "%%profattach: cannot start %s: %s", argv[0],
             strerror(e < 0 ? errno : e));
    return -1;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  /* From here its end stands: an interrupt ends the sampling, not the job. */
  if (!kn_prof_claim(kp)) {
    kill(pid, SIGTERM); /* cancelled already: it detaches and writes nothing kept */
    *interrupted = true;
  }
  int status = -1;
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    poll(&p, fd >= 0 ? 1 : 0, 50);
    if (fd >= 0) fl__spawn_drain(&fd, log);
    pid_t got = waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) break;
    /* An interrupt, or the job stopped (a shutdown: kn_job_discard waits
     * for the handler): the helper detaches and writes what it took. */
    if (!*interrupted && (kn_prof_interrupted(kp) || kn_prof_cancelled(kp))) {
      kill(pid, SIGINT);
      *interrupted = true;
    }
  }
  if (fd >= 0) {
    fcntl(fd, F_SETFL, 0);
    fl__spawn_drain(&fd, log);
  }
  return status;
}

int kn_profmagic_attach(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                        size_t err_size) {
  kn_profreq_t req;
  if (kn_profreq_parse(kp, "profattach", args, KN_OPTS_ATTACH | KN_OPTS_TREE | KN_OPTS_VIEW, &req,
                       err, err_size) < 0)
    return -1;
  int rc = -1;
  char *self = kn_self_dir(), *helper = NULL, *path = NULL, *said = NULL;
  fl__buf_t log = FL__BUF_INIT;
  fl_profile_t *p = NULL;
  const char *word = req.positional[0];
  char *end = NULL;
  long pid = word ? strtol(word, &end, 10) : 0;
  if (!word || *end || pid <= 0 || pid > INT_MAX || req.positional[1]) {
    snprintf(err, err_size,
             "%%profattach needs one PID, a running process's id (such as %%profattach 4242 "
             "duration=10); found %s%s%s",
             word ? "'" : "nothing", word ? (req.positional[1] ? req.positional[1] : word) : "",
             word ? "'" : "");
    goto out;
  }
  /* The helper writes beside the sample files, in the session's own
   * directory. */
  const char *buffer = kn_prof_buffer_path(kp);
  const char *slash = strrchr(buffer, '/');
  path = fl__xasprintf("%.*s/attach-%ld.speedscope.json", slash ? (int)(slash - buffer) : 1,
                       slash ? buffer : ".", pid);
  unlink(path);
  helper = fl__xasprintf("%s/cflame", self);
  char pid_text[24], duration[32];
  snprintf(pid_text, sizeof pid_text, "%ld", pid);
  snprintf(duration, sizeof duration, "%.17g", req.duration_s);
  char *argv[] = {helper, "record", "--pid", pid_text, "--duration", duration, "-o", path,
                  req.follow_forks ? "--follow-forks" : NULL, NULL};
  bool interrupted = false;
  int status = run_helper(kp, argv, &log, &interrupted, err, err_size);
  if (status == -1) goto out;
  said = last_line(&log);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    snprintf(err, err_size, "%%profattach %ld: %s", pid,
             said[0] ? said : "cflame record ended without a word");
    goto out;
  }
  if (kn_prof_cancelled(kp)) {
    snprintf(err, err_size, "%%profattach: interrupted before it began; nothing was taken");
    goto out;
  }
  p = fl_profile_new(FL_PROFILE_CPU);
  fl_read_opts_t read;
  fl_read_opts_init(&read);
  read.stdin_dash = false;
  fl_io_error_t e;
  fl_input_kind_t kind;
  if (fl_read_profile_file_opts(p, path, &read, &kind, &e) < 0) {
    snprintf(err, err_size, "%%profattach %ld: the samples cannot be read back: %s", pid,
             e.message);
    goto out;
  }
  fl_profile_info_t *info = fl_profile_info(p);
  snprintf(info->source, sizeof info->source, "pid %ld", pid);
  if (!info->taken_unix) info->taken_unix = (int64_t)time(NULL);
  kn_prof_session_replace(kp, p);
  p = NULL;
  res->display = kn_prof_show(kp, kn_prof_session(kp), &req, "all", err, err_size);
  if (!res->display) goto out;
  /* What the helper said it took, without the file's name. */
  const char *colon = strstr(said, ": ");
  res->output = fl__xasprintf("%s%s; it is now the session profile (%%profshow, %%profsave, "
                              "%%profdiffview NAME).\n",
                              interrupted ? "Interrupted: " : "", colon ? colon + 2 : said);
  rc = 0;
out:
  if (path) unlink(path);
  fl_profile_destroy(&p);
  fl__buf_free(&log);
  free(said);
  free(path);
  free(helper);
  free(self);
  kn_profreq_free(&req);
  return rc;
}
