/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_clangmsg: a job for libclang and its result, as the kernel
 * (kn_clang.c) and cflame-clang (kernel/clang/) exchange them.
 *
 * The structs are what kn_complete.c fills in and reads; the JSON forms
 * are what travels between the two processes. Strings travel as they are:
 * a JSON string when they are UTF-8, else {"bytes": "<hex>"} (libclang
 * hands back a header's comments and declarations in whatever encoding the
 * header has).
 *
 * cflame-clang is started as `cflame-clang PARENT_PID MEMORY_BYTES` with
 *   0, 1  /dev/null, 2 the kernel's stderr
 *   3     commands, kernel -> cflame-clang: an empty 'J' frame (kn_chan.h)
 *         says that a job is waiting in the memory file on 5
 *   4     results, cflame-clang -> kernel: one 'J' frame per job
 *   5     a memory file (memfd) holding the job's JSON, and nothing else
 * The job goes through a file so that the kernel hands over a unit of any
 * size without ever waiting for the process to read it. */
#ifndef KN_CLANGMSG_H
#define KN_CLANGMSG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define KN_CLANGMSG_CMD_FD 3
#define KN_CLANGMSG_RESULT_FD 4
#define KN_CLANGMSG_JOB_FD 5
/* cflame-clang's exit status when its resident memory went past
 * MEMORY_BYTES. */
#define KN_CLANGMSG_EXIT_MEMORY 3
/* A result's most matches: twenty times what a reply shows (kn_complete.c
 * leaves out reserved names and keeps 1,000), and a few MB of JSON. */
#define KN_CLANGMSG_MAX_MATCHES 20000

typedef enum kn_clang_op {
  KN_CLANG_COMPLETE, /* what may be written at a position */
  KN_CLANG_INSPECT,  /* what the name at a position is */
} kn_clang_op_t;

/* What a name is, in C's terms. */
typedef enum kn_clang_kind {
  KN_CLANG_OTHER,
  KN_CLANG_FUNCTION,
  KN_CLANG_VARIABLE,   /* a global, a local or a parameter */
  KN_CLANG_MEMBER,     /* a struct or union member */
  KN_CLANG_ENUMERATOR, /* an enumeration constant */
  KN_CLANG_TYPE,       /* a typedef name, or a struct, union or enum tag */
  KN_CLANG_MACRO,      /* an object-like macro */
  KN_CLANG_FUNCTION_MACRO,
  KN_CLANG_KEYWORD, /* a keyword, or a pattern starting with one (sizeof) */
} kn_clang_kind_t;

typedef struct kn_clang_job {
  kn_clang_op_t op;
  char *path;            /* the unit's file name: where its quoted #includes are
                            looked up from; the file need not exist */
  char **args;           /* compiler arguments, NULL-terminated */
  char *text;            /* the unit's text */
  unsigned line, column; /* the position, 1-based; column in bytes */
  char *prefix;          /* KN_CLANG_COMPLETE: only names starting with it */
  void *tag;             /* the caller's; comes back in the result (never sent) */
} kn_clang_job_t;

/* One way to complete. */
typedef struct kn_clang_match {
  char *name;      /* what to write */
  char *signature; /* functions and function-like macros: "int printf(const
                      char *restrict __format, ...)"; else NULL */
  kn_clang_kind_t kind;
  unsigned priority; /* libclang's: the smaller, the likelier */
} kn_clang_match_t;

/* What the name at the position refers to. */
typedef struct kn_clang_symbol {
  char *name;
  kn_clang_kind_t kind;
  char *declaration; /* as C declares it, without storage class, attributes
                        and assembler name: "int printf(const char *restrict
                        __format, ...)", "double alpha", "#define SQUARE(x)
                        ((x) * (x))" */
  char *definition;  /* a struct, union or enum with its members, a typedef
                        of one, or NULL */
  char *parent;      /* a member's struct or union ("struct P"), or NULL */
  char *comment;     /* the comment written before it, or NULL */
  char *file;        /* where it is declared (defined, where the unit has
                        the definition), as #line directives name it:
                        "/usr/include/stdio.h", "cell[3]" */
  unsigned line;
  bool system; /* declared in a system header */
} kn_clang_symbol_t;

typedef struct kn_clang_result {
  kn_clang_op_t op;
  void *tag;
  char *error;               /* why libclang gave nothing (not loaded, no unit, its
                                process ended), or NULL; code that does not compile
                                is not an error */
  bool lost;                 /* the job ended its process (past its memory limit,
                                a crash in libclang): the unit's text, an #include
                                of /dev/zero, is to blame rather than libclang, and
                                another text may fare better */
  kn_clang_match_t *matches; /* KN_CLANG_COMPLETE, in libclang's order; past
                                KN_CLANGMSG_MAX_MATCHES, the likeliest that
                                many (priority, then name) */
  size_t n_matches;
  kn_clang_symbol_t *symbol; /* KN_CLANG_INSPECT; NULL when nothing is named */
  double parse_ms;           /* time spent parsing or reparsing the unit (0 when
                                completion used it as it was) */
  double total_ms;           /* the whole job, in libclang's process */
} kn_clang_result_t;

void kn_clangmsg_job_free(kn_clang_job_t *job); /* its members; job is left empty */
void kn_clangmsg_result_free(kn_clang_result_t **r);

/* The JSON of a job or a result (new). */
json_t *kn_clangmsg_job_to_json(const kn_clang_job_t *job);
json_t *kn_clangmsg_result_to_json(const kn_clang_result_t *r);
/* A job or a result from its JSON: 0, or -1 (err) when j is not one; *job
 * or *r is then left empty. The result is new (kn_clangmsg_result_free). */
int kn_clangmsg_job_from_json(const json_t *j, kn_clang_job_t *job, char *err, size_t err_size);
int kn_clangmsg_result_from_json(const json_t *j, kn_clang_result_t **r, char *err,
                                 size_t err_size);

#endif
