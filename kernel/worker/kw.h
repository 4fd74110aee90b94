/* SPDX-License-Identifier: BSD-3-Clause */
/* kw: the worker process that loads and runs cells.
 *
 * The kernel starts one worker per session (kn_worker.c) and talks to it over
 * the framed pipes of kn_chan.h. The worker dlopens each cell's shared object
 * with RTLD_GLOBAL, so later cells bind to earlier cells' functions and
 * globals, and calls the cell's entry function. It is deliberately small: it
 * knows nothing of Jupyter or of compiling.
 *
 *   kw_main.c   command loop: load, run (with timing and %%timeit), exit
 *   kw_io.c     stdout/stderr as frames on the event pipe; stdin on request
 *   kw_fault.c  crash reports (signal, stack, maps) and interrupts
 *   kw_threads.c  registers every thread a cell starts with the sampler
 *                 and the allocation recorder, and gives it an alternate
 *                 signal stack for crash reports
 * (The allocator's entry points, for allocation profiling, are the
 * library's: flame/sample/fl_allocs_entry.c, which the worker links and
 * libcflame_preload_allocs.so is built from.)
 *   kw_value.c  the value of a cell's trailing expression, printed with the
 *               type its DWARF gives */
#ifndef KW_H
#define KW_H

#include <jansson.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

/* ---- kw_io.c ---- */

/* Replaces stdout and stderr with FILEs that send 'O' and 'E' frames on the
 * event pipe, and stdin with one that asks the kernel for input. A child
 * that a cell forks gets neither channel, and plain stdout and stderr. */
int kw_io_init(void);
/* Whether this process is a child a cell forked, not the worker. */
bool kw_io_in_forked_child(void);
/* Before each cell: whether reads of stdin may ask the frontend. */
void kw_io_begin_cell(bool allow_stdin);
/* After each cell: flushes stdout and stderr. */
void kw_io_end_cell(void);
/* Sends a JSON event to the kernel (thread-safe). Returns 0 or -1. */
int kw_send(const json_t *event);
/* Sends a JSON event and steals it. */
int kw_send_new(json_t *event);
/* On the main thread, after an interrupt unwound it to the command loop:
 * gives back the locks of stdout and stderr if it was unwound inside a
 * printf, and stdin if it was unwound out of a read of it. */
void kw_io_after_unwind(void);
/* Async-signal-safe, for the interrupt handler on the main thread: when the
 * thread holds the event channel (or is taking or giving it back), notes
 * sig, to be raised again once the channel is given back, and returns true:
 * the handler must not unwind now. Returns false otherwise. */
bool kw_io_defer_interrupt(int sig);
/* Sends the crash report (a 'C' frame) from the crash handler:
 * async-signal-safe. Waits a bounded time for the thread writing to the
 * event pipe to finish its frame, and keeps every other writer out
 * afterwards: call it only on the way to the process's end. Returns 0, or
 * -1 when the report could not be sent whole (see kw_io.c). */
int kw_io_send_crash_report(const char *report, size_t len);

/* ---- kw_fault.c ---- */

/* Installs the crash handlers (on an alternate stack) and the interrupt
 * handler, and warms up the unwinder so the handlers never enter the
 * dynamic loader. */
int kw_fault_init(void);
/* Gives the calling thread an alternate signal stack of its own, on which
 * the crash handler reports even a stack overflow. Returns 0 or -1
 * (errno; the thread's crashes are then reported unless they overflow its
 * stack). */
int kw_fault_thread_enter(void);
/* Takes the calling thread's alternate stack away and frees it, as the
 * thread ends. */
void kw_fault_thread_exit(void);
/* Records the executable range of a loaded cell object, so that an interrupt
 * arriving while cell code runs can unwind at once. */
void kw_fault_add_code_range(uintptr_t lo, uintptr_t hi);

/* The jump buffer of the running cell; valid while kw_cell_running is 1. */
extern sigjmp_buf kw_cell_jmp;
extern volatile sig_atomic_t kw_cell_running;
/* Set by an interrupt that arrived while the cell ran, even one that could
 * not unwind at once (a sleep it cut short), or while a run command was
 * carried out before the cell's entry was called (its object loading, the
 * profilers set up): the cell counts as interrupted, and in the second case
 * its entry is not called. */
extern volatile sig_atomic_t kw_interrupt_requested;
/* 1 from the moment a run command is read until its done is sent. */
extern volatile sig_atomic_t kw_run_active;

/* ---- kw_threads.c ---- */

/* Resolves the C library's pthread_create; the worker's own pthread_create
 * and thrd_create (flame/sample/fl__threads.c, exported, so cells and libgomp bind
 * to them) register each new thread with fl_sampler and fl_allocs, and
 * give it an alternate signal stack (kw_fault_thread_enter), for its
 * lifetime. Returns 0 or -1. */
int kw_threads_init(void);

/* ---- kw_value.c ---- */

/* Forgets the value of the last run (before each run). */
void kw_value_reset(void);
/* Whether the run's trailing expression left a value (not void). */
bool kw_value_captured(void);
/* The value as "(TYPE) VALUE", its type read from the DWARF of entry in the
 * object at path; new, or NULL with err saying why it cannot be printed. */
char *kw_value_format(const char *path, const char *entry, char *err, size_t err_size);

#endif
