/* The restart policy: when the worker dies, the kernel says why in the
 * terms of the cell (a fault with its traceback, exit(), an interrupt that
 * did not stop, a channel the cell broke), starts a new worker and reloads
 * every committed cell's code, so the session keeps its definitions; global
 * variables start again from their initial values, and the message says so.
 * A cell whose run ended badly still compiled and loaded: its definitions
 * stay. What was profiled until the crash is shown, as at a normal end.
 * See kn_exec.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "kn_crash.h"
#include "kn_exec.h"

/* The worker is gone while e ran: say why, start a new worker, reload the
 * session's code. */
static void during_cell(kn_kernel_t *k, kn_exec_t *e, int status, const char *reason) {
  /* The cell compiled and loaded: its definitions stay in the session even
   * though its run ended badly. */
  if (e->compiled) kn_session_commit(kn_kernel_session(k), &e->compiled);
  /* The samples survive the crash in the shared buffer: what was profiled up
   * to the crash is shown and joins the session profile, as it would have
   * at the end of the run (a run cut short makes no baseline). */
  const char *profile_note = e->profreq.mode == KN_PROF_BASE ? kn_profrun_cut_short_note(KN_PROF_BASE) : "";
  if (e->profreq.mode != KN_PROF_NONE && !e->profreq.allocs && e->crash_report) {
    const char *maps = strstr(e->crash_report, "\nmaps\n");
    const char *tid = strstr(e->crash_report, "\nmain_tid ");
    if (maps && tid && e->profreq.mode != KN_PROF_BASE) {
      kn_profrun_done(e, NULL, maps + 6, (pid_t)atoi(tid + 10));
      profile_note = kn_profrun_cut_short_note(e->profreq.mode);
    }
  }

  char err[512];
  int rc = kn_kernel_start_worker(k, err, sizeof err);
  const char *restart_note =
      rc < 0 ? "The worker could not be restarted: "
             : kn_session_has_globals(kn_kernel_session(k))
                   ? "The worker process was restarted: earlier cells' definitions were reloaded, "
                     "and global variables were reset to their initial values."
                   : "The worker process was restarted: earlier cells' definitions were reloaded.";
  kn_strbuf_t note = KN_STRBUF_INIT;
  kn_strbuf_puts(&note, restart_note);
  if (rc < 0) kn_strbuf_puts(&note, err);

  json_t *tb = json_array();
  kn_strbuf_t value = KN_STRBUF_INIT;
  const char *ename;
  if (reason && *reason) {
    /* The kernel ended the worker because of what the cell did to its
     * channels. */
    ename = "ChannelError";
    kn_strbuf_puts(&value, reason);
    json_array_append_new(tb, kn_wire_textf("ChannelError: %s", reason));
  } else if (e->interrupt_stage > 0) {
    ename = "Interrupted";
    kn_strbuf_puts(&value, "the cell was interrupted; it did not stop in time, so its process "
                           "was ended");
    json_array_append_new(tb, kn_wire_textf("Interrupted: %s", value.data));
  } else if (WIFEXITED(status)) {
    ename = "Exit";
    kn_strbuf_printf(&value, "the cell called exit(%d)", WEXITSTATUS(status));
    json_array_append_new(tb, kn_wire_textf("Exit: %s", value.data));
  } else {
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    ename = kn_signal_name(sig);
    if (e->crash_report) {
      char *headline;
      kn_crash_describe(e->crash_report, sig, &headline, tb);
      kn_strbuf_puts(&value, headline);
      free(headline);
    } else {
      kn_strbuf_printf(&value, "the worker process died of %s (%s)", kn_signal_name(sig),
                       strsignal(sig));
      json_array_append_new(tb, kn_wire_textf("%s: %s", ename, value.data));
    }
  }
  kn_strbuf_printf(&value, ". %s%s", note.data, profile_note);
  json_array_append_new(tb, kn_wire_text(note.data));
  if (*profile_note) json_array_append_new(tb, kn_wire_text(profile_note + 1));
  char *ename_copy = kn_strdup(ename);
  kn_exec_finish(e, ename_copy, value.data, tb);
  free(ename_copy);
  kn_strbuf_free(&value);
  kn_strbuf_free(&note);
}

/* The worker ended while no cell ran (an alarm, a thread of an earlier
 * cell, a signal from outside): it is restarted now, and the next cell's
 * output says what happened, as a crash during a cell does. */
static void between_cells(kn_kernel_t *k, int status, const char *reason) {
  char *what = kn_describe_exit(status, reason), err[512];
  kn_log(k, "between cells, %s; restarting it", what);
  int rc = kn_kernel_start_worker(k, err, sizeof err);
  kn_strbuf_t note = KN_STRBUF_INIT;
  kn_strbuf_printf(&note, "cflame: between cells, %s. ", what);
  if (rc < 0)
    kn_strbuf_printf(&note, "The worker could not be restarted: %s\n", err);
  else if (kn_session_has_globals(kn_kernel_session(k)))
    kn_strbuf_puts(&note, "The worker was restarted: earlier cells' definitions were reloaded, and "
                          "global variables were reset to their initial values.\n");
  else
    kn_strbuf_puts(&note, "The worker was restarted: earlier cells' definitions were reloaded.\n");
  kn_kernel_note_between_cells(k, kn_strbuf_steal(&note));
  free(what);
}


void kn_restart_after_exit(kn_kernel_t *k, kn_exec_t *e, int status, const char *reason) {
  if (e)
    during_cell(k, e, status, reason);
  else
    between_cells(k, status, reason);
}
