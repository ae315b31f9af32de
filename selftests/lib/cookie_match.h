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

#include "perf_abi.h"
#include "perf_event.h"

namespace perf {

struct Announce {
	uint64_t cookie = 0, time = 0;
	uint32_t tid = 0, cpu = 0;
	size_t buffer = 0;
	bool in_kernel = false; /* the sample has a kernel part */
};

struct Delivery {
	uint64_t cookie = 0, time = 0;
	uint32_t tid = 0, cpu = 0;
	size_t buffer = 0, nr = 0;
	bool kernel_ip = false; /* an ip in the kernel half */
	size_t noncanonical = 0; /* ips between the two halves (perf_abi.h) */
	std::vector<uint64_t> ips;
	size_t index = 0; /* position in its buffer */
};

/*
 * A sample of a task whose kernel entry already had its deferred record
 * written, or being written (in the exit to user space loop, while or
 * after the task_work ran), is unwound in place: a reader looking for
 * the record after the sample might not find it. Such a sample must hold
 * the stack of that record.
 */
struct Fallback {
	uint64_t time = 0;
	uint32_t tid = 0;
	size_t buffer = 0, index = 0;
	std::vector<uint64_t> user; /* the user part unwound in place */
};

/*
 * On arm64, where the interrupted function has no frame record in place (a
 * leaf, a prologue, an epilogue), the deferred walk takes its caller from
 * the link register and perf's in-place walk does not (doc/arm64.md): the
 * record then has that one entry more, second, after the same leaf.
 * Returns deferred without it when it may hold one (arm64 and the same
 * leaf as in_place), else an empty chain. arm64 is a parameter so that the
 * host's unit tests run the rule too.
 */
#ifdef __aarch64__
constexpr bool kLinkRegisterCaller = true;
#else
constexpr bool kLinkRegisterCaller = false;
#endif
std::vector<uint64_t>
without_link_register_caller(const std::vector<uint64_t> &deferred,
			     const std::vector<uint64_t> &in_place,
			     bool arm64 = kLinkRegisterCaller);

/* A sample whose cookie is not the one of the next record (check_next). */
struct OrderMismatch {
	Announce sample;
	uint64_t next_cookie = 0; /* 0: no record of that tid after it */
};

struct OrderResult {
	size_t checked = 0;  /* samples with a later record of their tid */
	size_t trailing = 0; /* samples after the last record of their tid */
	size_t late = 0; /* samples after their entry's record: none due */
	/*
	 * Samples after a record of their entry and before another one
	 * (the series runs the callbacks again: doc/kernel.md, differences
	 * from upstream), counted in checked as well.
	 */
	size_t again = 0;
	std::vector<OrderMismatch> mismatches;
	std::string describe() const;
};

struct MatchResult {
	size_t samples = 0, announcing_samples = 0, records = 0;
	/* Distinct (cookie, tid) pairs announced, and those with a record. */
	size_t announced = 0, matched = 0;
	std::vector<Announce> unmatched;  /* announced, no record anywhere */
	std::vector<Delivery> orphans;    /* record with no earlier announce */
	/*
	 * A record of an entry that came again in the same buffer with no
	 * sample of the entry since its previous one (answers_again()).
	 */
	std::vector<Delivery> duplicates;
	std::vector<Delivery> with_kernel_ip;
	uint64_t lost = 0;
	/* Samples without the deferred marker: with a user part unwound in
	 * place (the fallback), or with no user part at all. */
	size_t fallback_samples = 0, no_user_samples = 0;
	/* Samples whose chain breaks the ABI: the marker not second to last,
	 * or a PERF_CONTEXT_USER part next to the marker. */
	size_t bad_marker_samples = 0;
	/*
	 * Fallback samples next to a record of their tid (the latest one
	 * before them or the first one after them: by time, or in the same
	 * buffer without times) holding the same user stack (the shorter
	 * chain a prefix of the longer), and those that are not: a deferred
	 * request refused for no reason, or a stack that differs.
	 */
	size_t explained_fallbacks = 0;
	std::vector<Fallback> unexplained_fallbacks;
	/* Every record per (cookie, tid). */
	std::map<std::pair<uint64_t, uint32_t>, std::vector<Delivery>> by_key;

	bool clean() const
	{
		return unmatched.empty() && orphans.empty() &&
		       duplicates.empty() && with_kernel_ip.empty() && !lost &&
		       !bad_marker_samples;
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
	/*
	 * Within one kernel entry every sample announces the cookie that the
	 * entry's record carries, and a record of the entry is written after
	 * each sample (again, if the sample came after the entry's first
	 * record): so each sample's cookie must be the cookie of the first
	 * record of the same tid in buffer record_buffer whose time is at or
	 * after the sample's. A sample with the cookie of the last record
	 * before it and none after it is counted as late: users require
	 * none. Needs PERF_SAMPLE_TIME on every event, on one clock.
	 */
	OrderResult check_next(size_t record_buffer) const;
	const std::vector<Announce> &announces() const { return announces_; }
	const std::vector<Delivery> &deliveries() const { return deliveries_; }

private:
	std::vector<Announce> announces_;
	std::vector<Delivery> deliveries_;
	std::vector<Fallback> fallbacks_;
	size_t samples_ = 0, fallback_ = 0, no_user_ = 0, bad_marker_ = 0;
	uint64_t lost_ = 0;
};

} // namespace perf
