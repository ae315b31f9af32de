/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sample a helper program whose user call stack is known
 * (helpers/compat_stack.c: main -> cs_outer -> cs_middle -> cs_leaf, the
 * leaf in a read loop) and check that its user chains, deferred or in
 * place, hold those functions' return addresses in order.
 */
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace known_chain {

/*
 * Run helper `name` (a program in /selftests; compat: its 32-bit build,
 * where no address may be above 4 GiB) for 150 ms under a per-task
 * cpu-clock event, with deferred callchains or in-place ones, print what
 * its chains held and EXPECT at least 90% of the chains starting in
 * cs_leaf to continue with cs_middle, cs_outer and main. before_exec, if
 * given, is called with the helper's pid before it execs (to open more
 * events on it); a negative errno from it fails the test. Skips if the
 * helper cannot run.
 */
void check(const std::string &name, bool compat, bool deferred,
	   const std::function<int(pid_t)> &before_exec = nullptr);

} // namespace known_chain
