/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__spawn: programs started as the compiler, man, the worker, libclang's
 * process and `cflame record`'s program are: their output on a pipe, the
 * descriptors they are given and no other, their signals. */
#define _GNU_SOURCE
#include "fl__spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

typedef struct run_case {
  const char *name;
  const char *script; /* run by sh -c; NULL: a program that does not exist */
  const char *dir;
  int status;
  const char *output;
} run_case_t;

static const run_case_t run_cases[] = {
    {"stdout and stderr, in order", "echo out; echo err >&2", NULL, 0, "out\nerr\n"},
    {"the exit status", "echo bye; exit 3", NULL, 3, "bye\n"},
    {"killed by a signal", "kill -TERM $$", NULL, 128 + SIGTERM, ""},
    {"stdin is /dev/null", "cat; echo end", NULL, 0, "end\n"},
    {"in dir", "pwd", "/", 0, "/\n"},
    {"no such program", NULL, NULL, 127, "No such file or directory"},
};

static void test_run(void) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(run_cases); i++) {
    const run_case_t *c = &run_cases[i];
    char *argv_sh[] = {"sh", "-c", (char *)c->script, NULL};
    char *argv_missing[] = {"cflame-no-such-program", NULL};
    char *output;
    int status = fl__spawn_run(c->script ? argv_sh : argv_missing, c->dir, &output);
    if (status != c->status || strcmp(output, c->output) != 0)
      fprintf(stderr, "case \"%s\": status %d, output \"%s\"\n", c->name, status, output);
    CHECK_INT(status, c->status);
    CHECK_STR(output, c->output);
    free(output);
  }
}

/* A program started as man is (a path, an environment of its own, stderr
 * dropped), read without blocking, and a process group killed. */
static void test_piped(void) {
  char *argv[] = {"/bin/sh", "-c", "echo \"$CFLAME_TEST\"; echo hidden >&2; exec sleep 30", NULL};
  char *env[] = {"CFLAME_TEST=from the environment given", NULL};
  pid_t pid;
  int fd;
  CHECK_INT(fl__spawn_piped(&(fl__spawn_t){.argv = argv, .env = env, .own_group = true}, false,
                            &pid, &fd),
            0);
  CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  CHECK_INT(getpgid(pid), pid); /* a process group of its own */
  fl__buf_t out = FL__BUF_INIT;
  /* The line comes, then the pipe stays open while sleep runs. */
  for (int i = 0; i < 1000 && !strchr(out.data ? out.data : "", '\n'); i++) {
    CHECK(!fl__spawn_drain(&fd, &out));
    usleep(10000);
  }
  CHECK_STR(out.data, "from the environment given\n");
  CHECK(fd >= 0);
  fl__spawn_kill(pid);
  CHECK(kill(pid, 0) < 0 && errno == ESRCH); /* killed and reaped */
  /* Its end of the pipe is gone: the rest is end of file. */
  for (int i = 0; i < 1000 && fd >= 0; i++)
    if (!fl__spawn_drain(&fd, &out)) usleep(10000);
  CHECK_INT(fd, -1);
  CHECK_STR(out.data, "from the environment given\n");
  fl__buf_free(&out);

  char *missing[] = {"/nonexistent/cflame", NULL};
  CHECK_INT(fl__spawn_piped(&(fl__spawn_t){.argv = missing}, false, &pid, &fd), ENOENT);
  char *relative[] = {"sh", "-c", "true", NULL}; /* a path, not looked up in PATH */
  CHECK_INT(fl__spawn_piped(&(fl__spawn_t){.argv = relative}, false, &pid, &fd), ENOENT);
  /* A directory that cannot be entered is an error of the start, not a
   * child that exits. */
  char *sh[] = {"/bin/sh", "-c", "true", NULL};
  CHECK_INT(fl__spawn_piped(&(fl__spawn_t){.argv = sh, .dir = "/nonexistent"}, false, &pid, &fd),
            ENOENT);
}

/* What sh -c script prints, run as how says (argv set here, stdout on a
 * pipe): new string. */
static char *output_of(fl__spawn_t how, const char *script) {
  char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
  how.argv = argv;
  pid_t pid;
  int fd;
  CHECK_INT(fl__spawn_piped(&how, true, &pid, &fd), 0);
  fl__buf_t out = FL__BUF_INIT;
  while (!fl__spawn_drain(&fd, &out)) {
  }
  int status;
  waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  fl__buf_add(&out, "", 0);
  return fl__buf_take(&out);
}

/* Descriptors are placed where they are asked for, even when one to place
 * sits at another's target (the worker's pipes at 3 and 4), and with
 * close_others nothing else reaches the child: not a descriptor without
 * close-on-exec, however high. */
static void test_descriptors(void) {
  int a[2], b[2];
  CHECK(pipe2(a, O_CLOEXEC) == 0 && pipe2(b, O_CLOEXEC) == 0);
  /* The pipes themselves well above the numbers the test places. */
  int *ends[] = {&a[0], &a[1], &b[0], &b[1]};
  for (size_t i = 0; i < 4; i++) {
    int high = fcntl(*ends[i], F_DUPFD_CLOEXEC, 30);
    close(*ends[i]);
    *ends[i] = high;
  }
  /* b[1] must land at 5 and a[1] at 6: put a[1] at 5 first, so a naive
   * order of dup2s would lose it. */
  int at5 = dup2(a[1], 5), at6 = dup2(b[1], 6);
  CHECK(at5 == 5 && at6 == 6);
  int stray = fcntl(0, F_DUPFD, 40); /* no close-on-exec */
  CHECK(stray >= 40);
  fl__spawn_t how = {.close_others = true,
                     .fds = {{5, 6}, {6, 5}, {7, -1}},
                     .n_fds = 3};
  char script[256];
  snprintf(script, sizeof script,
           "echo five >&5; echo six >&6; [ -e /dev/fd/%d ] && echo stray; "
           "[ -e /dev/fd/4 ] && echo four; [ -w /dev/fd/7 ] && echo null-at-7; true",
           stray);
  char *out = output_of(how, script);
  CHECK_STR(out, "null-at-7\n");
  free(out);
  close(5);
  close(6);
  char got[64] = "";
  ssize_t n = read(b[0], got, sizeof got - 1);
  CHECK(n == 5 && memcmp(got, "five\n", 5) == 0); /* 5 was the caller's 6: b's */
  n = read(a[0], got, sizeof got - 1);
  CHECK(n == 4 && memcmp(got, "six\n", 4) == 0);
  /* Without close_others the stray descriptor is inherited, as a shell's
   * child inherits it; the caller's descriptors are as they were. */
  snprintf(script, sizeof script, "[ -e /dev/fd/%d ] && echo stray; true", stray);
  out = output_of((fl__spawn_t){0}, script);
  CHECK_STR(out, "stray\n");
  free(out);
  CHECK(fcntl(a[1], F_GETFD) & FD_CLOEXEC);
  close(stray);
  close(a[0]);
  close(a[1]);
  close(b[0]);
  close(b[1]);
}

/* The mask and the dispositions: a caller that blocks or ignores a signal
 * gives the child an empty mask and a default action where asked. */
static void test_signals(void) {
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, &old);
  struct sigaction ign = {.sa_handler = SIG_IGN}, old_term;
  sigaction(SIGTERM, &ign, &old_term);
  /* SigBlk and SigIgn of /proc/self/status, as masks: SIGUSR1 is bit 9,
   * SIGTERM bit 14. */
  const char *script = "grep -E '^Sig(Blk|Ign)' /proc/$$/status | tr -d '\t'";
  char *out = output_of((fl__spawn_t){0}, script);
  CHECK(strstr(out, "SigBlk:0000000000000200") != NULL);
  CHECK(strstr(out, "SigIgn:") && (strtoull(strstr(out, "SigIgn:") + 7, NULL, 16) & (1u << 14)));
  free(out);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  out = output_of((fl__spawn_t){.empty_sigmask = true, .sigdefault = &term}, script);
  CHECK(strstr(out, "SigBlk:0000000000000000") != NULL);
  CHECK(strstr(out, "SigIgn:") && !(strtoull(strstr(out, "SigIgn:") + 7, NULL, 16) & (1u << 14)));
  free(out);
  sigaction(SIGTERM, &old_term, NULL);
  sigprocmask(SIG_SETMASK, &old, NULL);
}

int main(void) {
  test_run();
  test_piped();
  test_descriptors();
  test_signals();
  return TEST_DONE();
}
