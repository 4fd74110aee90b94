/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_symbol: turns instruction addresses of a process into functions, source
 * files and lines, with inlined functions as frames of their own.
 *
 * Built on elfutils libdwfl. The process's modules are reported from the text
 * of its /proc/PID/maps (so a process that has already died can still be
 * symbolized from a copy of its maps taken while it ran). Results are cached
 * per address. */
#ifndef FL_SYMBOL_H
#define FL_SYMBOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cflame/fl_api.h"

CFLAME_BEGIN_DECLS

typedef struct fl_symbolizer fl_symbolizer_t;

/* A stub of a module's procedure linkage table, through which its code
 * calls a function that another module may define, has no symbol: it is
 * named after the function it leads to, as objdump and perf name it
 * ("malloc@plt"), and the table's head, the lazy resolver's entry, is
 * "[plt]". */
#define FL_SYMBOL_PLT_SUFFIX "@plt"
#define FL_SYMBOL_PLT_HEAD "[plt]"

typedef struct fl_frame_info {
  const char *func;        /* function name from DWARF, else the ELF symbol, else
                              the PLT stub's name (FL_SYMBOL_PLT_SUFFIX), else
                              NULL; C++ and Rust names demangled
                              ("ns::Klass<int>::method(int)"); borrowed, valid
                              until the symbolizer is destroyed */
  const char *system_name; /* the mangled symbol func was demangled from, or
                         NULL; borrowed */
  const char *file;        /* source file as recorded in DWARF (#line names such as
                              "cell[3]" included) or NULL; borrowed */
  int line;                /* 0 when unknown */
  int col;                 /* 0 when unknown */
  const char *module;      /* full path of the module (shared object or
                              executable) or NULL; borrowed */
  uint64_t module_base;    /* load bias of the module */
  bool inlined;            /* this frame is inlined into the next one */
} fl_frame_info_t;

/* Creates a symbolizer for a process whose /proc/PID/maps text is maps_text.
 * Returns a new symbolizer, or NULL with a reason in err. */
fl_symbolizer_t *fl_symbolizer_new_from_maps(const char *maps_text, char *err, size_t err_size);

/* Same, reading /proc/PID/maps of a live process. */
fl_symbolizer_t *fl_symbolizer_new_from_pid(int pid, char *err, size_t err_size);

/* How source files are named. By default a file the line table names
 * relative to the compilation directory is named by its full path when
 * that file exists, so that its text can be read from anywhere (view=source),
 * and as the compiler wrote it otherwise (a `#line 1 "cell[3]"`). written:
 * always as the compiler wrote it (a host whose generated names happen to
 * be files in the compilation directory, as a notebook kernel's cells). */
void fl_symbolizer_name_files_as_written(fl_symbolizer_t *sym, bool written);

/* Makes sym (from fl_symbolizer_new_from_pid) describe process pid as it is
 * now, and forgets every lookup. A module still mapped under the same name
 * at the same addresses keeps what was read of it (its DWARF, decompressed
 * debug sections, indexes), so a symbolizer kept across the runs of one
 * process pays for its libraries once; other modules are dropped. Returns
 * 0, or -1 with a reason in err (sym then knows an incomplete set of
 * modules: destroy it). */
int fl_symbolizer_refresh_from_pid(fl_symbolizer_t *sym, int pid, char *err, size_t err_size);

/* Symbolizes pc. When is_return_address is true (every frame of a stack but
 * the innermost one of a fault or sample), pc - 1 is looked up so that the
 * call instruction, not the one after it, gives the line.
 *
 * Writes up to max frames to frames: the innermost inlined function first,
 * then the functions it is inlined into, ending with the real (out-of-line)
 * function. Returns the number written (at least 1 when max >= 1: an unknown
 * address gives one frame with func NULL and module set when known). */
int fl_symbolizer_lookup(fl_symbolizer_t *sym, uint64_t pc, bool is_return_address,
                         fl_frame_info_t *frames, int max);

void fl_symbolizer_destroy(fl_symbolizer_t **sym);

/* Modules kept across symbolizers. What is costly to read of a large
 * module (libc and its debug information, a large program) is read once
 * per process and kept by build-id, whatever address each profiled
 * process maps it at: a restarted worker's profile, or each rank of an MPI
 * job, reads it again for nothing. The store keeps the modules read most
 * recently, within a bound on their number and on the size of their files
 * (docs/LIBRARY.md gives both). Thread-safe. */
typedef struct fl_symbol_cache_stats {
  size_t modules;   /* modules held now */
  uint64_t bytes;   /* the size of their files (module and debug file) */
  uint64_t read;    /* modules read since the start (or the last clear) */
  uint64_t reused;  /* lookups of a module that found it already read */
  uint64_t dropped; /* modules dropped to stay within the bounds */
} fl_symbol_cache_stats_t;

void fl_symbol_cache_stats(fl_symbol_cache_stats_t *stats);
/* Drops every kept module (they are read again when next needed). Call it
 * with no lookup running. */
void fl_symbol_cache_clear(void);

CFLAME_END_DECLS

#endif
