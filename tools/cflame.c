/* SPDX-License-Identifier: BSD-3-Clause */
/* cflame: the flame graph library on the command line (docs/CLI.md).
 *
 *   cflame [options] INPUT...
 *
 * Reads folded stacks, `perf script` text or pprof (each INPUT a file, or
 * - for standard input; several are merged into one profile, or with
 * --per-input each under a root of its own), builds the flame graph with
 * the tree options, and writes it as SVG, a standalone HTML page, a
 * Vega-Lite spec, folded stacks, a text tree or pprof, to standard output
 * or to -o FILE (whose ending names the format when --format does not).
 * With --diff BASE it draws the differential flame graph of the inputs
 * against BASE, and with --fail-above PCT it is a CI gate on the frames
 * whose share grew.
 *
 * Everything is made in memory before anything is written, and -o writes a
 * temporary file next to FILE that is renamed over it at the end: on any
 * error nothing is written and FILE is left as it was. Errors go to stderr
 * as "cflame: FILE:LINE: message" (exit 1); a bad command line exits 2;
 * with --fail-above, 1 is the gate's verdict and every error exits 2. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cflame/fl_api.h"
#include "cflame/fl_diff.h"
#include "cflame/fl_io.h"
#include "cflame/fl_options.h"
#include "cflame/fl_output.h"
#include "cflame/fl_profile.h"
#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"
#include "rc_record.h"
#include "rc_say.h"
#include "term_picture.h"

#define EXIT_USAGE 2

typedef struct cli {
  const char *format; /* a format of fl_output.h's table */
  bool format_given;
  const char *output; /* NULL: standard output */
  fl_input_kind_t input_kind;
  fl_options_t draw; /* the drawing options (fl_options.h's table) */
  bool per_input;        /* --per-input: each input under a root of its own */
  size_t max_input;      /* --max-input-size: the limit on an input, raw and unzipped */
  const char *diff_base; /* --diff BASE, or NULL */
  double fail_above; /* --fail-above PCT, in points; < 0: no gate */
  bool gate_failed;  /* a frame grew by more than that */
  char **inputs;
  int n_inputs;
} cli_t;

/* --help: this, the formats and usage_output, the drawing options (from
 * their tables) and usage_tail. */
static const char usage_head[] =
    "Usage: cflame [OPTIONS] INPUT...\n"
    "       cflame record [OPTIONS] -- PROGRAM [ARGS...]   (cflame record --help)\n"
    "\n"
    "Draws the flame graph of profiles recorded elsewhere. Each INPUT is a file of\n"
    "folded stacks (\"frame;frame;...;frame COUNT\" lines, as flamegraph.pl, inferno,\n"
    "speedscope and cflame's %profsave write them), the text of `perf script` (of a\n"
    "`perf record -g` recording) or a pprof profile (Go's runtime/pprof, pprof's\n"
    "tools, cflame); the kind is told by the content, gzipped or not. - reads\n"
    "standard input. Several INPUTs are merged into one profile, or with\n"
    "--per-input drawn side by side.\n"
    "\n"
    "Output:\n";

/* After the formats: the rest of the output options (the input kinds are
 * the library's, printed between the two parts). */
static const char usage_output[] =
    "  -o, --output FILE      write to FILE (default: standard output); on any\n"
    "                         error nothing is written and FILE is left as it was\n";

static const char usage_tail[] =
    "  -h, --help             this text\n"
    "  -V, --version          the version\n"
    "\n"
    "Examples:\n"
    "  perf record -g -o perf.data ./prog && perf script -i perf.data > prog.perf\n"
    "  cflame prog.perf -o prog.svg\n"
    "  cflame --format html --title prog prog.perf -o prog.html\n"
    "  cflame --format folded prog.perf > prog.folded\n"
    "  cflame prog.perf -o prog.pb.gz && go tool pprof -top prog.pb.gz\n"
    "  cflame --diff before.folded after.folded -o diff.svg\n"
    "  cflame --diff main.pb.gz change.pb.gz --fail-above 5 -o diff.html\n"
    "\n"
    "Exit status: 0 on success, 1 when an input or the output fails, 2 for a bad\n"
    "command line. With --fail-above: 0 when no frame grew by more than PCT, 1 when\n"
    "one did, 2 for any error (bad input, bad command line, unwritable output).\n";

/* The drawing options' sections of --help, with the command's own options
 * of the differential flame graph: each the table's rows of its groups. */
static const struct {
  const char *heading;
  unsigned groups;
} help_sections[] = {
    {"Graph (the tree options of the notebook's magics):", FL_OPTS_TREE},
    {"View:", FL_OPTS_VIEW},
    {"Text (--format text):", FL_OPTS_TEXT},
    {"Differential flame graph:", FL_OPTS_DIFF | FL_OPTS_CLI_DIFF},
};

/* The table's options the command takes: the drawing ones and its own. */
#define TABLE_GROUPS (FL_OPTS_DRAWING | FL_OPTS_CLI)

static void print_usage(void) {
  fputs(usage_head, stdout);
  printf("  -f, --format FORMAT    one of these (default: by -o's ending, else svg):\n");
  const fl_output_format_t *f;
  for (size_t i = 0; (f = fl_output_format_at(i)) != NULL; i++)
    printf("    %-9s %-9s %s\n", f->name, f->ending, f->help);
  fputs(usage_output, stdout);
  char *lines = fl_options_help(FL_OPTS_CLI_INPUT, FL_FRONT_COMMAND);
  printf("%s\n", lines);
  free(lines);
  for (size_t i = 0; i < sizeof help_sections / sizeof *help_sections; i++) {
    lines = fl_options_help(help_sections[i].groups, FL_FRONT_COMMAND);
    printf("%s\n%s\n", help_sections[i].heading, lines);
    free(lines);
  }
  fputs(usage_tail, stdout);
}

/* OPT_TABLE + 2 i: the table's option i; + 1: its --no- form. */
enum { OPT_TABLE = 256 };

/* The options the table does not hold; the table's follow (long_options). */
static const struct option own_options[] = {
    {"format", required_argument, NULL, 'f'},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
};
#define N_OWN (sizeof own_options / sizeof *own_options)
#define MAX_LONG (N_OWN + 2 * 64 + 1)

/* getopt's long options (made once): those the table does not hold and,
 * for each option of the table the command takes, --NAME ('_' written
 * '-'), and --no-NAME for a bool; *valid: the list an unknown option's
 * message gives. */
static const struct option *long_options(const char **valid) {
  static struct option all[MAX_LONG];
  static char names[MAX_LONG][72], list[2048];
  static size_t n;
  *valid = list;
  if (n) return all;
  size_t used =
      (size_t)snprintf(list, sizeof list, "-f/--format, -o/--output");
  memcpy(all, own_options, sizeof own_options);
  n = N_OWN;
  const fl_option_t *o;
  for (size_t i = 0; (o = fl_option_at(i)) != NULL; i++) {
    if (!(o->groups & TABLE_GROUPS)) continue;
    bool is_bool = o->type == FL_OPT_BOOL;
    for (int no = 0; no <= is_bool; no++) {
      fl_option_shown(o, FL_FRONT_COMMAND, is_bool ? (no ? "false" : "true") : "", names[n],
                      sizeof names[n]);
      names[n][strcspn(names[n], " ")] = '\0';
      used += (size_t)snprintf(list + used, sizeof list - used, ", %s", names[n]);
      all[n] = (struct option){names[n] + 2, is_bool ? no_argument : required_argument, NULL,
                               OPT_TABLE + 2 * (int)i + no};
      n++;
    }
  }
  snprintf(list + used, sizeof list - used, ", -h/--help, -V/--version");
  return all;
}

/* ---- errors ---- */

/* The messages: "cflame: MESSAGE" on standard error (rc_say.h). */
static const rc_voice_t voice = {"cflame", "(cflame --help lists every option)"};
#define say(...) rc_say(&voice, __VA_ARGS__)
#define usage_error(...) rc_usage_error(&voice, __VA_ARGS__)

static void say_io_error(const fl_io_error_t *e) {
  if (e->line)
    say("%s:%zu: %s", e->file, e->line, e->message);
  else
    say("%s", e->message);
}

/* ---- option values ---- */

/* The value of one of the command's own rows of the table (v, parsed by
 * it; raw as written) into c. */
static void store_own(cli_t *c, const fl_optval_t *v, const char *raw) {
  if (!strcmp(v->key, "per_input"))
    c->per_input = v->b;
  else if (!strcmp(v->key, "input_format")) /* one of the row's choices */
    fl_input_kind_parse(v->s, &c->input_kind);
  else if (!strcmp(v->key, "max_input_size")) /* checked by the row */
    fl_input_limit_parse(v->s, &c->max_input, NULL, 0);
  else if (!strcmp(v->key, "diff"))
    c->diff_base = raw;
  else if (!strcmp(v->key, "fail_above"))
    c->fail_above = v->d;
}

/* Parses argv into c. Returns -1 to go on, else the exit status (0 after
 * --help or --version, 2 for a bad command line). */
static int parse_args(int argc, char **argv, cli_t *c) {
  const char *valid_options;
  const struct option *options = long_options(&valid_options);
  char err[512];
  opterr = 0; /* unknown options are reported below, with the valid ones */
  for (int opt; (opt = getopt_long(argc, argv, ":f:o:hV", options, NULL)) != -1;) {
    if (opt >= OPT_TABLE) {
      /* An option of the table: its --no- form is the value false. */
      const fl_option_t *o = fl_option_at((size_t)(opt - OPT_TABLE) / 2);
      const char *value =
          o->type != FL_OPT_BOOL ? optarg : (opt - OPT_TABLE) % 2 ? "false" : "true";
      fl_optval_t v;
      if (fl_options_take(&c->draw, o, value, &v, err, sizeof err) < 0)
        return usage_error("%s", err);
      if (v.set) store_own(c, &v, value);
      fl_optval_free(&v);
      continue;
    }
    switch (opt) {
      case 'f':
        if (!fl_output_format_known(optarg))
          return usage_error("--format %s: unknown format; valid: %s", optarg,
                             fl_output_formats(false));
        c->format = optarg;
        c->format_given = true;
        break;
      case 'o':
        if (!*optarg) return usage_error("-o: the output file name is empty");
        c->output = optarg;
        break;
      case 'h': print_usage(); return 0;
      case 'V': printf("cflame %s\n", fl_version_string()); return 0;
      case ':':
        return usage_error("%s needs a value; valid options: %s", argv[optind - 1], valid_options);
      default: {
        const char *bad = argv[optind - 1];
        char shortopt[3] = {'-', (char)optopt, '\0'};
        /* getopt leaves optind past a bad long option; a bad short one may
         * sit inside a group ("-fx"), so name it alone. */
        if (optopt) bad = shortopt;
        return usage_error("unknown option %s; valid options: %s", bad, valid_options);
      }
    }
  }
  c->inputs = argv + optind;
  c->n_inputs = argc - optind;
  if (c->n_inputs == 0)
    return usage_error(
        "no INPUT: give files of folded stacks, `perf script` output or pprof profiles "
        "(Go's, cflame's .pb.gz), or - for standard input");
  int stdin_uses = c->diff_base && strcmp(c->diff_base, "-") == 0;
  for (int i = 0; i < c->n_inputs; i++) stdin_uses += strcmp(c->inputs[i], "-") == 0;
  if (stdin_uses > 1) return usage_error("- (standard input) can be read only once");
  /* -o x.pb.gz: the format its ending names, unless --format said one. */
  const char *by_path = c->output ? fl_output_format_of_path(c->output) : NULL;
  if (!c->format_given && by_path) c->format = by_path;
  const fl_diff_opts_t *diff = &c->draw.diff;
  bool diff_only =
      diff->negate || diff->normalize || diff->delta != FL_DELTA_TOTAL || diff->root_prefix;
  if (diff_only && !c->diff_base)
    return usage_error("--negate, --normalize, --delta and --root-prefix need --diff BASE");
  if (c->fail_above >= 0 && !c->diff_base)
    return usage_error("--fail-above needs --diff BASE: it compares the INPUTs with BASE");
  if (c->diff_base && c->per_input)
    return usage_error(
        "--per-input with --diff: a diff compares two profiles; merge each side's inputs "
        "(without --per-input), or draw the inputs side by side without --diff");
  if (c->diff_base && !strcmp(c->format, "pprof"))
    return usage_error(
        "--diff with pprof output: a pprof file holds one profile; write the diff as svg, "
        "html, vegalite or text, or as folded stacks with both counts");
  return -1;
}

/* ---- the work ---- */

/* A profile of the files, merged, or with per_input each under a root
 * frame named after it. NULL after saying why. */
static fl_profile_t *read_inputs(const cli_t *c, char *const *paths, int n, bool per_input) {
  fl_profile_t *p = fl_profile_new(FL_PROFILE_CPU);
  if (!p) {
    say("out of memory");
    return NULL;
  }
  fl_read_opts_t opts;
  fl_budget_t budget; /* what reading these inputs may take (--max-memory) */
  fl_options_budget(&c->draw, &budget);
  fl_read_opts_init(&opts);
  opts.budget = &budget;
  opts.kind = c->input_kind;
  opts.max_bytes = c->max_input;
  opts.raise_with = "--max-input-size SIZE (such as --max-input-size 4G)";
  for (int i = 0; i < n; i++) {
    fl_io_error_t err;
    opts.root = !per_input ? NULL : strcmp(paths[i], "-") ? paths[i] : "standard input";
    if (fl_read_profile_file_opts(p, paths[i], &opts, NULL, &err) < 0) {
      say_io_error(&err);
      fl_profile_destroy(&p);
      return NULL;
    }
  }
  return p;
}

/* "12,345 samples, one every 0.25 ms"; an allocation profile's "65,536
 * bytes in 1,024 allocations" (or "1,024 allocations"). */
static void summary_of(const fl_profile_t *p, char *out, size_t size) {
  const fl_profile_info_t *info = fl_profile_info_const(p);
  char n[64], allocs[64];
  const fl_kind_info_t *kind = fl_kind(info->kind);
  fl_count_noun(info->total_weight, kind->one, kind->many, n, sizeof n);
  fl_count_noun(info->total_allocs, "allocation", "allocations", allocs, sizeof allocs);
  if (kind->allocs && kind->bytes)
    snprintf(out, size, "%s in %s", n, allocs);
  else if (kind->time && info->interval_ns && info->mixed_intervals) {
    char mixed[160];
    fl_mixed_intervals_note(info, mixed, sizeof mixed);
    snprintf(out, size, "%s; %s", n, mixed);
  } else if (kind->time && info->interval_ns)
    snprintf(out, size, "%s, one every %g ms", n, (double)info->interval_ns / 1e6);
  else
    snprintf(out, size, "%s", n);
}

/* "a.perf, b.perf" (or "standard input"), cut to fit. */
static void names_of(char *const *paths, int n, char *out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < n && used + 1 < size; i++) {
    const char *name = strcmp(paths[i], "-") == 0 ? "standard input" : paths[i];
    int w = snprintf(out + used, size - used, "%s%s", i ? ", " : "", name);
    if (w < 0) break;
    used += (size_t)w;
  }
}

/* Writes text to f, named name in errors. Returns 0, or -1 after saying
 * why. */
static int write_stream(FILE *f, const char *name, const char *text, size_t len) {
  if (fwrite(text, 1, len, f) != len || fflush(f) != 0) {
    say("cannot write to %s: %s", name, strerror(errno));
    return -1;
  }
  return 0;
}

/* Standard output, or -o's file whole or not at all (written in place when
 * it is not a regular file: /dev/null, a pipe). Returns 0, or -1 after
 * saying why. */
static int write_output(const cli_t *c, const char *text, size_t len) {
  if ((!c->output || strcmp(c->output, "-") == 0) && !strcmp(c->format, "png") &&
      isatty(STDOUT_FILENO)) {
    /* A PNG is no text: a terminal that draws pictures shows it. */
    term_picture_protocol_t p = term_picture_protocol();
    if (p == TERM_PICTURE_NONE) {
      say("this terminal does not show pictures (kitty's or iTerm2's protocol): write the PNG "
          "to a file (-o graph.png) or a pipe, or choose --format text");
      return -1;
    }
    if (term_picture_write(stdout, p, text, len) == 0) return 0;
    say("cannot write to standard output: %s", strerror(errno));
    return -1;
  }
  if (!c->output || strcmp(c->output, "-") == 0)
    return write_stream(stdout, "standard output", text, len);
  char err[512];
  if (fl_write_file(c->output, text, len, true, err, sizeof err) == 0) return 0;
  say("%s", err);
  return -1;
}

/* ---- the CI gate ---- */

/* The gate of --fail-above: the frames whose share of their profile's
 * total grew by more than c->fail_above points, on a diff of every frame
 * (minwidth 0, not negated) with the tree options and --delta; listed on
 * stderr, largest growth first. Sets c->gate_failed. Returns 0, or -1
 * after saying why. */
static int gate(cli_t *c, const fl_profile_t *target, const fl_profile_t *base) {
  char err[512];
  fl_tree_opts_t tree = c->draw.tree;
  tree.minwidth = 0;
  fl_diff_opts_t opts = c->draw.diff;
  opts.negate = false;
  fl_diff_t *d = fl_diff_build(target, base, &tree, &opts, "all", err, sizeof err);
  if (!d) {
    say("%s", err);
    return -1;
  }
  /* A comparison the options emptied compares nothing: a filter gone
   * stale after a rename would pass every build. */
  bool new_empty = fl_tree_root(fl_diff_tree(d))->count == 0,
       base_empty = fl_tree_root(fl_diff_other_tree(d))->count == 0;
  if (new_empty || base_empty) {
    static const char *const emptying[] = {"filter", "threads"};
    char given[128] = "";
    size_t used = 0;
    for (size_t i = 0; i < sizeof emptying / sizeof *emptying; i++)
      if (fl_options_given(&c->draw, emptying[i]) && used < sizeof given)
        used += (size_t)snprintf(given + used, sizeof given - used, "%s--%s", used ? ", " : "",
                                 emptying[i]);
    const char *side = new_empty && base_empty ? "either side" : new_empty ? "the INPUTs" : "BASE";
    say("--fail-above %g: nothing to compare: %s left no sample of %s; a gate passes only on "
        "a comparison",
        c->fail_above, used ? given : "the options", side);
    fl_diff_destroy(&d);
    return -1;
  }
  /* How the profiles were compared (intervals, programs of other names):
   * the verdict depends on it. */
  for (const char *const *note = fl_diff_notes(d); *note; note++) say("note: %s", *note);
  fl_grown_t *grown;
  size_t n = fl_diff_grown(d, c->fail_above / 100, &grown);
  const char *what = c->draw.diff.delta == FL_DELTA_SELF ? "self share" : "share";
  c->gate_failed = n > 0;
  if (n) {
    say("--fail-above %g: %zu frame%s grew by more than %g points (%s of each profile's "
        "total):",
        c->fail_above, n, n == 1 ? "" : "s", c->fail_above, what);
    fprintf(stderr, "%9s %9s %9s  frame\n", "base", "new", "growth");
  } else {
    fl_grown_t *largest;
    size_t any = fl_diff_grown(d, 0, &largest);
    if (any) {
      char *label = fl_node_label(largest[0].node);
      say("--fail-above %g: passed; the largest growth is %s, %+.2f points (%.2f%% -> %.2f%%)",
          c->fail_above, label, 100 * (largest[0].share - largest[0].base_share),
          100 * largest[0].base_share, 100 * largest[0].share);
      free(label);
    } else {
      say("--fail-above %g: passed; no frame's %s grew", c->fail_above, what);
    }
    free(largest);
  }
  enum { MAX_LISTED = 100 };
  for (size_t i = 0; i < n && i < MAX_LISTED; i++) {
    char *label = fl_node_label(grown[i].node);
    fprintf(stderr, "%8.2f%% %8.2f%% %+9.2f  %s  (", 100 * grown[i].base_share,
            100 * grown[i].share, 100 * (grown[i].share - grown[i].base_share), label);
    free(label);
    /* the path, outermost first */
    const fl_node_t *chain[64];
    size_t depth = 0;
    bool cut = false;
    for (const fl_node_t *p = grown[i].node; p && p->depth > 0; p = p->parent) {
      if (depth == sizeof chain / sizeof *chain) {
        cut = true;
        break;
      }
      chain[depth++] = p;
    }
    if (cut) fputs("...;", stderr);
    while (depth-- > 0) {
      char *l = fl_node_label(chain[depth]);
      fprintf(stderr, "%s%s", l, depth ? ";" : ")\n");
      free(l);
    }
  }
  if (n > MAX_LISTED) fprintf(stderr, "  ... and %zu more\n", n - MAX_LISTED);
  free(grown);
  fl_diff_destroy(&d);
  return 0;
}

static int run(cli_t *c) {
  int status = 1;
  fl_profile_t *target = NULL, *base = NULL;
  char *out = NULL, err[512];
  size_t out_len = 0;
  char names[512], summary[256], title[600];

  if (!(target = read_inputs(c, c->inputs, c->n_inputs, c->per_input))) goto done;
  if (c->diff_base && !(base = read_inputs(c, (char *const *)&c->diff_base, 1, false))) goto done;
  names_of(c->inputs, c->n_inputs, names, sizeof names);
  summary_of(target, summary, sizeof summary);
  if (!c->draw.view.title) {
    if (c->diff_base)
      snprintf(title, sizeof title, "%s against %s", names, c->diff_base);
    else
      snprintf(title, sizeof title, "%s", names);
    c->draw.view.title = title;
  }
  c->draw.view.note = summary;

  fl_output_req_t req = {
      .profile = target, .baseline = base, .opts = &c->draw, .format = c->format};
  if (!(out = fl_output_render(&req, &out_len, err, sizeof err))) say("%s", err);
  /* The output first: a CI job keeps the graph whatever the gate says. */
  if (out && write_output(c, out, out_len) == 0 &&
      (c->fail_above < 0 || gate(c, target, base) == 0))
    status = 0;
done:
  free(out);
  fl_profile_destroy(&target);
  fl_profile_destroy(&base);
  return status;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "record") == 0) return rc_record_main(argc - 1, argv + 1);
  cli_t c = {.format = "svg",
             .input_kind = FL_INPUT_AUTO,
             .max_input = FL_INPUT_LIMIT_DEFAULT,
             .fail_above = -1};
  fl_options_init(&c.draw, FL_FRONT_COMMAND);
  int status = parse_args(argc, argv, &c);
  if (status < 0) status = run(&c);
  /* The gate's statuses: 1 says that a frame grew, so any error is 2. */
  if (c.fail_above >= 0 && status != 0)
    status = EXIT_USAGE;
  else if (c.fail_above >= 0 && c.gate_failed)
    status = 1;
  fl_options_free(&c.draw);
  return status;
}
