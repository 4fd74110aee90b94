/* SPDX-License-Identifier: BSD-3-Clause */
/* Tests fl_symbol against a real shared object: a cell-like C file is
 * compiled at run time with `#line 1 "cell[7]"`, an asm-labelled function and
 * an always_inline helper, loaded with dlopen, and the return addresses it
 * records are symbolized from this process's own /proc/self/maps. Its
 * procedure linkage table's stubs are named as objdump names them, in the
 * linker's plain layout and in its layout for indirect branch tracking. */
#define _GNU_SOURCE
#include "cflame/fl_symbol.h"

#include <dirent.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"
#include "fl__common.h"

/* Line numbers below count from the #line directive: the line after it is 1.
 * The probe is exported, so -fPIC calls it through the PLT and cannot inline
 * it; it records its return address, which lies in work() (ra[0]) or in
 * helper() inlined into work() (ra[1]). */
static const char cell_source[] =
    "#line 1 \"cell[7]\"\n"
    "int work(int) __asm__(\"cflame_c7_work\");\n"                       /* 1 */
    "void *cflame_c7_ra[2];\n"                                           /* 2 */
    "__attribute__((noinline)) void cflame_c7_probe(int i) {\n"          /* 3 */
    "  cflame_c7_ra[i] = __builtin_return_address(0);\n"                 /* 4 */
    "  __asm__ volatile(\"\" ::: \"memory\");\n"                         /* 5 */
    "}\n"                                                                /* 6 */
    "static inline __attribute__((always_inline)) int helper(int x) {\n" /* 7 */
    "  cflame_c7_probe(1);\n"                                            /* 8 */
    "  return x * 3;\n"                                                  /* 9 */
    "}\n"                                                                /* 10 */
    "int work(int x) {\n"                                                /* 11 */
    "  cflame_c7_probe(0);\n"                                            /* 12 */
    "  return helper(x) + 1;\n"                                          /* 13 */
    "}\n";                                                               /* 14 */
enum { LINE_HELPER_CALL = 8, LINE_WORK = 11, LINE_WORK_CALL = 12, LINE_WORK_INLINE = 13 };

#define SO_NAME "libcflame_test_cell7.so"
#define NODEBUG_SO_NAME "libcflame_test_cell7_nodebug.so"
#define IBT_SO_NAME "libcflame_test_cell7_ibt.so"
#define LINKED_SO_NAME "libcflame_test_cell7_linked.so"

static char dir[] = "/tmp/cflame_test_symbol.XXXXXX";
static char src_path[256], so_path[256], nodebug_so_path[256], ibt_so_path[256],
    linked_so_path[256];

/* Writes the cell into dir and compiles it twice, with and without debug
 * information, and a third time with its debug information split into a
 * file beside it that its .gnu_debuglink names (objcopy's recipe, which no
 * build-id lookup finds); returns 0 or -1. Compiles it a fourth time with
 * the PLT of indirect branch tracking (.plt.sec), when the toolchain can:
 * else ibt_so_path is "". */
static int build_cell(void) {
  char cmd[1024];
  const char *cc = getenv("CC");
  if (!cc || !*cc) cc = "cc";
  if (!mkdtemp(dir)) return -1;
  snprintf(src_path, sizeof src_path, "%s/cell7.c", dir);
  snprintf(so_path, sizeof so_path, "%s/" SO_NAME, dir);
  snprintf(nodebug_so_path, sizeof nodebug_so_path, "%s/" NODEBUG_SO_NAME, dir);
  FILE *f = fopen(src_path, "w");
  if (!f) return -1;
  fputs(cell_source, f);
  if (fclose(f) != 0) return -1;
  snprintf(cmd, sizeof cmd, "%s -O2 -g -shared -fPIC -o '%s' '%s'", cc, so_path, src_path);
  if (system(cmd) != 0) return -1;
  snprintf(cmd, sizeof cmd, "%s -O2 -g0 -shared -fPIC -o '%s' '%s'", cc, nodebug_so_path, src_path);
  if (system(cmd) != 0) return -1;
  snprintf(linked_so_path, sizeof linked_so_path, "%s/" LINKED_SO_NAME, dir);
  snprintf(cmd, sizeof cmd,
           "%s -O2 -g -shared -fPIC -o '%s' '%s' && cd '%s' && "
           "objcopy --only-keep-debug " LINKED_SO_NAME " " LINKED_SO_NAME ".debug && "
           "objcopy --strip-debug --add-gnu-debuglink=" LINKED_SO_NAME ".debug " LINKED_SO_NAME,
           cc, linked_so_path, src_path, dir);
  if (system(cmd) != 0) return -1;
  snprintf(ibt_so_path, sizeof ibt_so_path, "%s/" IBT_SO_NAME, dir);
  snprintf(cmd, sizeof cmd,
           "%s -O2 -g -shared -fPIC -fcf-protection=full -Wl,-z,ibtplt -o '%s' '%s' 2>/dev/null",
           cc, ibt_so_path, src_path);
  if (system(cmd) != 0) ibt_so_path[0] = '\0';
  return 0;
}

/* Returns a new string with the text of /proc/self/maps, or NULL. */
/* Removes dir and what the compiler left in it (.dwo files with
 * CC="gcc -gsplit-dwarf", say). */
static void remove_dir(void) {
  char path[512];
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d)))
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
      }
    closedir(d);
  }
  rmdir(dir);
}

static char *read_self_maps(void) {
  char buf[4096], *text = NULL;
  size_t n, len = 0;
  FILE *in = fopen("/proc/self/maps", "r");
  if (!in) return NULL;
  FILE *out = open_memstream(&text, &len);
  if (out) {
    while ((n = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, n, out);
    fclose(out);
  }
  fclose(in);
  return text;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = s ? strlen(s) : 0, m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* What the tests look up: the cell's code loaded in this process three
 * ways, libc's qsort, and the symbolizer of this process's maps that the
 * tests share (one after the other, in main's order). */
static struct {
  void *so, *nodebug_so, *linked_so, *ibt_so, *libc;
  uint64_t work_pc, ra_work, ra_helper; /* work()'s entry, and the probe's return addresses */
  void *nodebug_work, *linked_work, *ibt_work, *qsort_pc;
  char *maps;
  fl_symbolizer_t *sym;
} fx;

enum { AT_WORK_ENTRY, AT_RA_WORK, AT_RA_HELPER };

static uint64_t address_of(int at) {
  return at == AT_WORK_ENTRY ? fx.work_pc : at == AT_RA_WORK ? fx.ra_work : fx.ra_helper;
}

/* The lookups every symbolizer must answer so on the loaded cell: the
 * entry of work() (not a return address: the DWARF name, the line of its
 * definition), a call made directly from work(), and one made from
 * helper(), inlined into work(), innermost first. Every frame is in the
 * cell's file and in its module. */
static const struct cell_case {
  int at;
  bool is_return;
  int n;
  struct {
    const char *func;
    int line;
    bool inlined;
  } frames[2];
} cell_cases[] = {
    {AT_WORK_ENTRY, false, 1, {{"work", LINE_WORK, false}}},
    {AT_RA_WORK, true, 1, {{"work", LINE_WORK_CALL, false}}},
    {AT_RA_HELPER,
     true,
     2,
     {{"helper", LINE_HELPER_CALL, true}, {"work", LINE_WORK_INLINE, false}}},
};

static void check_cell(fl_symbolizer_t *sym) {
  for (size_t i = 0; i < FL__ARRAY_SIZE(cell_cases); i++) {
    const struct cell_case *c = &cell_cases[i];
    fl_frame_info_t fr[8];
    uint64_t pc = address_of(c->at);
    int n = fl_symbolizer_lookup(sym, pc, c->is_return, fr, 8);
    CHECK_INT(n, c->n);
    for (int k = 0; k < c->n && k < n; k++) {
      CHECK_STR(fr[k].func, c->frames[k].func);
      CHECK_STR(fr[k].file, "cell[7]");
      CHECK_INT(fr[k].line, c->frames[k].line);
      CHECK_INT(fr[k].inlined, c->frames[k].inlined);
      if (k == 0)
        CHECK(ends_with(fr[0].module, "/" SO_NAME));
      else
        CHECK(fr[k].module == fr[0].module);
    }
    if (!c->is_return) CHECK(fr[0].module_base != 0 && fr[0].module_base <= pc);
  }
}

/* Checks the stubs of the PLT sections of the shared object at path, whose
 * load bias is bias, against objdump's names: each stub "NAME@plt" is
 * NAME@plt at its first and a later byte, and the head of .plt (the lazy
 * resolver's entry) is "[plt]". Returns the number of stubs checked. */
static int check_plt(fl_symbolizer_t *sym, const char *path, uint64_t bias) {
  char cmd[600], line[512], label[256];
  snprintf(cmd, sizeof cmd, "objdump -d -j .plt -j .plt.sec -j .plt.got '%s' 2>/dev/null", path);
  FILE *p = popen(cmd, "r");
  if (!p) return 0;
  int stubs = 0;
  bool in_plt = false, head_seen = false;
  while (fgets(line, sizeof line, p)) {
    unsigned long long addr;
    fl_frame_info_t fr[4];
    if (!strncmp(line, "Disassembly of section ", 23)) {
      in_plt = !strncmp(line + 23, ".plt:", 5);
      continue;
    }
    if (sscanf(line, "%llx <%255[^>]>:", &addr, label) != 2) continue;
    if (in_plt && !head_seen) {
      head_seen = true;
      CHECK_INT(fl_symbolizer_lookup(sym, bias + addr + 2, false, fr, 4), 1);
      CHECK_STR(fr[0].func, "[plt]");
      continue;
    }
    if (!ends_with(label, "@plt")) continue;
    for (int at = 0; at <= 4; at += 4) {
      CHECK_INT(fl_symbolizer_lookup(sym, bias + addr + (uint64_t)at, false, fr, 4), 1);
      CHECK_STR(fr[0].func, label);
      CHECK(ends_with(fr[0].module, path + strlen(dir)));
      CHECK(fr[0].file == NULL && !fr[0].inlined);
    }
    stubs++;
  }
  pclose(p);
  CHECK(head_seen);
  return stubs;
}

/* A child process that holds the libraries the way the worker holds cells,
 * for the refresh test: a symbolizer maps the files it reads, and in the
 * process it symbolizes those mappings would show as modules of their own.
 * Commands on cmd, answers on ans: 'c' closes the library without debug
 * information (answers 0), 'o' opens it again (answers its work function's
 * address), 'q' ends the child. */
static pid_t start_holder(void *nodebug_so, int *cmd, int *ans) {
  int to[2], from[2];
  if (pipe(to) < 0 || pipe(from) < 0) return -1;
  pid_t pid = fork();
  if (pid != 0) {
    close(to[0]);
    close(from[1]);
    *cmd = to[1];
    *ans = from[0];
    return pid;
  }
  close(to[1]);
  close(from[0]);
  char c;
  while (read(to[0], &c, 1) == 1 && c != 'q') {
    uint64_t reply = 0;
    if (c == 'c' && nodebug_so) {
      dlclose(nodebug_so);
      nodebug_so = NULL;
    } else if (c == 'o') {
      nodebug_so = dlopen(nodebug_so_path, RTLD_NOW | RTLD_LOCAL);
      void *work = nodebug_so ? dlsym(nodebug_so, "cflame_c7_work") : NULL;
      reply = (uint64_t)(uintptr_t)work;
    }
    if (write(from[1], &reply, sizeof reply) != sizeof reply) break;
  }
  _exit(0);
}

static uint64_t ask_holder(int cmd, int ans, char c) {
  uint64_t reply = UINT64_MAX;
  if (write(cmd, &c, 1) != 1 || read(ans, &reply, sizeof reply) != sizeof reply) return UINT64_MAX;
  return reply;
}

/* Compiles and loads the cell three ways, finds libc's qsort, and makes
 * the symbolizer of this process's maps. Returns false when there is
 * nothing to test. */
static bool setup(void) {
  char err[256] = "";
  if (build_cell() != 0) {
    fprintf(stderr, "cannot compile the test cell in %s\n", dir);
    return false;
  }
  fx.so = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
  if (!fx.so) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return false;
  }
  int (*work)(int) = (int (*)(int))dlsym(fx.so, "cflame_c7_work");
  void **ra = dlsym(fx.so, "cflame_c7_ra");
  CHECK(work != NULL);
  CHECK(ra != NULL);
  CHECK(dlsym(fx.so, "work") == NULL); /* only the asm label is a symbol */
  if (!work || !ra) return false;
  CHECK_INT(work(2), 7);
  fx.work_pc = (uint64_t)(uintptr_t)work;
  fx.ra_work = (uint64_t)(uintptr_t)ra[0];
  fx.ra_helper = (uint64_t)(uintptr_t)ra[1];

  /* The same code without DWARF: only its ELF symbol table. */
  fx.nodebug_so = dlopen(nodebug_so_path, RTLD_NOW | RTLD_LOCAL);
  CHECK(fx.nodebug_so != NULL);
  fx.nodebug_work = fx.nodebug_so ? dlsym(fx.nodebug_so, "cflame_c7_work") : NULL;
  CHECK(fx.nodebug_work != NULL && fx.nodebug_work != (void *)work);

  /* The same code with its DWARF in a file of its own. */
  fx.linked_so = dlopen(linked_so_path, RTLD_NOW | RTLD_LOCAL);
  CHECK(fx.linked_so != NULL);
  fx.linked_work = fx.linked_so ? dlsym(fx.linked_so, "cflame_c7_work") : NULL;
  CHECK(fx.linked_work != NULL);

  /* The same code with the PLT of indirect branch tracking. */
  fx.ibt_so = ibt_so_path[0] ? dlopen(ibt_so_path, RTLD_NOW | RTLD_LOCAL) : NULL;
  fx.ibt_work = fx.ibt_so ? dlsym(fx.ibt_so, "cflame_c7_work") : NULL;
  CHECK(!ibt_so_path[0] || fx.ibt_work != NULL);
  if (!ibt_so_path[0])
    fprintf(stderr, "  (no -fcf-protection -z ibtplt here: .plt.sec not tested)\n");

  /* libc's own qsort (not a sanitizer's interceptor or a PLT entry). */
  fx.libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  fx.qsort_pc = fx.libc ? dlsym(fx.libc, "qsort") : NULL;
  CHECK(fx.qsort_pc != NULL);

  fx.maps = read_self_maps();
  CHECK(fx.maps != NULL);
  fx.sym = fl_symbolizer_new_from_maps(fx.maps ? fx.maps : "", err, sizeof err);
  CHECK(fx.sym != NULL);
  if (!fx.sym) fprintf(stderr, "fl_symbolizer_new_from_maps: %s\n", err);
  return fx.sym != NULL;
}

static void teardown(void) {
  fl_symbolizer_destroy(&fx.sym);
  free(fx.maps);
  if (fx.libc) dlclose(fx.libc);
  if (fx.ibt_so) dlclose(fx.ibt_so);
  if (fx.nodebug_so) dlclose(fx.nodebug_so);
  if (fx.linked_so) dlclose(fx.linked_so);
  if (fx.so) dlclose(fx.so);
  remove_dir();
}

static void test_cell(void) {
  check_cell(fx.sym);
}

/* The cache: the same frames, the same pointers. */
static void test_cache(void) {
  fl_frame_info_t fr[8], again[8];
  int n = fl_symbolizer_lookup(fx.sym, fx.ra_helper, true, fr, 8);
  int n2 = fl_symbolizer_lookup(fx.sym, fx.ra_helper, true, again, 8);
  CHECK_INT(n2, n);
  CHECK(memcmp(fr, again, (size_t)n * sizeof fr[0]) == 0);
  CHECK(fr[0].func == again[0].func && fr[0].file == again[0].file);
}

/* A return address is looked up at pc - 1, not pc. */
static void test_return_address(void) {
  fl_frame_info_t fr[8], again[8];
  CHECK(fl_symbolizer_lookup(fx.sym, fx.ra_work, false, fr, 8) >= 1);
  CHECK(fl_symbolizer_lookup(fx.sym, fx.ra_work + 1, true, again, 8) >= 1);
  CHECK(fr[0].line == again[0].line && fr[0].func == again[0].func);
}

/* max bounds the frames, innermost first. */
static void test_max(void) {
  fl_frame_info_t fr[8];
  CHECK_INT(fl_symbolizer_lookup(fx.sym, fx.ra_helper, true, fr, 1), 1);
  CHECK_STR(fr[0].func, "helper");
  CHECK_INT(fl_symbolizer_lookup(fx.sym, fx.ra_helper, true, fr, 0), 0);
}

/* Without debug information: the ELF symbol (the asm label), no line. */
static void test_nodebug(void) {
  fl_frame_info_t fr[8];
  if (!fx.nodebug_work) return;
  CHECK_INT(fl_symbolizer_lookup(fx.sym, (uint64_t)(uintptr_t)fx.nodebug_work, false, fr, 8), 1);
  CHECK_STR(fr[0].func, "cflame_c7_work");
  CHECK_STR(fr[0].file, NULL);
  CHECK_INT(fr[0].line, 0);
  CHECK(!fr[0].inlined);
  CHECK(ends_with(fr[0].module, "/" NODEBUG_SO_NAME));
}

/* A debug file named by the module's .gnu_debuglink, beside it, with no
 * debuginfod server configured: found (DWARF's name for work(), its cell
 * and line). */
static void test_debuglink(void) {
  fl_frame_info_t fr[8];
  if (!fx.linked_work) return;
  CHECK(fl_symbolizer_lookup(fx.sym, (uint64_t)(uintptr_t)fx.linked_work, false, fr, 8) >= 1);
  CHECK_STR(fr[0].func, "work");
  CHECK_STR(fr[0].file, "cell[7]");
  CHECK_INT(fr[0].line, LINE_WORK);
  CHECK(ends_with(fr[0].module, "/" LINKED_SO_NAME));
}

/* With DEBUGINFOD_URLS unset (main), a module with no local debug file
 * (nodebug's) does not bring libdwfl's debuginfod client, and libcurl with
 * it, into the process. */
static void test_no_debuginfod(void) {
  char *maps = read_self_maps();
  CHECK(maps != NULL);
  if (!maps) return;
  CHECK(strstr(maps, "libdebuginfod") == NULL);
  CHECK(strstr(maps, "libcurl") == NULL);
  free(maps);
}

/* Two functions in assembly without .size, as hand-written assembly often
 * is: each holds the code up to the next symbol. */
__asm__(
    ".text\n"
    ".globl cflame_test_sizeless_a\n"
    ".type cflame_test_sizeless_a, @function\n"
    "cflame_test_sizeless_a:\n"
    "  nop\n  nop\n  nop\n  ret\n"
    ".globl cflame_test_sizeless_b\n"
    ".type cflame_test_sizeless_b, @function\n"
    "cflame_test_sizeless_b:\n"
    "  nop\n  ret\n");
extern void cflame_test_sizeless_a(void), cflame_test_sizeless_b(void);

static void test_sizeless(void) {
  fl_frame_info_t fr[8];
  uint64_t a = (uint64_t)(uintptr_t)cflame_test_sizeless_a;
  uint64_t b = (uint64_t)(uintptr_t)cflame_test_sizeless_b;
  CHECK_INT(b - a, 4);
  CHECK_INT(fl_symbolizer_lookup(fx.sym, a + 2, false, fr, 8), 1);
  CHECK_STR(fr[0].func, "cflame_test_sizeless_a");
  CHECK_INT(fl_symbolizer_lookup(fx.sym, b + 1, false, fr, 8), 1);
  CHECK_STR(fr[0].func, "cflame_test_sizeless_b");
  CHECK(fr[0].system_name == NULL);
}

/* fx.maps with libc's lines moved by shift: libc as another process (a
 * restarted worker) maps it. New string. */
static char *maps_with_libc_moved(uint64_t shift) {
  char *out = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&out, &len);
  const char *line = fx.maps;
  while (*line) {
    const char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) : strlen(line);
    unsigned long lo, hi;
    int used = 0;
    if (memmem(line, n, "/libc.so.6", 10) && sscanf(line, "%lx-%lx%n", &lo, &hi, &used) == 2)
      fprintf(m, "%lx-%lx%.*s\n", lo + shift, hi + shift, (int)(n - (size_t)used), line + used);
    else
      fprintf(m, "%.*s\n", (int)n, line);
    line += n + (end ? 1 : 0);
  }
  fclose(m);
  return out;
}

/* libc read once for every symbolizer, wherever a process maps it: a
 * second symbolizer, with libc elsewhere, reuses the stored module and
 * answers the same, at its own addresses. */
static void test_store(void) {
  char err[256];
  fl_frame_info_t fr[8], moved[8];
  const uint64_t shift = 0x40000000;
  if (!fx.qsort_pc) return;
  fl_symbol_cache_clear();
  fl_symbolizer_t *a = fl_symbolizer_new_from_maps(fx.maps, err, sizeof err);
  char *maps = maps_with_libc_moved(shift);
  fl_symbolizer_t *b = fl_symbolizer_new_from_maps(maps, err, sizeof err);
  CHECK(a && b);
  if (!a || !b) goto out;
  uint64_t pc = (uint64_t)(uintptr_t)fx.qsort_pc;
  int n = fl_symbolizer_lookup(a, pc, false, fr, 8);
  fl_symbol_cache_stats_t st, st2;
  fl_symbol_cache_stats(&st);
  CHECK_INT(st.read, 1); /* libc, the one module looked up */
  CHECK_INT(st.modules, 1);
  CHECK(st.bytes >= 256 << 10);
  CHECK_INT(fl_symbolizer_lookup(b, pc + shift, false, moved, 8), n);
  fl_symbol_cache_stats(&st2);
  CHECK_INT(st2.read, 1);
  CHECK(st2.reused > st.reused);
  for (int i = 0; i < n; i++) {
    CHECK_STR(moved[i].func, fr[i].func);
    CHECK_STR(moved[i].file, fr[i].file);
    CHECK_INT(moved[i].line, fr[i].line);
    CHECK_STR(moved[i].module, fr[i].module);
    CHECK_INT(moved[i].module_base, fr[i].module_base + shift);
  }
  CHECK_STR(moved[n - 1].func, "qsort");
  /* Cleared, it is read again, and answers the same. */
  fl_symbol_cache_clear();
  fl_symbolizer_destroy(&b);
  b = fl_symbolizer_new_from_maps(maps, err, sizeof err);
  CHECK_INT(fl_symbolizer_lookup(b, pc + shift, false, moved, 8), n);
  CHECK_STR(moved[n - 1].func, "qsort");
  fl_symbol_cache_stats(&st);
  CHECK_INT(st.read, 1);
out:
  free(maps);
  fl_symbolizer_destroy(&a);
  fl_symbolizer_destroy(&b);
}

/* libc, with or without its debug info: a name and the module. */
static void test_libc(void) {
  fl_frame_info_t fr[8];
  if (!fx.qsort_pc) return;
  int n = fl_symbolizer_lookup(fx.sym, (uint64_t)(uintptr_t)fx.qsort_pc, false, fr, 8);
  CHECK(n >= 1);
  if (n < 1) return;
  CHECK(fr[n - 1].func != NULL);
  CHECK(fr[n - 1].func && strstr(fr[n - 1].func, "qsort") != NULL);
  CHECK(fr[0].module && strstr(fr[0].module, "libc.so") != NULL);
  CHECK(!fr[n - 1].inlined);
}

/* work() calls the exported probe through the PLT: the call's target, a
 * stub, is named after the probe. The other stubs are as objdump names
 * them (the probe's, and __cxa_finalize's in .plt.got). */
static void test_plt(void) {
  fl_frame_info_t fr[8];
  const unsigned char *call = (const unsigned char *)(uintptr_t)(fx.ra_work - 5);
  CHECK_INT(call[0], 0xe8);
  if (call[0] == 0xe8) {
    int32_t rel;
    memcpy(&rel, call + 1, sizeof rel);
    CHECK_INT(fl_symbolizer_lookup(fx.sym, fx.ra_work + (uint64_t)(int64_t)rel, false, fr, 8), 1);
    CHECK_STR(fr[0].func, "cflame_c7_probe@plt");
  }
  CHECK_INT(fl_symbolizer_lookup(fx.sym, fx.work_pc, false, fr, 8), 1);
  CHECK(check_plt(fx.sym, so_path, fr[0].module_base) >= 2);
  if (fx.ibt_work) {
    CHECK_INT(fl_symbolizer_lookup(fx.sym, (uint64_t)(uintptr_t)fx.ibt_work, false, fr, 8), 1);
    CHECK(ends_with(fr[0].module, "/" IBT_SO_NAME));
    CHECK(check_plt(fx.sym, ibt_so_path, fr[0].module_base) >= 2);
  }
}

/* Nothing is mapped at 0x10, nor at 0; then the shared symbolizer goes. */
static void test_unmapped(void) {
  fl_frame_info_t fr[8];
  memset(fr, 0xff, sizeof fr);
  CHECK_INT(fl_symbolizer_lookup(fx.sym, 0x10, false, fr, 8), 1);
  CHECK(fr[0].func == NULL);
  CHECK(fr[0].file == NULL);
  CHECK(fr[0].module == NULL);
  CHECK_INT(fr[0].line, 0);
  CHECK(!fr[0].inlined);
  CHECK_INT(fl_symbolizer_lookup(fx.sym, 0, true, fr, 8), 1);
  CHECK(fr[0].func == NULL);

  fl_symbolizer_destroy(&fx.sym);
  CHECK(fx.sym == NULL);
  fl_symbolizer_destroy(&fx.sym); /* harmless twice */
}

/* The same from the live process. */
static void test_from_pid(void) {
  char err[256] = "";
  fl_symbolizer_t *sym = fl_symbolizer_new_from_pid(getpid(), err, sizeof err);
  CHECK(sym != NULL);
  if (sym) check_cell(sym);
  fl_symbolizer_destroy(&sym);
}

/* Refreshed as a process changes (a child holding the same libraries, as
 * the worker holds cells): what is still mapped answers as before; an
 * unloaded module answers nothing, even at an address looked up before
 * (the lookups are forgotten); a module loaded again is found again. */
static void test_refresh(void) {
  char err[256] = "";
  fl_frame_info_t fr[8], again[8];
  fl_symbolizer_t *sym = NULL;
  int cmd = -1, ans = -1;
  pid_t holder = fx.nodebug_work ? start_holder(fx.nodebug_so, &cmd, &ans) : -1;
  CHECK(!fx.nodebug_work || holder > 0);
  sym = holder > 0 ? fl_symbolizer_new_from_pid(holder, err, sizeof err) : NULL;
  CHECK(!fx.nodebug_work || sym != NULL);
  if (sym) {
    uint64_t old_pc = (uint64_t)(uintptr_t)fx.nodebug_work;
    CHECK_INT(fl_symbolizer_lookup(sym, old_pc, false, fr, 8), 1);
    CHECK_STR(fr[0].func, "cflame_c7_work");
    CHECK_INT(fl_symbolizer_refresh_from_pid(sym, holder, err, sizeof err), 0);
    check_cell(sym);
    CHECK(ask_holder(cmd, ans, 'c') == 0);
    CHECK_INT(fl_symbolizer_refresh_from_pid(sym, holder, err, sizeof err), 0);
    /* The old address answers as a new symbolizer of the process does
     * (not necessarily nothing: another module's range may now take it
     * in), never with the closed library. */
    CHECK_INT(fl_symbolizer_lookup(sym, old_pc, false, fr, 8), 1);
    CHECK(!ends_with(fr[0].module, "/" NODEBUG_SO_NAME));
    CHECK(!fr[0].func || strcmp(fr[0].func, "cflame_c7_work") != 0);
    fl_symbolizer_t *fresh = fl_symbolizer_new_from_pid(holder, err, sizeof err);
    CHECK(fresh != NULL);
    if (fresh) {
      CHECK_INT(fl_symbolizer_lookup(fresh, old_pc, false, again, 8), 1);
      CHECK(!fr[0].module == !again[0].module);
      CHECK(!fr[0].module || !strcmp(fr[0].module, again[0].module));
      CHECK(!fr[0].func == !again[0].func);
      CHECK(!fr[0].func || !strcmp(fr[0].func, again[0].func));
    }
    fl_symbolizer_destroy(&fresh);
    check_cell(sym);
    uint64_t reloaded = ask_holder(cmd, ans, 'o');
    CHECK(reloaded != 0 && reloaded != UINT64_MAX);
    CHECK_INT(fl_symbolizer_refresh_from_pid(sym, holder, err, sizeof err), 0);
    CHECK_INT(fl_symbolizer_lookup(sym, reloaded, false, fr, 8), 1);
    CHECK_STR(fr[0].func, "cflame_c7_work");
    CHECK(ends_with(fr[0].module, "/" NODEBUG_SO_NAME));
    /* A process that is gone: an error that says which. */
    err[0] = '\0';
    CHECK_INT(fl_symbolizer_refresh_from_pid(sym, 0x3ffffff0, err, sizeof err), -1);
    CHECK(strstr(err, "process") != NULL);
  }
  if (holder > 0) {
    ask_holder(cmd, ans, 'q');
    close(cmd);
    close(ans);
    waitpid(holder, NULL, 0);
  }
  fl_symbolizer_destroy(&sym);
}

/* Errors: a process that does not exist; empty maps are no modules. */
static void test_errors(void) {
  char err[256] = "";
  fl_frame_info_t fr[8];
  fl_symbolizer_t *sym;
  sym = fl_symbolizer_new_from_pid(0x3ffffff0, err, sizeof err);
  CHECK(sym == NULL);
  CHECK(err[0] != '\0');
  fl_symbolizer_destroy(&sym);
  sym = fl_symbolizer_new_from_maps("", err, sizeof err);
  CHECK(sym != NULL);
  if (sym) {
    CHECK_INT(fl_symbolizer_lookup(sym, fx.work_pc, false, fr, 8), 1);
    CHECK(fr[0].func == NULL && fr[0].module == NULL);
  }
  fl_symbolizer_destroy(&sym);
}

/* In this order: the first ones share fx.sym, which test_unmapped destroys. */
static const struct {
  const char *name;
  void (*run)(void);
} tests[] = {
    {"cell", test_cell},
    {"cache", test_cache},
    {"return address", test_return_address},
    {"max", test_max},
    {"nodebug", test_nodebug},
    {"debuglink", test_debuglink},
    {"no debuginfod", test_no_debuginfod},
    {"sizeless", test_sizeless},
    {"store", test_store},
    {"libc", test_libc},
    {"plt", test_plt},
    {"unmapped", test_unmapped},
    {"from pid", test_from_pid},
    {"refresh", test_refresh},
    {"errors", test_errors},
};

int main(void) {
  unsetenv("DEBUGINFOD_URLS"); /* no server: test_no_debuginfod */
  bool ready = setup();
  for (size_t i = 0; ready && i < FL__ARRAY_SIZE(tests); i++) {
    int failed = test_failures;
    tests[i].run();
    if (test_failures != failed) fprintf(stderr, "  in test \"%s\"\n", tests[i].name);
  }
  teardown();
  int status = TEST_DONE();
  return ready ? status : 1;
}
