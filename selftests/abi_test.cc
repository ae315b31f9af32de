// SPDX-License-Identifier: GPL-2.0
/*
 * The deferred-callchain ABI (doc/abi.md), as a user sees it: the attr
 * bits and size, the reserved bits after them, PERF_RECORD_CALLCHAIN_DEFERRED
 * (type 22, misc, field order, every sample_id_all trailer combination), and
 * PERF_CONTEXT_USER_DEFERRED followed by the cookie as the last two entries
 * of a sample's callchain. The reserved-bit test runs on every kernel; the
 * rest skips on a kernel without the feature.
 */
#include <errno.h>
#include <stddef.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <map>
#include <set>

#include "lib/cookie_match.h"
#include "lib/features.h"
#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/session.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

#ifndef PERF_ATTR_SIZE_VER8
#define PERF_ATTR_SIZE_VER8 136
#endif

int open_with(perf_event_attr a)
{
	int fd = perf::open_event(&a, 0, -1);
	if (fd >= 0)
		close(fd);
	return fd < 0 ? fd : 0;
}

perf_event_attr base_attr()
{
	session::Options o;
	o.defer_callchain = o.defer_output = false;
	return session::make_attr(o);
}

std::string res(int r)
{
	return r ? strerror(-r) : "accepted";
}

TEST(Abi, ReservedBits40To63Rejected)
{
	int accepted = 0;
	for (int bit = 40; bit < 64; bit++) {
		perf_event_attr a = base_attr();
		perf_abi::set_attr_bit(&a, bit);
		int r = open_with(a);
		if (r != -EINVAL)
			printf("# attr bit %d: %s\n", bit, res(r).c_str());
		accepted += r == 0;
		EXPECT_EQ(r, -EINVAL)
			<< "reserved attr bit " << bit << ": expected EINVAL, "
			<< "got " << res(r);
	}
	printf("# bits 40..63: %d accepted, %d rejected\n", accepted,
	       24 - accepted);
}

/*
 * Open base_attr() with defer_callchain, defer_output and both; each
 * open must return want (0 or -errno).
 */
void expect_defer_bits(int want, const char *label)
{
	struct {
		const char *what;
		bool cc, out;
	} cases[] = { { "defer_callchain", true, false },
		      { "defer_output", false, true },
		      { "both", true, true } };
	for (auto &c : cases) {
		perf_event_attr a = base_attr();
		if (c.cc)
			perf_abi::set_attr_bit(&a, perf_abi::kDeferCallchainBit);
		if (c.out)
			perf_abi::set_attr_bit(&a, perf_abi::kDeferOutputBit);
		int r = open_with(a);
		printf("# %s%s: %s\n", label, c.what, res(r).c_str());
		EXPECT_EQ(r, want) << c.what << ": expected " << res(want)
				   << ", got " << res(r);
	}
}

TEST(Abi, BitsAcceptedEachAloneAndTogether)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	expect_defer_bits(0, "");
	/* The side-band receiver perf tools use: a dummy with defer_output. */
	perf_event_attr d = session::make_attr(session::sideband());
	int r = open_with(d);
	EXPECT_EQ(r, 0) << "dummy event with defer_output: " << res(r);
}

/*
 * Without CONFIG_UNWIND_USER (make vmtest CONFIG=nounwind: the series
 * built without the unwinder; or any kernel before the bits) both bits
 * are refused with EINVAL, alone and together, as reserved bits are:
 * tools probe them to choose between deferred and in-place callchains.
 * Which kernel this is comes from its own config (/proc/config.gz; the
 * guest config has IKCONFIG_PROC), not from probing the bits.
 */
TEST(Abi, DeferBitsRejectedWithoutUnwindUser)
{
	std::string config = work::kernel_config();
	if (config.empty())
		SKIP_NOT_APPLICABLE("no /proc/config.gz (CONFIG_IKCONFIG_PROC) to "
				    "tell whether the kernel has the unwinder");
	if (config.find("\nCONFIG_UNWIND_USER=y\n") != std::string::npos)
		SKIP_NOT_APPLICABLE("CONFIG_UNWIND_USER=y: "
				    "Abi.BitsAcceptedEachAloneAndTogether "
				    "checks the bits");
	expect_defer_bits(-EINVAL, "without CONFIG_UNWIND_USER, ");
	perf_event_attr d = session::make_attr(session::sideband());
	EXPECT_EQ(open_with(d), -EINVAL)
		<< "perf's side-band dummy with defer_output";
}

/* An attr of size bytes (zero past the headers' struct), base_attr() first. */
union BigAttr {
	perf_event_attr a;
	uint8_t raw[PERF_ATTR_SIZE_VER8 + 8];
};

/*
 * What the ABI promises about the attr: the two bits are bits 38 and 39 of
 * the flags word (the u64 after read_format), right after sigtrap, and the
 * series does not change the attr's size, so a 136-byte attr
 * (PERF_ATTR_SIZE_VER8, the size when the bits were added) carries them
 * and is accepted. Newer kernels accept bigger attrs for fields of their
 * own: a bigger size is not this test's business, except that a kernel
 * that refuses one with E2BIG writes back its own size, at least 136.
 */
TEST(Abi, AttrSizeUnchanged)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	static_assert(perf_abi::kDeferCallchainBit == perf_abi::kSigtrapBit + 1 &&
			      perf_abi::kDeferOutputBit == perf_abi::kSigtrapBit + 2,
		      "defer_callchain and defer_output follow sigtrap");
	/* The flags word: at offset 40, sigtrap its bit 37 (the headers'
	 * own bitfield, so bit numbering and word are the compiler's). */
	EXPECT_EQ(offsetof(perf_event_attr, read_format) + 8,
		  perf_abi::kAttrFlagsOffset);
	EXPECT_EQ(offsetof(perf_event_attr, wakeup_events),
		  perf_abi::kAttrFlagsOffset + 8);
	perf_event_attr st{};
	st.sigtrap = 1;
	EXPECT_TRUE(perf_abi::attr_bit(&st, perf_abi::kSigtrapBit))
		<< "sigtrap is not bit 37 of the flags word";

	printf("# sizeof(perf_event_attr) in these headers: %zu, "
	       "PERF_ATTR_SIZE_VER8: %d\n", sizeof(perf_event_attr),
	       PERF_ATTR_SIZE_VER8);
	BigAttr big;
	memset(&big, 0, sizeof(big));
	big.a = base_attr();
	perf_abi::set_attr_bit(&big.a, perf_abi::kDeferCallchainBit);
	perf_abi::set_attr_bit(&big.a, perf_abi::kDeferOutputBit);
	uint64_t flags;
	memcpy(&flags, big.raw + perf_abi::kAttrFlagsOffset, sizeof(flags));
	EXPECT_EQ(flags >> perf_abi::kDeferCallchainBit & 3, 3u)
		<< "bits 38/39 of the flags word";
	big.a.size = PERF_ATTR_SIZE_VER8;
	int r = open_with(big.a);
	EXPECT_EQ(r, 0) << "attr.size 136 (VER8) with both bits: " << res(r);
	/*
	 * The bits live in the flags word that every attr size has: the
	 * kernel must not need a bigger attr for them.
	 */
	big.a.size = PERF_ATTR_SIZE_VER0;
	r = open_with(big.a);
	EXPECT_EQ(r, 0) << "attr.size 64 (VER0) with both bits: " << res(r);

	/* 8 bytes past VER8, non-zero: any answer, but E2BIG says 136+. */
	big.a.size = PERF_ATTR_SIZE_VER8 + 8;
	big.raw[PERF_ATTR_SIZE_VER8] = 1;
	r = perf::open_event(&big.a, 0, -1);
	if (r >= 0)
		close(r);
	printf("# attr of 144 bytes with a non-zero tail: %s, size written "
	       "back %u\n", res(r < 0 ? r : 0).c_str(), big.a.size);
	if (r == -E2BIG) {
		EXPECT_GE(big.a.size, (uint32_t)PERF_ATTR_SIZE_VER8)
			<< "a kernel with the bits knows a smaller attr than "
			   "VER8";
		EXPECT_LT(big.a.size, (uint32_t)PERF_ATTR_SIZE_VER8 + 8)
			<< "E2BIG for an attr the kernel says it knows";
	}
}

/*
 * Sample ourselves with the bits on while reading /dev/zero, in rounds of
 * work::mixed() until want samples with the marker have drained (every
 * check needs some) or the deadline passes. Rounds, not a fixed time: how
 * many of a round's hits are sampled depends on the host and the kernel
 * (since 6.12.118, as upstream, an exclude_kernel cpu-clock samples only
 * the hits that land in user mode: a round of 40 ms gave 0 to 10 of them
 * on the debug kernel under TCG, against ~120 hits in all).
 */
struct SelfRun {
	session::Session s;
	int err = 0;
	uint64_t id = 0;
	int rounds = 0;
	size_t marked = 0;
	std::string waited;
};

size_t marked_samples(const session::Session &s)
{
	std::string err;
	size_t n = 0;
	for (const perf::Sample &sm : s.samples(0, &err))
		n += perf::split_callchain(sm.callchain).deferred;
	return n;
}

void record_self(SelfRun *run, session::Options o, size_t want = 20)
{
	run->err = run->s.open(o, 0, -1);
	if (run->err)
		return;
	run->id = run->s.id(0);
	work::Deadline deadline(20);
	run->s.enable();
	do {
		work::mixed(0.04);
		run->rounds++;
		run->s.drain();
		run->marked = marked_samples(run->s);
	} while (run->marked < want && !deadline.passed());
	run->s.disable();
	run->s.drain();
	run->waited = deadline.describe();
}

TEST(Abi, DeferredRecordLayoutAndTrailer)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	const uint64_t T = PERF_SAMPLE_TID, TM = PERF_SAMPLE_TIME,
		       I = PERF_SAMPLE_ID, S = PERF_SAMPLE_STREAM_ID,
		       C = PERF_SAMPLE_CPU, X = PERF_SAMPLE_IDENTIFIER;
	const uint64_t combos[] = { 0, T, TM, I, S, C, X, T | TM | C,
				    T | TM | I | S | C | X, X | T | TM };
	pid_t tid = work::gettid(), pid = getpid();
	int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	for (uint64_t trailer : combos) {
		/* TIME in the samples as well, to compare with the record. */
		session::Options o;
		o.sample_type = trailer | PERF_SAMPLE_CALLCHAIN |
				PERF_SAMPLE_TIME;
		/* The trailer follows sample_type: TIME is in it too then. */
		uint64_t st = o.sample_type;
		SelfRun run;
		record_self(&run, o);
		ASSERT_EQ(run.err, 0) << "perf_event_open: " << res(run.err);
		std::string err;
		std::vector<perf::Sample> samples = run.s.samples(0, &err);
		ASSERT_TRUE(err.empty()) << err;
		std::map<uint64_t, uint64_t> first_announce; /* cookie, time */
		for (const perf::Sample &sm : samples) {
			perf::SplitChain c = perf::split_callchain(sm.callchain);
			if (c.deferred && !first_announce.count(c.cookie))
				first_announce[c.cookie] = sm.sid.time;
		}
		int records = 0, bad = 0;
		for (const perf::Record &r : run.s.records(0)) {
			if (r.header.type != perf_abi::kRecordCallchainDeferred)
				continue;
			records++;
			perf::DeferredCallchain d;
			ASSERT_TRUE(perf::parse_deferred(r, st, true, &d, &err))
				<< "sample_type 0x" << std::hex << st << ": "
				<< err;
			/* Field order: header, cookie, nr, ips, trailer. */
			size_t want = sizeof(perf_event_header) + 16 +
				      8 * d.ips.size() +
				      8 * __builtin_popcountll(trailer | TM);
			EXPECT_EQ(r.header.size, want)
				<< "record size for trailer 0x" << std::hex
				<< (trailer | TM);
			EXPECT_EQ(d.misc, PERF_RECORD_MISC_USER)
				<< "header.misc";
			EXPECT_NE(d.cookie, 0u) << "cookie 0";
			EXPECT_GT(d.ips.size(), 0u) << "empty user chain";
			for (uint64_t ip : d.ips)
				EXPECT_LT(ip, perf_abi::kKernelStart)
					<< "kernel address in a deferred chain";
			if (st & T) {
				EXPECT_EQ(d.sid.tid, (uint32_t)tid);
				EXPECT_EQ(d.sid.pid, (uint32_t)pid);
			}
			if (st & I) {
				EXPECT_EQ(d.sid.id, run.id)
					<< "sample_id id vs PERF_EVENT_IOC_ID";
			}
			if (st & S) {
				EXPECT_EQ(d.sid.stream_id, run.id)
					<< "stream_id of a non-inherited event";
			}
			if (st & X) {
				EXPECT_EQ(d.sid.identifier, run.id)
					<< "identifier vs PERF_EVENT_IOC_ID";
			}
			if (st & C) {
				EXPECT_LT((int)d.sid.cpu, ncpu) << "cpu";
			}
			auto a = first_announce.find(d.cookie);
			if (a == first_announce.end()) {
				bad++;
				ADD_FAILURE() << "record cookie 0x" << std::hex
					      << d.cookie << " never announced "
					      << "by an earlier sample";
			} else {
				EXPECT_GE(d.sid.time, a->second)
					<< "record older than its sample";
			}
		}
		printf("# trailer 0x%03llx: %zu samples, %zu cookies, %d "
		       "records, %d orphans\n", (unsigned long long)(trailer | TM),
		       samples.size(), first_announce.size(), records, bad);
		EXPECT_GT(records, 0) << "no PERF_RECORD_CALLCHAIN_DEFERRED "
					 "with trailer 0x" << std::hex << st;
		/*
		 * Every entry gets its record but the one disabling the
		 * event, its own receiver.
		 */
		EXPECT_GE(records + 1, (int)first_announce.size())
			<< "cookies without a record, trailer 0x" << std::hex
			<< st;
	}
}

TEST(Abi, DeferredRecordWithoutSampleIdAll)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	session::Options o;
	o.sample_id_all = false;
	SelfRun run;
	record_self(&run, o);
	ASSERT_EQ(run.err, 0) << res(run.err);
	std::string err;
	auto recs = run.s.deferred(0, &err);
	ASSERT_TRUE(err.empty()) << "record with trailing bytes without "
				    "sample_id_all: " << err;
	std::set<uint64_t> cookies;
	for (const perf::Sample &sm : run.s.samples(0, &err)) {
		perf::SplitChain c = perf::split_callchain(sm.callchain);
		if (c.deferred)
			cookies.insert(c.cookie);
	}
	ASSERT_TRUE(err.empty()) << err;
	printf("# %zu records without a trailer, %zu cookies announced\n",
	       recs.size(), cookies.size());
	EXPECT_GT(recs.size(), 0u);
	/* All but the disabling entry's, as with a trailer */
	EXPECT_GE(recs.size() + 1, cookies.size());
}

TEST(Abi, MarkerAndCookieAreTheLastTwoEntries)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	for (bool exclude_kernel : { false, true }) {
		session::Options o;
		o.exclude_kernel = exclude_kernel;
		SelfRun run;
		record_self(&run, o);
		ASSERT_EQ(run.err, 0) << res(run.err);
		std::string err;
		int deferred = 0, user_only = 0, total = 0, in_place = 0;
		for (const perf::Sample &s : run.s.samples(0, &err)) {
			total++;
			const auto &ch = s.callchain;
			size_t n = ch.size();
			perf::SplitChain c = perf::split_callchain(ch);
			if (!c.deferred) {
				/* Judged below: after their entry's record */
				EXPECT_TRUE(c.has_user_ctx)
					<< "sample of our own task without "
					   "the marker and without a user part: "
					<< session::hex_chain(ch);
				in_place++;
				continue;
			}
			deferred++;
			EXPECT_GE(n, 2u);
			EXPECT_EQ(ch[n - 2], perf_abi::kContextUserDeferred)
				<< "marker not second to last: "
				<< session::hex_chain(ch);
			EXPECT_EQ(ch[n - 1], c.cookie);
			EXPECT_NE(c.cookie, 0u);
			EXPECT_FALSE(c.has_user_ctx)
				<< "user frames walked in the sampling context: "
				<< session::hex_chain(ch);
			if (exclude_kernel) {
				EXPECT_EQ(n, 2u) << "exclude_kernel chain is not "
						    "just marker, cookie: "
						 << session::hex_chain(ch);
				user_only += n == 2;
			}
		}
		ASSERT_TRUE(err.empty()) << err;
		perf::CookieMatcher m;
		ASSERT_TRUE(run.s.match(&m, &err)) << err;
		perf::MatchResult r = m.match();
		printf("# exclude_kernel=%d: %d samples, %d with the marker, "
		       "%d exactly [marker, cookie], %d unwound in place (%zu "
		       "after their entry's record); %d rounds, %s\n",
		       exclude_kernel, total, deferred, user_only, in_place,
		       r.explained_fallbacks, run.rounds, run.waited.c_str());
		EXPECT_GT(deferred, 0);
		/*
		 * cpu-clock samples are interrupts: one that lands while the
		 * entry's callbacks run is refused and unwound in place, next
		 * to its entry's record; no other is. How many follows the
		 * callbacks' time, so only that is judged.
		 */
		EXPECT_TRUE(r.unexplained_fallbacks.empty()) << r.describe();
	}
}

/*
 * A sampler that is hit on the way out of the very ioctl that enables it
 * (raw_syscalls:sys_exit) asks for that entry's record right away: the
 * record is written on the same way out, so a receiver enabled after the
 * sampler misses it and the announce is left without a record. Sessions
 * enable the receivers first (Session::enable()), as a tool must.
 */
TEST(Abi, TheEntryThatEnablesTheSamplerHasItsRecord)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	long tp = work::tracepoint_id("raw_syscalls/sys_exit");
	ASSERT_GE(tp, 0) << "no tracepoint raw_syscalls/sys_exit";
	session::Options samp = session::tracepoint(tp);
	samp.defer_output = false;
	session::Session s;
	ASSERT_EQ(s.open(samp, 0, -1), 0);
	ASSERT_EQ(s.open(session::sideband(), 0, -1), 0);
	s.enable();
	for (int i = 0; i < 10; i++)
		syscall(SYS_getppid);
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(s.stop(&m, &err)) << err;
	perf::MatchResult r = m.match();
	printf("# %s\n", r.describe().c_str());
	/* The enabling ioctl, 10 getppid() and the disabling ioctl's entry */
	EXPECT_GE(r.announced, 11u) << r.describe();
	EXPECT_TRUE(r.unmatched.empty()) << r.describe();
	EXPECT_TRUE(r.orphans.empty()) << r.describe();
}

TEST(Abi, NoRecordWithoutAPriorAnnounce)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	/* Sampling event + side-band dummy receiver, as perf record does. */
	session::Options samp;
	samp.defer_output = false;
	session::Session s;
	ASSERT_EQ(s.open(samp, 0, -1), 0);
	ASSERT_EQ(s.open(session::sideband(), 0, -1), 0);
	s.enable();
	/* Rounds of 50 ms (~40 entries under TCG) until a record came */
	work::Deadline deadline(10);
	int rounds = 0;
	std::string err;
	do {
		work::read_zero(0.05, 4 << 20);
		s.drain();
		rounds++;
	} while (s.deferred(1, &err).empty() && err.empty() &&
		 !deadline.passed());
	perf::CookieMatcher m;
	ASSERT_TRUE(s.stop(&m, &err)) << err;
	perf::MatchResult r = m.match();
	printf("# %s\n# %d round(s) of 50 ms, %s\n", r.describe().c_str(),
	       rounds, deadline.describe().c_str());
	size_t in_sampler = 0;
	for (const auto &d : m.deliveries())
		in_sampler += d.buffer == 0;
	EXPECT_EQ(in_sampler, 0u) << "records in the buffer of an event "
				     "without defer_output";
	EXPECT_GT(r.records, 0u) << "no record in the defer_output dummy";
	EXPECT_TRUE(r.orphans.empty()) << r.describe();
	/*
	 * The receiver is enabled before the sampler and disabled after
	 * it, so even the entries that enable and disable the sampler
	 * have their records.
	 */
	EXPECT_TRUE(r.unmatched.empty()) << r.describe();
	EXPECT_TRUE(r.duplicates.empty() && r.with_kernel_ip.empty() &&
		    !r.bad_marker_samples) << r.describe();
}

} // namespace
