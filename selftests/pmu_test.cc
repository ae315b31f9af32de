// SPDX-License-Identifier: GPL-2.0
/*
 * Hardware PMU samples (doc/arm64.md). On arm64 perf's PMU interrupt is a
 * pseudo-NMI where the GICv3 masks interrupts by priority
 * (irqchip.gicv3_pseudo_nmi=1, which every arm64 guest of the harness
 * boots with), so a cycles event with defer_callchain asks for its
 * deferred user stacks from NMI context: the path of `perf record -e
 * cycles --call-graph fp,defer` on such a machine. QEMU emulates the
 * arm64 PMU under TCG; it has none for x86, where these tests are not
 * applicable.
 *
 * The truth the chains are held to is the helper's own stack
 * (helpers/compat_stack.c, 64-bit build: main -> cs_outer -> cs_middle ->
 * cs_leaf, reading /dev/zero for 150 ms): every sample taken in one of its
 * reads must have exactly those return addresses, deferred or in place.
 */
#include <gtest/gtest.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/klog.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "lib/features.h"
#include "lib/known_chain.h"
#include "lib/perf_event.h"
#include "lib/session.h"
#include "lib/test_class.h"

namespace {

/* The kernel log's "hw perfevents:" line (arm's PMU driver), or "". */
[[maybe_unused]] std::string pmu_boot_line()
{
	int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
	if (size <= 0)
		return "";
	std::vector<char> buf(size);
	int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf.data(), size);
	if (n <= 0)
		return "";
	std::string log(buf.data(), n);
	size_t at = log.find("hw perfevents:");
	if (at == std::string::npos)
		return "";
	return log.substr(at, log.find('\n', at) - at);
}

/*
 * Cycles, a sample per million: 1 kHz under TCG, whose cycle counter
 * runs at 1 GHz of the guest's clock. The guest's init keeps perf from
 * lowering its sample rate, so the rate is what the test asks for: at
 * one per 100,000 the debug kernel spent the guest in the NMI handler
 * (one 150 ms round took 45 s). How many samples land in the helper's
 * reads varies a lot under TCG; known_chain::check() runs rounds until
 * it has the 20 it judges (doc/arm64.md).
 */
session::Options cycles()
{
	session::Options o;
	o.type = PERF_TYPE_HARDWARE;
	o.config = PERF_COUNT_HW_CPU_CYCLES;
	o.period = 1000000;
	return o;
}

/*
 * On arm64 the PMU and its NMIs are expected: the harness's guest has
 * them (ci/guest/config/arm64.config, the boot line), and their absence
 * fails. Elsewhere (x86 under TCG: no PMU) the test does not apply.
 */
#ifdef __aarch64__
#define REQUIRE_PMU_NMIS()                                                  \
	do {                                                               \
		std::string line_ = pmu_boot_line();                       \
		printf("# %s\n", line_.c_str());                           \
		ASSERT_NE(line_.find("using NMIs"), std::string::npos)     \
			<< "the PMU interrupt is not an NMI (kernel log: '" \
			<< line_ << "'): CONFIG_ARM64_PSEUDO_NMI and "      \
			<< "irqchip.gicv3_pseudo_nmi=1 expected";          \
	} while (0)
#else
#define REQUIRE_PMU_NMIS()                                                  \
	SKIP_NOT_APPLICABLE("arm64's PMU in pseudo-NMIs; QEMU emulates "    \
			    "no PMU for x86 under TCG")
#endif

constexpr const char *kWhy =
	"arm64: PMU samples in pseudo-NMIs request deferred user stacks "
	"(upstream defers on x86-64 only)";

TEST(Pmu, CyclesSamplesInNmisGetTheKnownStackDeferred)
{
	EXTENSION(kWhy);
	REQUIRE_PMU_NMIS();
	SKIP_UNLESS_DEFER_CALLCHAIN();
	session::Options o = cycles();
	known_chain::check("compat_stack", false, true, nullptr, 0, &o);
}

TEST(Pmu, CyclesSamplesInNmisGetTheKnownStackInPlace)
{
	EXTENSION(kWhy);
	REQUIRE_PMU_NMIS();
	session::Options o = cycles();
	known_chain::check("compat_stack", false, false, nullptr, 0, &o);
}

} // namespace
