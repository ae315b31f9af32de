// SPDX-License-Identifier: GPL-2.0
/*
 * A tracer nobody here wrote reads userstacktrace_delay: Debian's trace-cmd
 * (bookworm's 3.1.6, with libtraceevent and libtracefs; packed into the
 * x86-64 guest with its libraries by ci/guest/mkinitramfs.sh) records
 * /selftests/known_stack with the option and reports it. Its report must
 * print each getppid event of the helper followed by its cookie and one
 * user_unwind_stack event with that cookie, whose frames are the helper's
 * own: ks_inner, ks_middle, ks_outer and main by the helper's symbol
 * table, at the file offsets the frames carry, in the helper's inode.
 *
 * With VMTEST_KEEP=trace-cmd (make trace-recording) the test also prints
 * the recording and the files it names, base64 between "# vmtest-keep:"
 * lines, for the host's merge tool tests (tests/data/trace-cmd/).
 */
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "lib/features.h"
#include "lib/ftrace.h"
#include "lib/symbols.h"
#include "lib/test_class.h"
#include "lib/workload.h"

namespace {

const char *kTraceCmd = "/usr/bin/trace-cmd";
constexpr const char *kWhy =
	"Debian's trace-cmd records and reports ftrace's userstacktrace_delay "
	"(doc/kernel.md)";

using Result = work::Output;

/* One line of trace-cmd report. */
struct Line {
	pid_t pid = 0;
	int cpu = -1;
	std::string event, fields;
};

std::vector<Line> parse_report(const std::string &text)
{
	static const std::regex re(
		R"(^\s*.*-(\d+)\s+\[(\d+)\]\s+(?:\S+\s+)?\d+\.\d+:\s+(\w+):\s*(.*)$)");
	std::vector<Line> lines;
	std::istringstream in(text);
	std::string s;
	std::smatch m;
	while (std::getline(in, s)) {
		if (!std::regex_match(s, m, re))
			continue;
		Line l;
		l.pid = std::stoi(m[1]);
		l.cpu = std::stoi(m[2]);
		l.event = m[3];
		l.fields = m[4];
		lines.push_back(l);
	}
	return lines;
}

/* NAME=VALUE of a report line: a hex number, or a {a,b,...} array. */
bool field_hex(const std::string &fields, const std::string &name, uint64_t *v)
{
	std::smatch m;
	std::regex re("(^| )" + name + "=([0-9a-fA-F]+)( |$)");
	if (!std::regex_search(fields, m, re))
		return false;
	*v = strtoull(m[2].str().c_str(), nullptr, 16);
	return true;
}

/*
 * NAME=ARRAY of a report line: libtraceevent prints __print_array() as
 * decimal numbers apart by spaces, the kernel's trace file as
 * {0x..,0x..}; either is read.
 */
bool field_array(const std::string &fields, const std::string &name,
		 std::vector<uint64_t> *v)
{
	std::smatch m;
	std::regex braces("(^| )" + name + "=\\{([^}]*)\\}");
	std::regex words("(^| )" + name + "=((\\d+)( \\d+)*)( |$)");
	v->clear();
	char sep;
	if (std::regex_search(fields, m, braces))
		sep = ',';
	else if (std::regex_search(fields, m, words))
		sep = ' ';
	else
		return false;
	std::istringstream in(m[2].str());
	std::string n;
	while (std::getline(in, n, sep))
		v->push_back(strtoull(n.c_str(), nullptr, 0));
	return !v->empty();
}

struct Stack {
	std::vector<uint64_t> stack, inodes, dev, ips;
	int count = 0;
};

/* Print file as base64 between "# vmtest-keep: name" lines. */
void keep(const std::string &name, const std::string &file)
{
	static const char *b64 =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	std::string data = work::read_file(file), line;
	printf("# vmtest-keep: %s %zu\n", name.c_str(), data.size());
	for (size_t i = 0; i < data.size(); i += 3) {
		uint32_t n = (uint8_t)data[i] << 16;
		if (i + 1 < data.size())
			n |= (uint8_t)data[i + 1] << 8;
		if (i + 2 < data.size())
			n |= (uint8_t)data[i + 2];
		line += b64[n >> 18 & 63];
		line += b64[n >> 12 & 63];
		line += i + 1 < data.size() ? b64[n >> 6 & 63] : '=';
		line += i + 2 < data.size() ? b64[n & 63] : '=';
		if (line.size() >= 76) {
			printf("%s\n", line.c_str());
			line.clear();
		}
	}
	if (!line.empty())
		printf("%s\n", line.c_str());
	printf("# vmtest-keep-end: %s\n", name.c_str());
}

/*
 * What is recorded: the helper, the event (and its filter) its getppid
 * calls record, and the name trace-cmd report gives that event.
 */
struct Recording {
	const char *helper, *event, *filter, *name;
};

void record_and_check(const Recording &want, bool keep_it)
{
	SKIP_UNLESS_EXECUTABLE(kTraceCmd, "Debian's trace-cmd");
	std::string root = ftrace::root(), why;
	if (root.empty() ||
	    access((root + "/options/userstacktrace_delay").c_str(), F_OK)) {
		if (ftrace::delay_expected(&why))
			FAIL() << "feature expected (" << why
			       << ") but no userstacktrace_delay option";
		GTEST_SKIP() << "kernel lacks userstacktrace_delay (" << why
			     << ")";
	}
	std::string helper = work::helper_path(want.helper);
	SKIP_UNLESS_EXECUTABLE(helper, "helper program");
	std::string err;
	std::vector<syms::Symbol> sy = syms::load(helper, &err);
	ASSERT_FALSE(sy.empty()) << err;
	struct stat st;
	ASSERT_EQ(stat(helper.c_str(), &st), 0);

	char tmpl[] = "/tmp/trace_cmd_test.XXXXXX";
	ASSERT_NE(mkdtemp(tmpl), nullptr);
	std::string dir = tmpl, dat = dir + "/trace.dat";
	/* The top level (alone=yes); its option is cleared again below. */
	std::vector<std::string> argv = { kTraceCmd, "record", "-o", dat, "-O",
					   "userstacktrace_delay", "-e",
					   want.event };
	if (*want.filter) {
		argv.push_back("-f");
		argv.push_back(want.filter);
	}
	for (const char *a : { "-F", helper.c_str(), "0.02" })
		argv.push_back(a);
	Result rec = work::run_program(argv, dir);
	int cleared = open((root + "/options/userstacktrace_delay").c_str(),
			   O_WRONLY);
	if (cleared >= 0) {
		EXPECT_EQ(write(cleared, "0", 1), 1);
		close(cleared);
	}
	ASSERT_EQ(rec.status, 0) << "trace-cmd record: " << rec.err;
	Result rep = work::run_program({ kTraceCmd, "report", "-i", dat },
					 dir);
	ASSERT_EQ(rep.status, 0) << "trace-cmd report: " << rep.err;

	std::vector<Line> lines = parse_report(rep.out);
	/* Per CPU the line before a cookie is its event. */
	std::map<int, const Line *> last;
	std::map<uint64_t, Stack> stacks;
	size_t events = 0, cookies = 0, bad_stack = 0;
	std::string unparsed;
	std::vector<uint64_t> announced;
	pid_t pid = -1;
	for (const Line &l : lines) {
		uint64_t c;
		if (l.event == want.name) {
			events++;
			pid = l.pid;
		} else if (l.event == "user_unwind_cookie" &&
			   field_hex(l.fields, "cookie", &c)) {
			const Line *e = last[l.cpu];
			if (e && e->event == want.name &&
			    e->pid == l.pid) {
				cookies++;
				announced.push_back(c);
			}
		} else if (l.event == "user_unwind_stack" &&
			   field_hex(l.fields, "cookie", &c)) {
			Stack &s = stacks[c];
			s.count++;
			if (!field_array(l.fields, "stack", &s.stack) ||
			    !field_array(l.fields, "inodes", &s.inodes) ||
			    !field_array(l.fields, "dev", &s.dev) ||
			    !field_array(l.fields, "ips", &s.ips)) {
				if (!bad_stack++)
					unparsed = l.fields;
			}
		}
		last[l.cpu] = &l;
	}
	printf("# trace-cmd report of %s: %zu lines, %zu %s events of pid %d, "
	       "%zu followed by a cookie, %zu stack events\n", want.helper,
	       lines.size(), events, want.name, pid, cookies, stacks.size());
	ASSERT_GT(events, 0u) << rep.out.substr(0, 2000);
	EXPECT_EQ(cookies, events) << rep.out.substr(0, 2000);
	EXPECT_EQ(bad_stack, 0u) << "stack events trace-cmd did not print "
				    "as cookie, stack, inodes, dev and ips: "
				 << unparsed;

	const char *want[] = { "ks_inner", "ks_middle", "ks_outer", "main" };
	uint64_t kdev = ftrace::kernel_dev(st.st_dev);
	size_t good = 0;
	std::string first_bad;
	for (uint64_t c : announced) {
		auto it = stacks.find(c);
		std::ostringstream o;
		o << "cookie " << std::hex << c << ": ";
		bool ok = false;
		if (it == stacks.end() || it->second.count != 1) {
			o << (it == stacks.end() ? 0 : it->second.count)
			  << " stack events";
		} else {
			const Stack &s = it->second;
			size_t k = 0;
			for (; k < 4 && k < s.ips.size() && k < s.stack.size() &&
			       k < s.inodes.size() && k < s.dev.size(); k++) {
				const syms::Symbol *f = syms::find(sy, want[k]);
				uint64_t off = s.stack[k];
				if (!f || !f->contains(s.ips[k]) ||
				    off < f->file_offset ||
				    off >= f->file_offset + f->size ||
				    s.inodes[k] != (uint64_t)st.st_ino ||
				    s.dev[k] != kdev)
					break;
			}
			ok = k == 4;
			if (!ok)
				o << "frame " << k << " is not " << want[k]
				  << " of " << helper << " (ip "
				  << (k < s.ips.size() ? s.ips[k] : 0) << ")";
		}
		good += ok;
		if (!ok && first_bad.empty())
			first_bad = o.str();
	}
	printf("# %zu of %zu cookies have one stack: ks_inner, ks_middle, "
	       "ks_outer, main at their file offsets in inode %llu\n", good,
	       announced.size(), (unsigned long long)st.st_ino);
	EXPECT_EQ(good, announced.size()) << first_bad;

	const char *k = getenv("VMTEST_KEEP");
	if (keep_it && k && !strcmp(k, "trace-cmd")) {
		std::string files = dir + "/files.txt";
		FILE *f = fopen(files.c_str(), "w");
		ASSERT_NE(f, nullptr);
		/* What a frame's device and inode name in this guest */
		fprintf(f, "%llu %llu %s\n", (unsigned long long)kdev,
			(unsigned long long)st.st_ino, helper.c_str());
		fclose(f);
		keep("trace.dat", dat);
		keep("files.txt", files);
		keep("known_stack", helper);
		keep("report.txt", dir + "/stdout");
	}
	for (const char *n : { "trace.dat", "stdout", "stderr", "files.txt" })
		unlink((dir + "/" + n).c_str());
	rmdir(dir.c_str());
}

TEST(TraceCmd, RecordsAndReportsEachEventsDeferredUserStack)
{
	EXTENSION(kWhy);
	record_and_check({ "known_stack", "syscalls:sys_enter_getppid", "",
			   "sys_enter_getppid" },
			 true);
}

/*
 * A 32-bit task (the helper built -m32): its frames are walked as a
 * compat task's and named in its ELF32 symbol table. The syscalls:
 * events leave compat system calls out; raw_syscalls:sys_enter has them
 * (i386's getppid is 64).
 */
TEST(TraceCmd, CompatTaskGetsItsDeferredUserStack)
{
	EXTENSION(kWhy);
	record_and_check({ "known_stack_32", "raw_syscalls:sys_enter",
			   "id == 64", "sys_enter" },
			 false);
}

} // namespace
