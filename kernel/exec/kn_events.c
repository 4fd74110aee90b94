/* SPDX-License-Identifier: BSD-3-Clause */
/* What the worker says while a cell runs, and interrupts (see kn_exec.h).
 *
 * An interrupt escalates: SIGINT to the worker's process group first (the
 * cell may handle it, and a cell blocked in a system call is unwound at
 * once); SIGUSR2 after INTERRUPT_FORCE_MS unwinds the cell wherever it is;
 * after INTERRUPT_KILL_MS the worker is killed and restarted, which loses
 * global variables but never the kernel. The worker notes an interrupt
 * that comes after it read the run command and before the cell started;
 * one that came before it read the command is sent again when it says the
 * run is under way ("running"), and the escalation starts again from
 * there. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__common.h"
#include "kn_exec.h"
#include "kn_job.h"
#include "kn_timeit.h"
#include "kn_worker.h"

#define INTERRUPT_FORCE_MS 250
#define INTERRUPT_KILL_MS 800

/* The rest of a cell that ran to its end, once its graph is drawn: the
 * trailing expression's value (Out[n], after the graph), what main
 * returned, the reply. */
static void after_run(kn_exec_t *e) {
  json_t *ev = e->done_ev;
  if (e->graph_interrupted) {
    char *note = kn_profrun_not_drawn_note(e);
    kn_exec_fail(e, "Interrupted",
                 "the cell ran to its end, and was interrupted while its "
                 "flame graph was drawn.%s",
                 note);
    free(note);
    return;
  }
  const char *value = json_string_value(json_object_get(ev, "value"));
  const char *value_error = json_string_value(json_object_get(ev, "value_error"));
  if (value)
    kn_exec_result(e, value);
  else if (value_error)
    kn_exec_print(e, 'E', "cflame: %s\n", value_error);
  int rc = (int)json_integer_value(json_object_get(ev, "rc"));
  if (e->has_main && rc != 0) {
    kn_exec_fail(e, "MainReturned", "main returned %d", rc);
    return;
  }
  kn_exec_finish_ok(e);
}

/* The rest of a cell that was interrupted, once its graph is drawn. */
static void after_interrupted_run(kn_exec_t *e) {
  char *note = e->graph_interrupted ? kn_profrun_not_drawn_note(e)
                                    : fl__xstrdup(kn_profrun_cut_short_note(e->profreq.mode));
  kn_exec_fail(e, "Interrupted", "the cell was interrupted%s%s", *note ? "." : "", note);
  free(note);
}

static void on_done(kn_kernel_t *k, kn_exec_t *e, json_t *ev) {
  kn_session_t *session = kn_kernel_session(k);
  const char *status = json_string_value(json_object_get(ev, "status"));
  if (status && !strcmp(status, "error")) {
    const char *ename = json_string_value(json_object_get(ev, "ename"));
    const char *evalue = json_string_value(json_object_get(ev, "evalue"));
    /* "/tmp/cflame-x/cell_3.so: undefined symbol: foo" -> the part that
     * speaks of the user's code. */
    const char *msg = evalue ? evalue : "";
    const char *u = strstr(msg, "undefined symbol: ");
    char *clean = kn_session_clean_message(u ? u : msg);
    kn_exec_fail(e, ename ? ename : "Error", "%s", clean);
    free(clean);
    return;
  }
  if (!e->compiled) {
    kn_exec_finish_ok(e);
    return;
  }
  /* It ran (perhaps partly): its definitions are now part of the session. */
  bool has_main = e->compiled->has_main;
  kn_session_commit(session, &e->compiled);
  /* The worker has answered any interrupt: nothing escalates while the
   * graph is drawn. */
  e->interrupt_stage = 0;
  if (status && !strcmp(status, "interrupted") && json_is_false(json_object_get(ev, "started"))) {
    kn_exec_fail(e, "Interrupted", "the cell was interrupted before it started; nothing ran");
    return;
  }
  if (status && !strcmp(status, "interrupted")) {
    /* What ran until the interrupt was sampled: that is how one sees
     * where a cell that does not end spends its time. */
    kn_profmode_t mode = e->profreq.mode;
    if (mode != KN_PROF_NONE && mode != KN_PROF_BASE)
      kn_profrun_done(e, ev, NULL, 0, after_interrupted_run);
    else
      after_interrupted_run(e);
    return;
  }
  json_t *t = json_object_get(ev, "timeit");
  if (t) {
    char *report = kn_timeit_report(t);
    kn_exec_output(e, 'O', report, strlen(report));
    free(report);
  }
  e->done_ev = json_incref(ev);
  e->has_main = has_main;
  if (e->profreq.mode != KN_PROF_NONE)
    kn_profrun_done(e, ev, NULL, 0, after_run);
  else
    after_run(e);
}

static void send_to_worker(kn_kernel_t *k, json_t *cmd) {
  char err[256];
  if (kn_worker_send(kn_kernel_worker(k), cmd, err, sizeof err) < 0)
    kn_log(k, KN_LOG_WARN, "%s", err);
  json_decref(cmd);
}

static void on_input_request(kn_kernel_t *k, kn_exec_t *e, json_t *ev) {
  if (!e->allow_stdin) {
    send_to_worker(k, json_pack("{s:s}", "op", "input_eof"));
    return;
  }
  e->input_pending = true;
  /* What the cell printed before it read (the worker flushed its stdout
   * first) goes out before the request, and an unfinished last line of it
   * ("give a: ") is the prompt, shown where a terminal shows it: before
   * the answer, once. */
  char *line = kn_output_take_partial_line(&e->out);
  kn_output_flush(&e->out, true);
  const char *prompt = json_string_value(json_object_get(ev, "prompt"));
  kn_reply(k, KN_STDIN, e->request, "input_request",
           json_pack("{s:s, s:b}", "prompt", prompt && *prompt ? prompt : line ? line : "",
                     "password", json_is_true(json_object_get(ev, "password"))));
  free(line);
}

/* The worker says the cell's object has loaded and its run is under way.
 * An interrupt sent before it read the run command (a worker that did not
 * get the CPU for a while, on a busy machine) found no run to end: it is
 * sent again, and the time the cell has to stop counts from now, not from
 * while its object loaded. */
static void on_running(kn_kernel_t *k, kn_exec_t *e) {
  /* every=: the live graphs count the cell's time from here. */
  if (e->profreq.every_ns && e->profreq.mode == KN_PROF_VIEW && !e->live)
    e->live = kn_live_new(kn_kernel_prof(k), &e->profreq, e->cell,
                          kn_worker_pid(kn_kernel_worker(k)), kn_profrun_so_far,
                          fl__clock_ns(CLOCK_MONOTONIC), kn_kernel_console(k));
  if (e->interrupt_stage != 1 && e->interrupt_stage != 2) return;
  e->interrupt_stage = 1;
  e->interrupt_at_ms = fl__now_ms();
  kn_worker_signal_group(kn_kernel_worker(k), SIGINT);
}

typedef struct worker_ctx {
  kn_kernel_t *k;
  kn_exec_t *e;
  bool exited;
  int status;
  char reason[256]; /* why the kernel ended the worker, or "" */
  json_t *done;
  json_t *dropped; /* a start's dropped objects: [{"path", "why"}], or NULL */
  bool started;
  char *start_failure; /* why the start left no worker, or NULL */
} worker_ctx_t;

static void on_worker_event(void *ctx, const kn_wev_t *ev) {
  worker_ctx_t *c = ctx;
  kn_kernel_t *k = c->k;
  kn_exec_t *e = c->e;
  switch (ev->type) {
  case KN_WEV_STDOUT:
  case KN_WEV_STDERR: {
    char kind = ev->type == KN_WEV_STDOUT ? 'O' : 'E';
    const kn_msg_t *last = kn_kernel_last_request(k);
    if (e) {
      kn_exec_output(e, kind, ev->data, ev->len);
    } else if (last) {
      char *text = kn_utf8_clean((const unsigned char *)ev->data, ev->len);
      if (*text) kn_exec_publish_stream(k, last, kind, text);
      free(text);
    }
    break;
  }
  case KN_WEV_CRASH:
    /* A crash while the worker starts is said as the start's (KN_WEV_DROPPED). */
    if (e && !kn_worker_starting(kn_kernel_worker(k))) {
      free(e->crash_report);
      e->crash_report = fl__xstrndup(ev->data, ev->len);
    }
    break;
  case KN_WEV_EXITED:
    c->exited = true;
    c->status = ev->status;
    snprintf(c->reason, sizeof c->reason, "%s", ev->data ? ev->data : "");
    break;
  case KN_WEV_DROPPED:
    if (!c->dropped) c->dropped = json_array();
    json_array_append_new(c->dropped, json_pack("{s:s, s:s}", "path", ev->object, "why", ev->data));
    break;
  case KN_WEV_STARTED:
    c->started = true;
    free(c->start_failure);
    c->start_failure = ev->data ? fl__xstrdup(ev->data) : NULL;
    break;
  case KN_WEV_JSON: {
    const char *name = json_string_value(json_object_get(ev->json, "ev"));
    if (!e || !name) break;
    if (!strcmp(name, "running")) {
      e->loaded = true;
      on_running(k, e);
    } else if (!strcmp(name, "done") && !c->done)
      c->done = json_incref(ev->json);
    else if (!strcmp(name, "input_request"))
      on_input_request(k, e, ev->json);
    break;
  }
  }
}

/* Handles what the worker reported (c): the running cell's end, or the
 * worker's. */
static void after_worker_events(kn_kernel_t *k, worker_ctx_t *c) {
  /* Both may come in one pass: the cell finished, then the worker ended
   * (a cell that closed its command channel). */
  kn_exec_t *e = kn_kernel_exec(k);
  if (c->done && e && e->live && kn_live_busy(e->live) && !c->exited) {
    /* A live graph is being drawn: the final graph must come after it,
     * which it replaces, and the loop does not wait for it: the cell ends
     * when it has (kn_execute_on_live). */
    e->live_done = json_incref(c->done);
  } else if (c->done && e) {
    on_done(k, e, c->done);
  }
  /* A start: what it dropped, then its end (after which the worker may end
   * again, in a later pass). */
  for (size_t i = 0; i < json_array_size(c->dropped); i++) {
    json_t *d = json_array_get(c->dropped, i);
    kn_restart_on_dropped(k, json_string_value(json_object_get(d, "path")),
                          json_string_value(json_object_get(d, "why")));
  }
  if (c->started) kn_restart_on_started(k, c->start_failure);
  if (c->exited) kn_restart_after_exit(k, kn_kernel_exec(k), c->status, c->reason);
  json_decref(c->done);
  json_decref(c->dropped);
  free(c->start_failure);
}

void kn_execute_on_worker(kn_kernel_t *k) {
  worker_ctx_t c = {.k = k, .e = kn_kernel_exec(k)};
  /* Events after "done" belong to no cell; read them one pass at a time. */
  kn_worker_read(kn_kernel_worker(k), on_worker_event, &c);
  after_worker_events(k, &c);
}

void kn_execute_on_input_reply(kn_kernel_t *k, kn_msg_t *msg) {
  kn_exec_t *e = kn_kernel_exec(k);
  if (!e || !e->input_pending) return;
  e->input_pending = false;
  const char *value = json_string_value(json_object_get(msg->content, "value"));
  if (value)
    send_to_worker(k, json_pack("{s:s, s:s}", "op", "input_reply", "value", value));
  else
    send_to_worker(k, json_pack("{s:s}", "op", "input_eof"));
}

void kn_execute_stop(kn_kernel_t *k) {
  if (kn_kernel_exec(k)) kn_compile_cancel(&kn_kernel_exec(k)->compiling);
}

void kn_execute_interrupt(kn_kernel_t *k) {
  kn_exec_t *e = kn_kernel_exec(k);
  if (e && e->job && !e->job_magic) {
    /* The profile of the cell's run: kept all the same, but its graph's
     * drawing stops soon after (its budget's flag), and the job's end
     * answers the cell. */
    kn_profrun_interrupt(e);
    return;
  }
  if (e && e->job) {
    /* A line magic off the loop: cancelled, it changes nothing, and the
     * cell is answered now; the kernel joins its thread once its reading
     * or drawing has stopped. Too late to cancel (it is changing the
     * profiles), its end answers the cell (kn_run.c). */
    if (!kn_job_cancel(e->job)) {
      kn_job_interrupt(e->job);
      e->job_interrupted = true;
      return;
    }
    kn_kernel_parts_t *parts = kn_kernel_parts(k);
    kn_job_discard(&parts->left_job); /* one at a time: shell waits for each */
    parts->left_job = e->job;
    e->job = NULL;
    kn_exec_fail(e, "Interrupted",
                 "the cell was interrupted while %%%s ran; it was stopped and changed nothing "
                 "(the session's profiles are as they were), and the rest of the cell did not run",
                 e->job_magic->name);
    return;
  }
  if (e && e->compiling) {
    /* Nothing ran yet: the compiler stops, the cell is not kept. */
    kn_compile_cancel(&e->compiling);
    kn_exec_fail(e, "Interrupted", "the cell was interrupted while it compiled; nothing ran");
    return;
  }
  if (e && e->inspecting) {
    /* `name?` waits for libclang's process, not for the worker. */
    kn_exec_fail(e, "Interrupted", "the cell was interrupted while it looked the name up");
    return;
  }
  kn_worker_t *w = kn_kernel_worker(k);
  if (kn_worker_starting(w)) {
    /* The worker is loading the session's code: the interrupt ends the load
     * under way (that cell is dropped, and said so); a cell waiting to run
     * behind a worker that is not yet ready does not run. */
    if (!kn_worker_skip_load(w) && e && e->run_cmd)
      kn_exec_fail(e, "Interrupted",
                   "the cell was interrupted while the worker started; nothing ran");
    return;
  }
  if (!e || !kn_worker_alive(w)) return;
  if (e->interrupt_stage == 0) {
    e->interrupt_stage = 1;
    e->interrupt_at_ms = fl__now_ms();
  }
  kn_worker_signal_group(kn_kernel_worker(k), SIGINT);
}

void kn_execute_on_live(kn_kernel_t *k, kn_exec_t *e) {
  bool update;
  json_t *content = kn_live_take(e->live, &update);
  if (!content && *kn_live_error(e->live))
    kn_log(k, KN_LOG_DEBUG, "live graph of cell %d: %s", e->cell, kn_live_error(e->live));
  if (content && !e->live_done && kn_live_line(e->live))
    kn_exec_live_line(e, content);
  else if (content && !e->live_done)
    kn_exec_display_id(e, content, kn_live_display_id(e->live), update);
  else
    json_decref(content); /* the final graph follows at once */
  json_t *done = e->live_done;
  e->live_done = NULL;
  if (done) on_done(k, e, done);
  json_decref(done);
}

int kn_execute_tick(kn_kernel_t *k) {
  worker_ctx_t c = {.k = k, .e = kn_kernel_exec(k)};
  int timeout = kn_worker_tick(kn_kernel_worker(k), on_worker_event, &c);
  after_worker_events(k, &c);
  kn_exec_t *e = kn_kernel_exec(k);
  if (!e) return timeout;
  long long now = fl__now_ms();
  int t = kn_output_tick(&e->out, now);
  if (t >= 0 && (timeout < 0 || t < timeout)) timeout = t;
  if (e->live && !e->live_done && e->interrupt_stage == 0) {
    t = kn_live_tick(e->live, fl__clock_ns(CLOCK_MONOTONIC));
    if (t >= 0 && (timeout < 0 || t < timeout)) timeout = t;
  }
  if (e->interrupt_stage == 1 && now - e->interrupt_at_ms >= INTERRUPT_FORCE_MS) {
    e->interrupt_stage = 2;
    kn_worker_signal(kn_kernel_worker(k), SIGUSR2);
  } else if (e->interrupt_stage == 2 && now - e->interrupt_at_ms >= INTERRUPT_KILL_MS) {
    e->interrupt_stage = 3;
    kn_worker_signal_group(kn_kernel_worker(k), SIGKILL);
  }
  if (e->interrupt_stage == 1 || e->interrupt_stage == 2) {
    long long due = e->interrupt_at_ms +
                    (e->interrupt_stage == 1 ? INTERRUPT_FORCE_MS : INTERRUPT_KILL_MS);
    t = due > now ? (int)(due - now) : 0;
    if (timeout < 0 || t < timeout) timeout = t;
  }
  return timeout;
}

