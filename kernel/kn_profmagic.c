#define _GNU_SOURCE
#include "kn_profmagic.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_magic.h"
#include "kn_strbuf.h"

/* Every option of every group; each magic takes the groups it names. */
typedef struct group_spec {
  unsigned group;
  kn_optspec_t spec;
} group_spec_t;

static const group_spec_t all_options[] = {
    {KN_OPTS_PROFILER, {"delay", KN_OPT_DOUBLE, NULL, 1e-6, 10, "sampling interval in seconds (default 0.001)"}},
    {KN_OPTS_PROFILER, {"n", KN_OPT_INT, NULL, 1000, 1e9, "sample buffer size in frames (default 1000000)"}},
    {KN_OPTS_TREE | KN_OPTS_PROFILER, {"threads", KN_OPT_LIST, NULL, 1, 0, "thread numbers to show (1 = the cell's main thread), or all"}},
    {KN_OPTS_TREE, {"C", KN_OPT_BOOL, NULL, 1, 0, "show frames of system libraries (default false)"}},
    {KN_OPTS_TREE, {"combine", KN_OPT_BOOL, NULL, 1, 0, "one frame per source line, not per instruction (default true)"}},
    {KN_OPTS_TREE, {"lines", KN_OPT_BOOL, NULL, 1, 0, "false: one frame per function (default true)"}},
    {KN_OPTS_TREE, {"recur", KN_OPT_ENUM, "off|flat", 1, 0, "flat: draw self-recursion as a loop"}},
    {KN_OPTS_TREE, {"pruned", KN_OPT_LIST, NULL, 1, 0, "functions whose subtrees are cut"}},
    {KN_OPTS_TREE, {"filter", KN_OPT_STRING, NULL, 1, 0, "keep stacks with a frame matching this text or /regex/"}},
    {KN_OPTS_TREE, {"minwidth", KN_OPT_DOUBLE, NULL, 0, 1, "hide frames narrower than this share (default 0.001)"}},
    {KN_OPTS_VIEW, {"width", KN_OPT_INT, NULL, 100, 100000, "width in pixels (default 800)"}},
    {KN_OPTS_VIEW, {"height", KN_OPT_INT, NULL, 50, 100000, "height in pixels (default: sized to the depth)"}},
    {KN_OPTS_VIEW, {"title", KN_OPT_STRING, NULL, 1, 0, "title above the graph"}},
    {KN_OPTS_VIEW, {"icicle", KN_OPT_BOOL, NULL, 1, 0, "root at the top (default false)"}},
    {KN_OPTS_VIEW, {"theme", KN_OPT_ENUM, "light|dark", 1, 0, "colour theme"}},
    {KN_OPTS_PRINT, {"format", KN_OPT_ENUM, "tree|flat", 1, 0, "tree (default) or flat"}},
    {KN_OPTS_PRINT, {"maxdepth", KN_OPT_INT, NULL, 1, 10000, "deepest level printed"}},
    {KN_OPTS_PRINT, {"mincount", KN_OPT_INT, NULL, 0, 1e15, "frames with fewer samples are not printed"}},
    {KN_OPTS_PRINT, {"cols", KN_OPT_INT, NULL, 20, 10000, "line width (default 100)"}},
    {KN_OPTS_DIFF, {"negate", KN_OPT_BOOL, NULL, 1, 0, "draw the baseline's layout, coloured by baseline - target"}},
    {KN_OPTS_DIFF, {"normalize", KN_OPT_BOOL, NULL, 1, 0, "scale the baseline to the target's total first"}},
    {KN_OPTS_DIFF, {"delta", KN_OPT_ENUM, "total|self", 1, 0, "inclusive change per frame, or self change"}},
    {KN_OPTS_DIFF, {"noise", KN_OPT_DOUBLE, NULL, 0, 1000, "z-score under which a change is noise (default 2; 0: off)"}},
};
#define N_OPTIONS (sizeof all_options / sizeof all_options[0])

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
  *opts = kn_strndup(args, (size_t)(end_opts - args));
  const char *s = end_opts;
  while (isspace((unsigned char)*s)) s++;
  *stmt = kn_strdup(s);
}

static char **copy_list(const kn_optval_t *v) {
  char **out = kn_xcalloc(v->n_list + 1, sizeof *out);
  for (size_t i = 0; i < v->n_list; i++) out[i] = kn_strdup(v->list[i]);
  return out;
}

int kn_profreq_parse(const kn_prof_t *prof, const char *magic, const char *args, unsigned groups,
                     kn_profreq_t *req, char *err, size_t err_size) {
  memset(req, 0, sizeof *req);
  req->delay_ns = prof->delay_ns;
  req->n_words = prof->n_words;
  fl_tree_opts_init(&req->tree);
  fl_view_opts_init(&req->view);
  fl_text_opts_init(&req->text);
  fl_diff_opts_init(&req->diff);
  req->view.width = prof->width;
  req->view.height = prof->height;

  kn_optspec_t specs[N_OPTIONS];
  size_t n = specs_for(groups, specs);
  kn_opts_t o;
  if (kn_opts_parse(magic, args, specs, n, &o, err, err_size) < 0) return -1;
  const kn_optval_t *v;
  if ((v = kn_opts_get(&o, "delay")) && v->set) req->delay_ns = (uint64_t)llround(v->d * 1e9);
  if ((v = kn_opts_get(&o, "n")) && v->set) req->n_words = (uint64_t)v->i;
  if ((v = kn_opts_get(&o, "threads")) && v->set) {
    bool all = false;
    req->threads = kn_xcalloc(v->n_list + 1, sizeof *req->threads);
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
  if ((v = kn_opts_get(&o, "lines")) && v->set) req->tree.lines = v->b;
  if ((v = kn_opts_get(&o, "recur")) && v->set)
    req->tree.recur = !strcmp(v->s, "flat") ? FL_RECUR_FLAT : FL_RECUR_OFF;
  if ((v = kn_opts_get(&o, "pruned")) && v->set) {
    req->pruned = copy_list(v);
    req->tree.pruned = (const char *const *)req->pruned;
  }
  if ((v = kn_opts_get(&o, "filter")) && v->set) {
    size_t len = strlen(v->s);
    if (len >= 2 && v->s[0] == '/' && v->s[len - 1] == '/') {
      req->filter = kn_strndup(v->s + 1, len - 2);
      req->tree.filter_is_regex = true;
    } else {
      req->filter = kn_strdup(v->s);
    }
    req->tree.filter = req->filter;
  }
  if ((v = kn_opts_get(&o, "minwidth")) && v->set) req->tree.minwidth = v->d;
  if ((v = kn_opts_get(&o, "width")) && v->set) req->view.width = (int)v->i;
  if ((v = kn_opts_get(&o, "height")) && v->set) req->view.height = (int)v->i;
  if ((v = kn_opts_get(&o, "title")) && v->set) {
    req->title = kn_strdup(v->s);
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

  req->positional = kn_xcalloc(o.n_positional + 1, sizeof *req->positional);
  for (size_t i = 0; i < o.n_positional; i++) req->positional[i] = kn_strdup(o.positional[i]);
  kn_opts_free(&o);
  return 0;
}

void kn_profreq_free(kn_profreq_t *req) {
  if (req->pruned) kn_words_free(req->pruned);
  if (req->positional) kn_words_free(req->positional);
  free(req->filter);
  free(req->threads);
  free(req->title);
  free(req->baseline);
  memset(req, 0, sizeof *req);
}

/* ---- showing ---- */

/* Remembers a shown bundle (and the profile behind it) for %profsave. */
static void remember(kn_prof_t *kp, const fl_profile_t *prof, json_t *bundle) {
  if (prof != kp->last_profile) { /* %profsave with options shows it again */
    fl_profile_destroy(&kp->last_profile);
    kp->last_profile = fl_profile_copy(prof);
  }
  json_decref(kp->last_bundle);
  kp->last_bundle = json_incref(bundle);
}


json_t *kn_prof_show(kn_prof_t *kp, const fl_profile_t *prof, const kn_profreq_t *req,
                     const char *root_name, char *err, size_t err_size) {
  fl_tree_t *tree = fl_tree_build(prof, &req->tree, root_name, err, err_size);
  if (!tree) return NULL;
  char *summary = kn_prof_summary(prof);
  fl_view_opts_t view = req->view;
  view.note = summary;
  json_t *bundle = fl_bundle(tree, &view, err, err_size);
  if (!bundle) {
    fl_tree_destroy(&tree);
    free(summary);
    return NULL;
  }
  /* The console shows text/plain: lead it with the summary line. */
  const char *text = json_string_value(json_object_get(bundle, "text/plain"));
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_strbuf_printf(&sb, "%s\n%s", summary, text ? text : "");
  json_object_set_new(bundle, "text/plain", json_string(sb.data));
  kn_strbuf_free(&sb);

  remember(kp, prof, bundle);
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
  json_t *bundle = fl_diff_bundle(d, &view, err, err_size);
  if (bundle) {
    const char *text = json_string_value(json_object_get(bundle, "text/plain"));
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_printf(&sb, "%s\n%s", note.data, text ? text : "");
    json_object_set_new(bundle, "text/plain", json_string(sb.data));
    kn_strbuf_free(&sb);
    remember(kp, target, bundle);
  }
  fl_diff_destroy(&d);
  free(summary);
  kn_strbuf_free(&note);
  return bundle ? json_pack("{s:o, s:{}}", "data", bundle, "metadata") : NULL;
}

char *kn_prof_empty_message(const fl_profile_t *prof) {
  const fl_profile_info_t *info = fl_profile_info_const(prof);
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_strbuf_printf(&sb,
                   "No samples: the run took %.3f ms of CPU (%.3f ms wall), less than the sampling "
                   "interval of %g ms.\n"
                   "To see where its time goes, profile it for longer: run the work in a loop "
                   "(for (int i = 0; i < 1000; i++) ...), or sample more often with delay= "
                   "(e.g. %%%%profview delay=0.0001).\n",
                   info->cpu_seconds * 1e3, info->wall_seconds * 1e3,
                   (double)info->interval_ns / 1e6);
  return kn_strbuf_steal(&sb);
}

/* ---- line magics without a worker ---- */

bool kn_profmagic_is_line(const char *name) {
  static const char *const names[] = {"profshow", "profprint", "profclear", "profinit",
                                      "profsize", "profsave", NULL};
  /* %profbase alone lists the baselines; with arguments it profiles. */
  for (size_t i = 0; names[i]; i++)
    if (!strcmp(names[i], name)) return true;
  return false;
}

static const char *extension(const char *path) {
  size_t len = strlen(path);
  static const char *const exts[] = {".vl.json", ".svg", ".txt", NULL};
  for (size_t i = 0; exts[i]; i++) {
    size_t el = strlen(exts[i]);
    if (len > el && !strcasecmp(path + len - el, exts[i])) return exts[i];
  }
  return NULL;
}

static int save(kn_prof_t *kp, const char *args, char **output, char *err, size_t err_size) {
  kn_profreq_t req;
  int rc = -1;
  if (kn_profreq_parse(kp, "profsave", args, KN_OPTS_TREE | KN_OPTS_VIEW, &req, err, err_size) < 0)
    return -1;
  json_t *bundle = NULL;
  FILE *f = NULL;
  char *text = NULL;
  const char *path = req.positional[0];
  if (!path || req.positional[1]) {
    snprintf(err, err_size, "%%profsave needs one PATH ending in .svg, .vl.json or .txt%s",
             path ? "; quote a path with spaces" : "");
    goto out;
  }
  const char *ext = extension(path);
  if (!ext) {
    snprintf(err, err_size, "%%profsave: cannot tell the format of '%s'; valid endings: .svg, "
                            ".vl.json, .txt", path);
    goto out;
  }
  bool has_opts = strchr(args, '=') != NULL;
  if (kp->last_bundle && !has_opts) {
    bundle = json_incref(kp->last_bundle);
  } else {
    const fl_profile_t *prof = kp->last_profile ? kp->last_profile : kp->session;
    if (!prof || fl_profile_n_samples(prof) == 0) {
      snprintf(err, err_size, "%%profsave: there is no profile to save yet; run %%%%profview or "
                              "%%%%profile first");
      goto out;
    }
    json_t *content = kn_prof_show(kp, prof, &req, "all", err, err_size);
    if (!content) goto out;
    bundle = json_incref(json_object_get(content, "data"));
    json_decref(content);
  }
  if (!strcmp(ext, ".svg"))
    text = kn_strdup(json_string_value(json_object_get(bundle, "image/svg+xml")));
  else if (!strcmp(ext, ".txt"))
    text = kn_strdup(json_string_value(json_object_get(bundle, "text/plain")));
  else
    text = json_dumps(json_object_get(bundle, "application/vnd.vegalite.v5+json"), JSON_INDENT(1));
  f = fopen(path, "w");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    snprintf(err, err_size, "%%profsave: cannot write %s: %s", path, strerror(errno));
    f = NULL;
    goto out;
  }
  f = NULL;
  kn_strbuf_t sb = KN_STRBUF_INIT;
  kn_strbuf_printf(&sb, "Saved %s (%zu bytes)\n", path, strlen(text));
  *output = kn_strbuf_steal(&sb);
  rc = 0;
out:
  if (f) fclose(f);
  free(text);
  json_decref(bundle);
  kn_profreq_free(&req);
  return rc;
}

int kn_profmagic_line(kn_prof_t *kp, const char *name, const char *args, char **output,
                      json_t **display, char *err, size_t err_size) {
  *output = NULL;
  *display = NULL;
  kn_strbuf_t sb = KN_STRBUF_INIT;
  if (!strcmp(name, "profclear")) {
    if (*args) {
      snprintf(err, err_size, "%%profclear takes no arguments");
      return -1;
    }
    fl_profile_clear(kp->session);
    return 0;
  }
  if (!strcmp(name, "profinit")) {
    kn_profreq_t req;
    kn_optspec_t specs[N_OPTIONS];
    (void)specs;
    if (kn_profreq_parse(kp, "profinit", args, KN_OPTS_PROFILER, &req, err, err_size) < 0)
      return -1;
    if (req.positional[0] || req.tree.n_threads) {
      snprintf(err, err_size, "%%profinit takes n= (buffer size in frames) and delay= (sampling "
                              "interval in seconds)");
      kn_profreq_free(&req);
      return -1;
    }
    kp->n_words = req.n_words;
    kp->delay_ns = req.delay_ns;
    kn_profreq_free(&req);
    kn_strbuf_printf(&sb, "n=%llu delay=%g\n", (unsigned long long)kp->n_words,
                     (double)kp->delay_ns / 1e9);
    *output = kn_strbuf_steal(&sb);
    return 0;
  }
  if (!strcmp(name, "profsize")) {
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
      kp->width = (int)w;
      kp->height = (int)h;
    }
    kn_words_free(words);
    kn_strbuf_printf(&sb, "width=%d height=%d%s\n", kp->width, kp->height,
                     kp->height ? "" : " (sized to the depth)");
    *output = kn_strbuf_steal(&sb);
    return 0;
  }
  if (!strcmp(name, "profsave")) return save(kp, args, output, err, err_size);

  bool show = !strcmp(name, "profshow");
  kn_profreq_t req;
  if (kn_profreq_parse(kp, name, args, KN_OPTS_TREE | (show ? KN_OPTS_VIEW : KN_OPTS_PRINT), &req,
                       err, err_size) < 0)
    return -1;
  int rc = -1;
  if (req.positional[0]) {
    snprintf(err, err_size, "%%%s: unexpected '%s'; options are key=value words", name,
             req.positional[0]);
    goto out;
  }
  if (fl_profile_n_samples(kp->session) == 0) {
    *output = kn_strdup("The session profile is empty: profile a cell with %%profile or "
                        "%%profview first.\n");
    rc = 0;
    goto out;
  }
  if (show) {
    *display = kn_prof_show(kp, kp->session, &req, "all", err, err_size);
    rc = *display ? 0 : -1;
    goto out;
  }
  /* The flat report lists every function: nothing is too narrow to count,
   * unless the user said so. */
  if (req.flat && !strstr(args, "minwidth=")) req.tree.minwidth = 0;
  fl_tree_t *tree = fl_tree_build(kp->session, &req.tree, "all", err, err_size);
  if (!tree) goto out;
  char *summary = kn_prof_summary(kp->session);
  char *report = req.flat ? fl_text_flat(tree, &req.text) : fl_text_tree(tree, &req.text);
  kn_strbuf_printf(&sb, "%s\n%s", summary, report);
  free(summary);
  free(report);
  fl_tree_destroy(&tree);
  *output = kn_strbuf_steal(&sb);
  rc = 0;
out:
  kn_profreq_free(&req);
  return rc;
}
