/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Conformance or extension, and skips that a feature kernel may have.
 *
 * A test is a conformance test unless it says otherwise: it checks what
 * upstream's ABI promises (doc/abi.md), with receivers set up the way
 * perf sets them up, and must pass on any kernel with the feature (ours,
 * upstream 6.19+/7.x). A test that checks where the series goes further
 * (doc/kernel.md, "Differences from upstream Linux") calls, as its
 * first statement,
 *
 *	EXTENSION("one-line why");
 *
 * and lib/ktap_main.cc prints "# extension: <why>" right before its
 * "ok"/"not ok" line, and counts it apart: every program ends with
 * "# conformance P/N, extensions Q/M" (passed/run, skips in neither).
 *
 * On a kernel built with the series the host fails every skip (the
 * feature is expected) except those whose reason starts with
 * "not applicable: ": SKIP_NOT_APPLICABLE(reason) is for tests that can
 * only run on a kernel without the feature, or that need hardware the
 * guest never has (a hardware PMU). Every other skip is GTEST_SKIP() with
 * a reason saying what is missing.
 */
#pragma once

#include <gtest/gtest.h>

namespace test_class {

/* The test property EXTENSION() records and the KTAP printer reads. */
constexpr const char *kExtensionKey = "extension";
constexpr const char *kNotApplicable = "not applicable: ";

} // namespace test_class

#define EXTENSION(why)                                                      \
	::testing::Test::RecordProperty(test_class::kExtensionKey, (why))

#define SKIP_NOT_APPLICABLE(reason)                                         \
	GTEST_SKIP() << test_class::kNotApplicable << reason

/*
 * What x86 alone has: ia32 compat tasks (the helpers' -m32 builds, which
 * only an x86 build has), the legacy vsyscall page. Elsewhere such a test
 * skips as not applicable, saying so.
 */
#ifdef __x86_64__
#define SKIP_UNLESS_X86(what) do { } while (0)
#else
#define SKIP_UNLESS_X86(what) SKIP_NOT_APPLICABLE("x86-only: " << what)
#endif
#define SKIP_UNLESS_IA32()                                                  \
	SKIP_UNLESS_X86("ia32 compat tasks (helpers built with gcc -m32)")
