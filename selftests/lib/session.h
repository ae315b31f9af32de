/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A deferred-callchain recording: sampling events (defer_callchain) and
 * side-band receivers (defer_output), per task or one per CPU, drained
 * through the shared reader into the shared cookie matcher.
 */
#pragma once

#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cookie_match.h"
#include "perf_event.h"
#include "workload.h"

namespace session {

/* TID, TIME, CPU, ID and the callchain: what most tests want. */
constexpr uint64_t kSampleType = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID |
				 PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
				 PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;

struct Options {
	uint32_t type = PERF_TYPE_SOFTWARE;
	uint64_t config = PERF_COUNT_SW_CPU_CLOCK;
	/* ns for the clock events, on the reference guest: make_attr()
	 * stretches it by work::slowdown() */
	uint64_t period = 200000;
	uint64_t sample_type = kSampleType;
	bool sample_id_all = true;
	bool defer_callchain = true;
	bool defer_output = true;
	bool exclude_kernel = false;
	bool exclude_idle = false;
	bool enable_on_exec = false;
	/*
	 * Side-band tracking as perf sets it on the event that receives
	 * PERF_RECORD_CALLCHAIN_DEFERRED (mmap, comm, task). Per-CPU events
	 * get side-band records only with such a bit: upstream delivers
	 * deferred records to per-CPU receivers that are side-band events.
	 */
	bool track = false;
	bool disabled = true;
	/* Sample times on CLOCK_MONOTONIC, comparable to now_ns(). */
	bool monotonic = true;
	size_t pages = 64;
};

/* The attr the options describe (size set, bits 38/39 as asked). */
perf_event_attr make_attr(const Options &o);
/*
 * The start of an attr for another PMU than o's (a uprobe, a kprobe, a
 * breakpoint: the caller then sets its type and config): make_attr(o)
 * with o.period as given. It counts hits there, which a slow guest does
 * not stretch as make_attr() stretches the default clock's nanoseconds
 * (on one TCG thread, factor 2.1, a uprobe's period 1 became 2: every
 * other hit sampled).
 */
perf_event_attr make_probe_attr(const Options &o);

/*
 * A side-band receiver as perf sets one up: a dummy event with
 * defer_output and the tracking bits (track). With bare, defer_output is
 * its only side-band bit (what upstream does not deliver to per CPU).
 */
Options sideband(bool bare = false);

/* A tracepoint event (id from work::tracepoint_id()) sampling every hit. */
Options tracepoint(long id, size_t pages = 64);

class Session {
public:
	/* Each open returns 0 or -errno; on success the event is buffer
	 * number events().size() - 1. cpu is stored for per-CPU events. */
	int open(const Options &o, pid_t pid, int cpu);
	/* The same for an attr built by hand (make_attr() and changes). */
	int open_attr(const perf_event_attr &attr, pid_t pid, int cpu,
		      size_t pages = 64);
	/*
	 * o as a member of event leader's group (opened for the same pid),
	 * enabled at once: it counts
	 * exactly while the leader does, so the two see the same hits (two
	 * enable ioctls would let hits in between reach only one of them).
	 */
	int open_in_group(Options o, pid_t pid, size_t leader);
	/* The same for an attr built by hand (its disabled bit cleared). */
	int open_attr_in_group(perf_event_attr attr, pid_t pid, size_t leader,
			       size_t pages = 64);
	/* One event per online CPU (pid = -1); returns 0 or the first error. */
	int open_per_cpu(const Options &o);
	/* The same on some CPUs only, as perf record -C does. */
	int open_on_cpus(const Options &o, const std::vector<int> &cpus);
	/*
	 * Every event on (off). Receivers (defer_output, no defer_callchain)
	 * go on before and off after the samplers, so every entry a sampler
	 * asks a record of has a receiver on when the record is written.
	 */
	void enable();
	void disable();
	/* Drain every buffer, keeping the records (records(i) below). */
	void drain();
	/*
	 * drain() if any buffer is more than fraction full; true if it
	 * drained. Checking is a read of the mapped pages, no system call:
	 * a loop that calls it after each step drains as often as the
	 * kernel writes, however slow the host, and adds no hits of its own
	 * (to a tracepoint on kernel entries) while the buffers are empty.
	 */
	bool drain_if_fuller(double fraction = 0.25);
	/*
	 * drain(), then whether a sample drained so far, in any buffer,
	 * matches pred: the end test of a test's rounds of sampling.
	 */
	bool sampled(const std::function<bool(const perf::Sample &)> &pred);
	/*
	 * Drain every every_ms while running() holds, then once more, from
	 * the calling thread at a raised priority (nice -10 for the time,
	 * where allowed): a reader that keeps up with per-CPU buffers while
	 * other threads sample, on a host of any speed.
	 */
	void drain_while(const std::function<bool()> &running,
			 int every_ms = 2);
	/* Feed everything drained so far to a matcher. */
	bool match(perf::CookieMatcher *m, std::string *err) const;
	/* The end of most recordings: disable, drain, match. */
	bool stop(perf::CookieMatcher *m, std::string *err);

	size_t size() const { return events_.size(); }
	perf::Event &event(size_t i) { return events_[i]; }
	int cpu(size_t i) const { return cpus_[i]; }
	uint64_t id(size_t i) const;
	const std::vector<perf::Record> &records(size_t i) const
	{
		return records_[i];
	}
	uint64_t lost() const;

	/* Every sample / deferred record of buffer i, parsed. */
	std::vector<perf::Sample> samples(size_t i, std::string *err) const;
	/*
	 * The cookies buffer i's deferred samples announced: the records a
	 * reader matches to them. A session that samples every task makes
	 * the tasks write other records into this session too.
	 */
	std::set<uint64_t> announced(size_t i, std::string *err) const;
	std::vector<perf::DeferredCallchain> deferred(size_t i,
						      std::string *err) const;
	/* The PERF_RECORD_COMM of exec in buffer i (an event with track). */
	struct CommExec {
		uint64_t time = 0;
		std::string comm;
	};
	std::vector<CommExec> comm_execs(size_t i, std::string *err) const;

private:
	std::vector<perf::Event> events_;
	std::vector<int> cpus_;
	std::vector<std::vector<perf::Record>> records_;
};

/*
 * Record one run of a helper program, from its exec to its exit: spawn
 * argv as *child, open o on it with enable_on_exec, call before_exec (if
 * given) with its pid, let it go (killing it after kill_after_ms if that
 * is > 0) and drain while it runs. Returns its wait status, or -errno
 * when it could not be spawned, the event could not be opened or
 * before_exec failed.
 */
int record_program(Session *s, work::Child *child,
		   const std::vector<std::string> &argv, Options o,
		   int kill_after_ms = 0,
		   const std::function<int(pid_t)> &before_exec = nullptr);

/* The status record_program() returns when the helper could not exec. */
bool exec_failed(int status);

/*
 * For a test that records a helper's run and needs the run to have taken
 * samples in one place of it: calls record(last) up to kRecordings times,
 * until it returns true (the run took what the test judges), a fatal
 * failure or a skip; last is true on the final call, where what is still
 * missing fails the test. Prints and returns the number of calls. record
 * returns bool, so ASSERT_* and GTEST_SKIP go in a void function it calls.
 * Why again: a helper runs its loop for a span of its own CPU clock, which
 * runs on while the host has the guest's vCPU stopped, and a sample timer
 * fires once however long the stop. With QEMU stopped 400 of every 450 ms
 * a 60 ms loop took 2 to 13 samples where an unstopped one takes 50 to
 * 280, and CI's debug guest (-smp 4 on two host cores) had runs take none.
 */
constexpr int kRecordings = 5;
int record_until(const std::function<bool(bool last)> &record);

/* The online CPUs (/sys/devices/system/cpu/online). */
std::vector<int> online_cpus();

/* "[nr: 0x... 0x...]": a chain on one line, for messages. */
std::string hex_chain(const std::vector<uint64_t> &ips, size_t max = 12);

} // namespace session
