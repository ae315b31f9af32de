/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The system call the SFrame helpers are sampled in (x86-64 and aarch64:
 * SFrame has no i386 ABI). Inline, so that the interrupted ip is in the calling
 * function and no libc wrapper (code without .sframe) is in between.
 */
#ifndef HELPERS_SFRAME_SYSCALL_H
#define HELPERS_SFRAME_SYSCALL_H

#ifdef __aarch64__
#define NR_getppid 173

/*
 * getppid() with the frame pointer register, x29, holding junk (the
 * call's sequence number), as %rbp below: only .sframe finds the callers.
 */
static inline __attribute__((always_inline)) long getppid_rbp_junk(long seq)
{
	register long x0 __asm__("x0");
	register long x8 __asm__("x8") = NR_getppid;

	__asm__ volatile("mov x29, %[seq]\n\t"
			 "svc #0"
			 : "=r"(x0)
			 : "r"(x8), [seq] "r"(seq)
			 : "x29", "memory");
	return x0;
}

/* getppid() leaving x29 alone: for code built with frame pointers. */
static inline __attribute__((always_inline)) long getppid_raw(void)
{
	register long x0 __asm__("x0");
	register long x8 __asm__("x8") = NR_getppid;

	__asm__ volatile("svc #0" : "=r"(x0) : "r"(x8) : "memory");
	return x0;
}
#else
#define NR_getppid 110

/*
 * getppid() with %rbp holding junk (the call's sequence number): in code
 * built without frame pointers %rbp is a general register, so a frame
 * pointer walk from here reads no frame at all, and only .sframe can
 * find the callers. The compiler saves and restores %rbp around it, as
 * for any callee-saved register (the .sframe row says where).
 */
static inline __attribute__((always_inline)) long getppid_rbp_junk(long seq)
{
	long ret;

	__asm__ volatile("mov %[seq], %%rbp\n\t"
			 "syscall"
			 : "=a"(ret)
			 : "a"(NR_getppid), [seq] "r"(seq)
			 : "rbp", "rcx", "r11", "memory");
	return ret;
}

/* getppid() leaving %rbp alone: for code built with frame pointers. */
static inline __attribute__((always_inline)) long getppid_raw(void)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(NR_getppid)
			 : "rcx", "r11", "memory");
	return ret;
}

#endif /* __aarch64__ */

#endif
