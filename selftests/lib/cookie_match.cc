// SPDX-License-Identifier: GPL-2.0
#include "cookie_match.h"

#include <linux/perf_event.h>

#include <string.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "perf_abi.h"

namespace perf {

bool CookieMatcher::add_buffer(size_t buffer, const std::vector<Record> &recs,
			       uint64_t sample_type, bool sample_id_all,
			       std::string *err)
{
	size_t index = 0;
	for (const Record &r : recs) {
		index++;
		if (r.header.type == PERF_RECORD_SAMPLE) {
			Sample s;
			if (!parse_sample(r, sample_type, &s, err))
				return false;
			samples_++;
			SplitChain c = split_callchain(s.callchain);
			size_t n = s.callchain.size();
			if (c.deferred) {
				if (n < 2 || s.callchain[n - 2] !=
						     perf_abi::kContextUserDeferred ||
				    c.has_user_ctx)
					bad_marker_++;
				announces_.push_back({ c.cookie, s.sid.time,
						       s.sid.tid, s.sid.cpu,
						       buffer,
						       c.has_kernel_ctx });
			} else if (c.has_user_ctx && !c.user.empty()) {
				fallback_++;
				fallbacks_.push_back({ s.sid.time, s.sid.tid,
						       buffer, index, c.user });
			} else {
				no_user_++;
			}
		} else if (r.header.type == perf_abi::kRecordCallchainDeferred) {
			DeferredCallchain d;
			if (!parse_deferred(r, sample_type, sample_id_all, &d,
					    err))
				return false;
			Delivery v{ d.cookie, d.sid.time, d.sid.tid, d.sid.cpu,
				    buffer, d.ips.size(), false };
			v.ips = d.ips;
			v.index = index;
			for (size_t i = 0; i < d.ips.size(); i++) {
				uint64_t ip = d.ips[i];

				if (!i && perf_abi::is_vsyscall_address(ip))
					continue;
				v.kernel_ip |= perf_abi::is_kernel_address(ip);
				v.noncanonical += ip >= perf_abi::kUserLimit &&
						  !perf_abi::is_kernel_address(ip);
			}
			deliveries_.push_back(v);
		} else if (r.header.type == PERF_RECORD_LOST &&
			   r.bytes.size() >= 24) {
			uint64_t n;
			memcpy(&n, r.bytes.data() + 16, sizeof(n));
			lost_ += n;
		}
	}
	return true;
}

/*
 * A kernel entry's record may come again in a buffer: the callbacks run
 * again for a sample taken after they ran (the task scheduled or stopped
 * on its way out), so that a record follows that sample. Record d after
 * prev (the n-th of its key in its buffer) is such an answer if a sample
 * of the key came between the two; without times, if the key has more
 * samples than records so far.
 */
static bool answers_again(const std::vector<uint64_t> &sample_times,
			  const Delivery *prev, const Delivery &d, size_t n)
{
	if (!d.time || !prev->time)
		return sample_times.size() > n;
	for (uint64_t t : sample_times)
		if (t > prev->time && t <= d.time)
			return true;
	return false;
}

MatchResult CookieMatcher::match() const
{
	using Key = std::pair<uint64_t, uint32_t>;
	MatchResult m;
	m.samples = samples_;
	m.announcing_samples = announces_.size();
	m.records = deliveries_.size();
	m.lost = lost_;
	m.fallback_samples = fallback_;
	m.no_user_samples = no_user_;
	m.bad_marker_samples = bad_marker_;

	std::map<Key, const Announce *> first; /* earliest announce per key */
	std::map<Key, std::vector<uint64_t>> announced_at; /* their times */
	for (const Announce &a : announces_) {
		auto [it, fresh] = first.emplace(Key{ a.cookie, a.tid }, &a);
		if (!fresh && a.time < it->second->time)
			it->second = &a;
		announced_at[{ a.cookie, a.tid }].push_back(a.time);
	}
	/* The last record per key and buffer, and how many so far */
	std::map<std::pair<Key, size_t>, std::pair<const Delivery *, size_t>>
		last;
	for (const Delivery &d : deliveries_) {
		Key k{ d.cookie, d.tid };
		m.by_key[k].push_back(d);
		auto it = first.find(k);
		/* Times are 0 without PERF_SAMPLE_TIME: then any order goes. */
		if (it == first.end() || (d.time && it->second->time > d.time))
			m.orphans.push_back(d);
		auto &[prev, n] = last[{ k, d.buffer }];
		if (prev && !answers_again(announced_at[k], prev, d, n))
			m.duplicates.push_back(d);
		prev = &d;
		n++;
		if (d.kernel_ip)
			m.with_kernel_ip.push_back(d);
	}
	auto prefix = [](const std::vector<uint64_t> &a,
			 const std::vector<uint64_t> &b) {
		size_t n = std::min(a.size(), b.size());
		return n && std::equal(a.begin(), a.begin() + n, b.begin());
	};
	auto same_stack = [&prefix](const Delivery *d, const Fallback &f) {
		if (!d)
			return false;
		if (prefix(f.user, d->ips))
			return true;
		std::vector<uint64_t> ips =
			without_link_register_caller(d->ips, f.user);
		return !ips.empty() && prefix(f.user, ips);
	};
	for (const Fallback &f : fallbacks_) {
		/*
		 * The records of its tid right before and right after it (by
		 * time, or in its buffer without times): the entry's record
		 * may still be on its way while the sample is taken.
		 */
		const Delivery *prev = nullptr, *next = nullptr;
		for (const Delivery &d : deliveries_) {
			if (d.tid != f.tid ||
			    (!f.time && d.buffer != f.buffer))
				continue;
			uint64_t at = f.time ? d.time : d.index;
			uint64_t ref = f.time ? f.time : f.index;
			auto key = [&f](const Delivery *x) {
				return f.time ? x->time : (uint64_t)x->index;
			};
			if (at <= ref && (!prev || at >= key(prev)))
				prev = &d;
			if (at > ref && (!next || at < key(next)))
				next = &d;
		}
		if (same_stack(prev, f) || same_stack(next, f))
			m.explained_fallbacks++;
		else
			m.unexplained_fallbacks.push_back(f);
	}
	m.announced = first.size();
	for (const auto &[k, a] : first) {
		if (m.by_key.count(k))
			m.matched++;
		else
			m.unmatched.push_back(*a);
	}
	return m;
}

OrderResult CookieMatcher::check_next(size_t record_buffer) const
{
	/* Records of record_buffer per tid, by time. */
	std::map<uint32_t, std::vector<const Delivery *>> recs;
	for (const Delivery &d : deliveries_)
		if (d.buffer == record_buffer)
			recs[d.tid].push_back(&d);
	for (auto &[tid, v] : recs)
		std::stable_sort(v.begin(), v.end(),
				 [](const Delivery *a, const Delivery *b) {
					 return a->time < b->time;
				 });
	OrderResult o;
	for (const Announce &a : announces_) {
		auto it = recs.find(a.tid);
		const Delivery *next = nullptr, *prev = nullptr;
		if (it != recs.end()) {
			auto &v = it->second;
			auto j = std::lower_bound(
				v.begin(), v.end(), a.time,
				[](const Delivery *d, uint64_t t) {
					return d->time < t;
				});
			if (j != v.end())
				next = *j;
			if (j != v.begin())
				prev = *(j - 1);
		}
		/*
		 * A sample of the entry whose record was just written, and
		 * that no record of its entry follows: not a mismatch,
		 * counted apart (late) for the caller to judge.
		 */
		if (prev && prev->cookie == a.cookie &&
		    !(next && next->cookie == a.cookie)) {
			o.checked++;
			o.late++;
			continue;
		}
		if (!next) {
			o.trailing++;
			continue;
		}
		o.checked++;
		o.again += prev && prev->cookie == a.cookie;
		if (next->cookie != a.cookie)
			o.mismatches.push_back({ a, next->cookie });
	}
	return o;
}

namespace {

/*
 * One indented line per item, the first 8 only: they say which, the
 * counts in the summary line say how many.
 */
template <typename T, typename Line>
void list_first(std::ostringstream &o, const std::vector<T> &items,
		Line line)
{
	for (size_t i = 0; i < items.size(); i++) {
		o << "\n  ";
		if (i == 8) {
			o << "...";
			break;
		}
		line(items[i]);
	}
}

} // namespace

std::string OrderResult::describe() const
{
	std::ostringstream o;
	o << checked << " samples checked against the next record ("
	  << late << " taken after their entry's record and followed by "
	  << "none of it, " << again << " followed by it again), "
	  << trailing << " after the last record, " << mismatches.size()
	  << " mismatches";
	list_first(o, mismatches, [&o](const OrderMismatch &m) {
		o << "sample tid " << m.sample.tid << " time " << m.sample.time
		  << " (buffer " << m.sample.buffer << ") cookie 0x" << std::hex
		  << m.sample.cookie << ", next record cookie 0x"
		  << m.next_cookie << std::dec;
	});
	return o.str();
}

std::string MatchResult::describe() const
{
	std::ostringstream o;
	o << samples << " samples (" << announcing_samples
	  << " deferred, " << fallback_samples << " unwound in place ("
	  << explained_fallbacks << " after their entry's record, "
	  << unexplained_fallbacks.size() << " unexplained), "
	  << no_user_samples << " without user part, " << bad_marker_samples
	  << " with a misplaced marker), " << announced << " cookies announced, " << matched
	  << " matched, " << records << " records, " << unmatched.size()
	  << " unmatched, " << orphans.size() << " orphan records, "
	  << duplicates.size() << " duplicates, " << with_kernel_ip.size()
	  << " with kernel ips, " << lost << " lost";
	list_first(o, unmatched, [&o](const Announce &a) {
		o << "unmatched cookie 0x" << std::hex << a.cookie << std::dec
		  << " tid " << a.tid << " (buffer " << a.buffer << ")";
	});
	list_first(o, orphans, [&o](const Delivery &d) {
		o << "orphan record cookie 0x" << std::hex << d.cookie
		  << std::dec << " tid " << d.tid << " (buffer " << d.buffer
		  << ")";
	});
	return o.str();
}

std::vector<uint64_t>
without_link_register_caller(const std::vector<uint64_t> &deferred,
			     const std::vector<uint64_t> &in_place, bool arm64)
{
	if (!arm64 || deferred.size() < 2 || in_place.empty() ||
	    in_place[0] != deferred[0])
		return {};
	std::vector<uint64_t> ips(deferred);
	ips.erase(ips.begin() + 1);
	return ips;
}

} // namespace perf
