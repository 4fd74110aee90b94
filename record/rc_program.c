/* SPDX-License-Identifier: BSD-3-Clause */
/* rc_program: finding and checking the program to record (see
 * rc_program.h). */
#define _GNU_SOURCE
#include "rc_program.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fl__common.h"

/* How deep #! scripts may nest (a script whose interpreter is a script),
 * as Linux allows. */
#define MAX_SCRIPT_DEPTH 4

/* The first executable regular file called name along PATH (new string),
 * or NULL. */
static char *search_path(const char *name) {
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path;;) {
    const char *colon = strchrnul(p, ':');
    /* An empty entry is the current directory, as execvp reads it. */
    char *full = fl__xasprintf("%.*s%s%s", (int)(colon - p), p, colon == p ? "" : "/", name);
    struct stat st;
    if (stat(full, &st) == 0 && S_ISREG(st.st_mode) && access(full, X_OK) == 0) return full;
    free(full);
    if (!*colon) return NULL;
    p = colon + 1;
  }
}

/* Checks the file at path (named shown in messages) that exec would run.
 * depth counts scripts on the way. Returns 0 or RC_* with err. */
static int check_file(const char *path, const char *shown, int depth, char *err, size_t err_size) {
  struct stat st;
  if (stat(path, &st) < 0) {
    snprintf(err, err_size, "%s: %s", shown, strerror(errno));
    return errno == ENOENT ? RC_NOT_FOUND : RC_CANNOT_RUN;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(err, err_size, "%s is a directory, not a program", shown);
    return RC_CANNOT_RUN;
  }
  if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
    snprintf(err, err_size, "%s is not an executable file (mode %04o)", shown,
             (unsigned)(st.st_mode & 07777));
    return RC_CANNOT_RUN;
  }
  if (st.st_mode & (S_ISUID | S_ISGID)) {
    snprintf(err, err_size,
             "%s is set-%s-ID (mode %04o): the dynamic loader ignores LD_PRELOAD for such a "
             "program, so cflame record cannot put its sampler in it; record a copy without "
             "that bit, or use perf record",
             shown, st.st_mode & S_ISUID ? "user" : "group", (unsigned)(st.st_mode & 07777));
    return RC_CANNOT_RUN;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, err_size, "cannot read %s: %s", shown, strerror(errno));
    return RC_CANNOT_RUN;
  }
  char head[256] = {0};
  ssize_t got = pread(fd, head, sizeof head - 1, 0);
  int rc = RC_CANNOT_RUN;
  if (got >= 2 && head[0] == '#' && head[1] == '!') {
    /* A script: exec runs its interpreter, the first word after "#!". */
    char *p = head + 2;
    p += strspn(p, " \t");
    size_t n = strcspn(p, " \t\r\n");
    p[n] = '\0';
    if (!n || depth >= MAX_SCRIPT_DEPTH) {
      snprintf(err, err_size, "%s is a script without an interpreter that can be run", shown);
      goto done;
    }
    char inner[512];
    if (check_file(p, p, depth + 1, inner, sizeof inner) != 0) {
      snprintf(err, err_size, "%s is a script for %s, which cannot be recorded: %s", shown, p,
               inner);
      goto done;
    }
    rc = 0;
    goto done;
  }
  Elf64_Ehdr eh;
  if (got < (ssize_t)sizeof eh || memcmp(head, ELFMAG, SELFMAG) != 0) {
    snprintf(err, err_size, "%s is neither an ELF executable nor a #! script", shown);
    goto done;
  }
  memcpy(&eh, head, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64) {
    snprintf(err, err_size,
             "%s is an ELF executable for another machine (%s-bit, e_machine %u), not x86-64",
             shown, eh.e_ident[EI_CLASS] == ELFCLASS64 ? "64" : "32", (unsigned)eh.e_machine);
    goto done;
  }
  bool interp = false;
  for (unsigned i = 0; i < eh.e_phnum && !interp; i++) {
    Elf64_Phdr ph;
    if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
        (ssize_t)sizeof ph)
      break;
    interp = ph.p_type == PT_INTERP;
  }
  if (!interp) {
    snprintf(err, err_size,
             "%s is statically linked (it names no program interpreter, PT_INTERP): cflame "
             "record preloads its sampler through the dynamic loader, which a static program "
             "does not run; link it dynamically (without -static), or record it with perf "
             "record",
             shown);
    goto done;
  }
  rc = 0;
done:
  close(fd);
  return rc;
}

int rc_program_find(const char *name, char **path, char *err, size_t err_size) {
  *path = NULL;
  if (!*name) {
    snprintf(err, err_size, "the program's name is empty");
    return RC_NOT_FOUND;
  }
  if (!strchr(name, '/')) {
    if (!(*path = search_path(name))) {
      snprintf(err, err_size, "%s: no such program in PATH (%s)", name,
               getenv("PATH") ? getenv("PATH") : "unset");
      return RC_NOT_FOUND;
    }
  } else {
    *path = fl__xstrdup(name);
  }
  int rc = check_file(*path, name, 0, err, err_size);
  if (rc) {
    free(*path);
    *path = NULL;
  }
  return rc;
}
