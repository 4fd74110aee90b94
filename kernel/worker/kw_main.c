/* SPDX-License-Identifier: BSD-3-Clause */
/* The worker's entry point and command loop (see kw.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_allocs.h"
#include "cflame/fl_sampler.h"
#include "fl__common.h"
#include "kn_chan.h"
#include "kw.h"

typedef int (*cell_entry_fn)(void);

#if defined(__SANITIZE_ADDRESS__)
/* In sanitizer builds: cells allocate without freeing as a matter of course
 * (a global buffer lives for the session), and exit(n) in a cell must reach
 * the kernel as n, not as LeakSanitizer's exit code. The kernel process
 * keeps leak detection. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "detect_leaks=0";
}
#endif

typedef struct loaded_object {
  const char *path;
  bool frame_pointers; /* compiled with frame pointers (the command says) */
} loaded_object_t;

/* Records the executable segments of the object loaded from path: with
 * the crash handler, and with the allocation recorder when compiled with
 * frame pointers. */
static int note_code_range(struct dl_phdr_info *info, size_t size, void *data) {
  const loaded_object_t *obj = data;
  if (!info->dlpi_name || strcmp(info->dlpi_name, obj->path) != 0) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
      kw_fault_add_code_range(lo, lo + ph->p_memsz);
      if (obj->frame_pointers) fl_allocs_add_fp_range(lo, lo + ph->p_memsz);
    }
  }
  return 1;
}

/* The worker's own code is the allocation recorder's base range: a return
 * address into it (run_once, fl__thread_start) ends a frame-pointer walk, as the
 * kernel ends every stack at the worker's first frame. The executable is
 * the first object dl_iterate_phdr reports. */
static int note_base_range(struct dl_phdr_info *info, size_t size, void *data) {
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
      uintptr_t seg = info->dlpi_addr + ph->p_vaddr;
      if (seg < lo) lo = seg;
      if (seg + ph->p_memsz > hi) hi = seg + ph->p_memsz;
    }
  }
  if (lo < hi) fl_allocs_set_base_range(lo, hi);
  return 1;
}

/* dlopens path into the global scope; frame_pointers: its code keeps
 * frame pointers. Returns the handle or NULL with the loader's message in
 * err. */
static void *load_object(const char *path, bool frame_pointers, char *err, size_t err_size) {
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    snprintf(err, err_size, "%s", dlerror());
    return NULL;
  }
  loaded_object_t obj = {path, frame_pointers};
  dl_iterate_phdr(note_code_range, &obj);
  return h;
}

static json_t *error_event(const char *ename, const char *evalue) {
  return json_pack("{s:s, s:s, s:s, s:s}", "ev", "done", "status", "error", "ename", ename,
                   "evalue", evalue);
}

/* ---- profiling: the sampler or the allocation recorder around a run ----
 *
 * A run command may carry "profile": {"interval_ns": N, "file": PATH,
 * "words": W, "tag": T (optional, what records carry: the cell number),
 * "zeroed": Z (optional: true when the kernel just made the file, all
 * zeros, so that it is not cleared again), "clock": "cpu" or "wall"
 * (optional, "cpu": fl_sampler_set_clock), "event": {"type", "config",
 * "period"} (optional: a perf event counted instead of time,
 * fl_sampler_set_event)}. PATH is a file the kernel made
 * fl_sampler_buffer_bytes(W) long; the worker maps it shared (a file it
 * has mapped stays mapped from run to run), so that the samples survive a
 * crash of the worker, and samples every thread of the cell from just before its entry
 * is called to just after it returns. The "done" event then says
 * "profile": {"samples": N, "dropped": D, "source": "perf-task-clock" or
 * "cpu-timer", "interval_ns": N, "cpu_ns": the process's CPU time while
 * sampling}.
 *
 * Or it may carry "allocs": {"sample_rate": R (0 < R <= 1), "file": PATH,
 * "words": W, "table_slots": S (a power of two: see fl_allocs.h), "tag": T
 * (optional), "zeroed": Z (as above)}. PATH is a file the kernel made fl_allocs_buffer_bytes(W, S)
 * long, mapped shared the same way; the allocation calls of every thread
 * are recorded (fl_allocs_entry.c, fl_allocs) from just before the cell's entry is
 * called to just after it returns. The "done" event then says "allocs":
 * {"records": N, "dropped": D, "calls": C, "frees": F, "sample_rate": R,
 * "space_errno": the errno with which the buffer's file could not grow (0: none),
 * "fp_records": P}: records written, sampled calls that did not fit, every
 * allocation call made while recording, sampled or not, the sampled blocks
 * released while recording (the header of the file says the same; see
 * fl_allocs.h for what calls counts of failed calls), and how many records
 * the frame-pointer walk unwound.
 *
 * "load" and "run" may say "frame_pointers": true when the object was
 * compiled with frame pointers (the kernel knows the flags): its code is
 * then registered with the allocation recorder, whose sampled allocations
 * called from it are unwound by walking the frame-pointer chain instead of
 * libunwind (see fl_allocs.h). Absent or false: libunwind.
 * A run carries one of "profile" and "allocs", not both. */

/* A buffer file mapped shared, kept from run to run. */
typedef struct mapped_file {
  void *map;
  size_t bytes;
  uint64_t layout; /* what else shapes the buffer (the table's slots) */
  dev_t dev;
  ino_t ino;
  char *path;
} mapped_file_t;

/* Record words of the allocation buffer given blocks before a run. */
#define KW_ALLOCS_START_WORDS ((size_t)1 << 17)

static mapped_file_t sample_file, allocs_file;

/* Gives a recorder its buffer, the mapping of fd (which stays the
 * caller's); zeroed: the file is all zeros (the kernel just made it), so
 * the recorder need not clear it. */
typedef int (*give_buffer_fn)(void *map, size_t bytes, uint64_t layout, bool zeroed, int fd,
                              char *err, size_t err_size);

static int give_to_sampler(void *map, size_t bytes, uint64_t layout, bool zeroed, int fd,
                           char *err, size_t err_size) {
  (void)layout;
  (void)fd; /* the kernel gave the whole file its blocks (kn_prof_prepare) */
  return zeroed ? fl_sampler_init_zeroed(map, bytes, err, err_size)
                : fl_sampler_init(map, bytes, err, err_size);
}

/* The allocation buffer is large and sparse: its start is given blocks
 * before anything is written, and the recorder grows the rest as it
 * records (docs/ARCHITECTURE.md, "Buffers on a file system that fills
 * up"), so that a full TMPDIR is this error or lost records, never SIGBUS. */
static int give_to_allocs(void *map, size_t bytes, uint64_t layout, bool zeroed, int fd,
                          char *err, size_t err_size) {
  size_t end;
  int e = fl_allocs_allocate_start(fd, bytes, (size_t)layout, KW_ALLOCS_START_WORDS, &end);
  if (e) {
    const char *tmp = getenv("TMPDIR");
    snprintf(err, err_size, "cannot give the allocation buffer its first %zu bytes: %s%s%s", end,
             e == ENOSPC ? "TMPDIR's file system (" : strerror(e),
             e == ENOSPC ? (tmp && *tmp ? tmp : "/tmp") : "", e == ENOSPC ? ") is full" : "");
    return -1;
  }
  if ((zeroed ? fl_allocs_init_zeroed(map, bytes, (size_t)layout, err, err_size)
              : fl_allocs_init(map, bytes, (size_t)layout, err, err_size)) < 0)
    return -1;
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (own < 0) {
    snprintf(err, err_size, "cannot keep the allocation buffer's descriptor: %s", strerror(errno));
    return -1;
  }
  if (fl_allocs_use_file(own, end, err, err_size) < 0) {
    close(own);
    return -1;
  }
  return 0;
}

/* Maps path, bytes long, into mf (re-mapping when the kernel names another
 * file, another size or layout, or a new file at the same path) and gives a
 * new mapping to its recorder with give, saying whether the kernel made it
 * all zeros. what names the buffer in errors. */
static int map_buffer_file(mapped_file_t *mf, const char *what, const char *path, size_t bytes,
                           uint64_t layout, bool zeroed, give_buffer_fn give, char *err,
                           size_t err_size) {
  void *map = MAP_FAILED;
  struct stat st;
  int fd = open(path, O_RDWR | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) < 0) {
    snprintf(err, err_size, "cannot open the %s %s: %s", what, path, strerror(errno));
    goto fail;
  }
  if (mf->map && mf->bytes == bytes && mf->layout == layout && mf->dev == st.st_dev &&
      mf->ino == st.st_ino && strcmp(mf->path, path) == 0) {
    close(fd);
    return 0;
  }
  if ((size_t)st.st_size < bytes) {
    snprintf(err, err_size, "the %s %s is %lld bytes, not %zu", what, path, (long long)st.st_size,
             bytes);
    goto fail;
  }
  map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    snprintf(err, err_size, "cannot map the %s %s: %s", what, path, strerror(errno));
    goto fail;
  }
  if (give(map, bytes, layout, zeroed, fd, err, err_size) < 0) goto fail;
  close(fd);
  if (mf->map) munmap(mf->map, mf->bytes);
  free(mf->path);
  mf->map = map;
  mf->bytes = bytes;
  mf->layout = layout;
  mf->dev = st.st_dev;
  mf->ino = st.st_ino;
  mf->path = fl__xstrdup(path);
  return 0;
fail:
  if (map != MAP_FAILED) munmap(map, bytes);
  if (fd >= 0) close(fd);
  return -1;
}

/* A profiled run's CPU and wall time are measured over one window, from
 * before the sampler starts to after it stops: what the samples can cover
 * (and for a tiny cell, CPU time never exceeds wall time). */
typedef struct profile_run {
  bool on;
  uint64_t interval_ns;
  int64_t cpu0, wall0;
} profile_run_t;

/* Prepares the buffer and starts sampling as spec (the command's
 * "profile", or NULL: no profiling) says. Returns 0 or -1 with err. */
static int profile_begin(json_t *spec, profile_run_t *pr, char *err, size_t err_size) {
  memset(pr, 0, sizeof *pr);
  if (!json_is_object(spec)) return 0;
  const char *path = json_string_value(json_object_get(spec, "file"));
  json_int_t interval = json_integer_value(json_object_get(spec, "interval_ns"));
  json_int_t words = json_integer_value(json_object_get(spec, "words"));
  json_int_t tag = json_integer_value(json_object_get(spec, "tag"));
  if (!path || interval <= 0 || words <= 0) {
    snprintf(err, err_size, "profile needs file, interval_ns and words");
    return -1;
  }
  bool zeroed = json_is_true(json_object_get(spec, "zeroed"));
  if (map_buffer_file(&sample_file, "sample buffer", path, fl_sampler_buffer_bytes((size_t)words),
                      0, zeroed, give_to_sampler, err, err_size) < 0)
    return -1;
  fl_sampler_reset();
  const char *clock = json_string_value(json_object_get(spec, "clock"));
  fl_sampler_set_clock(clock && !strcmp(clock, "wall") ? FL_SAMPLER_CLOCK_WALL
                                                       : FL_SAMPLER_CLOCK_CPU);
  json_t *event = json_object_get(spec, "event");
  fl_sampler_set_event((uint32_t)json_integer_value(json_object_get(event, "type")),
                       (uint64_t)json_integer_value(json_object_get(event, "config")),
                       (uint64_t)json_integer_value(json_object_get(event, "period")));
  pr->cpu0 = fl__clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  pr->wall0 = fl__clock_ns(CLOCK_MONOTONIC);
  if (fl_sampler_start((uint64_t)interval, (uint64_t)tag, err, err_size) < 0) return -1;
  pr->on = true;
  pr->interval_ns = (uint64_t)interval;
  return 0;
}

/* Stops sampling; returns the "profile" member of the done event (new), or
 * NULL when the run was not profiled. */
static json_t *profile_end(profile_run_t *pr) {
  if (!pr->on) return NULL;
  uint64_t samples = fl_sampler_stop();
  int64_t cpu = fl__clock_ns(CLOCK_PROCESS_CPUTIME_ID) - pr->cpu0;
  int64_t wall = fl__clock_ns(CLOCK_MONOTONIC) - pr->wall0;
  const fl_sampler_header_t *h = sample_file.map;
  json_t *info = json_pack(
      "{s:I, s:I, s:s, s:I, s:I, s:I}", "samples", (json_int_t)samples, "dropped",
      (json_int_t)h->dropped, "source",
      h->source == FL_SAMPLER_SOURCE_CPU_TIMER ? "cpu-timer" : "perf-task-clock", "interval_ns",
      (json_int_t)pr->interval_ns, "cpu_ns", (json_int_t)cpu, "wall_ns", (json_int_t)wall);
  const char *replaced = fl_sampler_replaced_handler();
  if (info && replaced) json_object_set_new(info, "handler_replaced", json_string(replaced));
  return info;
}

typedef struct allocs_run {
  bool on;
  double sample_rate;
  uint64_t tag;
} allocs_run_t;

/* Prepares the buffer for recording allocations as spec (the command's
 * "allocs", or NULL: no recording) says; allocs_start starts it. Returns
 * 0 or -1 with err. */
static int allocs_prepare(json_t *spec, allocs_run_t *ar, char *err, size_t err_size) {
  memset(ar, 0, sizeof *ar);
  if (!json_is_object(spec)) return 0;
  const char *path = json_string_value(json_object_get(spec, "file"));
  json_t *rate = json_object_get(spec, "sample_rate");
  json_int_t words = json_integer_value(json_object_get(spec, "words"));
  json_int_t slots = json_integer_value(json_object_get(spec, "table_slots"));
  double r = json_number_value(rate);
  if (!path || !json_is_number(rate) || words <= 0 || slots <= 0) {
    snprintf(err, err_size, "allocs needs file, sample_rate, words and table_slots");
    return -1;
  }
  if (!(r > 0 && r <= 1)) {
    snprintf(err, err_size, "allocs: sample_rate must be more than 0 and at most 1 (got %g)", r);
    return -1;
  }
  bool zeroed = json_is_true(json_object_get(spec, "zeroed"));
  if (map_buffer_file(&allocs_file, "allocation buffer", path,
                      fl_allocs_buffer_bytes((size_t)words, (size_t)slots), (uint64_t)slots, zeroed,
                      give_to_allocs, err, err_size) < 0)
    return -1;
  ar->on = true;
  ar->sample_rate = r;
  ar->tag = (uint64_t)json_integer_value(json_object_get(spec, "tag"));
  return 0;
}

/* Starts recording (just before the cell's entry). Returns 0 or -1 with
 * err. */
static int allocs_start(allocs_run_t *ar, char *err, size_t err_size) {
  if (!ar->on) return 0;
  if (fl_allocs_start(ar->sample_rate, ar->tag, err, err_size) == 0) return 0;
  ar->on = false;
  return -1;
}

/* Stops recording; returns the "allocs" member of the done event (new), or
 * NULL when the run recorded nothing. */
static json_t *allocs_end(allocs_run_t *ar) {
  if (!ar->on) return NULL;
  uint64_t records = fl_allocs_stop();
  const fl_allocs_header_t *h = allocs_file.map;
  return json_pack("{s:I, s:I, s:I, s:I, s:f, s:I, s:I}", "records", (json_int_t)records,
                   "dropped", (json_int_t)h->dropped, "calls", (json_int_t)h->calls, "frees",
                   (json_int_t)h->frees, "sample_rate", ar->sample_rate, "fp_records",
                   (json_int_t)h->fp_records, "space_errno", (json_int_t)h->space_errno);
}

static void cmd_load(json_t *cmd) {
  const char *path = json_string_value(json_object_get(cmd, "path"));
  bool frame_pointers = json_is_true(json_object_get(cmd, "frame_pointers"));
  char err[1024];
  if (!path) {
    kw_send_new(json_pack("{s:s, s:b, s:s}", "ev", "loaded", "ok", 0, "error", "no path"));
    return;
  }
  if (!load_object(path, frame_pointers, err, sizeof err))
    kw_send_new(json_pack("{s:s, s:b, s:s}", "ev", "loaded", "ok", 0, "error", err));
  else
    kw_send_new(json_pack("{s:s, s:b}", "ev", "loaded", "ok", 1));
}

typedef struct cell_call {
  cell_entry_fn entry;
  int rc;
} cell_call_t;

static void call_entry(void *arg) {
  cell_call_t *c = arg;
  c->rc = c->entry();
}

/* Runs entry once under the interrupt jump buffer, as the root of the
 * stacks the sampler takes (fl_sampler_call: the worker's frames below are
 * not unwound). Returns 0 when it returned (its value in *rc), 1 when
 * interrupted, 2 when interrupted before it was called. */
static int run_once(cell_entry_fn entry, int *rc) {
  if (sigsetjmp(kw_cell_jmp, 1) != 0) {
    kw_cell_running = 0;
    kw_io_after_unwind();
    return 1;
  }
  kw_cell_running = 1;
  /* Interrupted before the entry (kw_fault.c notes it): the cell does not
   * start. Checked after kw_cell_running is set, so that an interrupt
   * arriving in between is noted too. */
  if (kw_interrupt_requested) {
    kw_cell_running = 0;
    return 2;
  }
  cell_call_t call = {entry, 0};
  fl_sampler_call(call_entry, &call);
  *rc = call.rc;
  kw_cell_running = 0;
  return kw_interrupt_requested ? 1 : 0;
}

/* %%timeit: IPython's rules. With number == 0, tries 1, 10, 100, ... loops
 * until one batch takes at least 0.2 s; then times repeat batches. */
static json_t *run_timeit(cell_entry_fn entry, json_int_t number, json_int_t repeat,
                          int *interrupted) {
  int rc;
  if (number <= 0) {
    for (number = 1;; number *= 10) {
      int64_t t0 = fl__clock_ns(CLOCK_MONOTONIC);
      for (json_int_t i = 0; i < number; i++)
        if (run_once(entry, &rc)) goto interrupted;
      if (fl__clock_ns(CLOCK_MONOTONIC) - t0 >= 200000000 || number >= 1000000000) break;
    }
  }
  json_t *times = json_array();
  for (json_int_t r = 0; r < repeat; r++) {
    int64_t t0 = fl__clock_ns(CLOCK_MONOTONIC);
    for (json_int_t i = 0; i < number; i++)
      if (run_once(entry, &rc)) {
        json_decref(times);
        goto interrupted;
      }
    double per_loop = (double)(fl__clock_ns(CLOCK_MONOTONIC) - t0) / (double)number;
    json_array_append_new(times, json_real(per_loop));
  }
  return json_pack("{s:I, s:I, s:o}", "number", number, "repeat", repeat, "per_loop_ns", times);
interrupted:
  *interrupted = 1;
  return NULL;
}

static void run_command(json_t *cmd) {
  const char *path = json_string_value(json_object_get(cmd, "path"));
  const char *entry_name = json_string_value(json_object_get(cmd, "entry"));
  bool allow_stdin = json_is_true(json_object_get(cmd, "allow_stdin"));
  bool frame_pointers = json_is_true(json_object_get(cmd, "frame_pointers"));
  json_t *timeit = json_object_get(cmd, "timeit");
  char err[1024];

  if (!path || !entry_name) {
    kw_send_new(error_event("WorkerError", "run needs path and entry"));
    return;
  }
  void *h = load_object(path, frame_pointers, err, sizeof err);
  if (!h) {
    kw_send_new(error_event("LinkError", err));
    return;
  }
  /* Its constructors have returned: from now on the kernel keeps the cell,
   * whatever its run does to this process. */
  kw_send_new(json_pack("{s:s}", "ev", "running"));
  cell_entry_fn entry;
  *(void **)&entry = dlsym(h, entry_name);
  if (!entry) {
    kw_send_new(error_event("LinkError", dlerror()));
    return;
  }

  profile_run_t prof;
  allocs_run_t allocs;
  if (allocs_prepare(json_object_get(cmd, "allocs"), &allocs, err, sizeof err) < 0 ||
      profile_begin(json_object_get(cmd, "profile"), &prof, err, sizeof err) < 0) {
    kw_send_new(error_event("ProfileError", err));
    return;
  }
  kw_io_begin_cell(allow_stdin);
  kw_value_reset();
  int rc = 0, interrupted = 0;
  json_t *timing = NULL;
  int64_t wall0 = fl__clock_ns(CLOCK_MONOTONIC), cpu0 = fl__clock_ns(CLOCK_PROCESS_CPUTIME_ID);
  if (allocs_start(&allocs, err, sizeof err) < 0) {
    json_decref(profile_end(&prof));
    kw_io_end_cell();
    kw_send_new(error_event("ProfileError", err));
    return;
  }
  if (json_is_object(timeit)) {
    json_int_t number = json_integer_value(json_object_get(timeit, "number"));
    json_int_t repeat = json_integer_value(json_object_get(timeit, "repeat"));
    timing = run_timeit(entry, number, repeat > 0 ? repeat : 7, &interrupted);
  } else {
    interrupted = run_once(entry, &rc);
  }
  if (kw_io_in_forked_child()) {
    /* A fork() in the cell: the child ran the rest of the cell too, and
     * ends with it, never to act as the worker. */
    fflush(stdout);
    fflush(stderr);
    _exit(interrupted ? 130 : rc & 0xff);
  }
  json_t *allocs_info = allocs_end(&allocs);
  int64_t wall = fl__clock_ns(CLOCK_MONOTONIC) - wall0,
          cpu = fl__clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  json_t *profile = profile_end(&prof);
  kw_io_end_cell();

  json_t *ev = json_pack("{s:s, s:s, s:i, s:I, s:I}", "ev", "done", "status",
                         interrupted ? "interrupted" : "ok", "rc", rc, "wall_ns", (json_int_t)wall,
                         "cpu_ns", (json_int_t)cpu);
  if (timing) json_object_set_new(ev, "timeit", timing);
  if (profile) json_object_set_new(ev, "profile", profile);
  if (allocs_info) json_object_set_new(ev, "allocs", allocs_info);
  if (interrupted == 2) json_object_set_new(ev, "started", json_false());
  /* The trailing expression's value, printed after the run (and after the
   * profiler stopped): %%timeit shows times, not values. */
  if (!interrupted && !timing && kw_value_captured()) {
    char *text = kw_value_format(path, entry_name, err, sizeof err);
    json_object_set_new(ev, text ? "value" : "value_error", json_string(text ? text : err));
    free(text);
  }
  kw_value_reset();
  kw_send_new(ev);
}

/* A run command: from here to its done (or error), an interrupt belongs to
 * it, even one that arrives before the cell's entry is called. */
static void cmd_run(json_t *cmd) {
  kw_interrupt_requested = 0;
  kw_run_active = 1;
  run_command(cmd);
  kw_run_active = 0;
}

int main(int argc, char **argv) {
  /* The kernel gives us the command and event pipes and its pid; they must
   * not leak into processes the cells start. */
  if (argc != 2 || fcntl(KN_CHAN_CMD_FD, F_GETFD) < 0 || fcntl(KN_CHAN_EVT_FD, F_GETFD) < 0) {
    fprintf(stderr, "cflame-worker: started without its pipes; it is run by cflame-kernel\n");
    return 2;
  }
  /* The worker dies with the kernel, whatever ends the kernel (SIGKILL
   * included); a kernel that died before this line is seen by getppid. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != (pid_t)atol(argv[1])) _exit(127);
  fcntl(KN_CHAN_CMD_FD, F_SETFD, FD_CLOEXEC);
  fcntl(KN_CHAN_EVT_FD, F_SETFD, FD_CLOEXEC);

  if (kw_io_init() < 0 || kw_fault_init() < 0) {
    fprintf(stderr, "cflame-worker: set-up failed: %s\n", strerror(errno));
    return 2;
  }
  /* After kw_fault_init: the sampler takes SIGTRAP over (perf events signal
   * with it) and hands the traps that are not its own to the crash
   * handler. Without it, profiling runs fail with the reason. */
  char err[256];
  kw_threads_init();
  if (fl_sampler_init(NULL, 0, err, sizeof err) < 0)
    fprintf(stderr, "cflame-worker: the profiler is unavailable: %s\n", err);
  fl_allocs_thread_enter();
  dl_iterate_phdr(note_base_range, NULL);
  kw_send_new(json_pack("{s:s, s:i}", "ev", "ready", "pid", (int)getpid()));

  struct stat cmd_pipe;
  fstat(KN_CHAN_CMD_FD, &cmd_pipe);
  for (;;) {
    char kind, *data;
    size_t len;
    int r = kn_chan_read_blocking(KN_CHAN_CMD_FD, &kind, &data, &len);
    if (r <= 0) {
      /* The kernel went away, or a cell closed or replaced descriptor 3:
       * say which, while the event pipe may still carry it. */
      struct stat now;
      if (fstat(KN_CHAN_CMD_FD, &now) < 0 || now.st_ino != cmd_pipe.st_ino ||
          now.st_dev != cmd_pipe.st_dev)
        kw_send_new(json_pack("{s:s, s:i}", "ev", "channel_lost", "fd", KN_CHAN_CMD_FD));
      break;
    }
    json_t *cmd = kind == 'J' ? json_loadb(data, len, 0, NULL) : NULL;
    free(data);
    const char *op = json_string_value(json_object_get(cmd, "op"));
    if (!op) {
      json_decref(cmd);
      continue;
    }
    if (strcmp(op, "run") == 0)
      cmd_run(cmd);
    else if (strcmp(op, "load") == 0)
      cmd_load(cmd);
    else if (strcmp(op, "exit") == 0) {
      json_decref(cmd);
      break;
    }
    json_decref(cmd);
  }
  fflush(NULL);
  _exit(0);
}
