/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Raw system calls inlined into the caller, for the helpers the tests
 * sample: no libc wrapper frame between the caller and the kernel entry,
 * and no use of the frame-pointer register (i386's syscall() puts its
 * sixth argument in %ebp). 64-bit: syscall; 32-bit: int $0x80; aarch64:
 * svc #0 (number in x8, the generic syscall table).
 */
#ifndef HELPERS_RAW_SYSCALL_H
#define HELPERS_RAW_SYSCALL_H

#ifdef __x86_64__
#define NR_read 0
#define NR_execve 59
#define NR_exit_group 231
#define NR_clock_gettime 228
#define NR_getppid 110
#define NR_sched_setaffinity 203
#define NR_kill 62
static inline __attribute__((always_inline)) long
raw_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}
#elif defined(__aarch64__)
#define NR_read 63
#define NR_execve 221
#define NR_exit_group 94
#define NR_clock_gettime 113
#define NR_getppid 173
#define NR_sched_setaffinity 122
#define NR_kill 129
static inline __attribute__((always_inline)) long
raw_syscall3(long nr, long a, long b, long c)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;

	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2)
			 : "memory");
	return x0;
}
#else
#define NR_read 3
#define NR_execve 11
#define NR_exit_group 252
/* clock_gettime64: clock_gettime (265) needs CONFIG_COMPAT_32BIT_TIME */
#define NR_clock_gettime 403
#define NR_getppid 64
#define NR_sched_setaffinity 241
#define NR_kill 37
static inline __attribute__((always_inline)) long
raw_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(a), "c"(b), "d"(c)
			 : "memory");
	return ret;
}
#endif

#define CLOCK_PROCESS_CPUTIME_ID_ 2

/*
 * The process's CPU time in ms (CLOCK_PROCESS_CPUTIME_ID), through the raw
 * syscall (a 64-bit timespec on both ABIs: clock_gettime on x86-64,
 * clock_gettime64 on i386). The helpers run for MS ms of CPU time, not of
 * wall time: their cpu-clock samples then do not shrink when other
 * programs share the CPUs. Exits with status 4 if the clock cannot be
 * read, rather than loop forever.
 */
static inline __attribute__((always_inline)) long long raw_now_ms(void)
{
	long long ts[2] = { 0, 0 };

	if (raw_syscall3(NR_clock_gettime, CLOCK_PROCESS_CPUTIME_ID_, (long)ts,
			 0))
		raw_syscall3(NR_exit_group, 4, 0, 0);
	return ts[0] * 1000 + ts[1] / 1000000;
}

#endif
