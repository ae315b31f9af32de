// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of lib/workload: a child killed after its deadline is
 * reported with where it was, so a stall is told from a slow child.
 */
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
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

} // namespace
