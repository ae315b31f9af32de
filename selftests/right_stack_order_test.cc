// SPDX-License-Identifier: GPL-2.0
/*
 * The right stack (doc/kernel.md, "The right stack": a stopped task), the
 * record's order around stops: every sample with a cookie has that
 * cookie's record after it in its buffer, for a task that is stopped
 * (ptrace, job control) or preempted after its entry's record was
 * written; and the records of the samples taken before a syscall or exit
 * stop are in the buffer by that stop.
 */
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "helpers/raw_syscall.h"
#include "lib/features.h"
#include "lib/perf_abi.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

/* ---- samples after their entry's record ---------------------------------- */

struct Order {
	size_t samples = 0, with_cookie = 0, cookies = 0, records = 0;
	size_t record_after = 0;  /* samples with their record after them */
	size_t record_before = 0; /* ... with it only before them */
	size_t no_record = 0;
	std::string describe() const
	{
		std::ostringstream o;
		o << samples << " samples, " << with_cookie << " with a cookie ("
		  << cookies << " cookies), " << records << " records; "
		  << record_after << " samples with their record after them, "
		  << record_before << " whose record came before them, "
		  << no_record << " without a record";
		return o.str();
	}
};

/* Buffer i of s holds the samples and the records, in the kernel's order. */
Order check_order(session::Session &s, size_t i, std::string *err)
{
	Order o;
	std::vector<std::pair<size_t, uint64_t>> announced; /* index, cookie */
	std::map<uint64_t, std::vector<size_t>> rec_at;
	const auto &records = s.records(i);
	uint64_t st = s.event(i).attr().sample_type;
	bool id_all = s.event(i).attr().sample_id_all;
	for (size_t k = 0; k < records.size(); k++) {
		const perf::Record &r = records[k];
		if (r.header.type == PERF_RECORD_SAMPLE) {
			perf::Sample sm;
			if (!perf::parse_sample(r, st, &sm, err))
				return o;
			o.samples++;
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			if (c.deferred)
				announced.push_back({ k, c.cookie });
		} else if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			perf::DeferredCallchain d;
			if (!perf::parse_deferred(r, st, id_all, &d, err))
				return o;
			o.records++;
			rec_at[d.cookie].push_back(k);
		}
	}
	std::set<uint64_t> cookies;
	for (auto &[k, cookie] : announced) {
		o.with_cookie++;
		cookies.insert(cookie);
		auto it = rec_at.find(cookie);
		if (it == rec_at.end())
			o.no_record++;
		else if (it->second.back() > k)
			o.record_after++;
		else
			o.record_before++;
	}
	o.cookies = cookies.size();
	return o;
}

/* The tracee: blocks in a read of a pipe nobody writes, again and again. */
extern "C" __attribute__((noinline)) long rs_tracee_read(int fd)
{
	static char c;
	long r = raw_syscall3(SYS_read, fd, (long)&c, 1);
	work::work_not_a_leaf();
	return r;
}

/*
 * While the task is stopped: has the entry it stopped in been answered?
 * The last sample in buffer i is the stop's own (or the blocked read's)
 * and carries the entry's cookie; if the entry has a sample taken before
 * the task went into get_signal() (the blocked read's), the record of
 * that cookie must be in the buffer already, written before the task
 * stopped, as upstream's callbacks do from the task_work that
 * get_signal() runs first. A record held until the task resumes is lost
 * to a recording that ends during the stop.
 *
 * Samples taken inside get_signal() come after that task_work: the
 * stop's own, and on PREEMPT_RT also the task blocking on a sleeping
 * lock or preempted on its way to the stop (do_notify_parent_cldstop()
 * under tasklist_lock, cgroup_enter_frozen()). Their records come when
 * the task resumes; an entry with only those has nothing to judge (the
 * read had not blocked yet, or blocked before the events were enabled).
 */
struct StopView {
	int answered = -1; /* 1, 0, or -1: nothing to judge */
	bool signal_path_only = false; /* several samples, all in get_signal() */
};

StopView stopped_entry_answered(session::Session &s, size_t i, std::string *err,
				std::string *tail)
{
	static work::Kallsyms ksyms;
	if (ksyms.empty())
		ksyms.load();
	StopView v;
	uint64_t last = 0;
	std::map<uint64_t, int> samples, before_signal;
	std::set<uint64_t> recorded;
	std::vector<std::string> seen; /* the buffer's records, for *tail */
	uint64_t st = s.event(i).attr().sample_type;
	bool id_all = s.event(i).attr().sample_id_all;
	for (const perf::Record &r : s.records(i)) {
		std::ostringstream d;
		if (r.header.type == PERF_RECORD_SAMPLE) {
			perf::Sample sm;
			if (!perf::parse_sample(r, st, &sm, err))
				return v;
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			d << "sample " << std::hex << c.cookie << std::dec << " at "
			  << sm.sid.time << " cpu " << sm.sid.cpu << " in";
			bool in_signal = false;
			for (size_t f = 0; f < c.kernel.size(); f++) {
				std::string fn = ksyms.name(c.kernel[f]);
				in_signal |= fn.rfind("get_signal+", 0) == 0;
				if (f < 8)
					d << " " << fn;
			}
			if (c.deferred) {
				samples[last = c.cookie]++;
				before_signal[c.cookie] += !in_signal;
			}
		} else if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			perf::DeferredCallchain dc;
			if (!perf::parse_deferred(r, st, id_all, &dc, err))
				return v;
			recorded.insert(dc.cookie);
			d << "record " << std::hex << dc.cookie << std::dec << " at "
			  << dc.sid.time << " cpu " << dc.sid.cpu;
		}
		seen.push_back(d.str());
	}
	if (!last)
		return v; /* no deferred sample yet */
	if (!before_signal[last]) {
		v.signal_path_only = samples[last] > 1;
		return v;
	}
	v.answered = recorded.count(last);
	/* What the buffer ended with, for the first stop judged wrong. */
	if (!v.answered && tail->empty()) {
		size_t from = seen.size() > 8 ? seen.size() - 8 : 0;
		for (size_t k = from; k < seen.size(); k++)
			*tail += "\n  " + seen[k];
	}
	return v;
}

/*
 * A child blocked in a read is stopped and continued again and again,
 * by PTRACE_INTERRUPT and PTRACE_CONT (ptraced) or by SIGSTOP and SIGCONT:
 * its read returns for the stop, get_signal() runs the pending task_work
 * (the walk for the entry, whose sched_switch sample came when the read
 * blocked), then the task stops: a second sched_switch sample in the
 * same entry, after the walk. Both must come before the entry's record,
 * written when the task returns to user space; the stop's sample is
 * deferred too, not unwound in place.
 */
void stop_repeatedly(bool ptraced)
{
	long sw = work::tracepoint_id("sched/sched_switch");
	if (sw < 0)
		GTEST_SKIP() << "no tracepoint sched/sched_switch in tracefs";
	int wr;
	pid_t pid = work::fork_reader([](int fd) {
		for (;;)
			if (rs_tracee_read(fd) == 0)
				_exit(0);
	}, &wr);
	ASSERT_GE(pid, 0) << strerror(-pid);
	if (ptraced && ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_EXITKILL)) {
		int e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, 0);
		close(wr);
		FAIL() << "PTRACE_SEIZE: " << strerror(e);
	}
	session::Session s;
	session::Options o = session::tracepoint(sw, 256);
	int rr = s.open(o, pid, -1);
	/*
	 * At least kStops stops, and on until kJudged of them could be
	 * judged (below), under a deadline: how many can is timing.
	 */
	constexpr int kStops = 60, kJudged = kStops / 2;
	int stops = 0, answered = 0, applicable = 0, signal_only = 0;
	std::string stop_err, unanswered;
	work::Deadline dl(20);
	if (!rr) {
		s.enable();
		while (stops < kStops ||
		       (applicable < kJudged && !dl.passed())) {
			/*
			 * Wait for the child to sleep in its read (arm64's
			 * debug kernel under TCG took over 0.2 s).
			 */
			work::Deadline asleep(2);
			while (work::task_state(pid) != 'S' && !asleep.passed())
				usleep(100);
			int st;
			if (ptraced ? ptrace(PTRACE_INTERRUPT, pid, 0, 0)
				    : kill(pid, SIGSTOP))
				break;
			if (waitpid(pid, &st, __WALL | WUNTRACED) != pid ||
			    !WIFSTOPPED(st))
				break;
			stops++;
			s.drain();
			StopView v = stopped_entry_answered(s, 0, &stop_err,
							    &unanswered);
			applicable += v.answered >= 0;
			answered += v.answered > 0;
			signal_only += v.signal_path_only;
			if (ptraced ? ptrace(PTRACE_CONT, pid, 0, 0)
				    : kill(pid, SIGCONT))
				break;
			if (!ptraced &&
			    (waitpid(pid, &st, WCONTINUED) != pid ||
			     !WIFCONTINUED(st)))
				break;
			s.drain();
		}
		/* Let the last restarted read block. */
		work::Deadline asleep(0.2);
		while (work::task_state(pid) != 'S' && !asleep.passed())
			usleep(100);
		s.disable();
		s.drain();
	}
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, __WALL);
	close(wr);
	ASSERT_EQ(rr, 0) << "sched_switch on the child: " << strerror(-rr);
	std::string err;
	Order ord = check_order(s, 0, &err);
	ASSERT_TRUE(err.empty()) << err;
	printf("# %d %s stops of a read: %s\n", stops,
	       ptraced ? "ptrace (PTRACE_INTERRUPT)" : "job control (SIGSTOP)",
	       ord.describe().c_str());
	EXPECT_GE(stops, kStops);
	EXPECT_EQ(s.lost(), 0u);
	EXPECT_TRUE(stop_err.empty()) << stop_err;
	printf("# %d of %d stops with the entry's record in the buffer while "
	       "the task was stopped (%d with a sample before get_signal(), "
	       "%d with samples only in get_signal(); %s)\n", answered, stops,
	       applicable, signal_only, dl.describe().c_str());
	EXPECT_EQ(answered, applicable)
		<< "records held until the task resumes: a recording that "
		   "ends during the stop loses them; the buffer's last records "
		   "at the first such stop (cookie, time):" << unanswered;
	/*
	 * A stop whose entry has no sample but the stop's own (the read
	 * blocked before enabling, or the child not yet asleep when it was
	 * stopped) has nothing to judge; it is timing, not behaviour. The
	 * loop stopped until kJudged were.
	 */
	EXPECT_GE(applicable, kJudged) << "in " << stops << " stops, "
				       << dl.describe();
	/*
	 * Each stop's own sample, and the read's block before a judged
	 * stop, has its entry's record after it (the last read's block has
	 * none yet); a stop's sample unwound in place instead leaves about
	 * one per stop. So about stops + judged, or a few more; the bound
	 * leaves half the judged stops' blocks to such samples.
	 */
	EXPECT_GE(ord.record_after, (size_t)(stops + applicable / 2))
		<< "the stops' samples are not answered by their entry's "
		   "record: " << ord.describe();
	EXPECT_EQ(ord.record_before, 0u)
		<< "samples whose cookie's record was written before them: "
		<< ord.describe();
	EXPECT_LE(ord.no_record, 1u) << ord.describe();
}

constexpr const char *kAfterRecordWhy =
	"a task stopped or preempted after its entry's stack was walked: "
	"perf tools match a sample only with a record after it, so the "
	"record must come after such a sample, or the sample fall back in "
	"place (doc/kernel.md: fallbacks)";

TEST(RightStack, PtraceStopSamplesComeBeforeTheirRecord)
{
	EXTENSION(kAfterRecordWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	stop_repeatedly(true);
}

TEST(RightStack, JobControlStopSamplesComeBeforeTheirRecord)
{
	EXTENSION(kAfterRecordWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	stop_repeatedly(false);
}

/* ---- the syscall and exit stops ------------------------------------------ */

/*
 * The tracee of the stops below: a read that blocks until the tracer is
 * ready, system calls, then exit_group(), all made from this function.
 */
constexpr int kTraceeCalls = 40;

extern "C" __attribute__((noinline)) void rs_tracee_syscalls(int fd)
{
	static char c;

	raw_syscall3(SYS_read, fd, (long)&c, 1);
	for (int i = 0; i < kTraceeCalls; i++)
		raw_syscall3(SYS_getppid, 0, 0, 0);
	raw_syscall3(SYS_exit_group, 0, 0, 0);
	work::work_not_a_leaf();
}

/*
 * The ptrace stops outside get_signal(): PTRACE_SYSCALL's syscall-entry
 * and syscall-exit stops and PTRACE_EVENT_EXIT's stop in do_exit() all go
 * through ptrace_notify(), which runs the pending task_work first. So the
 * callbacks of the entry run before the task stops (doc/kernel.md: the
 * task_work runs before a ptrace stop), and a tracer that reads the buffer
 * at any of these stops finds the record of every sample taken before
 * it: raw_syscalls:sys_enter
 * samples each system call of the tracee after its entry stop, and each
 * must have its record, starting in rs_tracee_syscalls, by its exit stop.
 */
TEST(RightStack, RecordComesBeforeSyscallAndExitStops)
{
	EXTENSION("the record is written before a syscall-exit or "
		  "PTRACE_EVENT_EXIT stop (upstream's task_work does the same, "
		  "unverified)");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long tp = work::tracepoint_id("raw_syscalls/sys_enter");
	if (tp < 0)
		GTEST_SKIP() << "no tracepoint raw_syscalls/sys_enter in tracefs";
	/* Asleep in its read: no system call of it before that is sampled */
	int wr;
	pid_t pid = work::fork_reader(rs_tracee_syscalls, &wr);
	ASSERT_GE(pid, 0) << strerror(-pid);
	session::Session s;
	int rr = ptrace(PTRACE_SEIZE, pid, 0,
			PTRACE_O_EXITKILL | PTRACE_O_TRACESYSGOOD |
				PTRACE_O_TRACEEXIT) ? -errno : 0;
	if (!rr)
		rr = s.open(session::tracepoint(tp, 256), pid, -1);
	if (!rr && ptrace(PTRACE_INTERRUPT, pid, 0, 0))
		rr = -errno;
	if (rr) {
		kill(pid, SIGKILL);
		waitpid(pid, nullptr, __WALL);
		FAIL() << "PTRACE_SEIZE, raw_syscalls:sys_enter on the child or "
			  "PTRACE_INTERRUPT: " << strerror(-rr);
	}
	s.enable();
	/* The restarted read returns at once */
	ASSERT_EQ(write(wr, "x", 1), 1);
	close(wr);
	const std::vector<syms::Symbol> &syms = syms::self();
	const syms::Symbol *fn = syms::find(syms, "rs_tracee_syscalls");
	uint64_t type = s.event(0).attr().sample_type;
	bool id_all = s.event(0).attr().sample_id_all;
	int syscall_stops = 0, exit_stops = 0, judged = 0, held = 0;
	size_t samples = 0, records = 0, wrong = 0;
	std::string err;
	work::Deadline dl(60);
	int st;
	while (fn && err.empty() && !dl.passed() &&
	       waitpid(pid, &st, __WALL) == pid && WIFSTOPPED(st)) {
		bool exit_stop = (st >> 8) == (SIGTRAP | (PTRACE_EVENT_EXIT << 8));
		bool syscall_stop = WSTOPSIG(st) == (SIGTRAP | 0x80);
		syscall_stops += syscall_stop;
		exit_stops += exit_stop;
		/* Everything the kernel wrote before the stop */
		s.drain();
		std::set<uint64_t> announced, recorded;
		samples = records = wrong = 0;
		for (const perf::Record &r : s.records(0)) {
			if (r.header.type == PERF_RECORD_SAMPLE) {
				perf::Sample sm;
				if (!perf::parse_sample(r, type, &sm, &err))
					break;
				perf::SplitChain c =
					perf::split_callchain(sm.callchain);
				samples++;
				if (c.deferred)
					announced.insert(c.cookie);
			} else if (r.header.type ==
				   perf_abi::kRecordCallchainDeferred) {
				perf::DeferredCallchain d;
				if (!perf::parse_deferred(r, type, id_all, &d,
							  &err))
					break;
				records++;
				recorded.insert(d.cookie);
				wrong += d.ips.empty() ||
					 syms::lookup(syms, d.ips[0]) != fn;
			}
		}
		if ((exit_stop || syscall_stop) && !announced.empty()) {
			judged++;
			for (uint64_t c : announced)
				if (!recorded.count(c)) {
					held++;
					break;
				}
		}
		if (exit_stop || ptrace(PTRACE_SYSCALL, pid, 0, 0))
			break;
	}
	ptrace(PTRACE_CONT, pid, 0, 0);
	kill(pid, SIGKILL);
	waitpid(pid, nullptr, __WALL);
	printf("# %d syscall stops, %d PTRACE_EVENT_EXIT stops, %d with "
	       "samples before them, %d of those with a record still "
	       "held; %zu samples, %zu records (%zu not from "
	       "rs_tracee_syscalls)\n", syscall_stops, exit_stops, judged,
	       held, samples, records, wrong);
	ASSERT_NE(fn, nullptr) << "no symbol rs_tracee_syscalls";
	ASSERT_TRUE(err.empty()) << err;
	EXPECT_EQ(exit_stops, 1) << dl.describe();
	EXPECT_GE(syscall_stops, 2 * kTraceeCalls);
	EXPECT_GE(samples, (size_t)kTraceeCalls);
	EXPECT_EQ(held, 0) << "stops with a sample whose record the task "
			      "had not written yet";
	EXPECT_EQ(wrong, 0u) << "records that do not start in "
				"rs_tracee_syscalls";
}

/* ---- preempted on the way out ------------------------------------------- */

/* The sleeper: nanosleep from a known function, in a loop. */
extern "C" __attribute__((noinline)) void rs_sleeper(int n)
{
	struct timespec ts = { 0, 50000 };
	for (int i = 0; i < n; i++)
		nanosleep(&ts, nullptr);
	__asm__ volatile("" ::: "memory");
}

TEST(RightStack, PreemptedOnTheWayOutSamplesComeBeforeTheirRecord)
{
	EXTENSION(kAfterRecordWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long sw = work::tracepoint_id("sched/sched_switch");
	if (sw < 0)
		GTEST_SKIP() << "no tracepoint sched/sched_switch in tracefs";
	/*
	 * This thread sleeps again and again; a reader thread on the same
	 * CPU polls the buffer and is woken by every record (watermark of 1
	 * byte): the record written on the way out wakes it, and it may
	 * preempt this thread before it returns to user space.
	 */
	cpu_set_t saved;
	ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
	int cpu = work::current_cpu();
	ASSERT_EQ(work::pin(0, cpu), 0);
	session::Session s;
	session::Options o = session::tracepoint(sw);
	perf_event_attr a = session::make_attr(o);
	a.watermark = 1;
	a.wakeup_watermark = 1;
	int r = s.open_attr(a, 0, -1, 256);
	if (r) {
		sched_setaffinity(0, sizeof(saved), &saved);
		FAIL() << "sched_switch: " << strerror(-r);
	}
	std::atomic<bool> stop{ false };
	std::atomic<int> wakeups{ 0 };
	std::thread reader([&] {
		work::pin(0, cpu);
		struct pollfd pfd = { s.event(0).fd(), POLLIN, 0 };
		while (!stop.load()) {
			if (poll(&pfd, 1, 20) > 0)
				wakeups++;
			s.drain();
		}
	});
	constexpr int kSleeps = 300;
	s.enable();
	rs_sleeper(kSleeps);
	s.disable();
	stop = true;
	reader.join();
	s.drain();
	sched_setaffinity(0, sizeof(saved), &saved);
	std::string err;
	Order ord = check_order(s, 0, &err);
	ASSERT_TRUE(err.empty()) << err;
	printf("# %d sleeps on CPU %d beside a reader woken %d times: %s\n",
	       kSleeps, cpu, wakeups.load(), ord.describe().c_str());
	EXPECT_EQ(s.lost(), 0u);
	EXPECT_GE(ord.record_after, (size_t)kSleeps / 2) << ord.describe();
	EXPECT_EQ(ord.record_before, 0u)
		<< "samples whose cookie's record was written before them: "
		<< ord.describe();
	EXPECT_LE(ord.no_record, 1u) << ord.describe();
}

} // namespace
