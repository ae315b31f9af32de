// SPDX-License-Identifier: GPL-2.0
/*
 * SFrame (doc/kernel.md, "SFrame"): code built without frame pointers but with
 * .sframe tables (found through the PT_GNU_SFRAME program header of the
 * mapped file) gets its whole user stack in the deferred chain.
 *
 * The helpers (helpers/sframe/) make 200 raw getppid() calls from a known
 * stack, with junk in %rbp; a syscalls:sys_enter_getppid event with
 * defer_callchain samples every call, and an in-place event in its group
 * sees the same hits. Checked:
 *
 *  - sframe_stack (-fomit-frame-pointer, .sframe): every deferred record
 *    holds sf_inner, sf_middle, sf_outer, main in that order;
 *  - sframe_stack_nosframe (the same source without .sframe): no record
 *    holds them, the frame-pointer walk stops at the leaf;
 *  - sframe_mixed: frame-pointer code calling .sframe code calling
 *    frame-pointer code, and the reverse, in one program: every frame,
 *    in order;
 *  - for each, the in-place chain of the same hit (perf's in-place walk
 *    follows frame pointers only) is printed beside it, and must start at
 *    the same ip.
 */
#include <elf.h>
#include <gtest/gtest.h>
#include <string.h>
#include <sys/wait.h>

#include <fstream>
#include <map>
#include <sstream>

#include "lib/features.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

/* Not in glibc's elf.h yet (binutils 2.40 emits it). */
constexpr uint32_t kPtGnuSframe = 0x6474e554;
constexpr int kCalls = 200;
constexpr const char *kWhy =
	"SFrame: binaries without frame pointers but with .sframe get "
	"their whole deferred user stack (doc/kernel.md: SFrame; not in "
	"upstream)";

/* 1 when the ELF64 file has a PT_GNU_SFRAME program header, 0 when not,
 * -1 when it cannot be read. */
int has_sframe_phdr(const std::string &path)
{
	std::ifstream in(path, std::ios::binary);
	Elf64_Ehdr eh;
	if (!in.read((char *)&eh, sizeof(eh)) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64)
		return -1;
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		in.seekg(eh.e_phoff + i * sizeof(ph));
		if (!in.read((char *)&ph, sizeof(ph)))
			return -1;
		if (ph.p_type == kPtGnuSframe)
			return 1;
	}
	return 0;
}

std::string chain_str(const std::vector<uint64_t> &ips,
		      const std::vector<syms::Symbol> &s, size_t max = 6)
{
	std::ostringstream o;
	o << "[" << ips.size() << ":";
	for (size_t i = 0; i < ips.size() && i < max; i++) {
		const syms::Symbol *f = syms::lookup(s, ips[i]);
		if (f)
			o << " " << f->name << "+0x" << std::hex
			  << ips[i] - f->start << std::dec;
		else
			o << " 0x" << std::hex << ips[i] << std::dec;
	}
	o << (ips.size() > max ? " ...]" : "]");
	return o.str();
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

	work::Child child;
	session::Session s;
	session::Options o;
	o.type = PERF_TYPE_TRACEPOINT;
	o.config = (uint64_t)tp;
	o.period = 1;
	o.pages = 256;
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

	std::map<uint64_t, std::vector<uint64_t>> recs;
	for (const perf::DeferredCallchain &d : s.deferred(0, &err)) {
		c->records++;
		recs[d.cookie] = d.ips;
		if (d.ips.empty() || !want[0]->contains(d.ips[0]))
			continue;
		c->from_leaf++;
		if (holds(d.ips, want)) {
			c->full++;
			if (c->example.empty())
				c->example = chain_str(d.ips, symbols);
		} else if (c->first_bad.empty()) {
			c->first_bad = chain_str(d.ips, symbols);
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
				c->inplace_example = chain_str(ic.user, symbols);
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
	printf("# %s: %d getppid hits, %d deferred records, %d from %s, "
	       "%d with %s in order; e.g. %s\n",
	       cmd.c_str(), c->hits,
	       c->records, c->from_leaf, want_names[0].c_str(), c->full,
	       names.c_str(), c->example.empty() ? c->first_bad.c_str() :
						   c->example.c_str());
	if (!c->first_bad.empty())
		printf("# first deferred chain without them: %s\n",
		       c->first_bad.c_str());
	printf("# in place (frame pointers only), same hits: %d chains from "
	       "%s, %d with the whole stack; e.g. %s\n",
	       c->inplace_from_leaf, want_names[0].c_str(), c->inplace_full,
	       c->inplace_example.c_str());
	/* Records the walk made of the leaf at all, whatever it found. */
	EXPECT_GE(c->from_leaf, kCalls * 9 / 10) << "too few records from "
						 << want_names[0];
	EXPECT_EQ(c->from_leaf, c->records) << "records from elsewhere";
	EXPECT_LE(c->no_record, 1) << "hits without their record";
	EXPECT_EQ(c->other_ip, 0)
		<< "deferred chains not starting at the sampled ip";
}

/* The premise of a test: the helper has .sframe (or not). */
#define ASSERT_SFRAME(helper, want)                                        \
	do {                                                               \
		std::string p_ = work::helper_path(helper);                \
		ASSERT_EQ(has_sframe_phdr(p_), (want) ? 1 : 0)             \
			<< p_ << (want ? " lacks" : " has")                \
			<< " a PT_GNU_SFRAME header: built wrong";         \
	} while (0)

TEST(SFrame, DeferredChainHoldsTheWholeStack)
{
	EXTENSION(kWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	SKIP_UNLESS_HELPER("sframe_stack");
	ASSERT_SFRAME("sframe_stack", true);
	Chains c;
	record("sframe_stack", { std::to_string(kCalls) },
	       { "sf_inner", "sf_middle", "sf_outer", "main" }, &c);
	if (HasFatalFailure() || IsSkipped())
		return;
	EXPECT_EQ(c.full, c.records)
		<< "deferred chains without sf_inner's callers (no SFrame "
		   "unwinder in this kernel?); first: " << c.first_bad;
}

TEST(SFrame, WithoutSFrameTheChainStopsAtTheLeaf)
{
	EXTENSION(kWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	SKIP_UNLESS_HELPER("sframe_stack_nosframe");
	ASSERT_SFRAME("sframe_stack_nosframe", false);
	Chains c;
	record("sframe_stack_nosframe", { std::to_string(kCalls) },
	       { "sf_inner", "sf_middle", "sf_outer", "main" }, &c);
	if (HasFatalFailure() || IsSkipped())
		return;
	/* The control: what the first test proves is .sframe's doing. */
	EXPECT_EQ(c.full, 0) << "the whole stack without .sframe: %rbp is "
				"junk, nothing but .sframe can find it: "
			     << c.example;
}

TEST(SFrame, MixedFramePointerSFrameFramePointer)
{
	EXTENSION(kWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	SKIP_UNLESS_HELPER("sframe_mixed");
	ASSERT_SFRAME("sframe_mixed", true);
	Chains c;
	record("sframe_mixed", { "fp-sf-fp", std::to_string(kCalls) },
	       { "mx_fp_callback", "mx_sf_lib", "mx_fp_outer", "main" }, &c);
	if (HasFatalFailure() || IsSkipped())
		return;
	EXPECT_EQ(c.full, c.records)
		<< "deferred chains missing a frame; first: " << c.first_bad;
}

TEST(SFrame, MixedSFrameFramePointerSFrame)
{
	EXTENSION(kWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	SKIP_UNLESS_HELPER("sframe_mixed");
	ASSERT_SFRAME("sframe_mixed", true);
	Chains c;
	record("sframe_mixed", { "sf-fp-sf", std::to_string(kCalls) },
	       { "mx_sf_callback", "mx_fp_lib", "mx_sf_outer", "main" }, &c);
	if (HasFatalFailure() || IsSkipped())
		return;
	EXPECT_EQ(c.full, c.records)
		<< "deferred chains missing a frame; first: " << c.first_bad;
}

} // namespace
