// SPDX-License-Identifier: GPL-2.0
/*
 * Deferred user callchains (SPEC sections 2 and 3), on any kernel: ours,
 * upstream 6.19+, or one without the feature (every test skips there).
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
#include <memory>
#include <set>

#include "lib/features.h"
#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/symbols.h"
#include "lib/workload.h"

namespace {

constexpr int kDepth = 6;
constexpr uint64_t kSampleType = PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
				 PERF_SAMPLE_CALLCHAIN;

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

/* The bottom of the recursion: system calls only. */
extern "C" __attribute__((noinline)) int deferred_leaf(const Work *w)
{
	static char buf[1 << 20];
	int n = 0;

	switch (w->op) {
	case Work::kRead:
		while (now() < w->until) {
			if (read(w->fd, buf, sizeof(buf)) <= 0)
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

perf_event_attr sampling_attr(bool defer_output)
{
	perf_event_attr attr{};
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 100000; /* ns */
	attr.sample_type = kSampleType;
	attr.sample_id_all = 1;
	attr.disabled = 1;
	perf_abi::set_attr_bit(&attr, perf_abi::kDeferCallchainBit);
	if (defer_output)
		perf_abi::set_attr_bit(&attr, perf_abi::kDeferOutputBit);
	return attr;
}

/* A side-band only event that receives the deferred records. */
perf_event_attr output_attr()
{
	perf_event_attr attr{};
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_type = kSampleType & ~PERF_SAMPLE_CALLCHAIN;
	attr.sample_id_all = 1;
	perf_abi::set_attr_bit(&attr, perf_abi::kDeferOutputBit);
	return attr;
}

struct Announce {
	uint64_t cookie = 0, time = 0;
	uint32_t tid = 0, cpu = 0;
	bool in_kernel = false;
};

struct Delivery {
	perf::DeferredCallchain d;
	size_t buffer = 0;
};

/* Everything read from a set of buffers, checked record by record. */
struct Collected {
	size_t samples = 0, in_place_user = 0, no_user = 0;
	std::vector<Announce> announces;
	std::vector<Delivery> deliveries;
	std::vector<std::string> errors;

	void add(size_t buffer, const std::vector<perf::Record> &recs,
		 uint64_t sample_type)
	{
		std::string err;
		for (const perf::Record &r : recs) {
			if (r.header.type == PERF_RECORD_SAMPLE) {
				perf::Sample s;
				if (!perf::parse_sample(r, sample_type, &s, &err)) {
					errors.push_back(err);
					continue;
				}
				samples++;
				add_sample(s);
			} else if (r.header.type ==
				   perf_abi::kRecordCallchainDeferred) {
				Delivery v;
				v.buffer = buffer;
				if (!perf::parse_deferred(r, sample_type, true,
							  &v.d, &err)) {
					errors.push_back(err);
					continue;
				}
				deliveries.push_back(v);
			}
		}
	}

	void add_sample(const perf::Sample &s)
	{
		perf::SplitChain c = perf::split_callchain(s.callchain);
		size_t n = s.callchain.size();
		if (!c.deferred) {
			if (c.has_user_ctx && !c.user.empty())
				in_place_user++;
			else
				no_user++;
			return;
		}
		/* The marker, then exactly one entry: the cookie. */
		if (n < 2 || s.callchain[n - 2] != perf_abi::kContextUserDeferred)
			errors.push_back("PERF_CONTEXT_USER_DEFERRED is not "
					 "followed by exactly one entry");
		if (c.has_user_ctx)
			errors.push_back("deferred callchain also has a "
					 "PERF_CONTEXT_USER part");
		if (!c.cookie)
			errors.push_back("deferred callchain with cookie 0");
		announces.push_back({ c.cookie, s.sid.time, s.sid.tid,
				      s.sid.cpu, c.has_kernel_ctx });
	}

	/* Records by (cookie, tid). */
	std::map<std::pair<uint64_t, uint32_t>, std::vector<const Delivery *>>
	by_key() const
	{
		std::map<std::pair<uint64_t, uint32_t>,
			 std::vector<const Delivery *>> m;
		for (const Delivery &v : deliveries)
			m[{ v.d.cookie, v.d.sid.tid }].push_back(&v);
		return m;
	}
};

void check_record(const perf::DeferredCallchain &d, pid_t tid)
{
	EXPECT_EQ(d.misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER)
		<< "deferred record misc 0x" << std::hex << d.misc;
	EXPECT_EQ(d.sid.tid, (uint32_t)tid) << "deferred record of another task";
	EXPECT_FALSE(d.ips.empty()) << "deferred record without user address";
	for (uint64_t ip : d.ips) {
		EXPECT_LT(ip, 0x00007ffffffff000ULL)
			<< "kernel address or context marker 0x" << std::hex
			<< ip << " in a deferred record";
	}
}

class Deferred : public ::testing::Test {
protected:
	void SetUp() override
	{
		SKIP_UNLESS_DEFER_CALLCHAIN();
		std::string err;
		symbols_ = syms::load("/proc/self/exe", &err);
		ASSERT_FALSE(symbols_.empty()) << err;
		rec_ = syms::find(symbols_, "deferred_recurse");
		ASSERT_NE(rec_, nullptr) << "deferred_recurse not in the symbols";
	}

	/*
	 * Sample the recursion reading /dev/zero with a cpu-clock event on
	 * this thread, until enough kernel entries had several samples.
	 */
	void run_reads(perf::Event *sampling, perf::Event *output,
		       Collected *col)
	{
		int fd = open("/dev/zero", O_RDONLY);
		ASSERT_GE(fd, 0) << strerror(errno);
		Work w;
		w.op = Work::kRead;
		w.fd = fd;
		for (double t0 = now(); now() - t0 < 8;) {
			sampling->enable();
			w.until = now() + 0.2;
			ASSERT_GT(deferred_recurse(kDepth, &w), 0);
			sampling->disable();
			col->add(0, sampling->drain(), kSampleType);
			if (output)
				col->add(1, output->drain(), kSampleType);
			std::map<uint64_t, int> per_cookie;
			for (const Announce &a : col->announces)
				per_cookie[a.cookie]++;
			int shared = 0;
			for (auto &kv : per_cookie)
				shared += kv.second > 1;
			if (shared >= 3 && col->deliveries.size() >= 10)
				break;
		}
		close(fd);
		EXPECT_EQ(sampling->lost(), 0u);
		if (output) {
			EXPECT_EQ(output->lost(), 0u);
		}
	}

	/*
	 * Every announced cookie has exactly one record in the buffer of
	 * the defer_output event, with the same TID; every record answers
	 * a sample. With tolerate_last, the last announce may go without a
	 * record: the sample taken inside the ioctl that disables the
	 * defer_output event itself, whose record has nowhere to go.
	 */
	void check_matches(const Collected &col, size_t out_buffer,
			   bool tolerate_last)
	{
		for (const std::string &e : col.errors)
			ADD_FAILURE() << e;
		pid_t tid = gettid_();
		auto by_key = col.by_key();
		std::map<uint64_t, int> per_cookie;
		uint64_t last_time = 0, last_cookie = 0;
		for (const Announce &a : col.announces) {
			per_cookie[a.cookie]++;
			if (a.time >= last_time) {
				last_time = a.time;
				last_cookie = a.cookie;
			}
		}
		int unmatched = 0, shared = 0, max_per_cookie = 0;
		for (auto &kv : per_cookie) {
			shared += kv.second > 1;
			max_per_cookie = std::max(max_per_cookie, kv.second);
			auto it = by_key.find({ kv.first, (uint32_t)tid });
			size_t n = 0;
			for (auto *v : it == by_key.end() ?
				     std::vector<const Delivery *>() : it->second)
				n += v->buffer == out_buffer;
			if (n == 0 && tolerate_last && kv.first == last_cookie) {
				unmatched++;
				continue;
			}
			EXPECT_EQ(n, 1u) << "cookie 0x" << std::hex << kv.first
					 << " announced by " << std::dec
					 << kv.second << " samples";
		}
		int with_recursion = 0;
		for (const Delivery &v : col.deliveries) {
			check_record(v.d, tid);
			EXPECT_TRUE(per_cookie.count(v.d.cookie))
				<< "record with cookie 0x" << std::hex
				<< v.d.cookie << " answers no sample";
			with_recursion += syms::longest_run(v.d.ips, *rec_) >= kDepth;
		}
		int kernel_samples = 0;
		for (const Announce &a : col.announces)
			kernel_samples += a.in_kernel;
		printf("# samples %zu (deferred %zu, in kernel %d, in-place "
		       "user %zu, no user %zu), cookies %zu (shared by >1 "
		       "sample %d, most samples %d), deferred records %zu "
		       "(holding the recursion %d), unmatched last %d\n",
		       col.samples, col.announces.size(), kernel_samples,
		       col.in_place_user, col.no_user, per_cookie.size(),
		       shared, max_per_cookie, col.deliveries.size(),
		       with_recursion, unmatched);
		EXPECT_GT(kernel_samples, 0) << "no deferred kernel sample";
		EXPECT_EQ(col.in_place_user, 0u)
			<< "samples of this task unwound in place";
		EXPECT_GT(shared, 0)
			<< "no kernel entry with several samples";
		EXPECT_GT(with_recursion, 0) << "no record holding " << kDepth
					     << " frames of deferred_recurse";
	}

	std::vector<syms::Symbol> symbols_;
	const syms::Symbol *rec_ = nullptr;
};

TEST(DeferredAbi, BitsAcceptedTogetherAndAlone)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	EXPECT_EQ(features::try_attr_bit(perf_abi::kDeferOutputBit), 0);
	EXPECT_EQ(features::try_attr_bit(perf_abi::kDeferOutputBit + 1),
		  -EINVAL);

	perf_event_attr attr = sampling_attr(true);
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
	perf::Event output, sampling;
	ASSERT_EQ(output.open(output_attr(), 0, -1), 0);
	int r = sampling.open(sampling_attr(false), 0, -1, 256);
	if (r == -EACCES || r == -EPERM)
		GTEST_SKIP() << "kernel samples not allowed: " << strerror(-r);
	ASSERT_EQ(r, 0) << strerror(-r);

	Collected col;
	run_reads(&sampling, &output, &col);
	for (const Delivery &v : col.deliveries)
		EXPECT_EQ(v.buffer, 1u) << "record in the sampling event's "
					   "buffer, which lacks defer_output";
	check_matches(col, 1, false);
}

/* A sampling event with defer_output gets the records in its own buffer. */
TEST_F(Deferred, PerTaskSamplingEventGetsItsOwnRecords)
{
	perf::Event sampling;
	int r = sampling.open(sampling_attr(true), 0, -1, 256);
	if (r == -EACCES || r == -EPERM)
		GTEST_SKIP() << "kernel samples not allowed: " << strerror(-r);
	ASSERT_EQ(r, 0) << strerror(-r);

	Collected col;
	run_reads(&sampling, nullptr, &col);
	check_matches(col, 0, true);
}

/* Every hit of tracepoint id sampled, with both deferral bits. */
perf_event_attr deferred_tracepoint(long id)
{
	perf_event_attr attr{};
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = id;
	attr.sample_period = 1;
	attr.sample_type = kSampleType;
	attr.sample_id_all = 1;
	perf_abi::set_attr_bit(&attr, perf_abi::kDeferCallchainBit);
	perf_abi::set_attr_bit(&attr, perf_abi::kDeferOutputBit);
	return attr;
}

/*
 * Per-CPU events: the sample is taken on the CPU the task leaves (entry of
 * sched_setaffinity), the record must come from the CPU it returns on,
 * with the same cookie and TID, exactly once over all the CPUs' buffers.
 */
TEST_F(Deferred, PerCpuRecordFollowsMigration)
{
	int ncpu = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (ncpu < 2)
		GTEST_SKIP() << "needs 2 CPUs, have " << ncpu;
	long id = work::tracepoint_id("syscalls/sys_enter_sched_setaffinity");
	if (id < 0)
		GTEST_SKIP() << "no syscalls:sys_enter_sched_setaffinity "
				"tracepoint (CONFIG_FTRACE_SYSCALLS, tracefs)";

	perf_event_attr attr = deferred_tracepoint(id);
	attr.disabled = 1;
	std::vector<std::unique_ptr<perf::Event>> evs;
	for (int cpu = 0; cpu < ncpu; cpu++) {
		evs.push_back(std::make_unique<perf::Event>());
		int r = evs.back()->open(attr, -1, cpu, 16);
		if (r == -EACCES || r == -EPERM)
			GTEST_SKIP() << "per-CPU events not allowed: "
				     << strerror(-r);
		ASSERT_EQ(r, 0) << "cpu " << cpu << ": " << strerror(-r);
	}

	cpu_set_t saved;
	ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
	constexpr int kMoves = 40;
	std::vector<int> target;
	for (auto &e : evs)
		e->enable();
	Work w;
	w.op = Work::kAffinity;
	for (int i = 0; i < kMoves; i++) {
		w.cpu = (i + 1) % ncpu;
		target.push_back(w.cpu);
		ASSERT_EQ(deferred_recurse(kDepth, &w), 1) << strerror(errno);
	}
	for (auto &e : evs)
		e->disable();
	sched_setaffinity(0, sizeof(saved), &saved);

	Collected col;
	for (int cpu = 0; cpu < ncpu; cpu++)
		col.add(cpu, evs[cpu]->drain(), kSampleType);
	for (const std::string &e : col.errors)
		ADD_FAILURE() << e;

	pid_t tid = gettid_();
	auto by_key = col.by_key();
	std::vector<Announce> announces = col.announces;
	std::sort(announces.begin(), announces.end(),
		  [](const Announce &a, const Announce &b) {
			  return a.time < b.time;
		  });
	int ours = 0, matched = 0, migrated = 0, on_target = 0,
	    with_recursion = 0;
	std::set<uint64_t> cookies;
	for (const Announce &a : announces) {
		if (a.tid != (uint32_t)tid)
			continue;
		ours++;
		EXPECT_TRUE(cookies.insert(a.cookie).second)
			<< "two sched_setaffinity calls share cookie 0x"
			<< std::hex << a.cookie;
		auto it = by_key.find({ a.cookie, a.tid });
		if (it == by_key.end()) {
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
		EXPECT_EQ(v->buffer, v->d.sid.cpu)
			<< "record in the buffer of another CPU than its own";
		migrated += v->d.sid.cpu != a.cpu;
		with_recursion += syms::longest_run(v->d.ips, *rec_) >= kDepth;
		if (ours <= kMoves)
			on_target += (int)v->d.sid.cpu == target[ours - 1];
	}
	printf("# cpus %d, sched_setaffinity calls %d, samples %zu (ours %d, "
	       "in-place user %zu), deferred records %zu (matched %d, "
	       "returned on another CPU %d, on the target CPU %d, holding "
	       "the recursion %d)\n", ncpu, kMoves, col.samples, ours,
	       col.in_place_user, col.deliveries.size(), matched, migrated,
	       on_target, with_recursion);
	EXPECT_EQ(ours, kMoves) << "one sample per sched_setaffinity call";
	EXPECT_EQ(matched, ours);
	EXPECT_EQ(col.deliveries.size(), (size_t)matched) << "orphan records";
	EXPECT_GT(migrated, 0) << "no record written on the CPU moved to";
	EXPECT_EQ(on_target, ours) << "records not on the CPU returned on";
	EXPECT_EQ(with_recursion, matched);
}

/*
 * A request made at the entry of exit_group() is answered on the way
 * through do_exit(), while the user stack is still there: the sample's
 * cookie gets its record, with the exiting task's stack.
 */
TEST_F(Deferred, ExitingTaskGetsItsRecord)
{
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

	perf_event_attr attr = deferred_tracepoint(id);
	perf::Event ev;
	int r = ev.open(attr, child, -1, 16);
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

	Collected col;
	col.add(0, ev.drain(), kSampleType);
	for (const std::string &e : col.errors)
		ADD_FAILURE() << e;
	printf("# samples %zu (deferred %zu, in-place user %zu), deferred "
	       "records %zu\n", col.samples, col.announces.size(),
	       col.in_place_user, col.deliveries.size());
	ASSERT_EQ(col.announces.size(), 1u);
	ASSERT_EQ(col.deliveries.size(), 1u);
	const perf::DeferredCallchain &d = col.deliveries[0].d;
	EXPECT_EQ(d.cookie, col.announces[0].cookie);
	check_record(d, child);
	EXPECT_GE(longest_run(d.ips, *rec_), kDepth)
		<< "the exiting child's record lacks its recursion";
}

} // namespace
