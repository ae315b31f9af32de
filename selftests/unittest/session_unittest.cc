// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of lib/session's attributes: a clock event's period is
 * reference-guest time, stretched by the guest's measured slowdown
 * (VMTEST_SLOWDOWN, read once per process: each case runs in a new one).
 */
#include <gtest/gtest.h>
#include <stdlib.h>

#include "lib/session.h"

namespace {

/* The period make_attr() gives o in a process told slowdown; exit code 0
 * when it is want. */
void expect_period(const char *slowdown, const session::Options &o,
		   uint64_t want)
{
	/* A child that runs this binary again: slowdown() unread there */
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_EXIT(
		{
			setenv("VMTEST_SLOWDOWN", slowdown, 1);
			exit(session::make_attr(o).sample_period == want ? 0 :
									   1);
		},
		testing::ExitedWithCode(0), "")
		<< "slowdown " << slowdown << ": want period " << want;
}

TEST(Attr, ClockPeriodsStretchWithTheSlowdown)
{
	session::Options cpu;
	session::Options task;
	task.config = PERF_COUNT_SW_TASK_CLOCK;
	task.period = 170000;
	expect_period("1.00", cpu, 200000);
	expect_period("2.50", cpu, 500000);
	expect_period("2.50", task, 425000);
	/* A guest faster than the reference keeps the reference's period */
	expect_period("0.40", cpu, 200000);
}

TEST(Attr, CountingPeriodsAreNoTime)
{
	expect_period("2.50", session::tracepoint(7, 16), 1);
	expect_period("2.50", session::sideband(), 1);
	session::Options faults;
	faults.config = PERF_COUNT_SW_PAGE_FAULTS;
	faults.period = 10;
	expect_period("2.50", faults, 10);
}

} // namespace
