/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__symbol: what the symbolizer (fl_symbol.c) and its per-module
 * indexes (fl_symbol_index.c) share: the symbolizer's state, and the
 * index's searches, which stand in for libdwfl's where those are slow or
 * missing. Both run under the store's lock (fl_symbol.c). */
#ifndef FL__SYMBOL_H
#define FL__SYMBOL_H

#include <stdbool.h>
#include <stdint.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "cflame/fl_symbol.h"
#include "fl__common.h"

/* One resolved address: frames [first, first + count) of the pool. */
typedef struct lookup {
  uint64_t pc;
  uint32_t first;
  uint32_t count;
  bool is_return_address;
} lookup_t;

/* A symbol with its readable name: demangled once, however many
 * addresses of the function are looked up. Both interned. */
typedef struct named {
  const char *symbol;
  const char *readable; /* NULL: the symbol is not mangled */
} named_t;

struct fl_symbolizer {
  Dwfl *dwfl;

  lookup_t *lookups; /* every address resolved, in order */
  size_t n_lookups, lookups_cap;
  fl__index_t lookup_index;

  fl_frame_info_t *pool; /* the frames of every cached lookup */
  size_t pool_len;
  size_t pool_cap;

  fl__strset_t strings; /* interned strings */

  named_t *named; /* every symbol met, with its readable name */
  size_t n_named, named_cap;
  fl__index_t named_index;

  bool names_as_written; /* fl_symbolizer_name_files_as_written */
  /* A symbolizer made from a maps text: the [vdso]'s range, which libdwfl
   * cannot read without the process, and without which it gives those
   * addresses to another module: they are named "[vdso]". */
  uint64_t vdso_lo, vdso_hi;
  /* file_name's answers, by the name libdw returned (direct-mapped). */
  struct {
    const char *path, *name;
  } file_names[256];
};

static inline const char *fl__symbol_intern(fl_symbolizer_t *sym, const char *s) {
  return fl__strset_intern(&sym->strings, s);
}

/* The most functions, inlined ones included, one address is inside. */
enum { FL__SYMBOL_MAX_NESTED = 64 };

/* The name of the function holding addr in mod, interned in sym, or NULL:
 * from mod's ELF symbol table, else its PLT stub. */
const char *fl__symbol_elf_func_name(fl_symbolizer_t *sym, Dwfl_Module *mod, uint64_t addr);
/* The compilation unit holding addr in mod, into *cu with its bias; NULL
 * when none does. */
Dwarf_Die *fl__symbol_find_cu(Dwfl_Module *mod, uint64_t addr, Dwarf_Die *cu, Dwarf_Addr *bias);
/* The functions holding pc (relative to the DWARF bias) in unit cu, into
 * chain (at most FL__SYMBOL_MAX_NESTED), outermost first. */
void fl__symbol_unit_functions(Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *chain,
                               int *len);
/* Frees mod's index: a dwfl_getmodules callback (and dwfl_report_end's,
 * whose userdata argument is the address of the module's userdata too). */
int fl__symbol_index_free(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                          void *arg);

#endif
