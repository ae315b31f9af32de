// SPDX-License-Identifier: GPL-2.0
/*
 * The right stack (doc/kernel.md, "The right stack"), registers rewritten:
 * the deferred user chain of a sample is the user stack the sample
 * interrupted, whatever the kernel or a tracer did to the task's
 * registers before it returned to user space.
 *
 * Most tests open two events on the same hits, one with defer_callchain
 * and defer_output and one without, and compare hit by hit the deferred
 * user chain (the record of the sample's cookie, or the sample's own user
 * chain where the kernel fell back to an in-place unwind) with the
 * in-place one, on:
 *
 *  - a uprobe in the body of a function of this program: when the
 *    task_work runs, the uprobe has moved the ip to its XOL slot;
 *  - a uprobe at a function's first instruction, alone and with
 *    uretprobes (checked against the program's own calls too);
 *  - signal:signal_deliver: setup_rt_frame() has pointed ip and sp at the
 *    signal handler;
 *  - preemptirq:irq_enable (debug kernels): exit_to_user_mode() traces
 *    the interrupts going on after the entry was forgotten;
 *  - x86_fpu:x86_fpu_regs_activated: arch_exit_to_user_mode_prepare()
 *    traces the FPU registers coming back, past the exit to user mode
 *    loop, where the task_work no longer runs;
 *  - a kretprobe on arm64's exit to user mode loop: it fires after the
 *    loop's last look at the thread flags;
 *  - requests from NMI context (a kernel execute breakpoint, kprobes in
 *    the syscall, the signal frame's setup and sys_uretprobe) and an
 *    emulated vsyscall.
 *
 * A tracer: one that moves the ip at a ptrace stop, sampled by a
 * tracepoint after the stop and by an execute breakpoint at it.
 *
 * The exec and exit storms are right_stack_exec_exit_test's, the
 * record's order around stops right_stack_order_test's.
 */
#include <elf.h>
#include <fcntl.h>
#include <linux/hw_breakpoint.h>
#include <stddef.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "helpers/raw_syscall.h"
#include "lib/features.h"
#include "lib/perf_abi.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

/* The system call entry points' names: the arch's wrapper prefix. */
#ifdef __aarch64__
#define SYS_PREFIX "__arm64_sys_"
/* arm64 has no getpgrp system call: glibc's getpgrp() is getpgid(0). */
#define GETPGRP_ENTRY "getpgid"
#define GETPGRP_NR SYS_getpgid
#else
#define SYS_PREFIX "__x64_sys_"
#define GETPGRP_ENTRY "getpgrp"
#define GETPGRP_NR SYS_getpgrp
#endif

namespace {

constexpr const char *kUprobePmu = "/sys/bus/event_source/devices/uprobe";
/* At most this many frames are compared, from the leaf. */
constexpr size_t kPrefix = 4;

/* Deferred user chain vs in-place user chain, hit by hit. */
struct Compared {
	size_t hits = 0;	/* pairs of samples, one of each event */
	size_t deferred = 0;	/* samples of the deferred event with a cookie */
	size_t fallback = 0;	/* ... with a user chain unwound in place */
	size_t matches = 0, mismatches = 0;
	size_t no_record = 0;	/* samples whose cookie has no record */
	std::set<uint64_t> no_record_cookies;
	uint64_t last_cookie = 0; /* of the last deferred sample */
	size_t unpaired = 0;	/* samples left over, or of another tid */
	size_t empty_in_place = 0;
	std::string match_example, mismatch_example;
	std::string no_record_at; /* sample numbers, for a reader */

	std::string describe() const
	{
		std::ostringstream o;
		o << hits << " hits: " << deferred << " deferred, " << fallback
		  << " unwound in place by the fallback; " << matches
		  << " match the in-place chain, " << mismatches
		  << " mismatch; " << no_record << " samples of "
		  << no_record_cookies.size() << " cookies without a record, "
		  << unpaired << " unpaired samples, " << empty_in_place
		  << " empty in-place chains";
		if (!match_example.empty())
			o << "\n# e.g. match:    " << match_example;
		if (!mismatch_example.empty())
			o << "\n# e.g. mismatch: " << mismatch_example;
		if (!no_record_at.empty())
			o << "\n# samples whose cookie has no record:"
			  << no_record_at;
		return o.str();
	}
};

/*
 * The frames both walks must agree on: the in-place chain's leading frames
 * that are in functions of this binary, at most kPrefix. Past them, a
 * frame-pointer walk through code built without frame pointers (libgtest's
 * test runner, libc's start code) reads junk: the in-place walk reports
 * it, the deferred walk stops where the next frame is not plausible.
 */
size_t known_frames(const std::vector<uint64_t> &chain)
{
	size_t n = 0;
	while (n < chain.size() && n < kPrefix &&
	       syms::lookup(syms::self(), chain[n]))
		n++;
	return n;
}

/* The leaf, and every known frame, in order. */
bool same_prefix(const std::vector<uint64_t> &deferred,
		 const std::vector<uint64_t> &in_place)
{
	size_t n = std::max<size_t>(known_frames(in_place), 1);
	if (in_place.empty() || deferred.size() < n)
		return false;
	return std::equal(in_place.begin(), in_place.begin() + n,
			  deferred.begin());
}

/* same_prefix(), or so after the link register's caller (arm64) */
bool same_stack(const std::vector<uint64_t> &deferred,
		const std::vector<uint64_t> &in_place)
{
	if (same_prefix(deferred, in_place))
		return true;
	std::vector<uint64_t> ips =
		perf::without_link_register_caller(deferred, in_place);
	return !ips.empty() && same_prefix(ips, in_place);
}

/*
 * Buffer def of session s: the event with defer_callchain and defer_output;
 * buffer inpl: the same hits without. The i-th sample of one is the i-th
 * of the other (both events are on the same task and tracepoint or probe,
 * and nothing was lost).
 */
Compared compare(const session::Session &s, size_t def, size_t inpl,
		 std::string *err)
{
	Compared c;
	std::vector<perf::Sample> ds = s.samples(def, err);
	std::vector<perf::Sample> is = s.samples(inpl, err);
	std::map<uint64_t, std::vector<uint64_t>> recs;
	for (const perf::DeferredCallchain &d : s.deferred(def, err))
		recs.emplace(d.cookie, d.ips);
	size_t n = std::min(ds.size(), is.size());
	c.unpaired = std::max(ds.size(), is.size()) - n;
	for (size_t i = 0; i < n; i++) {
		if (ds[i].sid.tid != is[i].sid.tid) {
			c.unpaired++;
			continue;
		}
		c.hits++;
		perf::SplitChain dc = perf::split_callchain(ds[i].callchain);
		perf::SplitChain ic = perf::split_callchain(is[i].callchain);
		if (ic.user.empty()) {
			c.empty_in_place++;
			continue;
		}
		std::vector<uint64_t> got;
		std::string how;
		if (dc.deferred) {
			c.deferred++;
			c.last_cookie = dc.cookie;
			auto it = recs.find(dc.cookie);
			if (it == recs.end()) {
				c.no_record++;
				c.no_record_cookies.insert(dc.cookie);
				if (c.no_record <= 8)
					c.no_record_at +=
						" " + std::to_string(i) + "/" +
						std::to_string(n) + " " +
						syms::chain_str(ic.user,
								syms::self(), 2);
				continue;
			}
			got = it->second;
			how = "record";
		} else {
			c.fallback++;
			got = dc.user;
			how = "in-place fallback";
		}
		bool ok = same_stack(got, ic.user);
		(ok ? c.matches : c.mismatches)++;
		std::string &ex = ok ? c.match_example : c.mismatch_example;
		if (ex.empty())
			ex = "deferred (" + how + ") " + syms::chain_str(got) +
			     " vs in place " + syms::chain_str(ic.user);
	}
	return c;
}

/* A tracepoint pair, deferred (buffer 0) and in place (buffer 1), on self. */
int open_tracepoint_pair(session::Session *s, long id, size_t pages)
{
	session::Options o = session::tracepoint(id, pages);
	int r = s->open(o, 0, -1);
	if (r)
		return r;
	o.defer_callchain = o.defer_output = false;
	/* In the deferred event's group, so that both see the same hits */
	return s->open_in_group(o, 0, s->size() - 1);
}

void expect_all_match(const session::Session &s, const Compared &c,
		      size_t min_hits)
{
	EXPECT_EQ(s.lost(), 0u) << "lost records: the pairs mean nothing";
	EXPECT_EQ(c.unpaired, 0u) << c.describe();
	EXPECT_GE(c.hits, min_hits) << c.describe();
	EXPECT_EQ(c.empty_in_place, 0u) << c.describe();
	EXPECT_EQ(c.mismatches, 0u)
		<< "deferred user chains that are not the stack the sample "
		   "interrupted: " << c.describe();
	/*
	 * The entry that disables the events ends after they are off: its
	 * samples get no record (as upstream); any other entry must.
	 */
	EXPECT_LE(c.no_record_cookies.size(), 1u) << c.describe();
	if (!c.no_record_cookies.empty()) {
		EXPECT_EQ(*c.no_record_cookies.begin(), c.last_cookie)
			<< "a cookie without a record before the last entry: "
			<< c.describe();
	}
}

/* ---- uprobe ----------------------------------------------------------- */

extern "C" const char rs_probe_site[];

/* The probe sits on a mov in the body, after the prologue: a frame-pointer
 * walk from there has rs_probed as leaf and rs_probe_caller next. The mov
 * is not emulated by x86's uprobes: it is single-stepped out of line. */
extern "C" __attribute__((noinline, noclone)) long rs_probed(long x)
{
#ifdef __aarch64__
	__asm__ volatile(".globl rs_probe_site\n"
			 "rs_probe_site:\n\t"
			 "mov x9, x9\n" ::: "x9", "memory");
#else
	__asm__ volatile(".globl rs_probe_site\n"
			 "rs_probe_site:\n\t"
			 "mov %%rax, %%rax\n" ::: "memory");
#endif
	work::work_not_a_leaf();
	return x + 1;
}

extern "C" __attribute__((noinline)) long rs_probe_caller(int n)
{
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += rs_probed(i);
	__asm__ volatile("" ::: "memory");
	return sum;
}

/*
 * Two sampling uprobes at path+offset on this task, deferred (buffer 0)
 * and in place (buffer 1): 0 or -errno.
 */
int open_uprobe_pair(session::Session *s, const std::string &path,
		     uint64_t offset)
{
	session::Options o;
	o.period = 1;
	for (int deferred = 1; deferred >= 0; deferred--) {
		o.defer_callchain = o.defer_output = deferred;
		perf_event_attr a = session::make_probe_attr(o);
		if (!perf::uprobe_attr(path.c_str(), offset, false, &a))
			return -ENOENT;
		int r = s->open_attr(a, 0, -1, 256);
		if (r)
			return r;
	}
	return 0;
}

TEST(RightStack, UprobeDeferredChainIsTheProbedStack)
{
	EXTENSION("a uprobe moves the ip to its XOL slot before the "
		  "deferred unwind runs; upstream walks from there too "
		  "(doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	if (access(kUprobePmu, F_OK))
		GTEST_SKIP() << "no uprobe PMU (CONFIG_UPROBE_EVENTS)";
	const auto &symbols = syms::self();
	const syms::Symbol *fn = syms::find(symbols, "rs_probed");
	ASSERT_NE(fn, nullptr) << "rs_probed not in /proc/self/exe";
	uint64_t site = (uint64_t)(uintptr_t)rs_probe_site;
	ASSERT_TRUE(fn->contains(site));
	std::string path = work::self_path();
	ASSERT_FALSE(path.empty());
	uint64_t offset = fn->file_offset + (site - fn->start);

	session::Session s;
	int r = open_uprobe_pair(&s, path, offset);
	ASSERT_EQ(r, 0) << "uprobe on " << path << "+" << offset << ": "
			<< strerror(-r);
	constexpr int kHits = 200;
	s.enable();
	long sum = rs_probe_caller(kHits);
	s.disable();
	s.drain();
	ASSERT_EQ(sum, (long)kHits * (kHits + 1) / 2);
	std::string err;
	Compared c = compare(s, 0, 1, &err);
	ASSERT_TRUE(err.empty()) << err;
	printf("# uprobe at rs_probed+%#llx: %s\n",
	       (unsigned long long)(site - fn->start), c.describe().c_str());
	expect_all_match(s, c, kHits);
	/* The uprobe's exception entry refuses nothing */
	EXPECT_EQ(c.deferred, c.hits) << c.describe();
}

/* ---- uprobe at a function's entry ------------------------------------- */

/*
 * A uprobe at the first instruction of re_probed stops it before its
 * prologue stored the frame record: the frame pointer is still
 * re_caller's, the return address into re_caller is in the word at the
 * stack pointer (x86) or in the link register (arm64). A chain that
 * follows the frame pointer alone goes from re_probed to re_outer and
 * loses re_caller, the function that made the call. The truth is the
 * program's own: re_probed, then re_caller, then re_outer.
 *
 * With uretprobes on re_probed (the same hit adds its instance after the
 * sample's handler ran) and on re_caller (pending under every hit), each
 * of the two return addresses is the trampoline by the time the deferred
 * walk runs (re_probed's in the stack word or in arm64's link register),
 * and each must come back as its own caller.
 */
extern "C" __attribute__((noinline, noclone)) long re_probed(long x)
{
	work::work_not_a_leaf();
	return x + 1;
}

extern "C" __attribute__((noinline)) long re_caller(int n)
{
	long sum = 0;
	for (int i = 0; i < n; i++)
		sum += re_probed(i);
	__asm__ volatile("" ::: "memory");
	return sum;
}

extern "C" __attribute__((noinline)) long re_outer(int n)
{
	long sum = re_caller(n);
	__asm__ volatile("" ::: "memory");
	return sum;
}

/* A uretprobe on fn of this program, on this task: 0 or -errno. */
int open_uretprobe(session::Session *s, const syms::Symbol &fn,
		   const std::string &path)
{
	perf_event_attr a{};
	a.size = sizeof(a);
	if (!perf::uprobe_attr(path.c_str(), fn.file_offset, true, &a))
		return -ENOENT;
	return s->open_attr(a, 0, -1, 0);
}

/* Each chain of the deferred event (buffer 0): re_probed's entry, then
 * re_caller and re_outer; the text of the first mismatch, if any. */
std::string check_entry_chains(const session::Session &s, size_t hits)
{
	const auto &symbols = syms::self();
	const syms::Symbol *names[] = { syms::find(symbols, "re_probed"),
					syms::find(symbols, "re_caller"),
					syms::find(symbols, "re_outer") };
	std::string err;
	std::map<uint64_t, std::vector<uint64_t>> recs;
	for (const perf::DeferredCallchain &d : s.deferred(0, &err))
		recs.emplace(d.cookie, d.ips);
	size_t ok = 0, n = 0;
	std::string bad;
	for (const perf::Sample &smp : s.samples(0, &err)) {
		perf::SplitChain c = perf::split_callchain(smp.callchain);
		auto it = recs.find(c.cookie);
		if (!c.deferred || it == recs.end())
			continue;
		n++;
		const std::vector<uint64_t> &ips = it->second;
		bool good = ips.size() >= 3 && ips[0] == names[0]->start;
		for (size_t i = 1; good && i < 3; i++)
			good = names[i]->contains(ips[i] - 1);
		if (good)
			ok++;
		else if (bad.empty())
			bad = syms::chain_str(ips, symbols, 4);
	}
	if (!err.empty())
		return err;
	printf("# %zu of %zu deferred chains are re_probed, re_caller, "
	       "re_outer\n", ok, n);
	if (n < hits)
		return std::to_string(n) + " deferred chains for " +
		       std::to_string(hits) + " hits";
	if (ok != n)
		return std::to_string(n - ok) + " chains are not re_probed, "
		       "re_caller, re_outer; e.g. " + bad;
	return "";
}

void check_uprobe_at_entry(bool uretprobes)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	if (access(kUprobePmu, F_OK))
		GTEST_SKIP() << "no uprobe PMU (CONFIG_UPROBE_EVENTS)";
	const auto &symbols = syms::self();
	const syms::Symbol *fn = syms::find(symbols, "re_probed");
	const syms::Symbol *caller = syms::find(symbols, "re_caller");
	ASSERT_NE(fn, nullptr) << "re_probed not in /proc/self/exe";
	ASSERT_NE(caller, nullptr) << "re_caller not in /proc/self/exe";
	ASSERT_NE(syms::find(symbols, "re_outer"), nullptr);
	std::string path = work::self_path();
	ASSERT_FALSE(path.empty());

	session::Session s;
	int r = open_uprobe_pair(&s, path, fn->file_offset);
	ASSERT_EQ(r, 0) << "uprobe on " << path << "+" << fn->file_offset
			<< ": " << strerror(-r);
	if (uretprobes) {
		ASSERT_EQ(open_uretprobe(&s, *fn, path), 0);
		ASSERT_EQ(open_uretprobe(&s, *caller, path), 0);
	}
	constexpr int kHits = 200;
	s.enable();
	long sum = re_outer(kHits);
	s.disable();
	s.drain();
	ASSERT_EQ(sum, (long)kHits * (kHits + 1) / 2);
	std::string err;
	Compared c = compare(s, 0, 1, &err);
	ASSERT_TRUE(err.empty()) << err;
	printf("# uprobe at re_probed's entry%s: %s\n",
	       uretprobes ? ", uretprobes on re_probed and re_caller" : "",
	       c.describe().c_str());
	expect_all_match(s, c, kHits);
	EXPECT_EQ(c.deferred, c.hits) << c.describe();
	std::string bad = check_entry_chains(s, kHits);
	EXPECT_TRUE(bad.empty()) << bad;
	if (uretprobes) {
		/* A uretprobe that did not fire proves nothing: count them
		 * (the value, then PERF_FORMAT_LOST's count) */
		uint64_t fired[2][2] = {};
		for (size_t i = 0; i < 2; i++)
			ASSERT_EQ(read(s.event(2 + i).fd(), fired[i],
				       sizeof(fired[i])),
				  (ssize_t)sizeof(fired[i]));
		EXPECT_EQ(fired[0][0], (uint64_t)kHits) << "re_probed returns";
		EXPECT_EQ(fired[1][0], 1u) << "re_caller returns";
	}
}

TEST(RightStack, UprobeAtEntryDeferredChainHasTheCaller)
{
#ifdef __aarch64__
	EXTENSION("at a uprobe on a function's first instruction the "
		  "deferred walk takes the caller from the link register, "
		  "as the original instruction says (doc/kernel.md: the "
		  "right stack)");
#endif
	check_uprobe_at_entry(false);
}

TEST(RightStack, UprobeAtEntryWithUretprobesDeferredChainHasTheCallers)
{
	EXTENSION("deferred chains put the callers back in pending "
		  "uretprobes' trampoline slots, the hit's own included "
		  "(doc/kernel.md: the right stack)");
	check_uprobe_at_entry(true);
}

/* ---- signal delivery -------------------------------------------------- */

volatile sig_atomic_t rs_signals;

extern "C" __attribute__((noinline)) void rs_on_signal(int)
{
	rs_signals = rs_signals + 1;
	work::work_not_a_leaf();
}

/* tgkill inline from here: the in-place leaf is in this function. */
extern "C" __attribute__((noinline)) long rs_signal_self(long pid, long tid)
{
	long r = raw_syscall3(SYS_tgkill, pid, tid, SIGUSR1);
	work::work_not_a_leaf();
	return r;
}

extern "C" __attribute__((noinline)) int rs_signal_loop(int n)
{
	long pid = getpid(), tid = work::gettid();
	int ok = 0;
	for (int i = 0; i < n; i++)
		ok += rs_signal_self(pid, tid) == 0;
	__asm__ volatile("" ::: "memory");
	return ok;
}

TEST(RightStack, SignalDeliverDeferredChainIsTheInterruptedStack)
{
	EXTENSION("signal delivery points ip and sp at the handler before "
		  "the deferred unwind runs; upstream 7.2 walks from the "
		  "handler too (doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long id = work::tracepoint_id("signal/signal_deliver");
	if (id < 0)
		GTEST_SKIP() << "no tracepoint signal/signal_deliver in tracefs";
	struct sigaction sa {}, old {};
	sa.sa_handler = rs_on_signal;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
	session::Session s;
	int r = open_tracepoint_pair(&s, id, 256);
	ASSERT_EQ(r, 0) << "signal_deliver: " << strerror(-r);
	constexpr int kSignals = 200;
	rs_signals = 0;
	s.enable();
	int ok = rs_signal_loop(kSignals);
	s.disable();
	s.drain();
	sigaction(SIGUSR1, &old, nullptr);
	ASSERT_EQ(ok, kSignals);
	ASSERT_EQ(rs_signals, kSignals);
	std::string err;
	Compared c = compare(s, 0, 1, &err);
	ASSERT_TRUE(err.empty()) << err;
	printf("# signal:signal_deliver, %d SIGUSR1 to self: %s\n", kSignals,
	       c.describe().c_str());
	expect_all_match(s, c, kSignals);
	/* Delivery runs in the exit loop, before the close: nothing is
	 * refused */
	EXPECT_EQ(c.deferred, c.hits) << c.describe();
}

/* ---- preemptirq:irq_enable -------------------------------------------- */

extern "C" __attribute__((noinline)) long rs_entry_a(void)
{
	long r = raw_syscall3(NR_getppid, 0, 0, 0);
	work::work_not_a_leaf();
	return r;
}

extern "C" __attribute__((noinline)) long rs_entry_b(void)
{
	long r = raw_syscall3(NR_getppid, 0, 0, 0);
	work::work_not_a_leaf();
	return r;
}

/*
 * Calls getppid from rs_entry_a and rs_entry_b in turn with the pair of
 * buffers 0 (deferred) and 1 (in place) enabled, and compares them hit by
 * hit; what names the events in the printed line.
 */
Compared run_pairs(session::Session *s, const char *what, int calls,
		   const char *how, const std::function<void(int)> &call)
{
	s->enable();
	for (int i = 0; i < calls; i++) {
		call(i);
		/*
		 * Drained as the buffers fill, not every so many calls: the
		 * hits of a call grow with the host's slowness (more ticks
		 * and interrupts in it: 74 irq_enable hits a call on a slow
		 * arm64 debug guest, against 13 here, lost 3406 records with
		 * a drain every 50 calls).
		 */
		s->drain_if_fuller();
	}
	s->disable();
	s->drain();
	std::string err;
	Compared c = compare(*s, 0, 1, &err);
	EXPECT_TRUE(err.empty()) << err;
	printf("# %s, %d %s: %s\n", what, calls, how, c.describe().c_str());
	expect_all_match(*s, c, calls);
	return c;
}

Compared run_getppid_pairs(session::Session *s, const char *what, int calls)
{
	return run_pairs(s, what, calls,
			 "getppid from rs_entry_a and rs_entry_b in turn",
			 [](int i) { i & 1 ? rs_entry_a() : rs_entry_b(); });
}

/*
 * irq_enable fires on every kernel entry, in the exit to user space
 * included: after the task_work ran (refused, unwound in place) and after
 * the entry is forgotten (must get the next entry's cookie). The two
 * events are one group, so the enable ioctl's own hits reach both or
 * neither (enabled one by one, the pairs were shifted by a few hits).
 * Skips on the normal kernel (no tracepoint).
 */
TEST(RightStack, IrqEnableDeferredChainIsTheInterruptedStack)
{
	EXTENSION("exit_to_user_mode() traces interrupts going on after "
		  "the kernel entry was forgotten: a request there belongs "
		  "to the entry, not to the next one (doc/kernel.md: the "
		  "right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long id = work::tracepoint_id("preemptirq/irq_enable");
	if (id < 0)
		SKIP_NOT_APPLICABLE("no tracepoint preemptirq/irq_enable "
				    "(needs CONFIG_TRACE_IRQFLAGS and "
				    "CONFIG_PREEMPTIRQ_TRACEPOINTS, as with "
				    "PROVE_LOCKING)");
	session::Session s;
	int r = open_tracepoint_pair(&s, id, 512);
	ASSERT_EQ(r, 0) << "irq_enable: " << strerror(-r);
	constexpr int kCalls = 300;
	Compared c = run_getppid_pairs(&s, "preemptirq:irq_enable", kCalls);
	/*
	 * Each getppid enables interrupts on its way in, before the close:
	 * at least one deferred hit per call. Those of exit_to_user_mode()
	 * come after the close and fall back.
	 */
	EXPECT_GE(c.deferred, (size_t)kCalls) << c.describe();
}

/* ---- x86_fpu:x86_fpu_regs_activated ----------------------------------- */

/*
 * Every return to user space after a context switch reloads the task's
 * FPU registers in arch_exit_to_user_mode_prepare(), past the exit to user
 * mode loop, and traces it there: the task_work can no longer run for a
 * request made at that point. A yield at depths 1 to 4, to a sibling on
 * the same CPU, makes each return such a point.
 */
extern "C" __attribute__((noinline)) long rs_yield(int depth)
{
	long r = depth > 1 ? rs_yield(depth - 1) :
			     raw_syscall3(SYS_sched_yield, 0, 0, 0);
	work::work_not_a_leaf();
	return r;
}

TEST(RightStack, FpuRegsActivatedDeferredChainIsTheReturningStack)
{
	EXTENSION("a request past the exit to user mode loop (here a "
		  "tracepoint in arch_exit_to_user_mode_prepare()) gets its "
		  "own entry's stack or is refused, never another entry's "
		  "(doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long id = work::tracepoint_id("x86_fpu/x86_fpu_regs_activated");
	if (id < 0)
		SKIP_NOT_APPLICABLE("no tracepoint x86_fpu/x86_fpu_regs_activated");
	work::AffinityGuard unpin;
	int cpu = work::current_cpu();
	ASSERT_EQ(work::pin(0, cpu), 0) << strerror(errno);
	std::atomic<bool> stop{ false };
	std::thread sibling([&] {
		work::pin(0, cpu);
		while (!stop.load())
			raw_syscall3(SYS_sched_yield, 0, 0, 0);
	});
	session::Session s;
	int r = open_tracepoint_pair(&s, id, 512);
	ASSERT_EQ(r, 0) << "x86_fpu_regs_activated: " << strerror(-r);
	/*
	 * Nearly every yield switches (the sibling is always runnable), but
	 * how many is the scheduler's and the host's: yield at least kYields
	 * times, then on until kYields hits are in the in-place buffer, under
	 * a deadline.
	 */
	constexpr int kYields = 200;
	auto in_place_hits = [&s] {
		size_t n = 0;
		for (const perf::Record &rec : s.records(1))
			n += rec.header.type == PERF_RECORD_SAMPLE;
		return n;
	};
	work::Deadline dl(10);
	int yields = 0;
	s.enable();
	for (;;) {
		rs_yield(1 + yields % 4);
		yields++;
		s.drain_if_fuller();
		if (yields < kYields || yields % 10)
			continue;
		s.drain();
		if (in_place_hits() >= (size_t)kYields || dl.passed())
			break;
	}
	s.disable();
	stop = true;
	sibling.join();
	s.drain();
	std::string err;
	Compared c = compare(s, 0, 1, &err);
	ASSERT_TRUE(err.empty()) << err;
	printf("# x86_fpu:x86_fpu_regs_activated, %d yields at depths 1-4 to a "
	       "sibling on CPU %d (%s): %s\n", yields, cpu,
	       dl.describe().c_str(), c.describe().c_str());
	expect_all_match(s, c, kYields);
}

/* ---- a kretprobe on the exit to user mode loop ------------------------ */

/*
 * arm64's exit to user mode loop is a function of its own in 6.12,
 * do_notify_resume(), which returns after its last look at the thread
 * flags: a request from its kretprobe, were the entry not closed before
 * that look, would set TIF_NOTIFY_RESUME too late for the loop to run
 * the task_work. The generic entry code inlines its
 * loop into noinstr code, which kprobes refuse (its out-of-line copy,
 * exit_to_user_mode_loop, is never called: a kretprobe there got no hit
 * on x86).
 */
#define EXIT_LOOP_FUNC "do_notify_resume"

TEST(RightStack, ExitLoopReturnDeferredChainIsTheReturningStack)
{
	EXTENSION("a request after the exit to user mode loop's last look at "
		  "the thread flags (a kretprobe on the loop) is refused and "
		  "unwound in place, never answered at the next kernel entry "
		  "with that entry's stack (doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
#ifndef __aarch64__
	SKIP_NOT_APPLICABLE("arm64's exit loop only: the generic entry code "
			    "inlines its loop into noinstr code, where no "
			    "kprobe or kretprobe runs after the last look at "
			    "the flags");
#endif
	session::Options o;
	o.period = 1;
	perf_event_attr a = session::make_probe_attr(o);
	if (!perf::kprobe_attr(EXIT_LOOP_FUNC, 0, true, &a))
		SKIP_NOT_APPLICABLE("no kprobe PMU (CONFIG_KPROBE_EVENTS)");
	long id = work::tracepoint_id("syscalls/sys_enter_getppid");
	if (id < 0)
		SKIP_NOT_APPLICABLE("no tracepoint syscalls/sys_enter_getppid "
				    "(CONFIG_FTRACE_SYSCALLS)");
	session::Session s;
	int r = s.open_attr(a, 0, -1, 256);
	if (r == -ENOENT || r == -EINVAL) {
		/* Inlined or renamed (.isra) by another compiler: no hook */
		work::Kallsyms ks;
		ks.load();
		if (!ks.addr(EXIT_LOOP_FUNC))
			SKIP_NOT_APPLICABLE("no function " EXIT_LOOP_FUNC
					    " in /proc/kallsyms");
	}
	ASSERT_EQ(r, 0) << "kretprobe on " EXIT_LOOP_FUNC ": " << strerror(-r);
	/*
	 * The in-place twin in the deferred event's group: the loop also
	 * runs on interrupts from user space, between two enable ioctls.
	 */
	perf_abi::clear_attr_bit(&a, perf_abi::kDeferCallchainBit);
	perf_abi::clear_attr_bit(&a, perf_abi::kDeferOutputBit);
	r = s.open_attr_in_group(a, 0, 0, 256);
	ASSERT_EQ(r, 0) << "in-place kretprobe: " << strerror(-r);
	/*
	 * A deferred request in each getppid: its TIF_NOTIFY_RESUME makes
	 * every return from the call run the loop, and the kretprobe fire.
	 */
	r = s.open(session::tracepoint(id, 256), 0, -1);
	ASSERT_EQ(r, 0) << "sys_enter_getppid: " << strerror(-r);
	constexpr int kCalls = 200;
	Compared c = run_getppid_pairs(&s, "kretprobe on " EXIT_LOOP_FUNC,
				       kCalls);
	/* Past the last look at the flags, every request is refused */
	EXPECT_EQ(c.fallback, c.hits) << c.describe();
	/*
	 * What drove the loop: each getppid's deferred tracepoint sample has
	 * its record, and the kretprobe's hits include a return of each call
	 * (a loop run whose in-place chain starts in rs_entry_a or _b).
	 */
	std::string err;
	std::set<uint64_t> recorded;
	for (const perf::DeferredCallchain &d : s.deferred(2, &err))
		recorded.insert(d.cookie);
	size_t tp_deferred = 0, tp_recorded = 0, call_returns = 0;
	for (const perf::Sample &sm : s.samples(2, &err)) {
		perf::SplitChain sc = perf::split_callchain(sm.callchain);
		tp_deferred += sc.deferred;
		tp_recorded += sc.deferred && recorded.count(sc.cookie);
	}
	for (const perf::Sample &sm : s.samples(1, &err)) {
		std::vector<uint64_t> u = perf::split_callchain(sm.callchain).user;
		const syms::Symbol *leaf =
			u.empty() ? nullptr : syms::lookup(syms::self(), u[0]);
		call_returns += leaf && (leaf->name == "rs_entry_a" ||
					 leaf->name == "rs_entry_b");
	}
	ASSERT_TRUE(err.empty()) << err;
	printf("# sys_enter_getppid: %zu deferred samples, %zu with their "
	       "record; %zu kretprobe hits at a getppid's return\n",
	       tp_deferred, tp_recorded, call_returns);
	EXPECT_GE(tp_deferred, (size_t)kCalls);
	EXPECT_EQ(tp_recorded, tp_deferred);
	EXPECT_GE(call_returns, (size_t)kCalls) << c.describe();
}

/* ---- NMI context: an execute breakpoint and a kprobe in the kernel ---- */

/*
 * On x86 a #DB or an int3 taken in kernel mode runs in NMI context
 * (irqentry_nmi_enter()): requests from a kernel execute breakpoint or a
 * kprobe take the path of PMU samples on real hardware, which TCG has not.
 */
/*
 * Opens the deferred event of attr a (buffer 0) and its in-place twin
 * (buffer 1) on this thread. Not a group (a breakpoint cannot join a
 * software group): both are enabled before the first hit and disabled
 * after the last, and nothing between hits them.
 */
int open_attr_pair(session::Session *s, perf_event_attr a, pid_t pid = 0,
		   int cpu = -1)
{
	a.sample_period = 1;
	int r = s->open_attr(a, pid, cpu, 256);
	if (r)
		return r;
	/* The same event without bits 38 and 39 */
	perf_abi::clear_attr_bit(&a, perf_abi::kDeferCallchainBit);
	perf_abi::clear_attr_bit(&a, perf_abi::kDeferOutputBit);
	return s->open_attr(a, pid, cpu, 256);
}

TEST(RightStack, KernelBreakpointDeferredChainIsTheCallingStack)
{
	EXTENSION("requests from NMI context (a kernel execute breakpoint's "
		  "#DB) get their own entry's stack (doc/kernel.md: the right "
		  "stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	work::Kallsyms ks;
	ks.load();
	uint64_t addr = ks.addr(SYS_PREFIX "getppid");
	if (!addr)
		SKIP_NOT_APPLICABLE("no " SYS_PREFIX "getppid in /proc/kallsyms");
	session::Options o;
	perf_event_attr a = session::make_probe_attr(o);
	a.type = PERF_TYPE_BREAKPOINT;
	a.config = 0;
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = addr;
#ifdef __aarch64__
	a.bp_len = HW_BREAKPOINT_LEN_4; /* arm64: one instruction */
#else
	a.bp_len = sizeof(long);
#endif
	session::Session s;
#ifdef __aarch64__
	/*
	 * arm64 refuses a per-task breakpoint on a kernel address (EINVAL:
	 * its single-step handling would have to follow the task): a
	 * per-CPU pair, on the CPU this thread is pinned to. The pairs are
	 * matched by TID, so another task's hit there is left out.
	 */
	work::AffinityGuard unpin;
	int cpu = work::current_cpu();
	ASSERT_EQ(work::pin(0, cpu), 0) << "pin to CPU " << cpu;
	int r = open_attr_pair(&s, a, -1, cpu);
#else
	int r = open_attr_pair(&s, a);
#endif
	ASSERT_EQ(r, 0) << "execute breakpoint at " SYS_PREFIX "getppid: "
			<< strerror(-r);
	Compared c = run_getppid_pairs(
		&s, "execute breakpoint on " SYS_PREFIX "getppid", 200);
	/* Nothing in the syscall refuses a request: every hit is deferred */
	EXPECT_EQ(c.deferred, c.hits) << c.describe();
}

/*
 * Opens a deferred (buffer 0) and an in-place (buffer 1) kprobe at the
 * first offset past the entry of func that kprobes take; *what names it.
 * Returns 0, -ENOENT without a kprobe PMU, or the error of the open.
 */
int open_kprobe_pair(session::Session *s, const char *func, std::string *what,
		     pid_t pid = 0)
{
	session::Options o;
	perf_event_attr a = session::make_probe_attr(o);
	if (!perf::kprobe_attr(func, 0, false, &a))
		return -ENOENT;
	/*
	 * Past the entry: the first offset kprobes take (x86 refuses one
	 * inside an instruction with EILSEQ).
	 */
	int r = -EILSEQ;
	uint64_t off;
#ifdef __aarch64__
	/*
	 * Fixed 4-byte instructions: the next one. EINVAL there is an
	 * instruction kprobes cannot take, such as the ftrace call site
	 * that patchable function entries put past the entry (Debian's
	 * configuration: two NOPs, the second the site), ftrace's alone as
	 * arm64 has no kprobes on ftrace.
	 */
	constexpr uint64_t kStep = 4;
	constexpr int kNotHere = -EINVAL;
#else
	constexpr uint64_t kStep = 1;
	constexpr int kNotHere = -EILSEQ;
#endif
	for (off = kStep; off < 16 && (r == -EILSEQ || r == kNotHere);
	     off += kStep) {
		a.config2 = off;
		session::Session t;
		r = t.open_attr(a, 0, -1, 1);
	}
	a.config2 = off - kStep;
	*what = std::string("kprobe at ") + func + "+" +
		std::to_string(a.config2);
	if (r)
		return r;
	return open_attr_pair(s, a, pid);
}

extern "C" __attribute__((noinline)) long rs_pgrp_a(void)
{
	long r = raw_syscall3(GETPGRP_NR, 0, 0, 0);
	work::work_not_a_leaf();
	return r;
}

extern "C" __attribute__((noinline)) long rs_pgrp_b(void)
{
	long r = raw_syscall3(GETPGRP_NR, 0, 0, 0);
	work::work_not_a_leaf();
	return r;
}

/*
 * The probed system call is one that no other program of the suite calls:
 * under TCG, a vCPU may still run the int3 of a kprobe that another vCPU
 * just removed (QEMU invalidates its translated code asynchronously), and
 * the kernel then finds an int3 that no kprobe owns ("Oops: int3"), as
 * in a run that probed getppid while perf_tool_test's helper looped on it.
 */
TEST(RightStack, KprobeDeferredChainIsTheCallingStack)
{
	EXTENSION("requests from NMI context (a kprobe's int3 past the "
		  "function's entry) get their own entry's stack "
		  "(doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	session::Session s;
	std::string what;
	int r = open_kprobe_pair(&s, SYS_PREFIX GETPGRP_ENTRY, &what);
	if (r == -ENOENT)
		SKIP_NOT_APPLICABLE("no kprobe PMU (CONFIG_KPROBE_EVENTS)");
	ASSERT_EQ(r, 0) << what << ": " << strerror(-r);
	Compared c = run_pairs(&s, what.c_str(), 200,
			       "getpgrp from rs_pgrp_a and rs_pgrp_b in turn",
			       [](int i) { i & 1 ? rs_pgrp_a() : rs_pgrp_b(); });
	EXPECT_EQ(c.deferred, c.hits) << c.describe();
}

/*
 * A kprobe in the architecture's signal frame setup: its request comes
 * from NMI context (a kernel int3 on x86, a BRK on arm64), after
 * get_signal() returned and while the registers are being pointed at the
 * handler, so it cannot save them itself. The in-place chain starts at
 * the interrupted tgkill; so must the deferred one, which is walked once
 * the frame is set up.
 */
#ifdef __aarch64__
/*
 * GCC inlines arm64's setup_rt_frame() into do_signal() (every arm64
 * configuration built here); setup_sigframe_layout(), which it calls to
 * size the frame before setup_return() points the registers at the
 * handler, stays a function of its own.
 */
#define SIGFRAME_FUNC "setup_sigframe_layout"
#else
#define SIGFRAME_FUNC "x64_setup_rt_frame"
#endif

TEST(RightStack, SignalFrameKprobeDeferredChainIsTheInterruptedStack)
{
	EXTENSION("a first request from NMI context while a signal frame "
		  "is set up gets the interrupted stack, not the handler's "
		  "(doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	work::Kallsyms ks;
	ks.load();
	if (!ks.addr(SIGFRAME_FUNC))
		SKIP_NOT_APPLICABLE("no " SIGFRAME_FUNC " in /proc/kallsyms "
				    "(inlined)");
	struct sigaction sa {}, old {};
	sa.sa_handler = rs_on_signal;
	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);
	session::Session s;
	std::string what;
	int r = open_kprobe_pair(&s, SIGFRAME_FUNC, &what);
	if (r == -ENOENT)
		SKIP_NOT_APPLICABLE("no kprobe PMU (CONFIG_KPROBE_EVENTS)");
	ASSERT_EQ(r, 0) << what << ": " << strerror(-r);
	constexpr int kSignals = 200;
	static long pid, tid;
	pid = getpid();
	tid = work::gettid();
	rs_signals = 0;
	Compared c = run_pairs(&s, what.c_str(), kSignals,
			       "SIGUSR1 to self from rs_signal_self",
			       [](int) { rs_signal_self(pid, tid); });
	sigaction(SIGUSR1, &old, nullptr);
	EXPECT_EQ(rs_signals, kSignals);
	/* Delivery runs in the exit loop, before the close: all deferred */
	EXPECT_EQ(c.deferred, c.hits) << c.describe();
}

#ifdef __x86_64__
/*
 * x86's uretprobe trampoline returns through sys_uretprobe, which pops
 * its save area (sp += 24) and, in uprobe_handle_trampoline(), points ip
 * at the probed function's real return address. A kprobe there asks from
 * NMI context (a kernel int3), before the ip is rewritten: the in-place
 * chain starts in the trampoline, and so must the deferred one, walked
 * once the syscall is done.
 */
TEST(RightStack, UretprobeSyscallKprobeDeferredChainIsTheTrampolineStack)
{
	EXTENSION("a first request from NMI context in sys_uretprobe gets "
		  "the stack it interrupted (doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	if (access(kUprobePmu, F_OK))
		GTEST_SKIP() << "no uprobe PMU (CONFIG_UPROBE_EVENTS)";
	work::Kallsyms ks;
	ks.load();
	if (!ks.addr("__x64_sys_uretprobe"))
		SKIP_NOT_APPLICABLE("no sys_uretprobe (Linux 6.11 and later)");
	session::Session s;
	std::string what;
	int r = open_kprobe_pair(&s, "uprobe_handle_trampoline", &what);
	if (r == -ENOENT)
		SKIP_NOT_APPLICABLE("no kprobe PMU (CONFIG_KPROBE_EVENTS)");
	ASSERT_EQ(r, 0) << what << ": " << strerror(-r);
	/* The uretprobe on rs_probed: a counting event, no sample */
	const syms::Symbol *fn = syms::find(syms::self(), "rs_probed");
	ASSERT_NE(fn, nullptr) << "rs_probed not in /proc/self/exe";
	std::string path = work::self_path();
	session::Options o;
	o.period = 1ull << 62;
	o.defer_callchain = o.defer_output = false;
	perf_event_attr a = session::make_probe_attr(o);
	ASSERT_TRUE(perf::uprobe_attr(path.c_str(), fn->file_offset, true, &a));
	r = s.open_attr(a, 0, -1, 1);
	ASSERT_EQ(r, 0) << "uretprobe on " << path << "+" << fn->file_offset
			<< ": " << strerror(-r);
	Compared c = run_pairs(&s, what.c_str(), 200,
			       "returns of rs_probed through the uretprobe "
			       "trampoline",
			       [](int i) { rs_probed(i); });
	EXPECT_EQ(c.deferred, c.hits) << c.describe();
}
#endif

/* ---- an emulated vsyscall --------------------------------------------- */

/*
 * A legacy vsyscall: a call to a fixed address above the user limit,
 * which the kernel emulates in its page fault handler, then rewrites the
 * registers as if the call had returned. A sample taken during the
 * emulation interrupted the instruction at that address: the in-place
 * chain starts there, and so must the deferred one.
 */
constexpr uintptr_t kVsyscallGettimeofday = perf_abi::kVsyscallPage;

extern "C" __attribute__((noinline)) long rs_vsyscall(void)
{
	struct timeval tv;
	auto fn = (long (*)(struct timeval *, void *))kVsyscallGettimeofday;
	long r = fn(&tv, nullptr);
	work::work_not_a_leaf();
	return r;
}

TEST(RightStack, EmulatedVsyscallDeferredChainIsTheInterruptedStack)
{
	SKIP_UNLESS_X86("the legacy vsyscall page");
	EXTENSION("an entry from an emulated vsyscall starts above the user "
		  "limit: its deferred chain starts there too, as the in-place "
		  "one does (doc/kernel.md: the right stack)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	if (work::read_file("/proc/self/maps").find("[vsyscall]") ==
	    std::string::npos)
		SKIP_NOT_APPLICABLE("no vsyscall page (vsyscall=none)");
	session::Session s;
	std::string what;
	int r = open_kprobe_pair(&s, "__x64_sys_gettimeofday", &what);
	if (r == -ENOENT)
		SKIP_NOT_APPLICABLE("no kprobe PMU (CONFIG_KPROBE_EVENTS)");
	ASSERT_EQ(r, 0) << what << ": " << strerror(-r);
	Compared c = run_pairs(&s, what.c_str(), 200,
			       "vsyscall gettimeofday from rs_vsyscall",
			       [](int) { rs_vsyscall(); });
	/* Nothing in the emulation refuses a request: every hit deferred */
	EXPECT_EQ(c.deferred, c.hits) << c.describe();
}

/* ---- a tracer's rewrite at a ptrace stop ------------------------------- */

/*
 * A tracer rewrites the registers at a stop: the tracee below is sampled
 * at getppid()'s entry (its record is written before the syscall-exit
 * stop), the tracer moves its instruction pointer from right after the
 * system call to rs_setregs_resume and sends it SIGUSR1. The signal's
 * delivery is sampled again in the same entry, deferred and in place:
 * the record after that sample must hold the stack the task returns to,
 * which starts at rs_setregs_resume, not the one walked before the stop.
 */
extern "C" const char rs_setregs_resume[];

extern "C" __attribute__((noinline, noclone)) void rs_setregs_tracee(int fd)
{
	static char c;

	raw_syscall3(SYS_read, fd, (long)&c, 1);
	raw_syscall3(SYS_getppid, 0, 0, 0);
	/*
	 * Where the tracer moves the ip to, past the nops that getppid()
	 * returns to: exit_group(0), made here
	 */
#ifdef __x86_64__
	__asm__ volatile("nop\n\tnop\n\tnop\n\tnop\n"
			 ".globl rs_setregs_resume\n"
			 "rs_setregs_resume:\n\t"
			 "mov $231, %%eax\n\t"
			 "xor %%edi, %%edi\n\t"
			 "syscall"
			 ::: "rax", "rdi", "rcx", "r11", "memory");
#elif defined(__aarch64__)
	__asm__ volatile("nop\n\tnop\n"
			 ".globl rs_setregs_resume\n"
			 "rs_setregs_resume:\n\t"
			 "mov x8, #94\n\t"
			 "mov x0, #0\n\t"
			 "svc #0"
			 ::: "x0", "x8", "memory");
#endif
	work::work_not_a_leaf();
}

/* Move the ip of a tracee stopped by ptrace to ip. */
bool set_ip(pid_t pid, uint64_t ip)
{
	struct user_regs_struct regs;
	struct iovec iov = { &regs, sizeof(regs) };
	if (ptrace(PTRACE_GETREGSET, pid, NT_PRSTATUS, &iov))
		return false;
#ifdef __x86_64__
	regs.rip = ip;
#elif defined(__aarch64__)
	regs.pc = ip;
#endif
	return ptrace(PTRACE_SETREGSET, pid, NT_PRSTATUS, &iov) == 0;
}

/*
 * Trace a tracee stopped by ptrace (PTRACE_SEIZE, PTRACE_O_TRACESYSGOOD)
 * through its system calls until it exits: at getppid()'s exit stop, move
 * its ip to rs_setregs_resume and, with signal, send it SIGUSR1, which its
 * signal-delivery-stop delivers. moved: the ip was moved; exited: it
 * exited 0. A tracee still there at the deadline is killed.
 */
struct Traced {
	bool moved = false, exited = false;
};

Traced trace_moving_ip(pid_t pid, bool signal)
{
	Traced t;
	long nr = -1;
	int st, sig = 0;
	work::Deadline dl(60);
	while (!dl.passed() && ptrace(PTRACE_SYSCALL, pid, 0, sig) == 0 &&
	       waitpid(pid, &st, __WALL) == pid) {
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			t.exited = WIFEXITED(st) && WEXITSTATUS(st) == 0;
			return t;
		}
		sig = 0;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			struct __ptrace_syscall_info info {};
			if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info),
				   &info) <= 0)
				break;
			if (info.op == PTRACE_SYSCALL_INFO_ENTRY)
				nr = (long)info.entry.nr;
			else if (info.op == PTRACE_SYSCALL_INFO_EXIT &&
				 nr == SYS_getppid && !t.moved) {
				t.moved = set_ip(pid, (uint64_t)rs_setregs_resume) &&
					  (!signal || kill(pid, SIGUSR1) == 0);
				if (!t.moved)
					break;
			}
		} else if (signal && WSTOPSIG(st) == SIGUSR1) {
			sig = SIGUSR1; /* signal-delivery-stop: deliver it */
		}
	}
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, __WALL);
	return t;
}

/*
 * With the events of s on, lets the tracee's read return (a byte on wr)
 * and traces it with trace_moving_ip() to its exit; fails unless the ip
 * was moved and the tracee exited 0.
 */
void run_traced(session::Session *s, int wr, pid_t pid, bool signal)
{
	s->enable();
	ASSERT_EQ(write(wr, "x", 1), 1);
	close(wr);
	Traced traced = trace_moving_ip(pid, signal);
	bool moved = traced.moved, exited = traced.exited;
	s->disable();
	s->drain();
	ASSERT_TRUE(moved) << "the tracee's ip could not be moved at the "
			      "exit stop of getppid()";
	ASSERT_TRUE(exited) << "the tracee did not exit 0 from "
			       "rs_setregs_resume";
}

TEST(RightStack, PtraceSetregsDeferredChainIsTheNewStack)
{
	EXTENSION("a tracer's register rewrite during a stop: later samples "
		  "of the entry get the stack the task returns to");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long enter = work::tracepoint_id("syscalls/sys_enter_getppid");
	long deliver = work::tracepoint_id("signal/signal_deliver");
	if (enter < 0 || deliver < 0)
		GTEST_SKIP() << "no tracepoint syscalls/sys_enter_getppid or "
				"signal/signal_deliver in tracefs";
	int wr;
	pid_t pid = work::fork_reader([](int fd) {
		struct sigaction sa {};
		sa.sa_handler = rs_on_signal;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, nullptr);
		rs_setregs_tracee(fd);
	}, &wr);
	ASSERT_GE(pid, 0) << strerror(-pid);
	/* 0: signal_deliver deferred, 1: in place, 2: getppid's entry */
	session::Session s;
	session::Options o = session::tracepoint(deliver, 64);
	int rr = ptrace(PTRACE_SEIZE, pid, 0,
			PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD) ? -errno : 0;
	if (!rr)
		rr = s.open(o, pid, -1);
	o.defer_callchain = o.defer_output = false;
	if (!rr)
		rr = s.open_in_group(o, pid, 0);
	session::Options e = session::tracepoint(enter, 64);
	e.defer_output = false;
	if (!rr)
		rr = s.open(e, pid, -1);
	if (!rr && ptrace(PTRACE_INTERRUPT, pid, 0, 0))
		rr = -errno;
	if (rr) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, __WALL);
		FAIL() << "PTRACE_SEIZE, the events on the child or "
			  "PTRACE_INTERRUPT: " << strerror(-rr);
	}
	/* Stopped before the events go on */
	int st;
	if (waitpid(pid, &st, __WALL) != pid || !WIFSTOPPED(st)) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, __WALL);
		FAIL() << "the tracee did not stop for PTRACE_INTERRUPT";
	}
	ASSERT_NO_FATAL_FAILURE(run_traced(&s, wr, pid, true));

	/* The deferred signal_deliver sample, and the first record after it */
	std::string err;
	uint64_t type = s.event(0).attr().sample_type;
	bool id_all = s.event(0).attr().sample_id_all;
	uint64_t cookie = 0;
	size_t before = 0;
	std::vector<uint64_t> after;
	bool have_after = false;
	for (const perf::Record &r : s.records(0)) {
		if (r.header.type == PERF_RECORD_SAMPLE) {
			perf::Sample sm;
			ASSERT_TRUE(perf::parse_sample(r, type, &sm, &err)) << err;
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			if (c.deferred)
				cookie = c.cookie;
		} else if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			perf::DeferredCallchain d;
			ASSERT_TRUE(perf::parse_deferred(r, type, id_all, &d, &err))
				<< err;
			if (!cookie)
				before++;
			else if (d.cookie == cookie && !have_after) {
				after = d.ips;
				have_after = true;
			}
		}
	}
	std::vector<perf::Sample> in_place = s.samples(1, &err);
	ASSERT_TRUE(err.empty()) << err;
	ASSERT_EQ(in_place.size(), 1u) << "signal_deliver hits in place";
	std::vector<uint64_t> ip =
		perf::split_callchain(in_place[0].callchain).user;
	printf("# %zu record(s) before the signal's sample (getppid's "
	       "entry, walked before the stop), cookie 0x%llx\n# in place: "
	       "%s\n# deferred after the sample: %s\n", before,
	       (unsigned long long)cookie, syms::chain_str(ip).c_str(),
	       have_after ? syms::chain_str(after).c_str() : "(none)");
	ASSERT_NE(cookie, 0u) << "the signal's delivery was not deferred";
	EXPECT_GE(before, 1u) << "no record of getppid's request before the "
				 "stop: the entry had no walk to forget";
	ASSERT_TRUE(have_after) << "no record after the signal's sample";
	ASSERT_FALSE(ip.empty());
	EXPECT_EQ(ip[0], (uint64_t)rs_setregs_resume)
		<< "the in-place chain does not start where the tracer moved "
		   "the ip";
	EXPECT_TRUE(same_stack(after, ip))
		<< "the deferred chain is not the stack the task returns to";
}

/*
 * The same tracer, sampled from NMI context: an execute breakpoint on
 * ptrace_stop() (its #DB is an NMI on x86; a kprobe there is optimized
 * into a jump, no int3) asks for each stop's user stack and cannot save
 * where it starts. The request is answered when the task resumes, after
 * the tracer moved the ip at getppid()'s exit stop: the record must hold
 * the stack the sample saw (the in-place chain of the pair), not the one
 * the tracer made.
 */
TEST(RightStack, PtraceStopBreakpointDeferredChainIsTheStoppedStack)
{
	EXTENSION("a request from NMI context at a ptrace stop gets the "
		  "stack it interrupted, whatever the tracer writes");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	int wr;
	pid_t pid = work::fork_reader(rs_setregs_tracee, &wr);
	ASSERT_GE(pid, 0) << strerror(-pid);
	session::Session s;
	std::string what;
	int rr = ptrace(PTRACE_SEIZE, pid, 0,
			PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD) ? -errno : 0;
#ifdef __x86_64__
	work::Kallsyms ks;
	ks.load();
	uint64_t addr = ks.addr("ptrace_stop");
	if (!rr && !addr)
		rr = -ENOENT;
	if (!rr) {
		session::Options o;
		perf_event_attr a = session::make_probe_attr(o);
		a.type = PERF_TYPE_BREAKPOINT;
		a.config = 0;
		a.bp_type = HW_BREAKPOINT_X;
		a.bp_addr = addr;
		a.bp_len = sizeof(long);
		what = "execute breakpoint on ptrace_stop";
		rr = open_attr_pair(&s, a, pid);
	}
#else
	/*
	 * arm64 refuses a per-task kernel breakpoint, and a kprobe's BRK is
	 * not an NMI there: it saves the start itself.
	 */
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, __WALL);
	SKIP_NOT_APPLICABLE("needs an NMI-context request at a ptrace stop "
			    "(x86's #DB)");
#endif
	if (!rr && ptrace(PTRACE_INTERRUPT, pid, 0, 0))
		rr = -errno;
	/* Stopped before the events go on: both see the same hits */
	int st;
	if (!rr && (waitpid(pid, &st, __WALL) != pid || !WIFSTOPPED(st)))
		rr = -ECHILD;
	if (rr) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, __WALL);
		if (rr == -ENOENT)
			SKIP_NOT_APPLICABLE("no ptrace_stop in /proc/kallsyms "
					    "or no kprobe PMU");
		FAIL() << "PTRACE_SEIZE, " << what << " on the child or "
		       << "PTRACE_INTERRUPT: " << strerror(-rr);
	}
	ASSERT_NO_FATAL_FAILURE(run_traced(&s, wr, pid, false));
	/*
	 * Each deferred sample against the first record of its cookie after
	 * it (an entry's stops share a cookie: the records of its later
	 * samples come again), and the in-place sample of the same hit.
	 */
	std::string err;
	uint64_t type = s.event(0).attr().sample_type;
	bool id_all = s.event(0).attr().sample_id_all;
	std::vector<uint64_t> waiting; /* cookies of samples not answered */
	std::vector<std::vector<uint64_t>> answers;
	std::vector<size_t> answer_of; /* per deferred sample */
	for (const perf::Record &r : s.records(0)) {
		if (r.header.type == PERF_RECORD_SAMPLE) {
			perf::Sample sm;
			ASSERT_TRUE(perf::parse_sample(r, type, &sm, &err)) << err;
			waiting.push_back(perf::split_callchain(sm.callchain)
						  .cookie);
			answer_of.push_back(SIZE_MAX);
		} else if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			perf::DeferredCallchain d;
			ASSERT_TRUE(perf::parse_deferred(r, type, id_all, &d, &err))
				<< err;
			answers.push_back(d.ips);
			for (size_t i = 0; i < waiting.size(); i++)
				if (waiting[i] == d.cookie &&
				    answer_of[i] == SIZE_MAX)
					answer_of[i] = answers.size() - 1;
		}
	}
	std::vector<perf::Sample> in_place = s.samples(1, &err);
	ASSERT_TRUE(err.empty()) << err;
	ASSERT_EQ(in_place.size(), waiting.size()) << "unpaired samples";
	size_t hits = waiting.size(), matches = 0, no_record = 0;
	std::string mismatch;
	for (size_t i = 0; i < hits; i++) {
		std::vector<uint64_t> ip =
			perf::split_callchain(in_place[i].callchain).user;
		if (answer_of[i] == SIZE_MAX) {
			no_record++;
			continue;
		}
		const std::vector<uint64_t> &got = answers[answer_of[i]];
		if (same_stack(got, ip))
			matches++;
		else if (mismatch.empty())
			mismatch = "deferred " + syms::chain_str(got) +
				   " vs in place " + syms::chain_str(ip);
	}
	printf("# %s, the %zu stops of a tracee whose ip the tracer moves at "
	       "getppid()'s exit stop: %zu deferred chains equal the "
	       "in-place one, %zu without a record%s%s\n", what.c_str(),
	       hits, matches, no_record, mismatch.empty() ? "" : "; e.g. ",
	       mismatch.c_str());
	EXPECT_EQ(s.lost(), 0u);
	EXPECT_GE(hits, 4u);
	EXPECT_EQ(no_record, 0u);
	EXPECT_EQ(matches, hits - no_record)
		<< "deferred chains that are not the stopped stack: " << mismatch;
}

} // namespace
