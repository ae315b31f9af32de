// SPDX-License-Identifier: GPL-2.0
/*
 * The right stack (doc/kernel.md, "Exit and exec") across exec and exit:
 *
 * Exec: samples before the exec hold the old image's stack, those after
 * it the new image's, and no cookie spans the exec. Exit: tasks sampled
 * on their way out, threads and processes, no record is empty and no
 * cookie is left without a record.
 */
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

/* ---- exec ---------------------------------------------------------------- */

struct Image {
	std::string comm;
	std::vector<syms::Symbol> symbols;
	bool holds(uint64_t ip) const { return syms::lookup(symbols, ip); }
};

/* Every ip of ips that one of the images knows is in img, and the leaf is. */
bool in_image(const std::vector<uint64_t> &ips, const Image &img,
	      const Image &other)
{
	if (ips.empty() || !img.holds(ips[0]))
		return false;
	for (uint64_t ip : ips)
		if (other.holds(ip))
			return false;
	return true;
}

/* The known stack that called execve: cs_leaf, cs_middle, cs_outer. */
bool is_exec_caller(const std::vector<uint64_t> &ips, const Image &img)
{
	const syms::Symbol *leaf = syms::find(img.symbols, "cs_leaf");
	const syms::Symbol *mid = syms::find(img.symbols, "cs_middle");
	const syms::Symbol *out = syms::find(img.symbols, "cs_outer");
	return leaf && mid && out && ips.size() >= 3 &&
	       leaf->contains(ips[0]) && mid->contains(ips[1]) &&
	       out->contains(ips[2]);
}

TEST(RightStack, ExecSplitsOldAndNewImageStacks)
{
	SKIP_UNLESS_IA32();
	EXTENSION("exec ends the old image's kernel entry: its samples get "
		  "the old image's stack, the new image a new cookie "
		  "(doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	std::string p64 = work::helper_path("compat_stack");
	std::string p32 = work::helper_path("compat_stack_32");
	SKIP_UNLESS_EXECUTABLE(p64, "helper program");
	SKIP_UNLESS_EXECUTABLE(p32, "helper program");
	long enter = work::tracepoint_id("syscalls/sys_enter_execve");
	long done = work::tracepoint_id("sched/sched_process_exec");
	if (enter < 0 || done < 0)
		GTEST_SKIP() << "no tracepoint syscalls/sys_enter_execve or "
				"sched/sched_process_exec in tracefs";
	std::string err;
	Image img[2]; /* 0: 64-bit, 1: 32-bit */
	img[0].comm = "compat_stack";
	img[1].comm = "compat_stack_32";
	img[0].symbols = syms::load(p64, &err);
	ASSERT_FALSE(img[0].symbols.empty()) << p64 << ": " << err;
	img[1].symbols = syms::load(p32, &err);
	ASSERT_FALSE(img[1].symbols.empty()) << p32 << ": " << err;

	/* compat_stack 1 exec compat_stack_32 1 exec compat_stack 1 ...: each
	 * reads for 1 ms, then execs the rest of its arguments from cs_leaf. */
	constexpr int kExecs = 12;
	std::vector<std::string> argv;
	for (int i = 0; i <= kExecs; i++) {
		if (i)
			argv.push_back("exec");
		argv.push_back(i & 1 ? p32 : p64);
		argv.push_back("1");
	}
	/* Buffer 0: the receiver (comm records); 1, 2: the tracepoints. */
	session::Session s;
	work::Child child;
	session::Options recv = session::sideband();
	recv.pages = 128;
	int st = session::record_program(
		&s, &child, argv, recv, 0, [&](pid_t pid) {
			session::Options o;
			o.type = PERF_TYPE_TRACEPOINT;
			o.period = 1;
			o.defer_output = false;
			o.enable_on_exec = true;
			o.config = (uint64_t)enter;
			int r = s.open(o, pid, -1);
			if (r)
				return r;
			o.config = (uint64_t)done;
			return s.open(o, pid, -1);
		});
	ASSERT_GE(st, 0) << strerror(-st);
	if (session::exec_failed(st))
		GTEST_SKIP() << "cannot exec the helpers (no IA32 emulation?)";
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		<< "wait status 0x" << std::hex << st;

	/* The exec points, by time, and the image each one starts. */
	std::vector<std::pair<uint64_t, int>> execs;
	for (const session::Session::CommExec &c : s.comm_execs(0, &err))
		execs.push_back({ c.time, c.comm == img[1].comm });
	ASSERT_TRUE(err.empty()) << err;
	std::map<uint64_t, std::vector<uint64_t>> recs;
	for (const perf::DeferredCallchain &d : s.deferred(0, &err))
		recs.emplace(d.cookie, d.ips);
	ASSERT_TRUE(err.empty()) << err;

	/* Image of the segment a time falls in: the one of the last exec
	 * before it (the first program before any). */
	auto segment = [&](uint64_t t) {
		int seg = 0;
		for (size_t i = 0; i < execs.size(); i++)
			if (execs[i].first < t)
				seg = (int)i + 1;
		return seg;
	};
	auto image_of = [&](int seg) {
		return seg ? execs[seg - 1].second : 0;
	};
	std::map<uint64_t, std::set<int>> segments_of;
	size_t before = 0, before_ok = 0, after = 0, after_ok = 0;
	size_t no_record = 0, not_deferred = 0;
	std::string bad_before, bad_after, good_before, good_after;
	for (size_t buf = 1; buf <= 2; buf++) {
		for (const perf::Sample &sm : s.samples(buf, &err)) {
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			int seg = segment(sm.sid.time);
			const Image &mine = img[image_of(seg)];
			const Image &other = img[!image_of(seg)];
			std::vector<uint64_t> ips;
			if (c.deferred) {
				segments_of[c.cookie].insert(seg);
				auto it = recs.find(c.cookie);
				if (it == recs.end()) {
					no_record++;
					continue;
				}
				ips = it->second;
			} else {
				not_deferred++;
				ips = c.user;
			}
			bool is_before = buf == 1;
			bool ok = in_image(ips, mine, other) &&
				  (!is_before || is_exec_caller(ips, mine));
			std::string line = "segment " + std::to_string(seg) +
					   " (" + mine.comm + "): " +
					   syms::chain_str(ips, mine.symbols);
			if (is_before) {
				before++;
				before_ok += ok;
				(ok ? good_before : bad_before) = line;
			} else {
				after++;
				after_ok += ok;
				(ok ? good_after : bad_after) = line;
			}
		}
	}
	ASSERT_TRUE(err.empty()) << err;
	size_t shared = 0;
	for (auto &[cookie, segs] : segments_of)
		shared += segs.size() > 1;
	printf("# %d execs, %zu COMM_EXEC records, %zu deferred records; "
	       "sys_enter_execve (64-bit images only): %zu samples, %zu with "
	       "the old image's "
	       "cs_leaf/cs_middle/cs_outer; sched_process_exec: %zu samples, "
	       "%zu with the new image's stack; %zu cookies, %zu shared by "
	       "both sides of an exec; %zu without a record, %zu in place\n",
	       kExecs, execs.size(), recs.size(), before, before_ok, after,
	       after_ok, segments_of.size(), shared, no_record, not_deferred);
	if (!good_before.empty())
		printf("# e.g. right before exec: %s\n", good_before.c_str());
	if (!bad_before.empty())
		printf("# e.g. wrong before exec: %s\n", bad_before.c_str());
	if (!good_after.empty())
		printf("# e.g. right after exec:  %s\n", good_after.c_str());
	if (!bad_after.empty())
		printf("# e.g. wrong after exec:  %s\n", bad_after.c_str());
	EXPECT_EQ(s.lost(), 0u);
	/* The first exec (of the first program) is recorded too when
	 * enable_on_exec comes before the comm change. */
	EXPECT_GE(execs.size(), (size_t)kExecs) << "COMM_EXEC records";
	EXPECT_LE(execs.size(), (size_t)kExecs + 1) << "COMM_EXEC records";
	/* Only the 64-bit images' execve: syscall tracepoints leave out
	 * compat system calls. */
	EXPECT_EQ(before, (size_t)(kExecs + 1) / 2)
		<< "sys_enter_execve samples";
	EXPECT_GE(after, (size_t)kExecs) << "sched_process_exec samples";
	EXPECT_EQ(before_ok, before)
		<< "samples taken in execve() before the exec point whose "
		   "user chain is not the old image's caller of execve";
	EXPECT_EQ(after_ok, after)
		<< "samples after the exec point whose user chain is not in "
		   "the new image";
	EXPECT_EQ(shared, 0u) << "cookies announced on both sides of an exec";
	EXPECT_EQ(no_record, 0u);
	/* Both tracepoints fire where requests are taken: the syscall's
	 * entry and the new image's first entry (doc/kernel.md: exec) */
	EXPECT_EQ(not_deferred, 0u) << "samples unwound in place";
}

/* ---- exit storm ---------------------------------------------------------- */

extern "C" __attribute__((noinline)) void rs_exiting_work(int fd, int reads)
{
	static thread_local char buf[64 << 10];
	for (int i = 0; i < reads; i++)
		if (read(fd, buf, sizeof(buf)) <= 0)
			break;
	__asm__ volatile("" ::: "memory");
}

/*
 * The events of one exiting task, per task (an inherited per-task event
 * cannot be mmapped): a receiver, cpu-clock and the tracepoints tps:
 * sched_switch, sched_process_exit, and the entries of exit and
 * exit_group, whose requests are always pending when do_exit() starts
 * (PF_EXITING is not set yet): only the exit path can answer them.
 *
 * Each buffer holds a whole round of its task, so a reader that gets no
 * CPU while the tasks run loses nothing. A round is a fixed amount of
 * work, and cpu-clock's period stretches with the guest's slowdown, so
 * its size does not grow with a slow host. With no reading during the
 * round (rt-debug, one TCG thread), the fullest buffers took: cpu-clock
 * 489 KiB, sched_switch 75 KiB, receiver 32 KiB, the exit tracepoints
 * less than 1 KiB. The old 64, 16 and 16 pages relied on the reader:
 * in a whole rt-debug suite it fell behind and 46 records were lost.
 */
struct ExitBuffer {
	const char *name; /* a tracepoint's, or the event's role */
	size_t pages;
};
/* In the order open_exit_events() opens them, the tracepoints last */
constexpr ExitBuffer kExitBuffers[] = {
	{ "receiver", 32 },
	{ "cpu-clock", 256 },
	{ "sched/sched_switch", 64 },
	{ "sched/sched_process_exit", 16 },
	{ "syscalls/sys_enter_exit", 16 },
	{ "syscalls/sys_enter_exit_group", 16 },
};
constexpr size_t kExitEvents = std::size(kExitBuffers);
constexpr size_t kExitFirstTracepoint = 2;

int open_exit_events(session::Session *s, pid_t tid,
		     const std::vector<long> &tps)
{
	session::Options recv = session::sideband(true);
	recv.pages = kExitBuffers[0].pages;
	int r = s->open(recv, tid, -1);
	session::Options o;
	o.defer_output = false;
	o.pages = kExitBuffers[1].pages;
	o.period = 100000;
	if (!r)
		r = s->open(o, tid, -1);
	o.type = PERF_TYPE_TRACEPOINT;
	o.period = 1;
	for (size_t i = 0; i < tps.size(); i++) {
		o.config = (uint64_t)tps[i];
		o.pages = kExitBuffers[kExitFirstTracepoint + i].pages;
		if (!r)
			r = s->open(o, tid, -1);
	}
	return r;
}

TEST(RightStack, ExitStormLeavesNoEmptyOrMissingRecord)
{
	EXTENSION("tasks sampled on their way out: every cookie gets a "
		  "record with a stack, none an empty one (doc/kernel.md: "
		  "exit and exec)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	std::vector<long> tps;
	for (size_t i = kExitFirstTracepoint; i < kExitEvents; i++)
		tps.push_back(work::tracepoint_id(kExitBuffers[i].name));
	if (*std::min_element(tps.begin(), tps.end()) < 0)
		GTEST_SKIP() << "no sched or syscall tracepoints in tracefs";
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	ASSERT_GE(fd, 0);
	constexpr int kRounds = 4, kThreads = 6, kProcs = 3;
	size_t empty = 0, exited = 0, buffers = 0;
	/* By kExitBuffers' entry: records lost, most from one task's round */
	uint64_t lost_in[kExitEvents] = {};
	size_t most_bytes[kExitEvents] = {};
	perf::MatchResult total;
	std::string err, empty_example, first_problem;
	for (int round = 0; round < kRounds; round++) {
		/* Threads and processes held until their events are open. */
		std::atomic<bool> go{ false };
		std::atomic<int> done{ 0 };
		std::vector<std::atomic<pid_t>> tids(kThreads);
		std::vector<std::thread> threads;
		for (int i = 0; i < kThreads; i++) {
			tids[i] = 0;
			threads.emplace_back([&, i] {
				tids[i] = work::gettid();
				while (!go.load())
					usleep(100);
				rs_exiting_work(fd, 20);
				done++;
			});
		}
		std::vector<work::Child> kids(kProcs);
		session::Session s;
		int r = 0;
		for (auto &k : kids) {
			/* A helper reading /dev/zero for 2 ms, then exiting. */
			if (!r)
				r = k.spawn({ work::helper_path("compat_stack"),
					      "2", "exit", "1" });
			if (!r)
				r = open_exit_events(&s, k.pid(), tps);
		}
		for (int i = 0; i < kThreads; i++) {
			while (!tids[i].load())
				usleep(100);
			if (!r)
				r = open_exit_events(&s, tids[i], tps);
		}
		if (!r)
			s.enable();
		go = true;
		for (auto &k : kids)
			k.release();
		/* Read while they run too: room beyond a round, not a need */
		while (done.load() < kThreads) {
			s.drain();
			usleep(1000);
		}
		for (auto &t : threads)
			t.join();
		for (auto &k : kids) {
			int st = k.wait(20, [&s] { s.drain(); });
			exited += WIFEXITED(st) && WEXITSTATUS(st) == 0;
		}
		exited += kThreads;
		s.disable();
		s.drain();
		ASSERT_EQ(r, 0) << "events on an exiting task: " << strerror(-r);
		perf::CookieMatcher m;
		ASSERT_TRUE(s.match(&m, &err)) << err;
		perf::MatchResult res = m.match();
		buffers += s.size();
		for (size_t i = 0; i < s.size(); i++) {
			size_t bytes = 0;
			for (const perf::Record &rec : s.records(i))
				bytes += rec.header.size;
			lost_in[i % kExitEvents] += s.event(i).lost();
			most_bytes[i % kExitEvents] =
				std::max(most_bytes[i % kExitEvents], bytes);
		}
		for (const perf::Delivery &d : m.deliveries())
			if (!d.nr && !empty++)
				empty_example = "tid " + std::to_string(d.tid) +
						" cookie " + std::to_string(d.cookie);
		total.samples += res.samples;
		total.announcing_samples += res.announcing_samples;
		total.records += res.records;
		total.announced += res.announced;
		total.matched += res.matched;
		total.fallback_samples += res.fallback_samples;
		total.no_user_samples += res.no_user_samples;
		total.lost += res.lost;
		total.bad_marker_samples += res.bad_marker_samples;
		for (auto *v : { &res.orphans, &res.duplicates,
				 &res.with_kernel_ip })
			total.orphans.insert(total.orphans.end(), v->begin(),
					     v->end());
		total.unmatched.insert(total.unmatched.end(),
				       res.unmatched.begin(), res.unmatched.end());
		if (first_problem.empty() && !res.clean())
			first_problem = res.describe();
	}
	close(fd);
	printf("# %zu tasks exited (%d threads, %d processes a round, %d "
	       "rounds, %zu buffers): %zu samples (%zu deferred, %zu in "
	       "place, %zu without a user part), %zu records; %zu cookies, "
	       "%zu with a record, %zu without; %zu records with nr 0%s%s; "
	       "%zu orphan, duplicate or kernel-ip records, %llu lost\n",
	       exited, kThreads, kProcs, kRounds, buffers, total.samples,
	       total.announcing_samples, total.fallback_samples,
	       total.no_user_samples, total.records, total.announced,
	       total.matched, total.unmatched.size(), empty,
	       empty ? ", e.g. " : "", empty_example.c_str(),
	       total.orphans.size(), (unsigned long long)total.lost);
	const size_t page_kib = (size_t)sysconf(_SC_PAGESIZE) >> 10;
	for (size_t i = 0; i < kExitEvents; i++)
		printf("# %s buffers: at most %zu KiB of %zu from one task's "
		       "round, %llu records lost\n", kExitBuffers[i].name,
		       most_bytes[i] >> 10, kExitBuffers[i].pages * page_kib,
		       (unsigned long long)lost_in[i]);
	EXPECT_EQ(exited, (size_t)kRounds * (kThreads + kProcs));
	EXPECT_GT(total.announced, 0u);
	EXPECT_EQ(empty, 0u) << "deferred records with an empty chain";
	EXPECT_TRUE(total.unmatched.empty() && total.orphans.empty() &&
		    !total.lost && !total.bad_marker_samples)
		<< "announced cookies without a record, or records without "
		   "an announce: " << first_problem;
}

} // namespace
