// SPDX-License-Identifier: GPL-2.0
/*
 * Cookies (doc/kernel.md, "The per-task cache and the cookie"): never 0; one
 * cookie per kernel entry of a task, shared by every sample and every event in
 * that entry; a new cookie for every entry; no collision between tasks running
 * on different CPUs at the same time. Skips on a kernel without
 * defer_callchain.
 */
#include <gtest/gtest.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/perf_abi.h"
#include "lib/session.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

TEST(Cookie, NonZeroAndNewForEveryEntry)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	session::Session s;
	session::Options o;
	o.pages = 512; /* no lost sample may hide a record's announcer */
	ASSERT_EQ(s.open(o, 0, -1), 0);
	s.enable();
	/* Rounds of 0.1 s (~400 entries under TCG) until 2 records */
	work::Deadline deadline(10);
	int rounds = 0;
	std::string err;
	do {
		work::mixed(0.1);
		s.drain();
		rounds++;
	} while (s.deferred(0, &err).size() < 2 && err.empty() &&
		 !deadline.passed());
	perf::CookieMatcher m;
	ASSERT_TRUE(s.stop(&m, &err)) << err;
	perf::MatchResult r = m.match();
	std::set<uint64_t> cookies;
	size_t zero = 0;
	for (const perf::Announce &a : m.announces())
		zero += a.cookie == 0;
	for (const perf::Delivery &d : m.deliveries()) {
		zero += d.cookie == 0;
		cookies.insert(d.cookie);
	}
	printf("# %s\n# %zu records, %zu distinct cookies, %zu zero "
	       "cookies; %d round(s) of 0.1 s, %s\n", r.describe().c_str(),
	       r.records, cookies.size(), zero, rounds,
	       deadline.describe().c_str());
	EXPECT_EQ(zero, 0u) << "cookie 0 in a sample or a record";
	EXPECT_GT(r.records, 1u) << "need records from several entries";
	/*
	 * A cookie's record comes again only after a later sample of its
	 * entry (the callbacks ran again): never two entries' records under
	 * one cookie without such a sample (the getppid loop below has one
	 * sample per entry, so there each record is its own entry's).
	 */
	EXPECT_TRUE(r.duplicates.empty())
		<< "a record again that answers no sample: " << r.describe();
	EXPECT_TRUE(r.orphans.empty()) << r.describe();

	/*
	 * Records alone cannot tell two entries sharing a cookie from one
	 * entry: here each getppid() is one entry with one sample, so each
	 * call needs its own cookie, answered by exactly one record.
	 */
	long id = work::tracepoint_id("syscalls/sys_enter_getppid");
	if (id < 0)
		GTEST_SKIP() << "no tracepoint syscalls/sys_enter_getppid";
	constexpr size_t kCalls = 100;
	session::Options t;
	t.type = PERF_TYPE_TRACEPOINT;
	t.config = (uint64_t)id;
	t.period = 1;
	session::Session ts;
	ASSERT_EQ(ts.open(t, 0, -1), 0);
	ts.enable();
	for (size_t i = 0; i < kCalls; i++)
		syscall(SYS_getppid);
	perf::CookieMatcher tm;
	ASSERT_TRUE(ts.stop(&tm, &err)) << err;
	perf::MatchResult tr = tm.match();
	std::set<uint64_t> per_call;
	size_t one_record = 0;
	for (const perf::Announce &a : tm.announces()) {
		per_call.insert(a.cookie);
		auto it = tr.by_key.find({ a.cookie, a.tid });
		one_record += it != tr.by_key.end() && it->second.size() == 1;
	}
	printf("# sys_enter_getppid, %zu calls: %zu samples, %zu deferred, "
	       "%zu distinct cookies, %zu samples whose cookie has exactly "
	       "one record\n", kCalls, tr.samples, tr.announcing_samples,
	       per_call.size(), one_record);
	EXPECT_EQ(tr.announcing_samples, kCalls) << tr.describe();
	EXPECT_EQ(per_call.size(), kCalls)
		<< "two calls (two kernel entries) with one cookie";
	EXPECT_EQ(one_record, kCalls) << tr.describe();
}

/*
 * Three events on this task, buffer 0 receiving the records, 1 and 2
 * sampling only, through ~900 kernel entries; every sample and record
 * kept (checked: no ring buffer lost any).
 */
struct ThreeEvents {
	perf::CookieMatcher m;
	perf::OrderResult o;
	perf::MatchResult r;
	size_t multi = 0, multi_event = 0; /* entries sampled >1, by >1 event */
};

void sample_three_events(ThreeEvents *t)
{
	/* Buffer 0 receives the records; 1 and 2 only sample. */
	session::Options recv, clock2, task;
	clock2.defer_output = task.defer_output = false;
	/*
	 * Every sample and record must be kept, or orphans and unmatched
	 * cookies mean nothing: big buffers, drained after every round of
	 * reads (a debug kernel under TCG takes seconds for a 16 MiB read,
	 * thousands of samples, so the rounds read 2 MiB).
	 */
	recv.pages = clock2.pages = task.pages = 512;
	clock2.period = 310000;
	task.config = PERF_COUNT_SW_TASK_CLOCK;
	task.period = 170000;
	session::Session s;
	ASSERT_EQ(s.open(recv, 0, -1), 0);
	ASSERT_EQ(s.open(clock2, 0, -1), 0);
	ASSERT_EQ(s.open(task, 0, -1), 0);
	s.enable();
	/* ~900 entries; the periods and so the time follow the slowdown */
	uint64_t until = work::now_ns() +
			 (uint64_t)(150000000 * work::slowdown());
	do {
		work::mixed(0, 2 << 20); /* one round: two reads, a spin */
		s.drain();
	} while (work::now_ns() < until);
	std::string err;
	ASSERT_TRUE(s.stop(&t->m, &err)) << err;
	t->o = t->m.check_next(0);
	t->r = t->m.match();
	ASSERT_EQ(t->r.lost, 0u) << "a ring buffer overflowed, so records are "
				    "missing and nothing can be concluded: "
				 << t->r.describe();

	/* Entries sampled more than once, and by more than one event. */
	std::map<uint64_t, std::set<size_t>> events_per_cookie;
	std::map<uint64_t, int> samples_per_cookie;
	for (const perf::Announce &a : t->m.announces()) {
		events_per_cookie[a.cookie].insert(a.buffer);
		samples_per_cookie[a.cookie]++;
	}
	for (auto &[c, n] : samples_per_cookie)
		t->multi += n > 1;
	for (auto &[c, e] : events_per_cookie)
		t->multi_event += e.size() > 1;
	printf("# %s\n# %s\n# %zu entries sampled more than once, %zu by "
	       "more than one event\n", t->r.describe().c_str(),
	       t->o.describe().c_str(), t->multi, t->multi_event);
}

/*
 * Upstream's promise (doc/abi.md): every sample of one kernel entry, of
 * any event, carries the cookie of that entry's record. A sample taken
 * after the record was written may get no record of its own (upstream
 * writes one per entry: such samples are counted as late, not judged
 * here; Cookie.RecordFollowsEverySampleOfItsEntry judges them).
 */
TEST(Cookie, SharedByAllSamplesAndEventsOfOneEntry)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	ThreeEvents t;
	sample_three_events(&t);
	if (::testing::Test::HasFatalFailure())
		return;
	EXPECT_GT(t.o.checked, 0u) << "no sample followed by a record";
	EXPECT_TRUE(t.o.mismatches.empty())
		<< "a sample's cookie is not the cookie of the next record of "
		   "its entry: " << t.o.describe();
	EXPECT_GT(t.multi_event, 0u)
		<< "no entry was sampled by two events: nothing to compare";
	EXPECT_TRUE(t.r.orphans.empty() && t.r.duplicates.empty())
		<< t.r.describe();
}

/*
 * The series' addition: a sample taken after its entry's record gets the
 * record again after it (the callbacks run again) or, past the exit to
 * user mode loop or during the callbacks, is unwound in place. So no
 * sample of an entry is followed by no record of it (upstream 7.2 has
 * such samples: doc/upstream/conformance.md).
 */
TEST(Cookie, RecordFollowsEverySampleOfItsEntry)
{
	EXTENSION("the callbacks run again for a request made after they ran "
		  "in the same entry, so a record follows every sample "
		  "(doc/kernel.md, differences from upstream); upstream "
		  "writes one record per entry");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	ThreeEvents t;
	sample_three_events(&t);
	if (::testing::Test::HasFatalFailure())
		return;
	EXPECT_GT(t.o.checked, 0u) << "no sample followed by a record";
	EXPECT_EQ(t.o.late, 0u) << "samples after their entry's record and "
				   "followed by none of it: " << t.o.describe();
	EXPECT_TRUE(t.o.mismatches.empty()) << t.o.describe();
	EXPECT_TRUE(t.r.orphans.empty() && t.r.duplicates.empty())
		<< t.r.describe();
}

struct PerCpu {
	int cpu = -1, pinned = 0, open = 0, ran_on = -1;
	pid_t tid = 0;
	std::vector<perf::Delivery> records;
	std::vector<perf::Announce> announces;
	size_t unearned = 0; /* records again that answer no sample */
	std::string err;
};

TEST(Cookie, UniqueAcrossConcurrentCpus)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	std::vector<int> cpus = session::online_cpus();
	std::vector<PerCpu> res(cpus.size());
	pthread_barrier_t ready, go;
	pthread_barrier_init(&ready, nullptr, cpus.size() + 1);
	pthread_barrier_init(&go, nullptr, cpus.size() + 1);
	std::vector<std::thread> threads;
	for (size_t i = 0; i < cpus.size(); i++) {
		threads.emplace_back([&, i] {
			PerCpu &p = res[i];
			p.cpu = cpus[i];
			p.tid = work::gettid();
			p.pinned = work::pin(0, p.cpu);
			session::Session s;
			session::Options o;
			o.period = 100000;
			p.open = s.open(o, 0, -1);
			pthread_barrier_wait(&ready);
			pthread_barrier_wait(&go);
			if (p.open)
				return;
			s.enable();
			/* 20+ records each; longer as the period is */
			work::mixed(0.1 * work::slowdown(), 256 << 10);
			s.disable();
			p.ran_on = work::current_cpu();
			s.drain();
			perf::CookieMatcher m;
			if (!s.match(&m, &p.err))
				return;
			p.records = m.deliveries();
			p.announces = m.announces();
			p.unearned = m.match().duplicates.size();
		});
	}
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&go);
	for (auto &t : threads)
		t.join();
	pthread_barrier_destroy(&ready);
	pthread_barrier_destroy(&go);

	std::map<uint64_t, std::set<pid_t>> owners;
	size_t total = 0;
	for (PerCpu &p : res) {
		ASSERT_EQ(p.pinned, 0) << "pin to CPU " << p.cpu;
		ASSERT_EQ(p.open, 0) << "perf_event_open on CPU " << p.cpu;
		ASSERT_TRUE(p.err.empty()) << p.err;
		std::set<uint64_t> mine;
		int off_cpu = 0;
		for (const perf::Delivery &d : p.records) {
			owners[d.cookie].insert(p.tid);
			mine.insert(d.cookie);
			off_cpu += (int)d.cpu != p.cpu;
		}
		for (const perf::Announce &a : p.announces)
			owners[a.cookie].insert(p.tid);
		total += p.records.size();
		printf("# cpu %d tid %d: %zu records, %zu distinct cookies, %zu "
		       "samples, %d records from another CPU\n", p.cpu, p.tid,
		       p.records.size(), mine.size(), p.announces.size(),
		       off_cpu);
		EXPECT_GT(p.records.size(), 0u) << "no record on CPU " << p.cpu;
		/*
		 * A cookie's record again must answer a sample of its entry
		 * taken after the previous one (the callbacks ran again);
		 * NonZeroAndNewForEveryEntry checks one cookie per entry.
		 */
		EXPECT_EQ(p.unearned, 0u)
			<< "records again that answer no sample on CPU " << p.cpu;
		EXPECT_EQ(off_cpu, 0) << "thread pinned to CPU " << p.cpu
				      << " got records from another CPU";
	}
	size_t shared = 0;
	for (auto &[c, tids] : owners)
		if (tids.size() > 1) {
			if (shared++ < 5)
				ADD_FAILURE() << "cookie 0x" << std::hex << c
					      << std::dec << " used by "
					      << tids.size() << " threads";
		}
	printf("# %zu threads, %zu records, %zu cookies, %zu shared between "
	       "threads\n", res.size(), total, owners.size(), shared);
	EXPECT_EQ(shared, 0u) << "cookies collide across CPUs";
}

/*
 * The cookies of entries on different CPUs at the same moment must differ
 * even where each CPU's own count of entries is the same. The series
 * numbers a CPU's entries with a per-CPU sequence and adds the CPU number
 * (doc/kernel.md, "The per-task cache and the cookie"); CPUs that had
 * different histories are far apart in their sequences, so a test that
 * only samples them at once passes even when the CPU part is lost. Here
 * each CPU's thread first makes entries until its sequence reached the
 * furthest one (read from its cookies, in the series' layout: bits 16-63),
 * then every thread makes the same number of entries at once: without
 * the CPU part, every CPU's cookies would be the same ones.
 */
constexpr int kCatchUpBatch = 2000;
constexpr int kTogether = 1000;

/* getppid() n times; the cookies of their samples on s's event 0 */
std::vector<uint64_t> entries(int n, long tp, size_t pages, std::string *err)
{
	session::Session s;
	session::Options o = session::tracepoint(tp, pages);
	int r = s.open(o, 0, -1);
	if (r) {
		*err = std::string("sys_enter_getppid: ") + strerror(-r);
		return {};
	}
	s.enable();
	for (int i = 0; i < n; i++) {
		syscall(SYS_getppid);
		s.drain_if_fuller();
	}
	s.disable();
	s.drain();
	std::vector<uint64_t> cookies;
	for (const perf::Sample &sm : s.samples(0, err)) {
		perf::SplitChain c = perf::split_callchain(sm.callchain);
		if (c.deferred)
			cookies.push_back(c.cookie);
	}
	return cookies;
}

uint64_t seq_of(uint64_t cookie)
{
	return cookie >> 16;
}

struct Together {
	int cpu = -1, pinned = -1;
	pid_t tid = 0;
	bool series_layout = true;
	uint64_t first_seq = 0, caught_up_seq = 0;
	uint64_t lo = 0, hi = 0; /* the sequence of the last round's cookies */
	std::vector<uint64_t> cookies; /* of every round */
	std::string err;
};

/*
 * Rounds: each CPU's thread measures its sequence, catches up with the
 * furthest, then every thread makes kTogether entries at once. Other
 * programs' entries move a CPU's sequence on meanwhile (two test programs
 * run at a time), so a round whose sequences did not meet is made again,
 * up to kRounds; the cookies of every round are judged.
 */
constexpr int kRounds = 5;

TEST(Cookie, UniqueAcrossCpusCountingTheSame)
{
	EXTENSION("sized by the series' cookie layout (doc/kernel.md); the "
		  "verdict, no cookie shared by two tasks, is the ABI's");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long tp = work::tracepoint_id("syscalls/sys_enter_getppid");
	if (tp < 0)
		GTEST_SKIP() << "no syscalls:sys_enter_getppid tracepoint "
				"(CONFIG_FTRACE_SYSCALLS, tracefs)";
	std::vector<int> cpus = session::online_cpus();
	if (cpus.size() < 2)
		GTEST_SKIP() << "needs 2 CPUs, have " << cpus.size();
	std::vector<Together> res(cpus.size());
	std::atomic<uint64_t> target{ 0 };
	pthread_barrier_t measured, caught_up, together;
	pthread_barrier_init(&measured, nullptr, cpus.size());
	pthread_barrier_init(&caught_up, nullptr, cpus.size());
	pthread_barrier_init(&together, nullptr, cpus.size());
	work::Deadline dl(60);
	/* The sequences' overlap in the last round, the same for all */
	auto overlap = [&res]() {
		uint64_t lo = 0, hi = UINT64_MAX;
		for (const Together &t : res) {
			lo = std::max(lo, t.lo);
			hi = std::min(hi, t.hi);
		}
		return hi >= lo ? hi - lo + 1 : 0;
	};
	int rounds = 0;
	std::vector<std::thread> threads;
	for (size_t i = 0; i < cpus.size(); i++) {
		threads.emplace_back([&, i] {
			Together &t = res[i];
			t.cpu = cpus[i];
			t.tid = work::gettid();
			t.pinned = work::pin(0, t.cpu);
			for (int round = 0; round < kRounds; round++) {
				/*
				 * The series' layout: a pinned thread's cookies
				 * keep their low 16 bits (the CPU part), the
				 * sequence above them grows. Another kernel's
				 * (upstream's counts in the low 32 bits) is not
				 * caught up with.
				 */
				std::vector<uint64_t> c =
					entries(8, tp, 16, &t.err);
				t.series_layout = c.size() >= 2;
				for (uint64_t k : c)
					t.series_layout &= (k & 0xffff) ==
							   (c[0] & 0xffff);
				t.first_seq = c.empty() ? 0 : seq_of(c.back());
				if (i == 0)
					target = 0;
				pthread_barrier_wait(&measured);
				uint64_t cur = target.load();
				while (cur < t.first_seq &&
				       !target.compare_exchange_weak(cur,
								     t.first_seq))
					;
				pthread_barrier_wait(&caught_up);
				t.caught_up_seq = t.first_seq;
				while (t.series_layout && t.err.empty() &&
				       t.caught_up_seq < target.load() &&
				       !dl.passed()) {
					int n = (int)std::min<uint64_t>(
						kCatchUpBatch,
						target.load() - t.caught_up_seq);
					c = entries(n, tp, 16, &t.err);
					if (!c.empty())
						t.caught_up_seq = seq_of(c.back());
				}
				pthread_barrier_wait(&together);
				c = entries(kTogether, tp, 256, &t.err);
				t.lo = t.hi = 0;
				if (!c.empty()) {
					t.lo = seq_of(*std::min_element(c.begin(),
									c.end()));
					t.hi = seq_of(*std::max_element(c.begin(),
									c.end()));
				}
				t.cookies.insert(t.cookies.end(), c.begin(),
						 c.end());
				pthread_barrier_wait(&measured);
				if (i == 0)
					rounds = round + 1;
				bool done = !t.series_layout ||
					    overlap() >= kTogether / 2 ||
					    dl.passed();
				pthread_barrier_wait(&caught_up);
				if (done)
					break;
			}
		});
	}
	for (auto &t : threads)
		t.join();
	pthread_barrier_destroy(&measured);
	pthread_barrier_destroy(&caught_up);
	pthread_barrier_destroy(&together);

	std::map<uint64_t, std::set<pid_t>> owners;
	bool series_layout = true;
	for (Together &t : res) {
		ASSERT_EQ(t.pinned, 0) << "pin to CPU " << t.cpu;
		ASSERT_TRUE(t.err.empty()) << "CPU " << t.cpu << ": " << t.err;
		ASSERT_GE(t.cookies.size(), (size_t)kTogether / 2)
			<< "CPU " << t.cpu << ": too few samples";
		series_layout &= t.series_layout;
		for (uint64_t k : t.cookies)
			owners[k].insert(t.tid);
		printf("# cpu %d tid %d: sequence at %llu, caught up to %llu "
		       "(target %llu), %zu cookies in all, the last round's "
		       "sequence %llu-%llu\n", t.cpu, t.tid,
		       (unsigned long long)t.first_seq,
		       (unsigned long long)t.caught_up_seq,
		       (unsigned long long)target.load(), t.cookies.size(),
		       (unsigned long long)t.lo, (unsigned long long)t.hi);
	}
	size_t shared = 0;
	for (auto &[k, tids] : owners)
		shared += tids.size() > 1;
	uint64_t met = overlap();
	printf("# %zu CPUs, %d round(s), %zu distinct cookies, %zu shared by "
	       "two tasks; the last round's sequences overlap on every CPU "
	       "over %llu entries (%s)\n", cpus.size(), rounds, owners.size(),
	       shared, (unsigned long long)met, dl.describe().c_str());
	EXPECT_EQ(shared, 0u) << "cookies shared by tasks on different CPUs";
	if (series_layout) {
		EXPECT_GE(met, (uint64_t)kTogether / 2)
			<< "in " << rounds << " rounds the CPUs' sequences "
			   "were not brought together: the test could not have "
			   "seen a collision";
	}
}

} // namespace
