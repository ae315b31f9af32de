// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of lib/ftrace: format files as the kernel draft's
 * trace_export.c prints them, and crafted trace_pipe_raw pages (the ring
 * buffer's event headers: small and large data events, time extends,
 * absolute time stamps, padding, the missed-events flag).
 */
#include <gtest/gtest.h>
#include <string.h>

#include "lib/ftrace.h"

namespace {

const char *kCommon =
	"\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
	"\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
	"\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
	"\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";

std::string format(const char *name, int id, const std::string &fields,
		   const char *fmt)
{
	return std::string("name: ") + name + "\nID: " + std::to_string(id) +
	       "\nformat:\n" + kCommon + fields + "\nprint fmt: " + fmt + "\n";
}

const std::string kCookieFmt = format(
	"user_unwind_cookie", 23,
	"\tfield:u64 cookie;\toffset:8;\tsize:8;\tsigned:0;\n",
	"\"cookie=%llx\", REC->cookie");
const std::string kStackFmt = format(
	"user_unwind_stack", 24,
	"\tfield:u64 cookie;\toffset:8;\tsize:8;\tsigned:0;\n"
	"\tfield:__data_loc unsigned long[] stack;\toffset:16;\tsize:4;\tsigned:0;\n"
	"\tfield:__data_loc unsigned long[] inodes;\toffset:20;\tsize:4;\tsigned:0;\n"
	"\tfield:__data_loc unsigned int[] dev;\toffset:24;\tsize:4;\tsigned:0;\n"
	"\tfield:__data_loc unsigned long[] ips;\toffset:28;\tsize:4;\tsigned:0;\n",
	"\"cookie=%llx stack=%s inodes=%s dev=%s ips=%s\", REC->cookie, "
	"__print_array(__get_dynamic_array(stack), "
	"__get_dynamic_array_len(stack) / 8, 8), ...");
const std::string kUserStackFmt = format(
	"user_stack", 12,
	"\tfield:unsigned int tgid;\toffset:8;\tsize:4;\tsigned:0;\n"
	"\tfield:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;\n",
	"\"\\t=> %ps\\n\", (void *)REC->caller[0]");

const char *kHeaderPage =
	"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	"\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
	"\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	"\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

TEST(FtraceFormat, ParsesFieldsOfTheDraftsEvents)
{
	ftrace::Format f;
	std::string err;
	ASSERT_TRUE(ftrace::parse_format(kStackFmt, &f, &err)) << err;
	EXPECT_EQ(f.name, "user_unwind_stack");
	EXPECT_EQ(f.id, 24);
	ASSERT_EQ(f.fields.size(), 9u);
	const ftrace::Field *dev = f.field("dev");
	ASSERT_NE(dev, nullptr);
	EXPECT_TRUE(dev->data_loc);
	EXPECT_EQ(dev->type, "__data_loc unsigned int[]");
	EXPECT_EQ(dev->offset, 24u);
	EXPECT_EQ(dev->size, 4u);
	ASSERT_TRUE(ftrace::parse_format(kUserStackFmt, &f, &err)) << err;
	const ftrace::Field *c = f.field("caller");
	ASSERT_NE(c, nullptr);
	EXPECT_FALSE(c->data_loc);
	EXPECT_EQ(c->array_len, 8u);
	EXPECT_EQ(c->offset, 16u);
	EXPECT_EQ(c->size, 64u);
	EXPECT_FALSE(ftrace::parse_format("name: x\nformat:\n", &f, &err));
}

TEST(FtraceFormat, HeaderPage)
{
	ftrace::PageLayout l;
	std::string err;
	ASSERT_TRUE(ftrace::parse_header_page(kHeaderPage, &l, &err)) << err;
	EXPECT_EQ(l.commit_offset, 8u);
	EXPECT_EQ(l.commit_size, 8u);
	EXPECT_EQ(l.data_offset, 16u);
	EXPECT_EQ(l.page_size(), 4096u);
}

/* A page under construction, in the ring buffer's layout. */
struct Page {
	std::vector<uint8_t> bytes = std::vector<uint8_t>(4096);
	size_t pos = 16;
	explicit Page(uint64_t ts) { memcpy(bytes.data(), &ts, 8); }
	void u32(uint32_t v)
	{
		memcpy(bytes.data() + pos, &v, 4);
		pos += 4;
	}
	/* A data event: small ones carry their length in type_len. */
	void event(uint32_t delta, const std::vector<uint8_t> &data,
		   bool large = false)
	{
		size_t len = (data.size() + 3) & ~3ul;
		if (!large && len <= 112) {
			u32((delta << 5) | (uint32_t)(len / 4));
		} else {
			u32(delta << 5);
			u32((uint32_t)len + 4);
		}
		memcpy(bytes.data() + pos, data.data(), data.size());
		pos += len;
	}
	void extend(uint64_t delta)
	{
		u32((uint32_t)((delta & ((1u << 27) - 1)) << 5) | 30);
		u32((uint32_t)(delta >> 27));
	}
	void stamp(uint64_t ts)
	{
		u32((uint32_t)((ts & ((1u << 27) - 1)) << 5) | 31);
		u32((uint32_t)(ts >> 27));
	}
	void discarded(uint32_t len)
	{
		u32((1u << 5) | 29);
		u32(len);
		pos += len - 4;
	}
	std::vector<uint8_t> done(uint64_t flags = 0)
	{
		uint64_t commit = (pos - 16) | flags;
		memcpy(bytes.data() + 8, &commit, 8);
		return bytes;
	}
};

void put(std::vector<uint8_t> &d, size_t off, const void *p, size_t n)
{
	if (d.size() < off + n)
		d.resize(off + n);
	memcpy(d.data() + off, p, n);
}

std::vector<uint8_t> entry(uint16_t type, int32_t pid)
{
	std::vector<uint8_t> d(8);
	put(d, 0, &type, 2);
	put(d, 4, &pid, 4);
	return d;
}

std::vector<uint8_t> cookie_event(int32_t pid, uint64_t cookie)
{
	std::vector<uint8_t> d = entry(23, pid);
	put(d, 8, &cookie, 8);
	return d;
}

/* As trace_user_unwind_fill() lays it out: stack, inodes, ips, dev. */
std::vector<uint8_t> stack_event(int32_t pid, uint64_t cookie,
				 const std::vector<unsigned long> &ips)
{
	std::vector<uint8_t> d = entry(24, pid);
	put(d, 8, &cookie, 8);
	uint32_t n = ips.size(), off = 32;
	auto loc = [&](size_t at, uint32_t len) {
		uint32_t l = len << 16 | off;
		put(d, at, &l, 4);
		off += len;
	};
	uint32_t s = off;
	loc(16, n * sizeof(long));
	uint32_t in = off;
	loc(20, n * sizeof(long));
	uint32_t ip = off;
	loc(28, n * sizeof(long));
	uint32_t dv = off;
	loc(24, n * 4);
	for (uint32_t i = 0; i < n; i++) {
		unsigned long off_in_file = ips[i] - 0x400000, ino = 1000 + i;
		unsigned int dev = 3 << 20 | 1;
		put(d, s + i * sizeof(long), &off_in_file, sizeof(long));
		put(d, in + i * sizeof(long), &ino, sizeof(long));
		put(d, ip + i * sizeof(long), &ips[i], sizeof(long));
		put(d, dv + i * 4, &dev, 4);
	}
	return d;
}

TEST(FtracePage, EventsTimesAndDecoding)
{
	ftrace::PageLayout l;
	std::string err;
	ASSERT_TRUE(ftrace::parse_header_page(kHeaderPage, &l, &err));
	ftrace::Decoder dec;
	ASSERT_TRUE(dec.load_texts(kCookieFmt, kStackFmt, kUserStackFmt, &err))
		<< err;

	Page p(1000000);
	p.event(5, entry(300, 42));           /* the traced event, ts +5 */
	p.event(1, cookie_event(42, 0xabc0011)); /* ts +1 */
	p.extend(1ull << 30);                 /* a long gap */
	std::vector<unsigned long> ips = { 0x401234, 0x401500, 0x402000 };
	p.event(7, stack_event(42, 0xabc0011, ips), true);
	p.discarded(16);
	p.stamp(5000000000ull);
	p.event(0, entry(300, 43));
	std::vector<uint8_t> page = p.done();

	std::vector<ftrace::RawEvent> evs;
	size_t seq = 0;
	bool missed = false;
	ASSERT_TRUE(ftrace::parse_page(page.data(), page.size(), l, 2, &seq,
				       &evs, &missed, &err)) << err;
	EXPECT_FALSE(missed);
	ASSERT_EQ(evs.size(), 4u);
	EXPECT_EQ(seq, 4u);
	EXPECT_EQ(evs[0].ts, 1000005u);
	EXPECT_EQ(evs[0].type(), 300);
	EXPECT_EQ(evs[0].pid(), 42);
	EXPECT_EQ(evs[0].cpu, 2);
	EXPECT_EQ(evs[1].ts, 1000006u);
	EXPECT_EQ(evs[2].ts, 1000006u + (1ull << 30) + 7);
	EXPECT_EQ(evs[3].ts, 5000000000ull);
	EXPECT_EQ(evs[3].seq, 3u);

	uint64_t c = 0;
	EXPECT_FALSE(dec.cookie(evs[0], &c));
	ASSERT_TRUE(dec.cookie(evs[1], &c));
	EXPECT_EQ(c, 0xabc0011u);
	ftrace::UnwindStack s;
	ASSERT_TRUE(dec.is_stack(evs[2]));
	ASSERT_TRUE(dec.stack(evs[2], &s));
	EXPECT_EQ(s.cookie, 0xabc0011u);
	std::vector<uint64_t> want(ips.begin(), ips.end());
	EXPECT_EQ(s.ips, want);
	ASSERT_EQ(s.stack.size(), 3u);
	EXPECT_EQ(s.stack[1], 0x1500u);
	EXPECT_EQ(s.inodes, (std::vector<uint64_t>{ 1000, 1001, 1002 }));
	EXPECT_EQ(s.dev, (std::vector<uint64_t>(3, 3 << 20 | 1)));
}

TEST(FtracePage, UserStackStopsAtZero)
{
	std::string err;
	ftrace::Decoder dec;
	ASSERT_TRUE(dec.load_texts(kCookieFmt, kStackFmt, kUserStackFmt, &err));
	ftrace::RawEvent e;
	e.data = entry(12, 7);
	unsigned long caller[8] = { 0x401000, 0x402000, 0x403000 };
	put(e.data, 16, caller, sizeof(caller));
	std::vector<uint64_t> ips;
	ASSERT_TRUE(dec.user_stack(e, &ips));
	EXPECT_EQ(ips, (std::vector<uint64_t>{ 0x401000, 0x402000, 0x403000 }));
}

TEST(FtracePage, MissedFlagShortAndMalformedPages)
{
	ftrace::PageLayout l;
	std::string err;
	ASSERT_TRUE(ftrace::parse_header_page(kHeaderPage, &l, &err));
	std::vector<ftrace::RawEvent> evs;
	size_t seq = 0;
	bool missed = false;
	Page p(1);
	p.event(1, entry(300, 1));
	std::vector<uint8_t> page = p.done(1ull << 31);
	ASSERT_TRUE(ftrace::parse_page(page.data(), page.size(), l, 0, &seq,
				       &evs, &missed, &err)) << err;
	EXPECT_TRUE(missed);
	EXPECT_EQ(evs.size(), 1u);
	/* A commit past the bytes read. */
	EXPECT_FALSE(ftrace::parse_page(page.data(), 20, l, 0, &seq, &evs,
					&missed, &err));
	/* A large event whose length runs past the commit. */
	Page q(1);
	q.u32(0);
	q.u32(400);
	std::vector<uint8_t> bad = q.done();
	EXPECT_FALSE(ftrace::parse_page(bad.data(), bad.size(), l, 0, &seq,
					&evs, &missed, &err));
	/* A data event with a truncated payload. */
	ftrace::RawEvent e;
	e.data = entry(24, 1);
	ftrace::Format f;
	ASSERT_TRUE(ftrace::parse_format(kStackFmt, &f, &err));
	std::vector<uint64_t> v;
	uint32_t loc = 64u << 16 | 32;
	put(e.data, 16, &loc, 4);
	EXPECT_FALSE(ftrace::get_array(e, *f.field("stack"), 8, &v));
}

} // namespace
