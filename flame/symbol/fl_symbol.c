/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_symbol: addresses to functions, files and lines, with elfutils libdwfl.
 *
 * The process's modules are reported to libdwfl from the text of its
 * /proc/PID/maps (or, for a live pid, by libdwfl itself, which also picks up
 * the vDSO). Each lookup resolves the address once: the DWARF scopes give the
 * chain of inlined subroutines ending in the enclosing subprogram, the line
 * table gives the innermost file:line and each inlined subroutine's
 * DW_AT_call_file/DW_AT_call_line gives the location in the frame around it.
 * Modules without DWARF fall back to their ELF symbol table. Sorted
 * per-module tables of symbols and unit ranges stand in for libdwfl's own
 * searches where those are slow or missing (see "per-module indexes").
 *
 * The modules are read from their paths when first needed, so they must
 * still be there: a file deleted since it was mapped (a maps line ending in
 * " (deleted)") or replaced gives no symbols, or wrong ones.
 *
 * Everything a lookup returns is kept: frames in one growing pool, the
 * lookups in an array with an fl__index keyed by (pc, is_return_address),
 * and every string interned in an fl__strset, so that a repeated lookup is
 * a hash probe and a copy, and equal strings are equal pointers. Out of
 * memory aborts, as everywhere in the library (fl__common.h).
 *
 * Debug files are searched the standard libdwfl way (build-id and
 * .gnu_debuglink under /usr/lib/debug); when DEBUGINFOD_URLS is set in the
 * environment, libdwfl also asks those debuginfod servers, as gdb and perf do
 * (find_debuginfo: without servers, libdwfl's client is never loaded).
 *
 * A symbolizer is not thread-safe: one thread at a time. */
#define _GNU_SOURCE
#include "cflame/fl_symbol.h"

#include <assert.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <gelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl__common.h"
#include "fl__demangle.h"

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

/* libdwfl keeps a pointer to the callbacks (and to the debuginfo path) for
 * the life of the Dwfl, so both are static. NULL path: the default search. */
static char *debuginfo_path;

/* libdwfl's find_elf for a process, but holding no descriptor: the file is
 * mapped, libelf is told it is done with the descriptor, and the
 * descriptor is closed. A symbolizer kept for a whole session meets a new
 * module (a cell's object) at every profiled cell; with one descriptor
 * each, a long session would run out of them. */
static int find_elf_mapped(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                           char **file_name, Elf **elfp) {
  int fd = dwfl_linux_proc_find_elf(mod, userdata, modname, base, file_name, elfp);
  if (fd < 0 || *elfp) return fd;
  Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  if (!elf) return fd;
  if (elf_cntl(elf, ELF_C_FDDONE) != 0) {
    elf_end(elf);
    return fd;
  }
  close(fd);
  *elfp = elf;
  return -1;
}

/* Whether a debug file for module file may be found locally by its
 * .gnu_debuglink name (debuglink; without one, libdwfl takes the file's
 * name plus ".debug"): whether that name exists in one of the places
 * libdwfl's default path (debuginfo_path NULL) looks, beside the file, in
 * its .debug directory, or under /usr/lib/debug. libdwfl checks the
 * candidate's CRC itself. */
static bool debuglink_candidate(const char *file, const char *debuglink) {
  if (!file) return false;
  const char *slash = strrchr(file, '/');
  if (!slash) return false; /* libdwfl names a process's modules by absolute paths */
  int dir_len = (int)(slash - file);
  char name[PATH_MAX], path[PATH_MAX];
  if (debuglink)
    snprintf(name, sizeof name, "%s", debuglink);
  else
    snprintf(name, sizeof name, "%s.debug", slash + 1);
  static const char *const places[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
  for (size_t i = 0; i < FL__ARRAY_SIZE(places); i++) {
    int n = snprintf(path, sizeof path, places[i], dir_len, file, name);
    if (n > 0 && (size_t)n < sizeof path && access(path, R_OK) == 0) return true;
  }
  return false;
}

/* libdwfl's standard search for a module's debug file, less its last
 * resort when no debuginfod server is configured. That search looks by
 * build-id under /usr/lib/debug/.build-id, then by the .gnu_debuglink name,
 * and when both fail asks the servers in DEBUGINFOD_URLS. For that last
 * step libdwfl loads libdebuginfod, and with it libcurl, GnuTLS and some
 * fifteen more libraries (megabytes of pages in every process that
 * symbolizes, the kernel's included), even when DEBUGINFOD_URLS is unset.
 * So without servers, the standard search runs only where a local file may
 * answer it. With servers, it runs as gdb and perf run it. */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file, const char *debuglink, GElf_Word crc,
                          char **debuginfo_file_name) {
  const char *servers = getenv("DEBUGINFOD_URLS");
  if (servers && *servers)
    return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file, debuglink, crc,
                                        debuginfo_file_name);
  int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file, debuglink, crc,
                                        debuginfo_file_name);
  if (fd >= 0 || !debuglink_candidate(file, debuglink)) return fd;
  return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file, debuglink, crc,
                                      debuginfo_file_name);
}

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = find_elf_mapped,
    .find_debuginfo = find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};

/* ---- strings ---- */

static const char *intern(fl_symbolizer_t *sym, const char *s) {
  return fl__strset_intern(&sym->strings, s);
}

/* ---- names ---- */

/* Sets frame's func, and its system_name when symbol (interned) is a
 * mangled name: the readable name, demangled once per symbol. A symbol
 * that is not mangled is the name, as is fallback when symbol is NULL. */
static void set_name(fl_symbolizer_t *sym, fl_frame_info_t *frame, const char *symbol,
                     const char *fallback) {
  frame->func = symbol ? symbol : fallback;
  frame->system_name = NULL;
  if (!symbol) return;
  uint64_t h = fl__mix64((uint64_t)(uintptr_t)symbol);
  fl__probe_t pr;
  const named_t *known = NULL;
  for (uint32_t i = fl__index_find(&sym->named_index, h, &pr); i != FL__NONE && !known;
       i = fl__index_next(&sym->named_index, &pr))
    if (sym->named[i].symbol == symbol) known = &sym->named[i];
  if (!known) {
    char *readable = fl__demangle(symbol);
    sym->named = fl__grow(sym->named, &sym->named_cap, sym->n_named + 1, sizeof *sym->named);
    sym->named[sym->n_named] = (named_t){symbol, readable ? intern(sym, readable) : NULL};
    free(readable);
    fl__index_add(&sym->named_index, h, (uint32_t)sym->n_named);
    known = &sym->named[sym->n_named++];
  }
  if (known->readable) {
    frame->func = known->readable;
    frame->system_name = symbol;
  } else if (fallback) {
    /* A linkage name that is not mangled (an asm label): the source's
     * name reads as the programmer wrote it. */
    frame->func = fallback;
  }
}

/* ---- the cache ---- */

static uint64_t hash_pc(uint64_t pc, bool is_return_address) {
  return fl__mix64(pc ^ (is_return_address ? 0x9e3779b97f4a7c15u : 0));
}

/* The earlier lookup of (pc, is_return_address), or NULL. */
static const lookup_t *cache_get(const fl_symbolizer_t *sym, uint64_t pc, bool is_return_address) {
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&sym->lookup_index, hash_pc(pc, is_return_address), &pr);
       i != FL__NONE; i = fl__index_next(&sym->lookup_index, &pr)) {
    const lookup_t *l = &sym->lookups[i];
    if (l->pc == pc && l->is_return_address == is_return_address) return l;
  }
  return NULL;
}

static void cache_put(fl_symbolizer_t *sym, const lookup_t *l) {
  if (sym->n_lookups >= FL__NONE) fl__oom(0);
  sym->lookups =
      fl__grow(sym->lookups, &sym->lookups_cap, sym->n_lookups + 1, sizeof *sym->lookups);
  sym->lookups[sym->n_lookups] = *l;
  fl__index_add(&sym->lookup_index, hash_pc(l->pc, l->is_return_address),
                (uint32_t)sym->n_lookups++);
}

/* Appends a frame to the pool. */
static void pool_push(fl_symbolizer_t *sym, const fl_frame_info_t *frame) {
  if (sym->pool_len >= UINT32_MAX) fl__oom(0); /* lookups number frames in 32 bits */
  sym->pool = fl__grow(sym->pool, &sym->pool_cap, sym->pool_len + 1, sizeof *sym->pool);
  sym->pool[sym->pool_len++] = *frame;
}

/* ---- DWARF ---- */

/* libdw joins a relative file name of the line table to its directory, the
 * compilation directory for directory 0: gcc records `#line 1 "cell[3]"` as
 * "cell[3]" in directory 0, and libdw returns "/comp/dir/cell[3]". Undo that
 * join, so that the name reads as the compiler wrote it. (file_name keeps
 * the joined name where it is a file that exists.) */
static const char *strip_comp_dir(Dwarf_Die *cu, const char *path) {
  Dwarf_Files *files;
  const char *const *dirs;
  size_t ndirs;
  if (!cu || !path || path[0] != '/') return path;
  if (dwarf_getsrcfiles(cu, &files, NULL) != 0) return path;
  if (dwarf_getsrcdirs(files, &dirs, &ndirs) != 0 || ndirs == 0 || !dirs[0]) return path;
  size_t n = strlen(dirs[0]);
  while (n > 1 && dirs[0][n - 1] == '/') n--;
  if (n <= 1 || strncmp(path, dirs[0], n) != 0 || path[n] != '/') return path;
  return path + n + 1;
}

/* A source file's name as the frames show it, interned: strip_comp_dir's,
 * unless the joined name is a file that exists, which is kept whole so
 * that its text can be read wherever cflame runs (view=source). Each name
 * is looked at once: the answers are kept by the interned name libdw
 * returned. */
static const char *file_name(fl_symbolizer_t *sym, Dwarf_Die *cu, const char *path) {
  if (!path) return NULL;
  /* A name libdw left relative (DWARF 5 line tables name files relative
   * to directory 0): joined to the unit's compilation directory here. */
  char joined[PATH_MAX];
  Dwarf_Attribute attr;
  const char *dir = cu ? dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)) : NULL;
  if (path[0] != '/' && dir && dir[0] == '/' &&
      (size_t)snprintf(joined, sizeof joined, "%s/%s", dir, path) < sizeof joined)
    path = joined;
  const char *key = intern(sym, path);
  size_t slot = (size_t)(fl__mix64((uint64_t)(uintptr_t)key) %
                         (FL__ARRAY_SIZE(sym->file_names)));
  if (sym->file_names[slot].path == key) return sym->file_names[slot].name;
  const char *name = strip_comp_dir(cu, path);
  if (name != path && !sym->names_as_written && access(path, F_OK) == 0) name = path;
  sym->file_names[slot].path = key;
  sym->file_names[slot].name = intern(sym, name);
  return sym->file_names[slot].name;
}

/* The name of a subprogram or inlined subroutine, following
 * DW_AT_abstract_origin and DW_AT_specification; NULL if none. This is the
 * name in the source, not an asm label's symbol. */
static const char *die_name(Dwarf_Die *die) {
  Dwarf_Attribute attr;
  return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

/* The symbol of a subprogram or inlined subroutine where it has one
 * (C++, Rust: DW_AT_linkage_name, or the older DW_AT_MIPS_linkage_name),
 * following its origin as die_name does; NULL if none. */
static const char *die_linkage_name(Dwarf_Die *die) {
  Dwarf_Attribute attr;
  const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
  return name ? name : dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
}

/* Whether the type type declares an operator(). */
static bool has_call_operator(Dwarf_Die *type) {
  Dwarf_Die member;
  if (dwarf_child(type, &member) != 0) return false;
  do {
    const char *name = dwarf_tag(&member) == DW_TAG_subprogram ? die_name(&member) : NULL;
    if (name && !strcmp(name, "operator()")) return true;
  } while (dwarf_siblingof(&member, &member) == 0);
  return false;
}

/* The C++ name of die, a function without a linkage name, interned: its
 * DWARF name with the namespaces, classes and functions around its
 * declaration ("std::__unguarded_partition<...>", "main::{lambda}::
 * operator()"). gcc gives no linkage name to an instance of a template
 * whose arguments hold a local type (a lambda): an inlined frame of
 * std::sort with a lambda would otherwise read "__sort<...>", and the
 * lambda "operator()". The declaration is where DW_AT_abstract_origin and
 * DW_AT_specification lead, inside its scopes; dwarf_getscopes_die reads
 * the unit up to it, which only such frames of C++ units pay. NULL when die
 * has no name. */
static const char *scoped_name(fl_symbolizer_t *sym, Dwarf_Die *cu, Dwarf_Die *die) {
  const char *name = die_name(die);
  int lang = cu ? dwarf_srclang(cu) : -1;
  if (!name || (lang != DW_LANG_C_plus_plus && lang != DW_LANG_C_plus_plus_03 &&
                lang != DW_LANG_C_plus_plus_11 && lang != DW_LANG_C_plus_plus_14))
    return intern(sym, name);
  Dwarf_Die decl = *die, next;
  Dwarf_Attribute attr;
  for (int hops = 0; hops < 8; hops++) {
    if (!dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &attr), &next) &&
        !dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &attr), &next))
      break;
    decl = next;
  }
  Dwarf_Die *scopes = NULL;
  int n = dwarf_getscopes_die(&decl, &scopes);
  fl__buf_t q = FL__BUF_INIT;
  /* scopes[0] is decl, scopes[n - 1] its unit. */
  for (int i = n - 2; i >= 1; i--) {
    const char *scope = die_name(&scopes[i]);
    switch (dwarf_tag(&scopes[i])) {
      case DW_TAG_namespace: scope = scope ? scope : "(anonymous namespace)"; break;
      /* gcc names no lambda's closure type: an unnamed one with an
       * operator() (c++filt's "{lambda(int)#1}"). */
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
        if (!scope) scope = has_call_operator(&scopes[i]) ? "{lambda}" : "{unnamed type}";
        break;
      case DW_TAG_subprogram: break;
      default: scope = NULL; break;
    }
    if (scope) fl__buf_printf(&q, "%s::", scope);
  }
  free(scopes);
  fl__buf_puts(&q, name);
  const char *scoped = intern(sym, q.data);
  fl__buf_free(&q);
  return scoped;
}

/* Reads a call-site attribute of an inlined subroutine; 0 when absent. */
static Dwarf_Word die_udata(Dwarf_Die *die, unsigned int name) {
  Dwarf_Attribute attr;
  Dwarf_Word value;
  if (dwarf_formudata(dwarf_attr(die, name, &attr), &value) != 0) return 0;
  return value;
}

/* Whether inlined, an inlined subroutine directly inside outer, is outer's
 * own body rather than a call: an instance of the same function, "called"
 * where that function is declared. gcc gives some out-of-line copies such
 * an instance of themselves (glibc's __GI__IO_default_xsputn holds an
 * inlined _IO_default_xsputn at genops.c:370:1, the function's own first
 * line), which would otherwise draw the function on itself, as if it
 * recursed. A recursive call that was inlined sits at a call site in the
 * body, never at the declaration, and stays a frame. */
static bool inlined_into_itself(Dwarf_Die *inlined, Dwarf_Die *outer) {
  Dwarf_Attribute attr;
  Dwarf_Die origin, outer_origin;
  if (!dwarf_formref_die(dwarf_attr(inlined, DW_AT_abstract_origin, &attr), &origin)) return false;
  if (!dwarf_formref_die(dwarf_attr(outer, DW_AT_abstract_origin, &attr), &outer_origin))
    outer_origin = *outer;
  int line = 0, col = 0;
  if (dwarf_dieoffset(&origin) != dwarf_dieoffset(&outer_origin) ||
      dwarf_decl_line(&origin, &line) != 0)
    return false;
  Dwarf_Word call_col = die_udata(inlined, DW_AT_call_column);
  return die_udata(inlined, DW_AT_call_line) == (Dwarf_Word)line &&
         (call_col == 0 || dwarf_decl_column(&origin, &col) != 0 || call_col == (Dwarf_Word)col);
}

/* The call site file of an inlined subroutine, from its own CU's file table;
 * NULL when unknown. */
static const char *call_file(fl_symbolizer_t *sym, Dwarf_Die *inlined) {
  Dwarf_Attribute attr;
  Dwarf_Word index;
  Dwarf_Die cu;
  Dwarf_Files *files;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &index) != 0) return NULL;
  if (!dwarf_diecu(inlined, &cu, NULL, NULL)) return NULL;
  if (dwarf_getsrcfiles(&cu, &files, NULL) != 0) return NULL;
  return file_name(sym, &cu, dwarf_filesrc(files, index, NULL, NULL));
}

/* ---- per-module indexes ----
 *
 * libdwfl finds an address's symbol by a linear scan of the whole symbol
 * table (most of an uncached lookup in libc), and its compilation unit
 * through .debug_aranges, which clang does not emit (and libdw 0.188 does not
 * make up from the units). So each module gets, on first need, sorted tables
 * of its function symbols and of its units' address ranges, kept in the
 * module's libdwfl userdata and freed with the symbolizer. */

typedef struct elf_func {
  Dwarf_Addr low, high; /* absolute addresses */
  const char *name;     /* in the module's string table, owned by libdwfl */
  int rank;             /* binding preference among aliases: global highest */
  int order;            /* index in the symbol table: the first alias wins */
  bool sized;           /* it had a size; else high is where the next one starts */
} elf_func_t;

/* A unit's outermost functions (subprograms, entry points, at any depth
 * of namespaces and imported units), one entry per address range, sorted
 * by low: where the walk down to an address's inlined frames starts. */
typedef struct func_range {
  Dwarf_Addr low, high; /* relative to the DWARF bias */
  Dwarf_Die die;
} func_range_t;

typedef struct unit_funcs {
  const void *cu_addr; /* the unit DIE's address: unique while the module lives */
  func_range_t *funcs;
  size_t nfuncs;
} unit_funcs_t;

typedef struct cu_range {
  Dwarf_Addr low, high; /* relative to cu_bias */
  Dwarf_Die cu;
} cu_range_t;

typedef struct plt_stub {
  Dwarf_Addr low, high; /* absolute addresses */
  const char *name;     /* "malloc@plt", or FL_SYMBOL_PLT_HEAD; interned */
} plt_stub_t;

typedef struct module_index {
  bool funcs_built;
  elf_func_t *funcs; /* sorted by low, then rank */
  size_t nfuncs;

  bool plt_built;
  plt_stub_t *plt; /* sorted by low */
  size_t nplt;

  bool cus_built;
  cu_range_t *cus; /* sorted by low */
  size_t ncus;
  Dwarf_Addr cu_bias;

  /* The functions of each unit met, by the unit DIE's address. */
  unit_funcs_t *units;
  size_t nunits, units_cap;
  fl__index_t unit_index;
} module_index_t;

/* Returns mod's index, creating an empty one. */
static module_index_t *module_index(Dwfl_Module *mod) {
  void **userdata;
  dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
  if (!*userdata) *userdata = fl__xcalloc(1, sizeof(module_index_t));
  return *userdata;
}

static int module_index_free(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                             void *arg) {
  (void)mod, (void)name, (void)start, (void)arg;
  module_index_t *index = *userdata;
  if (index) {
    free(index->funcs);
    free(index->plt);
    free(index->cus);
    for (size_t i = 0; i < index->nunits; i++) free(index->units[i].funcs);
    free(index->units);
    fl__index_free(&index->unit_index);
    free(index);
    *userdata = NULL;
  }
  return DWARF_CB_OK;
}

static int compare_funcs(const void *a, const void *b) {
  const elf_func_t *x = a, *y = b;
  if (x->low != y->low) return x->low < y->low ? -1 : 1;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return (x->order < y->order) - (x->order > y->order); /* the first alias last */
}

/* Which of two aliases at one address names a function best: one with a
 * size before one without, then by binding, global first. */
static int binding_rank(int binding, bool sized) {
  int rank = binding == STB_GLOBAL ? 2 : binding == STB_WEAK ? 1 : 0;
  return sized ? rank + 3 : rank;
}

/* The end of section shndx of elf at its load address (bias applied), or
 * 0 when the section holds no code (data, an absolute symbol, no such
 * section). The last answer is kept: a symbol table is mostly .text. */
typedef struct code_section {
  Elf *elf;
  GElf_Word shndx;
  GElf_Addr end;
} code_section_t;

static GElf_Addr code_section_end(code_section_t *last, Elf *elf, GElf_Word shndx,
                                  Dwarf_Addr bias) {
  if (last->elf != elf || last->shndx != shndx) {
    GElf_Shdr sh;
    Elf_Scn *scn =
        elf && shndx != SHN_UNDEF && shndx < SHN_LORESERVE ? elf_getscn(elf, shndx) : NULL;
    last->elf = elf;
    last->shndx = shndx;
    last->end = scn && gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_EXECINSTR)
                    ? sh.sh_addr + sh.sh_size + bias
                    : 0;
  }
  return last->end;
}

/* Reads the module's function symbols (libdwfl's symbol table: .symtab,
 * else .dynsym, with the MiniDebugInfo of .gnu_debugdata beside) once,
 * into a table sorted by address. A symbol without a size (assembly's
 * usual) holds the code up to the next symbol or the end of its section,
 * as libdwfl and perf read it, so that every lookup is a binary search,
 * never libdwfl's linear scan of the table. */
static void build_funcs(Dwfl_Module *mod, module_index_t *index) {
  size_t cap = 0;
  code_section_t last = {0};
  int n = dwfl_module_getsymtab(mod);
  for (int i = 1; i < n; i++) {
    GElf_Sym elf_sym;
    GElf_Addr addr;
    GElf_Word shndx;
    Elf *elf;
    Dwarf_Addr bias;
    const char *name = dwfl_module_getsym_info(mod, i, &elf_sym, &addr, &shndx, &elf, &bias);
    if (!name || !*name || shndx == SHN_UNDEF) continue;
    int type = GELF_ST_TYPE(elf_sym.st_info);
    if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE) continue;
    GElf_Addr high = addr + elf_sym.st_size;
    if (elf_sym.st_size == 0) {
      high = code_section_end(&last, elf, shndx, bias); /* cut below at the next symbol */
      if (high <= addr) continue;
    }
    index->funcs = fl__grow(index->funcs, &cap, index->nfuncs + 1, sizeof *index->funcs);
    index->funcs[index->nfuncs++] = (elf_func_t){
        .low = addr,
        .high = high,
        .name = name,
        .rank = binding_rank(GELF_ST_BIND(elf_sym.st_info), elf_sym.st_size != 0),
        .order = i,
        .sized = elf_sym.st_size != 0,
    };
  }
  if (index->nfuncs > 1) qsort(index->funcs, index->nfuncs, sizeof *index->funcs, compare_funcs);
  /* A sizeless symbol ends where the next symbol above it starts. */
  for (size_t i = 0, next = 0; i < index->nfuncs; i++) {
    elf_func_t *f = &index->funcs[i];
    if (f->sized) continue;
    if (next <= i) next = i + 1;
    while (next < index->nfuncs && index->funcs[next].low <= f->low) next++;
    if (next < index->nfuncs && index->funcs[next].low < f->high) f->high = index->funcs[next].low;
  }
}

/* Number of entries of a sorted array whose low is at most key: the index
 * one past the last candidate. */
#define UPPER_BOUND(array, n, key, result) \
  do {                                     \
    size_t lo_ = 0, hi_ = (n);             \
    while (lo_ < hi_) {                    \
      size_t mid_ = lo_ + (hi_ - lo_) / 2; \
      if ((array)[mid_].low <= (key))      \
        lo_ = mid_ + 1;                    \
      else                                 \
        hi_ = mid_;                        \
    }                                      \
    (result) = lo_;                        \
  } while (0)

/* ---- stubs of the procedure linkage table ----
 *
 * A call to a function of another module (malloc), or to a global function
 * of the same shared object (which another module could interpose: every
 * function of a cell, whose object is built with -fPIC), goes through a
 * stub of the caller's procedure linkage table (PLT), which jumps through a
 * slot of the global offset table (GOT). The stubs have no symbol, so a
 * sample that lands in one would have no name. They are named as objdump
 * and perf name them, "malloc@plt", after the symbol of the dynamic
 * relocation that fills their slot: R_X86_64_JUMP_SLOT in .rela.plt, or
 * R_X86_64_GLOB_DAT in .rela.dyn for the stubs of .plt.got. x86-64's stubs
 * (fl__platform.h) are decoded, whatever the linker's layout: an entry of
 * .plt, .plt.sec or .plt.got that begins (after an endbr64 and a bnd
 * prefix) with `jmp *disp(%rip)` names the slot it jumps through; a lazy
 * entry beside a .plt.sec, `push $i`, names the i-th relocation of
 * .rela.plt. The lazy resolver's entry at the head of .plt (PLT0), and any
 * entry that decodes to neither, is FL_SYMBOL_PLT_HEAD: still the
 * module's, not unknown. */

/* A GOT slot (its address in the file) and the symbol that fills it. */
typedef struct got_slot {
  GElf_Addr addr;
  const char *name; /* in the module's string table */
} got_slot_t;

typedef struct plt_relocs {
  got_slot_t *slots; /* sorted by addr */
  size_t nslots, cap_slots;
  const char **jump_slots; /* .rela.plt's symbols by index (NULL: none) */
  size_t njump, cap_jump;
} plt_relocs_t;

static int compare_slots(const void *a, const void *b) {
  const got_slot_t *x = a, *y = b;
  return (x->addr > y->addr) - (x->addr < y->addr);
}

/* The symbol whose GOT slot is at addr, or NULL. */
static const char *slot_name(const plt_relocs_t *r, GElf_Addr addr) {
  size_t lo = 0, hi = r->nslots;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->slots[mid].addr < addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < r->nslots && r->slots[lo].addr == addr ? r->slots[lo].name : NULL;
}

/* Collects the symbols of the relocations that fill GOT slots: every
 * SHT_RELA section's R_X86_64_JUMP_SLOT and R_X86_64_GLOB_DAT entries, and
 * .rela.plt's by index. */
static void read_plt_relocs(Elf *elf, size_t shstrndx, plt_relocs_t *r) {
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh, symsh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_entsize == 0) continue;
    const char *section = elf_strptr(elf, shstrndx, sh.sh_name);
    bool is_rela_plt = section && !strcmp(section, ".rela.plt");
    Elf_Scn *symscn = elf_getscn(elf, sh.sh_link);
    Elf_Data *rels = elf_getdata(scn, NULL);
    Elf_Data *syms = symscn ? elf_getdata(symscn, NULL) : NULL;
    if (!rels || !syms || !gelf_getshdr(symscn, &symsh)) continue;
    size_t n = sh.sh_size / sh.sh_entsize;
    for (size_t i = 0; i < n && i <= INT_MAX; i++) {
      GElf_Rela rela;
      GElf_Sym elf_sym;
      const char *name = NULL;
      if (gelf_getrela(rels, (int)i, &rela)) {
        unsigned long type = GELF_R_TYPE(rela.r_info), symi = GELF_R_SYM(rela.r_info);
        if ((type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) && symi != 0 &&
            symi <= INT_MAX && gelf_getsym(syms, (int)symi, &elf_sym))
          name = elf_strptr(elf, symsh.sh_link, elf_sym.st_name);
      }
      if (name && !*name) name = NULL;
      if (name) {
        r->slots = fl__grow(r->slots, &r->cap_slots, r->nslots + 1, sizeof *r->slots);
        r->slots[r->nslots++] = (got_slot_t){.addr = rela.r_offset, .name = name};
      }
      if (is_rela_plt) {
        r->jump_slots = fl__grow(r->jump_slots, &r->cap_jump, r->njump + 1, sizeof *r->jump_slots);
        r->jump_slots[r->njump++] = name;
      }
    }
  }
  if (r->nslots > 1) qsort(r->slots, r->nslots, sizeof *r->slots, compare_slots);
}

/* The length of the endbr64 that code of n bytes at e begins with: 4, or
 * 0 when it does not. */
static size_t endbr64_length(const unsigned char *e, size_t n) {
  static const unsigned char endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  return n >= sizeof endbr64 && !memcmp(e, endbr64, sizeof endbr64) ? sizeof endbr64 : 0;
}

/* The symbol the PLT entry of n bytes at e (at address addr in the file)
 * calls, or NULL. */
static const char *decode_plt_entry(const unsigned char *e, size_t n, GElf_Addr addr,
                                    const plt_relocs_t *r) {
  size_t i = endbr64_length(e, n);
  if (i < n && e[i] == 0xf2) i++;                       /* bnd */
  if (i + 6 <= n && e[i] == 0xff && e[i + 1] == 0x25) { /* jmp *disp32(%rip) */
    int32_t disp;
    memcpy(&disp, e + i + 2, sizeof disp);
    return slot_name(r, addr + i + 6 + (GElf_Addr)(int64_t)disp);
  }
  if (i + 5 <= n && e[i] == 0x68) { /* push $index */
    uint32_t index;
    memcpy(&index, e + i + 1, sizeof index);
    return index < r->njump ? r->jump_slots[index] : NULL;
  }
  return NULL;
}

/* The size of each entry of a PLT section: its sh_entsize, else 16
 * (.plt's and .plt.sec's, and .plt.got's when it starts with endbr64),
 * else 8 (.plt.got's). */
static size_t plt_entry_size(const GElf_Shdr *sh, const char *name, const Elf_Data *d) {
  if (sh->sh_entsize >= 8 && sh->sh_entsize <= 64) return sh->sh_entsize;
  if (strcmp(name, ".plt.got") != 0) return 16;
  return endbr64_length(d->d_buf, d->d_size) ? 16 : 8;
}

static int compare_stubs(const void *a, const void *b) {
  const plt_stub_t *x = a, *y = b;
  return (x->low > y->low) - (x->low < y->low);
}

/* Fills index->plt with mod's PLT stubs, named, at their absolute
 * addresses. Nothing for a module that is not x86-64 or has no PLT. */
static void build_plt(fl_symbolizer_t *sym, Dwfl_Module *mod, module_index_t *index) {
  GElf_Addr bias;
  GElf_Ehdr ehdr;
  size_t shstrndx, cap = 0;
  char name[512];
  Elf *elf = dwfl_module_getelf(mod, &bias);
  if (!elf || !gelf_getehdr(elf, &ehdr) || ehdr.e_machine != EM_X86_64 ||
      elf_getshdrstrndx(elf, &shstrndx) != 0)
    return;
  plt_relocs_t r = {0};
  read_plt_relocs(elf, shstrndx, &r);
  for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || !(sh.sh_flags & SHF_EXECINSTR))
      continue;
    const char *section = elf_strptr(elf, shstrndx, sh.sh_name);
    if (!section ||
        (strcmp(section, ".plt") && strcmp(section, ".plt.sec") && strcmp(section, ".plt.got")))
      continue;
    Elf_Data *d = elf_getdata(scn, NULL);
    if (!d || !d->d_buf || d->d_size == 0) continue;
    size_t entry = plt_entry_size(&sh, section, d);
    for (size_t off = 0; off < d->d_size; off += entry) {
      size_t n = d->d_size - off < entry ? d->d_size - off : entry;
      const char *callee =
          decode_plt_entry((const unsigned char *)d->d_buf + off, n, sh.sh_addr + off, &r);
      if (callee) snprintf(name, sizeof name, "%s" FL_SYMBOL_PLT_SUFFIX, callee);
      index->plt = fl__grow(index->plt, &cap, index->nplt + 1, sizeof *index->plt);
      index->plt[index->nplt++] =
          (plt_stub_t){.low = sh.sh_addr + off + bias,
                       .high = sh.sh_addr + off + n + bias,
                       .name = intern(sym, callee ? name : FL_SYMBOL_PLT_HEAD)};
    }
  }
  free(r.slots);
  free(r.jump_slots);
  if (index->nplt > 1) qsort(index->plt, index->nplt, sizeof *index->plt, compare_stubs);
}

/* The name of the PLT stub holding addr, or NULL. */
static const char *plt_stub_name(fl_symbolizer_t *sym, Dwfl_Module *mod, uint64_t addr) {
  module_index_t *index = module_index(mod);
  if (!index->plt_built) {
    build_plt(sym, mod, index);
    index->plt_built = true;
  }
  size_t end;
  UPPER_BOUND(index->plt, index->nplt, addr, end);
  return end > 0 && addr < index->plt[end - 1].high ? index->plt[end - 1].name : NULL;
}

/* The name of the function holding addr, or NULL: the function symbol,
 * preferring, among aliases, one with a size, then a global to a weak to a
 * local symbol, then the first in the table, as libdwfl does; else the PLT
 * stub. */
static const char *elf_func_name(fl_symbolizer_t *sym, Dwfl_Module *mod, uint64_t addr) {
  module_index_t *index = module_index(mod);
  if (!index->funcs_built) {
    build_funcs(mod, index);
    index->funcs_built = true;
  }
  size_t end;
  UPPER_BOUND(index->funcs, index->nfuncs, addr, end);
  /* The innermost symbol holding addr starts last; a few steps back
   * cover a symbol that holds a smaller one. */
  for (size_t i = end, steps = 0; i > 0 && steps < 32; i--, steps++)
    if (addr < index->funcs[i - 1].high) return index->funcs[i - 1].name;
  return plt_stub_name(sym, mod, addr);
}

static int compare_cus(const void *a, const void *b) {
  const cu_range_t *x = a, *y = b;
  return (x->low > y->low) - (x->low < y->low);
}

static void build_cus(Dwfl_Module *mod, module_index_t *index) {
  size_t cap = 0;
  Dwarf_Die *cu = NULL;
  while ((cu = dwfl_module_nextcu(mod, cu, &index->cu_bias))) {
    Dwarf_Addr base, low, high;
    ptrdiff_t offset = 0;
    while ((offset = dwarf_ranges(cu, offset, &base, &low, &high)) > 0) {
      if (low >= high) continue;
      index->cus = fl__grow(index->cus, &cap, index->ncus + 1, sizeof *index->cus);
      index->cus[index->ncus++] = (cu_range_t){.low = low, .high = high, .cu = *cu};
    }
  }
  if (index->ncus > 1) qsort(index->cus, index->ncus, sizeof *index->cus, compare_cus);
}

/* Finds the unit holding addr from the units' own ranges. Returns true with
 * the unit in *cu and the DWARF bias in *bias. */
static bool find_cu_by_ranges(Dwfl_Module *mod, uint64_t addr, Dwarf_Die *cu, Dwarf_Addr *bias) {
  Dwarf_Addr dwarf_bias;
  module_index_t *index = module_index(mod);
  if (!index->cus_built) {
    if (!dwfl_module_getdwarf(mod, &dwarf_bias)) return false; /* no DWARF at all */
    build_cus(mod, index);
    index->cus_built = true;
  }
  size_t end;
  UPPER_BOUND(index->cus, index->ncus, addr - index->cu_bias, end);
  if (end == 0 || addr - index->cu_bias >= index->cus[end - 1].high) return false;
  *cu = index->cus[end - 1].cu;
  *bias = index->cu_bias;
  return true;
}

/* Finds the compilation unit whose code holds addr and copies its DIE to
 * *cu. Returns cu, or NULL when there is none.
 *
 * libdwfl finds the unit through .debug_aranges, which clang does not emit
 * (and libdw 0.188 does not make up from the units), so when it fails the
 * units' own ranges are searched. With split DWARF (-gsplit-dwarf) the
 * functions are in the .dwo file's unit, not in the skeleton unit of the
 * module: that split unit is returned when libdw finds it. */
static Dwarf_Die *find_cu(Dwfl_Module *mod, uint64_t addr, Dwarf_Die *cu, Dwarf_Addr *bias) {
  Dwarf_Die *found = dwfl_module_addrdie(mod, addr, bias);
  if (found)
    *cu = *found;
  else if (!find_cu_by_ranges(mod, addr, cu, bias))
    return NULL;

  uint8_t unit_type;
  Dwarf_Die split;
  if (dwarf_cu_info(cu->cu, NULL, &unit_type, NULL, &split, NULL, NULL, NULL) == 0 &&
      unit_type == DW_UT_skeleton && dwarf_tag(&split) == DW_TAG_compile_unit)
    *cu = split;
  return cu;
}

enum { MAX_NESTED_FUNCTIONS = 64, MAX_SCOPE_DEPTH = 256 };

/* Walks down from parent along the DIEs whose code holds pc (relative to
 * the DWARF bias) and appends the functions on the way, subprograms and
 * inlined subroutines, to chain: outermost first. The walk skips whole
 * subtrees that do not hold pc, and looks into namespaces and imported
 * (partial) units, which have no addresses of their own. Returns true when
 * a DIE holding pc was found. Deeper nestings than the chain holds keep the
 * outer functions.
 *
 * dwarf_getscopes does the same but then also walks the unit again for the
 * abstract origin of inlined instances, which costs more than the whole
 * lookup and is not needed here. */
static bool find_functions(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *chain, int *len,
                           int depth) {
  Dwarf_Die child, imported;
  Dwarf_Attribute attr;
  if (depth > MAX_SCOPE_DEPTH || dwarf_child(parent, &child) != 0) return false;
  do {
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine:
      case DW_TAG_entry_point:
        if (dwarf_haspc(&child, pc) <= 0) break;
        if (*len < MAX_NESTED_FUNCTIONS) chain[(*len)++] = child;
        find_functions(&child, pc, chain, len, depth + 1);
        return true;
      case DW_TAG_lexical_block:
      case DW_TAG_try_block:
      case DW_TAG_catch_block:
      case DW_TAG_with_stmt:
        if (dwarf_haspc(&child, pc) <= 0) break;
        find_functions(&child, pc, chain, len, depth + 1);
        return true;
      case DW_TAG_namespace:
      case DW_TAG_module:
        if (find_functions(&child, pc, chain, len, depth + 1)) return true;
        break;
      case DW_TAG_imported_unit:
        if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &imported) &&
            find_functions(&imported, pc, chain, len, depth + 1))
          return true;
        break;
      default: break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

/* Appends the outermost functions under parent to u (see func_range_t).
 * The walk looks where find_functions looks for its first frame. */
static void collect_funcs(Dwarf_Die *parent, unit_funcs_t *u, size_t *cap, int depth) {
  Dwarf_Die child, imported;
  Dwarf_Attribute attr;
  if (depth > MAX_SCOPE_DEPTH || dwarf_child(parent, &child) != 0) return;
  do {
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram:
      case DW_TAG_entry_point: {
        Dwarf_Addr base, low, high;
        for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &low, &high)) > 0;) {
          if (low >= high) continue;
          u->funcs = fl__grow(u->funcs, cap, u->nfuncs + 1, sizeof *u->funcs);
          u->funcs[u->nfuncs++] = (func_range_t){.low = low, .high = high, .die = child};
        }
        break;
      }
      case DW_TAG_namespace:
      case DW_TAG_module: collect_funcs(&child, u, cap, depth + 1); break;
      case DW_TAG_imported_unit:
        if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &imported))
          collect_funcs(&imported, u, cap, depth + 1);
        break;
      default: break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
}

static int compare_func_ranges(const void *a, const void *b) {
  const func_range_t *x = a, *y = b;
  return (x->low > y->low) - (x->low < y->low);
}

/* The functions of unit cu, read on first need. */
static const unit_funcs_t *unit_funcs(module_index_t *index, Dwarf_Die *cu) {
  uint64_t h = fl__mix64((uint64_t)(uintptr_t)cu->addr);
  fl__probe_t pr;
  for (uint32_t i = fl__index_find(&index->unit_index, h, &pr); i != FL__NONE;
       i = fl__index_next(&index->unit_index, &pr))
    if (index->units[i].cu_addr == cu->addr) return &index->units[i];
  unit_funcs_t u = {.cu_addr = cu->addr};
  size_t cap = 0;
  collect_funcs(cu, &u, &cap, 0);
  if (u.nfuncs > 1) qsort(u.funcs, u.nfuncs, sizeof *u.funcs, compare_func_ranges);
  if (index->nunits >= FL__NONE) fl__oom(0);
  index->units = fl__grow(index->units, &index->units_cap, index->nunits + 1, sizeof *index->units);
  index->units[index->nunits] = u;
  fl__index_add(&index->unit_index, h, (uint32_t)index->nunits);
  return &index->units[index->nunits++];
}

/* The functions holding pc (relative to the DWARF bias) in unit cu, into
 * chain as find_functions gives them, outermost first: the unit's table
 * finds the outermost one by binary search, and only that function's
 * scopes are walked for the inlined ones. */
static void unit_functions(Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *chain,
                           int *len) {
  const unit_funcs_t *u = unit_funcs(module_index(mod), cu);
  size_t end;
  UPPER_BOUND(u->funcs, u->nfuncs, pc, end);
  /* A few steps back cover a range that holds a later-starting one. */
  for (size_t i = end, steps = 0; i > 0 && steps < 8; i--, steps++) {
    if (pc >= u->funcs[i - 1].high) continue;
    chain[(*len)++] = u->funcs[i - 1].die;
    find_functions(&chain[0], pc, chain, len, 1);
    return;
  }
}

static int clamp_int(Dwarf_Word v) {
  return v > (Dwarf_Word)INT32_MAX ? 0 : (int)v;
}

/* ---- modules kept across symbolizers ----
 *
 * What is costly to read of a module (its symbols, its DWARF and separate
 * debug file, decompressed, and the indexes above) does not depend on
 * where a process mapped it. So a module that is costly to read (a file of
 * STORE_MIN_FILE bytes or more: libc, libm, a large program; a cell's
 * object is cheaper to read again than to keep) and that has a build-id is
 * read once into a Dwfl of its own, at its link-time addresses, and kept
 * in one store for the whole process, keyed by its build-id: every
 * symbolizer, of every process that maps it at whatever address (a
 * restarted worker, each rank of an MPI job), looks addresses up there,
 * less the load bias. Like the process's modules, a stored one holds no
 * descriptor of its file (find_elf_mapped); its debug file's, libdwfl
 * keeps open. The store holds at most STORE_MAX_MODULES modules
 * and STORE_MAX_BYTES of files (their sizes on disk: the module's and its
 * debug file's), and drops the least recently used beyond either. Every
 * string a lookup returns is the symbolizer's own copy, so a module can be
 * dropped between lookups; one mutex covers the store and each lookup
 * that uses it. */

enum { STORE_MAX_MODULES = 32 };
#define STORE_MIN_FILE ((off_t)256 << 10)
#define STORE_MAX_BYTES ((uint64_t)512 << 20)

typedef struct stored {
  unsigned char build_id[64];
  int build_id_len;
  Dwfl *dwfl; /* this module alone */
  Dwfl_Module *mod;
  uint64_t bytes;
  uint64_t last_used;
} stored_t;

static struct {
  pthread_mutex_t lock;
  stored_t modules[STORE_MAX_MODULES];
  int n;
  uint64_t bytes, clock;
  fl_symbol_cache_stats_t stats;
} store = {.lock = PTHREAD_MUTEX_INITIALIZER};

static uint64_t file_size(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static void store_drop(int i) {
  stored_t *m = &store.modules[i];
  dwfl_getmodules(m->dwfl, module_index_free, NULL, 0);
  dwfl_end(m->dwfl);
  store.bytes -= m->bytes;
  store.stats.dropped++;
  store.modules[i] = store.modules[--store.n];
}

/* Drops the least recently used modules but keep's until both limits
 * hold. */
static void store_trim(const Dwfl *keep) {
  while (store.n > 1 && (store.n > STORE_MAX_MODULES - 1 || store.bytes > STORE_MAX_BYTES)) {
    int oldest = -1;
    for (int i = 0; i < store.n; i++)
      if (store.modules[i].dwfl != keep &&
          (oldest < 0 || store.modules[i].last_used < store.modules[oldest].last_used))
        oldest = i;
    if (oldest < 0) break;
    store_drop(oldest);
  }
}

/* The addresses pmod's loadable segments take at link time, from its
 * ELF's program headers. */
static bool link_range(Dwfl_Module *pmod, GElf_Addr *low, GElf_Addr *high) {
  Dwarf_Addr bias;
  Elf *elf = dwfl_module_getelf(pmod, &bias);
  size_t n;
  if (!elf || elf_getphdrnum(elf, &n) != 0) return false;
  bool any = false;
  for (size_t i = 0; i < n && i <= INT_MAX; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD) continue;
    GElf_Addr align = ph.p_align > 1 ? ph.p_align : 1;
    GElf_Addr lo = ph.p_vaddr & ~(align - 1), hi = ph.p_vaddr + ph.p_memsz;
    if (!any || lo < *low) *low = lo;
    if (!any || hi > *high) *high = hi;
    any = true;
  }
  return any && *low < *high;
}

/* The stored module of pmod (a module of a process's Dwfl, whose ELF file
 * is open), read now if it is new; NULL when pmod is not one to store: no
 * file, no build-id, a small file, or a file that no longer matches. */
static Dwfl_Module *store_get(Dwfl_Module *pmod) {
  const unsigned char *bits;
  GElf_Addr vaddr;
  const char *path = NULL;
  dwfl_module_info(pmod, NULL, NULL, NULL, NULL, NULL, &path, NULL);
  int len = dwfl_module_build_id(pmod, &bits, &vaddr);
  if (!path || len <= 0 || len > (int)sizeof store.modules[0].build_id) return NULL;
  for (int i = 0; i < store.n; i++) {
    stored_t *m = &store.modules[i];
    if (m->build_id_len == len && !memcmp(m->build_id, bits, (size_t)len)) {
      m->last_used = ++store.clock;
      store.stats.reused++;
      return m->mod;
    }
  }
  uint64_t bytes = file_size(path);
  if (bytes < (uint64_t)STORE_MIN_FILE) return NULL;
  /* Reported at its link-time addresses, and found as the process's
   * modules are (proc_callbacks: mapped, holding no descriptor). */
  GElf_Addr low = 0, high = 0;
  if (!link_range(pmod, &low, &high)) return NULL;
  Dwfl *dwfl = dwfl_begin(&proc_callbacks);
  if (!dwfl) return NULL;
  dwfl_report_begin(dwfl);
  Dwfl_Module *mod = dwfl_report_module(dwfl, path, low, high);
  Dwarf_Addr bias;
  const unsigned char *bits2;
  bool same = mod && dwfl_report_end(dwfl, NULL, NULL) == 0 && dwfl_module_getelf(mod, &bias) &&
              dwfl_module_build_id(mod, &bits2, &vaddr) == len && !memcmp(bits, bits2, (size_t)len);
  if (!same) {
    dwfl_getmodules(dwfl, module_index_free, NULL, 0);
    dwfl_end(dwfl);
    return NULL;
  }
  /* The debug file, found now, counts with the module. */
  const char *debug_path = NULL;
  if (dwfl_module_getdwarf(mod, &bias))
    dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug_path);
  if (debug_path && strcmp(debug_path, path) != 0) bytes += file_size(debug_path);
  stored_t *m = &store.modules[store.n++];
  *m = (stored_t){
      .build_id_len = len, .dwfl = dwfl, .mod = mod, .bytes = bytes, .last_used = ++store.clock};
  memcpy(m->build_id, bits, (size_t)len);
  store.bytes += bytes;
  store.stats.read++;
  store_trim(dwfl);
  return mod;
}

void fl_symbol_cache_stats(fl_symbol_cache_stats_t *stats) {
  pthread_mutex_lock(&store.lock);
  *stats = store.stats;
  stats->modules = (size_t)store.n;
  stats->bytes = store.bytes;
  pthread_mutex_unlock(&store.lock);
}

void fl_symbol_cache_clear(void) {
  pthread_mutex_lock(&store.lock);
  while (store.n > 0) store_drop(store.n - 1);
  store.stats = (fl_symbol_cache_stats_t){0};
  pthread_mutex_unlock(&store.lock);
}

/* Resolves addr (already pc - 1 for return addresses) and appends its frames
 * to the pool, innermost first: at least one. Returns the number appended. */
static size_t resolve(fl_symbolizer_t *sym, uint64_t addr) {
  size_t first = sym->pool_len;
  fl_frame_info_t base = {0};
  fl_frame_info_t frame;

  if (addr >= sym->vdso_lo && addr < sym->vdso_hi) {
    base.module = intern(sym, "[vdso]");
    pool_push(sym, &base);
    return sym->pool_len - first;
  }
  Dwfl_Module *mod = dwfl_addrmodule(sym->dwfl, addr);
  if (!mod) {
    pool_push(sym, &base);
    return sym->pool_len - first;
  }
  Dwarf_Addr start = 0, bias = 0;
  const char *module = dwfl_module_info(mod, NULL, &start, NULL, NULL, NULL, NULL, NULL);
  if (module && strncmp(module, "[vdso", 5) == 0) module = "[vdso]"; /* libdwfl: "[vdso: PID]" */
  base.module = intern(sym, module);
  /* Without the ELF file the bias is unknown; the start of the lowest
   * mapping is the bias of a shared object whose first segment is at 0. */
  bool have_elf = dwfl_module_getelf(mod, &bias) != NULL;
  base.module_base = have_elf ? bias : start;

  /* A stored module is looked up at its link-time addresses. */
  Dwfl_Module *stored = have_elf ? store_get(mod) : NULL;
  if (stored) {
    Dwarf_Addr stored_bias = 0;
    dwfl_module_getelf(stored, &stored_bias);
    addr = addr - bias + stored_bias;
    mod = stored;
  }

  const char *elf_name = elf_func_name(sym, mod, addr);

  Dwarf_Addr dwarf_bias = 0;
  Dwarf_Die cu_die;
  Dwarf_Die *cu = find_cu(mod, addr, &cu_die, &dwarf_bias);

  /* The innermost location, from the line table. */
  const char *file = NULL;
  int line = 0, col = 0;
  Dwarf_Line *dwarf_line = cu ? dwarf_getsrc_die(cu, addr - dwarf_bias) : NULL;
  if (dwarf_line) {
    file = file_name(sym, cu, dwarf_linesrc(dwarf_line, NULL, NULL));
    dwarf_lineno(dwarf_line, &line);
    dwarf_linecol(dwarf_line, &col);
  }

  Dwarf_Die chain[MAX_NESTED_FUNCTIONS];
  int nchain = 0;
  if (cu) unit_functions(mod, cu, addr - dwarf_bias, chain, &nchain);

  /* Innermost first, down to the nearest real function. */
  bool reached_subprogram = false;
  for (int i = nchain - 1; i >= 0 && !reached_subprogram; i--) {
    Dwarf_Die *die = &chain[i];
    /* The function's own body: one frame, the one outside, which takes
     * this one's location. */
    if (i > 0 && dwarf_tag(die) == DW_TAG_inlined_subroutine &&
        inlined_into_itself(die, &chain[i - 1]))
      continue;
    frame = base;
    /* An out-of-line function without a linkage name in DWARF (gcc gives
     * a lambda's none) is named by its ELF symbol where that is mangled. */
    const char *symbol = die_linkage_name(die);
    if (!symbol && dwarf_tag(die) != DW_TAG_inlined_subroutine) symbol = elf_name;
    set_name(sym, &frame, intern(sym, symbol),
             symbol ? intern(sym, die_name(die)) : scoped_name(sym, cu, die));
    frame.file = file;
    frame.line = line;
    frame.col = col;
    if (dwarf_tag(die) == DW_TAG_inlined_subroutine) {
      frame.inlined = true;
      /* The next frame out is where this one was inlined. */
      file = call_file(sym, die);
      line = clamp_int(die_udata(die, DW_AT_call_line));
      col = clamp_int(die_udata(die, DW_AT_call_column));
    } else {
      reached_subprogram = true;
      if (!frame.func) set_name(sym, &frame, intern(sym, elf_name), NULL);
    }
    pool_push(sym, &frame);
  }
  /* No DWARF (or inlined frames whose subprogram was not found): the
   * out-of-line function is the ELF symbol. */
  if (!reached_subprogram) {
    frame = base;
    set_name(sym, &frame, intern(sym, elf_name), NULL);
    frame.file = file;
    frame.line = line;
    frame.col = col;
    pool_push(sym, &frame);
  }
  return sym->pool_len - first;
}

/* ---- the symbolizer ---- */

/* Allocates a symbolizer with empty tables and an empty Dwfl; NULL with a
 * reason in err. */
static fl_symbolizer_t *symbolizer_alloc(char *err, size_t err_size) {
  fl_symbolizer_t *sym = fl__xcalloc(1, sizeof *sym);
  fl__index_init(&sym->lookup_index, 512);
  fl__index_init(&sym->named_index, 256);
  sym->dwfl = dwfl_begin(&proc_callbacks);
  if (!sym->dwfl) {
    snprintf(err, err_size, "cannot start libdwfl: %s", dwfl_errmsg(-1));
    fl_symbolizer_destroy(&sym);
  }
  return sym;
}

/* Describes a libdwfl report result: an errno when positive, else libdwfl's
 * own error. */
static void report_error(int rc, const char *what, char *err, size_t err_size) {
  snprintf(err, err_size, "%s: %s", what, rc > 0 ? strerror(rc) : dwfl_errmsg(-1));
}

fl_symbolizer_t *fl_symbolizer_new_from_maps(const char *maps_text, char *err, size_t err_size) {
  FILE *maps = NULL;
  fl_symbolizer_t *sym = symbolizer_alloc(err, err_size);
  if (!sym) return NULL;
  assert(maps_text);

  /* The lines of files alone: libdwfl reads a pseudo-file's mapping
   * ([vdso], [vvar], [stack]) from the live process, and from a text it
   * would give the [vdso]'s addresses to another module. The [vdso]'s range
   * is kept, to name its addresses. */
  fl__buf_t files = FL__BUF_INIT;
  for (const char *line = maps_text; *line;) {
    size_t n = strcspn(line, "\n");
    const char *path = memchr(line, '/', n);
    const char *pseudo = memchr(line, '[', n);
    unsigned long long lo, hi;
    if (pseudo && !path) {
      if (n - (size_t)(pseudo - line) >= 6 && !strncmp(pseudo, "[vdso]", 6) &&
          sscanf(line, "%llx-%llx", &lo, &hi) == 2) {
        sym->vdso_lo = lo;
        sym->vdso_hi = hi;
      }
    } else {
      fl__buf_add(&files, line, n);
      fl__buf_add(&files, "\n", 1);
    }
    line += n + (line[n] == '\n');
  }
  dwfl_report_begin(sym->dwfl);
  size_t len = files.len;
  if (len > 0) { /* fmemopen refuses an empty buffer on older glibc */
    maps = fmemopen(files.data, len, "r");
    if (!maps) {
      snprintf(err, err_size, "cannot read the maps text: %s", strerror(errno));
      goto fail;
    }
    int rc = dwfl_linux_proc_maps_report(sym->dwfl, maps);
    if (rc != 0) {
      report_error(rc, "cannot parse the maps text", err, err_size);
      goto fail;
    }
  }
  if (dwfl_report_end(sym->dwfl, NULL, NULL) != 0) {
    report_error(-1, "cannot report the modules", err, err_size);
    goto fail;
  }
  if (maps) fclose(maps);
  fl__buf_free(&files);
  return sym;

fail:
  if (maps) fclose(maps);
  fl__buf_free(&files);
  fl_symbolizer_destroy(&sym);
  return NULL;
}

/* dwfl_report_end's callback for a module no longer reported: its index
 * goes with it. Though declared void *, what libdwfl passes is the address
 * of the module's userdata, as to dwfl_getmodules's callbacks. */
static int module_removed(Dwfl_Module *mod, void *userdata, const char *name, Dwarf_Addr base,
                          void *arg) {
  return module_index_free(mod, userdata, name, base, arg);
}

/* Reports the modules of process pid to sym's Dwfl: those reported before
 * under the same name and range are kept, the others dropped. Returns 0,
 * or -1 with err. */
static int report_pid(fl_symbolizer_t *sym, int pid, char *err, size_t err_size) {
  dwfl_report_begin(sym->dwfl);
  int rc = dwfl_linux_proc_report(sym->dwfl, pid);
  if (rc != 0) {
    char what[64];
    snprintf(what, sizeof what, "cannot read the modules of process %d", pid);
    report_error(rc, what, err, err_size);
    dwfl_report_end(sym->dwfl, module_removed, NULL);
    return -1;
  }
  if (dwfl_report_end(sym->dwfl, module_removed, NULL) != 0) {
    report_error(-1, "cannot report the modules", err, err_size);
    return -1;
  }
  return 0;
}

void fl_symbolizer_name_files_as_written(fl_symbolizer_t *sym, bool written) {
  sym->names_as_written = written;
  memset(sym->file_names, 0, sizeof sym->file_names);
}

fl_symbolizer_t *fl_symbolizer_new_from_pid(int pid, char *err, size_t err_size) {
  fl_symbolizer_t *sym = symbolizer_alloc(err, err_size);
  if (sym && report_pid(sym, pid, err, err_size) < 0) fl_symbolizer_destroy(&sym);
  return sym;
}

int fl_symbolizer_lookup(fl_symbolizer_t *sym, uint64_t pc, bool is_return_address,
                         fl_frame_info_t *frames, int max) {
  assert(sym);
  if (max <= 0) return 0;
  assert(frames);

  const fl_frame_info_t *found;
  size_t count;
  const lookup_t *known = cache_get(sym, pc, is_return_address);
  if (known) {
    found = &sym->pool[known->first];
    count = known->count;
  } else {
    /* The call instruction ends just before the return address. */
    uint64_t addr = is_return_address && pc > 0 ? pc - 1 : pc;
    size_t first = sym->pool_len;
    pthread_mutex_lock(&store.lock);
    count = resolve(sym, addr);
    pthread_mutex_unlock(&store.lock);
    found = &sym->pool[first];
    cache_put(sym, &(lookup_t){.pc = pc,
                               .first = (uint32_t)first,
                               .count = (uint32_t)count,
                               .is_return_address = is_return_address});
  }
  if (count > (size_t)max) count = (size_t)max;
  memcpy(frames, found, count * sizeof *frames);
  return (int)count;
}

int fl_symbolizer_refresh_from_pid(fl_symbolizer_t *sym, int pid, char *err, size_t err_size) {
  assert(sym);
  /* Addresses may belong to other modules now: forget every lookup. */
  fl__index_clear(&sym->lookup_index);
  sym->n_lookups = 0;
  sym->pool_len = 0;
  return report_pid(sym, pid, err, err_size);
}

void fl_symbolizer_destroy(fl_symbolizer_t **symp) {
  if (!symp || !*symp) return;
  fl_symbolizer_t *sym = *symp;
  if (sym->dwfl) {
    dwfl_getmodules(sym->dwfl, module_index_free, NULL, 0);
    dwfl_end(sym->dwfl);
  }
  fl__strset_free(&sym->strings);
  free(sym->named);
  fl__index_free(&sym->named_index);
  free(sym->lookups);
  fl__index_free(&sym->lookup_index);
  free(sym->pool);
  free(sym);
  *symp = NULL;
}
