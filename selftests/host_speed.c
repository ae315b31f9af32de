// SPDX-License-Identifier: GPL-2.0
/*
 * How fast this guest runs, against the project's reference guest: ci/guest/init
 * runs it once before the tests and scales every program's timeout
 * (selftests/settings) by the factor it prints, and passes the factor to
 * the tests as VMTEST_SLOWDOWN for their deadlines (lib/workload.h).
 *
 * The factor is the host's: a user loop's time (the best of three tries)
 * against the reference's. A host N times slower runs TCG's code for user
 * and kernel alike N times slower, and the loop measures that without the
 * guest kernel's own costs: those of the debug kernel (KASAN, lockdep) are
 * already in the settings' timeouts, sized for both kernels. For the record
 * it also times getppid() calls and fork()s, where the debug kernel shows.
 * One line on stdout, exit status 0 (1 when fork() failed):
 *
 *	vmtest-speed: factor F.FF user U ms (reference R ms) syscalls S ms
 *	forks K ms
 */
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * The reference: the user loop's best time on the project's build machine
 * (2 host cores, TCG, alone in the guest), 2026-11-28 (doc/harness.md,
 * "Slow hosts"); 0 for an architecture never measured (factor 1).
 */
#if defined(__x86_64__)
#define REFERENCE_MS 96.0
#elif defined(__aarch64__)
#define REFERENCE_MS 88.0
#else
#define REFERENCE_MS 0.0
#endif

enum { USER_LOOPS = 32 * 1000 * 1000, SYSCALLS = 20000, FORKS = 20, TRIES = 3 };

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile uint64_t sink;

static int user_loop(void)
{
	uint64_t x = 1;

	for (long i = 0; i < USER_LOOPS; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	sink = x;
	return 0;
}

static int syscalls(void)
{
	for (int i = 0; i < SYSCALLS; i++)
		syscall(SYS_getppid);
	return 0;
}

static int forks(void)
{
	for (int i = 0; i < FORKS; i++) {
		int st;
		pid_t pid = fork();

		if (pid < 0)
			return -1;
		if (pid == 0)
			_exit(0);
		if (waitpid(pid, &st, 0) != pid)
			return -1;
	}
	return 0;
}

/* The best of TRIES runs of fn in ms, or -1 when it failed. */
static double best(int (*fn)(void))
{
	double min = -1;

	for (int i = 0; i < TRIES; i++) {
		double t0 = now_ms();

		if (fn())
			return -1;
		t0 = now_ms() - t0;
		if (min < 0 || t0 < min)
			min = t0;
	}
	return min;
}

int main(void)
{
	double u = best(user_loop), s = best(syscalls), f = best(forks);

	if (u < 0 || s < 0 || f < 0) {
		printf("vmtest-speed: failed (fork: %s)\n", f < 0 ? "no" : "yes");
		return 1;
	}
	printf("vmtest-speed: factor %.2f user %.0f ms (reference %.0f ms) "
	       "syscalls %.0f ms forks %.0f ms\n",
	       REFERENCE_MS > 0 ? u / REFERENCE_MS : 1.0, u, REFERENCE_MS, s,
	       f);
	return 0;
}
