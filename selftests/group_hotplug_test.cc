// SPDX-License-Identifier: GPL-2.0
/*
 * A per-CPU group leader whose CPU went offline and came back is no group
 * any more: CPU hot-unplug took it out of its context (left OFF, not
 * EXIT). Linux 6.12 still let a sibling join it, and the sibling kept
 * pointing at the leader once the leader was freed (KASAN use-after-free
 * from mmap() of the sibling; doc/upstream/perf-group-hotplug-uaf.md,
 * found by make stress; upstream Linux 7.2 has the same missing check).
 * The fix, the first series of patches/ (doc/upstream/fixes.md), refuses
 * the join with ENODEV. The test runs on any kernel, with or without the
 * feature: it is how the fix is proven on 6.12 and on 7.2.
 *
 * The test never frees a leader under an accepted sibling: when the join
 * is accepted (the bug), the sibling is closed first, so a kernel with the
 * bug fails the test without being corrupted by it.
 */
#include <errno.h>
#include <gtest/gtest.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "lib/perf_event.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

constexpr int kCpu = 1;
perf_event_attr sw_attr(uint64_t config)
{
	perf_event_attr a{};
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config;
	a.sample_period = 10000000;
	return a;
}

/* perf_event_open on kCpu (pid -1): the fd, or -errno. */
int open_on_cpu(uint64_t config, int group_fd)
{
	perf_event_attr a = sw_attr(config);
	return perf::open_event(&a, -1, kCpu, group_fd);
}

/*
 * Open a leader on kCpu, optionally take kCpu offline and back, then
 * open a sibling into the leader: the sibling's fd or -errno. Closes
 * whatever it opened, the sibling before the leader.
 */
int join_after(bool hotplug)
{
	int leader = open_on_cpu(PERF_COUNT_SW_CPU_CLOCK, -1);
	if (leader < 0) {
		ADD_FAILURE() << "leader on CPU " << kCpu << ": "
			      << strerror(-leader);
		return leader;
	}
	if (hotplug) {
		EXPECT_TRUE(work::set_cpu_online(kCpu, false))
			<< "CPU " << kCpu << " offline: " << strerror(errno);
		EXPECT_TRUE(work::set_cpu_online(kCpu, true))
			<< "CPU " << kCpu << " online: " << strerror(errno);
	}
	int sib = open_on_cpu(PERF_COUNT_SW_TASK_CLOCK, leader);
	if (sib >= 0)
		close(sib);
	close(leader);
	return sib;
}

TEST(GroupHotplug, SiblingOfHotUnpluggedLeaderIsRefused)
{
	EXTENSION("fixes Linux 6.12 and 7.2: a sibling joining a per-CPU "
		  "group leader detached by CPU hot-unplug outlived it (KASAN "
		  "use-after-free, doc/upstream/perf-group-hotplug-uaf.md)");
	if (!work::cpu_hotpluggable(kCpu))
		SKIP_NOT_APPLICABLE("CPU " << kCpu << " cannot go offline here "
					   "(absent, or its online file is not "
					   "writable)");
	work::CpuBackOnline guard{ kCpu };

	/* Control: the same join without a hotplug is accepted. */
	int before = join_after(false);
	ASSERT_GE(before, 0) << "sibling of a live leader: "
			     << strerror(-before);

	int rounds = 3, joined = 0, enodev = 0, other = 0;
	for (int i = 0; i < rounds; i++) {
		int sib = join_after(true);
		if (HasFatalFailure())
			return;
		joined += sib >= 0;
		enodev += sib == -ENODEV;
		other += sib < 0 && sib != -ENODEV;
		if (sib < 0 && sib != -ENODEV)
			ADD_FAILURE() << "refused with " << strerror(-sib)
				      << ", not ENODEV";
	}

	/* Control: a leader opened once the CPU is back is a group again. */
	int after = join_after(false);
	printf("# %d rounds: sibling of the hot-unplugged leader accepted %d, "
	       "refused with ENODEV %d, other errors %d; fresh leaders "
	       "before/after: %s/%s\n",
	       rounds, joined, enodev, other, before >= 0 ? "joined" : "refused",
	       after >= 0 ? "joined" : "refused");
	EXPECT_EQ(joined, 0) << "a sibling joined a per-CPU group leader that "
				"CPU hot-unplug took out of its context";
	EXPECT_EQ(enodev, rounds);
	EXPECT_GE(after, 0) << "sibling of a leader opened after the "
			       "hotplug: " << strerror(-after);
}

} // namespace
