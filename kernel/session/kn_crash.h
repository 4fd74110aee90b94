/* SPDX-License-Identifier: BSD-3-Clause */
/* kn_crash: what ended a cell's worker, in words.
 *
 * When a cell faults, the worker's crash handler (kernel/worker/kw_fault.c)
 * sends a report before it dies: text lines "signal N", "code N",
 * "addr 0x..", "sp 0x..", "tid N", "main_tid N", one "pc 0x.." per frame
 * (the faulting instruction first, then return addresses), then "maps" and
 * the process's /proc/self/maps. This module turns it into what the user
 * reads: a headline ("Segmentation fault at cell[3]:5 in crash() (address
 * 0x0)", with ", in a thread the cell started (thread id N)" when the
 * faulting thread is not the worker's main thread) and a traceback in the cell's terms, with the kernel's machinery
 * (the worker, the generated entry function) left out. */
#ifndef KN_CRASH_H
#define KN_CRASH_H

#include <jansson.h>

/* Frames shown in a traceback; a stack overflow's thousands more are
 * counted, not listed. */
#define KN_CRASH_MAX_FRAMES 24

/* Parses report (sig: the signal the worker died of, used when the report
 * does not say) and appends the traceback's lines to traceback (an array):
 * "SIGSEGV: <headline>", then "Backtrace (most recent call first):" and one
 * line per frame. *headline is new. */
void kn_crash_describe(const char *report, int sig, char **headline, json_t *traceback);

/* "SIGSEGV", "SIGALRM": the name C programmers know a signal by. The
 * buffer is static (the kernel's main loop is its only caller). */
const char *kn_signal_name(int sig);

/* What ended the worker, in a sentence: reason when the kernel ended it,
 * else from its wait status ("the worker process died of SIGALRM (Alarm
 * clock)"). New string. */
char *kn_describe_exit(int status, const char *reason);

#endif
