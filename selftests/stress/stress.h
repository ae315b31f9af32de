/* SPDX-License-Identifier: GPL-2.0 */
/*
 * make stress's guest program: what its threads share. main.cc says
 * what the program runs and prints; one file per topic holds the rest:
 *
 *	fuzz.cc			the fuzzer
 *	deep_syscalls.cc	syscall-heavy work under deep user stacks
 *	lifecycle.cc		the lifecycle storms
 *	cookie_watch.cc		the watch: cookie accounting
 *	iouring_uprobe.cc	io_uring workers and uprobes
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include <atomic>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/perf_event.h"

namespace stress {

/* ---- the run (main.cc) ---- */

extern std::atomic<bool> g_stop;
extern int g_ncpu;
/* The pid of the lifecycle child running now (0: none): fuzzed per-task
 * events target it too, so they see it exec, migrate and die. */
extern std::atomic<pid_t> g_child;
/* --percpu-groups: the fuzzer may put per-CPU events in groups */
extern bool g_percpu_groups;
/* --trace-cookies: join the kernel's "UDBG ... c=<cookie>" trace lines */
extern bool g_trace_cookies;

/*
 * The -m32 helpers (compat tasks) exist on x86-64 only: elsewhere the
 * exec chain stays native and the hostile stacks 64-bit. stress-start says
 * which (compat=), so that ci/judge/stress.py requires the right kind.
 */
#ifdef __x86_64__
constexpr bool kCompat = true;
#else
constexpr bool kCompat = false;
#endif
const char *const kExecKind = kCompat ? "exec-64-32-64" : "exec-64-64-64";

/* Who a TID is, for the unmatched cookies (see main.cc). */
void name_tid(pid_t tid, const std::string &who);
std::string who_is(pid_t tid);
/* Count n operations of kind, ok or failed. */
void count(const std::string &kind, bool ok, uint64_t n = 1);

/* The main thread alone decides when the run ends (g_stop): a worker
 * never sees an end that the main thread then moves on. */
inline bool running() { return !g_stop.load(); }


/* ---- the threads ---- */

/* fuzz.cc; the tracepoints it may open, set before it starts */
void fuzz_thread(unsigned seed);
extern long tp_ids[3];
/* deep_syscalls.cc */
void work_thread(unsigned seed);
/* lifecycle.cc; run_exec() runs argv in a child and returns its status */
void life_thread(unsigned seed);
int run_exec(const std::vector<std::string> &argv);
/* iouring_uprobe.cc */
void iouring_uprobe_thread(unsigned seed);
void uprobe_caller_thread(unsigned seed);

/* ---- the watch: cookie accounting (cookie_watch.cc) ---- */

/*
 * Data pages of each watch buffer (4 in a guest with -smp 4: 32 MiB).
 * 128 (512 KiB) lost records: the drain fell seconds behind about 550
 * records a second per CPU (doc/stress.md, "Sized buffers" and "Final").
 * 2048 pages hold about a minute.
 */
constexpr size_t kWatchPages = 2048;

struct Accounting {
	uint64_t samples = 0, announced = 0, delivered = 0, matched = 0,
		 fallback = 0, no_user = 0, bad_marker = 0,
		 kernel_ips = 0, lost = 0, parse_errors = 0;
	/* kernel_ips split by where the user chain was: a sample's own
	 * (unwound in place, at the sample) or a deferred record's */
	uint64_t kernel_ips_in_place = 0, kernel_ips_deferred = 0;
	/* The first user chains holding a kernel address, one line each */
	std::vector<std::string> kernel_ip_lines;
	struct State {
		bool announced = false, delivered = false;
		/* Samples announcing it, and its records */
		uint32_t samples = 0, records = 0;
		/* The first announcing sample: perf time, CPU, buffer */
		double t = 0;
		uint32_t cpu = 0, buf = 0;
	};
	double last_time = 0; /* of the latest sample */
	/*
	 * (cookie, tid) -> seen, kept once both sides were seen: one kernel
	 * entry may have several samples, in several CPUs' buffers, and one
	 * drained after its record (the task moved to a buffer drained
	 * earlier in the same pass) must find the entry matched, not open a
	 * new one that no record will ever close.
	 */
	std::map<std::pair<uint64_t, uint32_t>, State> open;

	void announce(uint64_t cookie, uint32_t tid, double t = 0,
		      uint32_t cpu = 0, uint32_t buf = 0)
	{
		auto &s = open[{ cookie, tid }];
		s.samples++;
		if (s.announced)
			return;
		s.announced = true;
		s.t = t;
		s.cpu = cpu;
		s.buf = buf;
		announced++;
		if (s.delivered)
			matched++;
	}
	void deliver(uint64_t cookie, uint32_t tid)
	{
		auto key = std::make_pair(cookie, tid);
		auto &s = open[key];
		s.records++;
		if (s.delivered)
			return;
		s.delivered = true;
		delivered++;
		if (s.announced)
			matched++;
	}
	uint64_t unmatched() const
	{
		uint64_t n = 0;
		for (auto &kv : open)
			n += kv.second.announced && !kv.second.delivered;
		return n;
	}
	/*
	 * Records of an entry beyond what the kernel may write: the
	 * callbacks run again for a sample taken after they ran, at most
	 * UNWIND_DEFERRED_MAX_AGAIN (8) times per entry. The samples that
	 * ask may be other events' (the fuzzers'), which the watch does not
	 * see, so the bound is the kernel's, not the watch's samples.
	 */
	static constexpr uint32_t kMaxRecords = 1 + 8;
	uint64_t duplicates() const
	{
		uint64_t n = 0;
		for (auto &kv : open) {
			uint32_t may = kMaxRecords;
			n += kv.second.records > may ?
				     kv.second.records - may : 0;
		}
		return n;
	}
	uint64_t orphans() const
	{
		uint64_t n = 0;
		for (auto &kv : open)
			n += kv.second.delivered && !kv.second.announced;
		return n;
	}
};

/* The watch's event: cpu-clock, inherited, defer_callchain and
 * defer_output. */
perf_event_attr watch_attr();
/*
 * Open and enable the watch, one event per CPU, from the calling thread
 * (the main one, before any other exists); "" or the reason it failed.
 */
std::string open_watch(std::vector<perf::Event> *watch);
/* Drain ev (buffer number buf) into acc. */
void account(Accounting *acc, perf::Event &ev, uint32_t buf);
/* The stress-unmatched lines of acc's unmatched cookies. */
void report_unmatched(const Accounting &acc);

inline const std::string kTr = "/sys/kernel/tracing/";

} // namespace stress
