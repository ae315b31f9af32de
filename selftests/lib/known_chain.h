/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sample a helper program whose user call stack is known
 * (helpers/compat_stack.c: main -> cs_outer -> cs_middle -> cs_leaf, the
 * leaf in a read loop) and check that its user chains, deferred or in
 * place, hold those functions' return addresses in order.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "perf_event.h"
#include "session.h"
#include "symbols.h"

namespace known_chain {

/* A build of helpers/compat_stack.c: its functions and the known stack. */
struct Image {
	std::vector<syms::Symbol> symbols;
	std::vector<syms::Symbol> stack; /* cs_leaf, cs_middle, cs_outer, main */
	uint64_t lo = 0, hi = 0;	 /* its executable segment */
	/*
	 * An i386 build: its libc enters the kernel through the vDSO
	 * (__kernel_vsyscall), so a chain's leaf may be there.
	 */
	bool compat = false;
	/* False, with err set, when path lacks symbols or a known function. */
	bool load(const std::string &path, std::string *err);
	bool holds(uint64_t ip) const { return ip >= lo && ip < hi; }
	/* ips may be a chain of this image's: its leaf is here (or vDSO) */
	bool leaf_ok(const std::vector<uint64_t> &ips) const
	{
		return !ips.empty() && (compat || holds(ips[0]));
	}
	/* ips starts in cs_leaf. */
	bool in_leaf(const std::vector<uint64_t> &ips) const;
	/* ips starts with cs_leaf, cs_middle, cs_outer, main, in order. */
	bool full(const std::vector<uint64_t> &ips) const;
};

/* A frame of the sample's kernel chain is in kernel function fn. */
bool in_kernel_function(const perf::Sample &s, const std::string &fn);

/*
 * The sample was taken in read(2) (ksys_read in its kernel chain): in
 * these helpers, one of cs_leaf's reads, whose user stack is the known
 * one from the leaf to main.
 */
inline bool in_read(const perf::Sample &s)
{
	return in_kernel_function(s, "ksys_read");
}

/*
 * Run helper `name` (a program in /selftests; compat: its 32-bit build,
 * where no address may be above 4 GiB) for 150 ms under a per-task
 * cpu-clock event, with deferred callchains or in-place ones, in rounds
 * (a new child and session each) until 20 of its reads were sampled or a
 * work::Deadline of 30 s passes; print what its chains held and how long
 * it waited, and EXPECT 20 reads, every read's chain to hold cs_leaf,
 * cs_middle, cs_outer and main in order, and every round's records to
 * match its samples. Chains starting outside the helper are printed, not
 * judged (`outside` is unused). before_exec, if given, is called with
 * each round's helper pid before it execs (to open more events on it); a
 * negative errno from it fails the test. event, if given, is the sampling event
 * instead of cpu-clock (its type, config and period). Skips if the helper
 * cannot run.
 */
void check(const std::string &name, bool compat, bool deferred,
	   const std::function<int(pid_t)> &before_exec = nullptr,
	   int outside = 0, const session::Options *event = nullptr);

} // namespace known_chain
