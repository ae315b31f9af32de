/* SPDX-License-Identifier: GPL-2.0 */
/*
 * make bench's entry tags, the only part of bench.cc and bench_sframe.c
 * that differs per architecture. A workload keeps a tag in a callee-saved
 * register that the kernel neither reads nor changes (x86-64 %r12, arm64
 * x19) across each system call, and every sample carries that register
 * (PERF_SAMPLE_REGS_USER, BENCH_TAG_PERF_REG): samples with the same tag
 * were taken in the same kernel entry. Used from C and C++.
 */
#ifndef BENCH_TAG_H
#define BENCH_TAG_H

#include <asm/perf_regs.h>
#include <stdint.h>

#if defined(__x86_64__)

#define BENCH_TAG_PERF_REG PERF_REG_X86_R12

/*
 * System call nr(a, b, c, d) with its kernel entry tagged tag; the tag
 * register holds tag + 1 right after it returns, so that an interrupt of
 * the user code that follows is not counted with the system call.
 */
static inline __attribute__((always_inline)) long
bench_tagged_syscall(long nr, long a, long b, long c, long d, uint64_t tag)
{
	register uint64_t t __asm__("r12") = tag;
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall\n\tinc %1"
			 : "=a"(ret), "+r"(t)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}

/* n rounds of a user-only loop, the tag register holding tag, tag + 1... */
static inline __attribute__((always_inline)) void
bench_tagged_spin(uint64_t tag, uint64_t n)
{
	register uint64_t t __asm__("r12") = tag;

	__asm__ volatile("1: inc %0\n\tdec %1\n\tjnz 1b"
			 : "+r"(t), "+r"(n)
			 :
			 : "cc");
}

#elif defined(__aarch64__)

#define BENCH_TAG_PERF_REG PERF_REG_ARM64_X19

static inline __attribute__((always_inline)) long
bench_tagged_syscall(long nr, long a, long b, long c, long d, uint64_t tag)
{
	register uint64_t t __asm__("x19") = tag;
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;

	__asm__ volatile("svc #0\n\tadd %1, %1, #1"
			 : "+r"(x0), "+r"(t)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3)
			 : "memory");
	return x0;
}

static inline __attribute__((always_inline)) void
bench_tagged_spin(uint64_t tag, uint64_t n)
{
	register uint64_t t __asm__("x19") = tag;

	__asm__ volatile("1: add %0, %0, #1\n\tsubs %1, %1, #1\n\tb.ne 1b"
			 : "+r"(t), "+r"(n)
			 :
			 : "cc");
}

#else
#error "make bench: no entry tag for this architecture (bench_tag.h)"
#endif

#endif /* BENCH_TAG_H */
