// SPDX-License-Identifier: GPL-2.0
/*
 * Tracepoint samples (seed 004) on an ORC kernel (no frame pointers): a
 * sample from sched:sched_switch (taken with perf_fetch_caller_regs) must
 * have a full kernel chain (more than 2 kernel frames, printed with
 * kallsyms). syscalls:sys_enter_read samples carry the syscall's user
 * registers, so they have no kernel part on any kernel. With
 * defer_callchain both carry the deferred marker and, at the return to user
 * space, a record whose chain holds this test's reader function (the
 * caller of the read loop). Every
 * read is its own entry, so with period 1 there is exactly one record per
 * sampled read.
 */
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/workload.h"

namespace {

constexpr int kReads = 40;

/* The loop; libc's read() has no frame, so the first return address a
 * frame-pointer walk finds is the one into tp_reader below. */
extern "C" __attribute__((noinline)) int tp_read_loop(int fd, int n,
						      bool sleep)
{
	static char buf[4096];
	int ok = 0;
	for (int i = 0; i < n; i++) {
		ok += read(fd, buf, sizeof(buf)) > 0;
		if (sleep)
			usleep(1000);
	}
	asm volatile("" ::: "memory");
	return ok;
}

extern "C" __attribute__((noinline)) int tp_reader(int fd, int n, bool sleep)
{
	int ok = tp_read_loop(fd, n, sleep);
	asm volatile("" ::: "memory"); /* no tail call */
	return ok;
}

void sample_tracepoint(const char *tp, bool deferred)
{
	long id = work::tracepoint_id(tp);
	if (id < 0)
		GTEST_SKIP() << "no tracepoint " << tp << " in tracefs";
	std::string err;
	auto symbols = syms::load("/proc/self/exe", &err);
	ASSERT_FALSE(symbols.empty()) << err;
	const syms::Symbol *reader = syms::find(symbols, "tp_reader");
	ASSERT_NE(reader, nullptr);
	bool is_switch = strstr(tp, "sched_switch");

	session::Session s;
	session::Options o = session::tracepoint(id);
	o.defer_callchain = o.defer_output = deferred;
	int r = s.open(o, 0, -1);
	ASSERT_EQ(r, 0) << "perf_event_open(" << tp << "): " << strerror(-r);
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	/*
	 * A sleep switches only when its timer has not expired before
	 * schedule(): on a slow guest few do. sched_switch samples rounds
	 * of kReads sleeps until one switched; a round without a sample
	 * leaves nothing for the checks below to count.
	 */
	work::Deadline deadline(10);
	int rounds = 0, ok = 0;
	do {
		s.enable();
		ok += tp_reader(fd, kReads, is_switch);
		s.disable();
		s.drain();
		rounds++;
	} while (is_switch && s.samples(0, &err).empty() && err.empty() &&
		 !deadline.passed());
	close(fd);
	ASSERT_EQ(ok, kReads * rounds);
	if (is_switch)
		printf("# %d round(s) of %d sleeps, %s\n", rounds, kReads,
		       deadline.describe().c_str());

	static work::Kallsyms ks; /* loaded once: slow under TCG */
	if (ks.empty())
		ks.load();
	perf::CookieMatcher m;
	ASSERT_TRUE(s.match(&m, &err)) << err;
	perf::MatchResult res = m.match();
	int samples = 0, full = 0, marker = 0, shortest = 1 << 30;
	int asleep_in_place = 0;
	std::string asleep_chain;
	bool printed = false;
	for (const perf::Sample &sm : s.samples(0, &err)) {
		samples++;
		perf::SplitChain c = perf::split_callchain(sm.callchain);
		int nk = (int)c.kernel.size();
		shortest = std::min(shortest, nk);
		full += nk > 2;
		marker += c.deferred;
		/*
		 * A task switched out in its sleep has made its entry's
		 * first request there: nothing may refuse it (only the way
		 * out, in or after the callbacks, may; see below).
		 */
		bool asleep = false;
		std::string chain;
		for (uint64_t ip : c.kernel) {
			std::string n = ks.name(ip);
			asleep |= n.rfind("do_nanosleep+", 0) == 0;
			chain += " " + n;
		}
		if (deferred && is_switch && asleep && !c.deferred &&
		    !asleep_in_place++)
			asleep_chain = chain;
		if (!printed) {
			printed = true;
			printf("# first %s sample: %d kernel frames\n", tp, nk);
			for (uint64_t ip : c.kernel)
				printf("#   %016llx %s\n", (unsigned long long)ip,
				       ks.name(ip).c_str());
		}
	}
	ASSERT_TRUE(err.empty()) << err;
	int with_reader = 0;
	std::vector<perf::DeferredCallchain> recs = s.deferred(0, &err);
	for (const perf::DeferredCallchain &d : recs)
		for (uint64_t ip : d.ips)
			if (reader->contains(ip)) {
				with_reader++;
				break;
			}
	printf("# %s, defer_callchain %s: %d samples, %d with > 2 kernel "
	       "frames (shortest %d), %d with the marker, %zu records, %d "
	       "holding tp_reader\n", tp, deferred ? "on" : "off", samples,
	       full, shortest, marker, recs.size(), with_reader);
	EXPECT_GE(samples, is_switch ? 1 : kReads);
	if (is_switch) {
		EXPECT_EQ(full, samples) << "tracepoint samples with at most 2 "
					    "kernel frames (shortest "
					 << shortest << ")";
	}
	if (!deferred) {
		EXPECT_EQ(marker, 0);
		return;
	}
	printf("# %s\n", res.describe().c_str());
	/*
	 * On a preemptible kernel (PREEMPT, PREEMPT_RT) a task can be
	 * switched out while its entry's callbacks run (between them, or
	 * in perf's, which keeps only migration off); it then hits
	 * sched_switch with its request refused (-EBUSY: the callbacks
	 * run, or ran again as often as an entry may), and is unwound in
	 * place, next to its entry's record with the same stack (arm64's
	 * PREEMPT_RT debug guest: 3 of 49, 2026-12-01, when perf's callback
	 * still kept preemption off). Every other sample carries the
	 * marker, those in the sleep always.
	 */
	EXPECT_EQ(asleep_in_place, 0)
		<< "sched_switch samples in the sleep unwound in place; the "
		   "first's kernel chain:" << asleep_chain;
	int in_place = is_switch ? (int)res.explained_fallbacks : 0;
	EXPECT_EQ(marker + in_place, samples)
		<< "tracepoint samples without the marker, not unwound in "
		   "place next to their entry's record: "
		<< res.describe();
	EXPECT_TRUE(res.unexplained_fallbacks.empty() &&
		    !res.no_user_samples) << res.describe();
	EXPECT_TRUE(res.orphans.empty() && res.duplicates.empty() &&
		    res.with_kernel_ip.empty() && !res.bad_marker_samples)
		<< res.describe();
	EXPECT_LE(res.unmatched.size(), 1u) << res.describe();
	/*
	 * A read entry is sampled once, so kReads records; a sleep switches
	 * only when its timer has not expired before schedule(), which under
	 * a slow (TCG, KASAN) guest is not every time: there, every record
	 * but the enabling ioctl's must hold the reader.
	 */
	int want = is_switch ? (int)recs.size() - 1 : kReads - 1;
	EXPECT_GE(with_reader, std::max(want, 1))
		<< "records whose user chain holds tp_reader";
	if (!is_switch) {
		/* One sample per read entry, one record per entry. */
		EXPECT_EQ(res.announced, (size_t)samples)
			<< "two reads shared a cookie";
		EXPECT_GE(recs.size() + 1, (size_t)samples);
	}
}

TEST(Tracepoint, SchedSwitchKernelChainIsFull)
{
	sample_tracepoint("sched/sched_switch", false);
}

TEST(Tracepoint, SysEnterReadDeferredUserChain)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	sample_tracepoint("syscalls/sys_enter_read", true);
}

TEST(Tracepoint, SchedSwitchDeferredUserChain)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	sample_tracepoint("sched/sched_switch", true);
}

} // namespace
