// SPDX-License-Identifier: GPL-2.0
/*
 * Dedup (doc/kernel.md, "The per-task cache and the cookie"): however many
 * events sample a task within one kernel entry, its user stack is unwound once
 * and every defer_output buffer gets exactly one record for that entry; buffers
 * without defer_output get none. Skips on a kernel without defer_callchain.
 */
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/session.h"
#include "lib/workload.h"

namespace {

/*
 * K sampling events on this task (clock periods all different), the ones
 * in `receivers` with defer_output; plus a dummy receiver if `dummy`.
 */
void run_dedup(int k, const std::set<int> &receivers, bool dummy)
{
	session::Session s;
	for (int i = 0; i < k; i++) {
		session::Options o;
		o.config = i % 2 ? PERF_COUNT_SW_TASK_CLOCK
				 : PERF_COUNT_SW_CPU_CLOCK;
		o.period = 150000 + 37000 * i;
		o.defer_output = receivers.count(i);
		/* 0.12 s at these rates is ~0.2 MB per buffer: no drops. */
		o.pages = 512;
		ASSERT_EQ(s.open(o, 0, -1), 0) << "event " << i;
	}
	std::set<size_t> recv(receivers.begin(), receivers.end());
	if (dummy) {
		session::Options sb = session::sideband();
		sb.pages = 512;
		ASSERT_EQ(s.open(sb, 0, -1), 0);
		recv.insert(k);
	}
	/*
	 * The events are enabled and disabled one ioctl() at a time, and
	 * those system calls are sampled too: an entry of either phase
	 * returns while some receivers are off. Only entries between the
	 * two are judged.
	 */
	s.enable();
	uint64_t start = work::now_ns();
	/* 50-600 entries under TCG, most of them sampled more than once */
	work::read_zero(0.12, 256 << 10);
	uint64_t stop = work::now_ns();
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(s.stop(&m, &err)) << err;
	perf::MatchResult r = m.match();
	ASSERT_EQ(r.lost, 0u) << "a ring buffer overflowed, so records are "
				 "missing and nothing can be concluded: "
			      << r.describe();

	/* Records per (buffer, cookie), samples per cookie. */
	std::map<uint64_t, std::map<size_t, int>> per;
	std::map<uint64_t, int> samples;
	std::set<uint64_t> switching;
	std::vector<size_t> in_buffer(s.size());
	for (const perf::Delivery &d : m.deliveries()) {
		per[d.cookie][d.buffer]++;
		in_buffer[d.buffer]++;
	}
	for (const perf::Announce &a : m.announces()) {
		samples[a.cookie]++;
		if (a.time < start || a.time >= stop)
			switching.insert(a.cookie);
	}
	int entries = 0, multi = 0, wrong = 0, again = 0;
	size_t max_samples = 0;
	for (auto &[cookie, n] : samples) {
		if (!per.count(cookie) || switching.count(cookie))
			continue; /* still open at the end, or switching */
		entries++;
		multi += n > 1;
		max_samples = std::max(max_samples, (size_t)n);
		for (size_t b = 0; b < s.size(); b++) {
			int got = per[cookie].count(b) ? per[cookie][b] : 0;
			int want = recv.count(b) ? 1 : 0;
			/*
			 * A receiver may get the entry's record again, after
			 * a sample taken once the callbacks ran: r.duplicates
			 * below holds any record again that answers no sample.
			 */
			again += want && got > 1;
			if ((want ? got < 1 : got) && wrong++ < 5)
				ADD_FAILURE() << "entry 0x" << std::hex << cookie
					      << std::dec << " (" << n
					      << " samples): " << got
					      << " records in buffer " << b
					      << ", expected " << want;
		}
	}
	printf("# K=%d sampling events, %zu receivers%s; %zu entries while "
	       "enabling or disabling not judged\n", k, recv.size(),
	       dummy ? " (incl. a dummy)" : "", switching.size());
	for (size_t b = 0; b < s.size(); b++)
		printf("#   buffer %zu%s: %zu records\n", b,
		       recv.count(b) ? " (defer_output)" : "", in_buffer[b]);
	printf("# %d entries with records, %d sampled more than once (max %zu "
	       "samples in one entry), %zu samples announcing, %d records "
	       "again for a sample after the first\n# %s\n",
	       entries, multi, max_samples, r.announcing_samples, again,
	       r.describe().c_str());
	EXPECT_EQ(wrong, 0) << "not one record per receiving buffer per entry";
	EXPECT_GT(multi, 0) << "no entry sampled twice: dedup not exercised";
	EXPECT_TRUE(r.orphans.empty() && r.duplicates.empty()) << r.describe();
	/*
	 * An entry of the switching phases may miss its record: enabling
	 * ioctls return before the receivers that come later are on, and
	 * the last disabling one after they are off. Every entry in between
	 * returned to user space before `stop` and must have one.
	 */
	size_t unmatched = 0;
	for (const perf::Announce &a : r.unmatched)
		if (!switching.count(a.cookie) && unmatched++ < 5)
			ADD_FAILURE() << "entry 0x" << std::hex << a.cookie
				      << std::dec << " of tid " << a.tid
				      << " sampled between enable and disable "
					 "never got its record";
	printf("# %zu unmatched entries, %zu of them while switching\n",
	       r.unmatched.size(), r.unmatched.size() - unmatched);
	EXPECT_EQ(unmatched, 0u) << r.describe();
}

TEST(Dedup, OneRecordPerReceivingBufferPerEntry)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_dedup(4, { 0, 2 }, false);
}

TEST(Dedup, SidebandDummyGetsOneRecordPerEntry)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	run_dedup(3, {}, true);
}

} // namespace
