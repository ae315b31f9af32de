/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pair the cookies that samples announce (PERF_CONTEXT_USER_DEFERRED,
 * cookie) with the PERF_RECORD_CALLCHAIN_DEFERRED records that carry them,
 * across every buffer of a recording (one per CPU, or one per event).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "perf_event.h"

namespace perf {

struct Announce {
	uint64_t cookie = 0, time = 0;
	uint32_t tid = 0, cpu = 0;
	size_t buffer = 0;
};

struct Delivery {
	uint64_t cookie = 0, time = 0;
	uint32_t tid = 0, cpu = 0;
	size_t buffer = 0, nr = 0;
	bool kernel_ip = false; /* an ip at or above the user address limit */
};

struct MatchResult {
	size_t samples = 0, announcing_samples = 0, records = 0;
	/* Distinct (cookie, tid) pairs announced, and those with a record. */
	size_t announced = 0, matched = 0;
	std::vector<Announce> unmatched;  /* announced, no record anywhere */
	std::vector<Delivery> orphans;    /* record with no earlier announce */
	std::vector<Delivery> duplicates; /* a 2nd record in the same buffer */
	std::vector<Delivery> with_kernel_ip;
	uint64_t lost = 0;
	/* Every record per (cookie, tid). */
	std::map<std::pair<uint64_t, uint32_t>, std::vector<Delivery>> by_key;

	bool clean() const
	{
		return unmatched.empty() && orphans.empty() &&
		       duplicates.empty() && with_kernel_ip.empty() && !lost;
	}
	std::string describe() const;
};

class CookieMatcher {
public:
	/* Records of one buffer; sample_type/sample_id_all of its event. */
	bool add_buffer(size_t buffer, const std::vector<Record> &records,
			uint64_t sample_type, bool sample_id_all,
			std::string *err);
	/* The same for an event whose buffer was drained into records. */
	void add_lost(uint64_t n) { lost_ += n; }
	MatchResult match() const;

private:
	std::vector<Announce> announces_;
	std::vector<Delivery> deliveries_;
	size_t samples_ = 0;
	uint64_t lost_ = 0;
};

/* The lowest kernel address on x86-64: nothing at or above is user. */
constexpr uint64_t kUserLimit = 0x00007ffffffff000ULL;

} // namespace perf
