// SPDX-License-Identifier: GPL-2.0
/*
 * make stress: the watch's cookie accounting. A cpu-clock event per CPU
 * with defer_callchain and defer_output, inherited by every thread and
 * child of the program; every sample's cookie must get its record, and
 * no user chain may hold a kernel address (main.cc).
 */
#include <stdio.h>
#include <stdlib.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/workload.h"

#include "stress.h"

namespace stress {

perf_event_attr watch_attr()
{
	perf_event_attr a{};
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000; /* 1 ms */
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
			PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			PERF_SAMPLE_CALLCHAIN;
	a.sample_id_all = 1;
	a.disabled = 1;
	a.inherit = 1;
	perf_abi::set_attr_bit(&a, perf_abi::kDeferCallchainBit);
	perf_abi::set_attr_bit(&a, perf_abi::kDeferOutputBit);
	return a;
}

/*
 * The watch: one inherited event per CPU on this process (perf record's
 * layout: an inherited per-task event cannot be mmapped with cpu -1),
 * opened before any thread or child exists, so it follows every one of
 * them and their execs. Per-task, not per-CPU context: CPU hotplug
 * removes a per-CPU context's events for good, and the cookies of tasks
 * returning there would look lost.
 *
 * The calling thread stays on CPU 0 while it opens and enables them. It
 * is sampled as soon as the first is on, and a record goes to the event
 * of the CPU its entry returns on, if that one is enabled: an entry
 * sampled on CPU 0 that returned on a CPU whose event was still off
 * would announce a cookie no record ever answers (a CI run had one, the
 * 20th cookie of CPU 0 since boot: c=140001, who=main). The end of the
 * run pins to CPU 0 for the same reason (main.cc).
 */
std::string open_watch(std::vector<perf::Event> *watch)
{
	work::AffinityGuard unpin;
	if (int err = work::pin(0, 0))
		return "watch-pin-errno" + std::to_string(-err);
	watch->resize(g_ncpu);
	for (int c = 0; c < g_ncpu; c++) {
		int e = (*watch)[c].open(watch_attr(), 0, c, kWatchPages);
		if (e < 0)
			return "watch-open-cpu" + std::to_string(c) + "-errno" +
			       std::to_string(-e);
		(*watch)[c].enable();
	}
	return "";
}

namespace {

/*
 * A user chain (of a sample, in place, or of a deferred record) holding
 * kernel addresses: count them, and describe the chain (up to 20 lines)
 * as one stress-kernel-ip line: where the chain was, the task (TID, who
 * it is: a lifecycle child's kind and helper mode), the first kernel
 * address's index in the chain, the chain, and for a sample the mode it
 * interrupted (misc: user or kernel) and its kernel part's length.
 */
void check_user_chain(Accounting *acc, const std::vector<uint64_t> &ips,
		      bool deferred, uint32_t tid, uint32_t cpu, uint64_t cookie,
		      uint16_t misc, size_t kernel_nr)
{
	size_t first = ips.size(), n = 0;
	for (size_t i = 0; i < ips.size(); i++)
		if (perf_abi::is_kernel_address(ips[i])) {
			n++;
			first = std::min(first, i);
		}
	if (!n)
		return;
	acc->kernel_ips += n;
	(deferred ? acc->kernel_ips_deferred : acc->kernel_ips_in_place) += n;
	if (acc->kernel_ip_lines.size() >= 20)
		return;
	std::string who = who_is(tid), chain;
	for (char &ch : who)
		if (ch == ' ')
			ch = '_';
	for (size_t i = 0; i < ips.size() && i < 12; i++) {
		char b[24];
		snprintf(b, sizeof(b), "%s%llx", i ? "," : "",
			 (unsigned long long)ips[i]);
		chain += b;
	}
	if (ips.size() > 12)
		chain += ",...";
	uint16_t mode = misc & PERF_RECORD_MISC_CPUMODE_MASK;
	char line[512];
	snprintf(line, sizeof(line),
		 "stress-kernel-ip where=%s tid=%u who=%s cpu=%u cookie=%llx "
		 "at=%zu nr=%zu kernel_ips=%zu ip=%llx misc=%s kernel_nr=%zu "
		 "chain=%s",
		 deferred ? "deferred" : "in-place", tid, who.c_str(), cpu,
		 (unsigned long long)cookie, first, ips.size(), n,
		 (unsigned long long)ips[first],
		 deferred			     ? "-" :
		 mode == PERF_RECORD_MISC_USER	     ? "user" :
		 mode == PERF_RECORD_MISC_KERNEL     ? "kernel" :
						       "other",
		 kernel_nr, chain.c_str());
	acc->kernel_ip_lines.push_back(line);
}

} // namespace

void account(Accounting *acc, perf::Event &ev, uint32_t buf)
{
	const perf_event_attr &attr = ev.attr();
	for (const perf::Record &r : ev.drain()) {
		if (r.header.type == PERF_RECORD_SAMPLE) {
			perf::Sample s;
			std::string err;
			if (!perf::parse_sample(r, attr.sample_type, &s, &err)) {
				acc->parse_errors++;
				continue;
			}
			acc->samples++;
			perf::SplitChain c = perf::split_callchain(s.callchain);
			check_user_chain(acc, c.user, false, s.sid.tid,
					 s.sid.cpu, 0, r.header.misc,
					 c.kernel.size());
			if (c.deferred && c.has_user_ctx)
				acc->bad_marker++;
			acc->last_time = std::max(acc->last_time,
						  s.sid.time / 1e9);
			if (c.deferred)
				acc->announce(c.cookie, s.sid.tid,
					      s.sid.time / 1e9, s.sid.cpu, buf);
			else if (!c.user.empty())
				acc->fallback++;
			else
				acc->no_user++;
		} else if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			perf::DeferredCallchain d;
			std::string err;
			if (!perf::parse_deferred(r, attr.sample_type,
						  attr.sample_id_all, &d, &err)) {
				acc->parse_errors++;
				continue;
			}
			check_user_chain(acc, d.ips, true, d.sid.tid,
					 d.sid.cpu, d.cookie, r.header.misc, 0);
			acc->deliver(d.cookie, d.sid.tid);
		}
	}
}

/*
 * The unmatched cookies (up to 50), one stress-unmatched line each: who
 * the TID is, the sample's time (perf clock, and before the last sample),
 * CPU and buffer, and the TIDs of records read with the same cookie.
 * With --trace-cookies, the kernel's trace lines "UDBG ... c=<cookie>"
 * (a kernel instrumented with trace_printk(), not the series) follow.
 */
void report_unmatched(const Accounting &acc)
{
	std::map<uint64_t, std::vector<std::string>> lines;
	std::set<uint64_t> want;
	for (auto &kv : acc.open)
		if (kv.second.announced && !kv.second.delivered &&
		    want.size() < 50)
			want.insert(kv.first.first);
	if (g_trace_cookies) {
		work::write_file(kTr + "tracing_on", "0");
		std::ifstream in(kTr + "trace");
		std::string line;
		while (std::getline(in, line)) {
			size_t u = line.find("UDBG "), c;
			if (u == std::string::npos ||
			    (c = line.find(" c=", u)) == std::string::npos)
				continue;
			uint64_t ck = strtoull(line.c_str() + c + 3, nullptr, 16);
			if (want.count(ck) && lines[ck].size() < 40)
				lines[ck].push_back(line);
		}
	}
	for (auto &kv : acc.open) {
		if (!kv.second.announced || kv.second.delivered ||
		    !want.count(kv.first.first))
			continue;
		uint64_t ck = kv.first.first;
		std::string others;
		for (auto it = acc.open.lower_bound({ ck, 0 });
		     it != acc.open.end() && it->first.first == ck; ++it)
			if (it->second.delivered)
				others += (others.empty() ? "" : ",") +
					  std::to_string(it->first.second);
		printf("stress-unmatched c=%llx tid=%u who=%s t=%.6f "
		       "before_end=%.3f cpu=%u buf=%u records_tids=%s\n",
		       (unsigned long long)ck, kv.first.second,
		       who_is(kv.first.second).c_str(), kv.second.t,
		       acc.last_time - kv.second.t, kv.second.cpu,
		       kv.second.buf, others.empty() ? "-" : others.c_str());
		for (auto &l : lines[ck])
			printf("stress-udbg-line %s\n", l.c_str());
	}
}

} // namespace stress
