/* kn_spawn: a child's output on a pipe, as the compiler and man are run. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kn_spawn.h"
#include "test.h"

typedef struct spawn_case {
  const char *script; /* for sh -c */
  kn_spawn_opts_t opts;
  int status;
  const char *output;
} spawn_case_t;

static const spawn_case_t cases[] = {
    {"echo out; echo err >&2; exit 3", {.search_path = true, .stderr_too = true}, 3, "out\nerr\n"},
    {"echo out; echo err >&2", {.search_path = true}, 0, "out\n"},
    {"pwd", {.dir = "/", .search_path = true}, 0, "/\n"},
    {"read x; echo \"[$x]\"", {.search_path = true}, 0, "[]\n"}, /* stdin is /dev/null */
    {"kill -TERM $$", {.search_path = true}, 128 + 15, ""},
};

int main(void) {
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *argv[] = {"sh", "-c", (char *)cases[i].script, NULL};
    char *out;
    CHECK_INT(kn_spawn_run(argv, &cases[i].opts, &out), cases[i].status);
    CHECK_STR(out, cases[i].output);
    free(out);
  }
  /* Without PATH's search, a bare name is not found; with it, a missing
   * program is 127 and says why. */
  char *argv[] = {"sh", "-c", "true", NULL}, *out;
  CHECK_INT(kn_spawn_run(argv, &(kn_spawn_opts_t){0}, &out), 127);
  CHECK(out && strstr(out, "No such file") != NULL);
  free(out);
  char *missing[] = {"cflame-test-no-such-program", NULL};
  CHECK_INT(kn_spawn_run(missing, &(kn_spawn_opts_t){.search_path = true}, &out), 127);
  free(out);
  /* kn_spawn_piped: the reading end, and the child in a group of its own. */
  pid_t pid;
  int fd;
  char *env_argv[] = {"/bin/sh", "-c", "echo \"$CFLAME_SPAWN_TEST\"", NULL};
  char *env[] = {"CFLAME_SPAWN_TEST=given", NULL};
  CHECK_INT(kn_spawn_piped(env_argv, &(kn_spawn_opts_t){.env = env}, &pid, &fd), 0);
  char buf[64] = "";
  ssize_t n = read(fd, buf, sizeof buf - 1);
  CHECK(n > 0 && !strcmp(buf, "given\n"));
  CHECK_INT(getpgid(pid) == pid || getpgid(pid) < 0, 1);
  close(fd);
  waitpid(pid, NULL, 0);
  return TEST_DONE();
}
