// SPDX-License-Identifier: GPL-2.0
#include "session.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sstream>

#include <gtest/gtest.h>

#include "perf_abi.h"

namespace session {

perf_event_attr make_attr(const Options &o)
{
	perf_event_attr a{};
	a.size = sizeof(a);
	a.type = o.type;
	a.config = o.config;
	a.sample_period = o.period;
	/*
	 * A clock period is reference-guest time (selftests/host_speed.c).
	 * On a guest measured slower, each sample costs more of the guest's
	 * time, so a fixed period gives the sampling a larger share of the
	 * sampled task: on one host thread (TCG_THREAD=single, factor 1.95)
	 * the rt-debug kernel spent 33 s of exit_exec_test's 64-bit child
	 * on 164722 samples at 200 us, or did not finish it in 117 s; at
	 * 410 us, 10703 samples. The factor leaves the kernel's own costs
	 * out, so this brings the share back towards the reference's, not
	 * exactly to it. Every other event keeps its period: counts
	 * (tracepoints, page faults), and cycles, which count the CPU's
	 * work under KVM.
	 */
	if (o.type == PERF_TYPE_SOFTWARE &&
	    (o.config == PERF_COUNT_SW_CPU_CLOCK ||
	     o.config == PERF_COUNT_SW_TASK_CLOCK))
		a.sample_period = (uint64_t)llround(o.period *
						    work::slowdown());
	a.sample_type = o.sample_type;
	a.sample_id_all = o.sample_id_all;
	a.disabled = o.disabled;
	a.enable_on_exec = o.enable_on_exec;
	a.mmap = a.comm = a.task = o.track;
	a.exclude_kernel = o.exclude_kernel;
	/* Unprivileged callers need both (EACCES otherwise since 6.x). */
	a.exclude_callchain_kernel = o.exclude_kernel;
	a.exclude_idle = o.exclude_idle;
	if (o.monotonic) {
		a.use_clockid = 1;
		a.clockid = CLOCK_MONOTONIC;
	}
	if (o.defer_callchain)
		perf_abi::set_attr_bit(&a, perf_abi::kDeferCallchainBit);
	if (o.defer_output)
		perf_abi::set_attr_bit(&a, perf_abi::kDeferOutputBit);
	return a;
}

perf_event_attr make_probe_attr(const Options &o)
{
	perf_event_attr a = make_attr(o);

	a.sample_period = o.period;
	return a;
}

Options sideband(bool bare)
{
	Options o;
	o.config = PERF_COUNT_SW_DUMMY;
	o.period = 1;
	o.sample_type &= ~(uint64_t)PERF_SAMPLE_CALLCHAIN;
	o.defer_callchain = false;
	o.defer_output = true;
	o.track = !bare;
	return o;
}

Options tracepoint(long id, size_t pages)
{
	Options o;
	o.type = PERF_TYPE_TRACEPOINT;
	o.config = (uint64_t)id;
	o.period = 1;
	o.pages = pages;
	return o;
}

int Session::open(const Options &o, pid_t pid, int cpu)
{
	return open_attr(make_attr(o), pid, cpu, o.pages);
}

int Session::open_attr(const perf_event_attr &attr, pid_t pid, int cpu,
		       size_t pages)
{
	perf::Event e;
	int r = e.open(attr, pid, cpu, pages);
	if (r)
		return r;
	events_.push_back(std::move(e));
	cpus_.push_back(cpu);
	records_.emplace_back();
	return 0;
}

int Session::open_in_group(Options o, pid_t pid, size_t leader)
{
	return open_attr_in_group(make_attr(o), pid, leader, o.pages);
}

int Session::open_attr_in_group(perf_event_attr attr, pid_t pid,
				size_t leader, size_t pages)
{
	attr.disabled = 0;
	perf::Event e;
	int r = e.open(attr, pid, cpus_[leader], pages, events_[leader].fd());
	if (r)
		return r;
	events_.push_back(std::move(e));
	cpus_.push_back(cpus_[leader]);
	records_.emplace_back();
	return 0;
}

int Session::open_per_cpu(const Options &o)
{
	return open_on_cpus(o, online_cpus());
}

int Session::open_on_cpus(const Options &o, const std::vector<int> &cpus)
{
	for (int c : cpus) {
		int r = open(o, -1, c);
		if (r)
			return r;
	}
	return 0;
}

/*
 * A receiver: wants the deferred records and asks for none of its own. A
 * sampler hit on the way out of its own enable ioctl (or of any entry
 * before the receivers are on) has its record written on that way out,
 * so receivers go on first and off last.
 */
static bool receiver(const perf::Event &e)
{
	return perf_abi::attr_bit(&e.attr(), perf_abi::kDeferOutputBit) &&
	       !perf_abi::attr_bit(&e.attr(), perf_abi::kDeferCallchainBit);
}

void Session::enable()
{
	for (int pass = 0; pass < 2; pass++)
		for (auto &e : events_)
			if (receiver(e) == (pass == 0))
				e.enable();
}

void Session::disable()
{
	for (int pass = 0; pass < 2; pass++)
		for (auto &e : events_)
			if (receiver(e) == (pass == 1))
				e.disable();
}

void Session::drain()
{
	for (size_t i = 0; i < events_.size(); i++)
		for (auto &r : events_[i].drain())
			records_[i].push_back(std::move(r));
}

bool Session::drain_if_fuller(double fraction)
{
	for (const perf::Event &e : events_)
		if (e.pending() > e.capacity() * fraction) {
			drain();
			return true;
		}
	return false;
}

bool Session::sampled(const std::function<bool(const perf::Sample &)> &pred)
{
	std::string err;
	drain();
	for (size_t b = 0; b < size(); b++)
		for (const perf::Sample &s : samples(b, &err))
			if (pred(s))
				return true;
	return false;
}

void Session::drain_while(const std::function<bool()> &running, int every_ms)
{
	/* Linux: nice is per thread, and who 0 is the calling thread. */
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, 0);
	bool raised = errno == 0 && !setpriority(PRIO_PROCESS, 0, -10);
	while (running()) {
		drain();
		timespec ts{ every_ms / 1000, (every_ms % 1000) * 1000000L };
		nanosleep(&ts, nullptr);
	}
	drain();
	if (raised)
		setpriority(PRIO_PROCESS, 0, nice);
}

bool Session::match(perf::CookieMatcher *m, std::string *err) const
{
	for (size_t i = 0; i < events_.size(); i++)
		if (!m->add_buffer(i, records_[i],
				   events_[i].attr().sample_type,
				   events_[i].attr().sample_id_all, err))
			return false;
	/* add_buffer counted PERF_RECORD_LOST; add what none reported. */
	for (const auto &e : events_)
		m->add_lost(e.unreported_lost());
	return true;
}

bool Session::stop(perf::CookieMatcher *m, std::string *err)
{
	disable();
	drain();
	return match(m, err);
}

int record_program(Session *s, work::Child *child,
		   const std::vector<std::string> &argv, Options o,
		   int kill_after_ms,
		   const std::function<int(pid_t)> &before_exec)
{
	int r = child->spawn(argv);
	if (r)
		return r;
	o.enable_on_exec = true;
	r = s->open(o, child->pid(), -1);
	if (!r && before_exec)
		r = before_exec(child->pid());
	if (r)
		return r; /* ~Child() kills and reaps it */
	child->release();
	if (kill_after_ms > 0) {
		usleep(kill_after_ms * 1000);
		kill(child->pid(), SIGKILL);
	}
	/*
	 * Drain as it runs: a debug kernel is slow enough to fill a buffer.
	 * 60 s on the reference guest: arm64's debug kernel takes minutes
	 * of a slow host to fault in and tear down exit_exec_test's 64 MiB
	 * (doc/harness.md, "Slow hosts").
	 */
	int st = child->wait(60, [s] { s->drain(); });
	s->drain();
	return st < 0 ? -ECHILD : st;
}

bool exec_failed(int status)
{
	/* The child side of work::Child exits 127 when execv() fails. */
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 127;
}

int record_until(const std::function<bool(bool last)> &record)
{
	int n = 0;
	bool enough = false;
	while (!enough && n < kRecordings) {
		n++;
		enough = record(n == kRecordings);
		if (::testing::Test::HasFatalFailure() ||
		    ::testing::Test::IsSkipped())
			break;
	}
	printf("# %d recording(s)\n", n);
	return n;
}

uint64_t Session::id(size_t i) const
{
	uint64_t id = 0;
	ioctl(events_[i].fd(), PERF_EVENT_IOC_ID, &id);
	return id;
}

uint64_t Session::lost() const
{
	uint64_t n = 0;
	for (auto &e : events_)
		n += e.lost();
	return n;
}

std::vector<perf::Sample> Session::samples(size_t i, std::string *err) const
{
	std::vector<perf::Sample> out;
	for (const perf::Record &r : records_[i]) {
		if (r.header.type != PERF_RECORD_SAMPLE)
			continue;
		perf::Sample s;
		if (!perf::parse_sample(r, events_[i].attr().sample_type, &s,
					err))
			return {};
		out.push_back(std::move(s));
	}
	return out;
}

std::set<uint64_t> Session::announced(size_t i, std::string *err) const
{
	std::set<uint64_t> out;
	for (const perf::Sample &sm : samples(i, err)) {
		perf::SplitChain c = perf::split_callchain(sm.callchain);
		if (c.deferred)
			out.insert(c.cookie);
	}
	return out;
}

std::vector<perf::DeferredCallchain> Session::deferred(size_t i,
						       std::string *err) const
{
	std::vector<perf::DeferredCallchain> out;
	for (const perf::Record &r : records_[i]) {
		if (r.header.type != perf_abi::kRecordCallchainDeferred)
			continue;
		perf::DeferredCallchain d;
		if (!perf::parse_deferred(r, events_[i].attr().sample_type,
					  events_[i].attr().sample_id_all, &d,
					  err))
			return {};
		out.push_back(std::move(d));
	}
	return out;
}

std::vector<Session::CommExec> Session::comm_execs(size_t i,
						  std::string *err) const
{
	std::vector<CommExec> out;
	for (const perf::Record &r : records_[i]) {
		if (r.header.type != PERF_RECORD_COMM ||
		    !(r.header.misc & PERF_RECORD_MISC_COMM_EXEC) ||
		    r.bytes.size() < 16)
			continue;
		/* header, pid, tid, then the comm padded to 8 bytes */
		const char *comm = (const char *)r.bytes.data() + 16;
		size_t clen = strnlen(comm, r.bytes.size() - 16);
		size_t body_end = 16 + ((clen + 1 + 7) & ~(size_t)7);
		perf::SampleId sid;
		if (!perf::parse_sample_id(r, body_end,
					   events_[i].attr().sample_type, &sid,
					   err))
			return {};
		out.push_back({ sid.time, std::string(comm, clen) });
	}
	return out;
}

std::vector<int> online_cpus()
{
	/* /sys/devices/system/cpu/online: "0-3", "0,2-3". */
	std::vector<int> v;
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	if (f) {
		int a, b;
		char sep;
		while (fscanf(f, "%d", &a) == 1) {
			b = a;
			int n = fscanf(f, "%c", &sep);
			if (n == 1 && sep == '-') {
				if (fscanf(f, "%d", &b) != 1)
					break;
				n = fscanf(f, "%c", &sep);
			}
			for (int c = a; c <= b; c++)
				v.push_back(c);
			if (n != 1 || sep != ',')
				break;
		}
		fclose(f);
	}
	if (v.empty())
		for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN); c++)
			v.push_back((int)c);
	return v;
}

std::string hex_chain(const std::vector<uint64_t> &ips, size_t max)
{
	std::ostringstream o;
	o << "[" << ips.size() << ":";
	for (size_t i = 0; i < ips.size() && i < max; i++)
		o << " 0x" << std::hex << ips[i] << std::dec;
	if (ips.size() > max)
		o << " ...";
	o << "]";
	return o.str();
}

} // namespace session
