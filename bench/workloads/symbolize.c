/* SPDX-License-Identifier: BSD-3-Clause */
/* symbolize FILE N: the time fl_symbolizer takes to look up N distinct
 * addresses of FILE's code, spread evenly over its executable segments,
 * with a new symbolizer (nothing read yet: the first lookups read the
 * module's symbols, and its DWARF where it has some).
 *
 * The module is described as a process would map it (one maps line per
 * loadable segment: a shared object at 0x7f0000000000, an executable at
 * its own addresses), so the lookups go the way a profile's do. Prints one
 * line: "FILE N SECONDS FRAMES NAMED AGAIN", where FRAMES counts the frames
 * the lookups gave (inlined ones too), NAMED the lookups whose function was
 * known, and AGAIN is the time of the same lookups by a second new
 * symbolizer, which finds the module already read (fl_symbol_cache_stats),
 * as a restarted worker's profile does. Used by bench/bench_symbolize.py. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cflame/fl_symbol.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: symbolize FILE N\n");
    return 2;
  }
  const char *path = argv[1];
  long n = atol(argv[2]);
  elf_version(EV_CURRENT);
  int fd = open(path, O_RDONLY);
  Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ_MMAP, NULL) : NULL;
  GElf_Ehdr eh;
  size_t nph;
  if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph) != 0) {
    fprintf(stderr, "symbolize: %s: not an ELF file\n", path);
    return 1;
  }
  uint64_t base = eh.e_type == ET_DYN ? 0x7f0000000000u : 0;
  struct stat st; /* libdwfl takes a mapping without an inode for anonymous memory */
  fstat(fd, &st);
  char *maps = NULL;
  size_t maps_len = 0;
  FILE *m = open_memstream(&maps, &maps_len);
  uint64_t code_lo[16], code_hi[16], code_total = 0;
  int ncode = 0;
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD) continue;
    uint64_t lo = base + (ph.p_vaddr & ~0xfffu),
             hi = base + ((ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffu);
    bool exec = ph.p_flags & PF_X;
    fprintf(m, "%lx-%lx r%c%cp %08lx %02x:%02x %lu %s\n", (unsigned long)lo, (unsigned long)hi,
            ph.p_flags & PF_W ? 'w' : '-', exec ? 'x' : '-', (unsigned long)(ph.p_offset & ~0xfffu),
            major(st.st_dev), minor(st.st_dev), (unsigned long)st.st_ino, path);
    if (exec && ncode < 16) {
      code_lo[ncode] = base + ph.p_vaddr;
      code_hi[ncode] = base + ph.p_vaddr + ph.p_filesz;
      code_total += code_hi[ncode] - code_lo[ncode];
      ncode++;
    }
  }
  fclose(m);
  if (!code_total || n <= 0 || (uint64_t)n > code_total) {
    fprintf(stderr, "symbolize: %s: no code, or fewer bytes of it than %ld\n", path, n);
    return 1;
  }

  char err[256];
  double t[2];
  long frames = 0, named = 0;
  double step = (double)code_total / (double)n;
  for (int pass = 0; pass < 2; pass++) {
    double t0 = now();
    fl_symbolizer_t *sym = fl_symbolizer_new_from_maps(maps, err, sizeof err);
    if (!sym) {
      fprintf(stderr, "symbolize: %s\n", err);
      return 1;
    }
    frames = named = 0;
    for (long i = 0; i < n; i++) {
      uint64_t off = (uint64_t)((double)i * step), pc = 0;
      for (int s = 0; s < ncode; s++) {
        if (off < code_hi[s] - code_lo[s]) {
          pc = code_lo[s] + off;
          break;
        }
        off -= code_hi[s] - code_lo[s];
      }
      fl_frame_info_t info[16];
      int k = fl_symbolizer_lookup(sym, pc, false, info, 16);
      frames += k;
      named += k > 0 && info[k - 1].func != NULL;
    }
    t[pass] = now() - t0;
    fl_symbolizer_destroy(&sym);
  }
  printf("%s %ld %.6f %ld %ld %.6f\n", path, n, t[0], frames, named, t[1]);
  free(maps);
  elf_end(elf);
  close(fd);
  return 0;
}
