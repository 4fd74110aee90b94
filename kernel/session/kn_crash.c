/* SPDX-License-Identifier: BSD-3-Clause */
/* Crash reports and exit statuses, described (see kn_crash.h). */
#define _GNU_SOURCE
#include "kn_crash.h"

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cflame/fl_symbol.h"
#include "kn_names.h"
#include "kn_session.h"
#include "kn_text.h"
#include "kn_wire.h"

#define MAX_PCS 128
/* A fault this close to the stack pointer is the stack's guard page. */
#define OVERFLOW_DISTANCE 65536

const char *kn_signal_name(int sig) {
  static char name[32];
  const char *abbrev = sigabbrev_np(sig);
  if (!abbrev) return "signal";
  snprintf(name, sizeof name, "SIG%s", abbrev);
  return name;
}

char *kn_describe_exit(int status, const char *reason) {
  fl__buf_t sb = FL__BUF_INIT;
  if (reason && *reason)
    fl__buf_puts(&sb, reason);
  else if (WIFEXITED(status))
    fl__buf_printf(&sb, "the worker process exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    fl__buf_printf(&sb, "the worker process died of %s (%s)", kn_signal_name(WTERMSIG(status)),
                     strsignal(WTERMSIG(status)));
  else
    fl__buf_puts(&sb, "the worker process ended");
  return fl__buf_take(&sb);
}

typedef struct report {
  int sig;
  long tid, main_tid; /* the faulting thread and the worker's main thread */
  uint64_t addr, sp;
  uint64_t pcs[MAX_PCS];
  size_t n_pcs;
  const char *maps; /* the maps text, or NULL */
} report_t;

static void parse(const char *text, report_t *r) {
  const char *maps = strstr(text, "\nmaps\n");
  r->maps = maps ? maps + 6 : NULL;
  for (const char *p = text; p && *p && (!maps || p < maps);) {
    if (!strncmp(p, "signal ", 7)) r->sig = atoi(p + 7);
    if (!strncmp(p, "addr ", 5)) r->addr = strtoull(p + 5, NULL, 16);
    if (!strncmp(p, "sp ", 3)) r->sp = strtoull(p + 3, NULL, 16);
    if (!strncmp(p, "tid ", 4)) r->tid = atol(p + 4);
    if (!strncmp(p, "main_tid ", 9)) r->main_tid = atol(p + 9);
    if (!strncmp(p, "pc ", 3) && r->n_pcs < MAX_PCS) r->pcs[r->n_pcs++] = strtoull(p + 3, NULL, 16);
    p = strchr(p, '\n');
    if (p) p++;
  }
}

/* The traceback's frame lines into tb, and where the fault happened (" at
 * cell[3]:5 in crash()") into where. */
static void walk(const report_t *r, fl_symbolizer_t *sym, fl__buf_t *tb, fl__buf_t *where) {
  int shown = 0, hidden = 0;
  bool seen_cell = false;
  for (size_t i = 0; i < r->n_pcs; i++) {
    fl_frame_info_t frames[16];
    int nf = fl_symbolizer_lookup(sym, r->pcs[i], i > 0, frames, 16);
    for (int j = 0; j < nf; j++) {
      const fl_frame_info_t *f = &frames[j];
      kn_frame_kind_t kind = kn_frame_classify(f, NULL);
      if (kind == KN_FRAME_ENTRY || kind == KN_FRAME_WORKER) {
        /* The cell's top-level statements live in its entry function: show
         * them by their cell line, and nothing of the machinery below. */
        if (kind == KN_FRAME_ENTRY && kn_is_cell_file(f->file)) {
          fl__buf_printf(tb, "#%d  top level of %s:%d\n", shown++, f->file, f->line);
          if (!where->len) fl__buf_printf(where, " at %s:%d", f->file, f->line);
        }
        if (seen_cell || kind == KN_FRAME_WORKER) goto done;
        continue;
      }
      if (shown >= KN_CRASH_MAX_FRAMES) {
        hidden++;
        if (kn_is_cell_file(f->file)) seen_cell = true;
        continue;
      }
      char *func = kn_session_clean_message(f->func ? f->func : "??");
      const char *module = f->module ? kn_base_name(f->module) : "?";
      if (kn_is_cell_file(f->file)) {
        seen_cell = true;
        fl__buf_printf(tb, "#%d  %s() at %s:%d%s\n", shown++, func, f->file, f->line,
                         f->inlined ? " (inlined)" : "");
        if (!where->len) fl__buf_printf(where, " at %s:%d in %s()", f->file, f->line, func);
      } else if (f->file && f->line) {
        fl__buf_printf(tb, "#%d  %s() at %s:%d (%s)\n", shown++, func, f->file, f->line, module);
      } else {
        fl__buf_printf(tb, "#%d  %s() in %s\n", shown++, func, module);
      }
      free(func);
    }
  }
done:
  if (hidden) fl__buf_printf(tb, "... %d more frame%s\n", hidden, hidden == 1 ? "" : "s");
}

void kn_crash_describe(const char *text, int sig, char **headline, json_t *traceback) {
  report_t *r = fl__xcalloc(1, sizeof *r);
  r->sig = sig;
  parse(text, r);
  sig = r->sig;
  bool overflow = sig == SIGSEGV && r->sp && r->addr &&
                  (r->addr > r->sp ? r->addr - r->sp : r->sp - r->addr) < OVERFLOW_DISTANCE;

  fl__buf_t where = FL__BUF_INIT, tb = FL__BUF_INIT;
  char err[256];
  fl_symbolizer_t *sym = r->maps ? fl_symbolizer_new_from_maps(r->maps, err, sizeof err) : NULL;
  if (sym) {
    fl_symbolizer_name_files_as_written(sym, true); /* cells, not their files */
    walk(r, sym, &tb, &where);
    fl_symbolizer_destroy(&sym);
  }
  fl__buf_t head = FL__BUF_INIT;
  fl__buf_printf(&head, "%s%s", overflow ? "Stack overflow" : strsignal(sig),
                   where.data ? where.data : "");
  if (sig == SIGSEGV || sig == SIGBUS)
    fl__buf_printf(&head, " (address 0x%" PRIx64 ")", r->addr);
  /* Cells run on the worker's main thread; any other is one the cell
   * started. */
  if (r->tid && r->main_tid && r->tid != r->main_tid)
    fl__buf_printf(&head, ", in a thread the cell started (thread id %ld)", r->tid);
  *headline = fl__buf_take(&head);
  json_array_append_new(traceback, kn_wire_textf("%s: %s", kn_signal_name(sig), *headline));
  if (tb.len) {
    json_array_append_new(traceback, kn_wire_text("Backtrace (most recent call first):"));
    for (char *p = tb.data; p && *p;) {
      char *nl = strchr(p, '\n');
      if (nl) *nl = '\0';
      json_array_append_new(traceback, kn_wire_textf("  %s", p));
      p = nl ? nl + 1 : NULL;
    }
  }
  fl__buf_free(&where);
  fl__buf_free(&tb);
  free(r);
}
