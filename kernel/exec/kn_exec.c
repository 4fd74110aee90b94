/* SPDX-License-Identifier: BSD-3-Clause */
/* An execution's output and its reply (see kn_exec.h). */
#include "kn_exec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__common.h"
#include "kn_job.h"
#include "kn_worker.h"

void kn_exec_publish_stream(kn_kernel_t *k, const kn_msg_t *parent, char kind, const char *text) {
  kn_publish(k, parent, "stream",
             json_pack("{s:s, s:o}", "name", kind == 'E' ? "stderr" : "stdout", "text",
                       kn_wire_text(text)));
}

/* A live line (kn_live.h) is erased before anything else the cell shows,
 * which then starts where the line was; the next update writes it below. */
static void erase_live_line(kn_exec_t *e) {
  json_t *content = e->live ? kn_live_erase(e->live) : NULL;
  if (content) kn_publish(e->k, e->request, "stream", content);
}

static void publish_output(void *ctx, char kind, const char *text) {
  kn_exec_t *e = ctx;
  erase_live_line(e);
  kn_exec_publish_stream(e->k, e->request, kind, text);
}

void kn_exec_live_line(kn_exec_t *e, json_t *content) {
  kn_output_flush(&e->out, true);
  kn_publish(e->k, e->request, "stream", content);
}

kn_exec_t *kn_exec_new(kn_kernel_t *k, kn_msg_t *request) {
  kn_exec_t *e = fl__xcalloc(1, sizeof *e);
  e->k = k;
  e->request = request;
  const char *limit = getenv("CFLAME_OUTPUT_LIMIT");
  kn_output_init(&e->out, limit && atol(limit) > 0 ? (size_t)atol(limit) : KN_OUTPUT_DEFAULT_LIMIT,
                 publish_output, e);
  return e;
}

void kn_exec_destroy(kn_exec_t **ep) {
  kn_exec_t *e = *ep;
  if (!e) return;
  if (e->compiled) kn_compiled_destroy(&e->compiled);
  kn_compile_cancel(&e->compiling);
  /* Shutdown while a line magic runs off the loop: it is stopped, and
   * waited for, since it owns the profiling state the kernel frees next. */
  kn_job_discard(&e->job);
  kn_live_destroy(&e->live);
  json_decref(e->live_done);
  if (e->profrun) e->profrun_free(&e->profrun);
  json_decref(e->done_ev);
  free(e->died_reason);
  free(e->died_profile_note);
  kn_cell_magics_free(&e->magics);
  free(e->statement);
  json_decref(e->timeit_spec);
  kn_profreq_free(&e->profreq);
  kn_output_free(&e->out);
  free(e->crash_report);
  free(e->cell_key);
  json_decref(e->run_cmd);
  json_decref(e->payload);
  free(e->died_ename);
  free(e->died_value);
  json_decref(e->died_traceback);
  kn_msg_destroy(&e->request);
  free(e);
  *ep = NULL;
}

void kn_exec_output(kn_exec_t *e, char kind, const char *data, size_t len) {
  kn_output_add(&e->out, kind, data, len, fl__now_ms());
}

void kn_exec_print(kn_exec_t *e, char kind, const char *fmt, ...) {
  fl__buf_t sb = FL__BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  fl__buf_vprintf(&sb, fmt, ap);
  va_end(ap);
  if (sb.len) kn_exec_output(e, kind, sb.data, sb.len);
  fl__buf_free(&sb);
}

void kn_exec_display_id(kn_exec_t *e, json_t *content, const char *display_id, bool update) {
  kn_output_flush(&e->out, true);
  erase_live_line(e);
  json_object_set_new(content, "transient",
                      display_id ? json_pack("{s:s}", "display_id", display_id) : json_object());
  kn_publish(e->k, e->request, update ? "update_display_data" : "display_data", content);
}

void kn_exec_display(kn_exec_t *e, json_t *content) { kn_exec_display_id(e, content, NULL, false); }

void kn_exec_result(kn_exec_t *e, const char *text) {
  kn_output_flush(&e->out, true);
  erase_live_line(e);
  if (e->silent) return;
  kn_publish(e->k, e->request, "execute_result",
             json_pack("{s:i, s:{s:o}, s:{}}", "execution_count", e->count, "data", "text/plain",
                       kn_wire_text(text), "metadata"));
}

void kn_exec_finish(kn_exec_t *e, const char *ename, const char *evalue, json_t *traceback) {
  kn_kernel_t *k = e->k;
  if (e->inspecting) kn_kernel_parts(k)->inspector->forget(k, e);
  kn_output_end(&e->out);
  erase_live_line(e);
  /* stop_on_error: requests queued behind a failed one are aborted before
   * its reply goes out, so that what a client sends after seeing the reply
   * always runs. */
  if (ename && e->stop_on_error) kn_exec_abort_queued(k);
  json_t *reply;
  if (ename) {
    if (!traceback) traceback = json_pack("[o]", kn_wire_textf("%s: %s", ename, evalue));
    json_t *name = kn_wire_text(ename), *value = kn_wire_text(evalue);
    kn_publish(
        k, e->request, "error",
        json_pack("{s:O, s:O, s:O}", "ename", name, "evalue", value, "traceback", traceback));
    reply =
        json_pack("{s:s, s:i, s:o, s:o, s:o, s:{}}", "status", "error", "execution_count", e->count,
                  "ename", name, "evalue", value, "traceback", traceback, "user_expressions");
  } else {
    json_t *payload = e->payload ? e->payload : json_array();
    e->payload = NULL;
    reply = json_pack("{s:s, s:i, s:{}, s:o}", "status", "ok", "execution_count", e->count,
                      "user_expressions", "payload", payload);
  }
  kn_reply(k, KN_SHELL, e->request, "execute_reply", reply);
  kn_publish_status(k, e->request, "idle");
  /* Output from threads the cell left running is shown under it. */
  kn_kernel_keep_request(k, e->request);
  e->request = NULL;
  if (kn_kernel_exec(k) == e) kn_kernel_parts(k)->exec = NULL;
  kn_exec_destroy(&e);
}

void kn_exec_finish_ok(kn_exec_t *e) { kn_exec_finish(e, NULL, NULL, NULL); }

void kn_exec_fail(kn_exec_t *e, const char *ename, const char *fmt, ...) {
  fl__buf_t sb = FL__BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  fl__buf_vprintf(&sb, fmt, ap);
  va_end(ap);
  kn_exec_finish(e, ename, sb.data ? sb.data : "", NULL);
  fl__buf_free(&sb);
}

void kn_exec_send_run(kn_exec_t *e) {
  kn_kernel_t *k = e->k;
  if (kn_worker_starting(kn_kernel_worker(k))) return; /* kn_restart_on_started sends it */
  char err[256];
  json_t *cmd = e->run_cmd;
  e->run_cmd = NULL;
  int rc = kn_worker_send(kn_kernel_worker(k), cmd, err, sizeof err);
  json_decref(cmd);
  if (rc < 0) kn_exec_fail(e, "KernelError", "%s", err);
}

void kn_exec_abort_queued(kn_kernel_t *k) {
  kn_msg_t *msg;
  while ((msg = kn_receive(k, KN_SHELL)) != NULL) {
    if (!strcmp(kn_msg_type(msg), "execute_request")) {
      kn_publish_status(k, msg, "busy");
      kn_reply(k, KN_SHELL, msg, "execute_reply",
               json_pack("{s:s, s:i, s:{}}", "status", "aborted", "execution_count",
                         kn_kernel_execution_count(k), "user_expressions"));
      kn_publish_status(k, msg, "idle");
    } else {
      kn_serve(k, KN_SHELL, msg);
    }
    kn_msg_destroy(&msg);
  }
}
