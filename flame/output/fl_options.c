/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_options: every option's one table (see fl_options.h), its values
 * parsed and checked, and fl_options_t set from them. How the options are
 * written, in messages, help and the docs, is fl_options_text.c's. */
#define _GNU_SOURCE
#include "cflame/fl_options.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_events.h"
#include "cflame/fl_io.h"
#include "fl__common.h"
#include "fl__io.h"
#include "fl__kind.h"
#include "fl__render.h"
#include "fl__view.h"

/* Where a row's value goes in fl_options_t. */
typedef enum field {
  F_BOOL,     /* bool at offset */
  F_INT,      /* int at offset */
  F_U64,      /* uint64_t at offset */
  F_DOUBLE,   /* double at offset */
  F_CHOICE,   /* the index of the choice, as an int at offset (enums in choice order) */
  F_CHOICE_B, /* the index of the choice, as a bool at offset */
  F_LINES,    /* fl_lines_t at offset: true ON, false OFF; unset, its zero AUTO */
  F_TITLE,    /* view.title, owned by title */
  F_FOCUS,    /* view.focus, owned by focus */
  F_ROOT,     /* diff.root_prefix, owned by root_prefix */
  F_FILTER,   /* tree.filter (and filter_is_regex for /REGEX/) */
  F_PRUNED,   /* tree.pruned, owned by pruned */
  F_ROOTS,    /* view.source_roots, owned by source_roots */
  F_THREADS,  /* tree.threads (all: no list) */
  F_VIEW,     /* view.view, and the tree options the view sets (tree.inverted) */
  F_SIZE,     /* size_t at offset, from a size ("64M": fl_input_limit_parse) */
  F_NONE,     /* none: a sampling or reading option, whose front end reads its value */
} field_t;

typedef struct row {
  fl_option_t o;
  field_t field;
  size_t offset;
} row_t;

#define AT(member) offsetof(fl_options_t, member)

static int check_threads(const fl_optval_t *v, const char *shown, char *err, size_t err_size);
static int check_not_empty(const fl_optval_t *v, const char *shown, char *err, size_t err_size);
static int check_size(const fl_optval_t *v, const char *shown, char *err, size_t err_size);
static int check_event(const fl_optval_t *v, const char *shown, char *err, size_t err_size);

/* A row of an option no fl_options_t field holds. */
#define NONE(...) \
  { {__VA_ARGS__}, F_NONE, 0 }

/* The sampling interval's range, the same from every front door. Above
 * 10 s a cell or program would end before its first sample. Below 0.1 ms
 * a sample's own work (the signal, the unwind: tens of microseconds) is a
 * share of the interval the graph would show instead of the program, and
 * the CPU time it takes brings the next sample sooner: at 0.01 ms a
 * program sampled on CPU time stops making progress. */
#define DELAY_MIN "0.0001"
/* The share of allocations recorded: below one in a million, a run
 * records too few to estimate anything from. */
#define SAMPLE_RATE_MIN "0.000001"

/* The table. A default is written here and nowhere else. */
static const row_t rows[] = {
    /* What a run samples: the notebook's magics (sampling first in their
     * help) and `cflame record`. */
    NONE("delay", FL_OPT_DOUBLE, NULL, 1e-4, 10, .def = "0.001",
         .shown_def_command = "0.001; 0.01 with --pid", .metavar = "SECONDS",
         .expect = "a number of seconds from " DELAY_MIN " to 10, such as 0.001",
         .help = "the sampling interval, in seconds of each thread's CPU time (or wall time, by "
                 "the clock)",
         .groups = FL_OPTS_SAMPLING | FL_OPTS_RECORD),
    NONE("n", FL_OPT_INT, NULL, 1000, 1e9, .def = "1000000",
         .shown_def = "1000000; 16777216 for allocations", .metavar = "WORDS",
         .help = "the record buffer's size in 8-byte words (a sample costs its depth plus 4, "
                 "an allocation its depth plus 5); when it is full, recording stops and the "
                 "output says so; the cell goes on",
         .groups = FL_OPTS_SAMPLING),
    NONE("clock", FL_OPT_ENUM, "cpu|wall", .def = "cpu",
         .help = "what a sample is: an interval of CPU time, or of wall time, where the time a "
                 "thread waits (sleep, read, a lock, a CPU) is off-CPU",
         .groups = FL_OPTS_CLOCK | FL_OPTS_RECORD),
    NONE("event", FL_OPT_STRING, .shown_def = "time", .metavar = "NAME",
         .help = "weigh samples by a perf event instead of time: page-faults, minor-faults, "
                 "major-faults, context-switches, cpu-migrations, or, with hardware counters, "
                 "cycles, instructions, cache-misses, branch-misses",
         .groups = FL_OPTS_CLOCK | FL_OPTS_RECORD, .check = check_event),
    {{"threads", FL_OPT_LIST, .def = "all", .metavar = "N,M",
      .help = "threads to show: numbers (1 = the main thread, 2, 3, ... in the order threads "
              "started; perf script's thread ids), or all",
      .groups = FL_OPTS_THREADS | FL_OPTS_TREE, .check = check_threads},
     F_THREADS,
     0},
    /* The kinds' table (fl_profile.c) writes the choices and the help;
     * unset, the tree draws the profile's main kind (FL_TREE_KIND_MAIN,
     * set by init_all). */
    {{"kind", FL_OPT_ENUM, fl__kind_choices, .help = fl__kind_help, .metavar = "KIND",
      .shown_def = "the profile's first (what its collector took first)", .groups = FL_OPTS_TREE},
     F_CHOICE,
     AT(tree.kind)},
    {{"C", FL_OPT_BOOL, .def = "false", .def_command = "true",
      .help = "show frames of system libraries; off, their time is folded into their callers",
      .groups = FL_OPTS_TREE},
     F_BOOL,
     AT(tree.C)},
    {{"combine", FL_OPT_BOOL, .def = "true",
      .help = "one frame per source line; off, one per instruction address",
      .groups = FL_OPTS_TREE},
     F_BOOL,
     AT(tree.combine)},
    {{"lines", FL_OPT_BOOL, .shown_def = "a notebook cell's code by line, the rest by function",
      .help = "on, one frame per source line where the input has lines; off, one per function",
      .groups = FL_OPTS_TREE},
     F_LINES,
     AT(tree.lines)},
    {{"demangle", FL_OPT_BOOL, .def = "true",
      .help = "C++ and Rust functions by their readable names; off, by their symbols",
      .groups = FL_OPTS_TREE},
     F_BOOL,
     AT(tree.demangle)},
    {{"recur", FL_OPT_ENUM, "off|flat", .def = "off",
      .help = "flat: a function already on the stack rewinds to its earlier frame, so "
              "recursion looks like a loop",
      .groups = FL_OPTS_TREE},
     F_CHOICE,
     AT(tree.recur)},
    {{"pruned", FL_OPT_LIST, .metavar = "NAMES",
      .help = "comma-separated function names whose subtrees are cut", .groups = FL_OPTS_TREE},
     F_PRUNED,
     0},
    {{"filter", FL_OPT_STRING, .shown_def = "keep all",
      .help = "keep only stacks with a frame whose function contains this text; /REGEX/ for "
              "an extended regular expression",
      .groups = FL_OPTS_TREE, .check = check_not_empty},
     F_FILTER,
     0},
    {{"minwidth", FL_OPT_DOUBLE, NULL, 0, 1, .def = "0.001", .metavar = "SHARE",
      .help = "merge frames narrower than this share of the total, 0 to 1, into one frame "
              "per parent (files of every sample, folded and pprof, take 0 unless it is given)",
      .groups = FL_OPTS_TREE},
     F_DOUBLE,
     AT(tree.minwidth)},
    {{"max_memory", FL_OPT_STRING, .metavar = "SIZE",
      .shown_def = "a quarter of the physical memory",
      .help = "the most memory reading profiles, and drawing one, may each take: bytes, or with "
              "K, M, G or T, such as 8G; a profile that needs more is an error that says so",
      .groups = FL_OPTS_TREE | FL_OPTS_BUDGET, .check = check_size},
     F_SIZE,
     AT(tree.max_memory)},
    /* The views' table (fl_views.c) writes the choices and the help. */
    {{"view", FL_OPT_ENUM, fl__view_choices, .def = "flame", .help = fl__view_help,
      .groups = FL_OPTS_VIEW},
     F_VIEW,
     AT(view.view)},
    {{"width", FL_OPT_INT, NULL, 100, 100000, .def = "800", .metavar = "PX",
      .help = "width in pixels", .groups = FL_OPTS_VIEW},
     F_INT,
     AT(view.width)},
    {{"dpi", FL_OPT_DOUBLE, NULL, 24, 1200, .def = "192", .metavar = "DOTS",
      .help = "PNG output: dots per inch (the SVG's pixels are 96 to the inch)",
      .groups = FL_OPTS_VIEW},
     F_DOUBLE,
     AT(view.dpi)},
    {{"png", FL_OPT_BOOL, .def = "false",
      .help = "the output carries a PNG picture too (image/png, at dpi=), for nbconvert --to "
              "pdf and viewers that draw neither Vega-Lite nor HTML",
      .groups = FL_OPTS_OUTPUT},
     F_BOOL,
     AT(view.png)},
    {{"height", FL_OPT_INT, NULL, 0, 100000, .def = "0",
      .shown_def = "0: sized to the depth, at most 4,000", .metavar = "PX",
      .help = "height in pixels; levels that would be thinner than 12 px are a band that a "
              "click opens",
      .groups = FL_OPTS_VIEW},
     F_INT,
     AT(view.height)},
    {{"title", FL_OPT_STRING, .shown_def = "none; the command's: its inputs' names",
      .help = "the title above the graph", .groups = FL_OPTS_VIEW},
     F_TITLE,
     0},
    {{"focus", FL_OPT_STRING, .shown_def = "none", .metavar = "FUNC",
      .help = "the function a view is about: view=sandwich draws it between its callers and "
              "its callees, view=source shows its files",
      .groups = FL_OPTS_VIEW, .check = check_not_empty},
     F_FOCUS,
     0},
    {{"source_root", FL_OPT_LIST, .metavar = "DIRS",
      .shown_def = "the cells; for a profile recorded here, the working directory and its "
                   "modules' directories",
      .help = "comma-separated directories whose source files view=source and the HTML page "
              "may show; no other file a profile names is ever read",
      .groups = FL_OPTS_VIEW},
     F_ROOTS,
     0},
    {{"from", FL_OPT_DOUBLE, NULL, 0, 1e9, .def = "0", .shown_def = "0: the start",
      .metavar = "SECONDS", .help = "view=chart: draw from this many seconds after the start",
      .groups = FL_OPTS_VIEW},
     F_DOUBLE,
     AT(view.from)},
    {{"to", FL_OPT_DOUBLE, NULL, 0, 1e9, .def = "0", .shown_def = "0: the end",
      .metavar = "SECONDS", .help = "view=chart: draw up to this many seconds after the start",
      .groups = FL_OPTS_VIEW},
     F_DOUBLE,
     AT(view.to)},
    {{"icicle", FL_OPT_BOOL, .def = "false", .help = "the root at the top, not at the bottom",
      .groups = FL_OPTS_VIEW},
     F_BOOL,
     AT(view.icicle)},
    {{"theme", FL_OPT_ENUM, "light|dark", .def = "light",
      .help = "colours for a light or a dark page", .groups = FL_OPTS_VIEW},
     F_CHOICE_B,
     AT(view.dark)},
    {{"format", FL_OPT_ENUM, "tree|flat", .def = "tree",
      .help = "tree: the indented call tree; flat: one line per function and line, most "
              "expensive first",
      .groups = FL_OPTS_PRINT},
     F_CHOICE_B,
     AT(flat)},
    {{"maxdepth", FL_OPT_INT, NULL, 0, 10000, .def = "0", .shown_def = "0: all",
      .help = "the deepest level printed", .groups = FL_OPTS_TEXT},
     F_INT,
     AT(text.maxdepth)},
    {{"mincount", FL_OPT_INT, NULL, 0, 1e15, .def = "0",
      .help = "frames with fewer samples are not printed", .groups = FL_OPTS_TEXT},
     F_U64,
     AT(text.mincount)},
    {{"cols", FL_OPT_INT, NULL, 20, 10000, .def = "100", .help = "the printed lines' width",
      .groups = FL_OPTS_TEXT},
     F_INT,
     AT(text.cols)},
    {{"negate", FL_OPT_BOOL, .def = "false",
      .help = "draw the baseline's layout, coloured by baseline - target", .groups = FL_OPTS_DIFF},
     F_BOOL,
     AT(diff.negate)},
    {{"normalize", FL_OPT_BOOL, .def = "false",
      .help = "scale the baseline to the target's total first", .groups = FL_OPTS_DIFF},
     F_BOOL,
     AT(diff.normalize)},
    {{"delta", FL_OPT_ENUM, "total|self", .def = "total",
      .help = "the inclusive change of each frame, or its self change", .groups = FL_OPTS_DIFF},
     F_CHOICE,
     AT(diff.delta)},
    {{"noise", FL_OPT_DOUBLE, NULL, 0, 1000, .def = "2", .metavar = "Z",
      .help = "changes under this many standard errors are drawn as noise; 0 turns this off",
      .groups = FL_OPTS_DIFF},
     F_DOUBLE,
     AT(diff.noise)},
    {{"root_prefix", FL_OPT_STRING, .shown_def = "by name",
      .help = "the outermost frames (programs) whose names start with this text are compared "
              "as one program",
      .groups = FL_OPTS_DIFF, .check = check_not_empty},
     F_ROOT,
     0},
    /* Allocation profiles, live graphs, attaching, reading files. */
    NONE("allocs", FL_OPT_BOOL, .shown_def = "as the baseline", .def_command = "false",
         .shown_def_command = "CPU time",
         .help = "record allocations (malloc, calloc, realloc and the aligned allocators) and "
                 "draw them; cflame record keeps the run's CPU time beside them, which kind cpu "
                 "draws",
         .groups = FL_OPTS_KIND | FL_OPTS_RECORD),
    NONE("sample_rate", FL_OPT_DOUBLE, NULL, 1e-6, 1, .def = "0.1", .metavar = "R",
         .expect = "a share of the allocation calls from " SAMPLE_RATE_MIN " to 1, such as 0.1",
         .help = "the share of allocation calls recorded, each at random; 1 records every one, "
                 "and the numbers are exact",
         .groups = FL_OPTS_ALLOC | FL_OPTS_RECORD),
    NONE("weight", FL_OPT_ENUM, "bytes|count", .def = "bytes",
         .help = "widths by bytes or by number of allocations",
         .groups = FL_OPTS_ALLOC | FL_OPTS_RECORD),
    NONE("live", FL_OPT_BOOL, .def = "false",
         .help = "only what is still allocated at the end (of the cell, or of the program)",
         .groups = FL_OPTS_ALLOC | FL_OPTS_RECORD),
    NONE("every", FL_OPT_DOUBLE, NULL, 0, 3600, .def = "0",
         .help = "while the cell runs, show its graph so far this often, in seconds (0: only at "
                 "the end; else at least 0.2)",
         .groups = FL_OPTS_EVERY),
    NONE("pid", FL_OPT_INT, NULL, 1, 2147483647, .shown_def = "none: run PROGRAM", .metavar = "PID",
         .expect = "a process id, such as 4242 (pgrep NAME finds one)",
         .help = "attach to the running process PID instead of running a PROGRAM (no -- "
                 "PROGRAM then)",
         .groups = FL_OPTS_RECORD),
    /* At least 0.1 s: at the 100 Hz an attach samples at by default, less
     * is not a sample a thread. */
    NONE("duration", FL_OPT_DOUBLE, NULL, 0.1, 1e7, .def = "5", .def_command = "",
         .shown_def_command = "until the program exits, or Ctrl-C", .metavar = "SECONDS",
         .expect = "seconds, more than 0 (at least 0.1), such as 30",
         .help = "how long to sample a running program, in seconds (an interrupt ends it "
                 "sooner)",
         .groups = FL_OPTS_ATTACH | FL_OPTS_RECORD),
    NONE("follow_forks", FL_OPT_BOOL, .def = "false",
         .help = "also sample the processes a running program forks after the attach (and "
                 "theirs, across their execs), each under a root of its own; off, they are "
                 "named and not sampled",
         .groups = FL_OPTS_ATTACH | FL_OPTS_RECORD),
    NONE("as", FL_OPT_STRING, .shown_def = "the session profile", .metavar = "NAME",
         .help = "keep it as a baseline of this name instead of the session profile",
         .groups = FL_OPTS_LOAD),
    NONE("input_format", FL_OPT_ENUM, fl__input_kind_choices, .def = "auto",
         .help = fl__input_kind_help, .groups = FL_OPTS_LOAD | FL_OPTS_CLI_INPUT),
    NONE("per_input", FL_OPT_BOOL, .def = "false",
         .help = "each input file under a root frame of its own, named after it; without, "
                 "they are merged",
         .groups = FL_OPTS_LOAD | FL_OPTS_CLI_INPUT),
    NONE("max_input_size", FL_OPT_STRING, .def = "1G", .metavar = "SIZE",
         .help = "the most an input file may hold, and unzip to: bytes, or with K, M, G or T, "
                 "such as 4G",
         .groups = FL_OPTS_LOAD | FL_OPTS_CLI_INPUT, .check = check_size),
    /* The command line's own. --buffer: 2^26 words, 512 MiB of sparse file
     * a process, of which only what is written takes room; at 1 ms and some
     * 25 words a sample, about 45 minutes of one process's CPU. */
    NONE("buffer", FL_OPT_INT, NULL, 1024, 68719476736.0, .def = "67108864", .metavar = "WORDS",
         .expect = "a number of 8-byte words from 1024 to 68719476736",
         .help = "room for the records of each process, in 8-byte words (about 45 minutes of "
                 "one process's CPU at 1 ms); a process that fills it stops recording",
         .groups = FL_OPTS_RECORD),
    NONE("top", FL_OPT_BOOL, .def = "false", .alias = "watch",
         .help = "while it runs (or while attached), a table of the hottest functions, redrawn "
                 "every second at the bottom of the terminal; only when standard error is a "
                 "terminal",
         .groups = FL_OPTS_RECORD),
    NONE("diff", FL_OPT_STRING, .shown_def = "no diff", .metavar = "BASE",
         .help = "a differential flame graph of the profile against the one in BASE (a file, "
                 "or -): red grew, blue shrank",
         .groups = FL_OPTS_RECORD | FL_OPTS_CLI_DIFF, .check = check_not_empty),
    NONE("fail_above", FL_OPT_DOUBLE, NULL, 0, 100, .shown_def = "no gate", .metavar = "PCT",
         .expect = "points of the total, a number from 0 to 100, such as 5",
         .help = "a CI gate, with --diff: exit 1 when a frame's share of its profile's total "
                 "grew by more than PCT points, and list those frames on stderr; the output is "
                 "written either way, and bad input exits 2",
         .groups = FL_OPTS_CLI_DIFF),
};
#define N_ROWS (FL__ARRAY_SIZE(rows))

/* The enums a choice's index is stored as must keep the choices' order. */
_Static_assert(FL_RECUR_OFF == 0 && FL_RECUR_FLAT == 1, "recur's choices are off|flat");
_Static_assert(FL_DELTA_TOTAL == 0 && FL_DELTA_SELF == 1, "delta's choices are total|self");
_Static_assert(N_ROWS <= 64, "fl_options_t.given has a bit per row");

const fl_option_t *fl_option_at(size_t i) {
  return i < N_ROWS ? &rows[i].o : NULL;
}

/* name and key alike, '-' matching '_'. */
static bool same_name(const char *name, const char *key) {
  for (; *name && *key; name++, key++)
    if (*name != *key && !((*name == '-' || *name == '_') && (*key == '-' || *key == '_')))
      return false;
  return *name == *key;
}

static const row_t *row_named(const char *name) {
  for (size_t i = 0; i < N_ROWS; i++)
    if (same_name(name, rows[i].o.name) || (rows[i].o.alias && same_name(name, rows[i].o.alias)))
      return &rows[i];
  return NULL;
}

const fl_option_t *fl_option_find(const char *name) {
  const row_t *r = row_named(name);
  return r ? &r->o : NULL;
}

static const row_t *row_of(const fl_option_t *o) {
  for (size_t i = 0; i < N_ROWS; i++)
    if (&rows[i].o == o) return &rows[i];
  return NULL;
}

/* ---- values ---- */

/* " (1..100000)" for an option with a range, "" otherwise. */
static void range_text(const fl_option_t *o, char *buf, size_t size) {
  if (o->min > o->max)
    buf[0] = '\0';
  else if (o->type == FL_OPT_INT)
    snprintf(buf, size, " (%lld..%lld)", (long long)o->min, (long long)o->max);
  else
    snprintf(buf, size, " (%g..%g)", o->min, o->max);
}

/* "a, b or c" from "a|b|c". New string. */
static char *choices_text(const char *choices) {
  fl__buf_t b = {0};
  const char *p = choices ? choices : "";
  fl__buf_add(&b, "", 0);
  while (*p) {
    const char *bar = strchr(p, '|');
    size_t len = bar ? (size_t)(bar - p) : strlen(p);
    if (b.len) fl__buf_puts(&b, bar ? ", " : " or ");
    fl__buf_add(&b, p, len);
    p += len + (bar ? 1 : 0);
  }
  return fl__buf_take(&b);
}

/* The index of value among choices ("a|b|c"), or -1. */
static int choice_index(const char *choices, const char *value) {
  size_t len = strlen(value);
  int i = 0;
  for (const char *p = choices ? choices : ""; *p; i++) {
    size_t n = strcspn(p, "|");
    if (n == len && !strncmp(p, value, len)) return i;
    p += n + (p[n] == '|');
  }
  return -1;
}

/* Whether s is a decimal number: [+-]digits[.digits][e[+-]digits], with at
 * least one digit before the exponent (".5" and "5." count). */
static bool is_decimal(const char *s, bool allow_fraction) {
  size_t digits = 0;
  if (*s == '+' || *s == '-') s++;
  while (*s >= '0' && *s <= '9') s++, digits++;
  if (allow_fraction && *s == '.') {
    s++;
    while (*s >= '0' && *s <= '9') s++, digits++;
  }
  if (!digits) return false;
  if (allow_fraction && (*s == 'e' || *s == 'E')) {
    s++;
    if (*s == '+' || *s == '-') s++;
    if (!(*s >= '0' && *s <= '9')) return false;
    while (*s >= '0' && *s <= '9') s++;
  }
  return *s == '\0';
}

static bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

/* value as a comma-separated list of non-empty, trimmed items into v. */
static bool parse_list(const char *value, fl_optval_t *v) {
  char **list = fl__xcalloc(1, sizeof *list);
  size_t n = 0;
  for (const char *p = value;;) {
    const char *comma = strchr(p, ',');
    const char *end = comma ? comma : p + strlen(p), *a = p;
    while (a < end && is_blank(*a)) a++;
    while (end > a && is_blank(end[-1])) end--;
    if (end == a) {
      for (size_t i = 0; i < n; i++) free(list[i]);
      free(list);
      return false;
    }
    list = fl__xrealloc(list, n + 2, sizeof *list);
    list[n++] = fl__xstrndup(a, (size_t)(end - a));
    list[n] = NULL;
    if (!comma) break;
    p = comma + 1;
  }
  v->list = list;
  v->n_list = n;
  return true;
}

int fl_option_parse(const fl_option_t *o, const char *value, const char *shown, fl_optval_t *v,
                    char *err, size_t err_size) {
  char range[96];
  range_text(o, range, sizeof range);
  memset(v, 0, sizeof *v);
  v->key = o->name;
  switch (o->type) {
    case FL_OPT_BOOL:
      if (strcmp(value, "true") && strcmp(value, "false")) {
        fl__errf(err, err_size, "%s is not valid; choose true or false", shown);
        return -1;
      }
      v->b = !strcmp(value, "true");
      break;
    case FL_OPT_INT: {
      if (!is_decimal(value, false)) {
        if (o->expect) goto unexpected;
        fl__errf(err, err_size, "%s is not an integer%s", shown, range);
        return -1;
      }
      errno = 0;
      long long i = strtoll(value, NULL, 10);
      if (errno == ERANGE || (o->min <= o->max && ((double)i < o->min || (double)i > o->max))) {
        if (o->expect) goto unexpected;
        fl__errf(err, err_size, "%s is out of range%s", shown, range[0] ? range : " (too large)");
        return -1;
      }
      v->i = i;
      break;
    }
    case FL_OPT_DOUBLE: {
      double d = is_decimal(value, true) ? strtod(value, NULL) : NAN;
      if (!isfinite(d) || (o->min <= o->max && (d < o->min || d > o->max))) {
        if (o->expect) goto unexpected;
        fl__errf(err, err_size, isfinite(d) ? "%s is out of range%s" : "%s is not a number%s",
                 shown, range);
        return -1;
      }
      v->d = d;
      break;
    }
    case FL_OPT_STRING: v->s = fl__xstrdup(value); break;
    case FL_OPT_ENUM:
      if (choice_index(o->choices, value) < 0) {
        char *choices = choices_text(o->choices);
        fl__errf(err, err_size, "%s is not valid; choose %s", shown, choices);
        free(choices);
        return -1;
      }
      v->s = fl__xstrdup(value);
      break;
    case FL_OPT_LIST:
      if (!parse_list(value, v)) {
        fl__errf(err, err_size, "%s is not valid; give a comma-separated list of non-empty names",
                 shown);
        return -1;
      }
      break;
  }
  v->set = true;
  if (o->check && o->check(v, shown, err, err_size) < 0) {
    fl_optval_free(v);
    return -1;
  }
  return 0;

unexpected:
  fl__errf(err, err_size, "%s: expected %s", shown, o->expect);
  return -1;
}

void fl_optval_free(fl_optval_t *v) {
  free(v->s);
  if (v->list)
    for (size_t i = 0; i < v->n_list; i++) free(v->list[i]);
  free(v->list);
  memset(v, 0, sizeof *v);
}

/* threads: each item a thread number, or all. */
static int check_threads(const fl_optval_t *v, const char *shown, char *err, size_t err_size) {
  for (size_t i = 0; i < v->n_list; i++) {
    if (!strcmp(v->list[i], "all")) continue;
    if (!is_decimal(v->list[i], false) || v->list[i][0] == '-' || v->list[i][0] == '+' ||
        strtoll(v->list[i], NULL, 10) > 2147483647) {
      fl__errf(err, err_size,
               "%s is not valid: %s is not a thread number; give thread numbers (1 = the main "
               "thread, 2, 3, ... in the order threads started; perf script's thread ids) or all",
               shown, v->list[i]);
      return -1;
    }
  }
  return 0;
}

static int check_not_empty(const fl_optval_t *v, const char *shown, char *err, size_t err_size) {
  if (*v->s) return 0;
  fl__errf(err, err_size, "%s: the text is empty", shown);
  return -1;
}

static int check_size(const fl_optval_t *v, const char *shown, char *err, size_t err_size) {
  size_t bytes;
  char why[200];
  if (fl_input_limit_parse(v->s, &bytes, why, sizeof why) == 0) return 0;
  fl__errf(err, err_size, "%s: %s", shown, why);
  return -1;
}

/* event: one that cflame counts, and this machine too. */
static int check_event(const fl_optval_t *v, const char *shown, char *err, size_t err_size) {
  const fl_event_t *event = fl_event_find(v->s);
  if (event && fl_event_available(event)) return 0;
  char here[512];
  fl_events_available(here, sizeof here);
  if (!here[0]) snprintf(here, sizeof here, "none of them");
  if (event) {
    fl__errf(err, err_size,
             "%s: this machine does not count it (no hardware counters, or perf events are not "
             "allowed); it counts: %s",
             shown, here);
    return -1;
  }
  fl__buf_t known = FL__BUF_INIT;
  for (size_t i = 0; fl_event_at(i); i++)
    fl__buf_printf(&known, "%s%s", i ? ", " : "", fl_event_at(i)->name);
  fl__errf(err, err_size, "%s is not an event cflame counts; valid: %s; this machine counts: %s",
           shown, known.data, here);
  fl__buf_free(&known);
  return -1;
}

/* ---- fl_options_t ---- */

/* A NULL-terminated copy of the first n of names (n SIZE_MAX: up to
 * their NULL), or NULL for none. New. */
static char **names_copy(const char *const *names, size_t n) {
  if (!names) return NULL;
  size_t k = 0;
  while (k < n && names[k]) k++;
  char **out = fl__xcalloc(k + 1, sizeof *out);
  for (size_t i = 0; i < k; i++) out[i] = fl__xstrdup(names[i]);
  return out;
}

static void names_free(char ***names) {
  if (*names)
    for (char **p = *names; *p; p++) free(*p);
  free(*names);
  *names = NULL;
}

static void store(fl_options_t *o, const row_t *r, const fl_optval_t *v) {
  char *base = (char *)o + r->offset;
  switch (r->field) {
    case F_BOOL: *(bool *)base = v->b; break;
    case F_INT: *(int *)base = (int)v->i; break;
    case F_U64: *(uint64_t *)base = (uint64_t)v->i; break;
    case F_DOUBLE: *(double *)base = v->d; break;
    case F_SIZE: /* checked by check_size */
      if (fl_input_limit_parse(v->s, (size_t *)base, NULL, 0) < 0) *(size_t *)base = 0;
      break;
    case F_NONE: break;
    case F_CHOICE: *(int *)base = choice_index(r->o.choices, v->s); break;
    case F_CHOICE_B: *(bool *)base = choice_index(r->o.choices, v->s) == 1; break;
    case F_LINES: *(fl_lines_t *)base = v->b ? FL_LINES_ON : FL_LINES_OFF; break;
    case F_VIEW: {
      size_t i = 0;
      const fl__view_t *view = fl__view_named(v->s, &i);
      *(int *)base = (int)i;
      o->tree.inverted = view && (view->flags & FL__VIEW_INVERTED);
      break;
    }
    case F_TITLE:
      free(o->title);
      o->view.title = o->title = v->s ? fl__xstrdup(v->s) : NULL;
      break;
    case F_FOCUS:
      free(o->focus);
      o->view.focus = o->focus = v->s ? fl__xstrdup(v->s) : NULL;
      break;
    case F_ROOT:
      free(o->root_prefix);
      o->diff.root_prefix = o->root_prefix = v->s ? fl__xstrdup(v->s) : NULL;
      break;
    case F_FILTER: {
      free(o->filter);
      o->tree.filter = o->filter = NULL;
      if (!v->s) break;
      size_t len = strlen(v->s);
      o->tree.filter_is_regex = len >= 2 && v->s[0] == '/' && v->s[len - 1] == '/';
      o->filter = o->tree.filter_is_regex ? fl__xstrndup(v->s + 1, len - 2) : fl__xstrdup(v->s);
      o->tree.filter = o->filter;
      break;
    }
    case F_PRUNED:
      names_free(&o->pruned);
      o->pruned = names_copy((const char *const *)v->list, v->n_list);
      o->tree.pruned = (const char *const *)o->pruned;
      break;
    case F_ROOTS:
      names_free(&o->source_roots);
      o->source_roots = names_copy((const char *const *)v->list, v->n_list);
      o->view.source_roots = (const char *const *)o->source_roots;
      break;
    case F_THREADS: {
      free(o->threads);
      o->threads = fl__xcalloc(v->n_list + 1, sizeof *o->threads);
      size_t n = 0;
      bool all = !v->list;
      for (size_t i = 0; i < v->n_list; i++) {
        if (!strcmp(v->list[i], "all"))
          all = true;
        else
          o->threads[n++] = (int)strtol(v->list[i], NULL, 10);
      }
      if (all) { /* nothing to keep: fl_tree_opts_init copies the tree part alone */
        free(o->threads);
        o->threads = NULL;
      }
      o->tree.threads = o->threads;
      o->tree.n_threads = all ? 0 : n;
      break;
    }
  }
}

void fl_options_store(fl_options_t *o, const fl_option_t *opt, const fl_optval_t *v) {
  const row_t *r = row_of(opt);
  if (!r) r = row_named(opt->name);
  if (!r) return;
  store(o, r, v);
  o->given |= 1ull << (r - rows);
}

/* Sets each row that has a default to it (the unit test checks that
 * every default parses). */
static void set_defaults(fl_options_t *o, fl_front_t front) {
  for (size_t i = 0; i < N_ROWS; i++) {
    const char *def = fl_option_default(&rows[i].o, front);
    fl_optval_t v;
    if (!def) continue;
    if (fl_option_parse(&rows[i].o, def, def, &v, NULL, 0) < 0) continue;
    store(o, &rows[i], &v);
    fl_optval_free(&v);
  }
}

/* The defaults of the fields the table does not hold; then the table's. */
static void init_all(fl_options_t *o, fl_front_t front) {
  memset(o, 0, sizeof *o);
  o->front = front;
  o->view.max_rows = FL__MAX_ROWS;
  o->tree.kind = FL_TREE_KIND_MAIN;
  set_defaults(o, front);
}

void fl_options_init(fl_options_t *o, fl_front_t front) {
  init_all(o, front);
}

void fl_options_budget(const fl_options_t *o, fl_budget_t *b) {
  fl_budget_init(b, o->tree.max_memory);
  b->raise_with = o->front == FL_FRONT_COMMAND ? "--max-memory SIZE" : "max_memory=SIZE";
}

void fl_tree_opts_init(fl_tree_opts_t *opts) {
  fl_options_t o;
  init_all(&o, FL_FRONT_NOTEBOOK);
  *opts = o.tree;
}

void fl_view_opts_init(fl_view_opts_t *v) {
  fl_options_t o;
  init_all(&o, FL_FRONT_NOTEBOOK);
  *v = o.view;
}

void fl_text_opts_init(fl_text_opts_t *t) {
  fl_options_t o;
  init_all(&o, FL_FRONT_NOTEBOOK);
  *t = o.text;
}

void fl_diff_opts_init(fl_diff_opts_t *d) {
  fl_options_t o;
  init_all(&o, FL_FRONT_NOTEBOOK);
  *d = o.diff;
}

void fl_options_free(fl_options_t *o) {
  free(o->title);
  free(o->focus);
  free(o->root_prefix);
  free(o->filter);
  free(o->threads);
  names_free(&o->pruned);
  names_free(&o->source_roots);
  init_all(o, o->front);
}

void fl_options_copy(fl_options_t *dst, const fl_options_t *src) {
  *dst = *src;
  dst->title = dst->focus = dst->root_prefix = dst->filter = NULL;
  dst->threads = NULL;
  if (src->title) dst->view.title = dst->title = fl__xstrdup(src->title);
  if (src->focus) dst->view.focus = dst->focus = fl__xstrdup(src->focus);
  if (src->root_prefix) dst->diff.root_prefix = dst->root_prefix = fl__xstrdup(src->root_prefix);
  if (src->filter) dst->tree.filter = dst->filter = fl__xstrdup(src->filter);
  if ((dst->pruned = names_copy((const char *const *)src->pruned, SIZE_MAX)))
    dst->tree.pruned = (const char *const *)dst->pruned;
  if ((dst->source_roots = names_copy((const char *const *)src->source_roots, SIZE_MAX)))
    dst->view.source_roots = (const char *const *)dst->source_roots;
  if (src->threads) {
    dst->threads = fl__xcalloc(src->tree.n_threads + 1, sizeof *dst->threads);
    memcpy(dst->threads, src->threads, src->tree.n_threads * sizeof *dst->threads);
    if (src->tree.threads) dst->tree.threads = dst->threads;
  }
}

int fl_options_take(fl_options_t *o, const fl_option_t *opt, const char *value, fl_optval_t *v,
                    char *err, size_t err_size) {
  const row_t *r = row_of(opt);
  char shown[512];
  fl_option_shown(opt, o->front, value, shown, sizeof shown);
  if (fl_option_parse(opt, value, shown, v, err, err_size) < 0) return -1;
  if (r) o->given |= 1ull << (r - rows);
  if (r && r->field != F_NONE) {
    store(o, r, v);
    fl_optval_free(v);
  }
  return 0;
}

int fl_options_set(fl_options_t *o, const char *name, const char *value, char *err,
                   size_t err_size) {
  const row_t *r = row_named(name);
  if (!r) {
    fl__errf(err, err_size, "unknown option '%s'", name);
    return -1;
  }
  fl_optval_t v;
  if (fl_options_take(o, &r->o, value, &v, err, err_size) < 0) return -1;
  fl_optval_free(&v);
  return 0;
}

bool fl_options_given(const fl_options_t *o, const char *name) {
  const row_t *r = row_named(name);
  return r && (o->given >> (r - rows) & 1);
}
