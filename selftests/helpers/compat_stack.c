// SPDX-License-Identifier: GPL-2.0
/*
 * A known frame-pointer call stack for the deferred-callchain tests, built
 * 64-bit (compat_stack) and 32-bit (compat_stack_32):
 *
 *   main -> cs_outer -> cs_middle -> cs_leaf
 *
 * cs_leaf reads /dev/zero through inlined raw syscalls for MS ms of CPU time,
 * so a deferred chain taken at its return to user space is
 *   [ip in cs_leaf, ret in cs_middle, ret in cs_outer, ret in main, ...].
 *
 * usage: compat_stack MS                  loop, return from main
 *        compat_stack MS exit MB          map and touch MB MiB, loop, then
 *                                         exit_group straight from cs_leaf
 *        compat_stack MS exec PATH ARG..  loop, then execve PATH from cs_leaf
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "raw_syscall.h"

static char buf[64 << 10];
static char **exec_argv;
static int do_exit;

__attribute__((noinline)) int cs_leaf(int fd, long ms)
{
	long long until = raw_now_ms() + ms;
	int reads = 0;

	do {
		if (raw_syscall3(NR_read, fd, (long)buf, sizeof(buf)) <= 0)
			return -1;
		reads++;
	} while (raw_now_ms() < until);
	if (do_exit)
		raw_syscall3(NR_exit_group, 0, 0, 0);
	if (exec_argv) {
		raw_syscall3(NR_execve, (long)exec_argv[0], (long)exec_argv,
			     0);
		/* The exec failed (no IA32 emulation?): say so as a failed
		 * exec does, exit 127, rather than pass without one. */
		raw_syscall3(NR_exit_group, 127, 0, 0);
	}
	__asm__ volatile("" ::: "memory");
	return reads;
}

__attribute__((noinline)) int cs_middle(int fd, long ms)
{
	int r = cs_leaf(fd, ms);

	__asm__ volatile("" ::: "memory"); /* no tail call */
	return r;
}

__attribute__((noinline)) int cs_outer(int fd, long ms)
{
	int r = cs_middle(fd, ms);

	__asm__ volatile("" ::: "memory");
	return r;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 1000;
	int fd = open("/dev/zero", O_RDONLY);
	int r;

	if (fd < 0)
		return 2;
	if (argc > 3 && !strcmp(argv[2], "exit")) {
		size_t len = (size_t)atol(argv[3]) << 20;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			return 3;
		for (size_t i = 0; i < len; i += 4096)
			p[i] = 1;
		do_exit = 1;
	} else if (argc > 3 && !strcmp(argv[2], "exec")) {
		exec_argv = &argv[3];
	}
	r = cs_outer(fd, ms);
	__asm__ volatile("" ::: "memory");
	return r > 0 ? 0 : 1;
}
