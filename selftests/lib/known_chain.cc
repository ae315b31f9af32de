// SPDX-License-Identifier: GPL-2.0
#include "known_chain.h"

#include <elf.h>
#include <gtest/gtest.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include <fstream>
#include <set>
#include <vector>

#include "cookie_match.h"
#include "features.h"
#include "session.h"
#include "workload.h"

namespace known_chain {

bool Image::load(const std::string &path, std::string *err)
{
	symbols = syms::load(path, err);
	if (symbols.empty())
		return false;
	for (const char *f : { "cs_leaf", "cs_middle", "cs_outer", "main" }) {
		const syms::Symbol *s = syms::find(symbols, f);
		if (!s) {
			*err = std::string(f) + " not in " + path;
			return false;
		}
		stack.push_back(*s);
	}
	char ident[EI_NIDENT] = {};
	std::ifstream(path, std::ios::binary).read(ident, sizeof(ident));
	compat = ident[EI_CLASS] == ELFCLASS32;
	/*
	 * The executable segment, not the symbols' extent: _init and _fini
	 * have no size, and a sample in _fini (the exit of a static program)
	 * is in the image.
	 */
	for (const syms::Segment &seg : syms::segments(path, err)) {
		if (seg.type == PT_LOAD && (seg.flags & PF_X)) {
			lo = seg.vaddr;
			hi = seg.vaddr + seg.memsz;
			return true;
		}
	}
	if (err->empty())
		*err = path + ": no executable PT_LOAD segment";
	return false;
}

bool Image::in_leaf(const std::vector<uint64_t> &ips) const
{
	return !ips.empty() && stack[0].contains(ips[0]);
}

bool Image::full(const std::vector<uint64_t> &ips) const
{
	if (ips.size() < stack.size())
		return false;
	for (size_t i = 0; i < stack.size(); i++)
		if (!stack[i].contains(ips[i]))
			return false;
	return true;
}

bool in_kernel_function(const perf::Sample &s, const std::string &fn)
{
	static work::Kallsyms ks; /* loaded once: slow under TCG */
	if (ks.empty())
		ks.load();
	for (uint64_t ip : perf::split_callchain(s.callchain).kernel)
		if (ks.name(ip).rfind(fn + "+", 0) == 0)
			return true;
	return false;
}

namespace {

/* At least this many reads sampled */
constexpr int kMinReads = 20;

struct StackCheck {
	int chains = 0, in_leaf = 0, full = 0, above_4g = 0, outside = 0;
	int reads = 0, reads_full = 0;
	std::string first_bad, first_outside;
};

/* chain: user frames, innermost first (ip, then return addresses). */
void check_chain(const std::vector<uint64_t> &ips, const Image &img,
		 bool compat, bool read, StackCheck *c)
{
	c->chains++;
	for (uint64_t ip : ips)
		if (compat && ip >= (1ULL << 32)) {
			c->above_4g++;
			break;
		}
	if (!img.leaf_ok(ips) && !c->outside++)
		c->first_outside = session::hex_chain(ips);
	c->in_leaf += img.in_leaf(ips);
	c->full += img.full(ips);
	if (!read)
		return;
	c->reads++;
	if (img.full(ips))
		c->reads_full++;
	else if (c->first_bad.empty())
		c->first_bad = session::hex_chain(ips);
}

/*
 * One round: run the helper for 150 ms (~600 chains under TCG; times the
 * slowdown, as the period is) with a new session, add its chains to c
 * and EXPECT what must hold in every round: the records all of this
 * child's, no orphan, duplicate, unmatched or kernel ip among them.
 * *skipped when the helper cannot exec.
 */
void one_round(const std::string &path, const Image &img, bool compat,
	   bool deferred, const std::function<int(pid_t)> &before_exec,
	   const session::Options *event, StackCheck *c, bool *skipped)
{
	work::Child child;
	session::Session s;
	std::string err;
	session::Options o = event ? *event : session::Options();
	o.pages = 256;
	o.defer_callchain = o.defer_output = deferred;
	const std::string ms = std::to_string(lround(150 * work::slowdown()));
	int st = session::record_program(&s, &child, { path, ms }, o, 0,
					 before_exec);
	ASSERT_GE(st, 0) << path << ": " << strerror(-st);
	*skipped = session::exec_failed(st);
	if (*skipped)
		return;
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		<< path << " wait status 0x" << std::hex << st;

	perf::CookieMatcher m;
	ASSERT_TRUE(s.match(&m, &err)) << err;
	perf::MatchResult r = m.match();
	std::vector<perf::Sample> samples = s.samples(0, &err);
	if (deferred) {
		/* The entries that are reads, by their samples' kernel part */
		std::set<uint64_t> reads;
		for (const perf::Sample &sm : samples) {
			perf::SplitChain sc = perf::split_callchain(sm.callchain);
			if (sc.deferred && in_read(sm))
				reads.insert(sc.cookie);
		}
		for (const perf::DeferredCallchain &d : s.deferred(0, &err)) {
			EXPECT_EQ(d.sid.tid, (uint32_t)child.pid());
			check_chain(d.ips, img, compat, reads.count(d.cookie),
				    c);
		}
	} else {
		for (const perf::Sample &sm : samples) {
			perf::SplitChain sc = perf::split_callchain(sm.callchain);
			if (sc.has_user_ctx)
				check_chain(sc.user, img, compat, in_read(sm),
					    c);
		}
	}
	ASSERT_TRUE(err.empty()) << err;
	if (!deferred)
		return;
	printf("# %s\n", r.describe().c_str());
	EXPECT_TRUE(r.orphans.empty() && r.duplicates.empty() &&
		    r.with_kernel_ip.empty() && !r.bad_marker_samples)
		<< r.describe();
	/* The helper exits: even its last entry gets its record */
	EXPECT_TRUE(r.unmatched.empty()) << r.describe();
}

} // namespace

void check(const std::string &name, bool compat, bool deferred,
	   const std::function<int(pid_t)> &before_exec, int outside,
	   const session::Options *event)
{
	SKIP_UNLESS_HELPER(name);
	std::string path = work::helper_path(name), err;
	Image img;
	ASSERT_TRUE(img.load(path, &err)) << path << ": " << err;

	/*
	 * How many samples land in the reads varies with the host (the
	 * slow host's 150 ms gave 12 to 17) and the event (pmu_test): run
	 * the helper again, a new child each round, until kMinReads reads
	 * were sampled. A round takes about 1 s on the reference guest.
	 */
	StackCheck c;
	work::Deadline deadline(10);
	int rounds = 0;
	do {
		bool skipped = false;
		rounds++;
		ASSERT_NO_FATAL_FAILURE(one_round(path, img, compat, deferred,
						  before_exec, event, &c,
						  &skipped));
		if (skipped)
			GTEST_SKIP() << "cannot exec " << path
				     << " (no IA32 emulation?)";
	} while (c.reads < kMinReads && !deadline.passed());
	printf("# %s, %s chains: %d chains, %d starting in cs_leaf, %d with "
	       "cs_leaf, cs_middle, cs_outer, main in order, %d with an "
	       "address above 4 GiB; %d of reads, %d of them with the known "
	       "stack; %d starting outside %s; %d round(s) of 150 ms, %s\n",
	       name.c_str(), deferred ? "deferred" : "in-place", c.chains,
	       c.in_leaf, c.full, c.above_4g, c.reads, c.reads_full,
	       c.outside, name.c_str(), rounds, deadline.describe().c_str());
	if (!c.first_bad.empty())
		printf("# first read's chain out of order: %s\n",
		       c.first_bad.c_str());
	if (!c.first_outside.empty())
		printf("# first chain starting outside %s: %s\n", name.c_str(),
		       c.first_outside.c_str());
	EXPECT_GE(c.reads, kMinReads)
		<< "too few chains of cs_leaf's reads (ksys_read in the "
		   "sample's kernel chain) from " << path << " in " << rounds
		<< " round(s), " << deadline.describe();
	/* From a read, the walk starts in cs_leaf's frame: nothing to skip */
	EXPECT_EQ(c.reads_full, c.reads)
		<< "reads whose chain is not [cs_leaf, cs_middle, cs_outer, "
		   "main, ...]; first: " << c.first_bad;
	/*
	 * Chains starting outside the helper's sized symbols are printed,
	 * not judged: the binary's code past them (PLT and IFUNC stubs of a
	 * static build) and the uretprobe trampoline's page are legitimate
	 * leaves (a few of hundreds of chains, under a uretprobe more). What
	 * is judged is above: every read's chain is the known stack.
	 */
	(void)outside;
	EXPECT_EQ(c.above_4g, 0) << "addresses above 4 GiB in a compat chain";
}

} // namespace known_chain
