/* SPDX-License-Identifier: BSD-3-Clause */
/* The table of magics (see kn_magics.h), and the line magics about the
 * kernel itself. */
#include "kn_magics.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_exec.h"
#include "kn_session.h"
#include "kn_text.h"

/* ---- the kernel's own line magics ---- */

/* %cc, %cflags, %ldflags: with args, set the session's setting; without,
 * print it. */
static int show_or_set(kn_kernel_t *k, const char *args, kn_magic_result_t *res, char *err,
                       size_t err_size, const char *(*get)(const kn_session_t *),
                       int (*set)(kn_session_t *, const char *, char *, size_t)) {
  kn_session_t *s = kn_kernel_session(k);
  if (*args) return set(s, args, err, err_size);
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb, "%s\n", get(s));
  res->output = fl__buf_take(&sb);
  return 0;
}

static int magic_cc(kn_kernel_t *k, const char *args, kn_magic_result_t *res, char *err,
                    size_t err_size) {
  return show_or_set(k, args, res, err, err_size, kn_session_cc, kn_session_set_cc);
}

static int magic_cflags(kn_kernel_t *k, const char *args, kn_magic_result_t *res, char *err,
                        size_t err_size) {
  return show_or_set(k, args, res, err, err_size, kn_session_cflags, kn_session_set_cflags);
}

static int magic_ldflags(kn_kernel_t *k, const char *args, kn_magic_result_t *res, char *err,
                         size_t err_size) {
  return show_or_set(k, args, res, err, err_size, kn_session_ldflags, kn_session_set_ldflags);
}

static int magic_reset(kn_kernel_t *k, const char *args, kn_magic_result_t *res, char *err,
                       size_t err_size) {
  if (*args) {
    snprintf(err, err_size, "%%reset takes no arguments");
    return -1;
  }
  kn_session_reset(kn_kernel_session(k));
  if (kn_restart_worker(k, err, err_size) < 0) return -1;
  res->output = fl__xstrdup(
      "Session reset: every definition was forgotten and the worker "
      "restarted.\n");
  return 0;
}

static int magic_lsmagic(kn_kernel_t *k, const char *args, kn_magic_result_t *res, char *err,
                         size_t err_size) {
  res->output = kn_magic_list();
  return 0;
}

/* ---- when a line form is a statement form ---- */

static bool always(const char *args) { return true; }

/* %profbase alone lists the baselines; with a NAME it profiles. */
static bool has_args(const char *args) { return *args != '\0'; }

/* ---- the table ---- */

#define RUN_OPTS (KN_OPTS_PROFILER | KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_OUTPUT)

static const kn_magic_def_t magics[] = {
    {.name = "cc", .forms = KN_FORM_LINE, .kernel_line = magic_cc,
     .usage = "%cc [COMPILER]",
     .help = "Show the compiler, or set it for the rest of the session (e.g. %cc clang).\n"
             "The default is cc, or $CC when the kernel was started with it set."},
    {.name = "cflags", .forms = KN_FORM_LINE, .kernel_line = magic_cflags,
     .usage = "%cflags [FLAGS...]",
     .help = "Show the compiler flags, or replace them for the rest of the session.\n"
             "The default is " KN_DEFAULT_CFLAGS ".\nEvery compile starts with " KN_BASE_CFLAGS
             " (tail calls stay calls);\n-foptimize-sibling-calls in FLAGS undoes it."},
    {.name = "ldflags", .forms = KN_FORM_LINE, .kernel_line = magic_ldflags,
     .usage = "%ldflags [FLAGS...]",
     .help = "Show the link flags, or replace them for the rest of the session (e.g. %ldflags "
             "-lm -lpthread).\nThe default is " KN_DEFAULT_LDFLAGS "."},
    {.name = "timeit", .forms = KN_FORM_LINE | KN_FORM_CELL, .timeit = true, .statement = always,
     .usage = "%%timeit [-n N] [-r R]  /  %timeit [-n N] [-r R] STATEMENT",
     .help = "Time the cell body (or the statement): R runs of N loops each, reporting the mean "
             "and\nstandard deviation per loop, as IPython does. Without -n, N grows by tens "
             "until one\nrun takes at least 0.2 s. -r defaults to 7."},
    {.name = "reset", .forms = KN_FORM_LINE, .kernel_line = magic_reset,
     .usage = "%reset",
     .help = "Start a fresh session: forget every definition, type, macro and global, and "
             "restart\nthe worker process. Compiler settings are kept."},
    {.name = "lsmagic", .forms = KN_FORM_LINE, .kernel_line = magic_lsmagic,
     .usage = "%lsmagic", .help = "List the magics."},
    {.name = "profview", .forms = KN_FORM_LINE | KN_FORM_CELL, .profile = KN_PROF_VIEW,
     .statement = always, .options = RUN_OPTS | KN_OPTS_EVERY,
     .usage = "%%profview [opts]  /  %profview [opts] STATEMENT",
     .help = "Clear the session profile, run the cell (or the statement) under the sampling "
             "profiler\nand show its flame graph."},
    {.name = "profile", .forms = KN_FORM_LINE | KN_FORM_CELL, .profile = KN_PROF_ACCUMULATE,
     .statement = always, .options = KN_OPTS_PROFILER,
     .usage = "%%profile [opts]  /  %profile [opts] STATEMENT",
     .help = "Run the cell (or the statement) under the profiler, adding to the session "
             "profile;\nshow nothing. See %profshow and %profprint."},
    {.name = "profshow", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_show,
     .options = KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_OUTPUT, .usage = "%profshow [opts]",
     .help = "Show the session profile as a flame graph."},
    {.name = "profprint", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_print,
     .options = KN_OPTS_TREE | KN_OPTS_PRINT,
     .usage = "%profprint [format=tree|flat] [maxdepth=] [mincount=] [cols=]",
     .help = "Print a text report of the session profile, as Julia's Profile.print."},
    {.name = "profclear", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_clear,
     .usage = "%profclear", .help = "Empty the session profile."},
    {.name = "profinit", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_init,
     .options = KN_OPTS_SAMPLING,
     .usage = "%profinit [n=FRAMES] [delay=SECONDS]",
     .help = "Show or set the sample buffer size (8-byte words) and the sampling interval "
             "(seconds)."},
    {.name = "profsize", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_size,
     .usage = "%profsize WIDTH HEIGHT",
     .help = "Show or set the default size of flame graphs in pixels (height 0: sized to the "
             "depth)."},
    {.name = "profbase", .forms = KN_FORM_LINE | KN_FORM_CELL, .profile = KN_PROF_BASE,
     .statement = has_args, .prof_line = kn_profmagic_baselines,
     .options = KN_OPTS_PROFILER | KN_OPTS_ALLOC | KN_OPTS_KIND,
     .usage = "%%profbase NAME [delay= n=]  /  %profbase NAME STATEMENT  /  %profbase",
     .help = "Profile the cell (or the statement) and keep the result as baseline NAME, with "
             "how it\nwas taken (interval, compiler and flags, time). %profbase alone lists the "
             "baselines."},
    {.name = "profdiffview", .forms = KN_FORM_LINE | KN_FORM_CELL, .profile = KN_PROF_DIFF,
     .statement = kn_profdiff_has_statement, .prof_line = kn_profmagic_diff_session,
     .options = RUN_OPTS | KN_OPTS_DIFF | KN_OPTS_ALLOC | KN_OPTS_KIND,
     .usage = "%%profdiffview NAME|prev [opts]  /  %profdiffview NAME [opts] [STATEMENT]",
     .help = "Profile the cell (or the statement) and show its differential flame graph "
             "against\nbaseline NAME, or with prev against this cell's previous profiled run "
             "(%profhistory):\nred grew, blue shrank, grey within noise, a distinct colour "
             "for new\nframes; vanished frames are listed under the graph. Without a statement, "
             "the line\nform compares the session profile (%%profile, %profload) against NAME."},
    {.name = "profhistory", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_history,
     .options = KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_OUTPUT, .usage = "%profhistory [N [opts]]",
     .help = "List the profiled runs kept (every %%profview, %%profdiffview, %%profile and "
             "%%profbase run,\nwithin a memory budget, the oldest dropped first), or show run "
             "N's graph.\n%%profdiffview prev compares a cell's run with its previous one, "
             "even after the cell was edited."},
    {.name = "profallocs", .forms = KN_FORM_LINE | KN_FORM_CELL, .profile = KN_PROF_VIEW,
     .kind = FL_PROFILE_ALLOC_BYTES, .statement = always,
     .options = RUN_OPTS | KN_OPTS_ALLOC | KN_OPTS_EVERY,
     .usage = "%%profallocs [sample_rate=] [weight=bytes|count] [live=true] [opts]  /  "
              "%profallocs [opts] STATEMENT",
     .help = "Run the cell (or the statement) recording its memory allocations (malloc, "
             "calloc,\nrealloc, aligned allocations, in every thread, libc's own included) and "
             "show where\nthey were made: widths are bytes (weight=count: allocations), "
             "estimated from a\nsample_rate share of the calls (default 0.1; 1 records every "
             "one, exactly);\nlive=true shows only what the cell had not freed when it ended.\n"
             "Baselines: %%profbase NAME allocs=true [sample_rate= weight= live=]; "
             "%%profdiffview\nNAME then profiles allocations the way the baseline was taken."},
    {.name = "profsave", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_save,
     .options = KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_DIFF, .usage = "%profsave PATH [opts]",
     .help = "Write the last flame graph shown (or the session profile) to PATH, by its "
             "ending:\n.svg (the kernel's SVG), .html (a standalone page: the interactive view, "
             "and the SVG\nfor offline reading), .vl.json (the Vega-Lite spec), .folded (folded "
             "stacks, as\nflamegraph.pl reads them; a diff as 'stack BASE TARGET' lines), .txt "
             "(the text\nreport), .pb.gz (pprof, as go tool pprof reads it), .speedscope.json "
             "(speedscope:\na profile per thread, in time order) or .trace.json (Chrome trace "
             "events, the\ntime chart's bars). Options redraw it first."},
    {.name = "profattach", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_attach,
     .options = KN_OPTS_ATTACH | KN_OPTS_TREE | KN_OPTS_VIEW,
     .usage = "%profattach PID [duration=SECONDS] [follow_forks=true] [opts]",
     .help = "Sample a program that is already running, every thread of process PID, for "
             "duration\nseconds (default 5) at 100 Hz of its CPU time, as `cflame record --pid` "
             "does, from a\nhelper process; then show its flame graph, which becomes the "
             "session profile\n(%profshow, %profsave, %profdiffview NAME). follow_forks=true "
             "samples the processes it\nforks meanwhile too, each under a root of its own. An "
             "interrupt ends the sampling\nearly and keeps what was taken. The program needs no "
             "restart; tracing it takes the\npermission ptrace does (docs/PROFILING.md, "
             "\"Attaching\")."},
    {.name = "profload", .forms = KN_FORM_LINE, .prof_line = kn_profmagic_load,
     .options = KN_OPTS_LOAD,
     .usage = "%profload PATH [PATH...] [as=NAME] [per_input=true] [max_input_size=SIZE] "
              "[max_memory=SIZE]",
     .help = "Read folded stacks, the text of `perf script` or a pprof profile (told apart by "
             "content,\ngzipped or not) into the session profile, replacing it (then %profshow, "
             "%profprint,\n%profdiffview NAME), or with as=NAME keep it as baseline NAME. Several "
             "paths are merged,\nor with per_input=true each drawn under a root frame named "
             "after its path. Only regular\nfiles are read, up to max_input_size (default 1G), "
             "unzipped too, and a profile\nmay take max_memory (default: a quarter of the "
             "physical memory)."},
};

#define N_MAGICS (FL__ARRAY_SIZE(magics))

const kn_magic_def_t *kn_magic_find(const char *name) {
  for (size_t i = 0; i < N_MAGICS; i++)
    if (!strcmp(magics[i].name, name)) return &magics[i];
  return NULL;
}

const kn_magic_def_t *kn_magic_at(size_t i) { return i < N_MAGICS ? &magics[i] : NULL; }

bool kn_magic_is_statement(const kn_magic_def_t *def, const char *args) {
  return def->statement && def->statement(args);
}

int kn_magic_run_line(kn_kernel_t *k, const kn_magic_def_t *def, const char *args,
                      kn_magic_result_t *res, char *err, size_t err_size) {
  *res = (kn_magic_result_t){NULL, NULL};
  if (def->kernel_line) return def->kernel_line(k, args, res, err, err_size);
  if (def->prof_line) return def->prof_line(kn_kernel_prof(k), args, res, err, err_size);
  snprintf(err, err_size, "%%%s needs a statement: %s", def->name, def->usage);
  return -1;
}

/* ---- help ---- */

char *kn_magic_help(const char *name) {
  const kn_magic_def_t *m = kn_magic_find(name);
  if (!m) return NULL;
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb, "%s\n\n%s", m->usage, m->help);
  if (m->options) {
    char *options = kn_profreq_options_help(m->options);
    fl__buf_printf(&sb, "\n\nOptions:\n%s", options);
    free(options);
  }
  return fl__buf_take(&sb);
}

/* The first sentence of a magic's help, on one line: up to the first full
 * stop outside parentheses that ends the text or comes before a space. */
static char *first_sentence(const char *help) {
  fl__buf_t sb = FL__BUF_INIT;
  int depth = 0;
  for (const char *p = help; *p; p++) {
    fl__buf_putc(&sb, *p == '\n' ? ' ' : *p);
    if (*p == '(') depth++;
    if (*p == ')' && depth > 0) depth--;
    if (*p == '.' && depth == 0 && (!p[1] || isspace((unsigned char)p[1]))) break;
  }
  return fl__buf_take(&sb);
}

/* Appends text in lines of at most width columns (longer words stand
 * alone), each after indent. */
static void put_wrapped(fl__buf_t *sb, const char *text, const char *indent, size_t width) {
  size_t room = width - strlen(indent), used = 0;
  for (const char *p = text; *p;) {
    while (*p == ' ') p++;
    size_t w = strcspn(p, " ");
    if (!w) break;
    if (used && used + 1 + w > room) {
      fl__buf_putc(sb, '\n');
      used = 0;
    }
    fl__buf_printf(sb, "%s%.*s", used ? " " : indent, (int)w, p);
    used += (used ? 1 : 0) + w;
    p += w;
  }
  fl__buf_putc(sb, '\n');
}

char *kn_magic_list(void) {
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_puts(&sb, "Available magics:\n");
  for (size_t i = 0; i < N_MAGICS; i++) {
    char *summary = first_sentence(magics[i].help);
    fl__buf_printf(&sb, "  %s\n", magics[i].usage);
    put_wrapped(&sb, summary, "      ", 90);
    free(summary);
  }
  fl__buf_puts(&sb, "Help on one magic: %NAME? (or Shift-Tab on it in JupyterLab).\n");
  return fl__buf_take(&sb);
}

char *kn_magic_names(unsigned form) {
  fl__buf_t sb = FL__BUF_INIT;
  for (size_t i = 0; i < N_MAGICS; i++) {
    if (!(magics[i].forms & form)) continue;
    fl__buf_printf(&sb, "%s%s%s", sb.len ? ", " : "", form == KN_FORM_CELL ? "%%" : "%",
                     magics[i].name);
  }
  return fl__buf_take(&sb);
}
