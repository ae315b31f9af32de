/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the running kernel supports, probed the way perf tools do: by
 * asking perf_event_open() and reading the errno.
 */
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace features {

/*
 * 0 when perf_event_open() accepts a sampling cpu-clock event on this task
 * with the given attr flag bit set, else -errno.
 */
int try_attr_bit(int bit);

/* True when the kernel accepts defer_callchain; why says what it answered. */
bool defer_callchain(std::string *why);

} // namespace features

/* Skip the current test, with the reason, on a kernel without the feature. */
#define SKIP_UNLESS_DEFER_CALLCHAIN()                                       \
	do {                                                                \
		std::string why_;                                           \
		if (!features::defer_callchain(&why_))                      \
			GTEST_SKIP() << "kernel lacks defer_callchain: " << why_; \
	} while (0)
