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

/* The kernel's own options, each in the groups (bits 16 and up) of the
 * magics that take it; the drawing options are the flame library's table
 * (fl_options.h). Listed in this order: the sampling options, the
 * library's, then the rest. */
static const kn_optspec_t sampling_options[] = {
    {"delay", FL_OPT_DOUBLE, NULL, 1e-6, 10, "sampling interval in seconds", .def = "0.001",
     .groups = KN_OPTS_SAMPLING},
    {"n", FL_OPT_INT, NULL, 1000, 1e9, "sample buffer size in frames", .def = "1000000",
     .groups = KN_OPTS_SAMPLING},
    {"clock", FL_OPT_ENUM, "cpu|wall", 1, 0,
     "what a sample is: an interval of CPU time, or of wall time, where the time a thread "
     "waits (sleep, read, a lock, a CPU) is off-CPU",
     .def = "cpu", .groups = KN_OPTS_CLOCK},
    {"event", FL_OPT_STRING, NULL, 1, 0,
     "weigh samples by a perf event instead of time: page-faults, minor-faults, "
     "major-faults, context-switches, cpu-migrations, or, with hardware counters, cycles, "
     "instructions, cache-misses, branch-misses",
     .shown_def = "time", .groups = KN_OPTS_CLOCK},
};
static const kn_optspec_t kernel_options[] = {
    {"sample_rate", FL_OPT_DOUBLE, NULL, 1e-6, 1,
     "share of allocations recorded (1: every one, exactly)", .def = "0.1",
     .groups = KN_OPTS_ALLOC},
    {"weight", FL_OPT_ENUM, "bytes|count", 1, 0, "widths by bytes or by allocation count",
     .def = "bytes", .groups = KN_OPTS_ALLOC},
    {"live", FL_OPT_BOOL, NULL, 1, 0, "only what is still allocated when the cell ends",
     .def = "false", .groups = KN_OPTS_ALLOC},
    {"every", FL_OPT_DOUBLE, NULL, 0, 3600,
     "while the cell runs, show its graph so far this often, in seconds (0: only at the end; "
     "else at least 0.2)",
     .def = "0", .groups = KN_OPTS_EVERY},
    {"duration", FL_OPT_DOUBLE, NULL, 0.1, 86400,
     "how long to sample the program, in seconds (an interrupt ends it sooner)", .def = "5",
     .groups = KN_OPTS_ATTACH},
    {"allocs", FL_OPT_BOOL, NULL, 1, 0, "profile allocations instead of CPU time",
     .shown_def = "as the baseline", .groups = KN_OPTS_KIND},
    {"as", FL_OPT_STRING, NULL, 1, 0, "keep it as baseline NAME instead of the session profile",
     .shown_def = "the session profile", .groups = KN_OPTS_LOAD},
    {"per_input", FL_OPT_BOOL, NULL, 1, 0, "each file under a root frame of its own",
     .def = "false", .groups = KN_OPTS_LOAD},
    {"max_input_size", FL_OPT_STRING, NULL, 1, 0,
     "the most a file may hold, and unzip to: bytes, or with K, M, G, T", .def = "1G",
     .groups = KN_OPTS_LOAD},
};
#define N_SAMPLING (FL__ARRAY_SIZE(sampling_options))
#define N_KERNEL (FL__ARRAY_SIZE(kernel_options))
#define MAX_OPTIONS 64

const kn_optspec_t *kn_profreq_option(unsigned groups, size_t i) {
  const kn_optspec_t *o;
  for (size_t j = 0; j < N_SAMPLING; j++)
    if ((sampling_options[j].groups & groups) && i-- == 0) return &sampling_options[j];
  for (size_t j = 0; (o = fl_option_at(j)) != NULL; j++)
    if ((o->groups & groups) && i-- == 0) return o;
  for (size_t j = 0; j < N_KERNEL; j++)
    if ((kernel_options[j].groups & groups) && i-- == 0) return &kernel_options[j];
  return NULL;
}

char *kn_profreq_options_help(unsigned groups) {
  fl__buf_t sb = FL__BUF_INIT;
  const kn_optspec_t *o;
  for (size_t i = 0; (o = kn_profreq_option(groups, i)) != NULL; i++) {
    char word[64];
    const char *def = o->shown_def ? o->shown_def : o->def ? o->def : "none";
    snprintf(word, sizeof word, "%s=%s", o->name, fl_option_placeholder(o, FL_FRONT_NOTEBOOK));
    fl__buf_printf(&sb, "  %-20s %s (default: %s)\n", word, o->help, def);
  }
  if (sb.len) sb.data[--sb.len] = '\0';
  return fl__buf_take(&sb);
}

/* The kernel's own option called name (which must be one). */
static const kn_optspec_t *own_option(const char *name) {
  for (size_t i = 0; i < N_KERNEL; i++)
    if (!strcmp(kernel_options[i].name, name)) return &kernel_options[i];
  abort();
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

int kn_profreq_parse(const kn_prof_t *prof, const char *magic, const char *args, unsigned groups,
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
  req->sample_rate = strtod(own_option("sample_rate")->def, NULL);
  req->duration_s = strtod(own_option("duration")->def, NULL);
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
    char here[512];
    event = fl_event_find(v->s);
    if (!event || !fl_event_available(event)) {
      fl_events_available(here, sizeof here);
      fl__buf_t known = FL__BUF_INIT;
      for (size_t i = 0; fl_event_at(i); i++)
        fl__buf_printf(&known, "%s%s", i ? ", " : "", fl_event_at(i)->name);
      if (!event)
        snprintf(err, err_size, "%s: event=%s is not an event cflame counts; valid: %s (this "
                 "machine counts %s)", shown, v->s, known.data, here[0] ? here : "none of them");
      else
        snprintf(err, err_size, "%s: event=%s: this machine does not count it (no hardware "
                 "counters, or perf events are not allowed); it counts: %s", shown, v->s,
                 here[0] ? here : "none of them");
      fl__buf_free(&known);
      kn_opts_free(&o);
      return -1;
    }
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

void kn_profreq_free(kn_profreq_t *req) {
  fl_options_free(&req->draw);
  if (req->positional) kn_words_free(req->positional);
  free(req->baseline);
  free(req->baseline_note);
  free(req->args);
  memset(req, 0, sizeof *req);
}
