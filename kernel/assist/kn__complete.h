/* SPDX-License-Identifier: BSD-3-Clause */
/* kn__complete: what the files of completion and inspection share.
 * Internal: the interface is kn_complete.h.
 *
 *   kn_complete.c        a request read: where its cursor is, on a magic
 *                        line (answered at once from the magic table) or in
 *                        C (libclang's job made); the matches a completion
 *                        replies with.
 *   kn_inspect.c         what an inspection shows: libclang's symbol, the
 *                        session's definition and its comment, a manual page.
 *   kn_complete_queue.c  requests waiting their turn in libclang's process
 *                        and for man, answered when ready or when their time
 *                        is up; the room (kn_complete_open).
 * Each calls only the files listed before it. */
#ifndef KN__COMPLETE_H
#define KN__COMPLETE_H

#include <stdbool.h>
#include <stddef.h>

#include "kn_clang.h"
#include "kn_complete.h"
#include "kn_exec.h"
#include "kn_manpage.h"
#include "kn_names.h"

/* The file name libclang gives the unit, in the session directory, where
 * the compiler finds the cell's quoted #includes from. Never written: the
 * unit's text is handed to libclang in memory. */
#define UNIT_FILE "cflame-complete.c"
/* Marks the cursor in the cell's text while the session turns it into a
 * unit, written right after the name being completed or inspected: one
 * identifier with it, so that the splitter places the piece as it would
 * once the name is written out (a comment would be dropped at the start of
 * a piece). */
#define CURSOR_MARK KN_GENERATED_PREFIX "cursor_"
/* A request waits this long for libclang (a first parse of big headers on
 * a busy machine takes seconds; one of 10^5 declarations, a second), then
 * it is answered without, and libclang's process is killed;
 * CFLAME_COMPLETE_TIMEOUT_MS changes it. */
#define CLANG_TIMEOUT_MS 15000
/* libclang's process may use this much memory (address space, and
 * resident); CFLAME_COMPLETE_MEMORY_MB changes it. */
#define CLANG_MEMORY_MB 2048
/* A manual page that takes longer than this is not waited for. */
#define MANPAGE_TIMEOUT_MS 5000
/* At detail level 0 a session definition longer than this is cut. */
#define DEFINITION_LINES 20
/* At most this many file names in one reply. */
#define MAX_PATHS 500
/* At most this many matches in one reply: the likeliest (a header of 10^4
 * functions with one prefix would otherwise fill a frontend's list). */
#define MAX_MATCHES 1000

typedef struct match {
  char *text;
  const char *type; /* _jupyter_types_experimental's: function, variable, ... */
  char *signature;
  unsigned priority;
} match_t;

typedef struct matches {
  match_t *v;
  size_t n, cap;
} matches_t;

/* A complete_request or inspect_request, or an execution's `name?`. */
typedef struct request {
  kn_msg_t *msg;   /* the request answered; NULL for an execution's */
  kn_exec_t *exec; /* the execution answered instead (`name?`), or NULL */
  kn_channel_t channel;
  bool inspect;
  int detail;
  char *code;
  size_t body_off;   /* where the C after the magic lines starts, in code */
  int body_line;     /* and its line in the cell */
  size_t mark_at;    /* where the mark goes, in code: after the name */
  size_t back;       /* libclang is asked about this many bytes before it */
  size_t start, end; /* the word being completed or inspected, in code */
  char *prefix;      /* completion: the word up to the cursor */
  int cell;          /* the cell number the unit was built for */
  bool submitted;
  bool alone;        /* asked with the name alone as the cell (see retry_alone) */
  matches_t options; /* a magic's options that the word may also start */
  kn_clang_result_t *clang;
  kn_manpage_t *man;
  long long deadline_ms; /* answered by then with what there is: from its
                            arrival for libclang, then for its manual page */
  struct request *next;
} request_t;

struct kn_complete {
  kn_clang_t *clang;
  request_t *head, *tail; /* in arrival order; head is the one under way */
  int timeout_ms;         /* how long a request waits for libclang */
  bool error_logged;
};

/* What each file gives the others; each function's contract is written
 * where it is defined. */

/* ---- kn_complete.c ---- */

/* What kn__start leaves to do: nothing but the end (the reply is sent),
 * an answer now with what there is, or libclang's reading first. */
typedef enum { KN__REPLIED, KN__ANSWER, KN__ASK } kn__next_t;

request_t *kn__request_read(kn_msg_t *msg, kn_channel_t channel, size_t *cur);
kn__next_t kn__start(kn_kernel_t *k, request_t *r, size_t cur);
void kn__request_free(request_t *r);
int kn__make_job(kn_kernel_t *k, request_t *r, kn_clang_job_t *job);
void kn__reply_completion(kn_kernel_t *k, request_t *r);

/* ---- kn_inspect.c ---- */

void kn__reply_inspection(kn_kernel_t *k, request_t *r);

#endif
