// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of lib/workload: a child killed after its deadline is
 * reported with where it was, so a stall is told from a slow child;
 * read_zero() enters the kernel for its reads, not for its buffer.
 */
#include <gtest/gtest.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <regex>

#include "lib/workload.h"

namespace {

/* What wait() says of argv's child killed after 1 s; *user_ms its user
 * time as said. */
std::string killed(const std::vector<std::string> &argv, std::string *state,
		   long *user_ms)
{
	work::Child c;
	EXPECT_EQ(c.spawn(argv), 0);
	testing::internal::CaptureStderr();
	int st = c.wait(1);
	std::string said = testing::internal::GetCapturedStderr();
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
	std::smatch m;
	if (std::regex_search(said, m,
			      std::regex("still running after [0-9]+ s "
					 "\\(state (.), ([0-9]+) ms user, "
					 "[0-9]+ ms system"))) {
		*state = m[1];
		*user_ms = atol(m[2].str().c_str());
	}
	return said;
}

TEST(Child, AKilledChildIsReportedWithItsStateAndCpuTime)
{
	std::string state;
	long user_ms = -1;
	/* Asleep in nanosleep: state S, next to no CPU time */
	std::string said = killed({ "/bin/sleep", "100" }, &state, &user_ms);
	EXPECT_EQ(state, "S") << said;
	EXPECT_GE(user_ms, 0) << said;
	/* Spinning in user space: runnable, with user time (what a wrong
	 * field of /proc/PID/stat would not show) */
	state.clear();
	user_ms = -1;
	said = killed({ "/bin/sh", "-c", "while :; do :; done" }, &state,
		      &user_ms);
	EXPECT_EQ(state, "R") << said;
	EXPECT_GT(user_ms, 0) << said;
}

/* Page faults of the calling thread so far. */
long faults()
{
	rusage ru;
	EXPECT_EQ(getrusage(RUSAGE_THREAD, &ru), 0);
	return ru.ru_minflt + ru.ru_majflt;
}

/*
 * A read of 16 MiB faults in no 16 MiB buffer: page faults are kernel
 * entries of their own, thousands of them per chunk, sampled like the
 * reads and outside the CPU time asked for (a debug guest spent 4 s in
 * them where a test asked for 0.12 s). The buffer is 64 KiB, 16 pages,
 * faulted in at the first call. malloc() keeps its threshold for mmap()
 * at 128 KiB here, as in a fresh process: one that has freed a large
 * block raises it and then reuses faulted heap, which would hide a
 * chunk-sized buffer.
 */
TEST(ReadZero, AChunkIsReadWithoutFaultingInAChunk)
{
	ASSERT_EQ(mallopt(M_MMAP_THRESHOLD, 128 << 10), 1);
	for (int i = 0; i < 3; i++) {
		long before = faults();
		EXPECT_EQ(work::read_zero(0, 16 << 20), 1);
		long n = faults() - before;
		EXPECT_LT(n, 64) << n << " page faults for 16 MiB read, call "
				 << i;
	}
}

/*
 * The iovecs name chunk bytes in all, of the one 64 KiB buffer and never
 * past it, at most IOV_MAX of them; a bigger chunk is refused, not read
 * past the buffer's end.
 */
TEST(ReadZero, IovecsNameTheChunkInTheBuffer)
{
	char buf;
	for (size_t chunk : { (size_t)0, (size_t)1, (size_t)4095,
			      (size_t)64 << 10, ((size_t)64 << 10) + 1,
			      (size_t)16 << 20, (size_t)64 << 20 }) {
		std::vector<iovec> iov = work::zero_iov(chunk, &buf);
		size_t sum = 0;
		for (const iovec &v : iov) {
			EXPECT_EQ(v.iov_base, &buf) << chunk;
			EXPECT_LE(v.iov_len, (size_t)64 << 10) << chunk;
			sum += v.iov_len;
		}
		EXPECT_EQ(sum, chunk);
		EXPECT_LE(iov.size(), (size_t)IOV_MAX) << chunk;
	}
	EXPECT_TRUE(work::zero_iov(((size_t)64 << 20) + 1, &buf).empty());
	EXPECT_EQ(work::read_zero(0, (size_t)64 << 20), 1);
	EXPECT_EQ(work::read_zero(0, (size_t)128 << 20), -EINVAL);
}

} // namespace
