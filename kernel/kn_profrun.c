/* What a profiled run leaves: its profile read from the worker's buffer,
 * then shown as a flame graph or a diff, kept as a baseline, or added to
 * the session profile, as its magic says (see kn_exec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cflame/fl_render.h"
#include "kn_exec.h"
#include "kn_names.h"
#include "kn_prof.h"
#include "kn_worker.h"

/* What became of the profile of a run cut short (a crash, an interrupt),
 * for the error message: " The flame graph shows ..." or "". */
const char *kn_profrun_cut_short_note(kn_profmode_t mode) {
  switch (mode) {
  case KN_PROF_VIEW:
  case KN_PROF_DIFF:
  case KN_PROF_ALLOCS:
    return " The flame graph shows what the cell ran until then.";
  case KN_PROF_ACCUMULATE:
    return " What the cell ran until then was added to the session profile.";
  case KN_PROF_BASE:
    return " No baseline was kept: a run cut short is not one.";
  default:
    return "";
  }
}

/* Shows prof, the profile of e's cell: its flame graph, or for
 * %%profdiffview its diff against the baseline; a graph that cannot be
 * drawn is reported on stderr. */
static void show_cell_profile(kn_exec_t *e, const fl_profile_t *prof) {
  kn_kernel_t *k = e->k;
  kn_prof_t *kp = kn_kernel_prof(k);
  char name[32], err[512];
  snprintf(name, sizeof name, KN_CELL_FILE_FMT, e->cell);
  json_t *content =
      e->profreq.mode == KN_PROF_DIFF
          ? kn_prof_show_diff(kp, prof, kn_prof_baseline(kp, e->profreq.baseline),
                              &e->profreq, name, err, sizeof err)
          : kn_prof_show(kp, prof, &e->profreq, name, err, sizeof err);
  if (content) {
    kn_exec_display(e, content);
  } else {
    kn_exec_output(e, 'E', err, strlen(err));
    kn_exec_output(e, 'E', "\n", 1);
  }
}

/* The allocation-profiled run of e ended (ev is the worker's "done"
 * event): read the records, keep them as a baseline or show their graph. */
static void allocs_done(kn_exec_t *e, json_t *ev) {
  kn_kernel_t *k = e->k;
  kn_prof_t *kp = kn_kernel_prof(k);
  kn_session_t *session = kn_kernel_session(k);
  json_t *info = json_object_get(ev, "allocs");
  kn_allocs_run_t run = {.sample_rate = e->profreq.sample_rate,
                         .live = e->profreq.live,
                         .weight_count = e->profreq.weight_count,
                         .cell = e->cell};
  run.records = (uint64_t)json_integer_value(json_object_get(info, "records"));
  run.dropped = (uint64_t)json_integer_value(json_object_get(info, "dropped"));
  run.calls = (uint64_t)json_integer_value(json_object_get(info, "calls"));
  run.frees = (uint64_t)json_integer_value(json_object_get(info, "frees"));
  run.cpu_seconds = (double)json_integer_value(json_object_get(ev, "cpu_ns")) / 1e9;
  run.wall_seconds = (double)json_integer_value(json_object_get(ev, "wall_ns")) / 1e9;
  char err[512];
  fl_profile_t *prof =
      kn_prof_collect_allocs(kp, kn_worker_pid(kn_kernel_worker(k)), &run, err, sizeof err);
  if (!prof) {
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "cflame: the allocation profile could not be read: %s\n", err);
    kn_exec_output(e, 'E', sb.data, sb.len);
    fl__buf_free(&sb);
    return;
  }
  fl_profile_info_t *pi = fl_profile_info(prof);
  snprintf(pi->compiler, sizeof pi->compiler, "%s " KN_BASE_CFLAGS " %s %s", kn_session_cc(session),
           kn_session_cflags(session), kn_session_ldflags(session));
  char *summary = kn_prof_summary(prof);
  if (e->profreq.mode == KN_PROF_BASE) {
    kn_prof_set_baseline(kp, e->profreq.baseline, prof);
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "Baseline %s: %s\n", e->profreq.baseline, summary);
    kn_exec_output(e, 'O', sb.data, sb.len);
    fl__buf_free(&sb);
  } else if (fl_profile_n_samples(prof) == 0) {
    fl__buf_t sb = FL__BUF_INIT;
    char calls[64];
    fl_count_noun(run.calls, "allocation call", "allocation calls", calls, sizeof calls);
    if (run.calls == 0)
      fl__buf_puts(&sb, "No allocations: the cell made no call to malloc, calloc, realloc or an "
                          "aligned allocation function while it ran.\n");
    else if (run.live)
      fl__buf_printf(&sb, "Nothing is still allocated: of the %s the cell made"
                            "%s, every block recorded was freed before it ended (live=true).\n",
                       calls,
                       run.sample_rate < 1 ? " (a sample of them recorded)" : "");
    else
      fl__buf_printf(&sb, "No allocation was sampled: the cell made %s and "
                            "sample_rate=%g recorded none of them; use a higher sample_rate= "
                            "(1 records every one).\n",
                       calls, run.sample_rate);
    kn_exec_output(e, 'O', sb.data, sb.len);
    fl__buf_free(&sb);
  } else {
    show_cell_profile(e, prof);
  }
  free(summary);
  fl_profile_destroy(&prof);
}

void kn_profrun_done(kn_exec_t *e, json_t *ev, const char *maps_text, pid_t pid) {
  if (e->profreq.allocs) {
    allocs_done(e, ev);
    return;
  }
  kn_kernel_t *k = e->k;
  kn_prof_t *kp = kn_kernel_prof(k);
  kn_session_t *session = kn_kernel_session(k);
  json_t *info = json_object_get(ev, "profile");
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

  char err[512];
  fl_profile_t *prof = kn_prof_collect(kp, maps_text ? pid : kn_worker_pid(kn_kernel_worker(k)),
                                       maps_text, &run, err, sizeof err);
  if (!prof) {
    char *msg = fl__xstrdup(err);
    kn_exec_output(e, 'E', "cflame: the profile could not be read: ", 39);
    kn_exec_output(e, 'E', msg, strlen(msg));
    kn_exec_output(e, 'E', "\n", 1);
    free(msg);
    return;
  }
  fl_profile_info_t *pi = fl_profile_info(prof);
  snprintf(pi->compiler, sizeof pi->compiler, "%s " KN_BASE_CFLAGS " %s %s", kn_session_cc(session),
           kn_session_cflags(session), kn_session_ldflags(session));
  if (e->profreq.mode == KN_PROF_BASE) {
    kn_prof_set_baseline(kp, e->profreq.baseline, prof);
    char *summary = kn_prof_summary(prof);
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "Baseline %s: %s\n", e->profreq.baseline, summary);
    kn_exec_output(e, 'O', sb.data, sb.len);
    fl__buf_free(&sb);
    free(summary);
    fl_profile_destroy(&prof);
    return;
  }
  kn_prof_session_take(kp, prof, e->profreq.mode);
  const char *replaced = json_string_value(json_object_get(info, "handler_replaced"));
  if (replaced) {
    /* The cell took over a signal the profiler samples with (signal(SIGTRAP,
     * h), SIG_IGN): sampling stopped then. */
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "cflame: the cell replaced the handler of %s, which the profiler samples "
                          "with, so sampling stopped there: %s. The next profiled cell takes the "
                          "handler back.\n",
                     replaced, fl_profile_n_samples(prof) ? "the graph shows what ran before"
                                                          : "no sample was taken");
    kn_exec_output(e, 'E', sb.data, sb.len);
    fl__buf_free(&sb);
  }
  if (e->profreq.mode == KN_PROF_VIEW || e->profreq.mode == KN_PROF_DIFF) {
    if (fl_profile_n_samples(prof) == 0) {
      if (!replaced) {
        char *msg = kn_prof_empty_message(prof);
        kn_exec_output(e, 'O', msg, strlen(msg));
        free(msg);
      }
    } else {
      show_cell_profile(e, prof);
    }
  } else if (run.dropped) {
    char *summary = kn_prof_summary(prof);
    kn_exec_output(e, 'E', summary, strlen(summary));
    kn_exec_output(e, 'E', "\n", 1);
    free(summary);
  }
  fl_profile_destroy(&prof);
}

