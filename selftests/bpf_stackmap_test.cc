// SPDX-License-Identifier: GPL-2.0
/*
 * get_perf_callchain()'s other caller: the BPF stack trace map. The series
 * changes how get_perf_callchain() decides whether to walk the user stack
 * (by the task, not by the registers), so a BPF program attached to a
 * cpu-clock event on this thread must still get, through
 * bpf_get_stackid(), the same user stacks (this test's own recursion) and
 * kernel stacks as on the unpatched kernel. Not a feature test: it runs,
 * and must pass, on every kernel, patched or not.
 *
 * The program is hand-assembled (no libbpf in the guest):
 *	r6 = r1
 *	bpf_get_stackid(r6, map, BPF_F_USER_STACK)
 *	bpf_get_stackid(r6, map, 0)
 *	return 0
 * and the event has no PERF_SAMPLE_CALLCHAIN, so the helper calls
 * get_perf_callchain() itself instead of reusing the sample's chain.
 */
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/bpf.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sstream>
#include <utility>
#include <vector>

#include "lib/perf_abi.h"
#include "lib/perf_event.h"
#include "lib/symbols.h"
#include "lib/workload.h"

namespace {

constexpr int kDepth = 6;
constexpr int kMaxDepth = 127; /* sysctl_perf_event_max_stack's default */

long sys_bpf(int cmd, bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	bpf_insn i{};
	i.code = code;
	i.dst_reg = dst;
	i.src_reg = src;
	i.off = off;
	i.imm = imm;
	return i;
}

std::vector<bpf_insn> program(int map_fd)
{
	const uint8_t mov_reg = BPF_ALU64 | BPF_MOV | BPF_X;
	const uint8_t mov_imm = BPF_ALU64 | BPF_MOV | BPF_K;
	const uint8_t call = BPF_JMP | BPF_CALL;
	std::vector<bpf_insn> p;
	p.push_back(insn(mov_reg, BPF_REG_6, BPF_REG_1, 0, 0));
	for (int32_t flags : { (int32_t)BPF_F_USER_STACK, 0 }) {
		p.push_back(insn(mov_reg, BPF_REG_1, BPF_REG_6, 0, 0));
		/* 64-bit immediate load of the map: two instructions. */
		p.push_back(insn(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_2,
				 BPF_PSEUDO_MAP_FD, 0, map_fd));
		p.push_back(insn(0, 0, 0, 0, 0));
		p.push_back(insn(mov_imm, BPF_REG_3, 0, 0, flags));
		p.push_back(insn(call, 0, 0, 0, BPF_FUNC_get_stackid));
	}
	p.push_back(insn(mov_imm, BPF_REG_0, 0, 0, 0));
	p.push_back(insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
	return p;
}

/* Every stack stored in the map, as its non-zero entries. */
std::vector<std::vector<uint64_t>> dump_stacks(int map_fd)
{
	std::vector<std::vector<uint64_t>> out;
	uint32_t key = 0, next;
	bool first = true;
	for (;;) {
		bpf_attr a{};
		a.map_fd = map_fd;
		a.key = first ? 0 : (uint64_t)(uintptr_t)&key;
		a.next_key = (uint64_t)(uintptr_t)&next;
		if (sys_bpf(BPF_MAP_GET_NEXT_KEY, &a))
			break;
		first = false;
		key = next;
		std::vector<uint64_t> ips(kMaxDepth);
		bpf_attr l{};
		l.map_fd = map_fd;
		l.key = (uint64_t)(uintptr_t)&key;
		l.value = (uint64_t)(uintptr_t)ips.data();
		if (sys_bpf(BPF_MAP_LOOKUP_ELEM, &l))
			continue;
		while (!ips.empty() && ips.back() == 0)
			ips.pop_back();
		out.push_back(ips);
	}
	return out;
}

/* The [vdso] mapping of this process, or {0, 0}. */
std::pair<uint64_t, uint64_t> vdso_range()
{
	std::istringstream maps(work::read_file("/proc/self/maps"));
	std::string line;
	while (std::getline(maps, line)) {
		unsigned long lo, hi;
		if (line.find("[vdso]") != std::string::npos &&
		    sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2)
			return { lo, hi };
	}
	return { 0, 0 };
}

/* "[n: fn+0x12 ...]": a user stack with this program's symbols. */
std::string symbolic(const std::vector<uint64_t> &ips,
		     const std::vector<syms::Symbol> &symbols)
{
	char buf[32];
	std::string out = "[" + std::to_string(ips.size()) + ":";
	for (uint64_t ip : ips) {
		const syms::Symbol *f = syms::lookup(symbols, ip);
		if (f)
			snprintf(buf, sizeof(buf), "+%#llx",
				 (unsigned long long)(ip - f->start));
		else
			snprintf(buf, sizeof(buf), "%#llx",
				 (unsigned long long)ip);
		out += " " + (f ? f->name : "") + buf;
	}
	return out + "]";
}

TEST(BpfStackmap, UserAndKernelStacksFromGetStackid)
{
	std::string err;
	auto symbols = syms::load("/proc/self/exe", &err);
	ASSERT_FALSE(symbols.empty()) << err;
	const syms::Symbol *rec = syms::find(symbols, "work_recurse_reading");
	ASSERT_NE(rec, nullptr) << "work_recurse_reading not in the symbol table";

	bpf_attr m{};
	m.map_type = BPF_MAP_TYPE_STACK_TRACE;
	m.key_size = sizeof(uint32_t);
	m.value_size = kMaxDepth * sizeof(uint64_t);
	m.max_entries = 1024;
	int map_fd = sys_bpf(BPF_MAP_CREATE, &m);
	if (map_fd < 0 && (errno == ENOSYS || errno == EPERM))
		GTEST_SKIP() << "no BPF here (CONFIG_BPF_SYSCALL, root): "
			     << strerror(errno);
	ASSERT_GE(map_fd, 0) << "BPF_MAP_CREATE(stack trace): "
			     << strerror(errno);

	std::vector<bpf_insn> prog = program(map_fd);
	static char log[64 << 10];
	bpf_attr p{};
	p.prog_type = BPF_PROG_TYPE_PERF_EVENT;
	p.insns = (uint64_t)(uintptr_t)prog.data();
	p.insn_cnt = prog.size();
	p.license = (uint64_t)(uintptr_t)"GPL";
	p.log_buf = (uint64_t)(uintptr_t)log;
	p.log_size = sizeof(log);
	p.log_level = 1;
	int prog_fd = sys_bpf(BPF_PROG_LOAD, &p);
	/* An unknown program type is refused before the verifier runs. */
	if (prog_fd < 0 && errno == EINVAL && !log[0])
		GTEST_SKIP() << "no perf_event BPF programs in this kernel "
				"(CONFIG_BPF_EVENTS)";
	ASSERT_GE(prog_fd, 0) << "BPF_PROG_LOAD(perf_event program): "
			      << strerror(errno)
			      << " (needs CONFIG_BPF_EVENTS); verifier: " << log;

	perf_event_attr attr{};
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 200000; /* ns */
	attr.sample_type = PERF_SAMPLE_IP;
	attr.disabled = 1;
	perf::Event ev;
	int r = ev.open(attr, 0, -1, 16);
	ASSERT_EQ(r, 0) << "perf_event_open(cpu-clock): " << strerror(-r);
	ASSERT_EQ(ioctl(ev.fd(), PERF_EVENT_IOC_SET_BPF, prog_fd), 0)
		<< "PERF_EVENT_IOC_SET_BPF: " << strerror(errno);

	int fd = open("/dev/zero", O_RDONLY);
	ASSERT_GE(fd, 0) << "open /dev/zero: " << strerror(errno);
	/*
	 * Rounds of 0.3 s until the map holds a kernel stack and a user
	 * stack of the recursion (the first round, on the reference guest).
	 */
	auto has_both = [&] {
		bool k = false, u = false;
		for (const auto &ips : dump_stacks(map_fd)) {
			k |= !ips.empty() && perf_abi::is_kernel_address(ips[0]);
			u |= syms::longest_run(ips, *rec) >= kDepth;
		}
		return k && u;
	};
	work::Deadline deadline(10);
	int rounds = 0;
	do {
		ev.enable();
		int reads = work::work_recurse_reading(kDepth, fd,
						       work::now_s() + 0.3);
		ev.disable();
		ASSERT_GT(reads, 0);
		rounds++;
	} while (!has_both() && !deadline.passed());
	close(fd);

	/*
	 * Everything this thread runs while sampled is called from this
	 * test's body, in frame-pointer code (this program's, or glibc's
	 * system call stubs and clock_gettime(), which leave the frame
	 * pointer alone) or the vDSO: each user stack must reach the test
	 * body through this static binary's text (from its first function
	 * to its last) and the vDSO. Past the test body the walk is in
	 * GoogleTest's and glibc's code without frame pointers: not judged.
	 */
	const syms::Symbol *body = nullptr;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (const syms::Symbol &f : symbols) {
		lo = std::min(lo, f.start);
		hi = std::max(hi, f.start + f.size);
		if (f.name.find("UserAndKernelStacksFromGetStackid_Test8TestBody") !=
		    std::string::npos)
			body = &f;
	}
	ASSERT_NE(body, nullptr) << "the test body is not in the symbol table";
	/* What calls the test body: GoogleTest's exception wrapper. */
	const syms::Symbol *caller = nullptr;
	for (const syms::Symbol &f : symbols)
		if (f.name.find("HandleExceptionsInMethodIfSupported") !=
			    std::string::npos &&
		    f.name.find("INS_4TestEvE") != std::string::npos)
			caller = &f;
	/*
	 * A leaf in a function's first instructions, before its frame
	 * record is made (x86-64: endbr64, push %rbp, mov %rsp,%rbp; arm64:
	 * paciasp, stp x29, x30, mov x29, sp), walks on from the caller's
	 * frame record: the frame after it is the caller's caller.
	 */
	const uint64_t kPrologue = 12;
	auto in_prologue = [&](uint64_t ip) {
		for (const syms::Symbol &f : symbols)
			if (f.contains(ip))
				return ip - f.start < kPrologue;
		return false;
	};
	auto vdso = vdso_range();
	auto ours = [&](uint64_t ip) {
		return (ip >= lo && ip < hi) ||
		       (ip >= vdso.first && ip < vdso.second);
	};
	int user = 0, kernel = 0, mixed = 0, with_recursion = 0, deepest = 0;
	int foreign = 0, broken_run = 0;
	std::vector<std::string> without; /* user stacks without it */
	auto stacks = dump_stacks(map_fd);
	for (const auto &ips : stacks) {
		if (ips.empty())
			continue;
		int k = 0;
		for (uint64_t ip : ips)
			k += perf_abi::is_kernel_address(ip);
		if (k == (int)ips.size()) {
			kernel++;
			continue;
		}
		if (k) {
			mixed++;
			continue;
		}
		user++;
		int run = syms::longest_run(ips, *rec);
		deepest = std::max(deepest, run);
		with_recursion += run >= kDepth;
		if (run < kDepth)
			without.push_back(symbolic(ips, symbols));
		/*
		 * The leaf may be anywhere the thread runs, the test body
		 * itself included; from its caller to the test body every
		 * frame is in the text or the vDSO.
		 */
		size_t n = body->contains(ips[0]) ? 0 : 1;
		while (n && n < ips.size() && ours(ips[n]) &&
		       !body->contains(ips[n]))
			n++;
		/* The body itself skipped: a leaf called from it, in its
		 * prologue, then straight to the body's caller. */
		bool body_skipped = ips.size() > 1 && in_prologue(ips[0]) &&
				    caller && caller->contains(ips[1]);
		if (body_skipped)
			n = 1;
		else if (n == ips.size() || !body->contains(ips[n])) {
			foreign++;
			ADD_FAILURE() << "user stack not reaching the test body "
					 "through this program's text and the "
					 "vDSO: " << symbolic(ips, symbols);
		}
		/*
		 * kDepth calls of work_recurse_reading by itself and one of
		 * work_read_until: at most kDepth + 1 frames in it, in one
		 * run, on any stack of this thread.
		 */
		std::vector<uint64_t> judged(ips.begin(), ips.begin() + n);
		int in_rec = 0;
		for (uint64_t ip : judged)
			in_rec += rec->contains(ip);
		if (in_rec != syms::longest_run(judged, *rec) ||
		    in_rec > kDepth + 1) {
			broken_run++;
			ADD_FAILURE() << "user stack whose frames of "
					 "work_recurse_reading are not one run "
					 "of at most " << kDepth + 1 << ": "
				      << symbolic(ips, symbols);
		}
	}
	printf("# stacks in the map %zu: user %d (with >= %d frames of "
	       "work_recurse_reading %d, deepest run %d; not reaching the test "
	       "body through the text and the vDSO %d, with a broken run "
	       "%d), kernel %d, mixed %d; %d round(s) of 0.3 s, %s\n",
	       stacks.size(), user, kDepth, with_recursion, deepest, foreign,
	       broken_run, kernel, mixed, rounds, deadline.describe().c_str());
	for (const std::string &w : without)
		printf("# without the recursion: %s\n", w.c_str());
	EXPECT_GT(kernel, 0) << "no kernel stack from bpf_get_stackid(0)";
	EXPECT_GT(with_recursion, 0)
		<< "no user stack from bpf_get_stackid(BPF_F_USER_STACK) "
		   "holding " << kDepth << " return addresses in work_recurse_reading";
	/*
	 * How many distinct stacks lack the recursion is not judged: the
	 * samples that land in the enable and disable ioctls, the calls
	 * around the recursion and its descent and ascent grow with the
	 * host's slowness (6 of 10 on a host 2.5x slower). What is judged
	 * is that each is a real stack of this thread (above).
	 */
	EXPECT_EQ(mixed, 0) << "stacks mixing user and kernel addresses";
	close(prog_fd);
	close(map_fd);
}

} // namespace
