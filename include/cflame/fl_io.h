/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_io: profiles to and from files.
 *
 * Three formats come in, told apart by their content: two of text, and
 * pprof's binary one. An input that starts with gzip's magic bytes (1f 8b)
 * is unzipped first, whatever it holds.
 *
 *   folded stacks  one line per distinct stack, "frame;frame;...;frame
 *                  COUNT", root first, as flamegraph.pl, inferno and
 *                  speedscope read and write them. The count is the last
 *                  whitespace-separated word, a non-negative integer; frames
 *                  may contain spaces. Blank lines and lines starting with
 *                  '#' are skipped, and so are lines whose count is 0. A
 *                  frame ending in " (FILE:LINE)" gets that file and line
 *                  (what fl_folded writes for a tree built with lines on),
 *                  one ending in "_[k]" is a kernel frame (FL_FRAME_KERNEL)
 *                  and one ending in "_[i]" an inlined one (FL_FRAME_INLINED),
 *                  their names kept as written; every other frame counts as
 *                  the program's own code (FL_FRAME_CELL). A line with no
 *                  frames, only a count, is weight of the root itself.
 *   perf script    the text `perf script` prints for a `perf record -g`
 *                  recording: per sample an event header ("prog 1234
 *                  5678.901234: 250000 cpu-clock:"), indented frame lines
 *                  ("\t4011d6 main+0x16 (/tmp/prog)"), leaf first, and a
 *                  blank line. Stacks are folded the way stackcollapse-perf.pl
 *                  folds them with its default options: the process name
 *                  (spaces made underscores) as the outermost frame, "+0x…"
 *                  offsets dropped, an unknown symbol named after its module
 *                  ("[libfoo.so]", or "[unknown]"), arguments after a '('
 *                  dropped, quotes removed, ';' made ':', "a->b" inline chains
 *                  split with "_[i]" on the inlined frames, kernel frames
 *                  kept, and only samples of the first event type seen. Each
 *                  sample weighs 1 (stackcollapse-perf.pl versions that print
 *                  the sample period as the count give the same stacks with
 *                  counts multiplied by it); a constant period of a cpu-clock
 *                  or task-clock event (nanoseconds) becomes the profile's
 *                  interval. A frame keeps its module's file name
 *                  (fl_frame_t.module) and is marked FL_FRAME_KERNEL
 *                  ([kernel.kallsyms], vmlinux, kernel addresses),
 *                  FL_FRAME_SYSTEM (a shared library under /usr/lib or /lib)
 *                  or FL_FRAME_CELL. Source lines that `perf script -F
 *                  +srcline` prints under a frame give it a file and line.
 *                  Samples keep their thread id.
 *
 *   pprof          pprof's profile.proto message (fl_pprof.c has the rules),
 *                  as Go's runtime/pprof, `go tool pprof`, Pyroscope and
 *                  Parca write it: gzip-compressed, or bare. Binary input
 *                  (control characters in its first 64 bytes) is read as
 *                  pprof. A location's
 *                  lines become frames (the inlined ones FL_FRAME_INLINED),
 *                  with the function's name, file and line, the mapping's
 *                  file name as the module, and the kind of code from it
 *                  as for perf script. An allocation profile (a sample type
 *                  in bytes, or "..._objects") is read as one of the
 *                  allocation kinds (FL_PROFILE_ALLOC_BYTES ...), a time
 *                  named as a kind's pprof type ("wall") as that kind,
 *                  anything else as a CPU profile.
 *
 *   speedscope     speedscope's file format (JSON): "sampled" and
 *                  "evented" profiles, a thread each; cflame's own files
 *                  say their kind and interval (fl_speedscope).
 *
 *   trace events   Chrome's trace-event format (JSON): complete events
 *                  nested on their threads (fl_trace).
 *
 * A document that starts as JSON ("{" and a string, "[" and "{") is read
 * as one of the two, told apart by its members.
 *
 * The text formats accept "\r\n" line ends. Malformed input is an error
 * that names the input and the line (pprof: what in the message was wrong),
 * says what was found and what a valid line looks like, and adds nothing.
 *
 * Out: fl_folded writes folded stacks, fl_pprof pprof, fl_speedscope and
 * fl_trace their JSON, fl_html_page a standalone page; fl_output_format_of_path says which a file's
 * name asks for. */
#ifndef FL_IO_H
#define FL_IO_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "cflame/fl_api.h"
#include "cflame/fl_budget.h"
#include "cflame/fl_profile.h"
#include "cflame/fl_render.h"
#include "cflame/fl_tree.h"

CFLAME_BEGIN_DECLS

/* What kind of error an fl_io_error_t holds: what a caller branches on
 * (the message is for people, and its words may change). */
typedef enum fl_io_code {
  FL_IO_OK = 0,          /* no error */
  FL_IO_ERR_SYSTEM,      /* the file could not be opened or read (the system's reason) */
  FL_IO_ERR_NOT_REGULAR, /* a directory, device, FIFO or socket, not a regular file */
  FL_IO_ERR_TOO_LARGE,   /* more than the limit on an input, raw or unzipped */
  FL_IO_ERR_GZIP,        /* starts as gzip, but does not unzip */
  FL_IO_ERR_NOT_TEXT,    /* a NUL byte in what should be text */
  FL_IO_ERR_NOT_FORMAT,  /* a line (or message) that is not of the format at all */
  FL_IO_ERR_FORMAT,      /* of the format, but breaking one of its rules (a count too
                          * large, a pprof field out of range) */
  FL_IO_ERR_NO_SAMPLES,  /* parsed, but no samples (empty, only comments, counts of 0) */
  FL_IO_ERR_CANNOT_ADD,  /* cannot go into the profile given: another kind of profile,
                          * other weights, or counts past what a profile holds */
  FL_IO_ERR_BUDGET,      /* needs more memory or work than the budget allows (fl_budget.h) */
  FL_IO_ERR_CANCELLED,   /* the budget's cancel flag was set while it was read */
} fl_io_code_t;

typedef struct fl_io_error {
  fl_io_code_t code; /* FL_IO_OK, or what kind of error the message says */
  char file[256];    /* the input's name as given ("-" for stdin, or "<stdin>") */
  size_t line;       /* 1-based line of the problem, 0 if none */
  char message[512]; /* what was wrong and what is valid */
} fl_io_error_t;

typedef enum fl_input_kind {
  FL_INPUT_AUTO,
  FL_INPUT_FOLDED,
  FL_INPUT_PERF_SCRIPT,
  FL_INPUT_PPROF,
  FL_INPUT_SPEEDSCOPE,
  FL_INPUT_TRACE,
} fl_input_kind_t;

/* "auto", "folded stacks", "perf script", "pprof", "speedscope", "trace
 * events". Static. */
const char *fl_input_kind_name(fl_input_kind_t kind);
/* The kind a front door's word names ("auto", "folded", "perf", "pprof",
 * "speedscope", "trace"): 0, or -1 when it names none. */
int fl_input_kind_parse(const char *word, fl_input_kind_t *kind);
/* Those words, as a list for help and errors: "auto, folded, perf, pprof,
 * speedscope, trace". Static; any thread may call it, first or not. */
const char *fl_input_kinds(void);

/* Parses folded stacks, `perf script` text or pprof (kind FL_INPUT_AUTO:
 * told apart by content; gzip-compressed or not) of len bytes, named name
 * in errors (NULL: "<input>"), and adds its samples to p (weight = count).
 * The input's kind of profile must be p's, except that a profile without
 * samples takes the input's kind (and its allocation details: sample rate,
 * weight=count, live): folded stacks and perf script text are CPU
 * profiles, pprof says which it is. data need not be NUL-terminated; a NUL
 * byte in text is an error. Returns 0, or -1 with
 * *err filled, in which case p is unchanged: the input is parsed into a
 * profile of its own and merged into p once all of it is read. No samples
 * at all (empty input, only comments, only counts of 0) is an error too.
 * *kind_out (may be NULL) gets the kind detected, also on error. When p
 * had no source yet, its info.source becomes the kind read. A gzipped
 * input may unzip to FL_INPUT_LIMIT_DEFAULT at most. Errors are
 * about the input: out of memory aborts, as everywhere in the flame
 * library (docs/LIBRARY.md). */
int fl_read_profile(fl_profile_t *p, const char *data, size_t len, const char *name,
                    fl_input_kind_t kind, fl_input_kind_t *kind_out, fl_io_error_t *err);

/* ---- reading files ----
 *
 * A file is read only when it is a regular file (or, where the caller
 * allows it, standard input): a device, a FIFO, a socket or a directory is
 * an error that says what the path is, found by stat() before anything is
 * opened, so that nothing waits for a FIFO's writer, reads /dev/zero
 * forever or wakes a device. The file is then opened with O_NONBLOCK (in
 * case it changed in between) and checked again. And what is read is
 * bounded: an input larger than the limit is an error before a byte of it
 * is read (standard input: once more than the limit has come), and so is a
 * gzipped input whose content unzips to more than the limit (a "gzip
 * bomb" unzips a thousand times its size), found as it is unzipped. Each
 * such error names the limit and how to raise it. */

/* The limit on what an input is read to, raw and unzipped, unless raised:
 * 1 GiB. Profiles run to tens of megabytes (perf script text of a long
 * recording to hundreds); what a reader holds is at most about the limit,
 * which the kernel's memory can afford. */
#define FL_INPUT_LIMIT_DEFAULT ((size_t)1 << 30)

typedef struct fl_read_opts {
  fl_input_kind_t kind;   /* FL_INPUT_AUTO: told apart by content */
  const char *root;       /* a frame of that name over this file's samples (as
                           * fl_profile_merge_under adds them, FL_FRAME_ROOT, the
                           * string copied): each file a subtree of the graph, as
                           * the cflame command's --per-input and %profload
                           * per_input=true draw them; NULL: no such frame */
  size_t max_bytes;       /* the limit on the input and on its unzipped content;
                           * 0: FL_INPUT_LIMIT_DEFAULT */
  const char *raise_with; /* how the user raises the limit, for the error:
                           * "--max-input-size SIZE"; NULL: not said */
  bool stdin_dash;        /* "-" reads standard input (named "<stdin>" in errors);
                           * false: "-" is a file's name */
  fl_budget_t *budget;    /* charged as the input is parsed and its profile built,
                           * and cancels the read (borrowed); NULL: a budget of
                           * the default limit for this read alone */
} fl_read_opts_t;

/* Defaults: FL_INPUT_AUTO, no root, FL_INPUT_LIMIT_DEFAULT, stdin_dash
 * true, no budget of the caller's. */
void fl_read_opts_init(fl_read_opts_t *opts);

/* fl_read_profile under opts (NULL: the defaults): its kind, root, limit
 * on what it unzips to, and budget (stdin_dash is not read). */
int fl_read_profile_opts(fl_profile_t *p, const char *data, size_t len, const char *name,
                         const fl_read_opts_t *opts, fl_input_kind_t *kind_out, fl_io_error_t *err);

/* fl_read_profile of the file at path, under opts (NULL: the defaults), as
 * the comment above says. A file that cannot be read is an error naming it
 * and saying why (the errno text, or what the path is). */
int fl_read_profile_file_opts(fl_profile_t *p, const char *path, const fl_read_opts_t *opts,
                              fl_input_kind_t *kind_out, fl_io_error_t *err);

/* fl_read_profile_file_opts with the defaults but kind. */
int fl_read_profile_file(fl_profile_t *p, const char *path, fl_input_kind_t kind,
                         fl_input_kind_t *kind_out, fl_io_error_t *err);

/* A size as the limit is written: a whole number of bytes, with an
 * optional K, M, G or T (KiB, MiB, GiB, TiB; "KiB" and the like are taken
 * too): "4G". Returns 0 and *bytes (at least 1), or -1 with err saying
 * what was wrong and what is valid (without naming the option). */
int fl_input_limit_parse(const char *text, size_t *bytes, char *err, size_t err_size);

/* A size for messages: "1 GiB", "64 MiB", "100 bytes" (bytes when no unit
 * divides it). */
void fl_input_limit_text(size_t bytes, char out[32]);

/* ---- writing files ---- */

/* Writes len bytes of data to path, whole or not at all: into a new file
 * that mkstemp makes next to path (a name nobody could have planted a link
 * at), with the permissions of the file it replaces (a new file: those a
 * plain creat() would give it), renamed over
 * path once every byte is written and the file closed. On any error the
 * new file is removed, path is left as it was, and no descriptor stays
 * open. A path that exists and is not a regular file (/dev/null, a FIFO, a
 * terminal) is written in place when in_place is true (the cflame
 * command's -o: a FIFO waits for its reader there); otherwise it is an
 * error that says what the path is. Returns 0, or -1 with err: "cannot
 * write PATH: why". */
int fl_write_file(const char *path, const void *data, size_t len, bool in_place, char *err,
                  size_t err_size);

/* Folded stacks of a tree, as drawn: the tree options (C=false folding,
 * lines, filter, pruned, minwidth) are those fl_tree_build applied. One line
 * per distinct root-to-node path whose last node has self weight > 0,
 * "frame;frame;...;frame COUNT\n", root first, without the tree's own root
 * (FL_FRAME_ROOT): its self weight, if any, is a line with no frames,
 * " COUNT\n", which flamegraph.pl also reads as the root's. Frame text is
 * func, or "func (file:line)" for a frame with a known file and line (a
 * tree built with lines=true); ';' in a name is written ':' and line
 * breaks as '?', so the line splits back into the same frames, and a name
 * that would read back as a location gets '_' for the space before its
 * '(' (a function named "f (a.c:1)" without one; " (" inside a file). Paths
 * whose text is equal (two functions of one name in different modules)
 * are one line with the summed count. Lines are sorted bytewise, as
 * stackcollapse-perf.pl sorts them. Frames minwidth hid are not written:
 * build with minwidth 0 for every sample. New string (free it). */
char *fl_folded(const fl_tree_t *t);
/* What fl_folded(t) takes while it writes, in bytes (saturated): each
 * line's text twice (gathered, then written sorted) and an entry per node.
 * A line is its path's whole text, so a deep tree with many leaves writes
 * far more than it holds: fl_output charges this to its budget first. */
size_t fl_folded_bytes(const fl_tree_t *t);

/* pprof's profile.proto of a tree, as drawn (the tree options applied,
 * as for fl_folded), gzip-compressed: what `go tool pprof`, Pyroscope,
 * Parca and Grafana read. One sample per root-to-node path whose last
 * node has self weight, its locations leaf first; a frame inlined into its
 * caller (FL_FRAME_INLINED) is a line of its caller's location. Frames
 * become functions (name, file) and lines (line), modules mappings (file
 * name), and the values:
 *   CPU profiles          samples/count (the weight) and, when the
 *                         interval is known, cpu/nanoseconds (the weight
 *                         times the interval), with period_type
 *                         cpu/nanoseconds and the interval as period;
 *   allocation profiles   alloc_objects/count and alloc_space/bytes
 *                         (inuse_objects and inuse_space for a live=true
 *                         profile; objects alone for weight=count), with
 *                         period_type allocations/count and 1/sample_rate
 *                         as period.
 * The tree's root is not written (its self weight, if any, is a sample
 * without locations); nor are frames minwidth hid: build with minwidth 0
 * for every sample. pprof's values are int64: a larger value is written
 * as INT64_MAX. New buffer of *size bytes (free it). */
char *fl_pprof(const fl_tree_t *t, size_t *size);
/* fl_pprof of a profile of several kinds: trees[0 .. n) of one profile,
 * each of another kind (fl_tree_opts_t.kind), the first the kind drawn.
 * Each kind's sample types follow the previous kind's, the first's its
 * period and the default sample type its measure; a sample has its
 * values in its kind's types and 0 in the others', as fl_read_profile
 * reads it back, each sample of its kind. */
char *fl_pprof_kinds(const fl_tree_t *const *trees, size_t n, size_t *size);

/* speedscope's file format (its JSON schema,
 * https://www.speedscope.app/file-format-schema.json) of a tree, as drawn
 * (the tree options applied; build with minwidth 0 for every sample): a
 * "sampled" profile per thread, "thread 2: worker", its samples in time
 * order (fl_timeline_build_all: samples without a time stamp in the
 * order added), consecutive samples of one stack merged, each a stack of
 * the shared frames (function, file, line) root first, without the
 * tree's root, and their weights in the kind's unit: "nanoseconds" (a
 * time profile with a known interval), "bytes", else "none" (counts).
 * With a baseline (a diff, both trees built alike), two profiles,
 * "target" then "baseline", each its threads one after the other. Beside
 * speedscope's members, cflame's own (fl_read_profile reads them back):
 * "cflame" {kind, interval_ns, sample_rate, event, diff} and a profile's
 * "thread" and "thread_name". What it writes is charged to budget first
 * (a number per frame of each sample): NULL when the budget refuses.
 * New buffer of *len bytes. */
char *fl_speedscope(const fl_tree_t *t, const fl_tree_t *baseline, fl_budget_t *budget,
                    size_t *len);

/* Chrome's trace-event format (JSON, {"traceEvents": [...]}), read by
 * Perfetto's UI, chrome://tracing, speedscope and the Firefox Profiler:
 * the bars of view=chart (fl_chart.c, every one of them, within v's from
 * and to) as complete events ("ph":"X", ts and dur in microseconds from
 * the chart's start, pid 1, tid the thread), a bar before the bars under
 * it, each with its function's name and, in a "cflame" member, its file
 * and line, its depth (1 under the root) and weight (args would make
 * speedscope take each bar for a function of its own); cat "off-cpu" or "runnable" for a
 * wait's bars, "on-cpu" for the rest; a thread_name event ("ph":"M") per
 * thread; "otherData" holds cflame's "cflame" member (as fl_speedscope).
 * NULL with err when the samples carry no time stamps (folded stacks) or
 * the budget refuses the bars. New buffer of *len bytes. */
char *fl_trace(const fl_tree_t *t, const fl_view_opts_t *v, fl_budget_t *budget, size_t *len,
               char *err, size_t err_size);

/* Which output a file name asks for by its ending (case-insensitive):
 * ".svg" "svg", ".html" "html", ".vl.json" "vegalite", ".folded" "folded",
 * ".txt" "text", ".pb.gz" "pprof"; NULL for any other. Static. The
 * kernel's %profsave and the cflame command both choose by it. */
const char *fl_output_format_of_path(const char *path);
/* The ending of a format's files (the other way round: "pprof" ".pb.gz"),
 * or NULL for a format without one. Static. */
const char *fl_output_ending_of_format(const char *format);
/* The endings fl_output_format_of_path knows, for messages: ".svg, .html,
 * .vl.json, .folded, .txt, .pb.gz" (and_last: "..., .txt or .pb.gz").
 * Static. */
const char *fl_output_endings(bool and_last);

/* A standalone HTML page (UTF-8) that shows a flame graph and loads
 * nothing from anywhere: the SVG inline, interactive by itself (hover,
 * click to zoom, search; its script is in the page), with a line under it
 * that its script hides, for a browser with JavaScript off. The Vega-Lite
 * spec is in the page as JSON (<script type="application/json"
 * class="cflame-spec">, with "<", ">" and "&" escaped, so no text in it
 * can end the element), for tools that take it elsewhere. title (NULL:
 * "cflame flame graph") is HTML-escaped. vegalite_spec is borrowed. New
 * string (free it). */
char *fl_html_page(const json_t *vegalite_spec, const char *svg, const char *title);

/* One view of a page of several. */
typedef struct fl_html_view {
  const char *name;   /* the view's option value, "flame": the tab's id */
  const char *label;  /* the tab's text */
  const json_t *spec; /* borrowed */
  const char *svg;
} fl_html_view_t;

/* The page of n views, a tab each, views[selected]'s shown first; each
 * view's panel as fl_html_page's page (SVG, spec, note). With one view,
 * no tabs. New string. */
char *fl_html_page_views(const fl_html_view_t *views, size_t n, size_t selected, const char *title);

CFLAME_END_DECLS

#endif
