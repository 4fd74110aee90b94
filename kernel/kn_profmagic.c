#define _GNU_SOURCE
#include "kn_profmagic.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cflame/fl_io.h"
#include "kn_magic.h"
#include "kn_strbuf.h"
#include "kn_wire.h"

/* Every option of every group; each magic takes the groups it names. */
typedef struct group_spec {
  unsigned group;
  kn_optspec_t spec;
} group_spec_t;

static const group_spec_t all_options[] = {
    {KN_OPTS_PROFILER, {"delay", KN_OPT_DOUBLE, NULL, 1e-6, 10, "sampling interval in seconds (default 0.001)"}},
    {KN_OPTS_PROFILER, {"n", KN_OPT_INT, NULL, 1000, 1e9, "sample buffer size in frames (default 1000000)"}},
    {KN_OPTS_TREE | KN_OPTS_PROFILER, {"threads", KN_OPT_LIST, NULL, 1, 0, "thread numbers to show (1 = the cell's main thread), or all (default all)"}},
    {KN_OPTS_TREE, {"C", KN_OPT_BOOL, NULL, 1, 0, "show frames of system libraries (default false)"}},
    {KN_OPTS_TREE, {"combine", KN_OPT_BOOL, NULL, 1, 0, "one frame per source line, not per instruction (default true)"}},
    {KN_OPTS_TREE, {"lines", KN_OPT_BOOL, NULL, 1, 0, "false: one frame per function (default true)"}},
    {KN_OPTS_TREE, {"recur", KN_OPT_ENUM, "off|flat", 1, 0, "flat: draw self-recursion as a loop (default off)"}},
    {KN_OPTS_TREE, {"pruned", KN_OPT_LIST, NULL, 1, 0, "functions whose subtrees are cut (default none)"}},
    {KN_OPTS_TREE, {"filter", KN_OPT_STRING, NULL, 1, 0, "keep stacks with a frame matching this text or /regex/ (default: all)"}},
    {KN_OPTS_TREE, {"minwidth", KN_OPT_DOUBLE, NULL, 0, 1, "hide frames narrower than this share (default 0.001)"}},
    {KN_OPTS_VIEW, {"width", KN_OPT_INT, NULL, 100, 100000, "width in pixels (default 800)"}},
    {KN_OPTS_VIEW, {"height", KN_OPT_INT, NULL, 50, 100000, "height in pixels (default: sized to the depth)"}},
    {KN_OPTS_VIEW, {"title", KN_OPT_STRING, NULL, 1, 0, "title above the graph (default none)"}},
    {KN_OPTS_VIEW, {"icicle", KN_OPT_BOOL, NULL, 1, 0, "root at the top (default false)"}},
    {KN_OPTS_VIEW, {"theme", KN_OPT_ENUM, "light|dark", 1, 0, "colour theme (default light)"}},
    {KN_OPTS_PRINT, {"format", KN_OPT_ENUM, "tree|flat", 1, 0, "tree (default) or flat"}},
    {KN_OPTS_PRINT, {"maxdepth", KN_OPT_INT, NULL, 1, 10000, "deepest level printed (default: all)"}},
    {KN_OPTS_PRINT, {"mincount", KN_OPT_INT, NULL, 0, 1e15, "frames with fewer samples are not printed (default 0)"}},
    {KN_OPTS_PRINT, {"cols", KN_OPT_INT, NULL, 20, 10000, "line width (default 100)"}},
    {KN_OPTS_DIFF, {"negate", KN_OPT_BOOL, NULL, 1, 0, "draw the baseline's layout, coloured by baseline - target (default false)"}},
    {KN_OPTS_DIFF, {"normalize", KN_OPT_BOOL, NULL, 1, 0, "scale the baseline to the target's total first (default false)"}},
    {KN_OPTS_DIFF, {"delta", KN_OPT_ENUM, "total|self", 1, 0, "inclusive change per frame, or self change (default total)"}},
    {KN_OPTS_DIFF, {"noise", KN_OPT_DOUBLE, NULL, 0, 1000, "z-score under which a change is noise (default 2; 0: off)"}},
    {KN_OPTS_DIFF, {"root_prefix", KN_OPT_STRING, NULL, 1, 0, "outermost frames (programs) whose names start with this are compared as one (default: by name)"}},
    {KN_OPTS_ALLOC, {"sample_rate", KN_OPT_DOUBLE, NULL, 1e-6, 1, "share of allocations recorded (default 0.1; 1: every one, exactly)"}},
    {KN_OPTS_ALLOC, {"weight", KN_OPT_ENUM, "bytes|count", 1, 0, "widths by bytes (default) or by allocation count"}},
    {KN_OPTS_ALLOC, {"live", KN_OPT_BOOL, NULL, 1, 0, "only what is still allocated when the cell ends (default false)"}},
    {KN_OPTS_KIND, {"allocs", KN_OPT_BOOL, NULL, 1, 0, "profile allocations instead of CPU time (default: as the baseline)"}},
    {KN_OPTS_LOAD, {"as", KN_OPT_STRING, NULL, 1, 0, "keep it as baseline NAME instead of the session profile"}},
    {KN_OPTS_LOAD, {"per_input", KN_OPT_BOOL, NULL, 1, 0, "each file under a root frame of its own (default false)"}},
    {KN_OPTS_LOAD, {"max_input_size", KN_OPT_STRING, NULL, 1, 0, "the most a file may hold, and unzip to: bytes, or with K, M, G, T (default 1G)"}},
};
#define N_OPTIONS (sizeof all_options / sizeof all_options[0])

char *kn_profmagic_options_help(unsigned groups) {
  static const char *const placeholder[] = {
      [KN_OPT_BOOL] = "true|false", [KN_OPT_INT] = "N",       [KN_OPT_DOUBLE] = "X",
      [KN_OPT_STRING] = "TEXT",     [KN_OPT_ENUM] = NULL,      [KN_OPT_LIST] = "A,B",
  };
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (size_t i = 0; i < N_OPTIONS; i++) {
    const kn_optspec_t *o = &all_options[i].spec;
    if (!(all_options[i].group & groups)) continue;
    char word[64];
    snprintf(word, sizeof word, "%s=%s", o->key, o->type == KN_OPT_ENUM ? o->choices : placeholder[o->type]);
    kn_strbuf_printf(&sb, "  %-20s %s\n", word, o->help);
  }
  if (sb.len) sb.data[--sb.len] = '\0';
  return kn_strbuf_steal(&sb);
}

const kn_optspec_t *kn_profmagic_option(unsigned groups, size_t i) {
  for (size_t j = 0; j < N_OPTIONS; j++)
    if ((all_options[j].group & groups) && i-- == 0) return &all_options[j].spec;
  return NULL;
}

static size_t specs_for(unsigned groups, kn_optspec_t *out) {
  size_t n = 0;
  for (size_t i = 0; i < N_OPTIONS; i++)
    if (all_options[i].group & groups) out[n++] = all_options[i].spec;
  return n;
}

/* Whether a leading word of a statement-form magic is an option: KEY=VALUE
 * with KEY an identifier, and nothing of a C statement about it (no ';', no
 * call). Unknown keys count as options, so that a misspelt one is reported
 * as such rather than compiled as C. */
static bool is_option_word(const char *w, size_t len, unsigned groups) {
  const char *eq = memchr(w, '=', len);
  if (!eq || eq == w || w[len - 1] == ';' || memchr(w, '(', len) || eq[1] == '=') return false;
  for (const char *p = w; p < eq; p++)
    if (!(isalnum((unsigned char)*p) || *p == '_') || (p == w && isdigit((unsigned char)*p)))
      return false;
  (void)groups;
  return true;
}

void kn_profreq_split_statement(const char *args, unsigned groups, char **opts, char **stmt) {
  const char *p = args, *end_opts = args;
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    const char *w = p;
    bool quoted = false;
    while (*p && (quoted || !isspace((unsigned char)*p))) {
      if (*p == '"') quoted = !quoted;
      if (*p == '\\' && p[1]) p++;
      p++;
    }
    if (p == w || !is_option_word(w, (size_t)(p - w), groups)) break;
    end_opts = p;
  }
  *opts = fl__xstrndup(args, (size_t)(end_opts - args));
  const char *s = end_opts;
  while (isspace((unsigned char)*s)) s++;
  *stmt = fl__xstrdup(s);
}

static char **copy_list(const kn_optval_t *v) {
  char **out = fl__xcalloc(v->n_list + 1, sizeof *out);
  for (size_t i = 0; i < v->n_list; i++) out[i] = fl__xstrdup(v->list[i]);
  return out;
}

int kn_profreq_parse(const kn_prof_t *prof, const char *magic, const char *args, unsigned groups,
                     kn_profreq_t *req, char *err, size_t err_size) {
  memset(req, 0, sizeof *req);
  kn_prof_settings_t settings = kn_prof_settings(prof);
  req->delay_ns = settings.delay_ns;
  req->n_words = settings.n_words;
  fl_tree_opts_init(&req->tree);
  fl_view_opts_init(&req->view);
  fl_text_opts_init(&req->text);
  fl_diff_opts_init(&req->diff);
  req->view.width = settings.width;
  req->view.height = settings.height;
  req->sample_rate = 0.1;

  req->args = fl__xstrdup(args);

  kn_optspec_t specs[N_OPTIONS];
  size_t n = specs_for(groups, specs);
  kn_opts_t o;
  if (kn_opts_parse(magic, args, specs, n, &o, err, err_size) < 0) return -1;
  const kn_optval_t *v;
  for (size_t i = 0; i < o.n_vals; i++) req->n_set_options += o.vals[i].set;
  if ((v = kn_opts_get(&o, "delay")) && v->set) {
    req->delay_ns = (uint64_t)llround(v->d * 1e9);
    req->delay_set = true;
  }
  if ((v = kn_opts_get(&o, "n")) && v->set) {
    req->n_words = (uint64_t)v->i;
    req->n_set = true;
  }
  if ((v = kn_opts_get(&o, "sample_rate")) && v->set) {
    req->sample_rate = v->d;
    req->sample_rate_set = true;
  }
  if ((v = kn_opts_get(&o, "weight")) && v->set) {
    req->weight_count = !strcmp(v->s, "count");
    req->weight_set = true;
  }
  if ((v = kn_opts_get(&o, "live")) && v->set) {
    req->live = v->b;
    req->live_set = true;
  }
  if ((v = kn_opts_get(&o, "allocs")) && v->set) {
    req->allocs = v->b;
    req->allocs_given = true;
  }
  if ((v = kn_opts_get(&o, "threads")) && v->set) {
    bool all = false;
    req->threads = fl__xcalloc(v->n_list + 1, sizeof *req->threads);
    for (size_t i = 0; i < v->n_list; i++) {
      if (!strcmp(v->list[i], "all")) {
        all = true;
        continue;
      }
      char *end;
      long t = strtol(v->list[i], &end, 10);
      if (*end || t < 1 || t > 1000000) {
        snprintf(err, err_size,
                 "%%%s: threads=%s is not valid; give thread numbers (1 = the cell's main "
                 "thread, 2, 3, ... in the order threads were created) or all",
                 magic, v->list[i]);
        kn_opts_free(&o);
        kn_profreq_free(req);
        return -1;
      }
      req->threads[req->tree.n_threads++] = (int)t;
    }
    if (!all) req->tree.threads = req->threads;
    else req->tree.n_threads = 0;
  }
  if ((v = kn_opts_get(&o, "C")) && v->set) req->tree.C = v->b;
  if ((v = kn_opts_get(&o, "combine")) && v->set) req->tree.combine = v->b;
  if ((v = kn_opts_get(&o, "lines")) && v->set) {
    req->tree.lines = v->b;
    req->lines_set = true;
  }
  if ((v = kn_opts_get(&o, "recur")) && v->set)
    req->tree.recur = !strcmp(v->s, "flat") ? FL_RECUR_FLAT : FL_RECUR_OFF;
  if ((v = kn_opts_get(&o, "pruned")) && v->set) {
    req->pruned = copy_list(v);
    req->tree.pruned = (const char *const *)req->pruned;
  }
  if ((v = kn_opts_get(&o, "filter")) && v->set) {
    size_t len = strlen(v->s);
    if (len >= 2 && v->s[0] == '/' && v->s[len - 1] == '/') {
      req->filter = fl__xstrndup(v->s + 1, len - 2);
      req->tree.filter_is_regex = true;
    } else {
      req->filter = fl__xstrdup(v->s);
    }
    req->tree.filter = req->filter;
  }
  if ((v = kn_opts_get(&o, "minwidth")) && v->set) {
    req->tree.minwidth = v->d;
    req->minwidth_set = true;
  }
  if ((v = kn_opts_get(&o, "width")) && v->set) req->view.width = (int)v->i;
  if ((v = kn_opts_get(&o, "height")) && v->set) req->view.height = (int)v->i;
  if ((v = kn_opts_get(&o, "title")) && v->set) {
    req->title = fl__xstrdup(v->s);
    req->view.title = req->title;
  }
  if ((v = kn_opts_get(&o, "icicle")) && v->set) req->view.icicle = v->b;
  if ((v = kn_opts_get(&o, "theme")) && v->set) req->view.dark = !strcmp(v->s, "dark");
  if ((v = kn_opts_get(&o, "format")) && v->set) req->flat = !strcmp(v->s, "flat");
  if ((v = kn_opts_get(&o, "maxdepth")) && v->set) req->text.maxdepth = (int)v->i;
  if ((v = kn_opts_get(&o, "mincount")) && v->set) req->text.mincount = (uint64_t)v->i;
  if ((v = kn_opts_get(&o, "cols")) && v->set) req->text.cols = (int)v->i;
  if ((v = kn_opts_get(&o, "negate")) && v->set) req->diff.negate = v->b;
  if ((v = kn_opts_get(&o, "normalize")) && v->set) req->diff.normalize = v->b;
  if ((v = kn_opts_get(&o, "delta")) && v->set)
    req->diff.delta = !strcmp(v->s, "self") ? FL_DELTA_SELF : FL_DELTA_TOTAL;
  if ((v = kn_opts_get(&o, "noise")) && v->set) req->diff.noise = v->d;
  if ((v = kn_opts_get(&o, "root_prefix")) && v->set) {
    req->root_prefix = fl__xstrdup(v->s);
    req->diff.root_prefix = req->root_prefix;
  }

  req->positional = fl__xcalloc(o.n_positional + 1, sizeof *req->positional);
  for (size_t i = 0; i < o.n_positional; i++) req->positional[i] = fl__xstrdup(o.positional[i]);
  kn_opts_free(&o);
  return 0;
}

void kn_profreq_free(kn_profreq_t *req) {
  if (req->pruned) kn_words_free(req->pruned);
  if (req->positional) kn_words_free(req->positional);
  free(req->filter);
  free(req->threads);
  free(req->title);
  free(req->root_prefix);
  free(req->baseline);
  free(req->args);
  memset(req, 0, sizeof *req);
}

/* ---- showing ---- */

/* What a graph's bundle says beside the graph (fl_view_opts_t): its text,
 * which consoles and untrusted notebooks show, first says why a notebook
 * shows it and how to trust the notebook; its markdown, which the classic
 * notebook and exports show (they cannot draw the Vega-Lite view), ends by
 * saying where the interactive view is. One line each. */
static const char untrusted_lead[] =
    "(An untrusted notebook shows this text, not the flame graph: File > Trust Notebook, or "
    "jupyter trust NOTEBOOK.ipynb.)";
static const char interactive_hint[] =
    "Interactive view (zoom, search): open the notebook in JupyterLab, or %profsave NAME.html "
    "for a page of its own.";

/* Remembers a shown graph for %profsave. */
static void remember(kn_prof_t *kp, const fl_profile_t *prof, const fl_profile_t *baseline,
                     const kn_profreq_t *req, const char *root_name, json_t *bundle) {
  kn_prof_remember(kp, &(kn_prof_shown_t){.profile = prof,
                                          .baseline = baseline,
                                          .baseline_name = req->baseline,
                                          .args = req->args,
                                          .root = root_name,
                                          .bundle = bundle});
}

json_t *kn_prof_show(kn_prof_t *kp, const fl_profile_t *prof, const kn_profreq_t *req,
                     const char *root_name, char *err, size_t err_size) {
  fl_tree_t *tree = fl_tree_build(prof, &req->tree, root_name, err, err_size);
  if (!tree) return NULL;
  char *summary = kn_prof_summary(prof);
  fl_view_opts_t view = req->view;
  view.note = summary; /* under the title, and text/plain's summary line */
  view.text_lead = untrusted_lead;
  view.markdown_hint = interactive_hint;
  json_t *bundle = fl_bundle(tree, &view, err, err_size);
  if (!bundle) {
    fl_tree_destroy(&tree);
    free(summary);
    return NULL;
  }
  remember(kp, prof, NULL, req, root_name, bundle);
  fl_tree_destroy(&tree);
  free(summary);
  return json_pack("{s:o, s:{}}", "data", bundle, "metadata");
}

json_t *kn_prof_show_diff(kn_prof_t *kp, const fl_profile_t *target, const fl_profile_t *baseline,
                          const kn_profreq_t *req, const char *root_name, char *err,
                          size_t err_size) {
  fl_diff_t *d = fl_diff_build(target, baseline, &req->tree, &req->diff, root_name, err, err_size);
  if (!d) return NULL;
  char *summary = kn_prof_summary(target);
  kn_strbuf_t note = KN_STRBUF_INIT;
  kn_strbuf_printf(&note, "%s; against baseline %s", summary, req->baseline ? req->baseline : "");
  fl_view_opts_t view = req->view;
  view.note = note.data;
  view.text_lead = untrusted_lead;
  view.markdown_hint = interactive_hint;
  json_t *bundle = fl_diff_bundle(d, &view, err, err_size);
  if (bundle) remember(kp, target, baseline, req, root_name, bundle);
  fl_diff_destroy(&d);
  free(summary);
  kn_strbuf_free(&note);
  return bundle ? json_pack("{s:o, s:{}}", "data", bundle, "metadata") : NULL;
}

char *kn_prof_empty_message(const fl_profile_t *prof) {
  const fl_profile_info_t *info = fl_profile_info_const(prof);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_strbuf_printf(&sb,
                   "No samples: the run took %.3f ms of CPU (%.3f ms wall, the profiler's start "
                   "and stop included), less than the sampling interval of %g ms.\n"
                   "To see where its time goes, profile it for longer: run the work in a loop "
                   "(for (int i = 0; i < 1000; i++) ...), or sample more often with delay= "
                   "(e.g. %%%%profview delay=0.0001).\n",
                   info->cpu_seconds * 1e3, info->wall_seconds * 1e3,
                   (double)info->interval_ns / 1e6);
  return kn_strbuf_steal(&sb);
}

/* ---- line magics without a worker ---- */

/* ---- folded stacks of the last graph ---- */

typedef struct folded_line {
  char *stack; /* borrowed from a folded text */
  uint64_t count[2]; /* baseline, target */
} folded_line_t;

/* Splits folded text (from fl_folded) in place into (stack, count) pairs,
 * adding them to *lines with the count in slot `which`. */
static void add_folded(char *text, int which, folded_line_t **lines, size_t *n, size_t *cap) {
  for (char *line = text; *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *sp = strrchr(line, ' ');
    if (sp) {
      *sp = '\0';
      if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        *lines = fl__xrealloc(*lines, *cap, sizeof **lines);
      }
      (*lines)[*n] = (folded_line_t){.stack = line};
      (*lines)[(*n)++].count[which] = strtoull(sp + 1, NULL, 10);
    }
    if (!nl) break;
    line = nl + 1;
  }
}

static int cmp_folded(const void *a, const void *b) {
  return strcmp(((const folded_line_t *)a)->stack, ((const folded_line_t *)b)->stack);
}

/* The folded stacks of prof (against baseline, when not NULL), drawn with
 * req's tree options and root. A
 * diff is written as difffolded.pl writes one, "stack BASE TARGET" per
 * line (flamegraph.pl draws such a file as a differential flame graph),
 * the baseline scaled to the target's total first under normalize=true.
 * New string, or NULL with err. */
static char *folded_text(const fl_profile_t *prof, const fl_profile_t *baseline, const char *root,
                         const kn_profreq_t *req, char *err, size_t err_size) {
  fl_tree_t *t = fl_tree_build(prof, &req->tree, root, err, err_size);
  if (!t) return NULL;
  char *target = fl_folded(t);
  fl_tree_destroy(&t);
  if (!baseline) return target;
  t = fl_tree_build(baseline, &req->tree, root, err, err_size);
  if (!t) {
    free(target);
    return NULL;
  }
  char *base = fl_folded(t);
  fl_tree_destroy(&t);
  folded_line_t *lines = NULL;
  size_t n = 0, cap = 0;
  add_folded(base, 0, &lines, &n, &cap);
  add_folded(target, 1, &lines, &n, &cap);
  if (n) qsort(lines, n, sizeof *lines, cmp_folded);
  double total[2] = {0, 0};
  for (size_t i = 0; i < n; i++) {
    total[0] += (double)lines[i].count[0];
    total[1] += (double)lines[i].count[1];
  }
  double scale = req->diff.normalize && total[0] > 0 ? total[1] / total[0] : 1.0;
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (size_t i = 0; i < n;) {
    /* A stack in both profiles: one line with both counts. */
    uint64_t c[2] = {lines[i].count[0], lines[i].count[1]};
    size_t j = i + 1;
    for (; j < n && !strcmp(lines[j].stack, lines[i].stack); j++) {
      c[0] += lines[j].count[0];
      c[1] += lines[j].count[1];
    }
    kn_strbuf_printf(&sb, "%s %llu %llu\n", lines[i].stack,
                     (unsigned long long)llround((double)c[0] * scale), (unsigned long long)c[1]);
    i = j;
  }
  free(lines);
  free(base);
  free(target);
  return kn_strbuf_steal(&sb);
}

/* The pprof file of prof, drawn with req's tree options and root (every
 * stack, unless minwidth was asked). New buffer of *len bytes, or NULL
 * with err. */
static char *pprof_file(const fl_profile_t *prof, const char *root, kn_profreq_t *req,
                        size_t *len, char *err, size_t err_size) {
  if (!req->minwidth_set) req->tree.minwidth = 0;
  fl_tree_t *t = fl_tree_build(prof, &req->tree, root, err, err_size);
  if (!t) return NULL;
  char *out = fl_pprof(t, len);
  fl_tree_destroy(&t);
  return out;
}

int kn_profmagic_save(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                      size_t err_size) {
  char **output = &res->output;
  kn_profreq_t req, drawn;
  bool have_drawn = false;
  const unsigned groups = KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_DIFF;
  if (kn_profreq_parse(kp, "profsave", args, groups, &req, err, err_size) < 0) return -1;
  int rc = -1;
  json_t *bundle = NULL;
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
    snprintf(err, err_size, "%%profsave: cannot tell the format of '%s'; valid endings: %s",
             path, fl_output_endings(false));
    goto out;
  }
  /* What to save: the last graph shown, or else the session profile. */
  kn_prof_shown_t last;
  const bool shown = kn_prof_last_shown(kp, &last);
  const fl_profile_t *prof = shown ? last.profile : kn_prof_session(kp);
  const fl_profile_t *baseline = shown ? last.baseline : NULL;
  const char *root = shown ? last.root : "all";
  if (!shown && fl_profile_n_samples(prof) == 0) {
    snprintf(err, err_size, "%%profsave: there is no profile to save yet; run %%%%profview or "
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
  if (!strcmp(format, "pprof")) {
    if (baseline) {
      snprintf(err, err_size, "%%profsave: a pprof file holds one profile, and the last graph is "
                              "a diff; save it as .folded (both counts on each line), or show "
                              "the profile alone (%%profshow) and save that");
      goto out;
    }
    if (!(text = pprof_file(prof, root, opts, &text_len, err, err_size))) goto out;
  } else if (!strcmp(format, "folded")) {
    /* Every sample: nothing is too narrow for a file, unless asked. A
     * diff's stacks are written by function unless lines are asked for:
     * the same line of two cells ("cell[3]:2", "cell[5]:2") is one stack. */
    if (!opts->minwidth_set) opts->tree.minwidth = 0;
    if (baseline && !opts->lines_set) opts->tree.lines = false;
    text = folded_text(prof, baseline, root, opts, err, err_size);
    if (!text) goto out;
  } else {
    if (shown && !has_opts) {
      bundle = json_incref(last.bundle);
    } else {
      json_t *content = baseline ? kn_prof_show_diff(kp, prof, baseline, opts, root, err, err_size)
                                 : kn_prof_show(kp, prof, opts, root, err, err_size);
      if (!content) goto out;
      bundle = json_incref(json_object_get(content, "data"));
      json_decref(content);
    }
    const char *svg = json_string_value(json_object_get(bundle, "image/svg+xml"));
    json_t *spec = json_object_get(bundle, "application/vnd.vegalite.v5+json");
    if (!strcmp(format, "svg")) {
      text = fl__xstrdup(svg);
    } else if (!strcmp(format, "text")) {
      /* The report as shown, but for the line that speaks to a notebook. */
      const char *shown_text = json_string_value(json_object_get(bundle, "text/plain"));
      size_t lead = strlen(untrusted_lead);
      if (shown_text && !strncmp(shown_text, untrusted_lead, lead) && shown_text[lead] == '\n')
        shown_text += lead + 1;
      text = fl__xstrdup(shown_text);
    } else if (!strcmp(format, "html")) {
      const char *title = opts->title;
      kn_strbuf_t t = KN_STRBUF_INIT;
      if (!title) {
        const fl_profile_info_t *info = fl_profile_info_const(prof);
        kn_strbuf_printf(&t, "cflame %s: %s", baseline ? "diff" : "profile",
                         info->source[0] ? info->source : root);
        title = t.data;
      }
      text = fl_html_page(spec, svg, title);
      kn_strbuf_free(&t);
    } else {
      text = json_dumps(spec, JSON_INDENT(1));
    }
    if (!text) {
      snprintf(err, err_size, "%%profsave: out of memory");
      goto out;
    }
  }
  if (!text_len) text_len = strlen(text);
  /* Whole or not at all, and only a regular file: a FIFO or a device as the
   * target would make the kernel wait on it or write into it. */
  char why[512];
  if (fl_write_file(path, text, text_len, false, why, sizeof why) < 0) {
    snprintf(err, err_size, "%%profsave: %s", why);
    goto out;
  }
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_strbuf_printf(&sb, "Saved %s (%zu bytes)\n", path, text_len);
  *output = kn_strbuf_steal(&sb);
  rc = 0;
out:
  free(text);
  json_decref(bundle);
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
  kn_optspec_t specs[N_OPTIONS];
  kn_opts_t o;
  if (kn_opts_parse("profload", args, specs, specs_for(KN_OPTS_LOAD, specs), &o, err, err_size) < 0)
    return -1;
  int rc = -1;
  fl_profile_t *p = NULL;
  kn_strbuf_t src = KN_STRBUF_INIT;
  const kn_optval_t *v = kn_opts_get(&o, "as");
  const char *name = v->set ? v->s : NULL;
  const bool per_input = kn_opts_get(&o, "per_input")->b;
  const char *const *paths = (const char *const *)o.positional;
  const size_t n_paths = o.n_positional;
  /* The kernel reads no standard input ("-" is a file's name), and files
   * as the cflame command does: regular ones, up to the limit. */
  fl_read_opts_t read;
  fl_read_opts_init(&read);
  read.stdin_dash = false;
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
  if (!n_paths) {
    snprintf(err, err_size,
             "%%profload needs a PATH: folded stacks (flamegraph.pl, inferno, %%profsave "
             "x.folded), the text of perf script, or a pprof profile (Go's runtime/pprof, "
             "%%profsave x.pb.gz); %%profload PATH [PATH...] [as=NAME] [per_input=true] "
             "[max_input_size=SIZE]");
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
    kn_strbuf_printf(&src, "%s%s", i ? ", " : "", base ? base + 1 : paths[i]);
    kind_name = fl_input_kind_name(kind);
  }
  fl_profile_info_t *info = fl_profile_info(p);
  snprintf(info->source, sizeof info->source, "%s", src.data);
  /* A profile that says when it was taken (pprof's time_nanos) keeps it:
   * saved again, it is the same profile. */
  if (!info->taken_unix) info->taken_unix = (int64_t)time(NULL);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  if (info->kind == FL_PROFILE_ALLOC)
    kn_strbuf_printf(&sb, "Loaded an allocation profile, %llu %s in %llu stacks (%s) from %s",
                     (unsigned long long)info->total_weight,
                     info->weight_is_count ? "allocations" : "bytes",
                     (unsigned long long)info->samples, n_paths > 1 ? "several inputs" : kind_name,
                     info->source);
  else
    kn_strbuf_printf(&sb, "Loaded %llu samples in %llu stacks (%s%s) from %s",
                     (unsigned long long)info->total_weight, (unsigned long long)info->samples,
                     n_paths > 1 ? "several inputs" : kind_name,
                     info->interval_ns ? ", interval read from the file" : "", info->source);
  if (name) {
    bool replaced = kn_prof_baseline(kp, name) != NULL;
    kn_prof_set_baseline(kp, name, p);
    kn_strbuf_printf(&sb, " as baseline %s%s; compare with %%profdiffview %s.\n", name,
                     replaced ? " (replacing the one of that name)" : "", name);
  } else {
    uint64_t before = fl_profile_info_const(kn_prof_session(kp))->total_weight;
    kn_prof_session_replace(kp, p);
    p = NULL;
    kn_strbuf_printf(&sb, " into the session profile");
    if (before) kn_strbuf_printf(&sb, " (it replaces the %llu samples there)", (unsigned long long)before);
    kn_strbuf_puts(&sb, "; show it with %profshow or %profprint.\n");
  }
  *output = kn_strbuf_steal(&sb);
  rc = 0;
out:
  fl_profile_destroy(&p);
  kn_strbuf_free(&src);
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
    snprintf(err, err_size, "%%profdiffview %s: the session profile is empty; give a statement to "
                            "profile (%%profdiffview %s work();), or fill the session profile with "
                            "%%%%profile or %%profload", name, name);
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
  if (kn_profreq_parse(kp, "profinit", args, KN_OPTS_PROFILER, &req, err, err_size) < 0) return -1;
  if (req.positional[0] || req.tree.n_threads) {
    snprintf(err, err_size, "%%profinit takes n= (buffer size in frames) and delay= (sampling "
                            "interval in seconds)");
    kn_profreq_free(&req);
    return -1;
  }
  kn_prof_set_sampling(kp, req.n_words, req.delay_ns);
  kn_profreq_free(&req);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_prof_settings_t now = kn_prof_settings(kp);
  kn_strbuf_printf(&sb, "n=%llu delay=%g\n", (unsigned long long)now.n_words,
                   (double)now.delay_ns / 1e9);
  res->output = kn_strbuf_steal(&sb);
  return 0;
}

int kn_profmagic_size(kn_prof_t *kp, const char *args, kn_magic_result_t *res, char *err,
                      size_t err_size) {
  char **words;
  int n = kn_words_split(args, &words, err, err_size);
  if (n < 0) return -1;
  if (n != 0 && n != 2) {
    kn_words_free(words);
    snprintf(err, err_size, "%%profsize takes a width and a height in pixels: %%profsize 800 "
                            "400 (height 0: sized to the depth)");
    return -1;
  }
  if (n == 2) {
    char *e1, *e2;
    long w = strtol(words[0], &e1, 10), h = strtol(words[1], &e2, 10);
    if (*e1 || *e2 || w < 100 || w > 100000 || h < 0 || h > 100000) {
      snprintf(err, err_size, "%%profsize %s %s: the width must be 100..100000 and the height "
                              "0..100000 pixels (0: sized to the depth)", words[0], words[1]);
      kn_words_free(words);
      return -1;
    }
    kn_prof_set_size(kp, (int)w, (int)h);
  }
  kn_words_free(words);
  kn_prof_settings_t now = kn_prof_settings(kp);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_strbuf_printf(&sb, "width=%d height=%d%s\n", now.width, now.height,
                   now.height ? "" : " (sized to the depth)");
  res->output = kn_strbuf_steal(&sb);
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
  if (req.flat && !req.minwidth_set) req.tree.minwidth = 0;
  fl_tree_t *tree = fl_tree_build(session, &req.tree, "all", err, err_size);
  if (!tree) goto out;
  char *summary = kn_prof_summary(session);
  char *report = req.flat ? fl_text_flat(tree, &req.text) : fl_text_tree(tree, &req.text);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_strbuf_printf(&sb, "%s\n%s", summary, report);
  free(summary);
  free(report);
  fl_tree_destroy(&tree);
  res->output = kn_strbuf_steal(&sb);
  rc = 0;
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
