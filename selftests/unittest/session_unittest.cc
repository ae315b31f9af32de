// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of lib/session's attributes: a clock event's period is
 * reference-guest time, stretched by the guest's measured slowdown
 * (VMTEST_SLOWDOWN, read once per process: each case runs in a new one).
 */
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/session.h"

namespace {

/*
 * The period make_attr() gives o in a process told slowdown (nullptr:
 * VMTEST_SLOWDOWN unset) must be want. The process says the period it
 * got and exits with a code of its own, so a child that never ran the
 * check cannot pass.
 */
void expect_period(const char *slowdown, const session::Options &o,
		   uint64_t want, bool probe = false)
{
	/* A child that runs this binary again: slowdown() unread there */
	GTEST_FLAG_SET(death_test_style, "threadsafe");
	EXPECT_EXIT(
		{
			if (slowdown)
				setenv("VMTEST_SLOWDOWN", slowdown, 1);
			else
				unsetenv("VMTEST_SLOWDOWN");
			uint64_t p = (probe ? session::make_probe_attr(o)
					    : session::make_attr(o))
					     .sample_period;
			fprintf(stderr, "period %llu\n",
				(unsigned long long)p);
			_exit(p == want ? 42 : 1);
		},
		testing::ExitedWithCode(42), "period [0-9]+")
		<< "slowdown " << (slowdown ? slowdown : "unset")
		<< ": want period " << want;
}

TEST(Attr, ClockPeriodsStretchWithTheSlowdown)
{
	session::Options cpu;
	session::Options task;
	task.config = PERF_COUNT_SW_TASK_CLOCK;
	task.period = 170000;
	expect_period(nullptr, cpu, 200000);
	expect_period("1.00", cpu, 200000);
	expect_period("2.50", cpu, 500000);
	expect_period("2.50", task, 425000);
	/* Rounded, not cut: 1.13 x 200000 is 225999.99... in binary */
	expect_period("1.13", cpu, 226000);
	/* A guest faster than the reference keeps the reference's period */
	expect_period("0.40", cpu, 200000);
}

TEST(Attr, OtherEventsKeepTheirPeriods)
{
	expect_period("2.50", session::tracepoint(7, 16), 1);
	expect_period("2.50", session::sideband(), 1);
	session::Options faults;
	faults.config = PERF_COUNT_SW_PAGE_FAULTS;
	faults.period = 10;
	expect_period("2.50", faults, 10);
	/* Same config numbers as the clocks, other types: not clocks */
	session::Options cycles;
	cycles.type = PERF_TYPE_HARDWARE;
	cycles.config = PERF_COUNT_HW_CPU_CYCLES;
	cycles.period = 1000000;
	expect_period("2.50", cycles, 1000000);
	session::Options dynamic = cycles;
	dynamic.type = 9; /* a dynamic PMU's type (uprobe, kprobe) */
	dynamic.config = PERF_COUNT_SW_TASK_CLOCK;
	dynamic.period = 1ull << 62;
	expect_period("2.50", dynamic, 1ull << 62);
}

/*
 * make_probe_attr() starts an attr for another PMU from the default
 * clock's options: its period counts hits, as given on any guest. 1<<62
 * stretched past 1<<63 is a period the kernel refuses (EINVAL).
 */
TEST(Attr, ProbePeriodsAreNotStretched)
{
	session::Options o;
	o.period = 1;
	expect_period("2.10", o, 1, true);
	o.period = 1ull << 62;
	expect_period("2.10", o, 1ull << 62, true);
	o.period = 200000;
	expect_period("0.40", o, 200000, true);
}

} // namespace
