// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of lib/workload: a child killed after its deadline is
 * reported with where it was, so a stall is told from a slow child.
 */
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <regex>

#include "lib/workload.h"

namespace {

TEST(Child, AKilledChildIsReportedWithItsStateAndCpuTime)
{
	work::Child c;
	ASSERT_EQ(c.spawn({ "/bin/sleep", "100" }), 0);
	testing::internal::CaptureStderr();
	int st = c.wait(0.5);
	std::string said = testing::internal::GetCapturedStderr();
	EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
	/* Asleep in nanosleep: state S, next to no CPU time */
	EXPECT_TRUE(std::regex_search(
		said, std::regex("still running after [0-9]+ s \\(state S, "
				 "[0-9]+ ms user, [0-9]+ ms system")))
		<< said;
}

} // namespace
