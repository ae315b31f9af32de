// SPDX-License-Identifier: GPL-2.0
#include "features.h"

#include <string.h>
#include <unistd.h>

#include "perf_abi.h"
#include "perf_event.h"

namespace features {

int try_attr_bit(int bit)
{
	perf_event_attr attr{};
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 1000000;
	attr.sample_type = PERF_SAMPLE_CALLCHAIN;
	attr.disabled = 1;
	attr.exclude_kernel = 1;
	perf_abi::set_attr_bit(&attr, bit);
	int fd = perf::open_event(&attr, 0, -1);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

bool defer_callchain(std::string *why)
{
	int r = try_attr_bit(perf_abi::kDeferCallchainBit);
	if (r == 0) {
		*why = "perf_event_open accepts attr bit 38";
		return true;
	}
	*why = std::string("perf_event_open with attr bit 38 fails: ") +
	       strerror(-r);
	return false;
}

} // namespace features
