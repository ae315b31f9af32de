// SPDX-License-Identifier: GPL-2.0
/*
 * Where the SFrame tables come from (doc/kernel.md, "SFrame"): the kernel
 * finds a file's .sframe when the task maps it (exec, or a loader's
 * mmap()), and the deferred walk on the way back to user space reads no
 * file. Reading one there would go through the file's read path from the
 * task_work: permission events to a fanotify listener (which deadlocks if
 * the listener itself is profiled), LSM checks, access events, atime and
 * read accounting, and I/O on NFS or FUSE.
 *
 * The helper, sframe_libs, maps K copies of sframe_lib.so as a loader
 * does (mmap() of each segment) and calls through all of them down to a
 * leaf that makes 200 raw getppid() calls with junk in %rbp. Everything
 * is built without frame pointers and with .sframe. sframe_lib_mold.so is
 * the same library linked by Debian sid's mold: its text segment begins
 * inside the file page that ends the read-only segment before it, so
 * that page is mapped twice, read-only and one page further on as text;
 * the section's address must come from the text segment's headers, not
 * the read-only one's (a page off). Once the copies are
 * mapped, the test starts counting and watching, then lets the calls go,
 * each sampled by a syscalls:sys_enter_getppid event with
 * defer_callchain. Checked:
 *
 *  - every deferred record holds the leaf, the K copies in call order
 *    and main: the tables of all K + 1 files were used;
 *  - kernel_read() (a kprobe counter on the helper) was not entered
 *    while the calls were made: no file read per walk, with 32 copies
 *    mapped as with 1;
 *  - a fanotify listener with FAN_ACCESS_PERM marks on the helper's file
 *    and on every copy (FAN_CLASS_CONTENT) gets no event while the
 *    helper is profiled. The marks are placed before the helper starts:
 *    6.12 decides at open() whether a file reports permission events,
 *    so a listener set up after the helper opened its files would hear
 *    nothing whatever the kernel did. That the listener hears reads is
 *    shown by the helper's own pread()s of the ELF headers while it maps
 *    the copies (counted apart, and required).
 */
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <set>
#include <sstream>

#include "lib/features.h"
#include "lib/session.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

constexpr int kCalls = 200;
constexpr const char *kWhy =
	"SFrame: tables found when a file is mapped, never read from the "
	"file on the way back to user space (doc/kernel.md: SFrame; not in "
	"upstream)";

struct Range {
	uint64_t start = 0, end = 0;
	bool contains(uint64_t a) const { return a >= start && a < end; }
};

struct LibsRun {
	int records = 0;	/* records answering the helper's getppid samples */
	int full = 0;		/* of them, with every frame in order */
	int others = 0;		/* records of entries other sessions sampled */
	uint64_t kernel_reads = 0; /* kernel_read() entries of the helper */
	int fan_setup = 0;	/* fanotify events while mapping */
	int fan_events = 0;	/* fanotify events while profiled */
	std::string fan_first;	/* the first event: mask and file */
	std::string example, first_bad;
};

/* A fd that closes itself. */
struct Fd {
	int fd = -1;
	Fd() = default;
	explicit Fd(int f) : fd(f) {}
	Fd(const Fd &) = delete;
	Fd &operator=(const Fd &) = delete;
	~Fd()
	{
		if (fd >= 0)
			close(fd);
	}
};

/* n copies of the helper library name in a new directory under /tmp. */
bool copy_libs(const char *name, int n, std::vector<std::string> *paths,
	       std::string *err)
{
	std::string lib = work::read_file(work::helper_path(name));
	if (lib.empty()) {
		*err = work::helper_path(name) + ": cannot read";
		return false;
	}
	char dir[] = "/tmp/sframe_libs.XXXXXX";
	if (!mkdtemp(dir)) {
		*err = std::string("mkdtemp: ") + strerror(errno);
		return false;
	}
	for (int i = 0; i < n; i++) {
		std::string p = std::string(dir) + "/lib" + std::to_string(i) +
				".so";
		int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
		bool ok = fd >= 0 && write(fd, lib.data(), lib.size()) ==
					     (ssize_t)lib.size();
		if (fd >= 0)
			close(fd);
		if (!ok) {
			*err = p + ": cannot write";
			return false;
		}
		paths->push_back(p);
	}
	return true;
}

/*
 * Answer (allow) every pending fanotify event, counting them in *count;
 * the first event of the profiled phase is described in r->fan_first.
 */
void answer_fanotify(int fan, LibsRun *r, int *count)
{
	alignas(fanotify_event_metadata) char buf[4096];
	ssize_t n;

	while ((n = read(fan, buf, sizeof(buf))) > 0) {
		auto *m = reinterpret_cast<fanotify_event_metadata *>(buf);
		for (; FAN_EVENT_OK(m, n); m = FAN_EVENT_NEXT(m, n)) {
			if (count == &r->fan_events && r->fan_first.empty()) {
				char link[64], path[256] = "?";
				snprintf(link, sizeof(link),
					 "/proc/self/fd/%d", m->fd);
				ssize_t l = readlink(link, path,
						     sizeof(path) - 1);
				path[l > 0 ? l : 1] = 0;
				std::ostringstream o;
				o << "mask 0x" << std::hex << m->mask
				  << std::dec << " pid " << m->pid << " on "
				  << path;
				r->fan_first = o.str();
			}
			(*count)++;
			if (m->mask & FAN_ACCESS_PERM) {
				fanotify_response resp = { m->fd, FAN_ALLOW };
				if (write(fan, &resp, sizeof(resp)) < 0)
					perror("fanotify response");
			}
			if (m->fd >= 0)
				close(m->fd);
		}
	}
}

/*
 * Read lines from fd until "ready" (or a Deadline of 20 s): the copies'
 * text ranges.
 * between() runs every 10 ms meanwhile (the helper's reads wait for a
 * fanotify listener's answers).
 */
bool read_ready(int fd, std::vector<Range> *texts, std::string *err,
		const std::function<void()> &between)
{
	std::string got;
	work::Deadline deadline(20);

	while (got.find("ready\n") == std::string::npos) {
		pollfd p = { fd, POLLIN, 0 };
		between();
		if (deadline.passed() || poll(&p, 1, 10) < 0) {
			*err = "no \"ready\" from the helper (" +
			       deadline.describe() + "): " + got;
			return false;
		}
		if (!(p.revents & (POLLIN | POLLHUP)))
			continue;
		char buf[512];
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0) {
			*err = "the helper closed its pipe: " + got;
			return false;
		}
		got.append(buf, n);
	}
	std::istringstream in(got);
	std::string word;
	while (in >> word && word == "lib") {
		int i;
		Range r;
		in >> i >> std::hex >> r.start >> r.end >> std::dec;
		texts->push_back(r);
	}
	return true;
}

/* kernel_read() entries of pid, counted by a kprobe: a disabled counter. */
int open_kernel_read_counter(pid_t pid)
{
	perf_event_attr a = {};
	a.size = sizeof(a);
	if (!perf::kprobe_attr("kernel_read", 0, false, &a))
		return -ENOENT;
	a.disabled = 1;
	return perf::open_event(&a, pid, -1);
}

/*
 * Run sframe_libs with nlibs copies of the library lib under a deferred
 * getppid event, with a fanotify listener on its files if asked; count
 * into r.
 */
void run(const char *lib, int nlibs, bool fanotify, LibsRun *r)
{
	SKIP_UNLESS_DEFER_CALLCHAIN();
	SKIP_UNLESS_HELPER("sframe_libs");
	long tp = work::tracepoint_id("syscalls/sys_enter_getppid");
	if (tp < 0)
		GTEST_SKIP() << "no tracepoint syscalls/sys_enter_getppid";
	std::string helper = work::helper_path("sframe_libs"), err;
	std::vector<syms::Symbol> symbols = syms::load(helper, &err);
	ASSERT_FALSE(symbols.empty()) << helper << ": " << err;
	const syms::Symbol *leaf = syms::find(symbols, "sf_libs_leaf");
	const syms::Symbol *main_sym = syms::find(symbols, "main");
	ASSERT_TRUE(leaf && main_sym) << helper << ": symbols missing";
	std::vector<std::string> libs;
	ASSERT_TRUE(copy_libs(lib, nlibs, &libs, &err)) << err;

	/* Before the helper opens anything: see the comment at the top. */
	Fd fan;
	if (fanotify) {
		fan.fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC |
					       FAN_NONBLOCK,
				       O_RDONLY);
		ASSERT_GE(fan.fd, 0) << "fanotify_init: " << strerror(errno);
		std::vector<std::string> files = libs;
		files.push_back(helper);
		for (const std::string &f : files)
			ASSERT_EQ(fanotify_mark(fan.fd, FAN_MARK_ADD,
						FAN_ACCESS_PERM, AT_FDCWD,
						f.c_str()),
				  0)
				<< "fanotify_mark " << f << ": "
				<< strerror(errno);
	}

	int go[2], out[2];
	ASSERT_EQ(pipe(go), 0);
	ASSERT_EQ(pipe(out), 0);
	Fd go_w(go[1]), out_r(out[0]);
	std::vector<std::string> argv = { helper, std::to_string(go[0]),
					  std::to_string(out[1]),
					  std::to_string(kCalls) };
	argv.insert(argv.end(), libs.begin(), libs.end());
	work::Child child;
	int ret = child.spawn(argv);
	close(go[0]);
	close(out[1]);
	ASSERT_EQ(ret, 0) << "spawn: " << strerror(-ret);

	session::Session s;
	session::Options o = session::tracepoint(tp, 256);
	o.enable_on_exec = true;
	ret = s.open(o, child.pid(), -1);
	ASSERT_EQ(ret, 0) << "perf_event_open: " << strerror(-ret);
	Fd reads(open_kernel_read_counter(child.pid()));
	ASSERT_GE(reads.fd, 0) << "kprobe counter on kernel_read: "
			       << strerror(-reads.fd);
	child.release();

	std::vector<Range> texts;
	ASSERT_TRUE(read_ready(out_r.fd, &texts, &err, [&] {
		if (fan.fd >= 0)
			answer_fanotify(fan.fd, r, &r->fan_setup);
	})) << err;
	ASSERT_EQ((int)texts.size(), nlibs);

	/* The files are mapped: from now on nothing should read them. */
	ASSERT_EQ(ioctl(reads.fd, PERF_EVENT_IOC_ENABLE, 0), 0);
	ASSERT_EQ(write(go_w.fd, "g", 1), 1);
	int st = child.wait(60, [&] {
		s.drain();
		if (fan.fd >= 0)
			answer_fanotify(fan.fd, r, &r->fan_events);
	});
	ioctl(reads.fd, PERF_EVENT_IOC_DISABLE, 0);
	s.drain();
	if (fan.fd >= 0)
		answer_fanotify(fan.fd, r, &r->fan_events);
	ASSERT_EQ(read(reads.fd, &r->kernel_reads, sizeof(r->kernel_reads)),
		  (ssize_t)sizeof(r->kernel_reads));
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
		<< helper << ": wait status 0x" << std::hex << st;
	EXPECT_EQ(s.lost(), 0u);

	/*
	 * The receiver gets the record of every entry of the helper that any
	 * session sampled: perf record -a of a program running beside this
	 * one samples its start-up too (arm64 debug: 23 records of mmap()
	 * in __libc_start_main). Judged are the records that answer this
	 * session's own getppid samples, matched by cookie, as a reader does.
	 */
	std::set<uint64_t> ours = s.announced(0, &err);
	ASSERT_TRUE(err.empty()) << err;
	for (const perf::DeferredCallchain &d : s.deferred(0, &err)) {
		if (!ours.count(d.cookie)) {
			r->others++;
			continue;
		}
		r->records++;
		bool ok = d.ips.size() >= (size_t)nlibs + 2 &&
			  leaf->contains(d.ips[0]) &&
			  main_sym->contains(d.ips[nlibs + 1]);
		for (int i = 0; ok && i < nlibs; i++)
			ok = texts[nlibs - 1 - i].contains(d.ips[1 + i]);
		if (ok) {
			r->full++;
			if (r->example.empty())
				r->example = session::hex_chain(d.ips, 6);
		} else if (r->first_bad.empty()) {
			r->first_bad = session::hex_chain(d.ips, 40);
		}
	}
	ASSERT_TRUE(err.empty()) << err;
	printf("# %d copies of %s: %d deferred records of its "
	       "getppid samples, %d with the leaf, every copy and main (%d "
	       "records of other sessions' samples); kernel_read() entered "
	       "%llu times while profiled; fanotify events: %d while mapping, "
	       "%d while profiled%s%s\n",
	       nlibs, lib, r->records, r->full, r->others,
	       (unsigned long long)r->kernel_reads, r->fan_setup,
	       r->fan_events,
	       r->fan_first.empty() ? "" : ", first: ",
	       r->fan_first.c_str());
	EXPECT_GE(r->records, kCalls * 9 / 10) << "too few deferred records";
	EXPECT_EQ(r->full, r->records)
		<< "chains missing a copy's frames; first: " << r->first_bad;
}

TEST(SFrameTables, NoFileReadPerWalkWith32Libraries)
{
	EXTENSION(kWhy);
	LibsRun r;
	run("sframe_lib.so", 32, false, &r);
	if (HasFatalFailure() || IsSkipped())
		return;
	EXPECT_EQ(r.kernel_reads, 0u)
		<< "the walks read files: " << r.kernel_reads
		<< " kernel_read() calls for " << r.records << " walks";
}

TEST(SFrameTables, FanotifyListenerSeesNoAccess)
{
	EXTENSION(kWhy);
	LibsRun r;
	run("sframe_lib.so", 2, true, &r);
	if (HasFatalFailure() || IsSkipped())
		return;
	/* 2 copies x 2 pread()s of their headers, at least. */
	EXPECT_GE(r.fan_setup, 4)
		<< "the listener heard none of the helper's own reads: it "
		   "proves nothing";
	EXPECT_EQ(r.fan_events, 0)
		<< "a FAN_ACCESS_PERM listener was asked while the helper was "
		   "profiled; first: " << r.fan_first;
	EXPECT_EQ(r.kernel_reads, 0u);
}

/*
 * The text segment's first file page, also the read-only segment's last:
 * "" when path is laid out so (with a PT_GNU_SFRAME), else what it is.
 */
std::string text_inside_a_page(const std::string &path)
{
	std::string err;
	std::vector<syms::Segment> segs = syms::segments(path, &err);
	if (!err.empty())
		return path + ": " + err;
	const uint64_t page = sysconf(_SC_PAGESIZE);
	bool sframe = false;
	const syms::Segment *text = nullptr;
	for (const syms::Segment &seg : segs) {
		sframe |= seg.type == syms::kPtGnuSframe;
		if (seg.type == PT_LOAD && (seg.flags & PF_X))
			text = &seg;
	}
	if (!sframe || !text)
		return path + ": no PT_GNU_SFRAME or no text segment";
	uint64_t first = text->offset & ~(page - 1);
	for (const syms::Segment &seg : segs)
		if (seg.type == PT_LOAD && !(seg.flags & PF_X) &&
		    seg.offset <= first && seg.offset + seg.memsz > first)
			return "";
	std::ostringstream o;
	o << path << ": its text segment (offset 0x" << std::hex
	  << text->offset << ") does not start inside a read-only "
	  << "segment's page";
	return o.str();
}

TEST(SFrameTables, TextStartingInsideTheReadOnlySegmentsLastPage)
{
	EXTENSION(kWhy);
	SKIP_UNLESS_DEFER_CALLCHAIN();
	std::string lib = work::helper_path("sframe_lib_mold.so");
	ASSERT_EQ(access(lib.c_str(), R_OK), 0)
		<< lib << " was not built: Debian sid's mold or binutils "
		<< "could not be fetched (make selftests runs "
		<< "ci/build/toolchains.sh; see build/toolchains/mold.log)";
	/* Else this proves nothing: mold lays libraries out so today */
	ASSERT_EQ(text_inside_a_page(lib), "");
	LibsRun r;
	run("sframe_lib_mold.so", 2, false, &r);
}

} // namespace
