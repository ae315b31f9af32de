// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred user callchains (doc/abi.md, doc/kernel.md), on any kernel:
 * ours, upstream 6.19+, or one without the feature (every test skips there).
 *
 * A sample taken in the kernel by an event with defer_callchain must end
 * its callchain with PERF_CONTEXT_USER_DEFERRED and one entry, the cookie
 * of the kernel entry; right before the task returns to user space, one
 * PERF_RECORD_CALLCHAIN_DEFERRED with that cookie and the task's TID must
 * reach each defer_output event, holding the user return addresses (the
 * test's own known recursion), however many samples the entry had. Per-CPU
 * events get the record on the CPU the task returns on.
 */
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/known_chain.h"
#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

constexpr int kDepth = 6;

double now()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

pid_t gettid_()
{
	return (pid_t)syscall(SYS_gettid);
}

/* What the bottom of the recursion does in the kernel. */
struct Work {
	enum { kRead, kAffinity, kExit } op = kRead;
	int fd = -1;
	double until = 0;
	int cpu = 0;
};

/*
 * 8 MiB reads: several cpu-clock samples an entry even when the host is
 * busy and TCG delivers the guest's timer late. run_reads() faults the
 * buffer in before it samples.
 */
static char read_buf[8 << 20];

/* The bottom of the recursion: system calls only. */
extern "C" __attribute__((noinline)) int deferred_leaf(const Work *w)
{
	int n = 0;

	switch (w->op) {
	case Work::kRead:
		while (now() < w->until) {
			if (read(w->fd, read_buf, sizeof(read_buf)) <= 0)
				return -1;
			n++;
		}
		return n;
	case Work::kAffinity: {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		return sched_setaffinity(0, sizeof(set), &set) ? -1 : 1;
	}
	case Work::kExit:
		syscall(SYS_exit_group, 0);
		return -1;
	}
	return -1;
}

/* Each level leaves one return address inside this function. */
extern "C" __attribute__((noinline)) int deferred_recurse(int n, const Work *w)
{
	if (n == 0)
		return deferred_leaf(w);
	int r = deferred_recurse(n - 1, w);
	asm volatile("" ::: "memory"); /* no tail call */
	return r;
}

/* The deferred records of every buffer of s, with their buffer. */
struct Delivery {
	perf::DeferredCallchain d;
	size_t buffer = 0;
};

std::vector<Delivery> deliveries(const session::Session &s)
{
	std::vector<Delivery> out;
	for (size_t b = 0; b < s.size(); b++) {
		std::string err;
		for (perf::DeferredCallchain &d : s.deferred(b, &err))
			out.push_back({ std::move(d), b });
		EXPECT_TRUE(err.empty()) << "buffer " << b << ": " << err;
	}
	return out;
}

/* Records by (cookie, tid). */
std::map<std::pair<uint64_t, uint32_t>, std::vector<const Delivery *>>
by_key(const std::vector<Delivery> &v)
{
	std::map<std::pair<uint64_t, uint32_t>, std::vector<const Delivery *>> m;
	for (const Delivery &d : v)
		m[{ d.d.cookie, d.d.sid.tid }].push_back(&d);
	return m;
}

/*
 * Match everything s drained; fail on what breaks the ABI in any sample:
 * PERF_CONTEXT_USER_DEFERRED not followed by exactly one entry or next to
 * a PERF_CONTEXT_USER part, or a cookie 0.
 */
perf::MatchResult match(const session::Session &s, perf::CookieMatcher *m)
{
	std::string err;
	EXPECT_TRUE(s.match(m, &err)) << err;
	perf::MatchResult r = m->match();
	EXPECT_EQ(r.bad_marker_samples, 0u)
		<< "PERF_CONTEXT_USER_DEFERRED not followed by exactly one "
		   "entry, or next to a PERF_CONTEXT_USER part: "
		<< r.describe();
	for (const perf::Announce &a : m->announces())
		EXPECT_NE(a.cookie, 0u) << "deferred callchain with cookie 0";
	return r;
}

void check_record(const perf::DeferredCallchain &d, pid_t tid)
{
	EXPECT_EQ(d.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER)
		<< "deferred record misc 0x" << std::hex << d.misc;
	EXPECT_EQ(d.sid.tid, (uint32_t)tid) << "deferred record of another task";
	EXPECT_FALSE(d.ips.empty()) << "deferred record without user address";
	for (uint64_t ip : d.ips) {
		EXPECT_LT(ip, perf_abi::kUserLimit)
			<< "kernel address or context marker 0x" << std::hex
			<< ip << " in a deferred record";
	}
}

/* What every test here samples: the recursion, on a cpu-clock event. */
session::Options sampling(bool defer_output)
{
	session::Options o;
	o.period = 100000; /* ns */
	o.defer_output = defer_output;
	o.pages = 256;
	return o;
}

/*
 * Skip on a kernel without the feature, else find deferred_recurse in the
 * test's own symbols. A macro, so that the skip or a failure ends the test
 * (each test starts with EXTENSION() when it is one, then this).
 */
#define DEFERRED_SETUP()                                                    \
	do {                                                                \
		SKIP_UNLESS_DEFER_CALLCHAIN();                              \
		ASSERT_NO_FATAL_FAILURE(load_symbols());                    \
	} while (0)

class Deferred : public ::testing::Test {
protected:
	void load_symbols()
	{
		std::string err;
		symbols_ = syms::load("/proc/self/exe", &err);
		ASSERT_FALSE(symbols_.empty()) << err;
		rec_ = syms::find(symbols_, "deferred_recurse");
		ASSERT_NE(rec_, nullptr) << "deferred_recurse not in the symbols";
	}

	/*
	 * The cookies of the entries that are the recursion's reads, by
	 * their samples' kernel part (buffer 0): their user stack is the
	 * recursion.
	 */
	std::set<uint64_t> read_entries(const session::Session &s)
	{
		std::set<uint64_t> reads;
		std::string err;
		for (const perf::Sample &sm : s.samples(0, &err)) {
			perf::SplitChain sc = perf::split_callchain(sm.callchain);
			if (sc.deferred && known_chain::in_read(sm))
				reads.insert(sc.cookie);
		}
		EXPECT_TRUE(err.empty()) << err;
		return reads;
	}

	/*
	 * Sample the recursion reading /dev/zero with the cpu-clock event
	 * (buffer 0 of s) on this thread, until enough kernel entries had
	 * several samples.
	 */
	void run_reads(session::Session *s)
	{
		int fd = open("/dev/zero", O_RDONLY);
		ASSERT_GE(fd, 0) << strerror(errno);
		Work w;
		w.op = Work::kRead;
		w.fd = fd;
		/*
		 * Fault the buffer in first: otherwise the first read faults
		 * in 2048 pages inside one entry, which took 4568 samples
		 * (about 0.46 s) on arm64's debug kernel under TCG, more
		 * than the sampling event's 256 pages hold (114 lost).
		 */
		memset(read_buf, 1, sizeof(read_buf));
		/*
		 * Rounds of 50 ms until 3 entries had several samples, 10
		 * records came and one of them is a read's (1 to 4 rounds on
		 * the reference guest).
		 */
		work::Deadline deadline(10);
		bool enough = false;
		while (!enough && !deadline.passed()) {
			s->event(0).enable();
			w.until = now() + 0.05;
			ASSERT_GT(deferred_recurse(kDepth, &w), 0);
			uint64_t off = work::now_ns();
			s->event(0).disable();
			disabling_.push_back({ off, work::now_ns() });
			s->drain();
			perf::CookieMatcher m;
			std::string err;
			ASSERT_TRUE(s->match(&m, &err)) << err;
			std::map<uint64_t, int> per_cookie;
			for (const perf::Announce &a : m.announces())
				per_cookie[a.cookie]++;
			int shared = 0;
			for (auto &kv : per_cookie)
				shared += kv.second > 1;
			std::set<uint64_t> reads = read_entries(*s);
			bool read_recorded = false;
			for (const perf::Delivery &d : m.deliveries())
				read_recorded |= reads.count(d.cookie) > 0;
			enough = shared >= 3 && m.deliveries().size() >= 10 &&
				 read_recorded;
		}
		close(fd);
		printf("# %zu round(s) of 50 ms, %s\n", disabling_.size(),
		       deadline.describe().c_str());
		EXPECT_TRUE(enough) << "fewer than 3 kernel entries with several "
				       "samples, 10 records or a read's record, "
				    << deadline.describe();
		for (size_t i = 0; i < s->size(); i++)
			EXPECT_EQ(s->event(i).lost(), 0u) << "buffer " << i;
	}

	/*
	 * Every announced cookie has exactly one record in the buffer of
	 * the defer_output event, with the same TID; every record answers
	 * a sample. With tolerate_disabling, an entry whose samples were
	 * all taken inside an ioctl that disabled the sampling event may go
	 * without a record when that event is its own receiver: the record
	 * has nowhere to go (one such entry per round of run_reads()).
	 */
	void check_matches(const session::Session &s, size_t out_buffer,
			   bool tolerate_disabling)
	{
		perf::CookieMatcher m;
		perf::MatchResult r = match(s, &m);
		std::vector<Delivery> recs = deliveries(s);
		pid_t tid = gettid_();
		auto keyed = by_key(recs);
		std::map<uint64_t, int> per_cookie;
		/* The first and last sample time of each cookie. */
		std::map<uint64_t, std::pair<uint64_t, uint64_t>> span;
		for (const perf::Announce &a : m.announces()) {
			per_cookie[a.cookie]++;
			auto it = span.emplace(a.cookie,
					       std::make_pair(a.time, a.time));
			it.first->second.first =
				std::min(it.first->second.first, a.time);
			it.first->second.second =
				std::max(it.first->second.second, a.time);
		}
		auto in_disabling = [&](uint64_t cookie) {
			auto [first, last] = span[cookie];
			for (auto [off, done] : disabling_)
				if (first >= off && last <= done)
					return true;
			return false;
		};
		/* Records again that answer no later sample of their entry */
		std::set<uint64_t> unearned;
		for (const perf::Delivery &d : r.duplicates)
			unearned.insert(d.cookie);
		int unmatched = 0, shared = 0, max_per_cookie = 0, again = 0;
		for (auto &kv : per_cookie) {
			shared += kv.second > 1;
			max_per_cookie = std::max(max_per_cookie, kv.second);
			auto it = keyed.find({ kv.first, (uint32_t)tid });
			size_t n = 0;
			for (auto *v : it == keyed.end() ?
				     std::vector<const Delivery *>() : it->second)
				n += v->buffer == out_buffer;
			if (n == 0 && tolerate_disabling &&
			    in_disabling(kv.first)) {
				unmatched++;
				continue;
			}
			/*
			 * One record, or more when a sample came after the
			 * callbacks ran and they ran again for it.
			 */
			again += n > 1;
			EXPECT_TRUE(n == 1 || (n > 1 && !unearned.count(kv.first)))
				<< "cookie 0x" << std::hex << kv.first
				<< " announced by " << std::dec << kv.second
				<< " samples: " << n << " records";
		}
		std::set<uint64_t> reads = read_entries(s);
		int with_recursion = 0, of_reads = 0, reads_with_recursion = 0;
		std::string first_bad;
		for (const Delivery &v : recs) {
			check_record(v.d, tid);
			EXPECT_TRUE(per_cookie.count(v.d.cookie))
				<< "record with cookie 0x" << std::hex
				<< v.d.cookie << " answers no sample";
			bool rec = syms::longest_run(v.d.ips, *rec_) >= kDepth;
			with_recursion += rec;
			if (!reads.count(v.d.cookie))
				continue;
			of_reads++;
			reads_with_recursion += rec;
			if (!rec && first_bad.empty())
				first_bad = session::hex_chain(v.d.ips);
		}
		int kernel_samples = 0;
		for (const perf::Announce &a : m.announces())
			kernel_samples += a.in_kernel;
		printf("# samples %zu (deferred %zu, in kernel %d, in-place "
		       "user %zu (%zu after their record), no user %zu), "
		       "cookies %zu (shared by >1 "
		       "sample %d, most samples %d), deferred records %zu "
		       "(holding the recursion %d; of entries sampled in "
		       "read() %d, %d of them holding it), entries with their "
		       "record again %d, unmatched in a disabling "
		       "ioctl %d, rounds %zu\n",
		       r.samples, r.announcing_samples, kernel_samples,
		       r.fallback_samples, r.explained_fallbacks,
		       r.no_user_samples, per_cookie.size(),
		       shared, max_per_cookie, recs.size(), with_recursion,
		       of_reads, reads_with_recursion, again,
		       unmatched, disabling_.size());
		EXPECT_GT(kernel_samples, 0) << "no deferred kernel sample";
		/*
		 * cpu-clock samples are interrupts: one that lands while the
		 * entry's callbacks run is refused and unwound in place, with
		 * the stack of the entry's record next to it; no other is.
		 * How many follows the callbacks' time, so only that is
		 * judged.
		 */
		EXPECT_TRUE(r.unexplained_fallbacks.empty())
			<< "samples unwound in place: " << r.describe();
		EXPECT_GT(shared, 0)
			<< "no kernel entry with several samples";
		/*
		 * How many records lack the recursion is not judged: they are
		 * the entries outside it (the enable and disable ioctls, the
		 * interrupts of samples taken in user mode between the
		 * system calls, page faults), each with its record again for
		 * every sample after its callbacks ran, and all of them grow
		 * with the host's slowness (9 of 13 were explained on a host
		 * 2.5x slower). What the kernel guarantees is judged: a
		 * record of an entry sampled in the recursion's read() is
		 * that stack.
		 */
		EXPECT_GT(of_reads, 0) << "no record of an entry sampled in "
					  "read()";
		EXPECT_EQ(reads_with_recursion, of_reads)
			<< "records of read() entries without " << kDepth
			<< " frames of deferred_recurse; first: " << first_bad;
		EXPECT_GT(with_recursion, 0);
	}

	/* Per-CPU records of sched_setaffinity() calls that move us. */
	void per_cpu_migration(bool track);

	/* CLOCK_MONOTONIC before and after each disabling ioctl. */
	std::vector<std::pair<uint64_t, uint64_t>> disabling_;

	std::vector<syms::Symbol> symbols_;
	const syms::Symbol *rec_ = nullptr;
};

TEST(DeferredAbi, BitsAcceptedTogetherAndAlone)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	EXPECT_EQ(features::try_attr_bit(perf_abi::kDeferOutputBit), 0);
	EXPECT_EQ(features::try_attr_bit(perf_abi::kDeferOutputBit + 1),
		  -EINVAL);

	perf_event_attr attr = session::make_attr(sampling(true));
	int fd = perf::open_event(&attr, 0, -1);
	EXPECT_GE(fd, 0) << "both bits: " << strerror(-fd);
	if (fd >= 0)
		close(fd);
	EXPECT_TRUE(perf_abi::attr_bit(&attr, perf_abi::kDeferCallchainBit));
	EXPECT_TRUE(perf_abi::attr_bit(&attr, perf_abi::kDeferOutputBit));
}

/*
 * The sampling event defers, a separate side-band event receives: every
 * kernel entry sampled gets exactly one record there, with the cookie and
 * TID of its samples, even the entry that disables the sampling event.
 */
TEST_F(Deferred, PerTaskSamplesInSyscallShareOneRecord)
{
	DEFERRED_SETUP();
	session::Session s;
	int r = s.open(sampling(false), 0, -1);
	if (r == -EACCES || r == -EPERM)
		GTEST_SKIP() << "kernel samples not allowed: " << strerror(-r);
	ASSERT_EQ(r, 0) << strerror(-r);
	ASSERT_EQ(s.open(session::sideband(), 0, -1), 0);
	s.event(1).enable();

	ASSERT_NO_FATAL_FAILURE(run_reads(&s));
	s.event(1).disable();
	s.drain();
	for (const Delivery &v : deliveries(s))
		EXPECT_EQ(v.buffer, 1u) << "record in the sampling event's "
					   "buffer, which lacks defer_output";
	check_matches(s, 1, false);
}

/* A sampling event with defer_output gets the records in its own buffer. */
TEST_F(Deferred, PerTaskSamplingEventGetsItsOwnRecords)
{
	DEFERRED_SETUP();
	session::Session s;
	int r = s.open(sampling(true), 0, -1);
	if (r == -EACCES || r == -EPERM)
		GTEST_SKIP() << "kernel samples not allowed: " << strerror(-r);
	ASSERT_EQ(r, 0) << strerror(-r);

	ASSERT_NO_FATAL_FAILURE(run_reads(&s));
	check_matches(s, 0, true);
}

/* Every hit of tracepoint id sampled, with both deferral bits. */
session::Options deferred_tracepoint(long id)
{
	return session::tracepoint(id, 16);
}

/*
 * Per-CPU events: the sample is taken on the CPU the task leaves (entry of
 * sched_setaffinity), the record must come from the CPU it returns on,
 * with the same cookie and TID, exactly once over all the CPUs' buffers.
 * The per-CPU events are the receivers (defer_output); with track they
 * are side-band events as perf's first event is (mmap, comm, task).
 */
void Deferred::per_cpu_migration(bool track)
{
	std::vector<int> cpus = session::online_cpus();
	int ncpu = (int)cpus.size();
	if (ncpu < 2)
		GTEST_SKIP() << "needs 2 CPUs, have " << ncpu;
	long id = work::tracepoint_id("syscalls/sys_enter_sched_setaffinity");
	if (id < 0)
		GTEST_SKIP() << "no syscalls:sys_enter_sched_setaffinity "
				"tracepoint (CONFIG_FTRACE_SYSCALLS, tracefs)";

	session::Options o = deferred_tracepoint(id);
	o.track = track;
	session::Session s;
	int r = s.open_per_cpu(o);
	if (r == -EACCES || r == -EPERM)
		GTEST_SKIP() << "per-CPU events not allowed: " << strerror(-r);
	ASSERT_EQ(r, 0) << "per-CPU perf_event_open: " << strerror(-r);

	cpu_set_t saved;
	ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
	constexpr int kMoves = 40;
	std::vector<int> target;
	s.enable();
	Work w;
	w.op = Work::kAffinity;
	for (int i = 0; i < kMoves; i++) {
		w.cpu = cpus[(i + 1) % ncpu];
		target.push_back(w.cpu);
		ASSERT_EQ(deferred_recurse(kDepth, &w), 1) << strerror(errno);
	}
	s.disable();
	sched_setaffinity(0, sizeof(saved), &saved);
	s.drain();

	perf::CookieMatcher m;
	perf::MatchResult res = match(s, &m);
	std::vector<Delivery> recs = deliveries(s);
	pid_t tid = gettid_();
	auto keyed = by_key(recs);
	std::vector<perf::Announce> announces = m.announces();
	std::sort(announces.begin(), announces.end(),
		  [](const perf::Announce &a, const perf::Announce &b) {
			  return a.time < b.time;
		  });
	int ours = 0, matched = 0, migrated = 0, on_target = 0,
	    with_recursion = 0;
	std::set<uint64_t> cookies;
	for (const perf::Announce &a : announces) {
		if (a.tid != (uint32_t)tid)
			continue;
		ours++;
		EXPECT_TRUE(cookies.insert(a.cookie).second)
			<< "two sched_setaffinity calls share cookie 0x"
			<< std::hex << a.cookie;
		auto it = keyed.find({ a.cookie, a.tid });
		if (it == keyed.end()) {
			ADD_FAILURE() << "no record for cookie 0x" << std::hex
				      << a.cookie << " sampled on cpu "
				      << std::dec << a.cpu;
			continue;
		}
		EXPECT_EQ(it->second.size(), 1u)
			<< "cookie 0x" << std::hex << a.cookie;
		const Delivery *v = it->second[0];
		matched++;
		check_record(v->d, tid);
		EXPECT_EQ(s.cpu(v->buffer), (int)v->d.sid.cpu)
			<< "record in the buffer of another CPU than its own";
		migrated += v->d.sid.cpu != a.cpu;
		with_recursion += syms::longest_run(v->d.ips, *rec_) >= kDepth;
		if (ours <= kMoves)
			on_target += (int)v->d.sid.cpu == target[ours - 1];
	}
	printf("# cpus %d, receivers %s, sched_setaffinity calls %d, samples "
	       "%zu (ours %d, in-place user %zu), deferred records %zu "
	       "(matched %d, returned on another CPU %d, on the target CPU "
	       "%d, holding the recursion %d)\n", ncpu,
	       track ? "side-band (mmap, comm, task)" : "defer_output only",
	       kMoves, res.samples, ours, res.fallback_samples, recs.size(),
	       matched, migrated, on_target, with_recursion);
	EXPECT_EQ(ours, kMoves) << "one sample per sched_setaffinity call";
	EXPECT_EQ(matched, ours);
	EXPECT_EQ(recs.size(), (size_t)matched) << "orphan records";
	EXPECT_GT(migrated, 0) << "no record written on the CPU moved to";
	EXPECT_EQ(on_target, ours) << "records not on the CPU returned on";
	EXPECT_EQ(with_recursion, matched);
}

TEST_F(Deferred, PerCpuRecordFollowsMigration)
{
	DEFERRED_SETUP();
	per_cpu_migration(true);
}

TEST_F(Deferred, PerCpuRecordFollowsMigrationBareReceivers)
{
	EXTENSION("per-CPU receivers whose only side-band bit is defer_output "
		  "get the records (upstream delivers only to side-band events)");
	DEFERRED_SETUP();
	per_cpu_migration(false);
}

/*
 * A session with per-CPU events on part of the machine (perf record -C 0):
 * a sample on CPU 0 announces a cookie, the task returns to user space on
 * CPU 1, where the session has no event. No sample may lose its user
 * stack silently (doc/kernel.md, Fallbacks): the record is written on
 * CPU 0 as well, where the session sees it, holding the recursion. Before
 * the kernel did, all 100 sampled cookies went unanswered.
 */
TEST_F(Deferred, PerCpuOnPartOfTheMachineLosesNoUserStack)
{
	DEFERRED_SETUP();
	std::vector<int> cpus = session::online_cpus();
	if (cpus.size() < 2)
		GTEST_SKIP() << "needs 2 CPUs, have " << cpus.size();
	long id = work::tracepoint_id("syscalls/sys_enter_sched_setaffinity");
	if (id < 0)
		GTEST_SKIP() << "no syscalls:sys_enter_sched_setaffinity "
				"tracepoint (CONFIG_FTRACE_SYSCALLS, tracefs)";
	session::Options o = deferred_tracepoint(id);
	o.track = true;
	session::Session s;
	int r = s.open(o, -1, cpus[0]);
	if (r == -EACCES || r == -EPERM)
		GTEST_SKIP() << "per-CPU events not allowed: " << strerror(-r);
	ASSERT_EQ(r, 0) << "perf_event_open on CPU " << cpus[0] << ": "
			<< strerror(-r);
	cpu_set_t saved;
	ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
	ASSERT_EQ(work::pin(0, cpus[0]), 0);
	/* From CPU 0 to CPU 1 (sampled), back from 1 to 0 (not sampled) */
	constexpr int kMoves = 200;
	Work w;
	w.op = Work::kAffinity;
	s.enable();
	for (int i = 0; i < kMoves; i++) {
		w.cpu = cpus[i % 2 == 0 ? 1 : 0];
		ASSERT_EQ(deferred_recurse(kDepth, &w), 1) << strerror(errno);
		s.drain_if_fuller();
	}
	s.disable();
	sched_setaffinity(0, sizeof(saved), &saved);
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(s.stop(&m, &err)) << err;
	perf::MatchResult res = m.match();
	std::vector<Delivery> recs = deliveries(s);
	size_t holding = 0;
	for (const Delivery &v : recs) {
		check_record(v.d, gettid_());
		holding += syms::longest_run(v.d.ips, *rec_) >= kDepth;
	}
	printf("# events on CPU %d of %zu, %d sched_setaffinity calls: %s; "
	       "%zu records hold the recursion\n", cpus[0], cpus.size(),
	       kMoves, res.describe().c_str(), holding);
	EXPECT_GE(res.samples, (size_t)kMoves / 2)
		<< "one sample per call made on CPU " << cpus[0];
	EXPECT_TRUE(res.unmatched.empty())
		<< "samples without a user stack in place or a record in the "
		   "session: " << res.describe();
	EXPECT_TRUE(res.clean()) << res.describe();
	EXPECT_EQ(holding, recs.size()) << "records without the recursion";
	EXPECT_EQ(s.lost(), 0u);
}

/*
 * A request made at the entry of exit_group() is answered on the way
 * through do_exit(), while the user stack is still there: the sample's
 * cookie gets its record, with the exiting task's stack.
 */
TEST_F(Deferred, ExitingTaskGetsItsRecord)
{
	EXTENSION("a task sampled on its way out gets its record "
		  "(doc/kernel.md: exit and exec); upstream unwinds it "
		  "in place or not at all");
	DEFERRED_SETUP();
	long id = work::tracepoint_id("syscalls/sys_enter_exit_group");
	if (id < 0)
		GTEST_SKIP() << "no syscalls:sys_enter_exit_group tracepoint";

	int go[2];
	ASSERT_EQ(pipe(go), 0);
	pid_t child = fork();
	ASSERT_GE(child, 0) << strerror(errno);
	if (child == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		Work w;
		w.op = Work::kExit;
		deferred_recurse(kDepth, &w);
		_exit(3);
	}
	close(go[0]);

	session::Options o = deferred_tracepoint(id);
	o.disabled = false;
	session::Session s;
	int r = s.open(o, child, -1);
	if (r) {
		kill(child, SIGKILL);
		waitpid(child, nullptr, 0);
		ASSERT_EQ(r, 0) << strerror(-r);
	}
	ASSERT_EQ(write(go[1], "g", 1), 1);
	int status;
	ASSERT_EQ(waitpid(child, &status, 0), child);
	close(go[1]);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	s.drain();
	perf::CookieMatcher m;
	perf::MatchResult res = match(s, &m);
	std::vector<Delivery> recs = deliveries(s);
	printf("# samples %zu (deferred %zu, in-place user %zu), deferred "
	       "records %zu\n", res.samples, res.announcing_samples,
	       res.fallback_samples, recs.size());
	ASSERT_EQ(m.announces().size(), 1u);
	ASSERT_EQ(recs.size(), 1u);
	const perf::DeferredCallchain &d = recs[0].d;
	EXPECT_EQ(d.cookie, m.announces()[0].cookie);
	check_record(d, child);
	EXPECT_GE(syms::longest_run(d.ips, *rec_), kDepth)
		<< "the exiting child's record lacks its recursion";
}

/*
 * A deferred sample's callchain holds the kernel context, the deferred
 * context and the cookie: below three contexts per stack the kernel
 * cannot store it, and perf must unwind in place (doc/kernel.md:
 * fallbacks), not drop the user stack.
 */
TEST(DeferredFallback, TooFewContextsPerStackUnwindInPlace)
{
	EXTENSION("a sample that cannot defer gets the in-place user chain "
		  "(doc/kernel.md: fallbacks)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long id = work::tracepoint_id("syscalls/sys_enter_getppid");
	if (id < 0)
		SKIP_NOT_APPLICABLE("no tracepoint syscalls/sys_enter_getppid");
	const std::string knob =
		"/proc/sys/kernel/perf_event_max_contexts_per_stack";
	std::string saved = work::read_file(knob);
	ASSERT_FALSE(saved.empty()) << knob;
	constexpr size_t kCalls = 50;
	size_t counts[2][3] = {}; /* [contexts 2, saved][deferred, user, none] */
	for (int round = 0; round < 2; round++) {
		ASSERT_TRUE(work::write_file(knob, round ? saved : "2\n"));
		session::Options t = session::tracepoint(id);
		session::Session ts;
		int r = ts.open(t, 0, -1);
		if (r)
			work::write_file(knob, saved);
		ASSERT_EQ(r, 0) << strerror(-r);
		ts.enable();
		for (size_t i = 0; i < kCalls; i++)
			syscall(SYS_getppid);
		ts.disable();
		ts.drain();
		std::string err;
		for (const perf::Sample &sm : ts.samples(0, &err)) {
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			counts[round][c.deferred ? 0 : !c.user.empty() ? 1 : 2]++;
		}
		ASSERT_TRUE(err.empty()) << err;
	}
	ASSERT_TRUE(work::write_file(knob, saved));
	printf("# %zu getppid with perf_event_max_contexts_per_stack=2: %zu "
	       "deferred, %zu with an in-place user chain, %zu without; with "
	       "%s: %zu, %zu, %zu\n", kCalls, counts[0][0], counts[0][1],
	       counts[0][2], saved.substr(0, saved.find('\n')).c_str(),
	       counts[1][0], counts[1][1], counts[1][2]);
	/* Every call is sampled once; the knob decides how */
	EXPECT_EQ(counts[0][1], kCalls);
	EXPECT_EQ(counts[0][0] + counts[0][2], 0u);
	EXPECT_EQ(counts[1][0], kCalls) << "the default must defer again";
}

/*
 * A BPF program of a sampling event may call bpf_get_stack() on the
 * sample, which wants the user frames at once: perf unwinds such an
 * event's samples in place (doc/kernel.md: fallbacks). The same
 * cpu-clock event on the same workload, without the program, defers.
 * The program (a perf_event one, hand-assembled: no libbpf in the guest)
 * only returns 1, so that every sample is written.
 */
TEST(DeferredFallback, BpfProgramUnwindsInPlace)
{
	EXTENSION("a sample that cannot defer gets the in-place user chain "
		  "(doc/kernel.md: fallbacks)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	bpf_insn prog[2] = {};
	prog[0].code = BPF_ALU64 | BPF_MOV | BPF_K;	/* r0 = 1 */
	prog[0].dst_reg = BPF_REG_0;
	prog[0].imm = 1;
	prog[1].code = BPF_JMP | BPF_EXIT;
	static char log[4096];
	bpf_attr p{};
	p.prog_type = BPF_PROG_TYPE_PERF_EVENT;
	p.insns = (uint64_t)(uintptr_t)prog;
	p.insn_cnt = 2;
	p.license = (uint64_t)(uintptr_t)"GPL";
	p.log_buf = (uint64_t)(uintptr_t)log;
	p.log_size = sizeof(log);
	p.log_level = 1;
	int prog_fd = syscall(__NR_bpf, BPF_PROG_LOAD, &p, sizeof(p));
	/* The guest config asks for BPF_SYSCALL and BPF_EVENTS */
	ASSERT_GE(prog_fd, 0) << "BPF_PROG_LOAD(perf_event program): "
			      << strerror(errno) << "; verifier: " << log;
	int zero = open("/dev/zero", O_RDONLY);
	ASSERT_GE(zero, 0) << strerror(errno);

	/*
	 * [with the program, without][deferred, in-place user, none]. Each
	 * samples in rounds of 0.3 s (about 300 samples at one per ms)
	 * until it has 100. user[] counts the samples taken in user mode
	 * and user_deferred[] those of them that were deferred.
	 */
	size_t counts[2][3] = {}, records[2] = {};
	size_t user[2] = {}, user_deferred[2] = {};
	int rounds[2] = {};
	work::Deadline deadline(10);
	for (int round = 0; round < 2; round++) {
		session::Options o;	/* cpu-clock, perf record -g's fields */
		o.period = 1000000;	/* 1 ms */
		o.pages = 256;
		session::Session s;
		int r = s.open(o, 0, -1);
		ASSERT_EQ(r, 0) << strerror(-r);
		if (round == 0) {
			ASSERT_EQ(ioctl(s.event(0).fd(), PERF_EVENT_IOC_SET_BPF,
					prog_fd),
				  0)
				<< "PERF_EVENT_IOC_SET_BPF: " << strerror(errno);
		}
		std::string err;
		do {
			s.enable();
			work::work_recurse_reading(kDepth, zero,
						   work::now_s() + 0.3);
			s.disable();
			s.drain();
			rounds[round]++;
		} while (s.samples(0, &err).size() < 100 && err.empty() &&
			 !deadline.passed());
		for (const perf::Sample &sm : s.samples(0, &err)) {
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			counts[round][c.deferred ? 0 : !c.user.empty() ? 1 : 2]++;
			if ((sm.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
			    PERF_RECORD_MISC_USER) {
				user[round]++;
				user_deferred[round] += c.deferred;
			}
		}
		ASSERT_TRUE(err.empty()) << err;
		records[round] = s.deferred(0, &err).size();
		ASSERT_TRUE(err.empty()) << err;
	}
	close(zero);
	close(prog_fd);
	size_t with = counts[0][0] + counts[0][1] + counts[0][2];
	size_t without = counts[1][0] + counts[1][1] + counts[1][2];
	printf("# cpu-clock samples of a reading recursion with a BPF "
	       "program: %zu (%zu deferred, %zu in place, %zu without a user "
	       "chain; %zu records; %zu in user mode); without: %zu (%zu, "
	       "%zu, %zu; %zu records; %zu in user mode, %zu of them "
	       "deferred); %d and %d round(s) of 0.3 s, %s\n", with,
	       counts[0][0], counts[0][1], counts[0][2], records[0], user[0],
	       without, counts[1][0], counts[1][1], counts[1][2], records[1],
	       user[1], user_deferred[1], rounds[0], rounds[1],
	       deadline.describe().c_str());
	ASSERT_GE(with, 100u) << deadline.describe();
	EXPECT_EQ(counts[0][1], with) << "every sample unwound in place";
	EXPECT_EQ(records[0], 0u);
	ASSERT_GE(without, 100u) << deadline.describe();
	/*
	 * Without it, a sample taken in user mode always defers; one taken in
	 * the kernel falls back only in the exit window after the task work
	 * ran, whose share of the samples grows with a slower kernel (the
	 * arm64 debug guest: 32 of 284), so the kernel-mode ones are only
	 * required to defer at all.
	 */
	EXPECT_EQ(user_deferred[1], user[1])
		<< "a sample in user mode without the program must defer";
	EXPECT_GE(counts[1][0] - user_deferred[1], 1u)
		<< "samples in the kernel without the program must defer";
	EXPECT_GT(records[1], 0u);
}

} // namespace
