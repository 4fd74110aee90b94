/* SPDX-License-Identifier: BSD-3-Clause */
/* fl_symbol_index: the symbolizer's per-module indexes (fl__symbol.h).
 *
 * libdwfl finds an address's symbol by a linear scan of the whole symbol
 * table (most of an uncached lookup in libc), and its compilation unit
 * through .debug_aranges, which clang does not emit (and libdw 0.188 does not
 * make up from the units). So each module gets, on first need, sorted tables
 * of its function symbols, PLT stubs and units' address ranges, kept in the
 * module's libdwfl userdata and freed with the symbolizer. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fl__symbol.h"

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

int fl__symbol_index_free(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
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
                       .name = fl__symbol_intern(sym, callee ? name : FL_SYMBOL_PLT_HEAD)};
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
const char *fl__symbol_elf_func_name(fl_symbolizer_t *sym, Dwfl_Module *mod, uint64_t addr) {
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
Dwarf_Die *fl__symbol_find_cu(Dwfl_Module *mod, uint64_t addr, Dwarf_Die *cu, Dwarf_Addr *bias) {
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

enum { MAX_SCOPE_DEPTH = 256 };

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
        if (*len < FL__SYMBOL_MAX_NESTED) chain[(*len)++] = child;
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
void fl__symbol_unit_functions(Dwfl_Module *mod, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *chain,
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
