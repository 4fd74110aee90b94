/* execute_request: magics, compiling, running in the worker, streaming its
 * output, and reporting how it ended (see kn_kernel.h). */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <zmq.h>

#include "cflame/fl_symbol.h"
#include "kn_kernel.h"
#include "kn_magic.h"
#include "kn_profmagic.h"

#define OUTPUT_BATCH_MS 30
#define OUTPUT_BATCH_BYTES (64 * 1024)
#define DEFAULT_OUTPUT_LIMIT (4u << 20)
/* Interrupt escalation: SIGINT, then SIGUSR2 (unwind wherever the cell is),
 * then kill and restart the worker. */
#define INTERRUPT_FORCE_MS 250
#define INTERRUPT_KILL_MS 800
#define MAX_BACKTRACE 24

struct kn_exec {
  kn_msg_t *request;
  bool silent, allow_stdin, stop_on_error;
  int count; /* execution count for the reply */
  int cell;  /* number the cell is compiled under */
  kn_compiled_t *compiled;
  kn_compile_t *compiling; /* the compiler under way, or NULL */
  json_t *timeit_spec;     /* %%timeit's run options, kept while compiling */
  bool timeit;
  kn_profreq_t profreq; /* mode KN_PROF_NONE unless profiling */

  /* Output waiting to be published: one stream at a time, in order. */
  char out_kind; /* 'O', 'E' or 0 */
  kn_strbuf_t out;
  long long out_since_ms;
  size_t out_total, out_dropped, out_limit;

  bool input_pending;
  char *crash_report;
  int interrupt_stage;
  long long interrupt_at_ms;
};

/* The last execute request: output from threads a cell left running is
 * shown under it. */
static kn_msg_t *last_request;

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the magics of this module ---- */

typedef struct magic_info {
  const char *name;
  bool line, cell;
  const char *usage;
  const char *help;
  unsigned options; /* the KN_OPTS_* groups of key=value options it takes */
} magic_info_t;

#define RUN_OPTS (KN_OPTS_PROFILER | KN_OPTS_TREE | KN_OPTS_VIEW)

static const magic_info_t magics[] = {
    {"cc", true, false, "%cc [COMPILER]",
     "Show the compiler, or set it for the rest of the session (e.g. %cc clang).\n"
     "The default is cc, or $CC when the kernel was started with it set.", 0},
    {"cflags", true, false, "%cflags [FLAGS...]",
     "Show the compiler flags, or replace them for the rest of the session.\n"
     "The default is " KN_DEFAULT_CFLAGS ".", 0},
    {"ldflags", true, false, "%ldflags [FLAGS...]",
     "Show the link flags, or replace them for the rest of the session (e.g. %ldflags -lm "
     "-lpthread).\nThe default is " KN_DEFAULT_LDFLAGS ".", 0},
    {"timeit", true, true, "%%timeit [-n N] [-r R]  /  %timeit [-n N] [-r R] STATEMENT",
     "Time the cell body (or the statement): R runs of N loops each, reporting the mean and\n"
     "standard deviation per loop, as IPython does. Without -n, N grows by tens until one\n"
     "run takes at least 0.2 s. -r defaults to 7.", 0},
    {"reset", true, false, "%reset",
     "Start a fresh session: forget every definition, type, macro and global, and restart\n"
     "the worker process. Compiler settings are kept.", 0},
    {"lsmagic", true, false, "%lsmagic", "List the magics.", 0},
    {"profview", true, true, "%%profview [opts]  /  %profview [opts] STATEMENT",
     "Clear the session profile, run the cell (or the statement) under the sampling profiler\n"
     "and show its flame graph.",
     RUN_OPTS},
    {"profile", true, true, "%%profile [opts]  /  %profile [opts] STATEMENT",
     "Run the cell (or the statement) under the profiler, adding to the session profile;\n"
     "show nothing. See %profshow and %profprint.",
     KN_OPTS_PROFILER},
    {"profshow", true, false, "%profshow [opts]",
     "Show the session profile as a flame graph.", KN_OPTS_TREE | KN_OPTS_VIEW},
    {"profprint", true, false, "%profprint [format=tree|flat] [maxdepth=] [mincount=] [cols=]",
     "Print a text report of the session profile, as Julia's Profile.print.",
     KN_OPTS_TREE | KN_OPTS_PRINT},
    {"profclear", true, false, "%profclear", "Empty the session profile.", 0},
    {"profinit", true, false, "%profinit [n=FRAMES] [delay=SECONDS]",
     "Show or set the sample buffer size (frames) and the sampling interval (seconds).", 0},
    {"profsize", true, false, "%profsize WIDTH HEIGHT",
     "Show or set the default size of flame graphs in pixels (height 0: sized to the depth).", 0},
    {"profbase", true, true, "%%profbase NAME [delay= n=]  /  %profbase NAME STATEMENT  /  %profbase",
     "Profile the cell (or the statement) and keep the result as baseline NAME, with how it\n"
     "was taken (interval, compiler and flags, time). %profbase alone lists the baselines.",
     KN_OPTS_PROFILER | KN_OPTS_ALLOC | KN_OPTS_KIND},
    {"profdiffview", true, true, "%%profdiffview NAME [opts]  /  %profdiffview NAME [opts] [STATEMENT]",
     "Profile the cell (or the statement) and show its differential flame graph against\n"
     "baseline NAME: red grew, blue shrank, grey within noise, a distinct colour for new\n"
     "frames; vanished frames are listed under the graph. Without a statement, the line\n"
     "form compares the session profile (%%profile, %profload) against NAME.",
     RUN_OPTS | KN_OPTS_DIFF | KN_OPTS_ALLOC | KN_OPTS_KIND},
    {"profallocs", true, true,
     "%%profallocs [sample_rate=] [weight=bytes|count] [live=true] [opts]  /  %profallocs [opts] STATEMENT",
     "Run the cell (or the statement) recording its memory allocations (malloc, calloc,\n"
     "realloc, aligned allocations, in every thread, libc's own included) and show where\n"
     "they were made: widths are bytes (weight=count: allocations), estimated from a\n"
     "sample_rate share of the calls (default 0.1; 1 records every one, exactly);\n"
     "live=true shows only what the cell had not freed when it ended.\n"
     "Baselines: %%profbase NAME allocs=true [sample_rate= weight= live=]; %%profdiffview\n"
     "NAME then profiles allocations the way the baseline was taken.",
     RUN_OPTS | KN_OPTS_ALLOC},
    {"profsave", true, false, "%profsave PATH [opts]",
     "Write the last flame graph shown (or the session profile) to PATH, by its ending:\n"
     ".svg (the kernel's SVG), .html (a standalone page: the interactive view, and the SVG\n"
     "for offline reading), .vl.json (the Vega-Lite spec), .folded (folded stacks, as\n"
     "flamegraph.pl reads them; a diff as 'stack BASE TARGET' lines) or .txt (the text\n"
     "report). Options redraw it first.",
     KN_OPTS_TREE | KN_OPTS_VIEW | KN_OPTS_DIFF},
    {"profload", true, false, "%profload PATH [PATH...] [as=NAME]",
     "Read folded stacks or the text of `perf script` (told apart by content) into the\n"
     "session profile, replacing it (then %profshow, %profprint, %profdiffview NAME), or\n"
     "with as=NAME keep it as baseline NAME. Several paths are merged.", 0},
};

const char *const kn_magic_names[] = {"cc",        "cflags",   "ldflags",  "timeit",
                                      "reset",     "lsmagic",  "profview", "profile",
                                      "profshow",  "profprint", "profclear", "profinit",
                                      "profsize",  "profsave", "profload", "profbase",
                                      "profdiffview", "profallocs", NULL};

static const magic_info_t *find_magic(const char *name) {
  for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++)
    if (!strcmp(magics[i].name, name)) return &magics[i];
  return NULL;
}

const char *kn_magic_help(const char *name) {
  static char buf[8192];
  const magic_info_t *m = find_magic(name);
  if (!m) return NULL;
  char *options = m->options ? kn_profmagic_options_help(m->options) : NULL;
  snprintf(buf, sizeof buf, "%s\n\n%s%s%s", m->usage, m->help, options ? "\n\nOptions:\n" : "",
           options ? options : "");
  free(options);
  return buf;
}

/* The first sentence of a magic's help, on one line: up to the first full
 * stop outside parentheses that ends the text or comes before a space. */
static char *first_sentence(const char *help) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  int depth = 0;
  for (const char *p = help; *p; p++) {
    kn_strbuf_putc(&sb, *p == '\n' ? ' ' : *p);
    if (*p == '(') depth++;
    if (*p == ')' && depth > 0) depth--;
    if (*p == '.' && depth == 0 && (!p[1] || isspace((unsigned char)p[1]))) break;
  }
  return kn_strbuf_steal(&sb);
}

/* Appends text in lines of at most width columns (longer words stand
 * alone), each after indent. */
static void put_wrapped(kn_strbuf_t *sb, const char *text, const char *indent, size_t width) {
  size_t room = width - strlen(indent), used = 0;
  for (const char *p = text; *p;) {
    while (*p == ' ') p++;
    size_t w = strcspn(p, " ");
    if (!w) break;
    if (used && used + 1 + w > room) {
      kn_strbuf_putc(sb, '\n');
      used = 0;
    }
    kn_strbuf_printf(sb, "%s%.*s", used ? " " : indent, (int)w, p);
    used += (used ? 1 : 0) + w;
    p += w;
  }
  kn_strbuf_putc(sb, '\n');
}

static char *valid_magics(bool cell) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++) {
    if (cell ? !magics[i].cell : !magics[i].line) continue;
    kn_strbuf_printf(&sb, "%s%s%s", sb.len ? ", " : "", cell ? "%%" : "%", magics[i].name);
  }
  return kn_strbuf_steal(&sb);
}

/* ---- output ---- */

/* Length of the longest prefix of s[0..n) that does not end inside a UTF-8
 * sequence (an incomplete sequence at the end waits for more bytes). */
static size_t utf8_complete_prefix(const unsigned char *s, size_t n) {
  size_t i = n, back = 0;
  while (i > 0 && back < 4 && (s[i - 1] & 0xC0) == 0x80) {
    i--;
    back++;
  }
  if (i == 0) return n;
  unsigned char c = s[i - 1];
  size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
  return (need > back + 1 && need <= 4 && c >= 0xC0) ? i - 1 : n;
}

/* Copies s to valid UTF-8, replacing invalid bytes with U+FFFD. */
static char *utf8_sanitize(const unsigned char *s, size_t n) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  for (size_t i = 0; i < n;) {
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                                                    : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = len > 0 && i + len <= n && !(len == 2 && c < 0xC2);
    for (size_t j = 1; ok && j < len; j++)
      if ((s[i + j] & 0xC0) != 0x80) ok = false;
    if (ok && c == 0) ok = true;
    if (ok) {
      kn_strbuf_append(&sb, (const char *)s + i, len);
      i += len;
    } else {
      kn_strbuf_puts(&sb, "\xef\xbf\xbd");
      i++;
    }
  }
  if (!sb.data) return kn_strdup("");
  /* jansson strings may hold NUL only with the length-aware API; text with
   * NUL bytes is shown without them. */
  size_t w = 0;
  for (size_t r = 0; r < sb.len; r++)
    if (sb.data[r]) sb.data[w++] = sb.data[r];
  sb.data[w] = '\0';
  return kn_strbuf_steal(&sb);
}

static void publish_stream(kn_kernel_t *k, const kn_msg_t *parent, char kind, const char *text) {
  kn_publish(k, parent, "stream",
             json_pack("{s:s, s:s}", "name", kind == 'E' ? "stderr" : "stdout", "text", text));
}

static void flush_output(kn_kernel_t *k, kn_exec_t *e, bool all) {
  if (!e->out.len) return;
  size_t n = all ? e->out.len : utf8_complete_prefix((unsigned char *)e->out.data, e->out.len);
  if (n == 0) return;
  char *text = utf8_sanitize((unsigned char *)e->out.data, n);
  if (*text) publish_stream(k, e->request, e->out_kind, text);
  free(text);
  memmove(e->out.data, e->out.data + n, e->out.len - n);
  e->out.len -= n;
  e->out.data[e->out.len] = '\0';
}

static void add_output(kn_kernel_t *k, kn_exec_t *e, char kind, const char *data, size_t len) {
  if (e->out_total >= e->out_limit) {
    e->out_dropped += len;
    return;
  }
  if (e->out_total + len > e->out_limit) {
    e->out_dropped += e->out_total + len - e->out_limit;
    len = e->out_limit - e->out_total;
  }
  e->out_total += len;
  if (e->out_kind != kind) {
    flush_output(k, e, true);
    e->out_kind = kind;
  }
  if (!e->out.len) e->out_since_ms = now_ms();
  kn_strbuf_append(&e->out, data, len);
  if (e->out.len >= OUTPUT_BATCH_BYTES) flush_output(k, e, false);
}

/* ---- finishing ---- */

static void exec_free(kn_exec_t *e) {
  if (e->compiled) kn_compiled_destroy(&e->compiled);
  kn_compile_cancel(&e->compiling);
  json_decref(e->timeit_spec);
  kn_profreq_free(&e->profreq);
  kn_strbuf_free(&e->out);
  free(e->crash_report);
  free(e);
}

/* Ends the execution: publishes the error (if ename), replies, goes idle.
 * traceback (stolen) may be NULL: then it is [ename: evalue]. */
static void finish(kn_kernel_t *k, kn_exec_t *e, const char *ename, const char *evalue,
                   json_t *traceback) {
  flush_output(k, e, true);
  if (e->out_dropped) {
    char note[256];
    snprintf(note, sizeof note,
             "\n[cflame: this cell's output passed the limit of %zu bytes; %zu more bytes were "
             "not shown]\n",
             e->out_limit, e->out_dropped);
    publish_stream(k, e->request, 'E', note);
  }
  /* stop_on_error: requests queued behind a failed one are aborted before
   * its reply goes out, so that what a client sends after seeing the reply
   * always runs. */
  if (ename && e->stop_on_error) kn_execute_abort_queued(k);
  json_t *reply;
  if (ename) {
    if (!traceback) {
      kn_strbuf_t line = KN_STRBUF_INIT;
      kn_strbuf_printf(&line, "%s: %s", ename, evalue);
      traceback = json_pack("[s]", line.data);
      kn_strbuf_free(&line);
    }
    kn_publish(k, e->request, "error",
               json_pack("{s:s, s:s, s:O}", "ename", ename, "evalue", evalue, "traceback",
                         traceback));
    reply = json_pack("{s:s, s:i, s:s, s:s, s:o, s:{}}", "status", "error", "execution_count",
                      e->count, "ename", ename, "evalue", evalue, "traceback", traceback,
                      "user_expressions");
  } else {
    reply = json_pack("{s:s, s:i, s:{}, s:[]}", "status", "ok", "execution_count", e->count,
                      "user_expressions", "payload");
  }
  kn_reply(k, k->shell, e->request, "execute_reply", reply);
  kn_publish_status(k, e->request, "idle");

  if (last_request) kn_msg_destroy(&last_request);
  last_request = e->request;
  e->request = NULL;
  if (k->exec == e) k->exec = NULL;
  exec_free(e);
}

static void finish_ok(kn_kernel_t *k, kn_exec_t *e) { finish(k, e, NULL, NULL, NULL); }

static void finish_error(kn_kernel_t *k, kn_exec_t *e, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void finish_error(kn_kernel_t *k, kn_exec_t *e, const char *ename, const char *fmt, ...) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  kn_strbuf_vprintf(&sb, fmt, ap);
  va_end(ap);
  finish(k, e, ename, sb.data ? sb.data : "", NULL);
  kn_strbuf_free(&sb);
}

void kn_execute_abort_queued(kn_kernel_t *k) {
  kn_msg_t *msg;
  while ((msg = kn_receive(k, k->shell, "shell")) != NULL) {
    if (!strcmp(kn_msg_type(msg), "execute_request")) {
      kn_publish_status(k, msg, "busy");
      kn_reply(k, k->shell, msg, "execute_reply",
               json_pack("{s:s, s:i, s:{}}", "status", "aborted", "execution_count",
                         k->execution_count, "user_expressions"));
      kn_publish_status(k, msg, "idle");
    } else {
      kn_serve(k, k->shell, msg);
    }
    kn_msg_destroy(&msg);
  }
}

/* ---- crash reports ---- */

/* "SIGSEGV", "SIGALRM", ...: the name C programmers know a signal by.
 * The buffer is the caller's thread's (the kernel's main loop). */
static const char *signal_name(int sig) {
  static char name[32];
  const char *abbrev = sigabbrev_np(sig);
  if (!abbrev) return "signal";
  snprintf(name, sizeof name, "SIG%s", abbrev);
  return name;
}

static const char *base_name(const char *path) {
  const char *s = path ? strrchr(path, '/') : NULL;
  return s ? s + 1 : path ? path : "?";
}

/* Whether a frame belongs to the kernel's own machinery: the worker
 * executable or a cell's generated entry function. */
static bool is_machinery(const fl_frame_info_t *f) {
  if (f->module && !strcmp(base_name(f->module), "cflame-worker")) return true;
  return f->func && !strncmp(f->func, "cflame_run_", 11);
}

static bool is_cell_file(const char *file) { return file && !strncmp(file, "cell[", 5); }

/* Parses the worker's crash report (kw_fault.c), symbolizes its stack and
 * builds the error: *headline ("Segmentation fault at cell[3]:5 in
 * crash()") and the traceback lines. */
static void describe_crash(const char *report, int sig, char **headline, json_t *traceback) {
  uint64_t pcs[128], addr = 0, sp = 0;
  size_t n_pcs = 0;
  const char *maps = strstr(report, "\nmaps\n");
  for (const char *p = report; p && *p && (!maps || p < maps);) {
    if (!strncmp(p, "signal ", 7)) sig = atoi(p + 7);
    if (!strncmp(p, "addr ", 5)) addr = strtoull(p + 5, NULL, 16);
    if (!strncmp(p, "sp ", 3)) sp = strtoull(p + 3, NULL, 16);
    if (!strncmp(p, "pc ", 3) && n_pcs < 128) pcs[n_pcs++] = strtoull(p + 3, NULL, 16);
    p = strchr(p, '\n');
    if (p) p++;
  }
  bool overflow = sig == SIGSEGV && sp && addr && (addr > sp ? addr - sp : sp - addr) < 65536;
  const char *what = overflow ? "Stack overflow" : strsignal(sig);

  kn_strbuf_t where = KN_STRBUF_INIT;
  kn_strbuf_t tb = KN_STRBUF_INIT;
  char err[256];
  fl_symbolizer_t *sym = maps ? fl_symbolizer_new_from_maps(maps + 6, err, sizeof err) : NULL;
  int shown = 0, hidden = 0;
  bool seen_cell = false;
  for (size_t i = 0; sym && i < n_pcs; i++) {
    fl_frame_info_t frames[16];
    int nf = fl_symbolizer_lookup(sym, pcs[i], i > 0, frames, 16);
    for (int j = 0; j < nf; j++) {
      const fl_frame_info_t *f = &frames[j];
      if (is_machinery(f)) {
        /* The cell's top-level statements live in its entry function: show
         * them by their cell line, and nothing of the machinery below. */
        if (f->func && !strncmp(f->func, "cflame_run_", 11) && is_cell_file(f->file)) {
          kn_strbuf_printf(&tb, "#%d  top level of %s:%d\n", shown++, f->file, f->line);
          if (!where.len) kn_strbuf_printf(&where, " at %s:%d", f->file, f->line);
        }
        if (seen_cell || (f->module && !strcmp(base_name(f->module), "cflame-worker"))) goto done;
        continue;
      }
      if (shown >= MAX_BACKTRACE) {
        /* A stack overflow has thousands of frames: the first ones say it. */
        hidden++;
        if (is_cell_file(f->file)) seen_cell = true;
        continue;
      }
      char *func = kn_session_clean_message(f->func ? f->func : "??");
      if (is_cell_file(f->file)) {
        seen_cell = true;
        kn_strbuf_printf(&tb, "#%d  %s() at %s:%d%s\n", shown++, func, f->file, f->line,
                         f->inlined ? " (inlined)" : "");
        if (!where.len) kn_strbuf_printf(&where, " at %s:%d in %s()", f->file, f->line, func);
      } else if (f->file && f->line) {
        kn_strbuf_printf(&tb, "#%d  %s() at %s:%d (%s)\n", shown++, func, f->file, f->line,
                         base_name(f->module));
      } else {
        kn_strbuf_printf(&tb, "#%d  %s() in %s\n", shown++, func, base_name(f->module));
      }
      free(func);
    }
  }
done:
  if (hidden) kn_strbuf_printf(&tb, "... %d more frames\n", hidden);
  if (sym) fl_symbolizer_destroy(&sym);
  kn_strbuf_t head = KN_STRBUF_INIT;
  kn_strbuf_printf(&head, "%s%s", what, where.data ? where.data : "");
  if (sig == SIGSEGV || sig == SIGBUS)
    kn_strbuf_printf(&head, " (address 0x%" PRIx64 ")", addr);
  *headline = kn_strbuf_steal(&head);
  json_array_append_new(traceback, json_sprintf("%s: %s", signal_name(sig), *headline));
  if (tb.len) {
    json_array_append_new(traceback, json_string("Backtrace (most recent call first):"));
    char *p = tb.data;
    while (p && *p) {
      char *nl = strchr(p, '\n');
      if (nl) *nl = '\0';
      json_array_append_new(traceback, json_sprintf("  %s", p));
      p = nl ? nl + 1 : NULL;
    }
  }
  kn_strbuf_free(&where);
  kn_strbuf_free(&tb);
}

static void on_profile_done(kn_kernel_t *k, kn_exec_t *e, json_t *ev, const char *maps_text,
                            pid_t pid);

/* What became of the profile of a run cut short (a crash, an interrupt),
 * for the error message: " The flame graph shows ..." or "". */
static const char *cut_short_note(kn_profmode_t mode) {
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

/* The worker is gone while e ran: say why, start a new worker, reload the
 * session's code. */
static void on_worker_exit(kn_kernel_t *k, kn_exec_t *e, int status, const char *reason) {
  /* The cell compiled and loaded: its definitions stay in the session even
   * though its run ended badly. */
  if (e->compiled) kn_session_commit(k->session, &e->compiled);
  /* The samples survive the crash in the shared buffer: what was profiled up
   * to the crash is shown and joins the session profile, as it would have
   * at the end of the run (a run cut short makes no baseline). */
  const char *profile_note = e->profreq.mode == KN_PROF_BASE ? cut_short_note(KN_PROF_BASE) : "";
  if (e->profreq.mode != KN_PROF_NONE && !e->profreq.allocs && e->crash_report) {
    const char *maps = strstr(e->crash_report, "\nmaps\n");
    const char *tid = strstr(e->crash_report, "\nmain_tid ");
    if (maps && tid && e->profreq.mode != KN_PROF_BASE) {
      on_profile_done(k, e, NULL, maps + 6, (pid_t)atoi(tid + 10));
      profile_note = cut_short_note(e->profreq.mode);
    }
  }

  char err[512];
  int rc = kn_kernel_start_worker(k, err, sizeof err);
  const char *restart_note =
      rc < 0 ? "The worker could not be restarted: "
             : kn_session_has_globals(k->session)
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
    json_array_append_new(tb, json_sprintf("ChannelError: %s", reason));
  } else if (e->interrupt_stage > 0) {
    ename = "Interrupted";
    kn_strbuf_puts(&value, "the cell was interrupted; it did not stop in time, so its process "
                           "was ended");
    json_array_append_new(tb, json_sprintf("Interrupted: %s", value.data));
  } else if (WIFEXITED(status)) {
    ename = "Exit";
    kn_strbuf_printf(&value, "the cell called exit(%d)", WEXITSTATUS(status));
    json_array_append_new(tb, json_sprintf("Exit: %s", value.data));
  } else {
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    ename = signal_name(sig);
    if (e->crash_report) {
      char *headline;
      describe_crash(e->crash_report, sig, &headline, tb);
      kn_strbuf_puts(&value, headline);
      free(headline);
    } else {
      kn_strbuf_printf(&value, "the worker process died of %s (%s)", signal_name(sig),
                       strsignal(sig));
      json_array_append_new(tb, json_sprintf("%s: %s", ename, value.data));
    }
  }
  kn_strbuf_printf(&value, ". %s%s", note.data, profile_note);
  json_array_append_new(tb, json_string(note.data));
  if (*profile_note) json_array_append_new(tb, json_string(profile_note + 1));
  char *ename_copy = kn_strdup(ename);
  finish(k, e, ename_copy, value.data, tb);
  free(ename_copy);
  kn_strbuf_free(&value);
  kn_strbuf_free(&note);
}

/* ---- %%timeit report ---- */

static void format_duration(char *buf, size_t size, double ns) {
  const char *unit = "ns";
  double v = ns;
  if (ns >= 1e9) {
    v = ns / 1e9;
    unit = "s";
  } else if (ns >= 1e6) {
    v = ns / 1e6;
    unit = "ms";
  } else if (ns >= 1e3) {
    v = ns / 1e3;
    unit = "\xc2\xb5s";
  }
  int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  snprintf(buf, size, "%.*f %s", decimals, v, unit);
}

static void report_timeit(kn_kernel_t *k, kn_exec_t *e, json_t *t) {
  json_int_t number = json_integer_value(json_object_get(t, "number"));
  json_t *times = json_object_get(t, "per_loop_ns");
  size_t r = json_array_size(times);
  double mean = 0, var = 0;
  for (size_t i = 0; i < r; i++) mean += json_number_value(json_array_get(times, i));
  mean /= r ? (double)r : 1;
  for (size_t i = 0; i < r; i++) {
    double d = json_number_value(json_array_get(times, i)) - mean;
    var += d * d;
  }
  double sd = r > 1 ? sqrt(var / (double)r) : 0;
  char m[32], s[32], text[256];
  format_duration(m, sizeof m, mean);
  format_duration(s, sizeof s, sd);
  snprintf(text, sizeof text,
           "%s \xc2\xb1 %s per loop (mean \xc2\xb1 std. dev. of %zu run%s, %" JSON_INTEGER_FORMAT
           " loop%s each)\n",
           m, s, r, r == 1 ? "" : "s", number, number == 1 ? "" : "s");
  add_output(k, e, 'O', text, strlen(text));
}

/* ---- profiles ---- */

static void publish_display(kn_kernel_t *k, kn_exec_t *e, json_t *content) {
  flush_output(k, e, true);
  json_object_set_new(content, "transient", json_object());
  kn_publish(k, e->request, "display_data", content);
}

/* The profiled run of e ended (ev is the worker's "done" event, or NULL
 * after a crash, when maps_text comes from the crash report): read the
 * samples, add them to the session profile, and show the flame graph for
 * %%profview. */
/* Shows prof, the profile of e's cell: its flame graph, or for
 * %%profdiffview its diff against the baseline; a graph that cannot be
 * drawn is reported on stderr. */
static void show_cell_profile(kn_kernel_t *k, kn_exec_t *e, const fl_profile_t *prof) {
  char name[32], err[512];
  snprintf(name, sizeof name, "cell[%d]", e->cell);
  json_t *content =
      e->profreq.mode == KN_PROF_DIFF
          ? kn_prof_show_diff(k->prof, prof, kn_prof_baseline(k->prof, e->profreq.baseline),
                              &e->profreq, name, err, sizeof err)
          : kn_prof_show(k->prof, prof, &e->profreq, name, err, sizeof err);
  if (content) {
    publish_display(k, e, content);
  } else {
    add_output(k, e, 'E', err, strlen(err));
    add_output(k, e, 'E', "\n", 1);
  }
}

/* The allocation-profiled run of e ended (ev is the worker's "done"
 * event): read the records, keep them as a baseline or show their graph. */
static void on_allocs_done(kn_kernel_t *k, kn_exec_t *e, json_t *ev) {
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
      kn_prof_collect_allocs(k->prof, kn_worker_pid(k->worker), &run, err, sizeof err);
  if (!prof) {
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_printf(&sb, "cflame: the allocation profile could not be read: %s\n", err);
    add_output(k, e, 'E', sb.data, sb.len);
    kn_strbuf_free(&sb);
    return;
  }
  fl_profile_info_t *pi = fl_profile_info(prof);
  snprintf(pi->compiler, sizeof pi->compiler, "%s %s %s", kn_session_cc(k->session),
           kn_session_cflags(k->session), kn_session_ldflags(k->session));
  char *summary = kn_prof_summary(prof);
  if (e->profreq.mode == KN_PROF_BASE) {
    kn_prof_set_baseline(k->prof, e->profreq.baseline, prof);
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_printf(&sb, "Baseline %s: %s\n", e->profreq.baseline, summary);
    add_output(k, e, 'O', sb.data, sb.len);
    kn_strbuf_free(&sb);
  } else if (fl_profile_n_samples(prof) == 0) {
    kn_strbuf_t sb = KN_STRBUF_INIT;
    if (run.calls == 0)
      kn_strbuf_puts(&sb, "No allocations: the cell made no call to malloc, calloc, realloc or an "
                          "aligned allocation function while it ran.\n");
    else if (run.live)
      kn_strbuf_printf(&sb, "Nothing is still allocated: of the %llu allocation calls the cell made"
                            "%s, every block recorded was freed before it ended (live=true).\n",
                       (unsigned long long)run.calls,
                       run.sample_rate < 1 ? " (a sample of them recorded)" : "");
    else
      kn_strbuf_printf(&sb, "No allocation was sampled: the cell made %llu allocation calls and "
                            "sample_rate=%g recorded none of them; use a higher sample_rate= "
                            "(1 records every one).\n",
                       (unsigned long long)run.calls, run.sample_rate);
    add_output(k, e, 'O', sb.data, sb.len);
    kn_strbuf_free(&sb);
  } else {
    show_cell_profile(k, e, prof);
  }
  free(summary);
  fl_profile_destroy(&prof);
}

static void on_profile_done(kn_kernel_t *k, kn_exec_t *e, json_t *ev, const char *maps_text,
                            pid_t pid) {
  if (e->profreq.allocs) {
    on_allocs_done(k, e, ev);
    return;
  }
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
  fl_profile_t *prof = kn_prof_collect(k->prof, maps_text ? pid : kn_worker_pid(k->worker),
                                       maps_text, &run, err, sizeof err);
  if (!prof) {
    char *msg = kn_strdup(err);
    add_output(k, e, 'E', "cflame: the profile could not be read: ", 39);
    add_output(k, e, 'E', msg, strlen(msg));
    add_output(k, e, 'E', "\n", 1);
    free(msg);
    return;
  }
  fl_profile_info_t *pi = fl_profile_info(prof);
  snprintf(pi->compiler, sizeof pi->compiler, "%s %s %s", kn_session_cc(k->session),
           kn_session_cflags(k->session), kn_session_ldflags(k->session));
  if (e->profreq.mode == KN_PROF_BASE) {
    kn_prof_set_baseline(k->prof, e->profreq.baseline, prof);
    char *summary = kn_prof_summary(prof);
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_printf(&sb, "Baseline %s: %s\n", e->profreq.baseline, summary);
    add_output(k, e, 'O', sb.data, sb.len);
    kn_strbuf_free(&sb);
    free(summary);
    fl_profile_destroy(&prof);
    return;
  }
  kn_prof_session_add(k->prof, prof,
                      e->profreq.mode == KN_PROF_VIEW || e->profreq.mode == KN_PROF_DIFF);
  const char *replaced = json_string_value(json_object_get(info, "handler_replaced"));
  if (replaced) {
    /* The cell took over a signal the profiler samples with (signal(SIGTRAP,
     * h), SIG_IGN): sampling stopped then. */
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_printf(&sb, "cflame: the cell replaced the handler of %s, which the profiler samples "
                          "with, so sampling stopped there: %s. The next profiled cell takes the "
                          "handler back.\n",
                     replaced, fl_profile_n_samples(prof) ? "the graph shows what ran before"
                                                          : "no sample was taken");
    add_output(k, e, 'E', sb.data, sb.len);
    kn_strbuf_free(&sb);
  }
  if (e->profreq.mode == KN_PROF_VIEW || e->profreq.mode == KN_PROF_DIFF) {
    if (fl_profile_n_samples(prof) == 0) {
      if (!replaced) {
        char *msg = kn_prof_empty_message(prof);
        add_output(k, e, 'O', msg, strlen(msg));
        free(msg);
      }
    } else {
      show_cell_profile(k, e, prof);
    }
  } else if (run.dropped) {
    char *summary = kn_prof_summary(prof);
    add_output(k, e, 'E', summary, strlen(summary));
    add_output(k, e, 'E', "\n", 1);
    free(summary);
  }
  fl_profile_destroy(&prof);
}

/* ---- events from the worker ---- */

static void on_done(kn_kernel_t *k, kn_exec_t *e, json_t *ev) {
  const char *status = json_string_value(json_object_get(ev, "status"));
  if (status && !strcmp(status, "error")) {
    const char *ename = json_string_value(json_object_get(ev, "ename"));
    const char *evalue = json_string_value(json_object_get(ev, "evalue"));
    /* "/tmp/cflame-x/cell_3.so: undefined symbol: foo" -> the part that
     * speaks of the user's code. */
    const char *msg = evalue ? evalue : "";
    const char *u = strstr(msg, "undefined symbol: ");
    char *clean = kn_session_clean_message(u ? u : msg);
    finish_error(k, e, ename ? ename : "Error", "%s", clean);
    free(clean);
    return;
  }
  /* It ran (perhaps partly): its definitions are now part of the session. */
  if (e->compiled) {
    bool has_main = e->compiled->has_main;
    kn_session_commit(k->session, &e->compiled);
    if (status && !strcmp(status, "interrupted")) {
      /* What ran until the interrupt was sampled: that is how one sees
       * where a cell that does not end spends its time. */
      kn_profmode_t mode = e->profreq.mode;
      if (mode != KN_PROF_NONE && mode != KN_PROF_BASE) on_profile_done(k, e, ev, NULL, 0);
      const char *note = cut_short_note(mode);
      finish_error(k, e, "Interrupted", "the cell was interrupted%s%s", *note ? "." : "", note);
      return;
    }
    json_t *t = json_object_get(ev, "timeit");
    if (t) report_timeit(k, e, t);
    if (e->profreq.mode != KN_PROF_NONE) on_profile_done(k, e, ev, NULL, 0);
    int rc = (int)json_integer_value(json_object_get(ev, "rc"));
    if (has_main && rc != 0) {
      finish_error(k, e, "MainReturned", "main returned %d", rc);
      return;
    }
  }
  finish_ok(k, e);
}

static void send_to_worker(kn_kernel_t *k, json_t *cmd) {
  char err[256];
  if (kn_worker_send(k->worker, cmd, err, sizeof err) < 0) kn_log(k, "%s", err);
  json_decref(cmd);
}

static void on_input_request(kn_kernel_t *k, kn_exec_t *e, json_t *ev) {
  if (!e->allow_stdin) {
    send_to_worker(k, json_pack("{s:s}", "op", "input_eof"));
    return;
  }
  e->input_pending = true;
  flush_output(k, e, true);
  kn_reply(k, k->stdin_sock, e->request, "input_request",
           json_pack("{s:s, s:b}", "prompt", json_string_value(json_object_get(ev, "prompt")) ?: "",
                     "password", json_is_true(json_object_get(ev, "password"))));
}

typedef struct worker_ctx {
  kn_kernel_t *k;
  kn_exec_t *e;
  bool exited;
  int status;
  char reason[256]; /* why the kernel ended the worker, or "" */
  json_t *done;
} worker_ctx_t;

static void on_worker_event(void *ctx, const kn_wev_t *ev) {
  worker_ctx_t *c = ctx;
  kn_kernel_t *k = c->k;
  kn_exec_t *e = c->e;
  switch (ev->type) {
  case KN_WEV_STDOUT:
  case KN_WEV_STDERR: {
    char kind = ev->type == KN_WEV_STDOUT ? 'O' : 'E';
    if (e) {
      add_output(k, e, kind, ev->data, ev->len);
    } else if (last_request) {
      char *text = utf8_sanitize((const unsigned char *)ev->data, ev->len);
      publish_stream(k, last_request, kind, text);
      free(text);
    }
    break;
  }
  case KN_WEV_CRASH:
    if (e) {
      free(e->crash_report);
      e->crash_report = kn_strndup(ev->data, ev->len);
    }
    break;
  case KN_WEV_EXITED:
    c->exited = true;
    c->status = ev->status;
    snprintf(c->reason, sizeof c->reason, "%s", ev->data ? ev->data : "");
    break;
  case KN_WEV_JSON: {
    const char *name = json_string_value(json_object_get(ev->json, "ev"));
    if (!e || !name) break;
    if (!strcmp(name, "done") && !c->done)
      c->done = json_incref(ev->json);
    else if (!strcmp(name, "input_request"))
      on_input_request(k, e, ev->json);
    break;
  }
  }
}

/* What ended the worker, in a sentence ("the worker process died of
 * SIGALRM (Alarm clock)"). New string. */
static char *describe_exit(int status, const char *reason) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  if (reason && *reason)
    kn_strbuf_puts(&sb, reason);
  else if (WIFEXITED(status))
    kn_strbuf_printf(&sb, "the worker process exited with status %d", WEXITSTATUS(status));
  else if (WIFSIGNALED(status))
    kn_strbuf_printf(&sb, "the worker process died of %s (%s)", signal_name(WTERMSIG(status)),
                     strsignal(WTERMSIG(status)));
  else
    kn_strbuf_puts(&sb, "the worker process ended");
  return kn_strbuf_steal(&sb);
}

/* The worker ended while no cell ran (an alarm, a thread of an earlier
 * cell, a signal from outside): it is restarted now, and the next cell's
 * output says what happened, as a crash during a cell does. */
static void on_worker_exit_between_cells(kn_kernel_t *k, int status, const char *reason) {
  char *what = describe_exit(status, reason), err[512];
  kn_log(k, "between cells, %s; restarting it", what);
  int rc = kn_kernel_start_worker(k, err, sizeof err);
  kn_strbuf_t note = KN_STRBUF_INIT;
  kn_strbuf_printf(&note, "cflame: between cells, %s. ", what);
  if (rc < 0)
    kn_strbuf_printf(&note, "The worker could not be restarted: %s\n", err);
  else if (kn_session_has_globals(k->session))
    kn_strbuf_puts(&note, "The worker was restarted: earlier cells' definitions were reloaded, and "
                          "global variables were reset to their initial values.\n");
  else
    kn_strbuf_puts(&note, "The worker was restarted: earlier cells' definitions were reloaded.\n");
  free(k->between_cells_note);
  k->between_cells_note = kn_strbuf_steal(&note);
  free(what);
}

/* Handles what the worker reported (c): the running cell's end, or the
 * worker's. */
static void after_worker_events(kn_kernel_t *k, worker_ctx_t *c) {
  /* Both may come in one pass: the cell finished, then the worker ended
   * (a cell that closed its command channel). */
  if (c->done && k->exec) on_done(k, k->exec, c->done);
  if (c->exited) {
    if (k->exec)
      on_worker_exit(k, k->exec, c->status, c->reason);
    else
      on_worker_exit_between_cells(k, c->status, c->reason);
  }
  json_decref(c->done);
}

void kn_execute_on_worker(kn_kernel_t *k) {
  worker_ctx_t c = {.k = k, .e = k->exec};
  /* Events after "done" belong to no cell; read them one pass at a time. */
  kn_worker_read(k->worker, on_worker_event, &c);
  after_worker_events(k, &c);
}

void kn_execute_on_input_reply(kn_kernel_t *k, kn_msg_t *msg) {
  kn_exec_t *e = k->exec;
  if (!e || !e->input_pending) return;
  e->input_pending = false;
  const char *value = json_string_value(json_object_get(msg->content, "value"));
  if (value)
    send_to_worker(k, json_pack("{s:s, s:s}", "op", "input_reply", "value", value));
  else
    send_to_worker(k, json_pack("{s:s}", "op", "input_eof"));
}

void kn_execute_stop(kn_kernel_t *k) {
  if (k->exec) kn_compile_cancel(&k->exec->compiling);
}

void kn_execute_interrupt(kn_kernel_t *k) {
  kn_exec_t *e = k->exec;
  if (e && e->compiling) {
    /* Nothing ran yet: the compiler stops, the cell is not kept. */
    kn_compile_cancel(&e->compiling);
    finish_error(k, e, "Interrupted", "the cell was interrupted while it compiled; nothing ran");
    return;
  }
  if (!e || !kn_worker_alive(k->worker)) return;
  if (e->interrupt_stage == 0) {
    e->interrupt_stage = 1;
    e->interrupt_at_ms = now_ms();
  }
  kn_worker_signal_group(k->worker, SIGINT);
}

int kn_execute_tick(kn_kernel_t *k) {
  worker_ctx_t c = {.k = k, .e = k->exec};
  int timeout = kn_worker_tick(k->worker, on_worker_event, &c);
  after_worker_events(k, &c);
  kn_exec_t *e = k->exec;
  if (!e) return timeout;
  long long now = now_ms();
  if (e->out.len) {
    long long due = e->out_since_ms + OUTPUT_BATCH_MS;
    if (now >= due) {
      flush_output(k, e, false);
      if (e->out.len) e->out_since_ms = now;
    } else {
      timeout = (int)(due - now);
    }
  }
  if (e->interrupt_stage == 1 && now - e->interrupt_at_ms >= INTERRUPT_FORCE_MS) {
    e->interrupt_stage = 2;
    kn_worker_signal(k->worker, SIGUSR2);
  } else if (e->interrupt_stage == 2 && now - e->interrupt_at_ms >= INTERRUPT_KILL_MS) {
    e->interrupt_stage = 3;
    kn_worker_signal_group(k->worker, SIGKILL);
  }
  if (e->interrupt_stage == 1 || e->interrupt_stage == 2) {
    long long due = e->interrupt_at_ms +
                    (e->interrupt_stage == 1 ? INTERRUPT_FORCE_MS : INTERRUPT_KILL_MS);
    int t = due > now ? (int)(due - now) : 0;
    if (timeout < 0 || t < timeout) timeout = t;
  }
  if (e->out.len && timeout < 0) timeout = OUTPUT_BATCH_MS;
  return timeout;
}

/* ---- starting an execution ---- */

static void print(kn_kernel_t *k, kn_exec_t *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void print(kn_kernel_t *k, kn_exec_t *e, const char *fmt, ...) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  kn_strbuf_vprintf(&sb, fmt, ap);
  va_end(ap);
  if (sb.len) add_output(k, e, 'O', sb.data, sb.len);
  kn_strbuf_free(&sb);
}

/* Parses IPython-style -n N -r R flags off the front of args. *rest points
 * at what follows them. Returns 0 or -1 with err. */
static int parse_timeit_flags(const char *args, json_int_t *number, json_int_t *repeat,
                              const char **rest, char *err, size_t err_size) {
  const char *p = args;
  *number = 0;
  *repeat = 7;
  for (;;) {
    while (isspace((unsigned char)*p)) p++;
    if (p[0] != '-' || !(p[1] == 'n' || p[1] == 'r') || !(isspace((unsigned char)p[2]) || isdigit((unsigned char)p[2]))) break;
    char flag = p[1];
    p += 2;
    while (isspace((unsigned char)*p)) p++;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || v < 1 || v > 1000000000 || errno ||
        !(isspace((unsigned char)*end) || *end == '\0')) {
      snprintf(err, err_size, "%%timeit: -%c needs a whole number from 1 to 1000000000", flag);
      return -1;
    }
    if (flag == 'n')
      *number = v;
    else
      *repeat = v;
    p = end;
  }
  if (*p == '-') {
    snprintf(err, err_size, "%%timeit: unknown flag '%.*s'; valid flags: -n N (loops per run), "
                            "-r R (runs)", (int)strcspn(p, " \t"), p);
    return -1;
  }
  *rest = p;
  return 0;
}

/* Runs one line magic. Returns 0, or -1 having finished e with an error. */
static int run_line_magic(kn_kernel_t *k, kn_exec_t *e, const kn_magic_t *m) {
  char err[1024];
  if (!strcmp(m->name, "cc")) {
    if (!*m->args)
      print(k, e, "%s\n", kn_session_cc(k->session));
    else if (kn_session_set_cc(k->session, m->args, err, sizeof err) < 0)
      goto fail;
    return 0;
  }
  if (!strcmp(m->name, "cflags") || !strcmp(m->name, "ldflags")) {
    bool c = m->name[0] == 'c';
    if (!*m->args) {
      print(k, e, "%s\n", c ? kn_session_cflags(k->session) : kn_session_ldflags(k->session));
      return 0;
    }
    int rc = c ? kn_session_set_cflags(k->session, m->args, err, sizeof err)
               : kn_session_set_ldflags(k->session, m->args, err, sizeof err);
    if (rc < 0) goto fail;
    return 0;
  }
  if (!strcmp(m->name, "reset")) {
    if (*m->args) {
      snprintf(err, sizeof err, "%%reset takes no arguments");
      goto fail;
    }
    kn_session_reset(k->session);
    if (kn_kernel_start_worker(k, err, sizeof err) < 0) goto fail;
    print(k, e, "Session reset: every definition was forgotten and the worker restarted.\n");
    return 0;
  }
  if (!strcmp(m->name, "profbase")) {
    char *list = kn_prof_baseline_list(k->prof);
    add_output(k, e, 'O', list, strlen(list));
    free(list);
    return 0;
  }
  if (!strcmp(m->name, "profdiffview")) {
    json_t *display = kn_prof_diff_session(k->prof, m->args, err, sizeof err);
    if (!display) goto fail;
    publish_display(k, e, display);
    return 0;
  }
  if (kn_profmagic_is_line(m->name)) {
    char *output = NULL;
    json_t *display = NULL;
    if (kn_profmagic_line(k->prof, m->name, m->args, &output, &display, err, sizeof err) < 0)
      goto fail;
    if (output) add_output(k, e, 'O', output, strlen(output));
    free(output);
    if (display) publish_display(k, e, display);
    return 0;
  }
  if (!strcmp(m->name, "lsmagic")) {
    kn_strbuf_t sb = KN_STRBUF_INIT;
    kn_strbuf_puts(&sb, "Available magics:\n");
    for (size_t i = 0; i < sizeof magics / sizeof magics[0]; i++) {
      char *summary = first_sentence(magics[i].help);
      kn_strbuf_printf(&sb, "  %s\n", magics[i].usage);
      put_wrapped(&sb, summary, "      ", 90);
      free(summary);
    }
    kn_strbuf_puts(&sb, "Help on one magic: %NAME? (or Shift-Tab on it in JupyterLab).\n");
    print(k, e, "%s", sb.data);
    kn_strbuf_free(&sb);
    return 0;
  }
  snprintf(err, sizeof err, "%%%s cannot be used here", m->name);
fail:
  finish_error(k, e, "MagicError", "%s", err);
  return -1;
}

static bool blank(const char *s) {
  for (; *s; s++)
    if (!isspace((unsigned char)*s)) return false;
  return true;
}

/* Starts compiling code; e is the running execution from now on, and the
 * main loop, which never waits for the compiler, goes on in
 * kn_execute_on_compiler. timeit is stolen. */
static void compile_and_run(kn_kernel_t *k, kn_exec_t *e, const char *code, int first_line,
                            json_t *timeit) {
  char err[1024];
  e->compiling = kn_session_compile_start(k->session, e->cell, code, first_line, err, sizeof err);
  if (!e->compiling) {
    json_decref(timeit);
    finish_error(k, e, "KernelError", "%s", err);
    return;
  }
  e->timeit_spec = timeit;
  k->exec = e;
}

void kn_execute_compiler_fds(const kn_kernel_t *k, int fds[2]) {
  fds[0] = fds[1] = -1;
  if (k->exec && k->exec->compiling) kn_compile_fds(k->exec->compiling, fds);
}

static void run_compiled(kn_kernel_t *k, kn_exec_t *e, int rc, char *diagnostics, const char *err,
                         json_t *timeit);

void kn_execute_on_compiler(kn_kernel_t *k) {
  kn_exec_t *e = k->exec;
  if (!e || !e->compiling || !kn_compile_poll(e->compiling)) return;
  char err[1024] = "", *diagnostics = NULL;
  int rc = kn_session_compile_finish(k->session, &e->compiling, &e->compiled, &diagnostics, err,
                                     sizeof err);
  json_t *timeit = e->timeit_spec;
  e->timeit_spec = NULL;
  run_compiled(k, e, rc, diagnostics, err, timeit);
}

/* The compiler's answer (rc as kn_session_compile's): reports its errors,
 * or hands the cell to the worker. timeit is stolen. */
static void run_compiled(kn_kernel_t *k, kn_exec_t *e, int rc, char *diagnostics, const char *err_in,
                         json_t *timeit) {
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
      json_array_append_new(tb, json_stringn(p, len));
      if (!first && memmem(p, len, "error", 5)) {
        first = p;
        first_len = len;
      }
      p = nl ? nl + 1 : NULL;
    }
    char *value = first ? kn_strndup(first, first_len) : kn_strdup("the cell did not compile");
    finish(k, e, "CompileError", value, tb);
    free(value);
    free(diagnostics);
    json_decref(timeit);
    return;
  }
  if (rc < 0) {
    json_decref(timeit);
    finish_error(k, e, "KernelError", "%s", err);
    return;
  }
  if (e->compiled->warnings && *e->compiled->warnings) {
    add_output(k, e, 'E', e->compiled->warnings, strlen(e->compiled->warnings));
    if (e->compiled->warnings[strlen(e->compiled->warnings) - 1] != '\n')
      add_output(k, e, 'E', "\n", 1);
  }
  if (!kn_worker_alive(k->worker) && kn_kernel_start_worker(k, err, sizeof err) < 0) {
    json_decref(timeit);
    finish_error(k, e, "KernelError", "%s", err);
    return;
  }
  json_t *cmd = json_pack("{s:s, s:s, s:s, s:b, s:b}", "op", "run", "path", e->compiled->so_path,
                          "entry", e->compiled->entry, "allow_stdin", e->allow_stdin,
                          "frame_pointers", e->compiled->frame_pointers);
  if (timeit) json_object_set_new(cmd, "timeit", timeit);
  if (e->profreq.mode != KN_PROF_NONE && e->profreq.allocs) {
    if (kn_prof_prepare_allocs(k->prof, e->profreq.n_words, err, sizeof err) < 0) {
      json_decref(cmd);
      finish_error(k, e, "ProfileError", "%s", err);
      return;
    }
    json_object_set_new(cmd, "allocs",
                        json_pack("{s:f, s:s, s:I, s:I, s:i}", "sample_rate",
                                  e->profreq.sample_rate, "file", k->prof->allocs_path, "words",
                                  (json_int_t)e->profreq.n_words, "table_slots",
                                  (json_int_t)KN_ALLOCS_RUN_TABLE_SLOTS(e->profreq.sample_rate),
                                  "tag", e->cell));
  } else if (e->profreq.mode != KN_PROF_NONE) {
    if (kn_prof_prepare(k->prof, e->profreq.n_words, err, sizeof err) < 0) {
      json_decref(cmd);
      finish_error(k, e, "ProfileError", "%s", err);
      return;
    }
    json_object_set_new(cmd, "profile",
                        json_pack("{s:I, s:s, s:I, s:i}", "interval_ns",
                                  (json_int_t)e->profreq.delay_ns, "file", k->prof->buffer_path,
                                  "words", (json_int_t)e->profreq.n_words, "tag", e->cell));
  }
  if (kn_worker_send(k->worker, cmd, err, sizeof err) < 0) {
    json_decref(cmd);
    finish_error(k, e, "KernelError", "%s", err);
    return;
  }
  json_decref(cmd);
  k->exec = e;
}

static bool is_statement_magic(const kn_magic_t *m) {
  /* %profbase alone lists the baselines; with a NAME it profiles. */
  if (!strcmp(m->name, "profbase")) return *m->args != '\0';
  /* %profdiffview NAME alone shows the session profile against NAME. */
  if (!strcmp(m->name, "profdiffview")) return kn_profdiff_has_statement(m->args);
  return !strcmp(m->name, "timeit") || !strcmp(m->name, "profview") ||
         !strcmp(m->name, "profile") || !strcmp(m->name, "profallocs");
}

/* Checks that every magic of the cell exists in the form it is written in.
 * Returns 0, or -1 having finished e with the error. */
static int check_magics(kn_kernel_t *k, kn_exec_t *e, const kn_cell_magics_t *cm) {
  for (size_t i = 0; i < cm->n_lines; i++) {
    const kn_magic_t *m = &cm->lines[i];
    const magic_info_t *known = find_magic(m->name);
    if (known && known->line) continue;
    char *valid = valid_magics(false);
    if (known)
      finish_error(k, e, "MagicError", "%%%s is a cell magic: write it as %%%%%s on the first line",
                   m->name, m->name);
    else
      finish_error(k, e, "MagicError", "unknown magic %%%s; valid line magics: %s", m->name, valid);
    free(valid);
    return -1;
  }
  if (cm->cell) {
    const magic_info_t *known = find_magic(cm->cell->name);
    if (known && known->cell) return 0;
    char *valid = valid_magics(true);
    if (known)
      finish_error(k, e, "MagicError", "%%%s is a line magic: write it as %%%s", cm->cell->name,
                   cm->cell->name);
    else
      finish_error(k, e, "MagicError", "unknown cell magic %%%%%s; valid cell magics: %s",
                   cm->cell->name, valid);
    free(valid);
    return -1;
  }
  return 0;
}

/* Decides whether req profiles CPU time or allocations (%%profallocs;
 * %%profbase with allocs=true or allocation options; %%profdiffview as its
 * baseline was taken), takes a diff's allocation settings from its
 * baseline unless written, and refuses options of the other kind and a
 * diff of one kind against the other. Returns 0, or -1 with err. */
static int resolve_profile_kind(kn_kernel_t *k, kn_profreq_t *r, kn_profmode_t mode,
                                const char *magic, char *err, size_t err_size) {
  bool alloc_opts = r->sample_rate_set || r->weight_set || r->live_set;
  if (mode == KN_PROF_ALLOCS) {
    r->allocs = true;
  } else if (mode == KN_PROF_BASE) {
    if (!r->allocs_given) r->allocs = alloc_opts;
  } else if (mode == KN_PROF_DIFF) {
    const fl_profile_info_t *bi = fl_profile_info_const(kn_prof_baseline(k->prof, r->baseline));
    bool base_allocs = bi->kind == FL_PROFILE_ALLOC;
    if (!r->allocs_given) r->allocs = base_allocs || alloc_opts;
    if (r->allocs != base_allocs) {
      snprintf(err, err_size,
               "%%%s %s: baseline %s is %s, and this would be %s: a CPU profile cannot be "
               "compared with an allocation profile. Profile the same way as the baseline "
               "(%s), or take another baseline with %%%%profbase NAME%s",
               magic, r->baseline, r->baseline,
               base_allocs ? "an allocation profile" : "a CPU profile",
               r->allocs ? "an allocation profile" : "a CPU profile",
               base_allocs ? "allocs=true" : "allocs=false", r->allocs ? " allocs=true" : "");
      return -1;
    }
    if (r->allocs) {
      if (!r->sample_rate_set) r->sample_rate = bi->sample_rate;
      if (!r->weight_set) r->weight_count = bi->weight_is_count;
      if (!r->live_set) r->live = bi->live_only;
    }
  }
  if (r->allocs && r->delay_set) {
    snprintf(err, err_size, "%%%s: delay= is the CPU profiler's sampling interval; an allocation "
                            "profile samples allocations: use sample_rate= (0 < rate <= 1)", magic);
    return -1;
  }
  if (!r->allocs && alloc_opts) {
    snprintf(err, err_size, "%%%s: sample_rate=, weight= and live= are options of allocation "
                            "profiles (%%%%profallocs, or allocs=true)", magic);
    return -1;
  }
  if (r->allocs && !r->n_set) r->n_words = KN_ALLOCS_DEFAULT_WORDS;
  return 0;
}

/* Parses the magic that decides how the code runs (%%timeit, %%profview,
 * %%profile, or their statement forms): sets *timeit or e->profreq, and for
 * statement forms *stmt (new). Returns 0, or -1 having finished e. */
static int parse_run_magic(kn_kernel_t *k, kn_exec_t *e, const kn_magic_t *m, bool statement,
                           json_t **timeit, char **stmt) {
  char err[1024];
  *timeit = NULL;
  *stmt = NULL;
  if (!strcmp(m->name, "timeit")) {
    json_int_t number, repeat;
    const char *rest;
    if (parse_timeit_flags(m->args, &number, &repeat, &rest, err, sizeof err) < 0) goto fail;
    if (statement && blank(rest)) {
      snprintf(err, sizeof err, "%%timeit needs a statement to time");
      goto fail;
    }
    if (!statement && !blank(rest)) {
      snprintf(err, sizeof err,
               "%%%%timeit: unexpected '%s'; valid flags: -n N (loops per run), -r R (runs)", rest);
      goto fail;
    }
    if (statement) *stmt = kn_strdup(rest);
    *timeit = json_pack("{s:I, s:I}", "number", number, "repeat", repeat);
    return 0;
  }
  if (!strcmp(m->name, "profview") || !strcmp(m->name, "profile") ||
      !strcmp(m->name, "profbase") || !strcmp(m->name, "profdiffview") ||
      !strcmp(m->name, "profallocs")) {
    kn_profmode_t mode = !strcmp(m->name, "profview")     ? KN_PROF_VIEW
                         : !strcmp(m->name, "profile")    ? KN_PROF_ACCUMULATE
                         : !strcmp(m->name, "profbase")   ? KN_PROF_BASE
                         : !strcmp(m->name, "profallocs") ? KN_PROF_ALLOCS
                                                          : KN_PROF_DIFF;
    unsigned groups = find_magic(m->name)->options;
    /* Baseline magics start with the baseline's NAME. */
    const char *args = m->args;
    char *name = NULL;
    if (mode == KN_PROF_BASE || mode == KN_PROF_DIFF) {
      while (isspace((unsigned char)*args)) args++;
      size_t len = strcspn(args, " \t");
      if (len == 0 || memchr(args, '=', len)) {
        char *names = kn_prof_baseline_names(k->prof);
        snprintf(err, sizeof err, "%%%s needs a baseline NAME first%s%s", m->name,
                 mode == KN_PROF_DIFF ? "; baselines: " : " (%%profbase NAME)",
                 mode == KN_PROF_DIFF ? names : "");
        free(names);
        goto fail;
      }
      name = kn_strndup(args, len);
      args += len;
      if (mode == KN_PROF_DIFF && !kn_prof_baseline(k->prof, name)) {
        char *names = kn_prof_baseline_names(k->prof);
        snprintf(err, sizeof err, "%%%s: no baseline named '%s'; baselines: %s", m->name, name,
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
      opts = kn_strdup(args);
    int rc = kn_profreq_parse(k->prof, m->name, opts, groups, &e->profreq, err, sizeof err);
    free(opts);
    e->profreq.baseline = name; /* the request owns it from here on */
    if (rc < 0) goto fail;
    if (!statement && e->profreq.positional[0]) {
      snprintf(err, sizeof err, "%%%%%s: unexpected '%s'; options are key=value words, such as "
                                "delay=0.0001", m->name, e->profreq.positional[0]);
      goto fail;
    }
    if (statement && blank(*stmt)) {
      snprintf(err, sizeof err, "%%%s needs a statement to profile, such as %%%s work(100);",
               m->name, m->name);
      goto fail;
    }
    if (resolve_profile_kind(k, &e->profreq, mode, m->name, err, sizeof err) < 0) goto fail;
    e->profreq.mode = mode;
    return 0;
  }
  return 0;
fail:
  free(*stmt);
  *stmt = NULL;
  finish_error(k, e, "MagicError", "%s", err);
  return -1;
}

/* What is wrong with an execute_request's code, or NULL: it must be a
 * string, and C text holds no NUL. New string. */
static char *bad_code(const json_t *code) {
  kn_strbuf_t sb = KN_STRBUF_INIT;
  if (!json_is_string(code)) {
    kn_strbuf_printf(&sb, "execute_request: 'code' must be a string (the cell's text); it is %s",
                     !code ? "missing" : json_is_null(code) ? "null" : "not a string");
    return kn_strbuf_steal(&sb);
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
  kn_strbuf_printf(&sb, "the cell holds a NUL character (U+0000) at line %d, column %d; C source "
                        "cannot contain one: remove it",
                   line, col);
  return kn_strbuf_steal(&sb);
}

void kn_execute_start(kn_kernel_t *k, kn_msg_t *msg) {
  kn_exec_t *e = kn_xcalloc(1, sizeof *e);
  e->request = msg;
  char *bad = bad_code(json_object_get(msg->content, "code"));
  const char *code = bad ? "" : json_string_value(json_object_get(msg->content, "code"));
  e->silent = json_is_true(json_object_get(msg->content, "silent"));
  json_t *sh = json_object_get(msg->content, "store_history");
  bool store_history = !e->silent && (sh ? json_is_true(sh) : true);
  json_t *as = json_object_get(msg->content, "allow_stdin");
  e->allow_stdin = as ? json_is_true(as) : true;
  json_t *soe = json_object_get(msg->content, "stop_on_error");
  e->stop_on_error = soe ? json_is_true(soe) : true;
  const char *limit = getenv("CFLAME_OUTPUT_LIMIT");
  e->out_limit = limit && atol(limit) > 0 ? (size_t)atol(limit) : DEFAULT_OUTPUT_LIMIT;

  kn_publish_status(k, msg, "busy");
  if (bad) {
    /* Answered, never dropped: a client waits for every reply. */
    e->count = k->execution_count;
    finish_error(k, e, "RequestError", "%s", bad);
    free(bad);
    return;
  }
  if (store_history) {
    k->execution_count++;
    kn_history_add(k, code);
  }
  if (k->between_cells_note) {
    /* What happened to the worker since the last cell, said first. */
    publish_stream(k, msg, 'E', k->between_cells_note);
    free(k->between_cells_note);
    k->between_cells_note = NULL;
  }
  e->count = k->execution_count;
  /* Cells are compiled under their execution count (cell[N] in messages).
   * Executions that store no history take numbers from a range of their
   * own, so their symbols never clash with a numbered cell's. */
  static int unnumbered_cells = 1000000;
  e->cell = store_history ? k->execution_count : ++unnumbered_cells;
  if (!e->silent)
    kn_publish(k, msg, "execute_input",
               json_pack("{s:s, s:i}", "code", code, "execution_count", k->execution_count));

  kn_cell_magics_t cm;
  char err[1024];
  if (kn_magic_split(code, &cm, err, sizeof err) < 0) {
    finish_error(k, e, "MagicError", "%s", err);
    return;
  }
  /* Every magic is checked before any runs: a typo in the second one must
   * not leave the first one applied. */
  if (check_magics(k, e, &cm) < 0) goto out;
  /* %NAME? (or %NAME ??, %%NAME? on a cell) shows the magic's help and runs
   * nothing, as in IPython. */
  for (size_t i = 0; i <= cm.n_lines; i++) {
    const kn_magic_t *m = i < cm.n_lines ? &cm.lines[i] : cm.cell;
    if (m && (!strcmp(m->args, "?") || !strcmp(m->args, "??"))) {
      print(k, e, "%s\n", kn_magic_help(m->name));
      finish_ok(k, e);
      goto out;
    }
  }

  /* The statement forms (%timeit, %profview, %profile STMT) end the cell. */
  const kn_magic_t *stmt_magic = NULL;
  for (size_t i = 0; i < cm.n_lines; i++)
    if (is_statement_magic(&cm.lines[i])) stmt_magic = &cm.lines[i];
  if (stmt_magic && (stmt_magic != &cm.lines[cm.n_lines - 1] || cm.cell || !blank(cm.body))) {
    finish_error(k, e, "MagicError",
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

  for (size_t i = 0; i < cm.n_lines; i++) {
    if (&cm.lines[i] == stmt_magic) break;
    if (run_line_magic(k, e, &cm.lines[i]) < 0) {
      json_decref(timeit);
      free(stmt);
      goto out;
    }
  }
  if (stmt) {
    compile_and_run(k, e, stmt, stmt_magic->line, timeit);
    free(stmt);
    goto out;
  }
  if (blank(cm.body)) {
    json_decref(timeit);
    if (e->profreq.mode != KN_PROF_NONE || timeit)
      finish_error(k, e, "MagicError", "%%%%%s needs code below it to run", cm.cell->name);
    else
      finish_ok(k, e);
    goto out;
  }
  compile_and_run(k, e, cm.body, cm.body_line, timeit);
out:
  kn_cell_magics_free(&cm);
}
