// SPDX-License-Identifier: GPL-2.0
/*
 * tests/test_realstacks.py's program for the shim (selftests/realstacks/):
 * a known stack, main -> level1 -> level2 -> calls(), making every call the
 * shim wraps, from the main thread, from a second thread and from a child
 * forked without exec. It checks what each call returns (the shim must
 * pass arguments and results through, and fail as libc does: -1, errno
 * set) and exits 0 when all were right. Built by the test with frame pointers and -D_FORTIFY_SOURCE=2,
 * so that read() of a buffer of known size is __read_chk.
 *
 * usage: calls N    makes each call N times; prints "calls K" (K calls
 *                   that the shim logs: write, read, pread64, pwrite64)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int bad;
static int rounds;

#define EXPECT(cond)                                                        \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "line %d: %s\n", __LINE__, #cond);  \
			bad = 1;                                            \
		}                                                           \
	} while (0)

__attribute__((noinline)) void calls(int fd, size_t len)
{
	char buf[16], back[16];
	int p[2];

	EXPECT(pipe(p) == 0);
	for (int i = 0; i < rounds; i++) {
		memset(buf, 'a' + i % 26, sizeof(buf));
		EXPECT(write(p[1], buf, len) == (ssize_t)len);
		/* a buffer of known size, a length that is not constant */
		EXPECT(read(p[0], back, len) == (ssize_t)len);
		EXPECT(!memcmp(buf, back, len));
		EXPECT(pwrite64(fd, buf, len, 100 + i) == (ssize_t)len);
		EXPECT(pread64(fd, back, len, 100 + i) == (ssize_t)len);
		EXPECT(!memcmp(buf, back, len));
	}
	/* failures: -1 and errno, as libc's wrappers give them */
	errno = 0;
	EXPECT(write(-1, buf, 1) == -1 && errno == EBADF);
	errno = 0;
	EXPECT(read(-1, back, len) == -1 && errno == EBADF);
	errno = 0;
	EXPECT(pread64(fd, back, len, -1) == -1 && errno == EINVAL);
	close(p[0]);
	close(p[1]);
}

__attribute__((noinline)) void level2(int fd, size_t len)
{
	calls(fd, len);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void level1(int fd, size_t len)
{
	level2(fd, len);
	__asm__ volatile("" ::: "memory");
}

static int file_fd;

static void *thread(void *arg)
{
	level1(file_fd, (size_t)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	char path[] = "/tmp/realstacks-calls-XXXXXX";
	size_t len = 8 + (argc > 5); /* not a constant */
	pthread_t t;
	pid_t child;
	int status;

	rounds = argc > 1 ? atoi(argv[1]) : 3;
	file_fd = mkstemp(path);
	EXPECT(file_fd >= 0);
	unlink(path);
	level1(file_fd, len);
	EXPECT(pthread_create(&t, NULL, thread, (void *)len) == 0);
	EXPECT(pthread_join(t, NULL) == 0);
	child = fork();
	if (child == 0) {
		level1(file_fd, len);
		_exit(bad);
	}
	EXPECT(waitpid(child, &status, 0) == child && status == 0);
	/* per round 4 calls, and the 3 failing ones, in three tasks */
	printf("calls %d\n", 3 * (4 * rounds + 3));
	return bad;
}
