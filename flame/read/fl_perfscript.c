/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_perfscript: the text of `perf script` folded into stacks, the way
 * stackcollapse-perf.pl (Brendan Gregg's FlameGraph) folds it with its
 * default options, so that `cflame --format folded` and the script agree
 * stack for stack on the same capture.
 *
 * The input is a sequence of samples:
 *
 *   prog  2043  9786.938382:     250000 cpu-clock:ppp:          event header
 *   \t    1263 leaf_work+0x33 (/tmp/pt/p)                      leaf first
 *   \t    1097 main+0x17 (/tmp/pt/p)
 *   \t   2724a __libc_start_call_main+0x7a (/usr/lib/.../libc.so.6)
 *                                                              blank: the end
 *
 * The script's rules, followed to the letter, patterns included (its
 * regular expressions are matched here by hand, with Perl's backtracking
 * worked out, so that odd lines split where Perl splits them):
 *  - Lines starting with '#' are skipped.
 *  - A header is /^(\S.+?)\s+(\d+)[/]*(\d+)*\s+/: the process name is the
 *    shortest prefix of at least two characters that is followed by
 *    whitespace, a thread id (or pid/tid) and whitespace. (So a one-letter
 *    name "p" comes out as "p_": the space after it is part of the match.)
 *    Spaces in the name become underscores. The event, when the header
 *    ends in one (/:\s*(\d+)*\s+(\S+):\s*$/), filters: only samples of the
 *    first event type seen are kept (a header of another type is skipped,
 *    and so are its frames).
 *  - A frame line is /^\s*(\w+)\s*(.+) \((.*)\)/: address, symbol, module
 *    (from the last " (" before the last ')'). A trailing "+0x<hex>" offset
 *    is dropped; a symbol starting with '(' is skipped; the symbol splits on
 *    "->" into inline chains. Each part: "[unknown]" becomes the module's
 *    file name in brackets (or stays "[unknown]"), ';' becomes ':',
 *    everything from the first '(' on is dropped (unless it is a Go method
 *    "pkg.(*T).M", or the '(' opens "(anonymous namespace)"), quotes are
 *    deleted, a Java class loses its leading 'L' (process names starting
 *    with "java"), and parts after the first get "_[i]".
 *  - A blank line ends the sample: the process name, then the frames from
 *    the outermost to the leaf. Frames before any header are ignored, and a
 *    sample only counts once its blank line is read (so the last sample of
 *    a truncated file is dropped, as the script drops it).
 *
 * Where cflame differs: each sample weighs 1 (newer versions of the script
 * count the period the header prints, e.g. 250000 for a cpu-clock sample,
 * which multiplies every count by it); "\r\n" line ends are accepted; a
 * line that is neither comment, header, frame, blank nor a source line
 * under a frame is an error naming the line, where the script warns and
 * goes on; the source lines that `perf script -F +srcline` prints under a
 * frame ("  p.c:4") give that frame a file and line, where the script
 * without --srcline warns about them.
 *
 * What cflame adds to each frame: the module's file name, the kind of code
 * (FL_FRAME_KERNEL for [kernel.*], vmlinux and bracketed modules at kernel
 * addresses; FL_FRAME_SYSTEM for shared libraries under /usr/lib or /lib;
 * FL_FRAME_CELL otherwise; FL_FRAME_INLINED for the inlined parts of a
 * chain), the thread id of the sample and its time (the header's
 * "9786.938382:", in nanoseconds; 0 when the header has none), and the
 * thread's name (the header's process name as perf printed it, spaces
 * kept: perf prints the thread's comm). A frame that perf --call-graph
 * dwarf prints as "func (inlined)" has no module of its own: it takes the
 * module and kind of the frame printed after it at the same address (the
 * function it was inlined into: libc's msort_with_tmp is libc's), else of
 * the frame printed before it (perf prints __libc_start_main_impl inlined
 * between libc's __libc_start_call_main and the program's _start). */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__io.h"

/* ---- the script's patterns ---- */

bool fl__perf_header(const char *s, size_t n, fl__perf_header_t *h) {
  if (n < 3 || fl__is_space(s[0])) return false;
  /* (\S.+?): the name is s[0, i), i >= 2, the smallest that fits. */
  for (size_t i = 2; i < n;) {
    if (!fl__is_space(s[i])) {
      i++;
      continue;
    }
    size_t j = i;
    while (j < n && fl__is_space(s[j])) j++;
    size_t pid = j;
    while (j < n && fl__is_digit(s[j])) j++;
    size_t pid_end = j;
    while (j < n && s[j] == '/') j++;
    size_t tid = j;
    while (j < n && fl__is_digit(s[j])) j++;
    size_t tid_end = j;
    if (pid_end > pid && j < n && fl__is_space(s[j])) {
      if (h) {
        *h = (fl__perf_header_t){.comm_len = i,
                                 .pid = s + pid,
                                 .pid_len = pid_end - pid,
                                 .tid = tid_end > tid ? s + tid : NULL,
                                 .tid_len = tid_end - tid};
      }
      return true;
    }
    /* Every start inside this run of whitespace meets the same digits. */
    while (i < n && fl__is_space(s[i])) i++;
  }
  return false;
}

bool fl__perf_event(const char *s, size_t n, fl__perf_event_t *ev) {
  size_t e = n;
  while (e > 0 && fl__is_space(s[e - 1])) e--;
  if (e < 2 || s[e - 1] != ':') return false;
  size_t colon = e - 1, name = colon;
  while (name > 0 && !fl__is_space(s[name - 1])) name--;
  if (name == colon || name == 0) return false; /* (\S+) needs a character, \s+ before it */
  size_t k = name;
  while (k > 0 && fl__is_space(s[k - 1])) k--;
  size_t digits_end = k;
  while (k > 0 && fl__is_digit(s[k - 1])) k--;
  size_t digits = k;
  while (k > 0 && fl__is_space(s[k - 1])) k--;
  if (k == 0 || s[k - 1] != ':') return false;
  if (ev) {
    uint64_t period = 0;
    for (size_t i = digits; i < digits_end; i++) {
      uint64_t d = (uint64_t)(s[i] - '0');
      period = period > (UINT64_MAX - d) / 10 ? UINT64_MAX : period * 10 + d;
    }
    *ev = (fl__perf_event_t){.name = s + name, .name_len = colon - name, .period = period};
  }
  return true;
}

typedef struct frame_line {
  const char *pc, *func, *mod;
  size_t pc_len, func_len, mod_len;
} frame_line_t;

/* /^\s*(\w+)\s*(.+) \((.*)\)/ with Perl's choices: (.+) is greedy, so the
 * symbol ends at the last " (" that has a ')' after it, and (.*) runs to
 * the last ')'. When the " (" follows the address too closely for (.+) to
 * get a character, Perl backtracks: into the whitespace, else into the
 * address. */
static bool match_frame(const char *s, size_t n, frame_line_t *f) {
  size_t i = 0;
  while (i < n && fl__is_space(s[i])) i++;
  size_t pc = i;
  while (i < n && fl__is_word(s[i])) i++;
  size_t pc_end = i;
  if (pc_end == pc) return false;
  size_t close = n;
  while (close > 0 && s[close - 1] != ')') close--;
  if (close == 0) return false;
  close--; /* the last ')' */
  /* The last " (" at j with j + 2 <= close; never inside the address. */
  size_t open = SIZE_MAX;
  for (size_t j = close - 1; j-- > pc_end;) {
    if (s[j] == ' ' && s[j + 1] == '(') {
      open = j;
      break;
    }
  }
  if (open == SIZE_MAX) return false;
  size_t ws = 0;
  while (pc_end + ws < n && fl__is_space(s[pc_end + ws])) ws++;
  size_t func;
  if (open >= pc_end + ws + 1)
    func = pc_end + ws;
  else if (open >= pc_end + 1)
    func = open - 1; /* one whitespace character */
  else if (pc_end - pc >= 2)
    func = --pc_end; /* the address's last character */
  else
    return false;
  *f = (frame_line_t){.pc = s + pc,
                      .pc_len = pc_end - pc,
                      .func = s + func,
                      .func_len = open - func,
                      .mod = s + open + 2,
                      .mod_len = close - (open + 2)};
  return true;
}

bool fl__perf_frame_line(const char *s, size_t n) {
  frame_line_t f;
  return match_frame(s, n, &f);
}

/* ---- the reader ---- */

typedef struct reader {
  fl_profile_t *p;
  const char *name;
  fl_io_error_t *err;
  fl__frame_cache_t cache;
  fl__buf_t pname; /* the sample's process name, NUL-terminated */
  bool have_pname; /* a sample is open */
  bool java;       /* pname starts with "java" */
  int tid;
  uint64_t time_ns; /* the sample's, 0: none */
  int named_tid;    /* the thread last named, with named (its name) */
  fl__buf_t named;
  uint32_t *stack; /* frame ids, leaf first, without the process */
  size_t n, cap;
  fl__buf_t filter; /* the event type kept */
  bool have_filter;
  bool after_frame;  /* the line before was a frame line */
  size_t p0;         /* its outermost part's index in stack, or SIZE_MAX */
  fl__buf_t inlined; /* functions printed "(inlined)" whose module is not
                        known yet, innermost first, each NUL-ended */
  size_t n_inlined;
  fl__buf_t inlined_pc; /* the address of the last of them */
  uint64_t period;      /* of the samples kept, while it is one and the same */
  bool period_varies, clock_only;
  size_t headers, samples;
  fl__buf_t text, key; /* scratch */
  fl_budget_t *budget; /* charged for the stack and the profile */
  bool stopped;        /* the budget refused something: the reading ends */
} reader_t;

static bool starts_with(const char *s, size_t n, const char *prefix) {
  size_t k = strlen(prefix);
  return n >= k && memcmp(s, prefix, k) == 0;
}

static uint64_t parse_hex(const char *s, size_t n) {
  uint64_t v = 0;
  if (n > 16) return 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int d = fl__is_digit(c)        ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) return 0;
    v = v << 4 | (uint64_t)d;
  }
  return v;
}

/* The kind of code of a frame line's module (fl__module_kind). */
static uint32_t frame_flags(const frame_line_t *f) {
  return fl__module_kind(f->mod, f->mod_len, parse_hex(f->pc, f->pc_len));
}

/* A frame's id, through the cache: the key is the flags, the module and
 * the function. */
static uint32_t frame_id(reader_t *r, const char *func, const char *module, size_t module_len,
                         uint32_t flags) {
  fl__buf_t *k = &r->key;
  k->len = 0;
  char flag_byte = (char)(flags & 0x7f);
  fl__buf_add(k, &flag_byte, 1);
  if (module_len) fl__buf_add(k, module, module_len);
  fl__buf_add(k, "", 1);
  fl__buf_puts(k, func);
  uint32_t id;
  if (fl__frame_cache_get(&r->cache, k->data, k->len, &id)) return id;
  char *mod = module_len ? fl__xstrndup(module, module_len) : NULL;
  fl_frame_t f = {.func = func, .module = mod, .flags = flags};
  id = fl_profile_frame_id(r->p, &f);
  free(mod);
  if (id != FL_PROFILE_NO_FRAME) fl__frame_cache_put(&r->cache, k->data, k->len, id);
  return id;
}

/* One part of a symbol, tidied as the script tidies it, into r->text
 * (NUL-terminated). */
static void tidy_part(reader_t *r, const char *part, size_t n, const frame_line_t *f,
                      bool inlined) {
  fl__buf_t *t = &r->text;
  t->len = 0;
  if (n == 9 && memcmp(part, "[unknown]", 9) == 0) {
    if (f->mod_len == 9 && memcmp(f->mod, "[unknown]", 9) == 0) {
      fl__buf_puts(t, "[unknown]");
    } else {
      size_t b = fl__path_base(f->mod, f->mod_len);
      fl__buf_puts(t, "[");
      fl__buf_add(t, f->mod + b, f->mod_len - b);
      fl__buf_puts(t, "]");
    }
  } else {
    fl__buf_add(t, part, n);
  }
  char *s = t->data;
  size_t len = t->len;
  for (size_t i = 0; i < len; i++)
    if (s[i] == ';') s[i] = ':';
  /* Not a Go method (".(" ... ")." in it): drop from the first '(' that
   * does not open "(anonymous namespace)". */
  const char *go_open = memmem(s, len, ".(", 2);
  bool go = false;
  if (go_open)
    for (size_t j = len; j-- > (size_t)(go_open - s) + 2;)
      if (s[j] == '.' && s[j - 1] == ')') {
        go = true;
        break;
      }
  if (!go) {
    static const char anon[] = "anonymous namespace)";
    for (size_t i = 0; i < len; i++) {
      if (s[i] != '(') continue;
      if (len - i - 1 >= sizeof anon - 1 && memcmp(s + i + 1, anon, sizeof anon - 1) == 0) continue;
      len = i;
      break;
    }
  }
  size_t k = 0;
  for (size_t i = 0; i < len; i++)
    if (s[i] != '"' && s[i] != '\'') s[k++] = s[i];
  len = k;
  if (r->java && len && s[0] == 'L' && memchr(s, '/', len)) {
    memmove(s, s + 1, len - 1);
    len--;
  }
  t->len = len;
  s[len] = '\0';
  if (inlined && !memmem(s, len, "_[i]", 4)) fl__buf_puts(t, "_[i]");
}

/* Pushes a frame (FL_PROFILE_NO_FRAME: the budget refused it); once the
 * budget refuses, nothing more, and the reading stops after the line. */
static void push_frame(reader_t *r, uint32_t id) {
  uint32_t *grown;
  if (r->stopped || id == FL_PROFILE_NO_FRAME ||
      !(grown = fl__grow_charged(r->budget, r->stack, &r->cap, r->n + 1, sizeof *r->stack))) {
    r->stopped = true;
    return;
  }
  r->stack = grown;
  r->stack[r->n++] = id;
}

typedef struct part {
  const char *s;
  size_t n;
} part_t;

/* Pushes the waiting inlined functions with the module and kind of the
 * frame they belong to. */
static void push_inlined(reader_t *r, const char *module, size_t module_len, uint32_t flags) {
  const char *func = r->inlined.data;
  for (size_t i = 0; i < r->n_inlined; i++, func += strlen(func) + 1)
    push_frame(r, frame_id(r, func, module, module_len, flags | FL_FRAME_INLINED));
  r->n_inlined = 0;
  r->inlined.len = 0;
}

/* push_inlined with the module and kind of the frame before them (leaf
 * side), or of none when they are the leaf. */
static void push_inlined_as_before(reader_t *r) {
  const fl_frame_t *f = r->n ? fl_profile_frame(r->p, r->stack[r->n - 1]) : NULL;
  fl__buf_t module = {0};
  if (f && f->module) fl__buf_puts(&module, f->module); /* frame_id may move it */
  push_inlined(r, module.data, module.len, f ? f->flags & ~FL_FRAME_INLINED : 0);
  fl__buf_free(&module);
}

/* A frame line of the open sample: its parts, outermost first after the
 * sample is reversed. */
static void on_frame(reader_t *r, const frame_line_t *f) {
  r->p0 = SIZE_MAX;
  const char *raw = f->func;
  size_t n = f->func_len;
  /* s/\+0x[\da-f]+$// */
  size_t h = n;
  while (h > 0 && (fl__is_digit(raw[h - 1]) || (raw[h - 1] >= 'a' && raw[h - 1] <= 'f'))) h--;
  if (h < n && h >= 3 && memcmp(raw + h - 3, "+0x", 3) == 0) n = h - 3;
  if (n > 0 && raw[0] == '(') return; /* a process name */
  /* split /->/, trailing empty parts dropped */
  part_t small[8], *parts = small;
  size_t n_parts = 0, cap = 8;
  for (size_t start = 0;;) {
    const char *arrow = memmem(raw + start, n - start, "->", 2);
    size_t end = arrow ? (size_t)(arrow - raw) : n;
    if (n_parts == cap) {
      part_t *grown = fl__xmalloc(cap * 2, sizeof *grown);
      memcpy(grown, parts, n_parts * sizeof *parts);
      if (parts != small) free(parts);
      parts = grown;
      cap *= 2;
    }
    parts[n_parts++] = (part_t){raw + start, end - start};
    if (!arrow) break;
    start = end + 2;
  }
  while (n_parts > 0 && parts[n_parts - 1].n == 0) n_parts--;

  /* perf --call-graph dwarf prints a function inlined at an address as
   * "func (inlined)", without its module: it waits for the next frame. */
  if (f->mod_len == 7 && memcmp(f->mod, "inlined", 7) == 0) {
    for (size_t i = n_parts; i-- > 0;) {
      tidy_part(r, parts[i].s, parts[i].n, f, i > 0);
      fl__buf_add(&r->inlined, r->text.data, r->text.len + 1);
      r->n_inlined++;
    }
    r->inlined_pc.len = 0;
    fl__buf_add(&r->inlined_pc, f->pc, f->pc_len);
    if (parts != small) free(parts);
    return;
  }
  uint32_t flags = frame_flags(f);
  size_t b = fl__path_base(f->mod, f->mod_len);
  if (r->n_inlined) {
    /* Inlined at this frame's own address: they belong to it, the function
     * they were inlined into. Otherwise they are the caller side of the
     * frame before them, at its module's addresses. */
    bool same_pc = r->inlined_pc.len == f->pc_len && !memcmp(r->inlined_pc.data, f->pc, f->pc_len);
    if (same_pc || r->n == 0)
      push_inlined(r, f->mod + b, f->mod_len - b, flags);
    else
      push_inlined_as_before(r);
  }
  /* Pushed innermost first: the sample is reversed at its end. */
  for (size_t i = n_parts; i-- > 0;) {
    tidy_part(r, parts[i].s, parts[i].n, f, i > 0);
    push_frame(r, frame_id(r, r->text.data, f->mod + b, f->mod_len - b,
                           flags | (i > 0 ? FL_FRAME_INLINED : 0)));
  }
  if (n_parts) r->p0 = r->n - 1;
  if (parts != small) free(parts);
}

/* A `perf script -F +srcline` line under a frame ("  p.c:4"; bracketed
 * parts such as "libc.so.6[27b25]" removed, as the script's --srcline does):
 * gives the frame's outermost part that file and line. Anything else that
 * is indented there is let be. */
static void on_srcline(reader_t *r, const char *s, size_t n) {
  if (r->p0 == SIZE_MAX) return;
  fl__buf_t *t = &r->text;
  t->len = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '[') {
      const char *close = memchr(s + i + 1, ']', n - i - 1);
      if (close) {
        i = (size_t)(close - s);
        continue;
      }
    }
    fl__buf_add(t, s + i, 1);
  }
  if (!t->data) return;
  char *a = t->data;
  size_t len = t->len, start = 0;
  while (start < len && fl__is_space(a[start])) start++;
  while (len > start && fl__is_space(a[len - 1])) len--;
  size_t colon = len;
  while (colon > start && fl__is_digit(a[colon - 1])) colon--;
  if (colon == len || colon <= start + 1 || a[colon - 1] != ':') return;
  long line = 0;
  for (size_t i = colon; i < len && line <= INT_MAX; i++) line = line * 10 + (a[i] - '0');
  if (line <= 0 || line > INT_MAX) return;
  a[colon - 1] = '\0';
  fl_frame_t f = *fl_profile_frame(r->p, r->stack[r->p0]);
  f.file = a + start;
  f.line = (int)line;
  uint32_t id = fl_profile_frame_id(r->p, &f);
  if (id == FL_PROFILE_NO_FRAME)
    r->stopped = true;
  else
    r->stack[r->p0] = id;
  r->p0 = SIZE_MAX;
}

static int to_int(const char *digits, size_t n) {
  long v = 0;
  for (size_t i = 0; i < n && v <= INT_MAX; i++) v = v * 10 + (digits[i] - '0');
  return v > INT_MAX ? INT_MAX : (int)v;
}

/* The time in a header after its thread id: the first word of the form
 * "SECONDS.FRACTION:" (perf prints "[CPU]" and flags before it, when
 * asked), in nanoseconds; 0 when there is none. */
static uint64_t header_time_ns(const char *s, size_t n, size_t from) {
  for (size_t i = from; i < n;) {
    while (i < n && fl__is_space(s[i])) i++;
    size_t w = i;
    while (i < n && !fl__is_space(s[i])) i++;
    size_t d = w;
    uint64_t sec = 0, frac = 0, scale = 1000000000;
    while (d < i && fl__is_digit(s[d]) && sec < UINT64_MAX / 10 / 1000000000)
      sec = sec * 10 + (uint64_t)(s[d++] - '0');
    if (d == w || d >= i || s[d] != '.') continue;
    size_t f = ++d;
    while (d < i && fl__is_digit(s[d])) {
      if (scale > 1) frac += (uint64_t)(s[d] - '0') * (scale /= 10);
      d++;
    }
    if (d > f && d + 1 == i && s[d] == ':') return sec * 1000000000 + frac;
  }
  return 0;
}

/* Names thread tid after the header's process name (perf prints the
 * thread's comm), when it differs from what it was last named. */
static void name_thread(reader_t *r, const char *comm, size_t len) {
  while (len > 0 && fl__is_space(comm[len - 1])) len--;
  if (r->named_tid == r->tid && r->named.len == len && !memcmp(r->named.data, comm, len)) return;
  r->named_tid = r->tid;
  r->named.len = 0;
  fl__buf_add(&r->named, comm, len);
  fl_profile_set_thread_name(r->p, r->tid, r->named.data);
}

static void on_header(reader_t *r, const char *s, size_t n, const fl__perf_header_t *h) {
  r->headers++;
  fl__perf_event_t ev;
  bool has_event = fl__perf_event(s, n, &ev);
  if (has_event) {
    if (!r->have_filter) {
      r->filter.len = 0;
      fl__buf_add(&r->filter, ev.name, ev.name_len);
      r->have_filter = true;
    } else if (r->filter.len != ev.name_len || memcmp(r->filter.data, ev.name, ev.name_len)) {
      return; /* another event type: the script goes on to the next line */
    }
  }
  uint64_t period = has_event ? ev.period : 0;
  bool clock = has_event && (starts_with(ev.name, ev.name_len, "cpu-clock") ||
                             starts_with(ev.name, ev.name_len, "task-clock"));
  if (!clock || period == 0) r->clock_only = false;
  if (r->period && period != r->period) r->period_varies = true;
  r->period = period;

  r->pname.len = 0;
  fl__buf_add(&r->pname, s, h->comm_len);
  for (size_t i = 0; i < r->pname.len; i++)
    if (r->pname.data[i] == ' ') r->pname.data[i] = '_';
  r->have_pname = true;
  r->java = starts_with(r->pname.data, r->pname.len, "java");
  r->tid = h->tid ? to_int(h->tid, h->tid_len) : to_int(h->pid, h->pid_len);
  const char *id_end = h->tid ? h->tid + h->tid_len : h->pid + h->pid_len;
  r->time_ns = header_time_ns(s, n, (size_t)(id_end - s));
  name_thread(r, s, h->comm_len);
}

/* The blank line after a sample: the process name, then its frames from
 * the outermost to the leaf. */
static void on_sample_end(reader_t *r) {
  /* Inlined functions at the bottom of the stack, with no frame after them. */
  if (r->n_inlined) push_inlined_as_before(r);
  push_frame(r, frame_id(r, r->pname.data, NULL, 0, FL_FRAME_CELL));
  for (size_t i = 0, j = r->n - 1; i < j; i++, j--) {
    uint32_t x = r->stack[i];
    r->stack[i] = r->stack[j];
    r->stack[j] = x;
  }
  if (r->stopped || fl_profile_add_sample_at(r->p, r->stack, r->n, 1, 0, r->tid, r->time_ns) < 0) {
    r->stopped = true;
    return;
  }
  r->samples++;
  r->n = 0;
  r->have_pname = false;
}

static void reader_free(reader_t *r) {
  fl__frame_cache_free(&r->cache);
  fl__buf_free(&r->pname);
  fl__buf_free(&r->named);
  fl__buf_free(&r->filter);
  fl__buf_free(&r->text);
  fl__buf_free(&r->inlined);
  fl__buf_free(&r->inlined_pc);
  fl__buf_free(&r->key);
  free(r->stack);
}

int fl__read_perf_script(fl_profile_t *p, const char *data, size_t len, const char *name,
                         fl_budget_t *budget, fl_io_error_t *err) {
  reader_t r = {.p = p,
                .name = name,
                .err = err,
                .p0 = SIZE_MAX,
                .clock_only = true,
                .named_tid = -1,
                .budget = budget};
  fl__lines_t it = {.data = data, .len = len};
  const char *s;
  size_t n;
  while (fl__next_line(&it, &s, &n)) {
    /* A line is a frame at most: the cancel flag is read every line. */
    if (r.stopped || fl_budget_stopped(budget)) {
      fl__io_budget_fail(err, name, budget);
      goto fail;
    }
    bool after_frame = r.after_frame;
    r.after_frame = false;
    if (n && s[0] == '#') continue;
    if (n == 0) {
      if (r.have_pname) on_sample_end(&r);
      continue;
    }
    fl__perf_header_t h;
    frame_line_t f;
    if (fl__perf_header(s, n, &h)) {
      on_header(&r, s, n, &h);
    } else if (match_frame(s, n, &f)) {
      r.after_frame = true;
      if (r.have_pname) on_frame(&r, &f);
    } else if (after_frame && fl__is_space(s[0])) {
      if (r.have_pname) on_srcline(&r, s, n);
    } else if (!fl__blank(s, n)) {
      char found[80];
      fl__excerpt(s, n, found);
      fl__io_fail_as(err, FL_IO_ERR_NOT_FORMAT, name, it.lineno,
                     "not a line of perf script output: found \"%s\"; expected an event header "
                     "such as \"prog 1234 5678.901234: 250000 cpu-clock:\", a frame line such as "
                     "\"\\t4011d6 main+0x16 (/tmp/prog)\", or a blank line between samples",
                     found);
      goto fail;
    }
  }
  if (r.stopped) {
    fl__io_budget_fail(err, name, budget);
    goto fail;
  }
  if (r.samples == 0) {
    if (r.headers == 0)
      fl__io_fail_as(
          err, FL_IO_ERR_NO_SAMPLES, name, 0,
          "no samples found in %s: a perf script sample is an event header such as "
          "\"prog 1234 5678.901234: 250000 cpu-clock:\", its frame lines, and a blank line",
          name);
    else
      fl__io_fail_as(
          err, FL_IO_ERR_NO_SAMPLES, name, 0,
          "no samples found in %s: its %zu sample header%s no call stack ended by a "
          "blank line (record with `perf record -g`, and give perf script's whole output)",
          name, r.headers, r.headers == 1 ? " has" : "s have");
    goto fail;
  }
  fl_profile_info_t *info = fl_profile_info(p);
  if (r.clock_only && !r.period_varies) info->interval_ns = r.period;
  snprintf(info->source, sizeof info->source, "perf script");
  reader_free(&r);
  return 0;
fail:
  reader_free(&r);
  return -1;
}
