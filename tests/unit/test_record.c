/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests for `cflame record`'s reading of a recording
 * (record/rc_collect.c): the snapshots of a process's maps the preloaded
 * library wrote at start, before each dlopen and at exit, merged into the
 * maps text the process is symbolized by; and memory that runs out while
 * the recording is read. The rest of the command runs end to end in
 * tests/cli/test_record.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rc_collect.h"
#include "fl__common.h"
#include "rc_files.h"
#include "test.h"

#define LINE(range, path) range " r-xp 00000000 fe:00 42      " path "\n"
#define DATA(range, path) range " rw-s 00000000 fe:00 43      " path "\n"

static void test_merge_maps(void) {
  /* Start: the program and libc. A dlopen'd plugin, then closed, and
   * another library loaded where it was; the heap and the stack (not
   * files) are left out. */
  const char *snapshots =
      LINE("1000-2000", "/usr/bin/prog")
      LINE("7000-8000", "/usr/lib/libc.so.6")
      "9000-a000 rw-p 00000000 00:00 0          [heap]\n" RC_MAPS_END
      LINE("1000-2000", "/usr/bin/prog")
      LINE("5000-6000", "/opt/plugin.so")
      LINE("7000-8000", "/usr/lib/libc.so.6") RC_MAPS_END
      LINE("1000-2000", "/usr/bin/prog")
      LINE("5800-6800", "/opt/other.so")
      LINE("7000-8000", "/usr/lib/libc.so.6")
      "8800-8900 r--p 00010000 fe:00 42      /usr/lib/libc.so.6\n"
      DATA("9000-9800", "/tmp/cflame-record-x/12.0.samples")
      "fff000-1000000 rw-p 00000000 00:00 0          [stack]\n" RC_MAPS_END;
  char *maps = rc_collect_merge_maps(snapshots, NULL);
  /* The last snapshot wins where ranges overlap: the plugin, closed, does
   * not stand where other.so is now. Every mapping of code files is kept,
   * and no file mapped without code (the sample buffer). */
  CHECK_STR(maps,
            LINE("1000-2000", "/usr/bin/prog") LINE("5800-6800", "/opt/other.so") LINE(
                "7000-8000",
                "/usr/lib/libc.so.6") "8800-8900 r--p 00010000 fe:00 42      /usr/lib/libc.so.6\n");
  free(maps);

  /* A plugin closed before the end keeps its place, and a snapshot cut
   * short (a process killed while writing it) still counts. */
  maps =
      rc_collect_merge_maps(LINE("1000-2000", "/usr/bin/prog") LINE("5000-6000", "/opt/plugin.so")
                                RC_MAPS_END LINE("1000-2000", "/usr/bin/prog"),
                            NULL);
  CHECK_STR(maps, LINE("1000-2000", "/usr/bin/prog") LINE("5000-6000", "/opt/plugin.so"));
  free(maps);

  maps = rc_collect_merge_maps("", NULL);
  CHECK_STR(maps, "");
  free(maps);
}

/* A program that dlopens and dlcloses 20,000 plugins, each where no
 * earlier one stood: every one keeps its place, in order of address, and
 * the merge does a bounded number of range comparisons per line (a
 * lookup among the kept ranges, not a walk of them: 20,000 cycles once
 * took minutes). */
static void test_merge_maps_many_cycles(void) {
  enum { CYCLES = 20000 };
  fl__buf_t in = FL__BUF_INIT, want = FL__BUF_INIT;
  const char *start =
      LINE("1000-2000", "/usr/bin/prog") LINE("7f0000000000-7f0000001000", "/usr/lib/libc.so.6");
  fl__buf_puts(&want, LINE("1000-2000", "/usr/bin/prog"));
  size_t lines = 0;
  for (int i = 0; i < CYCLES; i++) {
    unsigned long lo = 0x10000000ul + 0x10000ul * (unsigned long)i;
    fl__buf_puts(&in, start);
    char line[160];
    snprintf(line, sizeof line, "%lx-%lx r-xp 00000000 fe:00 42      /opt/plugin-%d.so\n", lo,
             lo + 0x1000, i);
    fl__buf_puts(&in, line);
    fl__buf_puts(&want, line);
    snprintf(line, sizeof line, "%lx-%lx rw-p 00001000 fe:00 42      /opt/plugin-%d.so\n",
             lo + 0x1000, lo + 0x2000, i);
    fl__buf_puts(&in, line);
    fl__buf_puts(&want, line);
    fl__buf_puts(&in, RC_MAPS_END);
    lines += 4;
  }
  fl__buf_puts(&in, start);
  fl__buf_puts(&in, RC_MAPS_END);
  lines += 2;
  fl__buf_puts(&want, LINE("7f0000000000-7f0000001000", "/usr/lib/libc.so.6"));
  size_t work = 0;
  char *maps = rc_collect_merge_maps(in.data, &work);
  CHECK_STR(maps, want.data);
  /* A balanced tree of 40,002 ranges is at most 2 log2(40,002) + 2 = 33
   * deep; a walk of the kept ranges would make ~10^9 comparisons. */
  CHECK(work > 0 && work <= lines * 33);
  free(maps);
  fl__buf_free(&in);
  fl__buf_free(&want);
}

/* realloc, which fails once realloc_fails is set: the executable's comes
 * first in symbol lookup, so rc_collect's (and the flame library's) calls
 * land here. Otherwise the next one's: the C library's, or that of a
 * sanitizer's runtime, which owns the heap. */
static void *(*next_realloc)(void *, size_t);
static int realloc_fails;
void *realloc(void *p, size_t n) {
  if (realloc_fails) {
    errno = ENOMEM;
    return NULL;
  }
  if (!next_realloc) *(void **)&next_realloc = dlsym(RTLD_NEXT, "realloc");
  return next_realloc(p, n);
}

/* Runs fn in a child whose reallocs fail, its standard error into err.
 * Returns its wait status. */
static int with_failing_realloc(void (*fn)(void), char *err, size_t err_size) {
  int fds[2];
  if (pipe(fds) < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 2);
    realloc_fails = 1;
    fn();
    _exit(0);
  }
  close(fds[1]);
  size_t got = 0;
  for (ssize_t n; got + 1 < err_size && (n = read(fds[0], err + got, err_size - 1 - got)) > 0;)
    got += (size_t)n;
  err[got] = '\0';
  close(fds[0]);
  int status = -1;
  waitpid(pid, &status, 0);
  return status;
}

static void merge_many_snapshots(void) {
  char text[64 * 64] = "";
  for (int i = 0; i < 40; i++) strcat(text, LINE("1000-2000", "/usr/bin/prog") RC_MAPS_END);
  free(rc_collect_merge_maps(text, NULL));
}

static char recording_dir[] = "/tmp/cflame-test-record-XXXXXX";

static void collect_many_images(void) {
  rc_collect_opts_t opts = {0};
  rc_recording_t rec;
  char err[256];
  rc_collect(recording_dir, &opts, &rec, err, sizeof err);
  rc_recording_free(&rec);
}

/* Memory that runs out while a recording is read ends the command with
 * the flame library's message: no snapshot of the maps, and no process,
 * is left out silently (a realloc that failed once did so). */
static void test_out_of_memory_is_said(void) {
  char err[4096];
  int status = with_failing_realloc(merge_many_snapshots, err, sizeof err);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  CHECK(strstr(err, "cflame: out of memory") != NULL);

  /* 40 processes' info files: more than the first room for images. */
  CHECK(mkdtemp(recording_dir) != NULL);
  for (int pid = 100; pid < 140; pid++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%d.0.%s", recording_dir, pid, RC_SUFFIX_INFO);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fprintf(f, RC_INFO_NAME " prog\n"), fclose(f);
  }
  status = with_failing_realloc(collect_many_images, err, sizeof err);
  CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
  CHECK(strstr(err, "cflame: out of memory") != NULL);
  char rm[128];
  snprintf(rm, sizeof rm, "rm -rf %s", recording_dir);
  CHECK(system(rm) == 0);
}

int main(void) {
  test_merge_maps();
  test_merge_maps_many_cycles();
  test_out_of_memory_is_said();
  return TEST_DONE();
}
