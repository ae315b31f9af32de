// SPDX-License-Identifier: GPL-2.0
/*
 * SFrame (doc/kernel.md, "SFrame"): code built without frame pointers but with
 * .sframe tables (found through the PT_GNU_SFRAME program header of the
 * mapped file) gets its whole user stack in the deferred chain.
 *
 * The helpers (helpers/sframe/) make 200 raw getppid() calls from a known
 * stack, with junk in %rbp; a syscalls:sys_enter_getppid event with
 * defer_callchain samples every call, and an in-place event in its group
 * sees the same hits. The .sframe helpers are built by real toolchains,
 * one per SFrame version they write (ci/build/toolchains.sh): Debian bookworm's
 * binutils 2.40 (version 1), trixie's 2.44 (version 2) and sid's 2.47
 * (version 3, GNU as's default since 2.46). Checked, for each:
 *
 *  - sframe_stack_<suite> (-fomit-frame-pointer, .sframe): every deferred
 *    record holds sf_inner, sf_middle, sf_outer, main in that order;
 *  - sframe_mixed_<suite>: frame-pointer code calling .sframe code calling
 *    frame-pointer code, and the reverse, in one program: every frame,
 *    in order;
 *  - sframe_stack_nosframe (the same source without .sframe): no record
 *    holds them, the frame-pointer walk stops at the leaf;
 *  - for each, the in-place chain of the same hit (perf's in-place walk
 *    follows frame pointers only) is printed beside it, and must start at
 *    the same ip.
 *
 * Each helper's toolchain and SFrame version are printed, and the
 * kernel's count of tables and rows its reader refused
 * (debugfs unwind_user/sframe_fallbacks) over the run, where it has one.
 * A helper that was not built (its toolchain could not be fetched) fails
 * the test on a kernel with the feature.
 */
#include <elf.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "lib/features.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

constexpr int kCalls = 200;
constexpr const char *kWhy =
	"SFrame: binaries without frame pointers but with .sframe get "
	"their whole deferred user stack (doc/kernel.md: SFrame; not in "
	"upstream)";

/* The SFrame version of the section the ELF file's PT_GNU_SFRAME
 * program header points at, 0 when it has none, -1 when it cannot be
 * read. */
int sframe_version(const std::string &path)
{
	std::string err;
	std::vector<syms::Segment> segs = syms::segments(path, &err);
	if (!err.empty())
		return -1;
	for (const syms::Segment &seg : segs) {
		if (seg.type != syms::kPtGnuSframe)
			continue;
		unsigned char pre[4]; /* magic 0xdee2, version, flags */
		std::ifstream in(path, std::ios::binary);
		in.seekg(seg.offset);
		if (!in.read((char *)pre, sizeof(pre)) || pre[0] != 0xe2 ||
		    pre[1] != 0xde)
			return -1;
		return pre[2];
	}
	return 0;
}

/* What the helper says it was built with (--toolchain). */
std::string toolchain_of(const std::string &path)
{
	std::string out;
	FILE *f = popen((path + " --toolchain").c_str(), "r");
	if (!f)
		return "?";
	char buf[256];
	while (fgets(buf, sizeof(buf), f))
		out += buf;
	pclose(f);
	while (!out.empty() && out.back() == '\n')
		out.pop_back();
	return out;
}

/* The kernel's refusal counts (name -> count), empty without them. */
std::map<std::string, long> fallbacks()
{
	std::map<std::string, long> m;
	std::istringstream in(
		work::read_file("/sys/kernel/debug/unwind_user/sframe_fallbacks"));
	std::string name;
	long n;
	while (in >> name >> n)
		m[name] = n;
	return m;
}

std::string fallbacks_since(const std::map<std::string, long> &before)
{
	std::map<std::string, long> now = fallbacks();
	if (now.empty())
		return "not counted by this kernel";
	std::ostringstream o;
	long total = 0;
	for (const auto &[name, n] : now) {
		long d = n - (before.count(name) ? before.at(name) : 0);
		total += d;
		if (d)
			o << " " << name << " " << d;
	}
	return total ? o.str().substr(1) : "none";
}

/* Whether chain starts with frames in want[0], want[1], ... in order. */
bool holds(const std::vector<uint64_t> &chain,
	   const std::vector<const syms::Symbol *> &want)
{
	if (chain.size() < want.size())
		return false;
	for (size_t i = 0; i < want.size(); i++)
		if (!want[i]->contains(chain[i]))
			return false;
	return true;
}

struct Chains {
	int hits = 0;	   /* samples of the deferred event */
	int records = 0;   /* deferred records */
	int from_leaf = 0; /* records whose ip is in want[0] */
	int full = 0;	   /* records holding every wanted frame */
	int inplace_from_leaf = 0, inplace_full = 0;
	int other_ip = 0;  /* hits whose in-place ip is not the record's */
	int no_record = 0; /* hits whose cookie has no record */
	int others = 0;	   /* records of entries other sessions sampled */
	std::string example, inplace_example, first_bad;
};

/*
 * Run helper with args under the getppid tracepoint pair and count its
 * chains against want (function names, innermost first).
 */
void record(const std::string &helper, const std::vector<std::string> &args,
	    const std::vector<std::string> &want_names, Chains *c)
{
	SKIP_UNLESS_HELPER(helper);
	long tp = work::tracepoint_id("syscalls/sys_enter_getppid");
	if (tp < 0)
		GTEST_SKIP() << "no tracepoint syscalls/sys_enter_getppid";
	std::string path = work::helper_path(helper), err;
	std::vector<syms::Symbol> symbols = syms::load(path, &err);
	ASSERT_FALSE(symbols.empty()) << path << ": " << err;
	std::vector<const syms::Symbol *> want;
	for (const std::string &f : want_names) {
		want.push_back(syms::find(symbols, f));
		ASSERT_NE(want.back(), nullptr) << f << " not in " << path;
	}

	std::map<std::string, long> fb = fallbacks();
	work::Child child;
	session::Session s;
	session::Options o = session::tracepoint(tp, 256);
	session::Options inpl = o;
	inpl.defer_callchain = inpl.defer_output = false;
	std::vector<std::string> argv = { path };
	argv.insert(argv.end(), args.begin(), args.end());
	/* Buffer 0 deferred, buffer 1 in place: in one group, same hits. */
	int st = session::record_program(&s, &child, argv, o, 0, [&](pid_t p) {
		return s.open_in_group(inpl, p, 0);
	});
	ASSERT_GE(st, 0) << path << ": " << strerror(-st);
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		<< path << ": wait status 0x" << std::hex << st;
	EXPECT_EQ(s.lost(), 0u);

	/*
	 * Judged are the records that answer this session's own getppid
	 * samples, matched by cookie as a reader does: a session that
	 * samples every task (perf record -a of a program beside this one)
	 * makes the helper write the records of its entries here too.
	 */
	std::set<uint64_t> ours = s.announced(0, &err);
	ASSERT_TRUE(err.empty()) << err;
	std::map<uint64_t, std::vector<uint64_t>> recs;
	for (const perf::DeferredCallchain &d : s.deferred(0, &err)) {
		if (!ours.count(d.cookie)) {
			c->others++;
			continue;
		}
		c->records++;
		recs[d.cookie] = d.ips;
		if (d.ips.empty() || !want[0]->contains(d.ips[0]))
			continue;
		c->from_leaf++;
		if (holds(d.ips, want)) {
			c->full++;
			if (c->example.empty())
				c->example = syms::chain_str(d.ips, symbols);
		} else if (c->first_bad.empty()) {
			c->first_bad = syms::chain_str(d.ips, symbols);
		}
	}
	std::vector<perf::Sample> ds = s.samples(0, &err);
	std::vector<perf::Sample> is = s.samples(1, &err);
	ASSERT_TRUE(err.empty()) << err;
	EXPECT_EQ(ds.size(), is.size()) << "the group's events saw other hits";
	for (size_t i = 0; i < std::min(ds.size(), is.size()); i++) {
		c->hits++;
		perf::SplitChain dc = perf::split_callchain(ds[i].callchain);
		perf::SplitChain ic = perf::split_callchain(is[i].callchain);
		if (!ic.user.empty() && want[0]->contains(ic.user[0])) {
			c->inplace_from_leaf++;
			c->inplace_full += holds(ic.user, want);
			if (c->inplace_example.empty())
				c->inplace_example = syms::chain_str(ic.user, symbols);
		}
		auto r = recs.find(dc.cookie);
		if (!dc.deferred || r == recs.end()) {
			c->no_record++;
			continue;
		}
		if (ic.user.empty() || r->second.empty() ||
		    ic.user[0] != r->second[0])
			c->other_ip++;
	}
	std::string names;
	for (const std::string &f : want_names)
		names += (names.empty() ? "" : ", ") + f;
	std::string cmd = helper;
	for (const std::string &a : args)
		cmd += " " + a;
	printf("# %s: %d getppid hits, %d deferred records (and %d of other "
	       "sessions' samples), %d from %s, %d with %s in order; e.g. %s\n",
	       cmd.c_str(), c->hits, c->records, c->others,
	       c->from_leaf, want_names[0].c_str(), c->full,
	       names.c_str(), c->example.empty() ? c->first_bad.c_str() :
						   c->example.c_str());
	if (!c->first_bad.empty())
		printf("# first deferred chain without them: %s\n",
		       c->first_bad.c_str());
	printf("# in place (frame pointers only), same hits: %d chains from "
	       "%s, %d with the whole stack; e.g. %s\n",
	       c->inplace_from_leaf, want_names[0].c_str(), c->inplace_full,
	       c->inplace_example.c_str());
	printf("# SFrame tables and rows the kernel refused meanwhile (any "
	       "task): %s\n", fallbacks_since(fb).c_str());
	/* Records the walk made of the leaf at all, whatever it found. */
	EXPECT_GE(c->from_leaf, kCalls * 9 / 10) << "too few records from "
						 << want_names[0];
	EXPECT_EQ(c->from_leaf, c->records) << "records from elsewhere";
	EXPECT_LE(c->no_record, 1) << "hits without their record";
	EXPECT_EQ(c->other_ip, 0)
		<< "deferred chains not starting at the sampled ip";
}

/* The premise of a test: the helper has .sframe of that version (0: none). */
#define ASSERT_SFRAME(helper, want)                                        \
	do {                                                               \
		std::string p_ = work::helper_path(helper);                \
		ASSERT_EQ(sframe_version(p_), (want))                      \
			<< p_ << ": the SFrame version of its "            \
			<< "PT_GNU_SFRAME section (0: none): built wrong"; \
	} while (0)

/*
 * The helper built with suite's binutils, which write SFrame version
 * version: present (on a kernel with the feature a missing one fails: its
 * toolchain could not be fetched), with a section of that version.
 */
#define ASSERT_TOOLCHAIN_HELPER(helper, suite, version)                     \
	do {                                                               \
		std::string p_ = work::helper_path(helper);                \
		ASSERT_EQ(access(p_.c_str(), X_OK), 0)                     \
			<< p_ << " was not built: Debian " suite "'s "     \
			<< "binutils could not be fetched (make "          \
			<< "selftests runs ci/build/toolchains.sh; see "         \
			<< "build/toolchains/" suite ".log)";              \
		ASSERT_SFRAME(helper, version);                            \
		printf("# %s: built with %s\n", helper,                    \
		       toolchain_of(p_).c_str());                          \
	} while (0)

/* sframe_stack_<suite>: every record holds the whole stack. */
void whole_stack(const char *helper)
{
	Chains c;
	record(helper, { std::to_string(kCalls) },
	       { "sf_inner", "sf_middle", "sf_outer", "main" }, &c);
	if (::testing::Test::HasFatalFailure() || ::testing::Test::IsSkipped())
		return;
	EXPECT_EQ(c.full, c.records)
		<< "deferred chains without sf_inner's callers (no SFrame "
		   "unwinder for this version?); first: " << c.first_bad;
}

/* sframe_mixed_<suite> in mode (fp-sf-fp, sf-fp-sf): every frame. */
void mixed(const char *helper, const std::string &mode,
	   const std::vector<std::string> &want)
{
	Chains c;
	record(helper, { mode, std::to_string(kCalls) }, want, &c);
	if (::testing::Test::HasFatalFailure() || ::testing::Test::IsSkipped())
		return;
	EXPECT_EQ(c.full, c.records)
		<< "deferred chains missing a frame; first: " << c.first_bad;
}

#ifdef __aarch64__
/*
 * arm64's compilers put a frame record where they like in its frame (GCC
 * at the bottom), so a step through one leaves the caller's stack pointer
 * unknown, and the walk does not use a row based on it (doc/kernel.md,
 * SFrame on arm64): the frame pointer finds the next caller instead, and
 * skips mx_fp_outer, and main after mx_sf_outer, as any frame pointer
 * walk does. Reading those rows anyway would read the wrong slots.
 */
const std::vector<std::string> kFpSfFp = { "mx_fp_callback", "mx_sf_lib",
					   "main" };
const std::vector<std::string> kSfFpSf = { "mx_sf_callback", "mx_fp_lib",
					   "mx_sf_outer" };
#else
const std::vector<std::string> kFpSfFp = { "mx_fp_callback", "mx_sf_lib",
					   "mx_fp_outer", "main" };
const std::vector<std::string> kSfFpSf = { "mx_sf_callback", "mx_fp_lib",
					   "mx_sf_outer", "main" };
#endif

/* One test per toolchain and helper; the names say the SFrame version. */
#define SFRAME_TESTS(Suite, suite, version)                                 \
	TEST(SFrame, WholeStack##Suite##V##version)                         \
	{                                                                  \
		EXTENSION(kWhy);                                           \
		SKIP_UNLESS_DEFER_CALLCHAIN();                             \
		ASSERT_TOOLCHAIN_HELPER("sframe_stack_" suite, suite,      \
					version);                          \
		whole_stack("sframe_stack_" suite);                        \
	}                                                                  \
	TEST(SFrame, MixedFpSfFp##Suite##V##version)                        \
	{                                                                  \
		EXTENSION(kWhy);                                           \
		SKIP_UNLESS_DEFER_CALLCHAIN();                             \
		ASSERT_TOOLCHAIN_HELPER("sframe_mixed_" suite, suite,      \
					version);                          \
		mixed("sframe_mixed_" suite, "fp-sf-fp", kFpSfFp);         \
	}                                                                  \
	TEST(SFrame, MixedSfFpSf##Suite##V##version)                        \
	{                                                                  \
		EXTENSION(kWhy);                                           \
		SKIP_UNLESS_DEFER_CALLCHAIN();                             \
		ASSERT_TOOLCHAIN_HELPER("sframe_mixed_" suite, suite,      \
					version);                          \
		mixed("sframe_mixed_" suite, "sf-fp-sf", kSfFpSf);         \
	}

SFRAME_TESTS(Bookworm, "bookworm", 1)
SFRAME_TESTS(Trixie, "trixie", 2)
SFRAME_TESTS(Sid, "sid", 3)

TEST(SFrame, WithoutSFrameTheChainStopsAtTheLeaf)
{
	EXTENSION(kWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	SKIP_UNLESS_HELPER("sframe_stack_nosframe");
	ASSERT_SFRAME("sframe_stack_nosframe", 0);
	Chains c;
	record("sframe_stack_nosframe", { std::to_string(kCalls) },
	       { "sf_inner", "sf_middle", "sf_outer", "main" }, &c);
	if (HasFatalFailure() || IsSkipped())
		return;
	/* The control: what the tests above prove is .sframe's doing. */
	EXPECT_EQ(c.full, 0) << "the whole stack without .sframe: %rbp is "
				"junk, nothing but .sframe can find it: "
			     << c.example;
}

} // namespace
