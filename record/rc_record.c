/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_record: the `cflame record` command (see rc_record.h). */
#define _GNU_SOURCE
#include "rc_record.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cflame/fl_attach.h"
#include "cflame/fl_events.h"
#include "cflame/fl_io.h"
#include "cflame/fl_options.h"
#include "cflame/fl_output.h"
#include "cflame/fl_render.h"
#include "fl__common.h"
#include "rc_attach.h"
#include "rc_collect.h"
#include "rc_files.h"
#include "rc_output.h"
#include "rc_program.h"
#include "rc_run.h"
#include "rc_say.h"
#include "rc_top.h"

#ifndef CFLAME_PRELOAD_FROM_BIN
#error "CFLAME_PRELOAD_FROM_BIN comes from CMake: the preloaded libraries' directory from bindir"
#endif

typedef struct opts {
  const char *output; /* -o; NULL: ./PROGRAM.cflame.EXT */
  const char *format; /* -f; NULL: by the output's ending, or svg */
  double delay_s;
  bool delay_given;
  int pid;                 /* --pid, or 0 */
  double duration_s;       /* --duration, or 0: until the target ends or a signal */
  bool follow_forks;       /* --follow-forks */
  bool top;                /* --top (--watch): the live table on a terminal */
  bool wall;               /* --clock wall */
  const fl_event_t *event; /* --event NAME, or NULL */
  bool allocs, live, weight_count;
  bool alloc_opts_given; /* --sample-rate, --live or --weight */
  double sample_rate;
  uint64_t buffer_words;
  fl_options_t draw;     /* the drawing options (fl_options.h), as the cflame command's */
  const char *diff_base; /* --diff BASE, or NULL */
  char **program;        /* PROGRAM [ARGS...] */
  int n_program;
} opts_t;

/* --help: this, the recording options (the option table's, FL_OPTS_RECORD)
 * and usage_tail. */
static const char usage_head[] =
    "Usage: cflame record [OPTIONS] -- PROGRAM [ARGS...]\n"
    "       cflame record --pid PID [--duration SECONDS] [OPTIONS]\n"
    "\n"
    "Runs PROGRAM with cflame's in-process sampler preloaded (the one the notebook's\n"
    "worker uses: no perf_event permission needed), in every thread, forked child and\n"
    "exec'd program, each process under a root frame of its own. Its input, output,\n"
    "error and exit status pass through; Ctrl-C reaches it, and the profile of what\n"
    "ran is still written. Then the profile, symbolized with libdw (lines, inlined\n"
    "functions), is drawn as `cflame` draws an input.\n"
    "\n"
    "With --pid, samples a program that is running already (no restart, nothing\n"
    "preloaded): every thread of process PID, those it starts meanwhile too, at\n"
    "100 Hz of each thread's CPU time, stopping the thread for each sample with\n"
    "ptrace and unwinding it with libdw. It ends at Ctrl-C or SIGTERM to cflame,\n"
    "after --duration, or when the program exits, which goes on as before,\n"
    "detached. With --follow-forks, the processes it forks meanwhile are sampled\n"
    "too, across their execs, each under a root of its own. Attaching needs the\n"
    "right to ptrace PID (docs/CLI.md says which).\n"
    "--duration and --follow-forks need --pid; --sample-rate, --live and --weight\n"
    "need --allocs; with --pid, --delay is at least 0.001.\n"
    "\n"
    "Recording:\n";

static const char usage_tail[] =
    "\n"
    "Output:\n"
    "  -o, --output FILE      where to write; the format comes from the ending, as\n"
    "                         cflame's -o (cflame --help lists them); - is standard\n"
    "                         output.\n"
    "                         %p is the program's pid, %h the host's name, %r the\n"
    "                         MPI rank (OMPI_COMM_WORLD_RANK or PMI_RANK), %% a %\n"
    "                         (default: ./PROGRAM.cflame.svg, named after PROGRAM)\n"
    "  -f, --format FORMAT    any of cflame's formats (cflame --help), whatever the\n"
    "                         ending\n"
    "  -h, --help             this text\n"
    "\n"
    "Every other option before -- is a drawing option of `cflame` (cflame --help\n"
    "lists them), such as --no-C, --no-lines, --minwidth or --title, and the diff\n"
    "options with --diff BASE. --threads N,M counts 1 for each process's main thread,\n"
    "then 2, 3, ... in the order they started.\n"
    "\n"
    "Examples:\n"
    "  cflame record -- ./solver input.dat            # writes ./solver.cflame.svg\n"
    "  cflame record -o prof.html --delay 0.0001 -- ./solver\n"
    "  cflame record --allocs --sample-rate 1 --live -o leaks.svg -- ./server\n"
    "  cflame record --pid 4242 --duration 30 -o server.html   # a running server\n"
    "  cflame record --top -- ./solver                 # the hottest functions, live\n"
    "  mpirun -n 4 cflame record -o prof.%h.%r.folded -- ./solver   # one per rank\n"
    "  cflame record -o all.svg -- mpirun -n 4 ./solver               # every rank\n"
    "\n"
    "Exit status: the program's (128 + N when signal N ended it), whatever became\n"
    "of the recording (cflame says what on standard error); 2 for a bad command\n"
    "line; 127 when PROGRAM is not found, 126 when it cannot be run or recorded\n"
    "(statically linked, set-user-ID), 1 when cflame cannot set up the recording.\n"
    "With --pid: 0 once the profile is written, 1 when cflame cannot attach (it\n"
    "says why, and what allows it) or nothing was recorded, 2 for a bad command line.\n";

static void print_usage(void) {
  char *options = fl_options_help(FL_OPTS_RECORD, FL_FRONT_COMMAND);
  fputs(usage_head, stdout);
  fputs(options, stdout);
  fputs(usage_tail, stdout);
  free(options);
}

/* ---- messages ---- */

/* The messages: "cflame record: MESSAGE" on standard error (rc_say.h). */
static const rc_voice_t voice = {"cflame record", "(cflame record --help lists its options)"};
#define say(...) rc_say(&voice, __VA_ARGS__)
#define usage_error(...) rc_usage_error(&voice, __VA_ARGS__)

/* ---- options ---- */

/* Whether argv[*i] is the option named long_name (or short_name, "-o"),
 * with its value in *value: "--name VALUE", "--name=VALUE", "-o VALUE",
 * "-oVALUE". *missing is set when the value is missing. */
static bool take(char **argv, int argc, int *i, const char *long_name, const char *short_name,
                 const char **value, bool *missing) {
  const char *w = argv[*i];
  size_t n = strlen(long_name);
  const char *v = NULL;
  if (!strncmp(w, long_name, n) && w[n] == '=') {
    v = w + n + 1;
  } else if (!strcmp(w, long_name) || (short_name && !strcmp(w, short_name))) {
    if (*i + 1 < argc && strcmp(argv[*i + 1], "--") != 0) v = argv[++*i];
  } else if (short_name && !strncmp(w, short_name, 2) && w[2]) {
    v = w + 2;
  } else {
    return false;
  }
  *missing = !v;
  *value = v;
  return true;
}

/* The table's options cflame record takes: its own and the drawing ones. */
#define RECORD_GROUPS (FL_OPTS_RECORD | FL_OPTS_DRAWING)

/* A recording option's value (v, parsed by the table; raw as written)
 * into o. */
static void store_recording(opts_t *o, const fl_optval_t *v, const char *raw) {
  const char *k = v->key;
  if (!strcmp(k, "delay")) {
    o->delay_s = v->d;
    o->delay_given = true;
  } else if (!strcmp(k, "clock")) {
    o->wall = !strcmp(v->s, "wall");
  } else if (!strcmp(k, "event")) {
    o->event = fl_event_find(v->s); /* one this machine counts: the row's check */
  } else if (!strcmp(k, "allocs")) {
    o->allocs = v->b;
  } else if (!strcmp(k, "sample_rate")) {
    o->sample_rate = v->d;
    o->alloc_opts_given = true;
  } else if (!strcmp(k, "weight")) {
    o->weight_count = !strcmp(v->s, "count");
    o->alloc_opts_given = true;
  } else if (!strcmp(k, "live")) {
    o->live = v->b;
    o->alloc_opts_given = true;
  } else if (!strcmp(k, "duration")) {
    o->duration_s = v->d;
  } else if (!strcmp(k, "follow_forks")) {
    o->follow_forks = v->b;
  } else if (!strcmp(k, "pid")) {
    o->pid = (int)v->i;
  } else if (!strcmp(k, "buffer")) {
    o->buffer_words = (uint64_t)v->i;
  } else if (!strcmp(k, "top")) {
    o->top = v->b;
  } else if (!strcmp(k, "diff")) {
    o->diff_base = raw;
  }
}

/* argv[*i] as an option of the table (--NAME VALUE, --NAME=VALUE, --NAME
 * or --no-NAME for a boolean): a drawing option into o->draw, a recording
 * one by store_recording. Returns 0 when it is none, -1 when it is one,
 * else the exit status of a bad one. */
static int table_option(int argc, char **argv, int *i, opts_t *o) {
  const char *w = argv[*i], *eq = strchr(w, '=');
  if (strncmp(w, "--", 2) != 0) return 0;
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)(eq ? (size_t)(eq - w - 2) : strlen(w + 2)), w + 2);
  bool no = !strncmp(name, "no-", 3);
  const fl_option_t *opt = fl_option_find(no ? name + 3 : name);
  if (!opt || !(opt->groups & RECORD_GROUPS) || (no && opt->type != FL_OPT_BOOL)) return 0;
  const char *value;
  if (opt->type == FL_OPT_BOOL && !eq)
    value = no ? "false" : "true";
  else if (eq)
    value = eq + 1;
  else if (*i + 1 < argc && strcmp(argv[*i + 1], "--") != 0)
    value = argv[++*i];
  else
    return usage_error("%s needs a value", w);
  char err[1024];
  fl_optval_t v;
  if (fl_options_take(&o->draw, opt, value, &v, err, sizeof err) < 0) return usage_error("%s", err);
  if (v.set) store_recording(o, &v, value);
  fl_optval_free(&v);
  return -1;
}

/* The kinds of sample a recording under o holds (fl_profile.h): its
 * collector's, with the parts that one takes (a wall-clock recording's
 * CPU and off-CPU time); an allocation recording keeps its CPU samples
 * too. --kind is checked against them before the program runs, so that a
 * kind the run cannot hold does not cost the run. */
static uint32_t kinds_recorded(const opts_t *o) {
  fl_profile_kind_t k = o->event    ? FL_PROFILE_EVENT
                        : o->wall   ? FL_PROFILE_WALL
                        : o->allocs ? fl_kind_alloc(o->weight_count, o->live)
                                    : FL_PROFILE_CPU;
  return 1u << k | fl_kind_takes(k) | (o->allocs ? 1u << FL_PROFILE_CPU : 0);
}

/* What records kind, as advice. Static. */
static const char *how_recorded(fl_profile_kind_t kind) {
  switch (kind) {
    case FL_PROFILE_CPU: return "every recording but --event's holds it";
    case FL_PROFILE_WALL:
    case FL_PROFILE_OFFCPU: return "--clock wall records it";
    case FL_PROFILE_ALLOC_BYTES: return "--allocs records it";
    case FL_PROFILE_ALLOC_COUNT: return "--allocs --weight count records it";
    case FL_PROFILE_LIVE_BYTES: return "--allocs --live records it";
    case FL_PROFILE_LIVE_COUNT: return "--allocs --live --weight count records it";
    case FL_PROFILE_EVENT: return "--event NAME records it";
    default: return "";
  }
}

/* Parses argv into o. Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, opts_t *o) {
  int i = 1;
  for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
    const char *v;
    bool missing = false;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      print_usage();
      return 0;
    } else if (take(argv, argc, &i, "--output", "-o", &v, &missing)) {
      if (missing || !*v) return usage_error("-o needs a file name (- for standard output)");
      o->output = v;
    } else if (take(argv, argc, &i, "--format", "-f", &v, &missing)) {
      if (missing || !*v)
        return usage_error("--format needs a format: %s", fl_output_formats(false));
      o->format = v;
    } else {
      int rc = table_option(argc, argv, &i, o);
      if (rc > 0) return rc;
      if (rc == 0 && argv[i][0] != '-' && o->pid)
        return usage_error(
            "%s: with --pid, cflame record takes no program: it attaches to "
            "the one running as pid %d",
            argv[i], o->pid);
      if (rc == 0 && argv[i][0] != '-') {
        bool ends = false;
        for (int j = i + 1; j < argc && !ends; j++) ends = !strcmp(argv[j], "--");
        if (!ends)
          return usage_error(
              "give the program after --: cflame record [OPTIONS] -- PROGRAM [ARGS...]");
        return usage_error(
            "%s: cflame record draws what it recorded and takes no INPUT; the "
            "program goes after --",
            argv[i]);
      }
      if (rc == 0)
        return usage_error(
            "unknown option %s; valid options: the recording's (cflame "
            "record --help) and the drawing options (cflame --help)",
            argv[i]);
    }
  }
  if (o->duration_s && !o->pid) return usage_error("--duration needs --pid PID");
  if (o->follow_forks && !o->pid)
    return usage_error(
        "--follow-forks needs --pid PID: cflame record -- PROGRAM follows every process "
        "PROGRAM forks already");
  if (o->pid) {
    if (i < argc)
      return usage_error(
          "--pid %d attaches to a running program: give no -- PROGRAM (to record a program "
          "from its start, leave out --pid)",
          o->pid);
    if (o->allocs || o->wall || o->event)
      return usage_error(
          "--pid samples CPU time only: %s needs the program run by cflame record -- PROGRAM",
          o->allocs ? "--allocs"
          : o->wall ? "--clock wall"
                    : "--event");
    /* --pid's own default and least interval are the attach's (fl_attach.h);
     * the other defaults and ranges are the option table's rows. */
    const double least = (double)FL_ATTACH_INTERVAL_MIN_NS / 1e9;
    if (!o->delay_given) o->delay_s = (double)FL_ATTACH_INTERVAL_NS / 1e9;
    if (o->delay_s < least)
      return usage_error(
          "--delay %g: with --pid, at least %g s (each sample stops the thread: more often "
          "would slow the program down more than it tells)",
          o->delay_s, least);
  } else {
    if (i >= argc)
      return usage_error(
          "give the program after --: cflame record [OPTIONS] -- PROGRAM [ARGS...], or "
          "attach to a running one with --pid PID");
    o->program = argv + i + 1;
    o->n_program = argc - i - 1;
    if (o->n_program == 0) return usage_error("no PROGRAM after --");
  }
  if (o->alloc_opts_given && !o->allocs)
    return usage_error("--sample-rate, --live and --weight need --allocs");
  if (o->event && (o->wall || o->allocs))
    return usage_error("--event weighs samples by an event, and %s: a recording is one of them",
                       o->wall ? "--clock wall by wall time" : "--allocs by allocations");
  if (o->wall && o->allocs)
    return usage_error(
        "--clock wall samples time and --allocs records allocations: a recording is one "
        "of them");
  if (o->draw.tree.kind != FL_TREE_KIND_MAIN && !(kinds_recorded(o) & 1u << o->draw.tree.kind)) {
    fl_profile_kind_t want = (fl_profile_kind_t)o->draw.tree.kind;
    return usage_error("--kind %s draws %s, which this recording would not hold; %s",
                       fl_kind(want)->name, fl_kind(want)->what, how_recorded(want));
  }
  const fl_diff_opts_t *diff = &o->draw.diff;
  if ((diff->negate || diff->normalize || diff->delta != FL_DELTA_TOTAL || diff->root_prefix) &&
      !o->diff_base)
    return usage_error("--negate, --normalize, --delta and --root-prefix need --diff BASE");
  return -1;
}

/* ---- the preloaded libraries ---- */

/* The preloaded libraries next to the running cflame: in the build tree
 * (bin/ and lib/) or installed (CFLAME_PRELOAD_FROM_BIN from bindir).
 * Returns the LD_PRELOAD words for them (new), or NULL with err. */
static char *preload_value(bool allocs, char *err, size_t err_size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(err, err_size, "cannot find cflame's own file: %s", strerror(errno));
    return NULL;
  }
  exe[n] = '\0';
  *strrchr(exe, '/') = '\0';
  const char *dirs[] = {CFLAME_PRELOAD_FROM_BIN, "../lib"};
  char *value = NULL;
  for (size_t i = 0; i < 2 && !value; i++) {
    char *lib, *real;
    if (asprintf(&lib, "%s/%s/%s", exe, dirs[i], RC_PRELOAD_LIB) < 0) fl__oom(0);
    real = realpath(lib, NULL);
    free(lib);
    if (!real) continue;
    *strrchr(real, '/') = '\0';
    if (strpbrk(real, " :")) {
      snprintf(err, err_size,
               "cannot preload from %.900s: LD_PRELOAD cannot name a path with a "
               "space or a colon",
               real);
      free(real);
      return NULL;
    }
    if (asprintf(&value, "%s/%s%s%s%s", real, RC_PRELOAD_LIB, allocs ? " " : "", allocs ? real : "",
                 allocs ? "/" RC_PRELOAD_ALLOCS_LIB : "") < 0)
      fl__oom(0);
    free(real);
  }
  if (!value)
    snprintf(err, err_size, "cannot find %s next to cflame (in %.400s/%s or %.400s/../lib)",
             RC_PRELOAD_LIB, exe, CFLAME_PRELOAD_FROM_BIN, exe);
  return value;
}

#if defined(__SANITIZE_ADDRESS__)
/* A sanitizer build of cflame (CFLAME_SANITIZE) has preloaded libraries
 * that need AddressSanitizer's runtime first among the program's
 * libraries: cflame's own, found among its loaded objects. */
static int find_asan_runtime(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  if (!info->dlpi_name || !strstr(info->dlpi_name, "/libasan.so")) return 0;
  *(const char **)data = info->dlpi_name;
  return 1;
}
#endif

/* Fails, naming TMPDIR and the bytes, when dir's file system has no room
 * for the part of a process's buffer allocated before it runs (rc_files.h):
 * better said before the program starts than as a program left unrecorded.
 * A disk that fills later loses samples, and the report says so. */
static int check_room(const char *tmp, const char *dir, const opts_t *o, char *err,
                      size_t err_size) {
  size_t end, hole, hole_bytes;
  size_t need = rc_start_bytes(o->allocs, o->sample_rate, &end, &hole, &hole_bytes);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/room", dir);
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  int e = fd < 0 ? errno : posix_fallocate(fd, 0, (off_t)need);
  if (fd >= 0) {
    close(fd);
    unlink(path);
  }
  if (!e) return 0;
  snprintf(err, err_size,
           "cannot start the recording: TMPDIR's file system (%s) %s: each recorded process "
           "needs %zu bytes there to start (its buffer grows from there as it records); "
           "set TMPDIR to a directory with room",
           tmp, e == ENOSPC ? "is full" : strerror(e), need);
  return -1;
}

/* Sets the environment the program and its children record in. */
static int set_environment(const opts_t *o, const char *dir, char *err, size_t err_size) {
  char *preload = preload_value(o->allocs, err, err_size);
  if (!preload) return -1;
  const char *before = getenv("LD_PRELOAD"), *runtime = "";
#if defined(__SANITIZE_ADDRESS__)
  dl_iterate_phdr(find_asan_runtime, &runtime);
  /* The program is not instrumented: no leak report of it at exit. */
  const char *asan = getenv("ASAN_OPTIONS");
  char *options;
  if (asprintf(&options, "%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "") < 0)
    fl__oom(0);
  setenv("ASAN_OPTIONS", options, 1);
  free(options);
#endif
  char *value, number[32];
  if (asprintf(&value, "%s%s%s%s%s", runtime, *runtime ? " " : "", preload,
               before && *before ? " " : "", before ? before : "") < 0)
    fl__oom(0);
  setenv("LD_PRELOAD", value, 1);
  free(value);
  free(preload);
  setenv(RC_ENV_DIR, dir, 1);
  snprintf(number, sizeof number, "%" PRIu64, o->buffer_words);
  setenv(RC_ENV_WORDS, number, 1);
  /* CPU time is sampled in an allocation recording too: a second kind of
   * its profile (--kind cpu draws it). */
  snprintf(number, sizeof number, "%" PRIu64, (uint64_t)llround(o->delay_s * 1e9));
  setenv(RC_ENV_INTERVAL, number, 1);
  if (o->allocs) {
    snprintf(number, sizeof number, "%.17g", o->sample_rate);
    setenv(RC_ENV_ALLOCS, number, 1);
    unsetenv(RC_ENV_CLOCK);
    unsetenv(RC_ENV_EVENT);
  } else {
    unsetenv(RC_ENV_ALLOCS);
    if (o->wall)
      setenv(RC_ENV_CLOCK, "wall", 1);
    else
      unsetenv(RC_ENV_CLOCK);
    if (o->event)
      setenv(RC_ENV_EVENT, o->event->name, 1);
    else
      unsetenv(RC_ENV_EVENT);
  }
  return 0;
}

/* Names the processes seen below the program that claimed no files in
 * dir: the library never started in them (a raw clone system call, which
 * runs no atfork handler; a static program; an environment without
 * LD_PRELOAD), so their CPU time is in no stack. */
static void say_not_followed(const char *dir, const rc_run_t *run) {
  for (size_t i = 0; i < run->n_tasks; i++) {
    const rc_task_t *t = &run->tasks[i];
    char path[PATH_MAX];
    snprintf(path, sizeof path, RC_FILE_FMT, dir, (int)t->pid, 0, RC_SUFFIX_INFO);
    if (access(path, F_OK) == 0) continue;
    say("pid %d (%s), below the program, was not followed: %.2f s of CPU (at least) is in no "
        "stack. The sampler starts in the children that fork, pthread_create and exec make "
        "while LD_PRELOAD holds it; not in one made by a raw clone system call, nor in a "
        "static program",
        (int)t->pid, t->comm, t->cpu_seconds);
  }
}

/* What became of the attached program: its exit, the children it forked
 * (not followed; or followed, and still running at the end: detached). */
static void say_attach_end(const rc_attached_t *att, int pid) {
  const fl_attach_result_t *r = &att->result;
  if (r->end == FL_ATTACH_EXITED && WIFEXITED(r->status))
    say("%s (pid %d) exited with status %d while attached", r->name, pid, WEXITSTATUS(r->status));
  else if (r->end == FL_ATTACH_EXITED && WIFSIGNALED(r->status))
    say("%s (pid %d) was ended by signal %d (%s) while attached", r->name, pid, WTERMSIG(r->status),
        sigabbrev_np(WTERMSIG(r->status)) ? sigabbrev_np(WTERMSIG(r->status)) : "?");
  else if (r->end == FL_ATTACH_EXITED)
    say("%s (pid %d) ended while attached", r->name, pid);
  for (size_t i = 0; i < r->n_children; i++)
    say("pid %d (%s), forked by %s while attached, was not followed: --pid samples the one "
        "process (--follow-forks samples its children too, or attach to the child with a "
        "--pid of its own)",
        r->children[i].pid, r->children[i].comm, r->name);
  for (size_t i = 0; i < r->n_followed; i++) {
    const fl_attach_process_t *f = &r->followed[i];
    bool later = false; /* an image of it after this one: it exec'd */
    for (size_t j = i + 1; j < r->n_followed && !later; j++) later = r->followed[j].pid == f->pid;
    if (!f->exited && !later)
      say("pid %d (%s), followed, was still running as the recording ended: detached, it goes "
          "on",
          f->pid, f->name);
  }
}

/* ---- the summary ---- */

/* What was recorded, whether cflame ran it or attached to it. */
typedef struct ran {
  const char *name; /* PROGRAM as given, or the attached program's file name */
  int pid;
  double cpu_seconds, wall_seconds; /* the program's, or while attached */
  bool attached;
} ran_t;

/* The line under the graph's title, and after "wrote": what was recorded. */
static char *summary_of(const rc_recording_t *rec, const ran_t *run, const opts_t *o) {
  const fl_profile_info_t *info = fl_profile_info_const(rec->profile);
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (!f) fl__oom(0);
  char n[64];
  if (o->allocs) {
    const char *approx = info->sample_rate < 1 ? "~" : "";
    fl_count_noun(info->total_allocs, "allocation", "allocations", n, sizeof n);
    fprintf(f, "%s%s", approx, n);
    if (fl_kind(info->kind)->bytes) {
      double b = (double)info->total_weight;
      if (b >= 1 << 20)
        fprintf(f, " of %s%.1f MiB", approx, b / (1 << 20));
      else if (b >= 1 << 10)
        fprintf(f, " of %s%.1f KiB", approx, b / (1 << 10));
      else
        fprintf(f, " of %s%.0f B", approx, b);
    }
    if (fl_kind(info->kind)->live) fputs(" still allocated at exit", f);
    if (info->sample_rate < 1)
      fprintf(f, ", estimated from %" PRIu64 " sampled (sample rate %g)", info->samples,
              info->sample_rate);
    else
      fputs(", every one recorded", f);
    fl_kind_totals_t cpu;
    fl_profile_kind_totals(rec->profile, FL_PROFILE_CPU, &cpu);
    fl_count_noun(cpu.weight, "sample", "samples", n, sizeof n);
    if (cpu.samples)
      fprintf(f, ", and %s every %g ms of CPU (--kind cpu)", n, (double)info->interval_ns / 1e6);
  } else {
    fl_count_noun(info->total_weight, "sample", "samples", n, sizeof n);
    double iv = (double)info->interval_ns / 1e9;
    if (o->event) {
      fl_count_noun(info->total_weight, info->event, info->event, n, sizeof n);
      fprintf(f, "%s counted", n);
    } else if (o->wall) {
      fl_thread_weights_t *tw;
      size_t nt = fl_profile_thread_weights(rec->profile, info->kind, &tw);
      uint64_t on = 0, off = 0, runnable = 0;
      for (size_t i = 0; i < nt; i++) on += tw[i].on, off += tw[i].off, runnable += tw[i].runnable;
      free(tw);
      fprintf(f, "%s every %g ms of wall time (%.3f s: %.3f s running, %.3f s waiting", n, iv * 1e3,
              (double)info->total_weight * iv, (double)on * iv, (double)(off - runnable) * iv);
      /* Time runnable, waiting for a CPU: where there was any. */
      if (runnable) fprintf(f, ", %.3f s runnable", (double)runnable * iv);
      fputc(')', f);
    } else {
      fprintf(f, "%s every %g ms of CPU (%.3f s)", n, iv * 1e3, (double)info->total_weight * iv);
    }
    if (rec->cpu_timers) fputs(" taken by CPU timers, perf events being refused", f);
    if (run->attached) fputs(" (each a stop of the thread by ptrace)", f);
  }
  fprintf(f, " in %zu process%s, %zu thread%s", rec->processes, rec->processes == 1 ? "" : "es",
          rec->threads, rec->threads == 1 ? "" : "s");
  if (run->attached)
    fprintf(f, "; attached for %.3f s, in which the program took %.3f s CPU", run->wall_seconds,
            run->cpu_seconds);
  else
    fprintf(f, "; the program took %.3f s CPU, %.3f s wall", run->cpu_seconds, run->wall_seconds);
  fclose(f);
  return out;
}

/* ---- the run ---- */

/* The output's name, now that the program's pid is known: -o's with its
 * %-sequences replaced, or ./PROGRAM.cflame.EXT by the format. New, or
 * NULL with err. */
static char *output_name(const opts_t *o, const char *format, const ran_t *run, char *err,
                         size_t err_size) {
  char *out = NULL;
  if (o->output && strcmp(o->output, "-") != 0)
    return rc_output_name(o->output, run->pid, err, err_size);
  if (o->output) {
    out = strdup("-");
  } else {
    const char *base = strrchr(run->name, '/');
    base = base ? base + 1 : run->name;
    const char *ending = fl_output_ending_of_format(format);
    if (asprintf(&out, "%s.cflame%s%s", base, ending ? "" : ".", ending ? ending : format) < 0)
      out = NULL;
  }
  if (!out) fl__oom(0);
  return out;
}

/* Says why a recording holds nothing to draw: what the program did to the
 * sampler (interfered: the warnings before said what), too little ran, or
 * what ran did without the library. */
static void say_why_empty(const opts_t *o, const ran_t *run, bool interfered) {
  if (run->attached) {
    say("%s (pid %d) left no samples: it used less than half a sample of CPU (%g ms) on any "
        "thread while attached (%.3f s of CPU in %.3f s); sample more often with --delay "
        "0.001, or attach for longer; nothing is written",
        run->name, run->pid, o->delay_s * 1e3, run->cpu_seconds, run->wall_seconds);
    return;
  }
  if (interfered && !o->allocs) {
    say("%s left no samples: what it did to the sampler, said above, stopped them before the "
        "first; nothing is written",
        o->program[0]);
    return;
  }
  const char *without =
      "or the programs that did the work ran without cflame's preloaded "
      "library (a program that clears LD_PRELOAD from the environment, or "
      "a static one)";
  if (o->allocs)
    say("%s left no allocation records: it made no allocation that was recorded%s, %s; "
        "nothing is written",
        o->program[0], o->sample_rate < 1 ? " (raise --sample-rate, up to 1)" : "", without);
  else
    say("%s left no samples: its processes ran for less than a sample of CPU (%g ms; sample "
        "more often with --delay 0.0001), %s; nothing is written",
        o->program[0], o->delay_s * 1e3, without);
}

/* The profile in --diff's BASE file (- for standard input), or NULL after
 * saying why. */
static fl_profile_t *read_base(const char *path) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  fl_io_error_t e;
  if (fl_read_profile_file(p, path, FL_INPUT_AUTO, NULL, &e) == 0) return p;
  if (e.line)
    say("%s:%zu: %s", e.file, e.line, e.message);
  else
    say("%s", e.message);
  fl_profile_destroy(&p);
  return NULL;
}

/* Draws r to output: standard output ("-"), or the file whole or not at
 * all (in place when it is not a regular file: /dev/null, a pipe).
 * Returns 0, or -1 with err. */
static int draw(const fl_output_req_t *r, const char *output, char *err, size_t err_size) {
  if (strcmp(output, "-") != 0) return fl_output_write(r, output, true, NULL, err, err_size);
  size_t len;
  char *out = fl_output_render(r, &len, err, err_size);
  if (!out) return -1;
  int rc = 0;
  if (fwrite(out, 1, len, stdout) != len || fflush(stdout) != 0) {
    snprintf(err, err_size, "cannot write to standard output: %s", strerror(errno));
    rc = -1;
  }
  free(out);
  return rc;
}

/* "PROGRAM ARGS..." (new), the name the graph's title shows. */
static char *command_line(const opts_t *o) {
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  if (!f) fl__oom(0);
  for (int i = 0; i < o->n_program; i++) fprintf(f, "%s%s", i ? " " : "", o->program[i]);
  fclose(f);
  return out;
}

/* The format, and the output's name: checked before the program runs.
 * Returns -1 to go on with *format set, else the exit status of a bad
 * command line. */
static int check_output(const opts_t *o, const char **format) {
  const char *by_name = o->output ? fl_output_format_of_path(o->output) : NULL;
  *format = o->format ? o->format : by_name;
  if (!*format && o->output && strcmp(o->output, "-") != 0)
    return usage_error(
        "-o %s: cannot tell the format from the name; end it in %s, or give "
        "--format",
        o->output, fl_output_endings(true));
  if (!*format) *format = "svg";
  if (!fl_output_format_known(*format))
    return usage_error("--format %s: unknown format; valid: %s", *format, fl_output_formats(false));
  if (o->diff_base && !strcmp(*format, "pprof"))
    return usage_error(
        "--diff with pprof output: a pprof file holds one profile; write the diff as svg, html, "
        "vegalite or text, or as folded stacks with both counts");
  if (o->output && strcmp(o->output, "-") != 0) {
    char err[1024], *checked = rc_output_name(o->output, 1, err, sizeof err);
    if (!checked) return usage_error("%s", err);
    free(checked);
  }
  return -1;
}

int rc_record_main(int argc, char **argv) {
  opts_t o = {0};
  /* The defaults are the table's rows (fl_options.c). */
  o.delay_s = strtod(fl_option_default(fl_option_find("delay"), FL_FRONT_COMMAND), NULL);
  o.sample_rate = strtod(fl_option_default(fl_option_find("sample_rate"), FL_FRONT_COMMAND), NULL);
  o.buffer_words =
      strtoull(fl_option_default(fl_option_find("buffer"), FL_FRONT_COMMAND), NULL, 10);
  char err[1024], dir[PATH_MAX] = "";
  char *name = NULL, *path = NULL, *output = NULL, *note = NULL, *title = NULL;
  fl_profile_t *base = NULL;
  rc_recording_t rec = {0};
  rc_run_t run = {0};
  rc_attached_t att = {0};
  rc_top_t *top = NULL;
  ran_t ran = {0};
  int status;
  fl_options_init(&o.draw, FL_FRONT_COMMAND);
  if ((status = parse(argc, argv, &o)) >= 0) goto done;

  const char *format;
  if ((status = check_output(&o, &format)) >= 0) goto done;
  rc_collect_opts_t copts = {.allocs = o.allocs,
                             .wall = o.wall,
                             .event = o.event ? o.event->name : NULL,
                             .aopts = {.live = o.live, .weight_count = o.weight_count}};
  if (o.diff_base && !(base = read_base(o.diff_base))) {
    status = 1;
    goto done;
  }

#if defined(__SANITIZE_ADDRESS__)
  if (o.allocs && !o.pid) {
    /* AddressSanitizer's runtime, preloaded first, takes every allocation
     * before the preloaded entry points could see it. */
    say("--allocs needs a build of cflame without sanitizers: this one (CFLAME_SANITIZE) "
        "preloads AddressSanitizer's allocator ahead of cflame's");
    status = 1;
    goto done;
  }
#endif
  if (!o.pid && (status = rc_program_find(o.program[0], &path, err, sizeof err)) != 0) {
    say("%s", err);
    goto done;
  }
  const char *tmp = getenv("TMPDIR");
  if (!tmp || !*tmp) tmp = "/tmp";
  snprintf(dir, sizeof dir, "%s/cflame-record-XXXXXX", tmp);
  if (!mkdtemp(dir)) {
    say("cannot make a directory for the recording (%s): %s", dir, strerror(errno));
    dir[0] = '\0';
    status = 1;
    goto done;
  }
  if (o.pid) {
    char top_name[32];
    snprintf(top_name, sizeof top_name, "pid %d", o.pid);
    if (o.top) top = rc_top_new(dir, o.pid, &copts, &o.draw, top_name);
    int rc =
        rc_attach(o.pid, (uint64_t)llround(o.delay_s * 1e9), o.duration_s, o.follow_forks,
                  o.buffer_words, dir, top ? rc_top_attached : NULL, top, &att, err, sizeof err);
    rc_top_end(&top);
    if (rc < 0) {
      say("%s", err);
      status = 1;
      goto done;
    }
    rc_run_guard(dir); /* as below, for the attach's recording */
    say_attach_end(&att, o.pid);
    name = fl__xasprintf("%s (pid %d)", att.command, o.pid);
    double cpu = att.result.cpu_seconds;
    for (size_t i = 0; i < att.result.n_followed; i++) cpu += att.result.followed[i].cpu_seconds;
    ran = (ran_t){.name = att.result.name,
                  .pid = o.pid,
                  .cpu_seconds = cpu,
                  .wall_seconds = att.result.wall_seconds,
                  .attached = true};
    status = 0;
  } else {
    name = command_line(&o);
    if (check_room(tmp, dir, &o, err, sizeof err) < 0) {
      say("%s", err);
      status = 1;
      goto done;
    }
    if (set_environment(&o, dir, err, sizeof err) < 0) {
      say("%s", err);
      status = 1;
      goto done;
    }
    if (o.top) top = rc_top_new(dir, 0, &copts, &o.draw, name);
    /* A SIGTERM once the program has ended (a job's time limit, a CI
     * runner cancelling) would leave the recording's buffers in $TMPDIR:
     * the guard removes them and says so. rc_run forwards the signals
     * until the program ends, and hands over to the guard then. */
    rc_run_guard(dir);
    status = rc_run(path, o.program, top ? rc_top_tick : NULL, top, &run, err, sizeof err);
    rc_top_end(&top);
    if (status != 0) {
      say("%s", err);
      goto done;
    }
    if (WIFSIGNALED(run.status))
      say("%s was ended by signal %d (%s)%s", o.program[0], WTERMSIG(run.status),
          sigabbrev_np(WTERMSIG(run.status)) ? sigabbrev_np(WTERMSIG(run.status)) : "?",
          WCOREDUMP(run.status) ? ", core dumped" : "");
    /* From here on the program's status is cflame's, whatever becomes of
     * the recording: what went wrong there is said, not exited with. */
    status = rc_exit_status(run.status);
    ran = (ran_t){.name = o.program[0],
                  .pid = run.pid,
                  .cpu_seconds = run.cpu_seconds,
                  .wall_seconds = run.wall_seconds};
  }

  if (rc_collect(dir, &copts, &rec, err, sizeof err) < 0) {
    say("%s", err);
    goto done;
  }
  for (size_t i = 0; i < rec.n_warnings; i++) say("%s", rec.warnings[i]);
  if (!o.pid) say_not_followed(dir, &run);
  if (fl_profile_info(rec.profile)->samples == 0) { /* of the kind recorded (--allocs: CPU aside) */
    say_why_empty(&o, &ran, rec.interfered);
    if (o.pid) status = 1;
    goto done;
  }
  fl_profile_info(rec.profile)->wall_seconds = ran.wall_seconds;
  fl_profile_info(rec.profile)->cpu_seconds = ran.cpu_seconds;
  if (!(output = output_name(&o, format, &ran, err, sizeof err))) {
    say("%s", err);
    goto done;
  }
  note = summary_of(&rec, &ran, &o);
  if (!o.draw.view.title) {
    if (asprintf(&title, "%s%s%s", name, base ? " against " : "", base ? o.diff_base : "") < 0)
      fl__oom(0);
    o.draw.view.title = title;
  }
  o.draw.view.note = note;
  fl_output_req_t req = {
      .profile = rec.profile, .baseline = base, .opts = &o.draw, .format = format};
  if (draw(&req, output, err, sizeof err) < 0) {
    say("%s", err);
  } else if (strcmp(output, "-") == 0) {
    say("wrote the profile to standard output: %s", note);
  } else {
    say("wrote %s: %s", output, note);
  }
done:
  rc_run_finish(dir);
  rc_recording_free(&rec);
  rc_run_free(&run);
  rc_attached_free(&att);
  free(title);
  fl_profile_destroy(&base);
  fl_options_free(&o.draw);
  free(note);
  free(output);
  free(path);
  free(name);
  return status;
}
