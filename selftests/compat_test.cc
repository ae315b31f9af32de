// SPDX-License-Identifier: GPL-2.0
/*
 * ia32 compat tasks (doc/kernel.md, "The user stack walk"): a 32-bit static
 * helper with a known frame-pointer stack (main -> cs_outer -> cs_middle ->
 * cs_leaf, the leaf reading /dev/zero through int $0x80 for 150 ms) is sampled
 * from this 64-bit test through a per-task event opened on the forked child and
 * enabled on exec. Its deferred chains must hold its own 32-bit return
 * addresses, in order, all below 4 GiB. The same check on the 64-bit build of
 * the helper, and on the classic in-place chains, runs for comparison.
 */
#include <gtest/gtest.h>

#include "lib/features.h"
#include "lib/known_chain.h"
#include "lib/test_class.h"

namespace {

TEST(Compat, DeferredChainHolds32BitReturnAddresses)
{
	EXTENSION("deferred chains of ia32 compat tasks: the ABI does not "
		  "promise them, upstream's support is not verified here");
	SKIP_UNLESS_DEFER_CALLCHAIN();
	known_chain::check("compat_stack_32", true, true);
}

TEST(Compat, DeferredChainOfThe64BitBuild)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	known_chain::check("compat_stack", false, true);
}

TEST(Compat, InPlaceChainHolds32BitReturnAddresses)
{
	known_chain::check("compat_stack_32", true, false);
}

} // namespace
