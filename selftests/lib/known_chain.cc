// SPDX-License-Identifier: GPL-2.0
#include "known_chain.h"

#include <gtest/gtest.h>
#include <string.h>
#include <sys/wait.h>

#include <vector>

#include "cookie_match.h"
#include "features.h"
#include "session.h"
#include "symbols.h"
#include "workload.h"

namespace known_chain {

namespace {

struct StackCheck {
	int chains = 0, in_leaf = 0, full = 0, above_4g = 0;
	std::string first_bad;
};

/* chain: user frames, innermost first (ip, then return addresses). */
void check_chain(const std::vector<uint64_t> &ips,
		 const std::vector<const syms::Symbol *> &want, bool compat,
		 StackCheck *c)
{
	c->chains++;
	for (uint64_t ip : ips)
		if (compat && ip >= (1ULL << 32)) {
			c->above_4g++;
			break;
		}
	if (ips.empty() || !want[0]->contains(ips[0]))
		return;
	c->in_leaf++;
	bool ok = ips.size() >= want.size();
	for (size_t i = 0; ok && i < want.size(); i++)
		ok = want[i]->contains(ips[i]);
	if (ok)
		c->full++;
	else if (c->first_bad.empty())
		c->first_bad = session::hex_chain(ips);
}

} // namespace

void check(const std::string &name, bool compat, bool deferred,
	   const std::function<int(pid_t)> &before_exec)
{
	SKIP_UNLESS_HELPER(name);
	std::string path = work::helper_path(name), err;
	std::vector<syms::Symbol> symbols = syms::load(path, &err);
	ASSERT_FALSE(symbols.empty()) << path << ": " << err;
	std::vector<const syms::Symbol *> want;
	for (const char *f : { "cs_leaf", "cs_middle", "cs_outer", "main" }) {
		want.push_back(syms::find(symbols, f));
		ASSERT_NE(want.back(), nullptr) << f << " not in " << path;
	}

	work::Child child;
	session::Session s;
	session::Options o;
	o.pages = 256;
	o.defer_callchain = o.defer_output = deferred;
	/* 150 ms: ~600 chains under TCG, where 5 are needed. */
	int st = session::record_program(&s, &child, { path, "150" }, o, 0,
					 before_exec);
	ASSERT_GE(st, 0) << path << ": " << strerror(-st);
	if (session::exec_failed(st))
		GTEST_SKIP() << "cannot exec " << path
			     << " (no IA32 emulation?)";
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		<< path << " wait status 0x" << std::hex << st;

	StackCheck c;
	perf::CookieMatcher m;
	ASSERT_TRUE(s.match(&m, &err)) << err;
	perf::MatchResult r = m.match();
	if (deferred) {
		for (const perf::DeferredCallchain &d : s.deferred(0, &err)) {
			EXPECT_EQ(d.sid.tid, (uint32_t)child.pid());
			check_chain(d.ips, want, compat, &c);
		}
	} else {
		for (const perf::Sample &sm : s.samples(0, &err)) {
			perf::SplitChain sc = perf::split_callchain(sm.callchain);
			if (sc.has_user_ctx)
				check_chain(sc.user, want, compat, &c);
		}
	}
	ASSERT_TRUE(err.empty()) << err;
	printf("# %s, %s chains: %d chains, %d starting in cs_leaf, %d with "
	       "cs_leaf, cs_middle, cs_outer, main in order, %d with an "
	       "address above 4 GiB\n", name.c_str(),
	       deferred ? "deferred" : "in-place", c.chains, c.in_leaf, c.full,
	       c.above_4g);
	if (deferred)
		printf("# %s\n", r.describe().c_str());
	if (!c.first_bad.empty())
		printf("# first leaf chain out of order: %s\n",
		       c.first_bad.c_str());
	EXPECT_GE(c.full, 5) << "expected chains [cs_leaf, cs_middle, "
				"cs_outer, main, ...] from " << path;
	EXPECT_GE(c.full * 10, c.in_leaf * 9)
		<< "more than 10% of the chains starting in cs_leaf lack the "
		   "known callers; first: " << c.first_bad;
	EXPECT_EQ(c.above_4g, 0) << "addresses above 4 GiB in a compat chain";
	if (deferred) {
		EXPECT_TRUE(r.orphans.empty() && r.duplicates.empty() &&
			    r.with_kernel_ip.empty() && !r.bad_marker_samples)
			<< r.describe();
		EXPECT_LE(r.unmatched.size(), 1u) << r.describe();
	}
}

} // namespace known_chain
