/* SPDX-License-Identifier: BSD-3-Clause */
/* The restart policy: when the worker dies, the kernel says why in the
 * terms of the cell (a fault with its traceback, exit(), an interrupt that
 * did not stop, a channel the cell broke), starts a new worker and reloads
 * every committed cell's code, so the session keeps its definitions; global
 * variables start again from their initial values, and the message says so.
 * A cell whose run ended badly still compiled and loaded: its definitions
 * stay; one that ended the worker before its code had loaded (a constructor
 * that crashed or never returned) is not kept. What was profiled until the
 * crash is shown, as at a normal end.
 *
 * The new worker's start is a job the main loop carries on (kn_worker.c):
 * the cell that crashed is answered when it ends, and a cell whose code does
 * not load again (its constructor hangs or crashes, or an interrupt ends its
 * load) is dropped from the session, which the output says. See kn_exec.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kn_crash.h"
#include "kn_exec.h"
#include "kn_worker.h"

/* Says text to the user: in the running cell's output, or at the start of
 * the next cell's (first: before what is already to be said there). */
static void say(kn_kernel_t *k, const char *text, bool first) {
  kn_exec_t *e = kn_kernel_exec(k);
  if (e) {
    kn_exec_print(e, 'E', "%s", text);
    return;
  }
  char *note = kn_kernel_take_note(k);
  fl__buf_t sb = FL__BUF_INIT;
  if (!first && note) fl__buf_puts(&sb, note);
  fl__buf_puts(&sb, text);
  if (first && note) fl__buf_puts(&sb, note);
  free(note);
  kn_kernel_note_between_cells(k, fl__buf_take(&sb));
}

/* How the restart went, as a sentence: failure is why there is no worker,
 * or NULL. */
static void restart_outcome(kn_kernel_t *k, const char *failure, fl__buf_t *out) {
  if (failure)
    fl__buf_printf(out, "The worker could not be restarted: %s", failure);
  else if (kn_session_has_globals(kn_kernel_session(k)))
    fl__buf_puts(out,
                   "The worker was restarted: earlier cells' definitions were reloaded, and "
                   "global variables were reset to their initial values.");
  else
    fl__buf_puts(out, "The worker was restarted: earlier cells' definitions were reloaded.");
}

int kn_restart_worker(kn_kernel_t *k, char *err, size_t err_size) {
  kn_session_t *s = kn_kernel_session(k);
  /* Earlier cells' code comes back; their statements do not run again. */
  size_t n = kn_session_n_objects(s);
  kn_worker_object_t *objects = fl__xcalloc(n ? n : 1, sizeof *objects);
  for (size_t i = 0; i < n; i++)
    objects[i] =
        (kn_worker_object_t){kn_session_object(s, i), kn_session_object_frame_pointers(s, i)};
  int rc = kn_worker_start(kn_kernel_worker(k), NULL, objects, n, err, err_size);
  free(objects);
  return rc;
}

/* Starts a new worker; a start that fails at once ends at once. */
static void start_again(kn_kernel_t *k) {
  char err[512];
  if (kn_restart_worker(k, err, sizeof err) < 0) kn_restart_on_started(k, err);
}

static void died_after_profile(kn_exec_t *e);

/* The worker is gone while e ran: the error is made now and said once the
 * new worker has started (finish_died). */
static void during_cell(kn_kernel_t *k, kn_exec_t *e, int status, const char *reason) {
  /* The cell compiled and loaded: its definitions stay in the session even
   * though its run ended badly. One whose code never finished loading is
   * not kept: the new worker would load it again. */
  bool kept = e->loaded;
  /* No live graph of a worker that is gone; the final one replaces the
   * last shown. */
  if (e->live) kn_live_stop(e->live);
  if (kept)
    kn_session_commit(kn_kernel_session(k), &e->compiled);
  else
    kn_compiled_destroy(&e->compiled);
  e->died_status = status;
  e->died_reason = fl__xstrdup(reason ? reason : "");
  /* The samples survive the crash in the shared buffer: what was profiled up
   * to the crash is shown and joins the session profile, as it would have
   * at the end of the run (a run cut short makes no baseline). The rest
   * waits for its graph (died_after_profile). */
  kn_profmode_t mode = e->profreq.mode;
  e->died_profile_note = fl__xstrdup(mode == KN_PROF_BASE ? kn_profrun_cut_short_note(mode) : "");
  if (kept && mode != KN_PROF_NONE && kn_profrun_after_crash(e) && e->crash_report) {
    const char *maps = strstr(e->crash_report, "\nmaps\n");
    const char *tid = strstr(e->crash_report, "\nmain_tid ");
    if (maps && tid && mode != KN_PROF_BASE) {
      free(e->died_profile_note);
      e->died_profile_note = fl__xstrdup(kn_profrun_cut_short_note(mode));
      kn_profrun_done(e, NULL, maps + 6, (pid_t)atoi(tid + 10), died_after_profile);
      return;
    }
  }
  died_after_profile(e);
}

/* during_cell's rest, once the profile of what ran is shown: the error,
 * and a new worker. */
static void died_after_profile(kn_exec_t *e) {
  kn_kernel_t *k = e->k;
  bool kept = e->loaded;
  int status = e->died_status;
  const char *reason = e->died_reason;
  if (e->graph_interrupted) {
    free(e->died_profile_note);
    e->died_profile_note = kn_profrun_not_drawn_note(e);
  }
  json_t *tb = json_array();
  fl__buf_t value = FL__BUF_INIT;
  const char *ename;
  if (reason && *reason) {
    /* The kernel ended the worker because of what the cell did to its
     * channels. */
    ename = "ChannelError";
    fl__buf_puts(&value, reason);
    json_array_append_new(tb, kn_wire_textf("ChannelError: %s", reason));
  } else if (e->interrupt_stage > 0) {
    ename = "Interrupted";
    fl__buf_puts(&value, kept ? "the cell was interrupted; it did not stop in time, so its "
                                  "process was ended"
                                : "the cell was interrupted while its code loaded (a constructor "
                                  "had not returned); its process was ended, and the cell is "
                                  "not kept");
    json_array_append_new(tb, kn_wire_textf("Interrupted: %s", value.data));
  } else if (WIFEXITED(status)) {
    ename = "Exit";
    fl__buf_printf(&value, "the cell called exit(%d)", WEXITSTATUS(status));
    json_array_append_new(tb, kn_wire_textf("Exit: %s", value.data));
  } else {
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    ename = kn_signal_name(sig);
    if (e->crash_report) {
      char *headline;
      kn_crash_describe(e->crash_report, sig, &headline, tb);
      fl__buf_puts(&value, headline);
      free(headline);
    } else {
      fl__buf_printf(&value, "the worker process died of %s (%s)", kn_signal_name(sig),
                       strsignal(sig));
      json_array_append_new(tb, kn_wire_textf("%s: %s", ename, value.data));
    }
  }
  if (!kept && e->interrupt_stage == 0) {
    const char *not_kept = "The cell is not kept: its code never finished loading";
    fl__buf_printf(&value, ". %s", not_kept);
    json_array_append_new(tb, kn_wire_textf("%s.", not_kept));
  }
  e->died_ename = fl__xstrdup(ename);
  e->died_value = fl__buf_take(&value);
  e->died_traceback = tb;
  /* Whatever it was escalating to, the interrupt is over: the next one
   * speaks to the new worker's start. */
  e->interrupt_stage = 0;
  start_again(k);
}

/* e's worker died under it (during_cell): its error, with how the restart
 * went (failure, or NULL). */
static void finish_died(kn_kernel_t *k, kn_exec_t *e, const char *failure) {
  fl__buf_t note = FL__BUF_INIT, value = FL__BUF_INIT;
  restart_outcome(k, failure, &note);
  fl__buf_printf(&value, "%s. %s%s", e->died_value, note.data, e->died_profile_note);
  json_t *tb = e->died_traceback;
  e->died_traceback = NULL;
  json_array_append_new(tb, kn_wire_text(note.data));
  if (*e->died_profile_note) json_array_append_new(tb, kn_wire_text(e->died_profile_note + 1));
  char *ename = e->died_ename;
  e->died_ename = NULL;
  kn_exec_finish(e, ename, value.data, tb);
  free(ename);
  fl__buf_free(&value);
  fl__buf_free(&note);
}

/* The worker ended while no cell ran (an alarm, a thread of an earlier
 * cell, a signal from outside), or while the running one compiled: it is
 * restarted now, and the output says what happened once the restart has
 * ended, as a crash during a cell does. */
static void between_cells(kn_kernel_t *k, int status, const char *reason) {
  char *what = kn_describe_exit(status, reason);
  kn_log(k, KN_LOG_DEBUG, "between cells, %s; restarting it", what);
  kn_kernel_set_restart_cause(k, what);
  start_again(k);
}

void kn_restart_after_exit(kn_kernel_t *k, kn_exec_t *e, int status, const char *reason) {
  /* The cell ran in it once its run command was sent. */
  if (e && e->compiled && !e->compiling && !e->run_cmd)
    during_cell(k, e, status, reason);
  else
    between_cells(k, status, reason);
}

void kn_restart_on_dropped(kn_kernel_t *k, const char *path, const char *why) {
  int cell = kn_session_drop_object(kn_kernel_session(k), path);
  kn_log(k, KN_LOG_DEBUG, "dropped %s from the session: %s", path, why);
  if (cell < 0) return;
  fl__buf_t sb = FL__BUF_INIT;
  fl__buf_printf(&sb,
                   "cflame: cell %d was dropped from the session when the worker was "
                   "restarted: %s. Its functions and variables are gone; its types and "
                   "macros stay.\n",
                   cell, why);
  say(k, sb.data, false);
  fl__buf_free(&sb);
}

void kn_restart_on_started(kn_kernel_t *k, const char *failure) {
  kn_exec_t *e = kn_kernel_exec(k);
  char *cause = kn_kernel_take_restart_cause(k);
  if (failure) kn_log(k, KN_LOG_WARN, "no worker: %s", failure);
  if (e && e->died_ename) {
    finish_died(k, e, failure);
    e = NULL;
  } else if (cause) {
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "cflame: between cells, %s. ", cause);
    restart_outcome(k, failure, &sb);
    fl__buf_putc(&sb, '\n');
    say(k, sb.data, true);
    fl__buf_free(&sb);
  } else if (failure && !(e && e->run_cmd)) {
    fl__buf_t sb = FL__BUF_INIT;
    fl__buf_printf(&sb, "cflame: the worker could not be started: %s\n", failure);
    say(k, sb.data, true);
    fl__buf_free(&sb);
  }
  free(cause);
  if (e && e->run_cmd) {
    if (failure)
      kn_exec_fail(e, "KernelError", "the worker could not be started: %s", failure);
    else
      kn_exec_send_run(e);
  }
}
