// SPDX-License-Identifier: GPL-2.0
/*
 * A task that breaks its own frame-pointer chain before every system call,
 * built 64-bit (hostile_stack, x86-64 or aarch64) and 32-bit
 * (hostile_stack_32, x86 only). The frame
 * pointer register is set to a hostile value in inline asm around a loop
 * of raw read(2)s of /dev/zero, and restored after each loop, for MS ms
 * of CPU time.
 *
 * usage: hostile_stack MODE MS, MODE one of
 *   loop        a frame whose saved frame pointer points to itself
 *   downward    a frame whose saved frame pointer points below it
 *   kernel      the frame pointer is a kernel address
 *   kernel_ret  a valid frame whose saved fp and return address are kernel
 *               addresses
 *   unmapped    the frame pointer points to an unmapped page above the
 *               stack
 *   misaligned  the frame pointer is 3 bytes into a valid-looking frame
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "raw_syscall.h"

static char buf[16 << 10];

#ifdef __x86_64__
#define KERNEL_ADDR ((uintptr_t)0xffffffff81000000ULL)
#elif defined(__aarch64__)
/* The start of arm64's kernel image with 48-bit virtual addresses. */
#define KERNEL_ADDR ((uintptr_t)0xffff800080000000ULL)
#else
/* Above a compat task's TASK_SIZE (0xffffe000). */
#define KERNEL_ADDR ((uintptr_t)0xfffff000UL)
#endif

/* n raw reads with the frame pointer register set to bad. */
__attribute__((noinline)) void hostile_reads(uintptr_t bad, int fd, long n)
{
#ifdef __x86_64__
	__asm__ volatile("mov %%rbp, %%r12\n\t"
			 "mov %[bad], %%rbp\n"
			 "1:\n\t"
			 "xor %%eax, %%eax\n\t" /* read */
			 "syscall\n\t"
			 "dec %[n]\n\t"
			 "jnz 1b\n\t"
			 "mov %%r12, %%rbp"
			 : [n] "+r"(n)
			 : [bad] "r"(bad), "D"((long)fd), "S"(buf),
			   "d"(sizeof(buf))
			 : "rax", "rcx", "r11", "r12", "memory");
#elif defined(__aarch64__)
	/* The frame pointer is x29; x19 (callee-saved) keeps the good one. */
	__asm__ volatile("mov x19, x29\n\t"
			 "mov x29, %[bad]\n"
			 "1:\n\t"
			 "mov x8, #63\n\t" /* read */
			 "mov x0, %[fd]\n\t"
			 "mov x1, %[buf]\n\t"
			 "mov x2, %[len]\n\t"
			 "svc #0\n\t"
			 "subs %[n], %[n], #1\n\t"
			 "b.ne 1b\n\t"
			 "mov x29, x19"
			 : [n] "+r"(n)
			 : [bad] "r"(bad), [fd] "r"((long)fd), [buf] "r"(buf),
			   [len] "r"(sizeof(buf))
			 : "x0", "x1", "x2", "x8", "x19", "cc", "memory");
#else
	__asm__ volatile("push %%ebp\n\t"
			 "mov %[bad], %%ebp\n"
			 "1:\n\t"
			 "mov $3, %%eax\n\t" /* read */
			 "int $0x80\n\t"
			 "dec %%edi\n\t"
			 "jnz 1b\n\t"
			 "pop %%ebp"
			 : "+D"(n)
			 : [bad] "S"(bad), "b"(fd), "c"(buf), "d"(sizeof(buf))
			 : "eax", "memory");
#endif
}

/*
 * A page above the stack that nothing maps: a frame pointer there passes
 * the "stack grows up" check and faults. 0 when there is none.
 */
static uintptr_t unmapped_above_stack(void)
{
	uintptr_t lo[256], hi[256], stack_end = 0, a;
	int n = 0, fd = open("/proc/self/maps", O_RDONLY);
	static char maps[16384];
	long len, i;
	char *p;

	if (fd < 0)
		return 0;
	len = read(fd, maps, sizeof(maps) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	maps[len] = 0;
	for (p = maps; *p && n < 256; n++) {
		lo[n] = strtoul(p, &p, 16);
		hi[n] = strtoul(p + 1, &p, 16);
		if (strstr(p, "[stack]") && strchr(p, '\n') &&
		    strstr(p, "[stack]") < strchr(p, '\n'))
			stack_end = hi[n];
		p = strchr(p, '\n');
		if (!p)
			break;
		p++;
	}
	if (!stack_end)
		return 0;
	/* Written so that it cannot wrap: 32-bit stacks end near 4GB. */
	for (a = stack_end; a >= stack_end && a - stack_end < (64ul << 20);
	     a += 4096) {
		for (i = 0; i < n; i++)
			if (a >= lo[i] && a < hi[i])
				break;
		if (i == n)
			return a + 64;
	}
	return 0;
}

/* frames: an array in the caller's frame, above the looping frame. */
static __attribute__((noinline)) uintptr_t hostile_fp(const char *mode,
						       uintptr_t *frames)
{
	uintptr_t code = (uintptr_t)&hostile_reads + 4;

	if (!strcmp(mode, "loop")) {
		frames[0] = (uintptr_t)&frames[0];
		frames[1] = code;
		return (uintptr_t)&frames[0];
	}
	if (!strcmp(mode, "downward")) {
		/* frames[32] -> frames[0] -> frames[32]: goes down first. */
		frames[32] = (uintptr_t)&frames[0];
		frames[33] = code;
		frames[0] = (uintptr_t)&frames[32];
		frames[1] = code;
		return (uintptr_t)&frames[32];
	}
	if (!strcmp(mode, "kernel"))
		return KERNEL_ADDR;
	if (!strcmp(mode, "kernel_ret")) {
		frames[0] = KERNEL_ADDR;
		frames[1] = KERNEL_ADDR + 0x100;
		return (uintptr_t)&frames[0];
	}
	if (!strcmp(mode, "unmapped"))
		return unmapped_above_stack();
	if (!strcmp(mode, "misaligned")) {
		frames[8] = (uintptr_t)&frames[16];
		frames[9] = code;
		frames[16] = 0;
		frames[17] = code;
		return (uintptr_t)&frames[8] + 3;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uintptr_t frames[64] __attribute__((aligned(16)));
	uintptr_t bad;
	long long until;
	long ms;
	int fd;

	if (argc < 3)
		return 2;
	bad = hostile_fp(argv[1], frames);
	ms = atol(argv[2]);
	if (!bad)
		return 2;
	fd = open("/dev/zero", O_RDONLY);
	if (fd < 0)
		return 3;
	until = raw_now_ms() + ms;
	do
		hostile_reads(bad, fd, 64);
	while (raw_now_ms() < until);
	__asm__ volatile("" : : "r"(frames) : "memory");
	return 0;
}
