/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_profile: a set of weighted stack samples, symbolized.
 *
 * A profile is what a profiler recorded, in a form every consumer of the
 * flame library understands: a table of distinct frames (function, file,
 * line, module, instruction address, what kind of code), samples, each a
 * stack of frame ids from the root (outermost caller) to the leaf (where the
 * sample hit), with a weight, the thread it came from and when it was
 * taken, and the names of threads where they are known.
 *
 * Each sample says what it counts, its kind (fl_kind), and its weight is
 * in that kind's unit: for CPU time one unit is one sampling interval of
 * CPU time (so a weight of 3 says "this stack ran for three intervals");
 * for allocated bytes it is bytes, and each sample also carries the number
 * of allocations it stands for. A profile may hold samples of several
 * kinds (CPU time and allocations from one run): info.kind is the one a
 * view draws unless told otherwise, and the shapes built from samples take
 * the samples of one kind.
 *
 * Samples keep the order they were added in, and each its own time stamp
 * and thread: the merged tree (fl_tree), the inverted tree, a thread's
 * samples in time order (fl_timeline) and the totals per source line
 * (fl_lines) are all shapes built from them. A sample is a few words: 10^6
 * samples take some 32 MB beside their stacks.
 *
 * Stacks are stored as a prefix tree: a stack node is a stack, its parent
 * node (the stack without its leaf) plus one frame id, and stacks that
 * share a prefix share its nodes. So a stack costs one node (16 bytes, and
 * a hash index's slot unless it is its parent's first child) per distinct
 * (prefix, frame), not a word per frame per stack: 10^4 stacks of depth
 * 1,000 that share 999 frames are 10,999 nodes.
 *
 * Frames are interned: two frames with the same fields get the same id, and
 * their strings are owned by the profile. */
#ifndef FL_PROFILE_H
#define FL_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"
#include "cflame/fl_budget.h"

CFLAME_BEGIN_DECLS

/* What a sample measures. Every
 * consumer asks fl_kind() what a kind's weights are (their unit, the words
 * that name them, whether they are time, their pprof sample type) rather
 * than naming kinds, so that a new kind of sample is one value here, one
 * row of the table in fl_profile.c and the collector that takes it. */
typedef enum fl_profile_kind {
  FL_PROFILE_CPU,         /* CPU time: weights are sampling intervals */
  FL_PROFILE_WALL,        /* wall-clock time, running or blocked: intervals */
  FL_PROFILE_OFFCPU,      /* time spent blocked (off-CPU): intervals */
  FL_PROFILE_ALLOC_BYTES, /* bytes allocated; each sample also counts allocations */
  FL_PROFILE_ALLOC_COUNT, /* allocations made (weight=count) */
  FL_PROFILE_LIVE_BYTES,  /* bytes still allocated when the run ended (live=true) */
  FL_PROFILE_LIVE_COUNT,  /* allocations still live when the run ended */
  FL_PROFILE_EVENT,       /* occurrences of a perf event (info.event names it) */
  FL_PROFILE_N_KINDS
} fl_profile_kind_t;

/* One row of the table of kinds. Static; never NULL. */
typedef struct fl_kind_info {
  const char *name;          /* stable identifier: "cpu", "wall", "offcpu", "alloc_bytes",
                                "alloc_count", "live_bytes", "live_count", "event" */
  const char *label;         /* a short column label: "CPU", "wall", "off-CPU", "alloc", "event" */
  const char *profile;       /* a profile of the kind, with its article: "a CPU profile",
                                "an allocation profile" */
  const char *one, *many;    /* the unit of a weight: "sample"/"samples", "byte"/"bytes",
                                "allocation"/"allocations" */
  const char *weighs;        /* what weights are, in messages: "samples", "bytes",
                                "allocation counts" */
  fl_profile_kind_t measure; /* the kind whose weights measure the same thing:
                                profiles of kinds with one measure can be merged
                                and compared (live or not does not matter) */
  bool time;                 /* weights are sampling intervals of time (info.interval_ns) */
  bool allocs;               /* an allocation profile: samples carry allocation counts, and
                                info.sample_rate applies */
  bool bytes;                /* weights are bytes (drawn as B, KiB, MiB) */
  bool live;                 /* only what was still allocated when the run ended */
  const char *what;          /* what its samples count, for a reader choosing among
                                the kinds a profile holds: "CPU time",
                                "allocated bytes" */
  /* pprof: the sample type of the weights and its unit ("cpu"/"nanoseconds",
   * "alloc_space"/"bytes", "inuse_objects"/"count"), and the companion
   * count ("samples" for time, the "..._objects" of bytes; NULL: none). */
  const char *pprof_type, *pprof_unit, *pprof_count;
  uint32_t takes; /* the kinds whose samples it draws, a bit (1u << kind) each;
                     0: itself alone (fl_kind_takes). Wall-clock time takes
                     CPU time and off-CPU time, which its samples are stored
                     as (fl_profile_add_sample_of) */
} fl_kind_info_t;

/* The row of kind (an out-of-range kind is a programmer's error). */
const fl_kind_info_t *fl_kind(fl_profile_kind_t kind);
/* The allocation kind that weighs bytes or counts (count) of every
 * allocation or only the live ones (live). */
fl_profile_kind_t fl_kind_alloc(bool count, bool live);
/* Whether profiles of kinds a and b can be merged and compared: the same
 * measure (fl_kind_info_t.measure). */
bool fl_kind_comparable(fl_profile_kind_t a, fl_profile_kind_t b);
/* The kinds whose samples a view of kind draws, a bit (1u << kind) each:
 * 1u << kind, or for wall-clock time CPU and off-CPU time. */
uint32_t fl_kind_takes(fl_profile_kind_t kind);

/* What kind of code a frame is, for colours and for C=false folding. */
enum {
  FL_FRAME_CELL = 1u << 0,      /* the user's code (a notebook cell, or the
                                   program being profiled) */
  FL_FRAME_SYSTEM = 1u << 1,    /* a system library (libc, libm, libgomp, ...) */
  FL_FRAME_ALLOC = 1u << 2,     /* the allocator (malloc, free, ...) */
  FL_FRAME_INLINED = 1u << 3,   /* inlined into its caller */
  FL_FRAME_ROOT = 1u << 4,      /* the synthetic root that stands for the whole
                                   run (a cell, a process) */
  FL_FRAME_KERNEL = 1u << 5,    /* an operating-system kernel frame ([k]) */
  FL_FRAME_REPL = 1u << 6,      /* with FL_FRAME_CELL: defined interactively (a
                                   notebook cell), so it may be renamed or
                                   redefined between two profiles; a diff pairs
                                   such frames across names (see fl_diff.h) */
  FL_FRAME_CELL_BODY = 1u << 7, /* with FL_FRAME_REPL: a cell's own top-level
                                 statements. Every cell has its own, so a diff
                                 compares two of them line by line, never as
                                 one function redefined */
  FL_FRAME_OFFCPU = 1u << 8,    /* time a thread spent waiting, not running: the
                                   leaf of a wall-clock profile's waits,
                                   "[off-CPU: sleep]" */
  FL_FRAME_RUNNABLE = 1u << 9,  /* with FL_FRAME_OFFCPU: the thread was
                                   runnable, waiting for a CPU, not for a
                                   call: "[off-CPU: runnable]" */
};

/* A wait's leaf is named "[off-CPU: WHY]" ("sleep", "read", ...), and
 * time runnable "[off-CPU: runnable]": fl_profile_frame_id gives a frame
 * so named FL_FRAME_OFFCPU (and FL_FRAME_RUNNABLE) whoever read it, so that
 * a wall-clock profile read from a file knows its waits. */
#define FL_FRAME_WAIT_PREFIX "[off-CPU: "
#define FL_FRAME_RUNNABLE_NAME FL_FRAME_WAIT_PREFIX "runnable]"

typedef struct fl_frame {
  const char *func;        /* never NULL: unknown functions are "[unknown]" */
  const char *file;        /* source file ("cell[3]", "/usr/include/x.h") or NULL */
  int line;                /* 0 when unknown */
  const char *module;      /* "cell[3]", "libc.so.6", a program name; or NULL */
  uint64_t addr;           /* instruction address, for combine=false; 0 if unknown */
  uint32_t flags;          /* FL_FRAME_* */
  const char *system_name; /* the symbol func was read from where it differs:
                              a C++ or Rust function's mangled name
                              ("_ZN2ns5KlassIiE6methodEi" for
                              "ns::Klass<int>::method(int)"); else NULL */
} fl_frame_t;

typedef struct fl_profile fl_profile_t;

typedef struct fl_profile_info {
  fl_profile_kind_t kind; /* the kind a view draws unless told otherwise: the
                             first collector's, and the kind of the samples
                             fl_profile_add_sample adds. samples,
                             total_weight and total_allocs are its totals
                             (fl_profile_kind_totals: any kind's) */
  uint64_t interval_ns;   /* sampling interval (time kinds); 0 for allocations */
  double sample_rate;     /* allocation sampling probability (1 = every call) */
  uint64_t samples;       /* samples taken (not weighted) */
  uint64_t total_weight;  /* sum of weights */
  uint64_t total_allocs;  /* allocation profiles: sum of allocation counts */
  uint64_t dropped;       /* samples lost because the buffer was full */
  uint64_t calls;         /* allocation profiles: every allocation call the
                             run made, sampled or not (0 if unknown) */
  double cpu_seconds;     /* CPU time the profiled run used (0 if unknown) */
  double wall_seconds;    /* wall-clock time of the profiled run (0 if unknown) */
  char source[256];       /* how it was taken: "cell[5]", "perf script", ... */
  char compiler[256];     /* compiler and flags, when known */
  int64_t taken_unix;     /* when it was taken (seconds since the epoch), 0 if unknown */
  char event[64];         /* FL_PROFILE_EVENT: the perf event's name ("page-faults") */
  bool recorded_here;     /* every sample came from this process's collector
                             (fl_collect), none from a file: the source view
                             may read its modules' files. No reader sets it. */
  bool mixed_intervals;   /* time profiles sampled at different intervals were
                             merged into this one (fl_profile_merge): every
                             weight was converted to intervals of interval_ns,
                             so that samples weigh the time they stand for */
} fl_profile_info_t;

/* A sampling interval as every output writes it: "10 s" (whole seconds),
 * "1 ms", "0.25 ms" (from 0.1 ms), "2.5 us", "800 ns". */
void fl_interval_text(uint64_t ns, char *out, size_t size);

/* What a profile's counts are when time profiles sampled at different
 * intervals were merged (fl_profile_info_t.mixed_intervals): "inputs
 * sampled at different intervals, merged by time: each count is an
 * interval of 0.25 ms"; "" otherwise. */
void fl_mixed_intervals_note(const fl_profile_info_t *info, char *out, size_t size);

/* A new, empty profile (never NULL: out of memory aborts, as everywhere in
 * the flame library; docs/LIBRARY.md). */
fl_profile_t *fl_profile_new(fl_profile_kind_t kind);
void fl_profile_destroy(fl_profile_t **p);

/* A deep copy. New. */
fl_profile_t *fl_profile_copy(const fl_profile_t *p);

/* Info about the profile: read it, and fill in what the producer knows.
 * Borrowed; counts (samples, total_weight, total_allocs) are kept up to date
 * by fl_profile_add_sample. */
fl_profile_info_t *fl_profile_info(fl_profile_t *p);
const fl_profile_info_t *fl_profile_info_const(const fl_profile_t *p);

/* Interns a frame (its strings are copied, control characters written
 * \xHH, as in thread names; a NULL func becomes "[unknown]") and returns
 * its id: ids are 0, 1, 2, ... in order of first
 * appearance, and equal fields give the same id. A func that is a mangled
 * C++ or Rust symbol, given without a system_name, is demangled: the frame
 * gets the readable name as func and the symbol as system_name. Frames are
 * told apart by their symbol (system_name, else func), so the mangled and
 * the demangled form of one frame are one id. Out of memory aborts, as in
 * fl_profile_add_sample. A new frame that the profile's budget refuses
 * (fl_profile_set_budget) is not added: FL_PROFILE_NO_FRAME. */
#define FL_PROFILE_NO_FRAME UINT32_MAX
uint32_t fl_profile_frame_id(fl_profile_t *p, const fl_frame_t *frame);

/* The frame with that id; borrowed, valid for the profile's lifetime. */
const fl_frame_t *fl_profile_frame(const fl_profile_t *p, uint32_t id);
size_t fl_profile_n_frames(const fl_profile_t *p);

/* What the profile holds on the heap, in bytes: the room of its arrays and
 * indexes and its strings, as allocated (malloc's own overhead aside). */
size_t fl_profile_bytes(const fl_profile_t *p);

/* Adds a sample of info.kind: n frame ids from the root to the leaf (n may
 * be 0: the root's own time). thread is the thread it was taken on (an OS
 * thread id, or 0). weight >= 1; allocs is the number of allocations it
 * stands for (0 for CPU profiles). Its time stamp is 0 (unknown). Set
 * info.kind before adding: a sample's kind never changes. Returns 0, or -1 when
 * the profile's budget refuses it (fl_profile_set_budget), and then adds
 * nothing; without a budget it always returns 0. Out of memory aborts
 * with a message: a profile that silently lost samples would mislead. */
int fl_profile_add_sample(fl_profile_t *p, const uint32_t *stack, size_t n, uint64_t weight,
                          uint64_t allocs, int thread);
/* fl_profile_add_sample of a sample taken at time_ns: nanoseconds on a
 * clock of the producer's (the sampler's CLOCK_MONOTONIC, perf's, pprof's
 * epoch), the same for every sample of a profile; 0 when unknown. */
int fl_profile_add_sample_at(fl_profile_t *p, const uint32_t *stack, size_t n, uint64_t weight,
                             uint64_t allocs, int thread, uint64_t time_ns);
/* fl_profile_add_sample_at of a sample of kind, which need not be
 * info.kind: a collector that takes two kinds in one run (CPU time and
 * allocations) adds each sample with its own. A sample of wall-clock time
 * (FL_PROFILE_WALL, which takes others: fl_kind_takes) is stored as the
 * thread running, FL_PROFILE_CPU, or waiting, FL_PROFILE_OFFCPU when its
 * leaf is a wait (FL_FRAME_OFFCPU): its fl_sample_t.kind says which. */
int fl_profile_add_sample_of(fl_profile_t *p, fl_profile_kind_t kind, const uint32_t *stack,
                             size_t n, uint64_t weight, uint64_t allocs, int thread,
                             uint64_t time_ns);

/* What a profile holds of one kind: its samples (not weighted), the sum of
 * their weights and of their allocation counts. */
typedef struct fl_kind_totals {
  uint64_t samples, weight, allocs;
} fl_kind_totals_t;
/* The totals of p's samples of kind (all 0 when it holds none): of
 * wall-clock time, its CPU and off-CPU time's summed. For info.kind they
 * are info's samples, total_weight and total_allocs. */
void fl_profile_kind_totals(const fl_profile_t *p, fl_profile_kind_t kind, fl_kind_totals_t *out);
/* The kinds p holds a sample of, a bit (1u << kind) each, and info.kind
 * when it takes one of those (a wall-clock profile holds wall-clock time,
 * and CPU time or off-CPU time or both); 0 when empty. */
uint32_t fl_profile_kinds(const fl_profile_t *p);

/* From now on, charges b (borrowed; NULL: none) for what p grows by as
 * samples and frames are added: a new distinct stack, frame or sample
 * the memory it takes, every sample its frames as work (fl_budget.h). The
 * readers build a profile of an input under their budget, so that a file
 * that asks for more than it allows is an error, not an abort. Merging
 * and copying are not charged. */
void fl_profile_set_budget(fl_profile_t *p, fl_budget_t *b);

/* Threads' names: thread (a number samples carry) is called name (copied;
 * NULL or "" forgets it). A later name replaces an earlier one. */
void fl_profile_set_thread_name(fl_profile_t *p, int thread, const char *name);
/* The name of thread, or NULL when none is known. Borrowed, valid while
 * the profile lives. */
const char *fl_profile_thread_name(const fl_profile_t *p, int thread);

/* A run a profile was read from: each input of merged files keeps its own
 * duration (info's cpu_seconds and wall_seconds are their sums). */
typedef struct fl_profile_run {
  const char *name;   /* the input's name ("A.pb.gz"); interned */
  double cpu_seconds; /* 0 if unknown */
  double wall_seconds;
} fl_profile_run_t;

/* Records a run (name copied) with its own durations; the readers add one
 * for each input whose durations they know (fl_read_profile). */
void fl_profile_add_run(fl_profile_t *p, const char *name, double cpu_seconds, double wall_seconds);
/* The runs, in the order they were added (merged profiles' included);
 * NULL when i is out of range. Borrowed. */
size_t fl_profile_n_runs(const fl_profile_t *p);
const fl_profile_run_t *fl_profile_run(const fl_profile_t *p, size_t i);

/* Adds every sample of src to p (frames re-interned), and src's dropped
 * count, CPU and wall-clock seconds and runs, and the names of its threads
 * that p has no name for; p takes src's interval if it has none.
 * Kinds are matched one by one: a sample of src's info.kind becomes one of
 * p's info.kind when the two are comparable (fl_kind_comparable) and p
 * holds no sample of src's kind already; a sample of another kind becomes
 * one of the kind p holds that is comparable to it, else keeps its own
 * (a collector of two kinds merges the second into the first so). p
 * keeps its info.kind. p may be src (which doubles it). Whether profiles
 * of different kinds may join is the caller's to say (fl_read_profile
 * refuses to add an allocation profile to a CPU one).
 *
 * Time is merged as time: when p and src are time profiles (fl_kind's
 * time) sampled at different known intervals, every weight of both is
 * converted to a common interval, so that a sample of a 1 ms profile
 * weighs four of a 0.25 ms one. The common interval is the intervals'
 * greatest common divisor when that converts each weight exactly at most
 * FL_PROFILE_MAX_SCALE times over (0.25 ms for 1 ms and 0.25 ms), else
 * the finer interval, weights rounded with the rounding error carried
 * from one sample to the next (so each input's total stays exact to one
 * interval). info.mixed_intervals then says so. A weight that would pass
 * UINT64_MAX is held there: fl_profile_merge_fits says beforehand whether
 * any would. */
#define FL_PROFILE_MAX_SCALE 1000
void fl_profile_merge(fl_profile_t *p, const fl_profile_t *src);

/* Whether merging src into p keeps every total within UINT64_MAX, the
 * conversion to a common interval included. */
bool fl_profile_merge_fits(const fl_profile_t *p, const fl_profile_t *src);

/* fl_profile_merge with one more frame, root, outermost on every stack
 * of src (the root's own time too): profiles merged under frames of their
 * own stay apart in one graph, each a subtree (the cflame command's
 * --per-input). root NULL: fl_profile_merge. */
void fl_profile_merge_under(fl_profile_t *p, const fl_profile_t *src, const fl_frame_t *root);

/* Removes every sample and thread name (and so every kind but info's);
 * keeps the kind, interval and
 * sample rate, and the frames (their ids stay valid). The other info
 * fields are zeroed. */
void fl_profile_clear(fl_profile_t *p);

/* Iterating the samples, in the order they were added. Each distinct stack
 * is stored once, as its leaf node in the prefix tree of stacks: samples
 * with equal stacks get equal nodes, and equal stack_ids (0 ..
 * fl_profile_n_stacks - 1, in order of first appearance). Node and stack
 * numbers stay valid until the profile is cleared. */
size_t fl_profile_n_samples(const fl_profile_t *p);
size_t fl_profile_n_stacks(const fl_profile_t *p);
typedef struct fl_sample {
  fl_profile_kind_t kind; /* what its weight counts */
  uint32_t node;          /* the stack's leaf node (FL_PROFILE_EMPTY_STACK when n is 0) */
  size_t n;               /* its depth: how many frames */
  uint64_t weight;
  uint64_t allocs;
  int thread;
  uint64_t time_ns;  /* when it was taken (fl_profile_add_sample_at); 0: unknown */
  uint32_t stack_id; /* the distinct stack's number */
} fl_sample_t;
void fl_profile_sample(const fl_profile_t *p, size_t i, fl_sample_t *out);

/* The frame ids of the stack of depth n that ends at node (a sample's
 * node and n), root first, into out (room for n): a walk from the leaf
 * node to the root. */
void fl_profile_stack_ids(const fl_profile_t *p, uint32_t node, size_t n, uint32_t *out);
/* The frame id at depth k of s's stack (0: the root, s->n - 1: the leaf,
 * at once; a walk of s->n - 1 - k nodes). k < s->n. */
uint32_t fl_profile_sample_frame(const fl_profile_t *p, const fl_sample_t *s, size_t k);

/* The prefix tree itself, for walks from a leaf to the root. Node 0
 * (FL_PROFILE_EMPTY_STACK) is the empty stack; every other node is its
 * parent's stack plus its frame, and has a higher number than its parent,
 * so walking nodes in order meets parents first. Nodes are numbered
 * 0 .. fl_profile_n_nodes - 1. */
#define FL_PROFILE_EMPTY_STACK 0u
#define FL_PROFILE_NO_NODE UINT32_MAX
size_t fl_profile_n_nodes(const fl_profile_t *p);
/* node's parent (FL_PROFILE_NO_NODE for the empty stack). */
uint32_t fl_profile_node_parent(const fl_profile_t *p, uint32_t node);
/* The frame id node adds to its parent's stack (FL_PROFILE_NO_FRAME for
 * the empty stack). */
uint32_t fl_profile_node_frame(const fl_profile_t *p, uint32_t node);

/* The distinct threads seen, ascending. *threads is new (free it). */
size_t fl_profile_threads(const fl_profile_t *p, int **threads);

/* A thread's weight running and waiting, of the samples one kind takes
 * (fl_kind_takes): off
 * is the weight of its samples
 * whose innermost frame is a wait (FL_FRAME_OFFCPU), on the rest; runnable
 * the part of off whose wait was for a CPU (FL_FRAME_RUNNABLE). */
typedef struct fl_thread_weights {
  int thread;
  uint64_t on, off, runnable;
} fl_thread_weights_t;
/* Each thread's weights in p's samples of kind, by thread ascending, into
 * *out (new: free it; NULL when there are none); a thread without a sample
 * of kind is left out. Returns how many threads. */
size_t fl_profile_thread_weights(const fl_profile_t *p, fl_profile_kind_t kind,
                                 fl_thread_weights_t **out);

CFLAME_END_DECLS

#endif
