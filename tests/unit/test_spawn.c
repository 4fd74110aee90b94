/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_spawn: a program with its output on a pipe, as the compiler and man
 * are run. */
#include "kn_spawn.h"

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
  for (size_t i = 0; i < sizeof run_cases / sizeof *run_cases; i++) {
    const run_case_t *c = &run_cases[i];
    char *argv_sh[] = {"sh", "-c", (char *)c->script, NULL};
    char *argv_missing[] = {"cflame-no-such-program", NULL};
    char *output;
    int status = kn_spawn_run(c->script ? argv_sh : argv_missing, c->dir, &output);
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
  CHECK_INT(kn_spawn_piped(argv, &(kn_spawn_t){.env = env}, &pid, &fd), 0);
  CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
  fcntl(fd, F_SETFL, O_NONBLOCK);
  CHECK_INT(getpgid(pid), pid); /* a process group of its own */
  fl__buf_t out = FL__BUF_INIT;
  /* The line comes, then the pipe stays open while sleep runs. */
  for (int i = 0; i < 1000 && !strchr(out.data ? out.data : "", '\n'); i++) {
    CHECK(!kn_spawn_drain(&fd, &out));
    usleep(10000);
  }
  CHECK_STR(out.data, "from the environment given\n");
  CHECK(fd >= 0);
  kn_spawn_kill(pid);
  CHECK(kill(pid, 0) < 0 && errno == ESRCH); /* killed and reaped */
  /* Its end of the pipe is gone: the rest is end of file. */
  for (int i = 0; i < 1000 && fd >= 0; i++)
    if (!kn_spawn_drain(&fd, &out)) usleep(10000);
  CHECK_INT(fd, -1);
  CHECK_STR(out.data, "from the environment given\n");
  fl__buf_free(&out);

  char *missing[] = {"/nonexistent/cflame", NULL};
  CHECK_INT(kn_spawn_piped(missing, &(kn_spawn_t){0}, &pid, &fd), ENOENT);
  char *relative[] = {"sh", "-c", "true", NULL}; /* a path, not looked up in PATH */
  CHECK_INT(kn_spawn_piped(relative, &(kn_spawn_t){0}, &pid, &fd), ENOENT);
}

int main(void) {
  test_run();
  test_piped();
  return TEST_DONE();
}
