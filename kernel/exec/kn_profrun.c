/* SPDX-License-Identifier: BSD-3-Clause */
/* What a profiled run leaves: its profile read from the worker's buffer,
 * then shown as a flame graph or a diff, kept as a baseline, or added to
 * the session profile, as its magic says (see kn_exec.h); all of it on a
 * job off the main loop (struct kn_profrun below), so that control keeps
 * answering however large the buffer.
 *
 * What the worker runs to take the samples (a collector) follows from the
 * kind of samples the request asks for (kn_profreq_t.kind), whatever the
 * run then does with its profile: the table `collectors` maps each kind to
 * the CPU sampler or the allocation recorder. A new kind of sample is a
 * row there (and a collector, if no existing one takes it). */
#include "cflame/fl_events.h"
#include <assert.h>
#include <stdarg.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_render.h"
#include "cflame/fl_symbol.h"
#include "fl__common.h"
#include "kn_exec.h"
#include "kn_job.h"
#include "kn_live.h"
#include "kn_names.h"
#include "kn_prof.h"
#include "kn_profmagic.h"
#include "kn_worker.h"

/* What became of the profile of a run cut short (a crash, an interrupt),
 * for the error message: " The flame graph shows ..." or "". */
const char *kn_profrun_cut_short_note(kn_profmode_t mode) {
  switch (mode) {
    case KN_PROF_VIEW:
    case KN_PROF_DIFF: return " The flame graph shows what the cell ran until then.";
    case KN_PROF_ACCUMULATE:
      return " What the cell ran until then was added to the session profile.";
    case KN_PROF_BASE: return " No baseline was kept: a run cut short is not one.";
    default: return "";
  }
}

/* What becomes of a profiled run's profile once the worker is done: read
 * from the worker's buffer, kept (session profile, baseline, the runs
 * kept) and drawn, all on a job off the loop (kn_job.h), since a large
 * buffer takes seconds to read and draw. The job reads these and writes
 * notes; the loop says the notes and goes on (then) once it has ended. */
struct kn_profrun {
  json_t *ev;            /* the worker's "done" event, or NULL after a crash */
  const char *maps_text; /* after a crash: the maps in e->crash_report */
  pid_t pid;             /* whose samples: the worker's, or the crashed one's */
  char *compiler;        /* the session's compiler and flags, for the profile's info */
  kn_exec_then_fn then;
  bool kept; /* the job read the profile and kept it (written by the job) */
  /* What the job says, in order: records of a stream ('O', 'E'; 'L' for
   * the kernel's log), a length (size_t) and that many bytes. */
  fl__buf_t notes;
};

static void profrun_free(kn_profrun_t **prp) {
  kn_profrun_t *pr = *prp;
  if (!pr) return;
  json_decref(pr->ev);
  free(pr->compiler);
  fl__buf_free(&pr->notes);
  free(pr);
  *prp = NULL;
}

/* Notes what the job says (kn_profrun.notes): the thread neither logs nor
 * publishes; kn_profrun_drawn says it, from the loop. */
__attribute__((format(printf, 3, 4))) static void say(kn_exec_t *e, char stream, const char *fmt,
                                                      ...) {
  fl__buf_t text = FL__BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  fl__buf_vprintf(&text, fmt, ap);
  va_end(ap);
  fl__buf_t *notes = &e->profrun->notes;
  fl__buf_putc(notes, stream);
  fl__buf_add(notes, (const char *)&text.len, sizeof text.len);
  fl__buf_add(notes, text.data ? text.data : "", text.len);
  fl__buf_free(&text);
}

char *kn_profrun_not_drawn_note(const kn_exec_t *e) {
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_puts(&sb,
               " The flame graph was not drawn: the interrupt stopped its drawing. The cell's "
               "profile is kept: %profshow draws it");
  const char *base = e->profreq.baseline;
  if (e->profreq.mode == KN_PROF_DIFF && base && strcmp(base, KN_PROFHIST_PREV))
    fl__buf_printf(&sb, ", and %%profdiffview %s its diff", base);
  fl__buf_putc(&sb, '.');
  return fl__buf_take(&sb);
}

/* A collector: what the worker runs to take one kind of samples, and how
 * the kernel reads what it took. */
typedef struct collector {
  /* The run command's member that starts it, and the "done" event's that
   * reports on it: "profile" (the sampler), "allocs" (the recorder). */
  const char *key;
  const char *what; /* in "cflame: WHAT could not be read: ..." */
  /* Its samples can be read from the crash report's maps once the worker
   * died (the sampler's shared buffer); otherwise a crash loses them. */
  bool after_crash;
  /* The run command's member: the settings, the file prepared. NULL with
   * err. */
  json_t *(*request)(kn_prof_t *kp, const kn_exec_t *e, char *err, size_t err_size);
  /* Reads the run's samples (report: the done event's member, NULL after
   * a crash) into a new profile. NULL with err. It runs on the profile's
   * job (profile_run), so it says what it has to say through say(). */
  fl_profile_t *(*collect)(kn_exec_t *e, json_t *ev, json_t *report, const char *maps_text,
                           pid_t pid, char *err, size_t err_size);
  /* What a view of no samples says (new string), or NULL for nothing. */
  char *(*empty)(const kn_exec_t *e, json_t *report, const fl_profile_t *prof);
  /* Reads what the worker has recorded so far while the cell still runs
   * (kn_live.c, off the loop): it touches neither the execution nor the
   * loop. NULL with err. */
  fl_profile_t *(*so_far)(kn_prof_t *kp, const kn_profreq_t *r, int cell, pid_t pid, char *err,
                          size_t err_size);
} collector_t;

/* ---- the CPU sampler ---- */

static json_t *sampler_request(kn_prof_t *kp, const kn_exec_t *e, char *err, size_t err_size) {
  const kn_profreq_t *r = &e->profreq;
  int made = kn_prof_prepare(kp, r->n_words, err, err_size);
  if (made < 0) return NULL;
  json_t *req = json_pack("{s:I, s:s, s:I, s:i, s:b, s:s}", "interval_ns",
                           (json_int_t)r->delay_ns, "file", kn_prof_buffer_path(kp), "words",
                           (json_int_t)r->n_words, "tag", e->cell, "zeroed", made, "clock",
                           r->kind == FL_PROFILE_WALL ? "wall" : "cpu");
  const fl_event_t *ev = r->kind == FL_PROFILE_EVENT ? fl_event_find(r->event) : NULL;
  if (req && ev)
    json_object_set_new(req, "event",
                        json_pack("{s:I, s:I, s:I}", "type", (json_int_t)ev->type, "config",
                                  (json_int_t)ev->config, "period", (json_int_t)ev->period));
  return req;
}

static fl_profile_t *sampler_collect(kn_exec_t *e, json_t *ev, json_t *info, const char *maps_text,
                                     pid_t pid, char *err, size_t err_size) {
  kn_prof_run_t run = {.interval_ns = e->profreq.delay_ns, .cell = e->cell};
  run.samples = (uint64_t)json_integer_value(json_object_get(info, "samples"));
  run.dropped = (uint64_t)json_integer_value(json_object_get(info, "dropped"));
  /* CPU and wall time over the sampler's window; the run's own when the
   * worker died before it could say (a crash). */
  json_t *window = json_object_get(info, "cpu_ns") ? info : ev;
  run.cpu_seconds = (double)json_integer_value(json_object_get(window, "cpu_ns")) / 1e9;
  run.wall_seconds = (double)json_integer_value(json_object_get(window, "wall_ns")) / 1e9;
  snprintf(run.source, sizeof run.source, "%s",
           json_string_value(json_object_get(info, "source")) ?: "");
  fl_symbol_cache_stats_t before, after;
  fl_symbol_cache_stats(&before);
  int64_t started = fl__clock_ns(CLOCK_MONOTONIC);
  fl_profile_t *prof = kn_prof_collect(kn_kernel_prof(e->k), pid, maps_text, &run, err, err_size);
  /* What the symbolizer read for this profile, and what it found kept (a
   * restarted worker's libraries: fl_symbol.h). */
  fl_symbol_cache_stats(&after);
  say(e, 'L',
      "profile of cell %d: read in %.1f ms; modules read %llu, reused %llu; kept %zu (%llu MB)",
      e->cell, (double)(fl__clock_ns(CLOCK_MONOTONIC) - started) / 1e6,
      (unsigned long long)(after.read - before.read),
      (unsigned long long)(after.reused - before.reused), after.modules,
      (unsigned long long)(after.bytes >> 20));
  const char *replaced = json_string_value(json_object_get(info, "handler_replaced"));
  if (prof && replaced && e->profreq.mode != KN_PROF_BASE) {
    /* The cell took over a signal the profiler samples with (signal(SIGTRAP,
     * h), SIG_IGN): sampling stopped then. */
    say(e, 'E',
        "cflame: the cell replaced the handler of %s, which the profiler samples "
        "with, so sampling stopped there: %s. The next profiled cell takes the "
        "handler back.\n",
        replaced,
        fl_profile_n_samples(prof) ? "the graph shows what ran before" : "no sample was taken");
  }
  return prof;
}

static fl_profile_t *sampler_so_far(kn_prof_t *kp, const kn_profreq_t *r, int cell, pid_t pid,
                                    char *err, size_t err_size) {
  kn_prof_run_t run = {.interval_ns = r->delay_ns, .cell = cell, .live = true};
  return kn_prof_collect(kp, pid, NULL, &run, err, err_size);
}

static char *sampler_empty(const kn_exec_t *e, json_t *info, const fl_profile_t *prof) {
  (void)e;
  /* The handler's note said why. */
  if (json_object_get(info, "handler_replaced")) return NULL;
  return kn_prof_empty_message(prof);
}

/* ---- the allocation recorder ---- */

static json_t *recorder_request(kn_prof_t *kp, const kn_exec_t *e, char *err, size_t err_size) {
  const kn_profreq_t *r = &e->profreq;
  uint64_t words = r->n_set ? r->n_words : KN_ALLOCS_DEFAULT_WORDS;
  int made = kn_prof_prepare_allocs(kp, words, err, err_size);
  if (made < 0) return NULL;
  return json_pack("{s:f, s:s, s:I, s:I, s:i, s:b}", "sample_rate", r->sample_rate, "file",
                   kn_prof_allocs_path(kp), "words", (json_int_t)words, "table_slots",
                   (json_int_t)KN_ALLOCS_RUN_TABLE_SLOTS(r->sample_rate), "tag", e->cell, "zeroed",
                   made);
}

static fl_profile_t *recorder_collect(kn_exec_t *e, json_t *ev, json_t *info, const char *maps_text,
                                      pid_t pid, char *err, size_t err_size) {
  (void)maps_text;
  kn_allocs_run_t run = {
      .sample_rate = e->profreq.sample_rate, .kind = e->profreq.kind, .cell = e->cell};
  run.records = (uint64_t)json_integer_value(json_object_get(info, "records"));
  run.dropped = (uint64_t)json_integer_value(json_object_get(info, "dropped"));
  run.calls = (uint64_t)json_integer_value(json_object_get(info, "calls"));
  run.frees = (uint64_t)json_integer_value(json_object_get(info, "frees"));
  run.cpu_seconds = (double)json_integer_value(json_object_get(ev, "cpu_ns")) / 1e9;
  run.wall_seconds = (double)json_integer_value(json_object_get(ev, "wall_ns")) / 1e9;
  int space_errno = (int)json_integer_value(json_object_get(info, "space_errno"));
  if (run.dropped && space_errno) {
    const char *tmp = getenv("TMPDIR");
    say(e, 'E',
        "cflame: %llu sampled allocations were lost because TMPDIR's file system "
        "(%s) %s; make room there, or start the kernel with TMPDIR elsewhere\n",
        (unsigned long long)run.dropped, tmp && *tmp ? tmp : "/tmp",
        space_errno == ENOSPC ? "filled up" : strerror(space_errno));
  }
  return kn_prof_collect_allocs(kn_kernel_prof(e->k), pid, &run, err, err_size);
}

static fl_profile_t *recorder_so_far(kn_prof_t *kp, const kn_profreq_t *r, int cell, pid_t pid,
                                     char *err, size_t err_size) {
  kn_allocs_run_t run = {
      .sample_rate = r->sample_rate, .kind = r->kind, .cell = cell, .live = true};
  return kn_prof_collect_allocs(kp, pid, &run, err, err_size);
}

static char *recorder_empty(const kn_exec_t *e, json_t *info, const fl_profile_t *prof) {
  (void)prof;
  uint64_t calls = (uint64_t)json_integer_value(json_object_get(info, "calls"));
  double sample_rate = e->profreq.sample_rate;
  fl__buf_t sb = FL__BUF_INIT;
  char calls_text[64];
  fl_count_noun(calls, "allocation call", "allocation calls", calls_text, sizeof calls_text);
  if (calls == 0)
    fl__buf_puts(&sb,
                 "No allocations: the cell made no call to malloc, calloc, realloc or an "
                 "aligned allocation function while it ran.\n");
  else if (fl_kind(e->profreq.kind)->live)
    fl__buf_printf(&sb,
                   "Nothing is still allocated: of the %s the cell made"
                   "%s, every block recorded was freed before it ended (live=true).\n",
                   calls_text, sample_rate < 1 ? " (a sample of them recorded)" : "");
  else
    fl__buf_printf(&sb,
                   "No allocation was sampled: the cell made %s and "
                   "sample_rate=%g recorded none of them; use a higher sample_rate= "
                   "(1 records every one).\n",
                   calls_text, sample_rate);
  return fl__buf_take(&sb);
}

static const collector_t sampler = {"profile",       "the profile",   true,
                                    sampler_request, sampler_collect, sampler_empty,
                                    sampler_so_far};
static const collector_t recorder = {"allocs",         "the allocation profile", false,
                                     recorder_request, recorder_collect,         recorder_empty,
                                     recorder_so_far};

/* The collector of each kind of samples the kernel can take; NULL: none
 * (kinds only read from files). */
static const collector_t *const collectors[FL_PROFILE_N_KINDS] = {
    [FL_PROFILE_CPU] = &sampler,          [FL_PROFILE_WALL] = &sampler,
    [FL_PROFILE_EVENT] = &sampler,
    [FL_PROFILE_ALLOC_BYTES] = &recorder,
    [FL_PROFILE_ALLOC_COUNT] = &recorder, [FL_PROFILE_LIVE_BYTES] = &recorder,
    [FL_PROFILE_LIVE_COUNT] = &recorder,
};

static const collector_t *collector_of(const kn_exec_t *e) {
  const collector_t *c = collectors[e->profreq.kind];
  assert(c); /* kn_profreq_kind only settles on kinds the options can name */
  return c;
}

json_t *kn_profrun_request(kn_exec_t *e, const char **key, char *err, size_t err_size) {
  const collector_t *c = collector_of(e);
  *key = c->key;
  return c->request(kn_kernel_prof(e->k), e, err, err_size);
}

fl_profile_t *kn_profrun_so_far(kn_prof_t *kp, const kn_profreq_t *r, int cell, pid_t pid,
                               char *err, size_t err_size) {
  const collector_t *c = collectors[r->kind];
  assert(c);
  return c->so_far(kp, r, cell, pid, err, err_size);
}

bool kn_profrun_after_crash(const kn_exec_t *e) {
  return collector_of(e)->after_crash;
}

/* The job (kn_job_fn, ctx e): reads the run's samples or allocations,
 * keeps them as e's magic says, draws its graph into res->display, keeps
 * the run. An interrupt stops the reading of nothing and the keeping of
 * nothing: it only stops the drawing (kn_job_stop), before or while it
 * runs. Returns 0, or -1 with err when there is nothing to show. */
static int profile_run(kn_prof_t *kp, void *ctx, kn_magic_result_t *res, char *err,
                       size_t err_size) {
  kn_exec_t *e = ctx;
  kn_profrun_t *pr = e->profrun;
  const collector_t *c = collector_of(e);
  json_t *report = json_object_get(pr->ev, c->key);
  char why[512];
  fl_profile_t *prof = c->collect(e, pr->ev, report, pr->maps_text, pr->pid, why, sizeof why);
  if (!prof) {
    snprintf(err, err_size, "cflame: %s could not be read: %s", c->what, why);
    return -1;
  }
  pr->kept = true;
  fl_profile_info_t *pi = fl_profile_info(prof);
  snprintf(pi->compiler, sizeof pi->compiler, "%s", pr->compiler);
  kn_profmode_t mode = e->profreq.mode;
  if (mode == KN_PROF_BASE) {
    kn_prof_set_baseline(kp, e->profreq.baseline, prof);
    char *summary = kn_prof_summary(kp, prof);
    say(e, 'O', "Baseline %s: %s\n", e->profreq.baseline, summary);
    free(summary);
  } else {
    kn_prof_session_take(kp, prof, mode);
  }
  int rc = 0;
  bool has_samples = fl_profile_n_samples(prof) > 0;
  if ((mode == KN_PROF_VIEW || mode == KN_PROF_DIFF) && has_samples) {
    /* Interrupted before it began, it does not begin. */
    if (!kn_prof_cancelled(kp)) {
      char name[32];
      snprintf(name, sizeof name, KN_CELL_FILE_FMT, e->cell);
      res->display =
          mode == KN_PROF_DIFF
              ? kn_prof_show_diff(kp, prof, kn_prof_diff_base(kp, e->profreq.baseline, e->cell_key),
                                  &e->profreq, name, err, err_size)
              : kn_prof_show(kp, prof, &e->profreq, name, err, err_size);
      if (!res->display) rc = -1;
    }
  } else if (mode == KN_PROF_VIEW || mode == KN_PROF_DIFF) {
    char *msg = c->empty(e, report, prof);
    if (msg) say(e, 'O', "%s", msg);
    free(msg);
  } else if (mode == KN_PROF_ACCUMULATE && pi->dropped) {
    char *summary = kn_prof_summary(kp, prof);
    say(e, 'E', "%s\n", summary);
    free(summary);
  }
  /* Kept after it was drawn: %%profdiffview prev compared it with the run
   * before. */
  if (has_samples) kn_profhist_add(kn_prof_history(kp), prof, e->cell_key, e->cell);
  fl_profile_destroy(&prof);
  return rc;
}

void kn_profrun_done(kn_exec_t *e, json_t *ev, const char *maps_text, pid_t pid,
                     kn_exec_then_fn then) {
  kn_kernel_t *k = e->k;
  kn_session_t *session = kn_kernel_session(k);
  kn_profrun_t *pr = fl__xcalloc(1, sizeof *pr);
  pr->ev = json_incref(ev);
  pr->maps_text = maps_text;
  pr->pid = maps_text ? pid : kn_worker_pid(kn_kernel_worker(k));
  fl__buf_t cc = FL__BUF_INIT;
  fl__buf_printf(&cc, "%s " KN_BASE_CFLAGS " %s %s", kn_session_cc(session),
                 kn_session_cflags(session), kn_session_ldflags(session));
  pr->compiler = fl__buf_take(&cc);
  pr->then = then;
  pr->notes = (fl__buf_t)FL__BUF_INIT;
  e->profrun = pr;
  e->profrun_free = profrun_free;
  e->graph_interrupted = false;
  /* A live graph under way reads the buffer and the symbolizer the job
   * does: it ends first (at a crash; a cell that ends waits for it,
   * kn_events.c, and finds it ended). */
  if (e->live) kn_live_stop(e->live);
  char err[512];
  e->job = kn_job_start_fn(kn_kernel_prof(k), profile_run, e, err, sizeof err);
  if (!e->job) {
    kn_exec_print(e, 'E', "cflame: %s could not be read: %s\n", collector_of(e)->what, err);
    profrun_free(&e->profrun);
    then(e);
  }
}

void kn_profrun_interrupt(kn_exec_t *e) {
  e->graph_interrupted = true;
  kn_job_stop(e->job);
}

void kn_profrun_drawn(kn_exec_t *e) {
  char err[1024];
  kn_magic_result_t res = {0};
  int rc = kn_job_finish(&e->job, &res, err, sizeof err);
  kn_profrun_t *pr = e->profrun;
  for (size_t at = 0; at < pr->notes.len;) {
    char stream = pr->notes.data[at];
    size_t len;
    memcpy(&len, pr->notes.data + at + 1, sizeof len);
    const char *text = pr->notes.data + at + 1 + sizeof len;
    if (stream == 'L')
      kn_log(e->k, KN_LOG_DEBUG, "%.*s", (int)len, text);
    else
      kn_exec_output(e, stream, text, len);
    at += 1 + sizeof len + len;
  }
  /* What the job did is what the cell shows: a graph finished before the
   * interrupt reached it is shown, and the interrupt changed nothing; a
   * profile that could not be read says so, not that it was kept. */
  if (res.display || !pr->kept) e->graph_interrupted = false;
  if (rc < 0 && !e->graph_interrupted) kn_exec_print(e, 'E', "%s\n", err);
  if (res.display) {
    /* It replaces the live graph shown while the cell ran, if any. */
    const char *live_id = e->live ? kn_live_display_id(e->live) : NULL;
    kn_exec_display_id(e, res.display, live_id, live_id != NULL);
  }
  free(res.output);
  kn_exec_then_fn then = pr->then;
  profrun_free(&e->profrun);
  then(e);
}
