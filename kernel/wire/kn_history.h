/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_history: the session's inputs, for history_request.
 *
 * Every execution that stores history adds its code under its execution
 * count, in session 1 (the kernel keeps no history across restarts). */
#ifndef KN_HISTORY_H
#define KN_HISTORY_H

#include <jansson.h>

typedef struct kn_history kn_history_t;

kn_history_t *kn_history_new(void);
void kn_history_destroy(kn_history_t **h);
void kn_history_add(kn_history_t *h, int line, const char *code);
/* The input of execution count line, or NULL. Borrowed. */
const char *kn_history_input(const kn_history_t *h, int line);

/* The history_reply's "history" for a history_request's content: a new
 * array of [session, line, input]. hist_access_type "tail" gives the last
 * n; "range" lines start..stop (stop excluded); "search" the inputs holding
 * the pattern without its * and ? wildcards; anything else, all. */
json_t *kn_history_query(const kn_history_t *h, const json_t *request);

#endif
