/* SPDX-License-Identifier: BSD-3-Clause */
/* Starting an execution (see kn_exec.h): the request's fields, the cell's
 * magics checked against the magic table and run, the cell compiled by a
 * compiler the main loop polls, and the run command sent to the worker. */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kn_exec.h"
#include "kn_job.h"
#include "kn_magics.h"
#include "kn_timeit.h"
#include "kn_worker.h"

static bool blank(const char *s) {
  for (; *s; s++)
    if (!isspace((unsigned char)*s)) return false;
  return true;
}

/* Whether body is only `NAME?` or `NAME??` (NAME a C identifier, white
 * space around): then *name (new) and *detail (0 or 1, as IPython's `?`
 * and `??`). No C statement has that form, so it is never compiled. */
static bool help_request(const char *body, char **name, int *detail) {
  const char *p = body + strspn(body, " \t\r\n");
  const char *start = p;
  if (!(isalpha((unsigned char)*p) || *p == '_')) return false;
  while (isalnum((unsigned char)*p) || *p == '_') p++;
  size_t n = (size_t)(p - start), marks = strspn(p, "?");
  if (marks < 1 || marks > 2 || !blank(p + marks)) return false;
  *name = fl__xstrndup(start, n);
  *detail = (int)marks - 1;
  return true;
}

/* Whether code is `exit` or `quit` alone (white space around), which
 * leaves a console as IPython's do: no C statement is that bare name
 * worth running (it would only show the function). */
static bool asks_exit(const char *code) {
  const char *p = code + strspn(code, " \t\r\n");
  size_t n = strcspn(p, " \t\r\n");
  return n == 4 && (!strncmp(p, "exit", 4) || !strncmp(p, "quit", 4)) && blank(p + n);
}

/* Starts compiling code; e is the running execution from now on, and the
 * main loop, which never waits for the compiler, goes on in
 * kn_execute_on_fds. timeit is stolen. */
static void compile_and_run(kn_kernel_t *k, kn_exec_t *e, const char *code, int first_line,
                            json_t *timeit) {
  char err[1024];
  e->compiling =
      kn_session_compile_start(kn_kernel_session(k), e->cell, code, first_line, err, sizeof err);
  if (!e->compiling) {
    json_decref(timeit);
    kn_exec_fail(e, "KernelError", "%s", err);
    return;
  }
  e->timeit_spec = timeit;
  kn_kernel_parts(k)->exec = e;
}

static void run_compiled(kn_kernel_t *k, kn_exec_t *e, int rc, char *diagnostics, const char *err,
                         json_t *timeit);

static void on_compiler(kn_kernel_t *k, kn_exec_t *e) {
  if (!kn_compile_poll(e->compiling)) return;
  char err[1024] = "", *diagnostics = NULL;
  int rc = kn_session_compile_finish(kn_kernel_session(k), &e->compiling, &e->compiled,
                                     &diagnostics, err, sizeof err);
  if (rc == 2) return; /* compiling again: the loop polls the new compiler */
  json_t *timeit = e->timeit_spec;
  e->timeit_spec = NULL;
  run_compiled(k, e, rc, diagnostics, err, timeit);
}

/* The compiler's answer (rc as kn_session_compile's): reports its errors,
 * or hands the cell to the worker. timeit is stolen. */
static void run_compiled(kn_kernel_t *k, kn_exec_t *e, int rc, char *diagnostics,
                         const char *err_in, json_t *timeit) {
  char err[1024];
  snprintf(err, sizeof err, "%s", err_in);
  if (rc == 1) {
    /* The first error line is the value; every diagnostic line goes in the
     * traceback, as the compiler printed them. */
    json_t *tb = json_array();
    const char *first = NULL;
    size_t first_len = 0;
    for (char *p = diagnostics; p && *p;) {
      char *nl = strchr(p, '\n');
      size_t len = nl ? (size_t)(nl - p) : strlen(p);
      json_array_append_new(tb, kn_wire_textn(p, len));
      if (!first && memmem(p, len, "error", 5)) {
        first = p;
        first_len = len;
      }
      p = nl ? nl + 1 : NULL;
    }
    char *value = first ? fl__xstrndup(first, first_len) : fl__xstrdup("the cell did not compile");
    kn_exec_finish(e, "CompileError", value, tb);
    free(value);
    free(diagnostics);
    json_decref(timeit);
    return;
  }
  if (rc < 0) {
    json_decref(timeit);
    kn_exec_fail(e, "KernelError", "%s", err);
    return;
  }
  if (e->compiled->warnings && *e->compiled->warnings) {
    kn_exec_output(e, 'E', e->compiled->warnings, strlen(e->compiled->warnings));
    if (e->compiled->warnings[strlen(e->compiled->warnings) - 1] != '\n')
      kn_exec_output(e, 'E', "\n", 1);
  }
  json_t *cmd = json_pack("{s:s, s:s, s:s, s:b, s:b}", "op", "run", "path", e->compiled->so_path,
                          "entry", e->compiled->entry, "allow_stdin", e->allow_stdin,
                          "frame_pointers", e->compiled->frame_pointers);
  if (timeit) json_object_set_new(cmd, "timeit", timeit);
  if (e->profreq.mode != KN_PROF_NONE) {
    const char *key;
    json_t *req = kn_profrun_request(e, &key, err, sizeof err);
    if (!req) {
      json_decref(cmd);
      kn_exec_fail(e, "ProfileError", "%s", err);
      return;
    }
    json_object_set_new(cmd, key, req);
  }
  e->run_cmd = cmd;
  kn_kernel_parts(k)->exec = e;
  kn_worker_t *worker = kn_kernel_worker(k);
  if (!kn_worker_alive(worker) && !kn_worker_starting(worker) &&
      kn_restart_worker(k, err, sizeof err) < 0) {
    kn_exec_fail(e, "KernelError", "%s", err);
    return;
  }
  kn_exec_send_run(e);
}

/* Checks that every magic of the cell exists in the form it is written in.
 * Returns 0, or -1 having finished e with the error. */
static int check_magics(kn_exec_t *e, const kn_cell_magics_t *cm) {
  for (size_t i = 0; i < cm->n_lines; i++) {
    const kn_magic_t *m = &cm->lines[i];
    const kn_magic_def_t *known = kn_magic_find(m->name);
    if (known && (known->forms & KN_FORM_LINE)) continue;
    char *valid = kn_magic_names(KN_FORM_LINE);
    if (known)
      kn_exec_fail(e, "MagicError", "%%%s is a cell magic: write it as %%%%%s on the first line",
                   m->name, m->name);
    else
      kn_exec_fail(e, "MagicError", "unknown magic %%%s; valid line magics: %s", m->name, valid);
    free(valid);
    return -1;
  }
  if (cm->cell) {
    const kn_magic_def_t *known = kn_magic_find(cm->cell->name);
    if (known && (known->forms & KN_FORM_CELL)) return 0;
    char *valid = kn_magic_names(KN_FORM_CELL);
    if (known)
      kn_exec_fail(e, "MagicError", "%%%s is a line magic: write it as %%%s", cm->cell->name,
                   cm->cell->name);
    else
      kn_exec_fail(e, "MagicError", "unknown cell magic %%%%%s; valid cell magics: %s",
                   cm->cell->name, valid);
    free(valid);
    return -1;
  }
  return 0;
}

/* Settles the kind of samples req takes (kn_profreq_kind): the magic's
 * (def->kind), or for %%profdiffview its baseline's, unless the options
 * choose another; refuses options of another kind and a diff of one kind
 * against another but by a kind= both take. Returns 0, or -1 with err. */
static int resolve_profile_kind(kn_kernel_t *k, kn_profreq_t *r, const kn_magic_def_t *def,
                                const char *magic, const char *cell_key, char *err,
                                size_t err_size) {
  bool alloc_opts = r->sample_rate_set || r->weight_set || r->live_set;
  const fl_profile_t *base =
      def->profile == KN_PROF_DIFF ? kn_prof_diff_base(kn_kernel_prof(k), r->baseline, cell_key)
                                   : NULL;
  const fl_profile_info_t *bi = base ? fl_profile_info_const(base) : NULL;
  r->kind = kn_profreq_kind(r, bi ? bi->kind : def->kind);
  const fl_kind_info_t *kind = fl_kind(r->kind);
  /* kind= may name a kind both take: a wall-clock run's CPU time against
   * a CPU baseline (fl_diff_build compares those samples of each). */
  int drawn = r->draw.tree.kind;
  bool both_hold = bi && drawn != FL_TREE_KIND_MAIN &&
                   fl_kind_takes(r->kind) & fl_kind_takes(bi->kind) & 1u << drawn;
  if (bi && !both_hold && strcmp(kind->profile, fl_kind(bi->kind)->profile) != 0) {
    /* %%profbase's words for this kind: none for the kind it takes plain. */
    bool plain = r->kind == kn_magic_find("profbase")->kind;
    snprintf(err, err_size,
             "%s %s: baseline %s is %s, and this would be %s: profiles of different "
             "kinds (%s against %s) cannot be compared. Profile the same way as the "
             "baseline (%s), or take another baseline with %%%%profbase NAME%s%s",
             magic, r->baseline, r->baseline, fl_kind(bi->kind)->profile, kind->profile,
             kind->label, fl_kind(bi->kind)->label, kn_profreq_kind_words(bi->kind, r->kind),
             plain ? "" : " ", plain ? "" : kn_profreq_kind_words(r->kind, bi->kind));
    uint32_t shared = fl_kind_takes(r->kind) & fl_kind_takes(bi->kind);
    if (shared) {
      const fl_kind_info_t *both = fl_kind((fl_profile_kind_t)__builtin_ctz(shared));
      size_t len = strlen(err);
      snprintf(err + len, err_size - len, "; or compare the %s both hold with kind=%s",
               both->what, both->name);
    }
    return -1;
  }
  if (bi && kind->allocs && !r->sample_rate_set) r->sample_rate = bi->sample_rate;
  if (bi && r->kind == FL_PROFILE_EVENT) {
    /* The baseline's event, unless another is named: then they differ. */
    if (!r->event[0]) snprintf(r->event, sizeof r->event, "%s", bi->event);
    if (strcmp(r->event, bi->event) != 0) {
      snprintf(err, err_size,
               "%s %s: baseline %s counts %s, and this would count %s: events of two kinds "
               "cannot be compared. Count the same (event=%s), or take another baseline",
               magic, r->baseline, r->baseline, bi->event, r->event, bi->event);
      return -1;
    }
  }
  if (kind->allocs && r->delay_set) {
    snprintf(err, err_size, "%s: delay= is the CPU profiler's sampling interval; an allocation "
                            "profile samples allocations: use sample_rate= (0 < rate <= 1)", magic);
    return -1;
  }
  if (!kind->allocs && alloc_opts) {
    snprintf(err, err_size, "%s: sample_rate=, weight= and live= are options of allocation "
                            "profiles (%%%%profallocs, or allocs=true)", magic);
    return -1;
  }
  return 0;
}

/* Parses the magic that decides how the code runs (%%timeit, %%profview,
 * %%profile, or their statement forms): sets *timeit or e->profreq, and for
 * statement forms *stmt (new). Returns 0, or -1 having finished e. */
static int parse_run_magic(kn_kernel_t *k, kn_exec_t *e, const kn_magic_t *m, bool statement,
                           json_t **timeit, char **stmt) {
  char err[1024], typed[48]; /* the magic as typed: %%profview, %profview */
  snprintf(typed, sizeof typed, "%s%s", statement ? "%" : "%%", m->name);
  *timeit = NULL;
  *stmt = NULL;
  const kn_magic_def_t *def = kn_magic_find(m->name);
  if (def->timeit) {
    if (kn_timeit_parse(m->args, statement, timeit, stmt, err, sizeof err) < 0) goto fail;
    return 0;
  }
  if (def->profile != KN_PROF_NONE) {
    kn_profmode_t mode = def->profile;
    unsigned groups = def->options;
    kn_prof_t *kp = kn_kernel_prof(k);
    /* Baseline magics start with the baseline's NAME. */
    const char *args = m->args;
    char *name = NULL, *baseline_note = NULL;
    if (mode == KN_PROF_BASE || mode == KN_PROF_DIFF) {
      while (isspace((unsigned char)*args)) args++;
      size_t len = strcspn(args, " \t");
      if (len == 0 || memchr(args, '=', len)) {
        char *names = kn_prof_baseline_names(kp);
        snprintf(err, sizeof err, "%s needs a baseline NAME first%s%s", typed,
                 mode == KN_PROF_DIFF ? "; baselines: " : " (%%profbase NAME)",
                 mode == KN_PROF_DIFF ? names : "");
        free(names);
        goto fail;
      }
      name = fl__xstrndup(args, len);
      args += len;
      if (mode == KN_PROF_BASE && !strcmp(name, KN_PROFHIST_PREV)) {
        snprintf(err, sizeof err,
                 "%s %s: '%s' names the previous run of a cell (%%%%profdiffview %s); choose "
                 "another name for a baseline",
                 typed, name, name, name);
        free(name);
        goto fail;
      }
      if (mode == KN_PROF_DIFF && !strcmp(name, KN_PROFHIST_PREV)) {
        char why[300];
        kn_profhist_found_t found;
        if (!kn_profhist_prev(kn_prof_history(kp), e->cell_key, &found, why, sizeof why)) {
          snprintf(err, sizeof err,
                   "%s prev: this cell has no earlier profiled run to compare with (%s); run "
                   "it with %%%%profview first, then edit it and run %%%%profdiffview prev "
                   "(%%profhistory lists the runs kept)",
                   typed, why);
          free(name);
          goto fail;
        }
        /* The note under the diff's title says which run it is. */
        baseline_note = fl__xasprintf(
            "compared with run %d, cell[%d]: %s", found.number, found.cell,
            found.alike ? "the earlier profiled code most like this cell's (the front end "
                          "sends no cell id)"
                        : "this cell's previous run");
      }
      if (mode == KN_PROF_DIFF && !kn_prof_diff_base(kp, name, e->cell_key)) {
        char *names = kn_prof_baseline_names(kp);
        snprintf(err, sizeof err, "%s: no baseline named '%s'; baselines: %s", typed, name,
                 names);
        free(names);
        free(name);
        goto fail;
      }
    }
    char *opts = NULL;
    if (statement)
      kn_profreq_split_statement(args, groups, &opts, stmt);
    else
      opts = fl__xstrdup(args);
    int rc = kn_profreq_parse(kp, typed, opts, groups, &e->profreq, err, sizeof err);
    free(opts);
    e->profreq.baseline = name; /* the request owns them from here on */
    e->profreq.baseline_note = baseline_note;
    if (rc < 0) goto fail;
    if (!statement && e->profreq.positional[0]) {
      snprintf(err, sizeof err, "%s: unexpected '%s'; options are key=value words, such as "
                                "delay=0.0001", typed, e->profreq.positional[0]);
      goto fail;
    }
    if (statement && blank(*stmt)) {
      snprintf(err, sizeof err, "%s needs a statement to profile, such as %s work(100);", typed,
               typed);
      goto fail;
    }
    if (resolve_profile_kind(k, &e->profreq, def, typed, e->cell_key, err, sizeof err) < 0)
      goto fail;
    e->profreq.mode = mode;
    return 0;
  }
  return 0;
fail:
  free(*stmt);
  *stmt = NULL;
  kn_exec_fail(e, "MagicError", "%s", err);
  return -1;
}

/* What is wrong with an execute_request's code, or NULL: it must be a
 * string, and C text holds no NUL. New string. */
static char *bad_code(const json_t *code) {
  fl__buf_t sb = FL__BUF_INIT;
  if (!json_is_string(code)) {
    fl__buf_printf(&sb, "execute_request: 'code' must be a string (the cell's text); it is %s",
                     !code ? "missing" : json_is_null(code) ? "null" : "not a string");
    return fl__buf_take(&sb);
  }
  const char *text = json_string_value(code);
  size_t len = json_string_length(code), at = strlen(text);
  if (at == len) return NULL;
  int line = 1, col = 1;
  for (size_t i = 0; i < at; i++) {
    if (text[i] == '\n') {
      line++;
      col = 1;
    } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
      col++;
    }
  }
  fl__buf_printf(&sb, "the cell holds a NUL character (U+0000) at line %d, column %d; C source "
                        "cannot contain one: remove it",
                   line, col);
  return fl__buf_take(&sb);
}

/* Runs one line magic that is not a statement form. Returns 0, or -1
 * having finished e with an error. */
static int run_line_magic(kn_kernel_t *k, kn_exec_t *e, const kn_magic_t *m) {
  char err[1024];
  kn_magic_result_t res;
  if (kn_magic_run_line(k, kn_magic_find(m->name), m->args, &res, err, sizeof err) < 0) {
    kn_exec_fail(e, "MagicError", "%s", err);
    return -1;
  }
  if (res.output) kn_exec_output(e, 'O', res.output, strlen(res.output));
  free(res.output);
  if (res.display) kn_exec_display(e, res.display);
  return 0;
}

/* Whether the line magic m is a statement form (%timeit STMT, %profview
 * STMT, ...): those end the cell and run their statement. */
static bool is_statement(const kn_magic_t *m) {
  const kn_magic_def_t *def = kn_magic_find(m->name);
  return def && kn_magic_is_statement(def, m->args);
}

/* Runs what is left of e's cell: its line magics from e->next_line on,
 * then its statement or body (compiled: the loop goes on in
 * kn_execute_on_fds). A profiling line magic runs off the loop
 * (kn_job.h): e waits for it, and on_job_done calls this again when it
 * has ended. Each return leaves e running, waiting or finished. */
static void run_rest(kn_kernel_t *k, kn_exec_t *e) {
  const kn_cell_magics_t *cm = &e->magics;
  while (e->next_line < cm->n_lines) {
    const kn_magic_t *m = &cm->lines[e->next_line++];
    if (m == e->stmt_magic) break;
    const kn_magic_def_t *def = kn_magic_find(m->name);
    if (!def->prof_line) {
      if (run_line_magic(k, e, m) < 0) return;
      continue;
    }
    char err[256];
    e->job = kn_job_start(kn_kernel_prof(k), def->prof_line, m->args, err, sizeof err);
    if (!e->job) {
      kn_exec_fail(e, "KernelError", "%%%s: %s", m->name, err);
      return;
    }
    e->job_magic = m;
    kn_kernel_parts(k)->exec = e;
    return;
  }
  json_t *timeit = e->timeit_spec;
  e->timeit_spec = NULL;
  if (e->statement) {
    compile_and_run(k, e, e->statement, e->stmt_magic->line, timeit);
    return;
  }
  if (blank(cm->body)) {
    json_decref(timeit);
    if (e->profreq.mode != KN_PROF_NONE || timeit)
      kn_exec_fail(e, "MagicError", "%%%%%s needs code below it to run", cm->cell->name);
    else
      kn_exec_finish_ok(e);
    return;
  }
  compile_and_run(k, e, cm->body, cm->body_line, timeit);
}

/* e's line magic off the loop has ended: its output, then the rest of the
 * cell. An interrupt that came once it was changing the profiles
 * (kn_job_cancel refused) lets what it did stand, but the rest of the
 * cell does not run; one that came before it cancelled the job and
 * answered the cell then (kn_execute_interrupt). */
static void on_job_done(kn_kernel_t *k, kn_exec_t *e) {
  const char *name = e->job_magic->name;
  char err[1024];
  kn_magic_result_t res;
  int rc = kn_job_finish(&e->job, &res, err, sizeof err);
  e->job_magic = NULL;
  if (rc < 0) {
    kn_exec_fail(e, "MagicError", "%s", err);
    return;
  }
  if (res.output) kn_exec_output(e, 'O', res.output, strlen(res.output));
  free(res.output);
  if (res.display) kn_exec_display(e, res.display);
  bool rest = e->next_line < e->magics.n_lines || e->statement || !blank(e->magics.body);
  if (e->job_interrupted && rest) {
    kn_exec_fail(e, "Interrupted",
                 "the cell was interrupted after %%%s had finished (what it did is kept); the "
                 "rest of the cell did not run",
                 name);
    return;
  }
  e->job_interrupted = false;
  run_rest(k, e);
}

void kn_execute_fds(kn_kernel_t *k, int fds[KN_EXEC_FDS]) {
  for (int i = 0; i < KN_EXEC_FDS; i++) fds[i] = -1;
  const kn_exec_t *e = kn_kernel_exec(k);
  if (e && e->compiling) kn_compile_fds(e->compiling, fds);
  if (e && e->job) fds[2] = kn_job_fd(e->job);
  if (e && e->live) fds[3] = kn_live_fd(e->live);
}

void kn_execute_on_fds(kn_kernel_t *k) {
  kn_exec_t *e = kn_kernel_exec(k);
  /* Either may finish e: one at a time. */
  if (e && e->compiling)
    on_compiler(k, e);
  else if (e && e->job && kn_job_done(e->job) && !e->job_magic)
    kn_profrun_drawn(e);
  else if (e && e->job && kn_job_done(e->job))
    on_job_done(k, e);
  else if (e && e->live && kn_live_ended(e->live))
    kn_execute_on_live(k, e);
}

void kn_execute_start(kn_kernel_t *k, kn_msg_t *msg) {
  kn_exec_t *e = kn_exec_new(k, msg);
  char *bad = bad_code(json_object_get(msg->content, "code"));
  const char *code = bad ? "" : json_string_value(json_object_get(msg->content, "code"));
  e->cell_key = kn_profhist_key(msg->metadata, code);
  e->silent = json_is_true(json_object_get(msg->content, "silent"));
  json_t *sh = json_object_get(msg->content, "store_history");
  bool store_history = !e->silent && (sh ? json_is_true(sh) : true);
  json_t *as = json_object_get(msg->content, "allow_stdin");
  e->allow_stdin = as ? json_is_true(as) : true;
  json_t *soe = json_object_get(msg->content, "stop_on_error");
  e->stop_on_error = soe ? json_is_true(soe) : true;

  kn_publish_status(k, msg, "busy");
  if (bad) {
    /* Answered, never dropped: a client waits for every reply. */
    e->count = kn_kernel_execution_count(k);
    kn_exec_fail(e, "RequestError", "%s", bad);
    free(bad);
    return;
  }
  /* Cells are compiled under their execution count (cell[N] in messages).
   * Executions that store no history take numbers from a range of their
   * own, so their symbols never clash with a numbered cell's. */
  e->count = kn_kernel_count_execution(k, code, store_history, &e->cell);
  char *note = kn_kernel_take_note(k);
  if (note) {
    /* What happened to the worker since the last cell, said first. */
    kn_exec_publish_stream(k, msg, 'E', note);
    free(note);
  }
  if (!e->silent)
    kn_publish(k, msg, "execute_input",
               json_pack("{s:s, s:i}", "code", code, "execution_count", e->count));

  if (asks_exit(code)) {
    /* The frontend leaves, and ends the kernel (keepkernel false), when
     * the reply asks it to (the messaging spec's ask_exit payload). */
    e->payload = json_pack("[{s:s, s:b}]", "source", "ask_exit", "keepkernel", 0);
    kn_exec_finish_ok(e);
    return;
  }
  kn_cell_magics_t cm;
  char err[1024];
  if (kn_magic_split(code, &cm, err, sizeof err) < 0) {
    kn_exec_fail(e, "MagicError", "%s", err);
    return;
  }
  /* Every magic is checked before any runs: a typo in the second one must
   * not leave the first one applied. */
  if (check_magics(e, &cm) < 0) goto out;
  /* %NAME? (or %NAME ??, %%NAME? on a cell) shows the magic's help and runs
   * nothing, as in IPython. */
  for (size_t i = 0; i <= cm.n_lines; i++) {
    const kn_magic_t *m = i < cm.n_lines ? &cm.lines[i] : cm.cell;
    if (m && (!strcmp(m->args, "?") || !strcmp(m->args, "??"))) {
      char *help = kn_magic_help(m->name);
      kn_exec_print(e, 'O', "%s\n", help);
      free(help);
      kn_exec_finish_ok(e);
      goto out;
    }
  }

  /* NAME? and NAME?? show what inspection (Shift-Tab) shows, as in
   * IPython; the answer comes from libclang's process, so e waits for it. */
  char *help_name;
  int help_detail;
  if (cm.n_lines == 0 && !cm.cell && help_request(cm.body, &help_name, &help_detail)) {
    kn_kernel_parts(k)->exec = e;
    kn_kernel_parts(k)->inspector->inspect(k, e, help_name, help_detail);
    free(help_name);
    goto out;
  }

  /* The statement forms (%timeit, %profview, %profile STMT) end the cell. */
  const kn_magic_t *stmt_magic = NULL;
  for (size_t i = 0; i < cm.n_lines; i++)
    if (is_statement(&cm.lines[i])) stmt_magic = &cm.lines[i];
  if (stmt_magic && (stmt_magic != &cm.lines[cm.n_lines - 1] || cm.cell || !blank(cm.body))) {
    kn_exec_fail(e, "MagicError",
                 "%%%s STATEMENT must be the last line of its cell; use %%%%%s on the first line "
                 "for a whole cell",
                 stmt_magic->name, stmt_magic->name);
    goto out;
  }
  json_t *timeit = NULL;
  char *stmt = NULL;
  const kn_magic_t *run_magic = stmt_magic ? stmt_magic : cm.cell;
  if (run_magic && parse_run_magic(k, e, run_magic, run_magic == stmt_magic, &timeit, &stmt) < 0)
    goto out;
  /* The rest (the line magics in turn, then the code) is e's to run. */
  e->magics = cm;
  cm = (kn_cell_magics_t){0};
  e->stmt_magic = stmt_magic;
  e->timeit_spec = timeit;
  e->statement = stmt;
  run_rest(k, e);
out:
  kn_cell_magics_free(&cm);
}
