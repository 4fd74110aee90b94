/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_collect: a recording directory read into one profile (see
 * rc_collect.h). */
#define _GNU_SOURCE
#include "rc_collect.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <search.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_sampler.h"
#include "cflame/fl_symbol.h"
#include "fl__common.h"
#include "fl__threads.h"
#include "rc_files.h"

/* One process image of the recording. */
typedef struct image {
  int pid, gen, ppid;
  char *name, *rank;        /* rank NULL when none */
  char *errors;             /* the info file's error lines, "; "-joined, or NULL */
  char *replaced;           /* a signal whose handler the program replaced, or NULL */
  char *blocked;            /* the sampling signal it blocked, or NULL ... */
  unsigned blocked_threads; /* ... on how many threads */
  unsigned closed_threads;  /* threads whose timer ended with a descriptor it closed */
  void *map;                /* its buffer (samples or allocations), or NULL */
  size_t bytes;
  void *cpu_map; /* with allocations, the CPU samples the run also took, or NULL */
  size_t cpu_bytes;
  char *maps; /* the merged maps text, or NULL */
  char root[320];
} image_t;

/* Memory runs out as in the flame library (fl__common.h): a message and
 * an abort, never a recording with processes or maps silently left out. */

/* Appends a formatted line to rec's warnings. */
static void warn(rc_recording_t *rec, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(rc_recording_t *rec, const char *fmt, ...) {
  char *line;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&line, fmt, ap);
  va_end(ap);
  if (n < 0) fl__oom(0);
  rec->warnings = fl__xrealloc(rec->warnings, rec->n_warnings + 1, sizeof *rec->warnings);
  rec->warnings[rec->n_warnings++] = line;
}

/* The whole file dir/PID.GEN.suffix as a string (new), or NULL. */
static char *read_text(const char *dir, const image_t *im, const char *suffix) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, RC_FILE_FMT, dir, im->pid, im->gen, suffix);
  FILE *f = fopen(path, "re");
  if (!f) return NULL;
  char *text = NULL;
  size_t cap = 0;
  errno = 0;
  ssize_t n = getdelim(&text, &cap, '\0', f);
  int e = errno;
  fclose(f);
  if (n < 0) {
    free(text);
    if (e == ENOMEM) fl__oom(0);
    return NULL;
  }
  return text;
}

/* Maps dir/PID.GEN.suffix for reading into *map and *bytes (none when
 * missing or empty). */
static void map_buffer(const char *dir, const image_t *im, const char *suffix, void **map_out,
                       size_t *bytes) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, RC_FILE_FMT, dir, im->pid, im->gen, suffix);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0) return;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (map != MAP_FAILED) {
      *map_out = map;
      *bytes = (size_t)st.st_size;
    }
  }
  close(fd);
}

/* Appends "; " and s to *list. */
static void join(char **list, const char *s) {
  char *joined;
  if (asprintf(&joined, "%s%s%s", *list ? *list : "", *list ? "; " : "", s) < 0) fl__oom(0);
  free(*list);
  *list = joined;
}

/* Reads the info file into im. Returns 0, or -1 when it has no name yet
 * (an image that was starting as it was read). */
static int read_info(const char *dir, image_t *im) {
  char *text = read_text(dir, im, RC_SUFFIX_INFO);
  for (char *line = text, *next; line && *line; line = next) {
    next = strchrnul(line, '\n');
    if (*next) *next++ = '\0';
    char *value = strchr(line, ' ');
    if (!value) continue;
    *value++ = '\0';
    char sig[16];
    unsigned threads;
    if (!strcmp(line, RC_INFO_NAME) && !im->name) {
      im->name = fl__xstrdup(value);
    } else if (!strcmp(line, RC_INFO_PPID)) {
      im->ppid = atoi(value);
    } else if (!strcmp(line, RC_INFO_RANK) && !im->rank) {
      im->rank = fl__xstrdup(value);
    } else if (!strcmp(line, RC_INFO_ERROR)) {
      join(&im->errors, value);
    } else if (!strcmp(line, RC_INFO_REPLACED) && !im->replaced) {
      im->replaced = fl__xstrdup(value);
    } else if (!strcmp(line, RC_INFO_BLOCKED) && sscanf(value, "%15s %u", sig, &threads) == 2) {
      /* Noted at each stop (an exec that failed, exit): the most threads. */
      if (!im->blocked) im->blocked = fl__xstrdup(sig);
      if (threads > im->blocked_threads) im->blocked_threads = threads;
    } else if (!strcmp(line, RC_INFO_CLOSED) && sscanf(value, "%u", &threads) == 1) {
      if (threads > im->closed_threads) im->closed_threads = threads;
    }
  }
  free(text);
  return im->name ? 0 : -1;
}

/* ---- maps ---- */

typedef struct map_line {
  unsigned long lo, hi;
  const char *text; /* borrowed from the snapshots */
  size_t len;       /* with its '\n' */
  const char *path; /* in text */
  size_t path_len;
  bool exec; /* an executable mapping */
} map_line_t;

/* Reads "lo-hi perms offset dev inode path" in line[0, eol) into *m
 * (its len left to the caller). Returns 0, or -1 for a line without a
 * path. Not sscanf: glibc's measures the whole rest of the snapshots
 * (strlen) at every call, which made merging quadratic. */
static int parse_map_line(const char *line, const char *eol, map_line_t *m) {
  char *end;
  m->text = line;
  m->lo = strtoul(line, &end, 16);
  if (end == line || *end != '-') return -1;
  const char *p = end + 1;
  m->hi = strtoul(p, &end, 16);
  if (end == p || *end != ' ') return -1;
  p = end + 1;
  const char *perms_end = memchr(p, ' ', (size_t)(eol - p));
  if (!perms_end) return -1;
  m->exec = memchr(p, 'x', (size_t)(perms_end - p)) != NULL;
  p = perms_end;
  for (int field = 0; field < 3; field++) { /* offset, dev, inode */
    while (p < eol && *p == ' ') p++;
    if (p == eol) return -1;
    while (p < eol && *p != ' ') p++;
  }
  while (p < eol && *p == ' ') p++;
  if (p == eol) return -1;
  m->path = p;
  m->path_len = (size_t)(eol - p);
  return 0;
}

static int cmp_line(const void *a, const void *b) {
  const map_line_t *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The kept lines' ranges, pairwise disjoint, in a search tree ordered by
 * address where overlapping ranges compare equal: whether a range
 * overlaps a kept one is one lookup, O(log n), so merging is linear in
 * the snapshots however many dlopen/dlclose cycles wrote them. */
typedef struct range {
  unsigned long lo, hi;
} range_t;

static __thread size_t range_compares; /* for rc_collect_merge_maps's *work */

static int cmp_range(const void *a, const void *b) {
  const range_t *x = a, *y = b;
  range_compares++;
  if (x->hi <= y->lo) return -1;
  if (y->hi <= x->lo) return 1;
  return 0; /* they overlap (ranges are never empty) */
}

/* The paths mapped executable, as a set over lines[]: whether a file has
 * code is one lookup. */
static bool path_equal(const map_line_t *line, const char *path, size_t len) {
  return line->path_len == len && !memcmp(line->path, path, len);
}

static bool executable_file(const fl__index_t *ix, const map_line_t *lines, const char *path,
                            size_t len) {
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(ix, fl__hash_bytes(path, len), &pr); i != FL__NONE;
       i = fl__index_next(ix, &pr))
    if (path_equal(&lines[i], path, len)) return true;
  return false;
}

char *rc_collect_merge_maps(const char *snapshots, size_t *work) {
  range_compares = 0;
  /* Where each snapshot starts, to walk them newest first. */
  size_t n_snaps = 0, cap_snaps = 0, end_len = strlen(RC_MAPS_END);
  const char **starts = fl__grow(NULL, &cap_snaps, 1, sizeof *starts);
  starts[n_snaps++] = snapshots;
  for (const char *p = snapshots; (p = strstr(p, RC_MAPS_END)); p += end_len) {
    starts = fl__grow(starts, &cap_snaps, n_snaps + 1, sizeof *starts);
    starts[n_snaps++] = p + end_len;
  }
  map_line_t *lines = NULL;
  size_t n = 0, cap = 0;
  void *kept = NULL; /* tree of range_t: the lines of newer snapshots, which win */
  for (size_t s = n_snaps; s-- > 0;) {
    size_t kept_before = n;
    for (const char *line = starts[s]; *line && strncmp(line, RC_MAPS_END, end_len) != 0;) {
      const char *eol = strchrnul(line, '\n');
      size_t len = (size_t)(eol - line) + (*eol == '\n');
      map_line_t m;
      /* File-backed lines, and the [vdso], whose code the symbolizer
       * names. */
      if (parse_map_line(line, eol, &m) == 0 && m.lo < m.hi &&
          (m.path[0] == '/' || !strncmp(m.path, "[vdso]", 6)) &&
          !tfind(&(range_t){m.lo, m.hi}, &kept, cmp_range)) {
        m.len = len;
        lines = fl__grow(lines, &cap, n + 1, sizeof *lines);
        lines[n++] = m;
      }
      line += len;
    }
    /* A snapshot's own lines are disjoint (/proc/PID/maps); they count
     * against older snapshots only. A line that overlaps one of them all
     * the same (made-up input) is kept but not searched for. */
    for (size_t i = kept_before; i < n; i++) {
      range_t *r = fl__xmalloc(1, sizeof *r);
      *r = (range_t){lines[i].lo, lines[i].hi};
      range_t **at = tsearch(r, &kept, cmp_range);
      if (!at) fl__oom(sizeof *r);
      if (*at != r) free(r);
    }
  }
  free(starts);
  if (work) *work = range_compares;
  tdestroy(kept, free);
  if (n) qsort(lines, n, sizeof *lines, cmp_line);
  fl__index_t code = {0};
  for (size_t i = 0; i < n; i++)
    if (lines[i].exec && !executable_file(&code, lines, lines[i].path, lines[i].path_len))
      fl__index_add(&code, fl__hash_bytes(lines[i].path, lines[i].path_len), (uint32_t)i);
  size_t total = 1;
  for (size_t i = 0; i < n; i++) total += lines[i].len + 1;
  char *out = fl__xmalloc(total, 1), *o = out;
  for (size_t i = 0; i < n; i++) {
    /* Code is all that is symbolized: the files of which nothing is
     * mapped executable (data, the recording's own buffers) are left out,
     * so that the maps of a forked child read as its parent's. */
    if (!executable_file(&code, lines, lines[i].path, lines[i].path_len)) continue;
    memcpy(o, lines[i].text, lines[i].len);
    o += lines[i].len;
    if (o[-1] != '\n') *o++ = '\n';
  }
  *o = '\0';
  fl__index_free(&code);
  free(lines);
  return out;
}

/* ---- the rule ---- */

/* Where a stack below main begins: the C library's start-up of the
 * process and of its threads (names with and without libc6-dbg). */
static bool is_start_machinery(const char *func) {
  static const char *const names[] = {"__libc_start_call_main",
                                      "__libc_start_main",
                                      "__libc_start_main_impl",
                                      "_start",
                                      "start_thread",
                                      "clone",
                                      "clone3",
                                      NULL};
  for (size_t i = 0; func && names[i]; i++)
    if (!strcmp(func, names[i])) return true;
  return false;
}

/* The rule's room for a frame's name. */
typedef struct rule_ctx {
  char name[300];
} rule_ctx_t;

/* The preloaded libraries' frames are a library's the program runs with
 * (their cost, such as a maps snapshot before a dlopen, shows as theirs),
 * but for the wrapper each thread starts in, which ends its stacks. A
 * function without a symbol is named after its module, "[libfoo.so]", as
 * stackcollapse-perf.pl names it. */
static fl_collect_verdict_t record_rule(void *ctx, const fl_frame_info_t *info, fl_frame_t *fr) {
  rule_ctx_t *r = ctx;
  const char *func = info->func;
  if (!func && fr->module) {
    /* "[libfoo.so]"; a pseudo-file's name ("[vdso]") as it is. */
    snprintf(r->name, sizeof r->name, fr->module[0] == '[' ? "%s" : "[%s]", fr->module);
    fr->func = r->name;
  }
  if (fr->module &&
      (!strcmp(fr->module, RC_PRELOAD_LIB) || !strcmp(fr->module, RC_PRELOAD_ALLOCS_LIB))) {
    if (func && !strcmp(func, FL__THREAD_START_NAME)) return FL_COLLECT_BASE;
    fr->flags |= FL_FRAME_SYSTEM;
    return FL_COLLECT_KEEP;
  }
  if (is_start_machinery(func)) return FL_COLLECT_BASE;
  if (!(fr->flags & (FL_FRAME_SYSTEM | FL_FRAME_ALLOC))) fr->flags |= FL_FRAME_CELL;
  return func && !strcmp(func, "main") ? FL_COLLECT_KEEP_BASE : FL_COLLECT_KEEP;
}

/* ---- the directory ---- */

/* Warns of what the image's program did that stopped its samples, and
 * notes in rec that it did. Nothing when an exec followed (a child that
 * resets its signals, or blocks them, just before it execs, as
 * posix_spawn's do, lost nothing of note). */
static void say_interference(rc_recording_t *rec, const image_t *im, bool exec_followed) {
  if (exec_followed) return;
  if (im->replaced)
    warn(rec,
         "%s (pid %d) replaced the handler of %s, which the sampler uses: samples stopped "
         "there, in that process (and in the children it forks afterwards, until they exec)",
         im->name, im->pid, im->replaced);
  if (im->blocked)
    warn(rec,
         "%s (pid %d) blocked %s, which the sampler uses, on %u thread%s: samples stopped "
         "there while it was blocked",
         im->name, im->pid, im->blocked, im->blocked_threads, im->blocked_threads == 1 ? "" : "s");
  if (im->closed_threads)
    warn(rec,
         "%s (pid %d) closed the descriptor of the sampler's timer on %u thread%s: samples "
         "stopped there",
         im->name, im->pid, im->closed_threads, im->closed_threads == 1 ? "" : "s");
  if (im->replaced || im->blocked || im->closed_threads) rec->interfered = true;
}

static int cmp_image(const void *a, const void *b) {
  const image_t *x = a, *y = b;
  if (x->pid != y->pid) return (x->pid > y->pid) - (x->pid < y->pid);
  return (x->gen > y->gen) - (x->gen < y->gen);
}

/* Whether a buffer (of allocations, else of samples) holds records. */
static bool buffer_has_records(const void *map, size_t bytes, bool allocs) {
  if (!map) return false;
  if (allocs) {
    const fl_allocs_header_t *h = map;
    return bytes >= sizeof *h && h->magic == FL_ALLOCS_MAGIC && h->used_words > 0;
  }
  const fl_sampler_header_t *h = map;
  return bytes >= sizeof *h && h->magic == FL_SAMPLER_MAGIC && h->used_words > 0;
}

/* Whether the image's buffers hold records. */
static bool has_records(const image_t *im, bool allocs) {
  return buffer_has_records(im->map, im->bytes, allocs) ||
         buffer_has_records(im->cpu_map, im->cpu_bytes, false);
}

/* The images of dir, sorted, with their info read. NULL with err. */
static image_t *list_images(const char *dir, size_t *n_out, char *err, size_t err_size) {
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, err_size, "cannot read the recording in %s: %s", dir, strerror(errno));
    return NULL;
  }
  image_t *images = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    int pid, gen, end = 0;
    char suffix[16];
    if (sscanf(e->d_name, "%d.%d.%15[a-z]%n", &pid, &gen, suffix, &end) != 3 || e->d_name[end] ||
        strcmp(suffix, RC_SUFFIX_INFO) != 0)
      continue;
    images = fl__grow(images, &cap, n + 1, sizeof *images);
    images[n] = (image_t){.pid = pid, .gen = gen};
    if (read_info(dir, &images[n]) == 0) n++;
  }
  closedir(d);
  if (n) qsort(images, n, sizeof *images, cmp_image);
  *n_out = n;
  return images ? images : fl__xmalloc(1, 1);
}

/* Names each image's root: its program's name, with its rank or pid when
 * another kept image has the same name. */
static void name_roots(image_t *images, size_t n, const bool *kept) {
  for (size_t i = 0; i < n; i++) {
    if (!kept[i]) continue;
    bool alike = false;
    for (size_t j = 0; j < n && !alike; j++)
      alike = j != i && kept[j] && !strcmp(images[j].name, images[i].name);
    if (!alike)
      snprintf(images[i].root, sizeof images[i].root, "%s", images[i].name);
    else if (images[i].rank)
      snprintf(images[i].root, sizeof images[i].root, "%s (rank %s)", images[i].name,
               images[i].rank);
    else
      snprintf(images[i].root, sizeof images[i].root, "%s (pid %d)", images[i].name, images[i].pid);
  }
}

/* An empty profile of the kind opts record. */
static fl_profile_t *new_profile(const rc_collect_opts_t *opts) {
  fl_profile_t *p = fl_profile_new(opts->allocs  ? fl_collect_allocs_kind(&opts->aopts)
                                   : opts->event ? FL_PROFILE_EVENT
                                   : opts->wall  ? FL_PROFILE_WALL
                                                 : FL_PROFILE_CPU);
  if (opts->event)
    snprintf(fl_profile_info(p)->event, sizeof fl_profile_info(p)->event, "%s", opts->event);
  return p;
}

/* Collects one image into rec->profile. */
static void collect_image(const char *dir, image_t *im, const rc_collect_opts_t *opts,
                          fl_symbolizer_t *sym, rc_recording_t *rec) {
  fl_frame_t root = {.func = im->root, .flags = FL_FRAME_ROOT};
  rule_ctx_t rule;
  fl_collect_opts_t co = {.rule = record_rule,
                          .ctx = &rule,
                          .main_tid = im->pid,
                          .root = &root,
                          .also = im->cpu_map,
                          .also_bytes = im->cpu_bytes};
  fl_profile_t *p = new_profile(opts);
  char err[256];
  int rc = opts->allocs
               ? fl_collect_allocs(p, sym, im->map, im->bytes, &co, &opts->aopts, err, sizeof err)
               : fl_collect_samples(p, sym, im->map, im->bytes, &co, err, sizeof err);
  if (rc < 0)
    warn(rec, "%s (pid %d): %s; its records after the fault are left out", im->name, im->pid, err);
  if (buffer_has_records(im->cpu_map, im->cpu_bytes, false)) {
    /* The CPU samples of an allocation recording: a second kind. */
    fl_profile_t *cpu = fl_profile_new(FL_PROFILE_CPU);
    co.also = im->map; /* the threads numbered as in the allocations */
    co.also_bytes = im->bytes;
    co.also_allocs = true;
    if (fl_collect_samples(cpu, sym, im->cpu_map, im->cpu_bytes, &co, err, sizeof err) < 0)
      warn(rec, "%s (pid %d): %s; its samples after the fault are left out", im->name, im->pid,
           err);
    fl_profile_merge(p, cpu);
    fl_profile_destroy(&cpu);
  }
  int *threads = NULL;
  rec->threads += fl_profile_threads(p, &threads);
  free(threads);
  const fl_profile_info_t *info = fl_profile_info_const(p);
  uint64_t space_errno = !im->map       ? 0
                         : opts->allocs ? ((const fl_allocs_header_t *)im->map)->space_errno
                                        : ((const fl_sampler_header_t *)im->map)->space_errno;
  /* The recording's directory is TMPDIR/cflame-record-XXXXXX. */
  const char *slash = strrchr(dir, '/');
  int tmp_len = slash ? (int)(slash - dir) : (int)strlen(dir);
  if (info->dropped && space_errno)
    warn(rec,
         "%s (pid %d): %llu %s were lost because TMPDIR's file system (%.*s) %s; set TMPDIR to a "
         "directory with room",
         im->name, im->pid, (unsigned long long)info->dropped,
         opts->allocs ? "sampled allocations" : "samples", tmp_len ? tmp_len : 1, dir,
         space_errno == ENOSPC ? "filled up" : strerror((int)space_errno));
  else if (info->dropped)
    warn(rec, "%s (pid %d): its %s buffer filled up and %llu %s were lost; give a larger --buffer",
         im->name, im->pid, opts->allocs ? "allocation" : "sample",
         (unsigned long long)info->dropped, opts->allocs ? "sampled allocations" : "samples");
  if (fl_profile_n_samples(p)) rec->processes++;
  if (!opts->allocs &&
      ((const fl_sampler_header_t *)im->map)->source == FL_SAMPLER_SOURCE_CPU_TIMER)
    rec->cpu_timers = true;
  fl_profile_merge(rec->profile, p);
  fl_profile_info_t *all = fl_profile_info(rec->profile);
  if (opts->allocs) {
    all->sample_rate = info->sample_rate;
    all->calls += info->calls;
  }
  fl_profile_destroy(&p);
}

/* A kept symbolizer, by the maps text it was made from. */
struct rc_symbols {
  char **maps;
  fl_symbolizer_t **syms;
  size_t n, cap;
};

rc_symbols_t *rc_symbols_new(void) {
  return fl__xcalloc(1, sizeof(rc_symbols_t));
}

void rc_symbols_destroy(rc_symbols_t **syms) {
  rc_symbols_t *k = *syms;
  if (!k) return;
  for (size_t i = 0; i < k->n; i++) {
    free(k->maps[i]);
    fl_symbolizer_destroy(&k->syms[i]);
  }
  free(k->maps);
  free(k->syms);
  free(k);
  *syms = NULL;
}

/* The kept symbolizer of maps, or NULL. */
static fl_symbolizer_t *kept_symbolizer(const rc_symbols_t *k, const char *maps) {
  for (size_t i = 0; k && i < k->n; i++)
    if (!strcmp(k->maps[i], maps)) return k->syms[i];
  return NULL;
}

static void keep_symbolizer(rc_symbols_t *k, const char *maps, fl_symbolizer_t *sym) {
  size_t cap = k->cap;
  k->maps = fl__grow(k->maps, &cap, k->n + 1, sizeof *k->maps);
  k->syms = fl__grow(k->syms, &k->cap, k->n + 1, sizeof *k->syms);
  k->maps[k->n] = fl__xstrdup(maps);
  k->syms[k->n++] = sym;
}

/* Collects im with the symbolizer of its maps (merged from snapshots):
 * the one keep holds for the same maps (a forked child's are its
 * parent's; the same image a second ago), or a new one, kept there. */
static void collect_symbolized(const char *dir, image_t *im, const char *snapshots,
                               rc_symbols_t *keep, const rc_collect_opts_t *opts,
                               rc_recording_t *rec) {
  im->maps = rc_collect_merge_maps(snapshots ? snapshots : "", NULL);
  fl_symbolizer_t *sym = kept_symbolizer(keep, im->maps);
  char sym_err[256];
  if (!sym) {
    if (!(sym = fl_symbolizer_new_from_maps(im->maps, sym_err, sizeof sym_err))) {
      warn(rec, "%s (pid %d) is left out: cannot read its modules: %s", im->name, im->pid, sym_err);
      return;
    }
    keep_symbolizer(keep, im->maps, sym);
  }
  collect_image(dir, im, opts, sym, rec);
}

void rc_collect_image(int pid, const char *name, const void *buf, size_t bytes,
                      const char *snapshots, const rc_collect_opts_t *opts, rc_recording_t *rec) {
  memset(rec, 0, sizeof *rec);
  rec->profile = new_profile(opts);
  rec->images = 1;
  image_t im = {.pid = pid, .name = (char *)name, .map = (void *)buf, .bytes = bytes};
  snprintf(im.root, sizeof im.root, "%s", name);
  rc_symbols_t *own = opts->keep ? NULL : rc_symbols_new();
  if (has_records(&im, opts->allocs))
    collect_symbolized("", &im, snapshots, opts->keep ? opts->keep : own, opts, rec);
  rc_symbols_destroy(&own);
  free(im.maps);
  snprintf(fl_profile_info(rec->profile)->source, sizeof fl_profile_info(rec->profile)->source,
           "cflame record");
}

int rc_collect(const char *dir, const rc_collect_opts_t *opts, rc_recording_t *rec, char *err,
               size_t err_size) {
  memset(rec, 0, sizeof *rec);
  size_t n = 0;
  image_t *images = list_images(dir, &n, err, err_size);
  if (!images) return -1;
  rec->profile = new_profile(opts);
  rec->images = n;
  bool *kept = fl__xcalloc(n, sizeof *kept);
  for (size_t i = 0; i < n; i++) {
    image_t *im = &images[i];
    if (im->errors) warn(rec, "%s (pid %d): %s", im->name, im->pid, im->errors);
    /* A child that reset its signals just before an exec (the pid's next
     * generation) lost nothing of note. */
    bool exec_followed = i + 1 < n && images[i + 1].pid == im->pid;
    say_interference(rec, im, exec_followed);
    map_buffer(dir, im, opts->allocs ? RC_SUFFIX_ALLOCS : RC_SUFFIX_SAMPLES, &im->map, &im->bytes);
    if (opts->allocs) map_buffer(dir, im, RC_SUFFIX_SAMPLES, &im->cpu_map, &im->cpu_bytes);
    kept[i] = has_records(im, opts->allocs);
  }
  name_roots(images, n, kept);
  rc_symbols_t *own = opts->keep ? NULL : rc_symbols_new();
  for (size_t i = 0; i < n; i++) {
    if (!kept[i]) continue;
    char *snapshots = read_text(dir, &images[i], RC_SUFFIX_MAPS);
    collect_symbolized(dir, &images[i], snapshots, opts->keep ? opts->keep : own, opts, rec);
    free(snapshots);
  }
  rc_symbols_destroy(&own);
  fl_profile_info_t *info = fl_profile_info(rec->profile);
  snprintf(info->source, sizeof info->source, "cflame record");
  for (size_t i = 0; i < n; i++) {
    image_t *im = &images[i];
    if (im->map) munmap(im->map, im->bytes);
    if (im->cpu_map) munmap(im->cpu_map, im->cpu_bytes);
    free(im->name);
    free(im->rank);
    free(im->errors);
    free(im->replaced);
    free(im->blocked);
    free(im->maps);
  }
  free(kept);
  free(images);
  return 0;
}

void rc_recording_free(rc_recording_t *rec) {
  fl_profile_destroy(&rec->profile);
  for (size_t i = 0; i < rec->n_warnings; i++) free(rec->warnings[i]);
  free(rec->warnings);
  rec->warnings = NULL;
  rec->n_warnings = 0;
}
