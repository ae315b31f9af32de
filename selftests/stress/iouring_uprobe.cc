// SPDX-License-Identifier: GPL-2.0
/*
 * make stress: io_uring workers and uprobes, while deferred callchains
 * are on. io_uring reads and nops through io-wq workers and an SQPOLL
 * thread, each worker sampled with defer_callchain (refused); uprobes and
 * uretprobes on stress_probed(), come and go while two threads call it.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lib/io_uring_raw.h"
#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/workload.h"

#include "stress.h"

namespace stress {

namespace {

/*
 * The threads of this process whose comm starts with one of prefixes
 * (io_uring's PF_USER_WORKER threads: iou-wrk-<pid>, iou-sqp-<pid>).
 */
std::vector<pid_t> tids_named(std::initializer_list<const char *> prefixes)
{
	std::vector<pid_t> out;
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return out;
	while (struct dirent *e = readdir(d)) {
		if (e->d_name[0] == '.')
			continue;
		std::string comm = work::read_file(std::string("/proc/self/task/") +
						   e->d_name + "/comm");
		for (const char *p : prefixes)
			if (!comm.compare(0, strlen(p), p)) {
				out.push_back(atoi(e->d_name));
				break;
			}
	}
	closedir(d);
	return out;
}

/* A cpu-clock sampler with defer_callchain on one thread. */
perf_event_attr deferred_sampler_attr(uint64_t period_ns)
{
	perf_event_attr a = watch_attr();
	a.sample_period = period_ns;
	a.inherit = 0;
	return a;
}

/*
 * Samples of a PF_USER_WORKER thread: its request must be refused, so
 * no sample may announce a deferred cookie, and it has no user stack of
 * its own to walk in place either. ok: such a sample, failed: a sample
 * that announced a cookie or carried user frames.
 */
void judge_worker_samples(perf::Event &ev)
{
	for (const perf::Record &r : ev.drain()) {
		if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			count("io_uring-worker-sample", false);
			continue;
		}
		if (r.header.type != PERF_RECORD_SAMPLE)
			continue;
		perf::Sample s;
		std::string err;
		if (!perf::parse_sample(r, ev.attr().sample_type, &s, &err)) {
			count("io_uring-worker-sample", false);
			continue;
		}
		perf::SplitChain c = perf::split_callchain(s.callchain);
		count("io_uring-worker-sample", !c.deferred && c.user.empty());
	}
}

/*
 * One io_uring round trip: reads of /dev/zero and nops, all with
 * IOSQE_ASYNC, so io-wq workers carry them out; with SQPOLL the
 * submission thread picks them up. While the rings run, every worker
 * thread found gets a cpu-clock event with defer_callchain.
 */
void iouring_step(std::mt19937_64 &rng, bool sqpoll, int zero)
{
	const char *kind = sqpoll ? "io_uring-sqpoll" : "io_uring-async";
	uring::Ring ring;
	if (ring.setup(16, sqpoll ? IORING_SETUP_SQPOLL : 0)) {
		count(kind, false);
		return;
	}
	constexpr unsigned kReads = 8, kLen = 256 << 10;
	static thread_local std::vector<char> buf(kReads * kLen);
	std::vector<perf::Event> sampled;
	std::set<pid_t> seen;
	bool ok = true;
	int rounds = 4 + rng() % 8;
	for (int round = 0; round < rounds && ok; round++) {
		unsigned n = 0, nops = 1 + rng() % 4;
		for (unsigned i = 0; i < kReads; i++)
			n += ring.queue_read(zero, &buf[i * kLen], kLen, true,
					     i + 1);
		for (unsigned i = 0; i < nops; i++)
			n += ring.queue_nop(true, 1000 + i);
		ok = ring.submit_and_wait(n) >= 0;
		io_uring_cqe cqe;
		unsigned done = 0;
		double end = work::now_s() + 10;
		while (ok && done < n && work::now_s() < end) {
			if (!ring.reap(&cqe)) {
				ok = ring.submit_and_wait(1) >= 0;
				continue;
			}
			done++;
			ok = cqe.res == (cqe.user_data >= 1000 ? 0 : (int)kLen);
		}
		ok = ok && done == n;
		/* The workers of the first rounds, sampled for the next */
		for (pid_t tid : tids_named({ "iou-wrk", "iou-sqp" })) {
			if (!seen.insert(tid).second)
				continue;
			perf::Event ev;
			int e = ev.open(deferred_sampler_attr(100000), tid, -1, 8);
			count("io_uring-worker-event", e == 0);
			if (e == 0) {
				ev.enable();
				sampled.push_back(std::move(ev));
			}
		}
	}
	count(kind, ok);
	for (auto &ev : sampled) {
		ev.disable();
		judge_worker_samples(ev);
	}
}

} // namespace

} // namespace stress

/*
 * The probed function of the uprobe storm, and its callers: outside the
 * anonymous namespace and not inlined, so that it has an address of its
 * own in the text that the uprobes patch.
 */
extern "C" __attribute__((noinline, noclone)) long stress_probed(long x)
{
	__asm__ volatile("" ::: "memory");
	return x + syscall(SYS_getppid);
}

extern "C" __attribute__((noinline)) long stress_probe_caller(int depth,
							      long x)
{
	long r = depth > 0 ? stress_probe_caller(depth - 1, x) :
			     stress_probed(x);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

namespace stress {

namespace {

/* The offset in its file of the code at addr, from /proc/self/maps. */
bool file_offset_of(uint64_t addr, std::string *path, uint64_t *offset)
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	while (std::getline(maps, line)) {
		unsigned long long lo, hi, off;
		char perms[8], file[4096] = "";
		if (sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %4095s",
			   &lo, &hi, perms, &off, file) < 4)
			continue;
		if (addr < lo || addr >= hi || file[0] != '/')
			continue;
		*path = file;
		*offset = addr - lo + off;
		return true;
	}
	return false;
}

std::mutex g_probe_callers_mu;
std::vector<pid_t> g_probe_callers;

} // namespace

/* Threads calling stress_probed() under 1-40 frames, while uprobes come and go. */
void uprobe_caller_thread(unsigned seed)
{
	std::mt19937_64 rng(seed);
	name_tid(gettid(), "uprobe-caller");
	{
		std::lock_guard<std::mutex> l(g_probe_callers_mu);
		g_probe_callers.push_back(gettid());
	}
	while (running()) {
		long n = 0;
		for (int i = 0; i < 50; i++)
			n += stress_probe_caller(rng() % 40, i) > 0;
		count("uprobe-calls", n == 50, 50);
		usleep(200);
	}
}

namespace {

/*
 * One uprobe or uretprobe, through the uprobe PMU, on stress_probed():
 * sampled with defer_callchain and defer_output on each caller thread
 * (and on one CPU), enabled for a few ms while the callers hit it, then
 * closed. ok: the probe was created and fired. The chains of its samples
 * and records are checked like the watch's: a kernel address in one, or
 * a malformed marker, counts as a failed uprobe-chain.
 */
void uprobe_step(std::mt19937_64 &rng, bool ret)
{
	const char *kind = ret ? "uretprobe" : "uprobe";
	std::string path;
	uint64_t offset = 0;
	perf_event_attr a = deferred_sampler_attr(1);
	if (!file_offset_of((uint64_t)(uintptr_t)stress_probed, &path,
			    &offset) ||
	    !perf::uprobe_attr(path.c_str(), offset, ret, &a)) {
		count(kind, false);
		return;
	}

	std::vector<pid_t> tids;
	{
		std::lock_guard<std::mutex> l(g_probe_callers_mu);
		tids = g_probe_callers;
	}
	std::vector<perf::Event> evs;
	for (size_t i = 0; i <= tids.size(); i++) {
		perf::Event ev;
		bool percpu = i == tids.size();
		int e = ev.open(a, percpu ? -1 : tids[i],
				percpu ? (int)(rng() % g_ncpu) : -1, 8);
		if (e == 0) {
			ev.enable();
			evs.push_back(std::move(ev));
		}
	}
	usleep(2000 + rng() % 15000);
	Accounting acc;
	for (size_t i = 0; i < evs.size(); i++) {
		/* Some are closed still enabled, records possibly pending */
		if (rng() % 2)
			evs[i].disable();
		account(&acc, evs[i], i);
	}
	count(kind, !evs.empty() && acc.samples > 0);
	count("uprobe-chain", true, acc.samples + acc.delivered);
	count("uprobe-chain", false, acc.kernel_ips + acc.bad_marker +
					     acc.parse_errors);
	count("uprobe-deferred-matched", true, acc.matched);
}

} // namespace

/* io_uring and uprobe steps, in turn (the life thread's other half). */
void iouring_uprobe_thread(unsigned seed)
{
	std::mt19937_64 rng(seed);
	name_tid(gettid(), "iouring-uprobe");
	int zero = open("/dev/zero", O_RDONLY);
	unsigned step = 0;
	while (running()) {
		switch (step++ % 4) {
		case 0:
			iouring_step(rng, false, zero);
			break;
		case 1:
			uprobe_step(rng, false);
			break;
		case 2:
			iouring_step(rng, true, zero);
			break;
		case 3:
			uprobe_step(rng, true);
			break;
		}
		usleep(1000);
	}
	close(zero);
}

} // namespace stress
