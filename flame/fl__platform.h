/* SPDX-License-Identifier: BSD-3-Clause */
/* fl__platform: what cflame assumes of the machine, in one place.
 *
 * cflame runs on Linux, on x86-64, with glibc 2.36 or later
 * (docs/ARCHITECTURE.md, "Platform"). CMakeLists.txt checks the processor
 * and the C library when it configures; the #error below stops a build
 * that goes around it. The code that reads a signal's context or siginfo
 * or an instruction's bytes goes through the helpers here: the sampler
 * (flame/sample/fl_sampler.c) and the worker's crash and interrupt handlers
 * (kernel/worker/kw_fault.c), which include this header from flame/.
 *
 * Elsewhere, in its own code: fl_sampler_call (fl_sampler.c) is written in
 * x86-64 assembly, the allocation recorder's frame-pointer walk
 * (fl_allocs.c) is x86-64's and falls back to libunwind on other
 * processors. docs/ARCHITECTURE.md lists what cflame needs of the C
 * library and of the kernel; what the kernel can do is tried where it is
 * used (fl_sampler.c: trap_works), never read from its version. */
#ifndef FL__PLATFORM_H
#define FL__PLATFORM_H

#if !defined(__linux__) || !defined(__x86_64__) || !defined(__GLIBC__)
#error "cflame supports Linux on x86-64 with glibc"
#endif

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

/* The interrupted instruction of a signal's context. */
static inline uintptr_t fl__context_pc(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

/* The stack pointer of a signal's context. */
static inline uintptr_t fl__context_sp(const ucontext_t *uc) {
  return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}

/* Whether pc, the interrupted instruction of a context, comes right after
 * a system-call instruction (`syscall`, 0f 05): the thread was blocked in
 * a system call, or just returned from one. Reads the two bytes before pc,
 * which must be mapped (pc is in code that was executing). */
static inline bool fl__follows_syscall(uintptr_t pc) {
  const unsigned char *p = (const unsigned char *)pc;
  return pc >= 2 && p[-2] == 0x0f && p[-1] == 0x05;
}

#ifndef TRAP_PERF
#define TRAP_PERF 6 /* si_code of a perf event's SIGTRAP (Linux 5.13) */
#endif

/* What a perf event's SIGTRAP (si_code TRAP_PERF) carries: the event's
 * attr.sig_data, in the kernel's siginfo right after si_addr
 * (si_perf_data). glibc 2.36's siginfo_t does not name it. */
_Static_assert(offsetof(siginfo_t, si_addr) == 16 && sizeof(siginfo_t) == 128,
               "the kernel's siginfo layout on x86-64");
static inline uint64_t fl__siginfo_perf_data(const siginfo_t *si) {
  return *(const uint64_t *)((const char *)si + offsetof(siginfo_t, si_addr) + sizeof(void *));
}

#ifndef TRAP_PERF_FLAG_ASYNC
#define TRAP_PERF_FLAG_ASYNC (1u << 0) /* si_perf_flags: sent while SIGTRAP was blocked (6.0) */
#endif

/* A perf event's SIGTRAP's si_perf_flags, after si_perf_data and
 * si_perf_type: TRAP_PERF_FLAG_ASYNC when the thread blocked SIGTRAP as
 * the event fired, so that the signal waited until it was unblocked (0
 * from a kernel that does not say). */
static inline uint32_t fl__siginfo_perf_flags(const siginfo_t *si) {
  return *(const uint32_t *)((const char *)si + offsetof(siginfo_t, si_addr) + 2 * sizeof(void *) +
                             sizeof(uint32_t));
}

/* For what the in-process recorders' files share with each other and no
 * one else: the sampler library is built with default visibility (it
 * exports dl_iterate_phdr and the allocation hooks), so its internals say
 * so one by one, and the handlers reach them directly. */
#define FL__HIDDEN __attribute__((visibility("hidden")))

#endif
