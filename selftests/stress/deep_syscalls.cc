// SPDX-License-Identifier: GPL-2.0
/*
 * make stress: syscall-heavy work under deep user stacks, 1 to 160
 * frames, for the watch to sample.
 */
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <random>

#include "lib/workload.h"

#include "stress.h"

namespace stress {

void work_thread(unsigned seed)
{
	std::mt19937_64 rng(seed);
	name_tid(gettid(), "work");
	int fd = open("/dev/zero", O_RDONLY);
	while (running()) {
		int depth = 1 + rng() % 160;
		int n = work::work_recurse_reading(depth, fd, work::now_s() + 0.02);
		count("work-deep-reads", n > 0, n > 0 ? n : 1);
		for (int i = 0; i < 200; i++)
			syscall(SYS_getppid);
		count("work-getppid", true, 200);
		sched_yield();
	}
	close(fd);
}

} // namespace stress
