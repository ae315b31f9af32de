/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the running kernel supports, probed the way perf tools do: by
 * asking perf_event_open() and reading the errno.
 */
#pragma once

#include <errno.h>
#include <gtest/gtest.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "workload.h"

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

/*
 * Skip the current test, with the reason, when path (a helper program,
 * /bin/perf) is not there to run: what says what it is.
 */
#define SKIP_UNLESS_EXECUTABLE(path, what)                                  \
	do {                                                                \
		std::string path_ = (path);                                 \
		if (access(path_.c_str(), X_OK) != 0)                       \
			GTEST_SKIP() << (what) << " " << path_                 \
				     << " missing: " << strerror(errno);    \
	} while (0)

/* The same for helper program name, installed next to the test. */
#define SKIP_UNLESS_HELPER(name)                                            \
	SKIP_UNLESS_EXECUTABLE(work::helper_path(name), "helper program")
