// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the shared ring-buffer reader and cookie matcher, on
 * crafted buffers: what a guest test concludes is only as good as these.
 */
#include <gtest/gtest.h>
#include <string.h>

#include "lib/cookie_match.h"
#include "lib/perf_abi.h"

namespace {

using perf::Record;

constexpr uint64_t kType = PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_CALLCHAIN;

Record make(uint32_t type, const std::vector<uint64_t> &body,
	    uint16_t misc = 0)
{
	Record r;
	r.header.type = type;
	r.header.misc = misc;
	r.header.size = sizeof(perf_event_header) + 8 * body.size();
	r.bytes.resize(r.header.size);
	memcpy(r.bytes.data(), &r.header, sizeof(r.header));
	memcpy(r.bytes.data() + sizeof(r.header), body.data(), 8 * body.size());
	return r;
}

uint64_t pidtid(uint32_t pid, uint32_t tid) { return pid | (uint64_t)tid << 32; }

/* A sample on tid at time t with a kernel part and a deferred cookie. */
Record sample(uint32_t tid, uint64_t t, uint32_t cpu, uint64_t cookie)
{
	return make(PERF_RECORD_SAMPLE,
		    { pidtid(tid, tid), t, cpu, 4, PERF_CONTEXT_KERNEL,
		      0xffffffff81000000ULL, perf_abi::kContextUserDeferred,
		      cookie });
}

/* A deferred record with a sample_id trailer (TID, TIME, CPU). */
Record deferred(uint32_t tid, uint64_t t, uint32_t cpu, uint64_t cookie,
		std::vector<uint64_t> ips)
{
	std::vector<uint64_t> body{ cookie, ips.size() };
	body.insert(body.end(), ips.begin(), ips.end());
	body.insert(body.end(), { pidtid(tid, tid), t, cpu });
	return make(perf_abi::kRecordCallchainDeferred, body,
		    PERF_RECORD_MISC_USER);
}

TEST(Reader, ParsesDeferredRecordAndTrailer)
{
	Record r = deferred(42, 1000, 3, 0xabc, { 0x401000, 0x401100 });
	perf::DeferredCallchain d;
	std::string err;
	ASSERT_TRUE(perf::parse_deferred(r, kType | PERF_SAMPLE_ID |
					 PERF_SAMPLE_STREAM_ID,
					 true, &d, &err) == false)
		<< "a trailer shorter than sample_type says must be refused";
	ASSERT_TRUE(perf::parse_deferred(r, kType, true, &d, &err)) << err;
	EXPECT_EQ(d.misc, PERF_RECORD_MISC_USER);
	EXPECT_EQ(d.cookie, 0xabcu);
	EXPECT_EQ(d.ips, (std::vector<uint64_t>{ 0x401000, 0x401100 }));
	EXPECT_EQ(d.sid.tid, 42u);
	EXPECT_EQ(d.sid.time, 1000u);
	EXPECT_EQ(d.sid.cpu, 3u);
}

TEST(Reader, SplitsDeferredCallchain)
{
	perf::Sample s;
	std::string err;
	ASSERT_TRUE(perf::parse_sample(sample(7, 1, 0, 0x99), kType, &s, &err));
	perf::SplitChain c = perf::split_callchain(s.callchain);
	EXPECT_TRUE(c.deferred);
	EXPECT_EQ(c.cookie, 0x99u);
	EXPECT_EQ(c.kernel.size(), 1u);
	EXPECT_TRUE(c.user.empty());
}

TEST(Reader, ParsesUserRegistersAfterTheCallchain)
{
	perf::Sample s;
	std::string err;
	/* ABI 64 (2) and two registers; then a kernel thread's: ABI 0. */
	Record r = make(PERF_RECORD_SAMPLE,
			{ pidtid(7, 7), 1, 0, 1, PERF_CONTEXT_KERNEL, 2, 0x11,
			  0x22 });
	ASSERT_TRUE(perf::parse_sample(r, kType | PERF_SAMPLE_REGS_USER, &s,
				       &err)) << err;
	EXPECT_EQ(s.callchain.size(), 1u);
	EXPECT_EQ(s.regs_abi, 2u);
	EXPECT_EQ(s.regs_user, (std::vector<uint64_t>{ 0x11, 0x22 }));
	perf::Sample k;
	Record kr = make(PERF_RECORD_SAMPLE, { pidtid(0, 0), 1, 0, 0, 0 });
	ASSERT_TRUE(perf::parse_sample(kr, kType | PERF_SAMPLE_REGS_USER, &k,
				       &err)) << err;
	EXPECT_EQ(k.regs_abi, 0u);
	EXPECT_TRUE(k.regs_user.empty());
}

TEST(Matcher, PairsAcrossBuffersAndCountsPerBuffer)
{
	perf::CookieMatcher m;
	std::string err;
	/* Task 10 sampled on CPU 0, returned on CPU 1 (migrated). */
	ASSERT_TRUE(m.add_buffer(0, { sample(10, 1, 0, 0x100),
				      sample(10, 2, 0, 0x100) }, kType, true, &err));
	ASSERT_TRUE(m.add_buffer(1, { deferred(10, 3, 1, 0x100, { 0x401000 }) },
				 kType, true, &err));
	perf::MatchResult r = m.match();
	EXPECT_TRUE(r.clean()) << r.describe();
	EXPECT_EQ(r.samples, 2u);
	EXPECT_EQ(r.announced, 1u);
	EXPECT_EQ(r.matched, 1u);
	const auto &got = r.by_key[std::make_pair(0x100ULL, 10U)];
	ASSERT_EQ(got.size(), 1u);
	EXPECT_EQ(got[0].buffer, 1u);
}

TEST(Matcher, ReportsUnmatchedOrphanDuplicateAndKernelIps)
{
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(m.add_buffer(0, {
		sample(10, 5, 0, 0x100),                  /* never delivered */
		deferred(11, 1, 0, 0x200, { 0x401000 }),  /* never announced */
		sample(12, 5, 0, 0x300),
		deferred(12, 6, 0, 0x300, { 0x401000 }),
		deferred(12, 7, 0, 0x300, { 0x401000 }),  /* duplicate */
		sample(13, 5, 0, 0x400),
		deferred(13, 6, 0, 0x400, { 0xffffffff81000000ULL }),
		sample(14, 9, 0, 0x500),
		deferred(14, 8, 0, 0x500, { 0x401000 }),  /* before its sample */
	}, kType, true, &err)) << err;
	m.add_lost(2);
	perf::MatchResult r = m.match();
	EXPECT_FALSE(r.clean());
	ASSERT_EQ(r.unmatched.size(), 1u);
	EXPECT_EQ(r.unmatched[0].cookie, 0x100u);
	ASSERT_EQ(r.orphans.size(), 2u) << r.describe();
	EXPECT_EQ(r.orphans[0].cookie, 0x200u);
	EXPECT_EQ(r.orphans[1].cookie, 0x500u);
	ASSERT_EQ(r.duplicates.size(), 1u);
	EXPECT_EQ(r.duplicates[0].cookie, 0x300u);
	ASSERT_EQ(r.with_kernel_ip.size(), 1u);
	EXPECT_EQ(r.with_kernel_ip[0].cookie, 0x400u);
	EXPECT_EQ(r.lost, 2u);
}

/*
 * The callbacks run again for a sample taken after the entry's record:
 * its second record answers that sample and is no duplicate, and the
 * sample is not late. A record again without such a sample still is.
 */
TEST(Matcher, ARecordAgainAfterALaterSampleIsNoDuplicate)
{
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(m.add_buffer(0, {
		sample(12, 5, 0, 0x300),
		deferred(12, 6, 0, 0x300, { 0x401000 }),
		sample(12, 7, 0, 0x300),               /* after the record */
		deferred(12, 8, 0, 0x300, { 0x401000 }), /* answers it */
		deferred(12, 9, 0, 0x300, { 0x401000 }), /* answers nothing */
	}, kType, true, &err)) << err;
	perf::MatchResult r = m.match();
	ASSERT_EQ(r.duplicates.size(), 1u) << r.describe();
	EXPECT_EQ(r.duplicates[0].time, 9u);
	perf::OrderResult o = m.check_next(0);
	EXPECT_EQ(o.late, 0u) << o.describe();
	EXPECT_EQ(o.checked, 2u) << o.describe();
	EXPECT_TRUE(o.mismatches.empty()) << o.describe();
}

TEST(Matcher, SameCookieDifferentTidIsNotAMatch)
{
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(m.add_buffer(0, { sample(10, 1, 0, 0x100),
				      deferred(11, 2, 0, 0x100, { 0x401000 }) },
				 kType, true, &err));
	perf::MatchResult r = m.match();
	EXPECT_EQ(r.matched, 0u);
	EXPECT_EQ(r.unmatched.size(), 1u);
	EXPECT_EQ(r.orphans.size(), 1u);
}

/* A sample with an in-place user part (no deferral). */
Record inplace_sample(uint32_t tid, uint64_t t, uint32_t cpu)
{
	return make(PERF_RECORD_SAMPLE,
		    { pidtid(tid, tid), t, cpu, 4, PERF_CONTEXT_KERNEL,
		      0xffffffff81000000ULL, PERF_CONTEXT_USER, 0x401000 });
}

TEST(Matcher, ClassifiesFallbackKernelOnlyAndMisplacedMarker)
{
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(m.add_buffer(0, {
		inplace_sample(10, 1, 0),
		make(PERF_RECORD_SAMPLE, { pidtid(10, 10), 2, 0, 2,
					   PERF_CONTEXT_KERNEL,
					   0xffffffff81000000ULL }),
		/* marker, cookie, then one more entry: not last */
		make(PERF_RECORD_SAMPLE, { pidtid(10, 10), 3, 0, 3,
					   perf_abi::kContextUserDeferred,
					   0x100, 0x401000 }),
		/* a user part and the marker in one chain */
		make(PERF_RECORD_SAMPLE, { pidtid(10, 10), 4, 0, 4,
					   PERF_CONTEXT_USER, 0x401000,
					   perf_abi::kContextUserDeferred,
					   0x100 }),
		deferred(10, 5, 0, 0x100, { 0x401000 }),
	}, kType, true, &err)) << err;
	perf::MatchResult r = m.match();
	EXPECT_EQ(r.fallback_samples, 1u);
	EXPECT_EQ(r.no_user_samples, 1u);
	EXPECT_EQ(r.bad_marker_samples, 2u);
	EXPECT_EQ(r.matched, 1u);
	EXPECT_FALSE(r.clean()) << "a misplaced marker must make it unclean";
}

/*
 * A sample unwound in place is explained only next to a record of its
 * tid with the same user stack (a request refused while its entry's
 * callbacks ran): tracepoint_test and deferred_test accept those and
 * fail on any other.
 */
TEST(Matcher, FallbackExplainedOnlyBesideItsEntrysStack)
{
	auto one = [](std::vector<Record> recs) {
		perf::CookieMatcher m;
		std::string err;
		EXPECT_TRUE(m.add_buffer(0, recs, kType, true, &err)) << err;
		return m.match();
	};
	/* after its entry's record (0x401000 then the caller) */
	perf::MatchResult r = one({
		sample(10, 1, 0, 0x100),
		deferred(10, 2, 0, 0x100, { 0x401000, 0x402000 }),
		inplace_sample(10, 3, 0),
	});
	EXPECT_EQ(r.explained_fallbacks, 1u);
	EXPECT_TRUE(r.unexplained_fallbacks.empty());
	/* before it: the record may still be on its way */
	r = one({
		sample(10, 1, 0, 0x100),
		inplace_sample(10, 2, 0),
		deferred(10, 3, 0, 0x100, { 0x401000 }),
	});
	EXPECT_EQ(r.explained_fallbacks, 1u);
	/*
	 * Only the nearest records count: a record of the same stack
	 * further away, with other stacks nearer on both sides, leaves it
	 * unexplained (its own entry's record is one of the nearest).
	 */
	r = one({
		sample(10, 1, 0, 0x100),
		deferred(10, 2, 0, 0x100, { 0x401000 }),
		sample(10, 3, 0, 0x200),
		deferred(10, 4, 0, 0x200, { 0x405000 }),
		inplace_sample(10, 5, 0),
		sample(10, 6, 0, 0x300),
		deferred(10, 7, 0, 0x300, { 0x406000 }),
	});
	EXPECT_EQ(r.explained_fallbacks, 0u);
	EXPECT_EQ(r.unexplained_fallbacks.size(), 1u);
	/* another stack, another task's record, or none at all */
	for (auto recs : { std::vector<Record>{
				   sample(10, 1, 0, 0x100),
				   deferred(10, 2, 0, 0x100, { 0x405000 }),
				   inplace_sample(10, 3, 0) },
			   std::vector<Record>{
				   sample(11, 1, 0, 0x100),
				   deferred(11, 2, 0, 0x100, { 0x401000 }),
				   inplace_sample(10, 3, 0) },
			   std::vector<Record>{ inplace_sample(10, 3, 0) } }) {
		r = one(recs);
		EXPECT_EQ(r.explained_fallbacks, 0u);
		EXPECT_EQ(r.unexplained_fallbacks.size(), 1u);
	}
}

TEST(Matcher, KernelHalfIsKernelNonCanonicalIsJunk)
{
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(m.add_buffer(0, {
		sample(10, 1, 0, 0x100),
		deferred(10, 2, 0, 0x100, { 0x401000, 0xa3e8078948002439ULL }),
		sample(10, 3, 0, 0x200),
		deferred(10, 4, 0, 0x200, { 0x401000, 0xffff888000001000ULL }),
	}, kType, true, &err)) << err;
	perf::MatchResult r = m.match();
	ASSERT_EQ(m.deliveries().size(), 2u);
	EXPECT_EQ(m.deliveries()[0].noncanonical, 1u);
	EXPECT_FALSE(m.deliveries()[0].kernel_ip);
	EXPECT_EQ(m.deliveries()[1].noncanonical, 0u);
	ASSERT_EQ(r.with_kernel_ip.size(), 1u);
	EXPECT_EQ(r.with_kernel_ip[0].cookie, 0x200u);
}

/* An emulated vsyscall's address starts a chain; nowhere else is it user */
TEST(Matcher, VsyscallPageOnlyAsTheFirstEntry)
{
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(m.add_buffer(0, {
		sample(10, 1, 0, 0x100),
		deferred(10, 2, 0, 0x100, { 0xffffffffff600000ULL, 0x401000 }),
		sample(10, 3, 0, 0x200),
		deferred(10, 4, 0, 0x200, { 0x401000, 0xffffffffff600000ULL }),
	}, kType, true, &err)) << err;
	perf::MatchResult r = m.match();
	ASSERT_EQ(r.with_kernel_ip.size(), 1u) << r.describe();
	EXPECT_EQ(r.with_kernel_ip[0].cookie, 0x200u);
}

/*
 * arm64's record may hold the link register's caller second, after the
 * leaf, where perf's in-place walk goes on with the caller's caller (CI's
 * arm64 debug run: __libc_malloc+0, then operator new, in the record
 * only). Nowhere else, and never after another leaf.
 */
TEST(LinkRegisterCaller, DroppedOnlyOnArm64AfterTheSameLeaf)
{
	std::vector<uint64_t> rec = { 0x1000, 0x2000, 0x3000, 0x4000 };
	std::vector<uint64_t> in_place = { 0x1000, 0x3000, 0x4000 };
	EXPECT_EQ(perf::without_link_register_caller(rec, in_place, true),
		  in_place);
	EXPECT_TRUE(perf::without_link_register_caller(rec, in_place, false)
			    .empty());
	EXPECT_TRUE(perf::without_link_register_caller(
			    rec, { 0x1004, 0x3000 }, true).empty());
	EXPECT_TRUE(perf::without_link_register_caller({ 0x1000 }, in_place,
						       true).empty());
	EXPECT_TRUE(perf::without_link_register_caller(rec, {}, true).empty());
}

TEST(Order, EachSampleCarriesTheNextRecordsCookie)
{
	perf::CookieMatcher m;
	std::string err;
	/* Buffer 0: samples and records of tid 10; buffer 1: samples only,
	 * from a second event sampling the same entries. */
	ASSERT_TRUE(m.add_buffer(0, {
		sample(10, 1, 0, 0x100), sample(10, 2, 0, 0x100),
		deferred(10, 3, 0, 0x100, { 0x401000 }),
		sample(10, 4, 0, 0x200),
		deferred(10, 5, 0, 0x200, { 0x401000 }),
		sample(10, 6, 0, 0x200), /* after its record: late */
		sample(10, 7, 0, 0x300), /* entry not over yet: trailing */
	}, kType, true, &err)) << err;
	ASSERT_TRUE(m.add_buffer(1, { sample(10, 2, 0, 0x100),
				      sample(10, 4, 0, 0x200) },
				 kType, true, &err)) << err;
	perf::OrderResult o = m.check_next(0);
	EXPECT_EQ(o.checked, 6u) << o.describe();
	EXPECT_EQ(o.late, 1u) << o.describe();
	EXPECT_EQ(o.trailing, 1u) << o.describe();
	EXPECT_TRUE(o.mismatches.empty()) << o.describe();
}

TEST(Order, CountsASampleAnsweredAgain)
{
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(m.add_buffer(0, {
		sample(10, 1, 0, 0x100),
		deferred(10, 2, 0, 0x100, { 0x401000 }),
		sample(10, 3, 0, 0x100), /* after the record, answered again */
		deferred(10, 4, 0, 0x100, { 0x401000 }),
		sample(10, 5, 0, 0x100), /* after both: late */
		sample(10, 6, 0, 0x200),
		deferred(10, 7, 0, 0x200, { 0x401000 }),
	}, kType, true, &err)) << err;
	perf::OrderResult o = m.check_next(0);
	EXPECT_EQ(o.checked, 4u) << o.describe();
	EXPECT_EQ(o.again, 1u) << o.describe();
	EXPECT_EQ(o.late, 1u) << o.describe();
	EXPECT_TRUE(o.mismatches.empty()) << o.describe();
}

TEST(Order, ReportsASampleWithAnotherEntrysCookie)
{
	perf::CookieMatcher m;
	std::string err;
	ASSERT_TRUE(m.add_buffer(0, {
		sample(10, 1, 0, 0x100),
		sample(10, 2, 0, 0x999), /* same entry, other cookie */
		deferred(10, 3, 0, 0x100, { 0x401000 }),
		sample(11, 4, 1, 0x100), /* other tid: its own records */
		deferred(11, 5, 1, 0x100, { 0x401000 }),
	}, kType, true, &err)) << err;
	perf::OrderResult o = m.check_next(0);
	EXPECT_EQ(o.checked, 3u);
	ASSERT_EQ(o.mismatches.size(), 1u) << o.describe();
	EXPECT_EQ(o.mismatches[0].sample.cookie, 0x999u);
	EXPECT_EQ(o.mismatches[0].next_cookie, 0x100u);
	/* Records of another buffer are not the next record here. */
	perf::OrderResult none = m.check_next(7);
	EXPECT_EQ(none.checked, 0u);
	EXPECT_EQ(none.trailing, 3u);
}

} // namespace
