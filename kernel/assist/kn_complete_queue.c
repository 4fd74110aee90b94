/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_complete_queue: requests in their turn for libclang's process and
 * for man, and the room that takes them (see kn_complete.h and
 * kn__complete.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__common.h"
#include "kn__complete.h"
#include "kn_session.h"
#include "kn_text.h"
#include "kn_worker.h"

/* The reply is sent: idle, and the request is done. */
static void finish(kn_kernel_t *k, request_t *r) {
  if (r->msg) kn_publish_status(k, r->msg, "idle");
  kn__request_free(r);
}

static void answer(kn_kernel_t *k, request_t *r) {
  if (r->inspect)
    kn__reply_inspection(k, r);
  else
    kn__reply_completion(k, r);
  finish(k, r);
}

static request_t *pop(kn_complete_t *c) {
  request_t *r = c->head;
  c->head = r->next;
  if (!c->head) c->tail = NULL;
  r->next = NULL;
  return r;
}

/* Whether r, asked in its cell, should be asked again with its name alone
 * as the cell: when the cell around the cursor leaves libclang nothing to
 * offer (code so broken that the cursor lands outside any function, a call
 * with an argument in error, which C's parser drops whole, or a piece the
 * session drops), the names visible at the start of a statement are still
 * a good guess. Not after '.' or '->': there, only the members of a type
 * libclang could not work out would do. */
static bool retry_alone(const request_t *r) {
  if (r->alone || r->end == r->start || (!r->inspect && !r->prefix[0])) return false;
  size_t p = r->start;
  while (p > 0 && isspace((unsigned char)r->code[p - 1])) p--;
  return !(p > 0 &&
           (r->code[p - 1] == '.' || (r->code[p - 1] == '>' && p > 1 && r->code[p - 2] == '-')));
}

/* Logs why libclang gave nothing, once a session: the same reason would
 * come with every request. */
static void log_clang_error(kn_kernel_t *k, const char *why) {
  kn_complete_t *c = kn_kernel_complete(k);
  if (c->error_logged) return;
  kn_log(k, KN_LOG_WARN, "completion falls back to the session's names: %s", why);
  c->error_logged = true;
}

/* Starts the head request in libclang if none is under way; answers at
 * once those that libclang cannot help with. */
static void advance(kn_kernel_t *k) {
  kn_complete_t *c = kn_kernel_complete(k);
  /* One job at a time: the head request's. */
  while (c->head && !c->head->submitted && !kn_clang_busy(c->clang)) {
    request_t *r = c->head;
    kn_clang_job_t job;
    int rc = kn__make_job(k, r, &job);
    if (rc < 0 && retry_alone(r)) {
      r->alone = true;
      rc = kn__make_job(k, r, &job);
    }
    char err[256];
    if (rc == 0 && kn_clang_submit(c->clang, &job, err, sizeof err) < 0) {
      kn_clangmsg_job_free(&job);
      log_clang_error(k, err);
      rc = -1;
    }
    if (rc < 0) {
      answer(k, pop(c));
      continue;
    }
    r->submitted = true;
  }
}

/* Whether the inspection of sym shows a manual page: a function or a type
 * of a system header. */
static bool wants_manpage(const kn_clang_symbol_t *sym) {
  return sym && sym->system && sym->name &&
         (sym->kind == KN_CLANG_FUNCTION || sym->kind == KN_CLANG_TYPE);
}

/* r has libclang's result: start its manual page, when its inspection
 * shows one, or ask again (retry_alone). Returns true when r has all it
 * waits for. */
static bool take_result(kn_kernel_t *k, request_t *r) {
  if (r->clang->lost)
    kn_log(k, KN_LOG_WARN, "%s: %s", r->inspect ? "inspection" : "completion", r->clang->error);
  else if (r->clang->error)
    log_clang_error(k, r->clang->error);
  /* A cell that costs libclang its process (an #include of /dev/zero)
   * may still complete a name without it. */
  bool nothing = r->inspect ? !r->clang->symbol : !r->clang->n_matches;
  if ((r->clang->lost || (!r->clang->error && nothing)) && retry_alone(r)) {
    kn_clangmsg_result_free(&r->clang);
    r->alone = true;
    r->submitted = false;
    return false;
  }
  const kn_clang_symbol_t *sym = r->clang->symbol;
  char *word = fl__xstrndup(r->code + r->start, r->end - r->start);
  const char *page = NULL;
  if (r->inspect && wants_manpage(sym))
    page = sym->name;
  else if (r->inspect && !sym && !kn_session_describe(kn_kernel_session(k), word, NULL))
    page = word; /* perhaps a function of a header not yet included */
  if (page) {
    char err[256];
    r->man = kn_manpage_start(page, sym && sym->kind == KN_CLANG_TYPE, err, sizeof err);
    if (!r->man) kn_log(k, KN_LOG_DEBUG, "no manual page: %s", err);
    r->deadline_ms = fl__now_ms() + MANPAGE_TIMEOUT_MS;
  }
  free(word);
  return !r->man;
}

/* Takes what is ready (libclang's result, a manual page) and answers what
 * it can, in order, and requests past their deadline with what there is;
 * never blocks. */
static void on_ready(kn_kernel_t *k) {
  kn_complete_t *c = kn_kernel_complete(k);
  kn_clang_result_t *res = kn_clang_take(c->clang);
  long long now = fl__now_ms();
  while (c->head) {
    request_t *r = c->head;
    bool ready = false;
    if (res && r->submitted && !r->clang && !r->man) {
      r->clang = res;
      res = NULL;
      ready = take_result(k, r);
    } else if (r->man) {
      ready = kn_manpage_poll(r->man);
    }
    if (!ready && now >= r->deadline_ms) {
      /* Waited too long: answered with what there is. */
      kn_log(k, KN_LOG_DEBUG, "%s took longer than %d ms: answered without %s",
             r->inspect ? "inspection" : "completion", r->man ? MANPAGE_TIMEOUT_MS : c->timeout_ms,
             r->man ? "the manual page" : "libclang");
      /* libclang may never end (an #include of a FIFO), nor stop reading
       * (of /dev/urandom): its process goes, the next request starts
       * another. */
      if (r->submitted && !r->clang) kn_clang_cancel(c->clang);
      kn_manpage_destroy(&r->man);
      ready = true;
    }
    if (!ready) break;
    answer(k, pop(c));
  }
  kn_clangmsg_result_free(&res);
  advance(k);
}

/* The descriptors to poll for reading: libclang's process's and a manual
 * page's (-1 where there is none). */
static void complete_fds(const kn_complete_t *c, int fds[2]) {
  fds[0] = kn_clang_fd(c->clang);
  fds[1] = c->head && c->head->man ? kn_manpage_fd(c->head->man) : -1;
}

/* Milliseconds until the request under way is given up on, or -1. */
static int complete_timeout(const kn_complete_t *c) {
  if (!c->head) return -1;
  long long left = c->head->deadline_ms - fl__now_ms();
  return left < 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Ready to ask libclang's process, which starts on the first request. */
static kn_complete_t *complete_new(void) {
  kn_complete_t *c = fl__xcalloc(1, sizeof *c);
  const char *t = getenv("CFLAME_COMPLETE_TIMEOUT_MS");
  c->timeout_ms = t && atoi(t) > 0 ? atoi(t) : CLANG_TIMEOUT_MS;
  const char *mb = getenv("CFLAME_COMPLETE_MEMORY_MB");
  size_t memory_mb = mb && atoi(mb) > 0 ? (size_t)atoi(mb) : CLANG_MEMORY_MB;
  char *dir = kn_self_dir();
  fl__buf_t helper = FL__BUF_INIT;
  fl__buf_printf(&helper, "%s/" KN_CLANG_NAME, dir);
  free(dir);
  c->clang = kn_clang_new(helper.data, memory_mb << 20);
  fl__buf_free(&helper);
  return c;
}

/* Drops the requests not yet answered, stops man and libclang's process. */
static void complete_destroy(kn_complete_t **cp) {
  kn_complete_t *c = *cp;
  if (!c) return;
  while (c->head) kn__request_free(pop(c));
  kn_clang_destroy(&c->clang);
  free(c);
  *cp = NULL;
}

/* ---- the room ---- */

/* Answers r, whose word is at byte cur of its code: at once, or queued for
 * libclang. */
static void start(kn_kernel_t *k, request_t *r, size_t cur) {
  kn_complete_t *c = kn_kernel_complete(k);
  switch (kn__start(k, r, cur)) {
    case KN__REPLIED: finish(k, r); return;
    case KN__ANSWER: answer(k, r); return;
    case KN__ASK: break;
  }
  r->deadline_ms = fl__now_ms() + c->timeout_ms;
  if (c->tail)
    c->tail->next = r;
  else
    c->head = r;
  c->tail = r;
  advance(k);
}

/* A complete_request or inspect_request from channel; takes msg. */
static void request(kn_kernel_t *k, kn_channel_t channel, kn_msg_t *msg) {
  kn_publish_status(k, msg, "busy");
  size_t cur;
  request_t *r = kn__request_read(msg, channel, &cur);
  start(k, r, cur);
}

/* kn_exec_inspector_t's (kn_exec.h). */
static void inspect_for(kn_kernel_t *k, kn_exec_t *e, const char *name, int detail) {
  request_t *r = fl__xcalloc(1, sizeof *r);
  r->exec = e;
  e->inspecting = true;
  r->inspect = true;
  r->code = fl__xstrdup(name);
  r->detail = detail;
  start(k, r, strlen(r->code));
}

static void forget(kn_kernel_t *k, const kn_exec_t *e) {
  for (request_t *r = kn_kernel_complete(k)->head; r; r = r->next)
    if (r->exec == e) r->exec = NULL;
}

/* A request past its deadline is answered now, with what there is. */
static int tick(kn_kernel_t *k) {
  int timeout = complete_timeout(kn_kernel_complete(k));
  if (timeout != 0) return timeout;
  on_ready(k);
  return complete_timeout(kn_kernel_complete(k));
}

static void fds(kn_kernel_t *k, int fds[KN_ROOM_FDS]) {
  complete_fds(kn_kernel_complete(k), fds);
}

static void close_room(kn_kernel_t *k) {
  complete_destroy(&kn_kernel_parts(k)->complete);
}

static const kn_room_t room = {.tick = tick, .fds = fds, .on_ready = on_ready, .close = close_room};
static const kn_exec_inspector_t inspector = {.inspect = inspect_for, .forget = forget};

void kn_complete_open(kn_kernel_t *k) {
  kn_kernel_parts_t *p = kn_kernel_parts(k);
  p->complete = complete_new();
  p->inspector = &inspector;
  kn_kernel_add_room(k, &room);
  unsigned channels = KN_ON(KN_SHELL) | KN_ON(KN_CONTROL);
  kn_kernel_handle(k, "complete_request", channels, KN_TAKE, request);
  kn_kernel_handle(k, "inspect_request", channels, KN_TAKE, request);
}
