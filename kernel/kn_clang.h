/* kn_clang: what libclang knows about a translation unit, asked in a thread
 * of its own.
 *
 * Completion and inspection read the session's C with libclang, on the
 * translation unit the session would compile (kn_session_unit_text). A
 * parse can take a while (the first one reads every header), and libclang's
 * objects must not be used from two threads: so one thread, started by
 * kn_clang_new, owns the CXIndex and the CXTranslationUnit and makes every
 * libclang call. The kernel's main loop hands it one job at a time
 * (kn_clang_submit), polls kn_clang_fd, which becomes readable when the
 * result is ready, and takes the result (kn_clang_take). Nothing else is
 * shared: a job's text and arguments move to the thread, its result moves
 * back whole.
 *
 * The unit is kept from job to job with a precompiled preamble (the
 * #include lines at its top: the prelude and the session's headers), so
 * that the headers are compiled once and a request costs a parse of the
 * session's own declarations and the cell. Inspection reparses the unit
 * with its job's text; completion parses its text itself against the
 * unit's preamble, and reparses the unit only when the preamble's text
 * changed (an #include added to the session). A job whose compiler
 * arguments or file name differ starts a new unit.
 *
 * libclang is opened with dlopen on the first job, not linked: loading it
 * (and LLVM under it) costs about as much as the kernel's whole start-up,
 * which every kernel would pay for completion it may never use. Without
 * libclang, a job fails with a message and the kernel goes on. */
#ifndef KN_CLANG_H
#define KN_CLANG_H

#include <stdbool.h>
#include <stddef.h>

typedef struct kn_clang kn_clang_t;

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
  KN_CLANG_KEYWORD,    /* a keyword, or a pattern starting with one (sizeof) */
} kn_clang_kind_t;

typedef struct kn_clang_job {
  kn_clang_op_t op;
  char *path;   /* the unit's file name: where its quoted #includes are
                   looked up from; the file need not exist */
  char **args;  /* compiler arguments, NULL-terminated */
  char *text;   /* the unit's text */
  unsigned line, column; /* the position, 1-based; column in bytes */
  char *prefix; /* KN_CLANG_COMPLETE: only names starting with it */
  void *tag;    /* the caller's; comes back in the result */
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
  bool system;       /* declared in a system header */
} kn_clang_symbol_t;

typedef struct kn_clang_result {
  kn_clang_op_t op;
  void *tag;
  char *error;       /* why libclang gave nothing (not loaded, no unit), or
                        NULL; code that does not compile is not an error */
  kn_clang_match_t *matches; /* KN_CLANG_COMPLETE, in libclang's order */
  size_t n_matches;
  kn_clang_symbol_t *symbol; /* KN_CLANG_INSPECT; NULL when nothing is named */
  double parse_ms;   /* time spent parsing or reparsing the unit (0 when
                        completion used it as it was) */
  double total_ms;   /* the whole job, in the thread */
} kn_clang_result_t;

/* Starts the thread. Returns NULL (with err) only when no thread or
 * descriptor can be had. */
kn_clang_t *kn_clang_new(char *err, size_t err_size);
/* Ends the thread. A job still running is waited for up to a few seconds;
 * past that, the thread is left to finish on its own and frees what it
 * holds, so that shutdown never hangs on a parse. */
void kn_clang_destroy(kn_clang_t **c);

/* Readable when a result is ready. */
int kn_clang_fd(const kn_clang_t *c);
/* Whether a job was submitted and its result not yet taken. */
bool kn_clang_busy(const kn_clang_t *c);
/* Hands job to the thread, which takes its members (the job is left
 * empty). Returns 0, or -1 when a job is under way. */
int kn_clang_submit(kn_clang_t *c, kn_clang_job_t *job);
/* The result, once kn_clang_fd was readable (new; kn_clang_result_free);
 * NULL while there is none. Never blocks. */
kn_clang_result_t *kn_clang_take(kn_clang_t *c);

void kn_clang_job_free(kn_clang_job_t *job);
void kn_clang_result_free(kn_clang_result_t **r);

#endif
