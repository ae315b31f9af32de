// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU events (SPEC section 3): one sampling event per CPU (pid -1) with
 * defer_callchain and defer_output, while a task reads /dev/zero in 16 MiB
 * chunks and another thread keeps moving it between CPUs with
 * sched_setaffinity(). The task is sampled on one CPU and returns to user
 * space on another: its record must be in the buffer of the CPU it returned
 * on (the record's sample_id cpu == that buffer's CPU), exactly once, with
 * its TID. The records go to a side-band dummy per CPU, as perf sets them
 * up; that they also reach sampling events whose only side-band bit is
 * defer_output is our extension. Skips on a kernel without
 * defer_callchain or with one CPU.
 */
#include <gtest/gtest.h>
#include <time.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/session.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

struct Outcome {
	size_t cookies = 0, matched_once = 0, migrated = 0;
	int failures = 0;
};

/*
 * One recording; returns what it saw, failing the test on a violation.
 * The receivers: a side-band dummy per CPU, as perf sets them up, or
 * (bare) the sampling events themselves with defer_output as their only
 * side-band bit.
 */
Outcome record_migrating(int attempt, bool bare)
{
	Outcome out;
	std::vector<int> cpus = session::online_cpus();
	session::Session s;
	session::Options o;
	o.period = 500000;
	o.exclude_idle = true;
	o.pages = 256;
	o.defer_output = bare;
	int r = s.open_per_cpu(o);
	if (!r && !bare)
		r = s.open_per_cpu(session::sideband());
	EXPECT_EQ(r, 0) << "per-CPU perf_event_open: " << strerror(-r);
	if (r)
		return out;

	std::atomic<pid_t> tid{ 0 };
	std::atomic<bool> done{ false };
	std::atomic<uint64_t> t_stop{ 0 };
	std::atomic<int> moves{ 0 };
	s.enable();
	std::thread worker([&] {
		tid = work::gettid();
		work::read_zero(0.25, 16 << 20); /* ~200 entries */
		t_stop = work::now_ns(); /* every entry before is over */
		done = true;
	});
	std::thread mover([&] {
		while (!tid)
			sched_yield();
		for (size_t i = 0; !done; i++) {
			if (work::pin(tid, cpus[i % cpus.size()]) == 0)
				moves++;
			timespec ts{ 0, 3000000 };
			nanosleep(&ts, nullptr);
		}
	});
	worker.join();
	mover.join();
	perf::CookieMatcher m;
	std::string err;
	EXPECT_TRUE(s.stop(&m, &err)) << err;
	perf::MatchResult res = m.match();

	/* The CPU of the last sample of each of the worker's entries. */
	std::map<uint64_t, const perf::Announce *> last;
	for (const perf::Announce &a : m.announces())
		if (a.tid == (uint32_t)tid.load() && a.time < t_stop &&
		    (!last.count(a.cookie) || last[a.cookie]->time < a.time))
			last[a.cookie] = &a;
	out.cookies = last.size();
	for (auto &[cookie, a] : last) {
		auto it = res.by_key.find({ cookie, (uint32_t)tid.load() });
		size_t n = it == res.by_key.end() ? 0 : it->second.size();
		if (n != 1) {
			if (out.failures++ < 5)
				ADD_FAILURE() << "cookie 0x" << std::hex << cookie
					      << std::dec << " of tid " << tid
					      << " sampled on CPU " << a->cpu
					      << ": " << n
					      << " records, expected exactly 1";
			continue;
		}
		const perf::Delivery &d = it->second[0];
		int buf_cpu = s.cpu(d.buffer);
		if ((int)d.cpu != buf_cpu) {
			if (out.failures++ < 5)
				ADD_FAILURE() << "record of cookie 0x" << std::hex
					      << cookie << std::dec
					      << " in the buffer of CPU "
					      << buf_cpu
					      << " says it was written on CPU "
					      << d.cpu;
			continue;
		}
		out.matched_once++;
		out.migrated += d.cpu != a->cpu;
	}
	size_t orphans = 0;
	for (const perf::Delivery &d : res.orphans)
		orphans += d.tid == (uint32_t)tid.load();
	printf("# attempt %d, %s: worker tid %d moved %d times; %zu entries "
	       "sampled, %zu with exactly one record on the right CPU, %zu "
	       "returned on another CPU than their last sample; %zu orphan "
	       "records of the worker\n# all tasks: %s\n",
	       attempt, bare ? "sampling events with defer_output only" :
			       "a side-band dummy per CPU", tid.load(),
	       moves.load(), out.cookies,
	       out.matched_once, out.migrated, orphans,
	       res.describe().substr(0, res.describe().find('\n')).c_str());
	EXPECT_EQ(orphans, 0u) << "records of the worker nobody announced";
	EXPECT_TRUE(res.duplicates.empty() && res.with_kernel_ip.empty())
		<< res.describe();
	EXPECT_EQ(res.lost, 0u) << "records lost: the check is incomplete";
	EXPECT_GT(out.cookies, 0u) << "the worker was never sampled";
	return out;
}

void check_migrating(bool bare)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	if (session::online_cpus().size() < 2)
		GTEST_SKIP() << "needs 2 CPUs, have 1";
	size_t migrated = 0;
	for (int attempt = 1; attempt <= 3 && !migrated; attempt++) {
		Outcome o = record_migrating(attempt, bare);
		if (testing::Test::HasFailure())
			return;
		migrated += o.migrated;
	}
	EXPECT_GT(migrated, 0u) << "in 3 attempts no entry was sampled on "
				   "one CPU and returned on another";
}

TEST(PerCpu, RecordFollowsTheTaskToItsReturnCpu)
{
	check_migrating(false);
}

TEST(PerCpu, BareReceiverGetsTheRecordOnItsReturnCpu)
{
	EXTENSION("per-CPU receivers whose only side-band bit is defer_output "
		  "get the records (upstream delivers only to side-band events)");
	check_migrating(true);
}

} // namespace
