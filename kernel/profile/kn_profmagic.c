/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "kn_profmagic.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cflame/fl_io.h"
#include "cflame/fl_output.h"
#include "kn_magic.h"
#include "kn_text.h"
#include "kn_wire.h"

/* ---- showing ---- */

/* What a graph's bundle says beside the graph (fl_view_opts_t). Its
 * text/plain, which consoles show, is the report alone. Its markdown, which
 * the classic notebook and exports show (they cannot draw the Vega-Lite
 * view), ends with a line that the SVG's script hides where it runs: where
 * the interactive view is, and what to do when a sanitizer (nbconvert's
 * sanitize_html, as nbviewer runs it; JupyterLab's for untrusted output)
 * stripped the picture above it. The classic notebook, untrusted, shows
 * neither markdown nor SVG but text/plain, which it cannot be told apart
 * from a console by: the report there says nothing of trust. */
static const char interactive_hint[] =
    "Static picture: hover, zoom and search where scripts run: a trusted notebook, JupyterLab, "
    "or %profsave NAME.svg opened in a browser. No picture above? Untrusted output is shown "
    "without it: File > Trust Notebook, or jupyter trust NOTEBOOK.ipynb.";

/* png= when a magic does not say: the kernel's setting, CFLAME_PNG=1 (or
 * true, yes) in its environment (docs/PROFILING.md). */
static bool png_by_default(void) {
  const char *e = getenv("CFLAME_PNG");
  return e && (!strcmp(e, "1") || !strcasecmp(e, "true") || !strcasecmp(e, "yes"));
}

/* Remembers a shown graph for %profsave. */
static void remember(kn_prof_t *kp, const fl_profile_t *prof, const fl_profile_t *baseline,
                     const kn_profreq_t *req, const char *root_name, const char *note,
                     json_t *bundle) {
  kn_prof_remember(kp, &(kn_prof_shown_t){.profile = prof,
                                          .baseline = baseline,
                                          .baseline_name = req->baseline,
                                          .args = req->args,
                                          .root = root_name,
                                          .note = note,
                                          .bundle = bundle});
}

/* The budget of a drawing with options o: their max_memory=, and
 * cancelled by cancel (an interrupt of the job the magic runs in,
 * kn_prof_cancel_flag, or a live graph given up: kn_live.c). */
static void draw_budget(const fl_options_t *o, const fl_cancel_flag_t *cancel, fl_budget_t *b) {
  fl_options_budget(o, b);
  b->cancel = cancel;
}

static char *graph_note(kn_prof_t *kp, const fl_profile_t *prof, bool diff,
                        const kn_profreq_t *req) {
  char *summary = kn_prof_summary(kp, prof);
  if (!diff) return summary;
  fl__buf_t note = FL__BUF_INIT;
  if (req->baseline_note)
    fl__buf_printf(&note, "%s; %s", summary, req->baseline_note);
  else if (req->baseline && !strcmp(req->baseline, KN_PROFHIST_PREV))
    fl__buf_printf(&note, "%s; against this cell's previous run", summary);
  else
    fl__buf_printf(&note, "%s; against baseline %s", summary, req->baseline ? req->baseline : "");
  free(summary);
  return fl__buf_take(&note);
}

/* The bundle of prof's graph (against baseline when not NULL: a diff) with
 * note under its title. New, or NULL with err. */
static json_t *draw_bundle(kn_prof_t *kp, const fl_profile_t *prof, const fl_profile_t *baseline,
                           const kn_profreq_t *req, const char *root_name, const char *note,
                           const fl_cancel_flag_t *cancel, char *err, size_t err_size) {
  fl_options_t draw = req->draw; /* the same options, and what the notebook adds */
  draw.view.note = note;
  draw.view.markdown_hint = interactive_hint;
  if (!fl_options_given(&req->draw, "png")) draw.view.png = png_by_default();
  fl_budget_t budget;
  draw_budget(&draw, cancel, &budget);
  fl_output_req_t r = {.profile = prof,
                       .baseline = baseline,
                       .root = root_name,
                       .opts = &draw,
                       .source = *kn_prof_source_reader(kp),
                       .budget = &budget};
  return fl_output_bundle(&r, err, err_size);
}

/* The graph of prof (against baseline when not NULL: a diff) as
 * display_data content, remembered for %profsave. New, or NULL with err. */
static json_t *show(kn_prof_t *kp, const fl_profile_t *prof, const fl_profile_t *baseline,
                    const kn_profreq_t *req, const char *root_name, char *err, size_t err_size) {
  char *note = graph_note(kp, prof, baseline != NULL, req);
  json_t *bundle =
      draw_bundle(kp, prof, baseline, req, root_name, note, kn_prof_cancel_flag(kp), err, err_size);
  if (bundle) remember(kp, prof, baseline, req, root_name, note, bundle);
  free(note);
  if (!bundle) return NULL;
  return json_pack("{s:o, s:{}}", "data", bundle, "metadata");
}

json_t *kn_prof_show_live(kn_prof_t *kp, const fl_profile_t *prof, const kn_profreq_t *req,
                          const char *root_name, const char *note, const fl_cancel_flag_t *cancel,
                          char *err, size_t err_size) {
  json_t *bundle = draw_bundle(kp, prof, NULL, req, root_name, note, cancel, err, err_size);
  return bundle ? json_pack("{s:o, s:{}}", "data", bundle, "metadata") : NULL;
}

json_t *kn_prof_show(kn_prof_t *kp, const fl_profile_t *prof, const kn_profreq_t *req,
                     const char *root_name, char *err, size_t err_size) {
  return show(kp, prof, NULL, req, root_name, err, err_size);
}

json_t *kn_prof_show_diff(kn_prof_t *kp, const fl_profile_t *target, const fl_profile_t *baseline,
                          const kn_profreq_t *req, const char *root_name, char *err,
                          size_t err_size) {
  return show(kp, target, baseline, req, root_name, err, err_size);
}

char *kn_prof_empty_message(const fl_profile_t *prof) {
  const fl_profile_info_t *info = fl_profile_info_const(prof);
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb,
                 "No samples: the run took %.3f ms of CPU (%.3f ms wall, the profiler's start "
                 "and stop included), less than the sampling interval of %g ms.\n"
                 "To see where its time goes, profile it for longer: run the work in a loop "
                 "(for (int i = 0; i < 1000; i++) ...), or sample more often with delay= "
                 "(e.g. %%%%profview delay=0.0001).\n",
                 info->cpu_seconds * 1e3, info->wall_seconds * 1e3,
                 (double)info->interval_ns / 1e6);
  return fl__buf_take(&sb);
}

/* ---- line magics without a worker ---- */

int kn_profmagic_save(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                      size_t err_size) {
  char **output = &res->output;
  kn_profreq_t req, drawn;
  bool have_drawn = false;
  const unsigned groups = KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_DIFF;
  if (kn_profreq_parse(kp, "profsave", args, groups, &req, err, err_size) < 0) return -1;
  int rc = -1;
  char *text = NULL;
  size_t text_len = 0;
  const char *path = req.positional[0];
  if (!path || req.positional[1]) {
    snprintf(err, err_size, "%%profsave needs one PATH ending in %s%s", fl_output_endings(true),
             path ? "; quote a path with spaces" : "");
    goto out;
  }
  const char *format = fl_output_format_of_path(path);
  if (!format) {
    snprintf(err, err_size, "%%profsave: cannot tell the format of '%s'; valid endings: %s", path,
             fl_output_endings(false));
    goto out;
  }
  /* What to save: the last graph shown, or else the session profile. */
  kn_prof_shown_t last;
  const bool shown = kn_prof_last_shown(kp, &last);
  const fl_profile_t *prof = shown ? last.profile : kn_prof_session(kp);
  const fl_profile_t *baseline = shown ? last.baseline : NULL;
  const char *root = shown ? last.root : "all";
  if (!shown && fl_profile_n_samples(prof) == 0) {
    snprintf(err, err_size,
             "%%profsave: there is no profile to save yet; run %%%%profview or "
             "%%%%profile first");
    goto out;
  }
  /* %profsave's own options redraw it; without any, it is saved as shown. */
  bool has_opts = req.n_set_options > 0;
  if (!has_opts) {
    /* Whatever the magic that drew it took (%%profallocs' options too). */
    const unsigned drawn_groups = KN_OPTS_PROFILER | KN_OPTS_ALLOC | KN_OPTS_KIND | groups;
    if (kn_profreq_parse(kp, "profsave", shown ? last.args : "", drawn_groups, &drawn, err,
                         err_size) < 0)
      goto out;
    have_drawn = true;
  }
  kn_profreq_t *opts = has_opts ? &req : &drawn;
  /* A diff drawn again names its baseline as it was shown. */
  if (baseline && !opts->baseline && last.baseline_name)
    opts->baseline = fl__xstrdup(last.baseline_name);
  if (baseline && !strcmp(format, "pprof")) {
    snprintf(err, err_size,
             "%%profsave: a pprof file holds one profile, and the last graph is "
             "a diff; save it as .folded (both counts on each line), or show "
             "the profile alone (%%profshow) and save that");
    goto out;
  }
  /* A diff's folded stacks are written by function unless lines are asked
   * for: the same line of two cells ("cell[3]:2", "cell[5]:2") is one
   * stack. */
  if (baseline && !strcmp(format, "folded") && !fl_options_given(&opts->draw, "lines"))
    opts->draw.tree.lines = FL_LINES_OFF;
  /* The graph as the notebook drew it: its note, and an HTML page named
   * after what it shows. */
  char *note =
      shown && last.note ? fl__xstrdup(last.note) : graph_note(NULL, prof, baseline != NULL, opts);
  opts->draw.view.note = note;
  fl__buf_t page_title = FL__BUF_INIT;
  if (!opts->draw.view.title) {
    const fl_profile_info_t *info = fl_profile_info_const(prof);
    fl__buf_printf(&page_title, "cflame %s: %s", baseline ? "diff" : "profile",
                   info->source[0] ? info->source : root);
  }
  fl_budget_t budget;
  draw_budget(&opts->draw, kn_prof_cancel_flag(kp), &budget);
  fl_output_req_t draw = {.profile = prof,
                          .baseline = baseline,
                          .root = root,
                          .opts = &opts->draw,
                          .format = format,
                          .page_title = page_title.data,
                          .source = *kn_prof_source_reader(kp),
                          .budget = &budget};
  char why[512];
  text = fl_output_render(&draw, &text_len, why, sizeof why);
  fl__buf_free(&page_title);
  if (text && !strcmp(format, "text")) {
    /* The report as the notebook prints it: the note first. */
    fl__buf_t t = FL__BUF_INIT;
    fl__buf_printf(&t, "%s\n%s", note, text);
    free(text);
    text_len = t.len;
    text = fl__buf_take(&t);
  }
  free(note);
  /* Whole or not at all, and only a regular file: a FIFO or a device as the
   * target would make the kernel wait on it or write into it. */
  if (!text || fl_write_file(path, text, text_len, false, why, sizeof why) < 0) {
    snprintf(err, err_size, "%%profsave: %s", why);
    goto out;
  }
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb, "Saved %s (%zu bytes)\n", path, text_len);
  *output = fl__buf_take(&sb);
  rc = 0;
out:
  free(text);
  kn_profreq_free(&req);
  if (have_drawn) kn_profreq_free(&drawn);
  return rc;
}

/* ---- %profload ---- */

static bool valid_baseline_name(const char *name) {
  if (!*name) return false;
  for (const char *p = name; *p; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.')) return false;
  return true;
}

int kn_profmagic_load(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                      size_t err_size) {
  char **output = &res->output;
  kn_opts_t o;
  if (kn_profreq_words("profload", args, KN_OPTS_LOAD, &o, err, err_size) < 0) return -1;
  int rc = -1;
  fl_profile_t *p = NULL;
  fl__buf_t src = FL__BUF_INIT;
  const kn_optval_t *v = kn_opts_get(&o, "as");
  const char *name = v->set ? v->s : NULL;
  const bool per_input = kn_opts_get(&o, "per_input")->b;
  const char *const *paths = (const char *const *)o.positional;
  const size_t n_paths = o.n_positional;
  /* The kernel reads no standard input ("-" is a file's name), and files
   * as the cflame command does: regular ones, up to the limit. */
  fl_read_opts_t read;
  fl_budget_t budget; /* what reading the files may take: max_memory= */
  fl_budget_init(&budget, 0);
  budget.raise_with = "max_memory=SIZE (such as %profload PATH max_memory=8G)";
  budget.cancel = kn_prof_cancel_flag(kp); /* an interrupt (kn_job.h) */
  fl_read_opts_init(&read);
  read.stdin_dash = false;
  read.budget = &budget;
  read.raise_with = "max_input_size=SIZE (such as %profload PATH max_input_size=4G)";
  if (name && !valid_baseline_name(name)) {
    snprintf(err, err_size,
             "%%profload: as=%s: a baseline name is letters, digits, '_', '-' and '.'", name);
    goto out;
  }
  if ((v = kn_opts_get(&o, "max_input_size"))->set) {
    char why[200];
    if (fl_input_limit_parse(v->s, &read.max_bytes, why, sizeof why) < 0) {
      snprintf(err, err_size, "%%profload: max_input_size=%s: %s", v->s, why);
      goto out;
    }
  }
  /* one of the row's choices, checked when the words were parsed */
  if ((v = kn_opts_get(&o, "input_format"))->set) fl_input_kind_parse(v->s, &read.kind);
  /* checked when the words were parsed (the option table's check_size) */
  if ((v = kn_opts_get(&o, "max_memory"))->set &&
      fl_input_limit_parse(v->s, &budget.max_bytes, NULL, 0) < 0)
    goto out;
  if (!n_paths) {
    snprintf(err, err_size,
             "%%profload needs a PATH: folded stacks (flamegraph.pl, inferno, %%profsave "
             "x.folded), the text of perf script, or a pprof profile (Go's runtime/pprof, "
             "%%profsave x.pb.gz); %%profload PATH [PATH...] [as=NAME] [input_format=KIND] "
             "[per_input=true] [max_input_size=SIZE] [max_memory=SIZE]");
    goto out;
  }
  p = fl_profile_new(FL_PROFILE_CPU);
  const char *kind_name = NULL;
  for (size_t i = 0; i < n_paths; i++) {
    fl_io_error_t e;
    fl_input_kind_t kind;
    read.root = per_input ? paths[i] : NULL;
    if (fl_read_profile_file_opts(p, paths[i], &read, &kind, &e) < 0) {
      if (e.line)
        snprintf(err, err_size, "%s:%zu: %s", e.file, e.line, e.message);
      else
        snprintf(err, err_size, "%s: %s", e.file, e.message);
      goto out;
    }
    const char *base = strrchr(paths[i], '/');
    fl__buf_printf(&src, "%s%s", i ? ", " : "", base ? base + 1 : paths[i]);
    kind_name = fl_input_kind_name(kind);
  }
  /* Cancelled (an interrupt): nothing read is kept. */
  if (kn_prof_cancelled(kp)) {
    snprintf(err, err_size, "%%profload: interrupted; nothing was loaded");
    goto out;
  }
  fl_profile_info_t *info = fl_profile_info(p);
  snprintf(info->source, sizeof info->source, "%s", src.data);
  /* A profile that says when it was taken (pprof's time_nanos) keeps it:
   * saved again, it is the same profile. */
  if (!info->taken_unix) info->taken_unix = (int64_t)time(NULL);
  fl__buf_t sb = FL__BUF_INIT;
  if (fl_kind(info->kind)->allocs)
    fl__buf_printf(&sb, "Loaded an allocation profile, %llu %s in %llu stacks (%s) from %s",
                   (unsigned long long)info->total_weight, fl_kind(info->kind)->many,
                   (unsigned long long)fl_profile_n_stacks(p),
                   n_paths > 1 ? "several inputs" : kind_name, info->source);
  else
    fl__buf_printf(&sb, "Loaded %llu samples in %llu stacks (%s%s) from %s",
                   (unsigned long long)info->total_weight,
                   (unsigned long long)fl_profile_n_stacks(p),
                   n_paths > 1 ? "several inputs" : kind_name,
                   info->interval_ns ? ", interval read from the file" : "", info->source);
  char mixed[160];
  fl_mixed_intervals_note(info, mixed, sizeof mixed);
  if (mixed[0]) fl__buf_printf(&sb, " (%s)", mixed);
  if (name) {
    bool replaced = kn_prof_baseline(kp, name) != NULL;
    kn_prof_set_baseline(kp, name, p);
    fl__buf_printf(&sb, " as baseline %s%s; compare with %%profdiffview %s.\n", name,
                   replaced ? " (replacing the one of that name)" : "", name);
  } else {
    uint64_t before = fl_profile_info_const(kn_prof_session(kp))->total_weight;
    kn_prof_session_replace(kp, p);
    p = NULL;
    fl__buf_printf(&sb, " into the session profile");
    if (before)
      fl__buf_printf(&sb, " (it replaces the %llu samples there)", (unsigned long long)before);
    fl__buf_puts(&sb, "; show it with %profshow or %profprint.\n");
  }
  char *kinds =
      fl_output_kinds_note(p ? p : kn_prof_session(kp), FL_TREE_KIND_MAIN, FL_FRONT_NOTEBOOK);
  if (kinds) fl__buf_printf(&sb, "Its kinds: %s.\n", kinds);
  free(kinds);
  *output = fl__buf_take(&sb);
  rc = 0;
out:
  fl_profile_destroy(&p);
  fl__buf_free(&src);
  kn_opts_free(&o);
  return rc;
}

/* ---- %profdiffview NAME on the session profile ---- */

/* Splits "NAME rest" at the first blank. *name is new, or NULL when the
 * first word is missing or is an option. */
static const char *split_name(const char *args, char **name) {
  while (isspace((unsigned char)*args)) args++;
  size_t len = strcspn(args, " \t\n");
  *name = len && !memchr(args, '=', len) ? fl__xstrndup(args, len) : NULL;
  return args + len;
}

bool kn_profdiff_has_statement(const char *args) {
  char *name, *opts, *stmt;
  const char *rest = split_name(args, &name);
  if (!name) return true; /* the run path reports the missing NAME */
  kn_profreq_split_statement(rest, KN_OPTS_PROFILER | KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_DIFF,
                             &opts, &stmt);
  bool has = stmt[strspn(stmt, " \t\r\n")] != '\0';
  free(name);
  free(opts);
  free(stmt);
  return has;
}

int kn_profmagic_diff_session(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                              size_t err_size) {
  char *name;
  const char *rest = split_name(args, &name);
  const fl_profile_t *base = name ? kn_prof_baseline(kp, name) : NULL;
  if (!base) {
    char *names = kn_prof_baseline_names(kp);
    if (name)
      snprintf(err, err_size, "%%profdiffview: no baseline named '%s'; baselines: %s", name, names);
    else
      snprintf(err, err_size, "%%profdiffview needs a baseline NAME first; baselines: %s", names);
    free(names);
    free(name);
    return -1;
  }
  kn_profreq_t req;
  if (kn_profreq_parse(kp, "profdiffview", rest, KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_DIFF, &req,
                       err, err_size) < 0) {
    free(name);
    return -1;
  }
  req.baseline = name;
  const fl_profile_t *session = kn_prof_session(kp);
  if (fl_profile_n_samples(session) == 0)
    snprintf(err, err_size,
             "%%profdiffview %s: the session profile is empty; give a statement to "
             "profile (%%profdiffview %s work();), or fill the session profile with "
             "%%%%profile or %%profload",
             name, name);
  else
    res->display = kn_prof_show_diff(kp, session, base, &req, "all", err, err_size);
  kn_profreq_free(&req);
  return res->display ? 0 : -1;
}

int kn_profmagic_baselines(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                           size_t err_size) {
  res->output = kn_prof_baseline_list(kp);
  return 0;
}

int kn_profmagic_clear(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                       size_t err_size) {
  if (*args) {
    snprintf(err, err_size, "%%profclear takes no arguments");
    return -1;
  }
  kn_prof_session_clear(kp);
  return 0;
}

int kn_profmagic_init(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                      size_t err_size) {
  kn_profreq_t req;
  if (kn_profreq_parse(kp, "profinit", args, KN_OPTS_SAMPLING, &req, err, err_size) < 0) return -1;
  if (req.positional[0]) {
    snprintf(err, err_size,
             "%%profinit takes n= (buffer size in 8-byte words) and delay= (sampling "
             "interval in seconds)");
    kn_profreq_free(&req);
    return -1;
  }
  kn_prof_set_sampling(kp, req.n_words, req.delay_ns);
  kn_profreq_free(&req);
  fl__buf_t sb = FL__BUF_INIT;
  kn_prof_settings_t now = kn_prof_settings(kp);
  fl__buf_printf(&sb, "n=%llu delay=%g\n", (unsigned long long)now.n_words,
                 (double)now.delay_ns / 1e9);
  res->output = fl__buf_take(&sb);
  return 0;
}

int kn_profmagic_size(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                      size_t err_size) {
  char **words;
  int n = kn_words_split(args, &words, err, err_size);
  if (n < 0) return -1;
  if (n != 0 && n != 2) {
    kn_words_free(words);
    snprintf(err, err_size,
             "%%profsize takes a width and a height in pixels: %%profsize 800 "
             "400 (height 0: sized to the depth)");
    return -1;
  }
  if (n == 2) {
    char *e1, *e2;
    long w = strtol(words[0], &e1, 10), h = strtol(words[1], &e2, 10);
    if (*e1 || *e2 || w < 100 || w > 100000 || h < 0 || h > 100000) {
      snprintf(err, err_size,
               "%%profsize %s %s: the width must be 100..100000 and the height "
               "0..100000 pixels (0: sized to the depth)",
               words[0], words[1]);
      kn_words_free(words);
      return -1;
    }
    kn_prof_set_size(kp, (int)w, (int)h);
  }
  kn_words_free(words);
  kn_prof_settings_t now = kn_prof_settings(kp);
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb, "width=%d height=%d%s\n", now.width, now.height,
                 now.height ? "" : " (sized to the depth)");
  res->output = fl__buf_take(&sb);
  return 0;
}

/* %profshow (show) and %profprint: the session profile as a graph or a
 * text report. */
static int show_session(kn_prof_t *kp, const char *name, bool show, const char *args,
                        kn_magic_result_t *res, char *err, size_t err_size) {
  kn_profreq_t req;
  if (kn_profreq_parse(kp, name, args, KN_OPTS_TREE | (show ? KN_OPTS_VIEW : KN_OPTS_PRINT), &req,
                       err, err_size) < 0)
    return -1;
  int rc = -1;
  const fl_profile_t *session = kn_prof_session(kp);
  if (req.positional[0]) {
    snprintf(err, err_size, "%%%s: unexpected '%s'; options are key=value words", name,
             req.positional[0]);
    goto out;
  }
  if (fl_profile_n_samples(session) == 0) {
    res->output = fl__xstrdup(
        "The session profile is empty: profile a cell with %%profile or "
        "%%profview first.\n");
    rc = 0;
    goto out;
  }
  if (show) {
    res->display = kn_prof_show(kp, session, &req, "all", err, err_size);
    rc = res->display ? 0 : -1;
    goto out;
  }
  /* The flat report lists every function: nothing is too narrow to count,
   * unless the user said so. */
  if (req.draw.flat && !fl_options_given(&req.draw, "minwidth")) req.draw.tree.minwidth = 0;
  fl_budget_t budget; /* max_memory= */
  draw_budget(&req.draw, kn_prof_cancel_flag(kp), &budget);
  req.draw.tree.budget = &budget;
  fl_tree_t *tree = fl_tree_build(session, &req.draw.tree, "all", err, err_size);
  if (!tree) goto out;
  if (fl_budget_charge(&budget, fl_text_bytes(tree, &req.draw.text), 0) < 0) {
    fl_budget_message(&budget, "printing the report", err, err_size);
    fl_tree_destroy(&tree);
    goto out;
  }
  char *summary = kn_prof_summary(kp, session);
  char *empty = fl_output_empty_note(tree, &req.draw); /* a filter that left nothing */
  char *report =
      req.draw.flat ? fl_text_flat(tree, &req.draw.text) : fl_text_tree(tree, &req.draw.text);
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb, "%s\n%s%s%s", summary, empty ? empty : "", empty ? "\n" : "", report);
  free(summary);
  free(empty);
  free(report);
  fl_tree_destroy(&tree);
  res->output = fl__buf_take(&sb);
  rc = 0;
out:
  kn_profreq_free(&req);
  return rc;
}

int kn_profmagic_history(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                         size_t err_size) {
  kn_profreq_t req;
  if (kn_profreq_parse(kp, "profhistory", args, KN_OPTS_TREE | KN_OPTS_VIEW, &req, err, err_size) <
      0)
    return -1;
  int rc = -1;
  const char *which = req.positional[0];
  if (!which) {
    res->output = kn_profhist_list(kn_prof_history(kp));
    rc = 0;
    goto out;
  }
  char *end;
  long n = strtol(which, &end, 10);
  const fl_profile_t *run = *end || n <= 0 ? NULL : kn_profhist_run(kn_prof_history(kp), (int)n);
  if (!run) {
    snprintf(err, err_size,
             "%%profhistory: '%s' is not a run kept; %%profhistory lists them by number, and "
             "%%profhistory N [opts] shows run N",
             which);
    goto out;
  }
  const char *source = fl_profile_info_const(run)->source;
  res->display = kn_prof_show(kp, run, &req, source[0] ? source : "all", err, err_size);
  rc = res->display ? 0 : -1;
out:
  kn_profreq_free(&req);
  return rc;
}

int kn_profmagic_show(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                      size_t err_size) {
  return show_session(kp, "profshow", true, args, res, err, err_size);
}

int kn_profmagic_print(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                       size_t err_size) {
  return show_session(kp, "profprint", false, args, res, err, err_size);
}
