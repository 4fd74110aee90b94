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
 * searches where those are slow or missing (fl_symbol_index.c).
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

#include "fl__demangle.h"
#include "fl__symbol.h"

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
    sym->named[sym->n_named] =
        (named_t){symbol, readable ? fl__symbol_intern(sym, readable) : NULL};
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
  const char *key = fl__symbol_intern(sym, path);
  size_t slot = (size_t)(fl__mix64((uint64_t)(uintptr_t)key) % (FL__ARRAY_SIZE(sym->file_names)));
  if (sym->file_names[slot].path == key) return sym->file_names[slot].name;
  const char *name = strip_comp_dir(cu, path);
  if (name != path && !sym->names_as_written && access(path, F_OK) == 0) name = path;
  sym->file_names[slot].path = key;
  sym->file_names[slot].name = fl__symbol_intern(sym, name);
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
    return fl__symbol_intern(sym, name);
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
  const char *scoped = fl__symbol_intern(sym, q.data);
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

static int clamp_int(Dwarf_Word v) {
  return v > (Dwarf_Word)INT32_MAX ? 0 : (int)v;
}

/* ---- modules kept across symbolizers ----
 *
 * What is costly to read of a module (its symbols, its DWARF and separate
 * debug file, decompressed, and fl_symbol_index.c's indexes) does not depend on
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
  dwfl_getmodules(m->dwfl, fl__symbol_index_free, NULL, 0);
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
    dwfl_getmodules(dwfl, fl__symbol_index_free, NULL, 0);
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
    base.module = fl__symbol_intern(sym, "[vdso]");
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
  base.module = fl__symbol_intern(sym, module);
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

  const char *elf_name = fl__symbol_elf_func_name(sym, mod, addr);

  Dwarf_Addr dwarf_bias = 0;
  Dwarf_Die cu_die;
  Dwarf_Die *cu = fl__symbol_find_cu(mod, addr, &cu_die, &dwarf_bias);

  /* The innermost location, from the line table. */
  const char *file = NULL;
  int line = 0, col = 0;
  Dwarf_Line *dwarf_line = cu ? dwarf_getsrc_die(cu, addr - dwarf_bias) : NULL;
  if (dwarf_line) {
    file = file_name(sym, cu, dwarf_linesrc(dwarf_line, NULL, NULL));
    dwarf_lineno(dwarf_line, &line);
    dwarf_linecol(dwarf_line, &col);
  }

  Dwarf_Die chain[FL__SYMBOL_MAX_NESTED];
  int nchain = 0;
  if (cu) fl__symbol_unit_functions(mod, cu, addr - dwarf_bias, chain, &nchain);

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
    set_name(sym, &frame, fl__symbol_intern(sym, symbol),
             symbol ? fl__symbol_intern(sym, die_name(die)) : scoped_name(sym, cu, die));
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
      if (!frame.func) set_name(sym, &frame, fl__symbol_intern(sym, elf_name), NULL);
    }
    pool_push(sym, &frame);
  }
  /* No DWARF (or inlined frames whose subprogram was not found): the
   * out-of-line function is the ELF symbol. */
  if (!reached_subprogram) {
    frame = base;
    set_name(sym, &frame, fl__symbol_intern(sym, elf_name), NULL);
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
  return fl__symbol_index_free(mod, userdata, name, base, arg);
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
    dwfl_getmodules(sym->dwfl, fl__symbol_index_free, NULL, 0);
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
