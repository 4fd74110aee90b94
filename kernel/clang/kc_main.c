/* SPDX-License-Identifier: BSD-3-Clause */
/* cflame-clang: libclang in a process of its own, for the kernel's
 * completion and inspection (kernel/assist/kn_clang.h is the kernel's side, and
 * kernel/assist/kn_clangmsg.h the descriptors and messages between them).
 *
 * libclang reads whatever a unit includes, to its end: an #include of
 * /dev/zero or /dev/urandom never ends and a 100 MB header takes
 * gigabytes. Here that costs this process, never the kernel: its address
 * space is capped (RLIMIT_AS), a watchdog thread ends it when its resident
 * memory passes the same limit (the only cap under AddressSanitizer,
 * whose shadow memory needs terabytes of address space), and the kernel
 * kills it when a request waits too long, and starts another for the next
 * one. It dies with the kernel (PR_SET_PDEATHSIG).
 *
 * One job at a time: read a job, ask libclang, write the result. The
 * process lives from job to job, so that libclang's unit and its
 * precompiled preamble do too. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kc_libclang.h"
#include "kn_chan.h"
#include "kn_clangmsg.h"
#include "kn_text.h"

#if defined(__SANITIZE_ADDRESS__)
#define KC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KC_ASAN 1
#endif
#endif

/* How often the watchdog looks at the resident memory. */
#define WATCH_MS 50

static unsigned long long memory_bytes;

/* Ends the process once its resident memory passes memory_bytes. */
static void *watchdog(void *arg) {
  long page = sysconf(_SC_PAGESIZE);
  struct timespec pause = {0, WATCH_MS * 1000000L};
  for (;;) {
    FILE *f = fopen("/proc/self/statm", "re");
    unsigned long long size = 0, resident = 0;
    if (f) {
      if (fscanf(f, "%llu %llu", &size, &resident) != 2) resident = 0;
      fclose(f);
    }
    if (resident * (unsigned long long)page > memory_bytes) {
      fprintf(stderr, "cflame-clang: %llu MB resident, past its limit of %llu MB\n",
              resident * (unsigned long long)page >> 20, memory_bytes >> 20);
      _exit(KN_CLANGMSG_EXIT_MEMORY);
    }
    nanosleep(&pause, NULL);
  }
  return NULL;
}

/* Caps the address space at memory_bytes (or less, where the kernel's own
 * cap is lower) and starts the watchdog. No core file either: a process
 * that died of gigabytes would write them to the disk. */
static void limit_memory(void) {
  setrlimit(RLIMIT_CORE, &(struct rlimit){0, 0});
#ifndef KC_ASAN
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 &&
      (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > memory_bytes)) {
    rl.rlim_cur = memory_bytes; /* below rlim_max, which is at least the old rlim_cur */
    setrlimit(RLIMIT_AS, &rl);
  }
#endif
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 << 10);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  if (pthread_create(&t, &attr, watchdog, NULL) != 0) {
    fprintf(stderr, "cflame-clang: cannot start its memory watchdog\n");
    _exit(1);
  }
  pthread_attr_destroy(&attr);
}

/* The job waiting in the memory file, as JSON (new), or NULL with err. */
static json_t *read_job(char *err, size_t err_size) {
  struct stat st;
  if (fstat(KN_CLANGMSG_JOB_FD, &st) < 0) {
    snprintf(err, err_size, "cannot read the job: %s", strerror(errno));
    return NULL;
  }
  char *text = fl__xmalloc((size_t)st.st_size + 1, 1);
  size_t got = 0;
  while (got < (size_t)st.st_size) {
    ssize_t n = pread(KN_CLANGMSG_JOB_FD, text + got, (size_t)st.st_size - got, (off_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  json_error_t e;
  json_t *job = json_loadb(text, got, 0, &e);
  free(text);
  if (!job) snprintf(err, err_size, "the job is not JSON: %s", e.text);
  return job;
}

/* A result that says only why there is none (JSON, new). */
static json_t *error_result(kn_clang_op_t op, const char *why) {
  kn_clang_result_t r = {.op = op, .error = (char *)why};
  return kn_clangmsg_result_to_json(&r);
}

/* Does one job; returns its result's JSON (new). */
static json_t *serve(kc_libclang_t *lc) {
  char err[256];
  kn_clang_job_t job;
  json_t *j = read_job(err, sizeof err);
  if (!j || kn_clangmsg_job_from_json(j, &job, err, sizeof err) < 0) {
    json_decref(j);
    return error_result(KN_CLANG_COMPLETE, err);
  }
  json_decref(j);
  kn_clang_result_t *r = fl__xcalloc(1, sizeof *r);
  r->op = job.op;
  kc_libclang_run(lc, &job, r);
  kn_clangmsg_job_free(&job);
  json_t *out = kn_clangmsg_result_to_json(r);
  kn_clangmsg_result_free(&r);
  return out;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "cflame-clang is started by cflame-kernel, for completion\n");
    return 2;
  }
  /* Gone with the kernel, even if it went before this line. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != (pid_t)atol(argv[1])) _exit(0);
  memory_bytes = strtoull(argv[2], NULL, 10);
  limit_memory();
  signal(SIGPIPE, SIG_IGN);

  kc_libclang_t *lc = kc_libclang_new();
  for (;;) {
    char kind, *data;
    size_t len;
    if (kn_chan_read_blocking(KN_CLANGMSG_CMD_FD, &kind, &data, &len) != 1) break;
    free(data);
    json_t *result = serve(lc);
    int rc = kn_chan_write_json(KN_CLANGMSG_RESULT_FD, result);
    json_decref(result);
    if (rc < 0 && errno == EMSGSIZE) {
      result = error_result(KN_CLANG_COMPLETE, "libclang's answer is larger than a frame may be");
      rc = kn_chan_write_json(KN_CLANGMSG_RESULT_FD, result);
      json_decref(result);
    }
    if (rc < 0) break; /* the kernel is gone, or gave up on this job */
  }
  /* No cleanup: libclang's static destructors and its unit would only
   * cost time, and the kernel removes the preamble's files. */
  _exit(0);
}
