/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_profreq: the profiling magics' options (see kn_profreq.h). */
#define _GNU_SOURCE
#include "cflame/fl_events.h"
#include "kn_profreq.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_text.h"

/* Every option is a row of the flame library's table (fl_options.h):
 * the sampling options, the drawing ones, then allocations, live graphs,
 * attaching and reading, in the table's order. */
#define MAX_OPTIONS 64

const kn_optspec_t *kn_profreq_option(unsigned groups, size_t i) {
  const kn_optspec_t *o;
  for (size_t j = 0; (o = fl_option_at(j)) != NULL; j++)
    if ((o->groups & groups) && i-- == 0) return o;
  return NULL;
}

char *kn_profreq_options_help(unsigned groups) {
  char *help = fl_options_help(groups, FL_FRONT_NOTEBOOK);
  size_t len = strlen(help);
  if (len) help[len - 1] = '\0';
  return help;
}

static size_t specs_for(unsigned groups, kn_optspec_t *out) {
  size_t n = 0;
  for (const kn_optspec_t *o; n < MAX_OPTIONS && (o = kn_profreq_option(groups, n)) != NULL;)
    out[n++] = *o;
  return n;
}

int kn_profreq_words(const char *magic, const char *args, unsigned groups, kn_opts_t *o, char *err,
                     size_t err_size) {
  kn_optspec_t specs[MAX_OPTIONS];
  return kn_opts_parse(magic, args, specs, specs_for(groups, specs), o, err, err_size);
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

static int parse(const kn_prof_t *prof, const char *magic, const char *args, unsigned groups,
                 kn_profreq_t *req, char *err, size_t err_size) {
  memset(req, 0, sizeof *req);
  char shown[48]; /* as messages name it: with its % signs, one if it had none */
  snprintf(shown, sizeof shown, "%s%s", magic[0] == '%' ? "" : "%", magic);
  kn_prof_settings_t settings = kn_prof_settings(prof);
  req->delay_ns = settings.delay_ns;
  req->n_words = settings.n_words;
  fl_options_init(&req->draw, FL_FRONT_NOTEBOOK);
  req->draw.view.width = settings.width;
  req->draw.view.height = settings.height;
  req->sample_rate = strtod(fl_option_find("sample_rate")->def, NULL);
  req->duration_s = strtod(fl_option_find("duration")->def, NULL);
  req->args = fl__xstrdup(args);

  kn_optspec_t specs[MAX_OPTIONS];
  size_t n = specs_for(groups, specs);
  kn_opts_t o;
  if (kn_opts_parse(magic, args, specs, n, &o, err, err_size) < 0) return -1;
  const kn_optval_t *v;
  for (size_t i = 0; i < o.n_vals; i++) {
    const fl_option_t *drawing = fl_option_find(o.vals[i].key);
    req->n_set_options += o.vals[i].set;
    if (o.vals[i].set && drawing) fl_options_store(&req->draw, drawing, &o.vals[i]);
  }
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
  if ((v = kn_opts_get(&o, "every")) && v->set) {
    /* Each live graph is a profile read and drawn: more often than this
     * would spend the kernel's CPU on drawing rather than on the cell. */
    if (v->d > 0 && v->d < KN_LIVE_MIN_EVERY) {
      snprintf(err, err_size,
               "%s: every=%g is too often; give 0 (no live graph) or at least %g seconds",
               shown, v->d, KN_LIVE_MIN_EVERY);
      kn_opts_free(&o);
      return -1;
    }
    req->every_ns = (uint64_t)llround(v->d * 1e9);
  }
  if ((v = kn_opts_get(&o, "duration")) && v->set) req->duration_s = v->d;
  if ((v = kn_opts_get(&o, "follow_forks")) && v->set) req->follow_forks = v->b;
  bool count = false, live = false, allocs = req->sample_rate_set;
  if ((v = kn_opts_get(&o, "weight")) && v->set) {
    count = !strcmp(v->s, "count");
    req->weight_set = allocs = true;
  }
  if ((v = kn_opts_get(&o, "live")) && v->set) {
    live = v->b;
    req->live_set = allocs = true;
  }
  if ((v = kn_opts_get(&o, "allocs")) && v->set) {
    allocs = v->b;
    req->kind_set = true;
  }
  bool wall = false;
  if ((v = kn_opts_get(&o, "clock")) && v->set) {
    wall = !strcmp(v->s, "wall");
    req->kind_set = true;
    if (wall && allocs) {
      snprintf(err, err_size,
               "%s: clock=wall samples time, and the allocation options record "
               "allocations: a profile is one of them; drop clock=wall, or the allocation "
               "options",
               shown);
      kn_opts_free(&o);
      return -1;
    }
  }
  const fl_event_t *event = NULL;
  if ((v = kn_opts_get(&o, "event")) && v->set) {
    event = fl_event_find(v->s); /* one this machine counts: the table's check */
    if (wall || allocs) {
      snprintf(err, err_size, "%s: event=%s weighs samples by the event, and %s: a profile "
               "is one of them", shown, v->s,
               wall ? "clock=wall by wall time" : "the allocation options by allocations");
      kn_opts_free(&o);
      return -1;
    }
    snprintf(req->event, sizeof req->event, "%s", event->name);
    req->kind_set = true;
  }
  req->kind = allocs  ? fl_kind_alloc(count, live)
              : event ? FL_PROFILE_EVENT
              : wall  ? FL_PROFILE_WALL
                      : FL_PROFILE_CPU;
  req->positional = fl__xcalloc(o.n_positional + 1, sizeof *req->positional);
  for (size_t i = 0; i < o.n_positional; i++) req->positional[i] = fl__xstrdup(o.positional[i]);
  kn_opts_free(&o);
  return 0;
}

fl_profile_kind_t kn_profreq_kind(const kn_profreq_t *req, fl_profile_kind_t dflt) {
  bool named = req->kind_set || req->sample_rate_set || req->weight_set || req->live_set;
  const fl_kind_info_t *want = fl_kind(req->kind), *d = fl_kind(dflt);
  if (!named) return dflt;
  if (!want->allocs) return req->kind;
  return fl_kind_alloc(req->weight_set ? !want->bytes : d->allocs && !d->bytes,
                       req->live_set ? want->live : d->allocs && d->live);
}

const char *kn_profreq_kind_words(fl_profile_kind_t kind, fl_profile_kind_t other) {
  static const char *const words[FL_PROFILE_N_KINDS] = {
      [FL_PROFILE_CPU] = "allocs=false",        [FL_PROFILE_WALL] = "clock=wall",
      [FL_PROFILE_ALLOC_BYTES] = "allocs=true", [FL_PROFILE_ALLOC_COUNT] = "allocs=true",
      [FL_PROFILE_LIVE_BYTES] = "allocs=true",  [FL_PROFILE_LIVE_COUNT] = "allocs=true",
  };
  /* Against another time profile, CPU time is the clock's choice. */
  if (kind == FL_PROFILE_CPU && fl_kind(other)->time) return "clock=cpu";
  return words[kind] ? words[kind] : fl_kind(kind)->name;
}

int kn_profreq_parse(const kn_prof_t *prof, const char *magic, const char *args, unsigned groups,
                     kn_profreq_t *req, char *err, size_t err_size) {
  int rc = parse(prof, magic, args, groups, req, err, err_size);
  if (rc < 0) kn_profreq_free(req);
  return rc;
}

void kn_profreq_free(kn_profreq_t *req) {
  fl_options_free(&req->draw);
  if (req->positional) kn_words_free(req->positional);
  free(req->baseline);
  free(req->baseline_note);
  free(req->args);
  memset(req, 0, sizeof *req);
}
