// SPDX-License-Identifier: GPL-2.0
/*
 * A known frame-pointer call stack for the perf tool tests:
 * main -> ks_outer -> ks_middle -> ks_inner, the inner function spending
 * about a second (argv[1] seconds if given) in system calls (reads from
 * /dev/zero, getppid) so that samples land in the kernel with this exact
 * user stack below them.  Exits 0 when it could do its work.
 *
 * The system calls are made inline, from ks_inner itself: through libc's
 * wrappers (leaf functions without a frame) a frame pointer walk would
 * start in the wrapper and skip ks_inner.  Builds 64-bit and -m32.
 *
 * "known_stack SECONDS orphan" also forks a child that makes one very long
 * read (512 MiB from /dev/zero into fresh memory). perf record stops when
 * this process exits, with the child still in that read: the samples of
 * the child announce a deferred user callchain whose record is never
 * written, which perf must still show (unmerged) and count.
 *
 * "known_stack SECONDS migrate" also moves itself to the next online CPU
 * (0, 1, ... n-1, 0, ...) with a sched_setaffinity() made from ks_inner
 * in each round: an entry sampled on one CPU returns on the next one. It
 * prints "known_stack pid PID" first.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "raw_syscall.h"

#define NOINLINE __attribute__((noinline))

/* CPU time: the samples do not shrink when other programs share the CPUs. */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* CPUs to move over in "migrate" mode, 0 otherwise */
static long ks_cpus;

NOINLINE int ks_inner(int fd, double seconds)
{
	static char buf[64 << 10];
	double until = now() + seconds;
	long calls = 0;

	while (now() < until) {
		if (raw_syscall3(NR_read, fd, (long)buf, sizeof(buf)) !=
		    (long)sizeof(buf))
			return -1;
		raw_syscall3(NR_getppid, 0, 0, 0);
		calls++;
		if (ks_cpus) {
			unsigned long mask[1024 / (8 * sizeof(long))] = { 0 };
			long cpu = calls % ks_cpus;

			mask[cpu / (8 * sizeof(long))] |=
				1ul << (cpu % (8 * sizeof(long)));
			if (raw_syscall3(NR_sched_setaffinity, 0, sizeof(mask),
					 (long)mask))
				return -1;
		}
	}
	/* Keep the compiler from turning the calls below into jumps. */
	__asm__ volatile("" ::: "memory");
	return calls > 0 ? 0 : -1;
}

NOINLINE int ks_middle(int fd, double seconds)
{
	int ret = ks_inner(fd, seconds);

	__asm__ volatile("" ::: "memory");
	return ret;
}

NOINLINE int ks_outer(int fd, double seconds)
{
	int ret = ks_middle(fd, seconds);

	__asm__ volatile("" ::: "memory");
	return ret;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	int fd = open("/dev/zero", O_RDONLY);
	int ret;

	if (fd < 0) {
		perror("known_stack: /dev/zero");
		return 1;
	}
	if (argc > 2 && !strcmp(argv[2], "migrate")) {
		ks_cpus = sysconf(_SC_NPROCESSORS_ONLN);
		if (ks_cpus < 1 || ks_cpus > 1024)
			ks_cpus = 1;
		/* For a recording of whole CPUs: which samples are its own */
		printf("known_stack pid %d\n", getpid());
		fflush(stdout);
	}
	if (argc > 2 && !strcmp(argv[2], "orphan") && fork() == 0) {
		size_t len = 512ul << 20;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED)
			_exit(1);
		raw_syscall3(NR_read, fd, (long)p, (long)len);
		_exit(0);
	}
	ret = ks_outer(fd, seconds);
	close(fd);
	if (ret) {
		fprintf(stderr, "known_stack: a system call failed\n");
		return 1;
	}
	return 0;
}
