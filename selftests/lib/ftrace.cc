// SPDX-License-Identifier: GPL-2.0
#include "lib/ftrace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <sstream>

#include "lib/features.h"
#include "lib/workload.h"

namespace ftrace {

std::string root()
{
	for (const char *r : { "/sys/kernel/tracing",
			       "/sys/kernel/debug/tracing" }) {
		std::string p = std::string(r) + "/instances";
		if (access(p.c_str(), F_OK) == 0)
			return r;
	}
	return "";
}

/* ---- format files --------------------------------------------------------- */

const Field *Format::field(const std::string &name) const
{
	for (const Field &f : fields)
		if (f.name == name)
			return &f;
	return nullptr;
}

static std::string trim(const std::string &s)
{
	size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
	return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

/* "field:unsigned long caller[8];\toffset:16;\tsize:64;\tsigned:0;" */
static bool parse_field_line(const std::string &line, Field *f)
{
	size_t p = line.find("field:");
	if (p == std::string::npos)
		return false;
	std::string rest = line.substr(p + 6);
	size_t semi = rest.find(';');
	if (semi == std::string::npos)
		return false;
	std::string decl = trim(rest.substr(0, semi));
	size_t sp = decl.find_last_of(" \t");
	if (sp == std::string::npos)
		return false;
	f->type = trim(decl.substr(0, sp));
	f->name = decl.substr(sp + 1);
	size_t br = f->name.find('[');
	if (br != std::string::npos) {
		f->array_len = strtoul(f->name.c_str() + br + 1, nullptr, 0);
		f->name.resize(br);
	}
	f->data_loc = f->type.rfind("__data_loc", 0) == 0;
	auto num = [&](const char *key, unsigned *v) {
		size_t k = rest.find(key);
		if (k == std::string::npos)
			return false;
		*v = strtoul(rest.c_str() + k + strlen(key), nullptr, 0);
		return true;
	};
	unsigned sgn = 0;
	if (!num("offset:", &f->offset) || !num("size:", &f->size))
		return false;
	num("signed:", &sgn);
	f->is_signed = sgn;
	return true;
}

bool parse_format(const std::string &text, Format *out, std::string *err)
{
	*out = Format();
	std::istringstream in(text);
	std::string line;
	while (std::getline(in, line)) {
		if (line.rfind("name:", 0) == 0)
			out->name = trim(line.substr(5));
		else if (line.rfind("ID:", 0) == 0)
			out->id = strtol(line.c_str() + 3, nullptr, 10);
		else if (line.find("field:") != std::string::npos) {
			Field f;
			if (!parse_field_line(line, &f)) {
				*err = "format: bad field line '" + line + "'";
				return false;
			}
			out->fields.push_back(f);
		}
	}
	if (out->id < 0 || out->fields.empty()) {
		*err = "format: no ID or no field (" + out->name + ")";
		return false;
	}
	return true;
}

bool parse_header_page(const std::string &text, PageLayout *out,
		       std::string *err)
{
	std::istringstream in(text);
	std::string line;
	bool commit = false, data = false;
	while (std::getline(in, line)) {
		Field f;
		if (!parse_field_line(line, &f))
			continue;
		if (f.name == "commit") {
			out->commit_offset = f.offset;
			out->commit_size = f.size;
			commit = true;
		} else if (f.name == "data") {
			out->data_offset = f.offset;
			out->data_size = f.size;
			data = true;
		}
	}
	if (!commit || !data) {
		*err = "header_page: no commit or data field";
		return false;
	}
	return true;
}

/* ---- pages ----------------------------------------------------------------- */

uint16_t RawEvent::type() const
{
	uint16_t t = 0;
	if (data.size() >= 2)
		memcpy(&t, data.data(), 2);
	return t;
}

int32_t RawEvent::pid() const
{
	int32_t p = -1;
	if (data.size() >= 8)
		memcpy(&p, data.data() + 4, 4);
	return p;
}

/* The ring buffer's event header (kernel/trace/ring_buffer.c). */
constexpr unsigned kTypePadding = 29, kTypeTimeExtend = 30,
		   kTypeTimeStamp = 31, kTypeDataMax = 28;
constexpr unsigned kTsShift = 27;
constexpr uint64_t kCommitMask = (1u << 27) - 1; /* flags above: missed */
constexpr uint64_t kMissedEvents = 1ull << 31;
constexpr uint64_t kTsMsb = 0xf8ull << 56;

static uint32_t u32_at(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

bool parse_page(const uint8_t *page, size_t len, const PageLayout &l, int cpu,
		size_t *seq, std::vector<RawEvent> *out, bool *missed,
		std::string *err)
{
	if (len < l.data_offset || l.commit_size > 8 ||
	    l.commit_offset + l.commit_size > len) {
		*err = "page shorter than its header";
		return false;
	}
	uint64_t ts, commit = 0;
	memcpy(&ts, page, 8);
	memcpy(&commit, page + l.commit_offset, l.commit_size);
	if (commit & kMissedEvents)
		*missed = true;
	size_t size = commit & kCommitMask;
	if (l.data_offset + size > len) {
		*err = "page commit " + std::to_string(size) +
		       " past the page's " + std::to_string(len) + " bytes";
		return false;
	}
	const uint8_t *d = page + l.data_offset;
	size_t pos = 0;
	while (pos + 4 <= size) {
		uint32_t h = u32_at(d + pos);
		unsigned type_len = h & 0x1f;
		uint64_t delta = h >> 5;
		size_t evlen;
		if (type_len == kTypePadding) {
			if (delta == 0)
				break; /* the rest of the page is padding */
			if (pos + 8 > size)
				goto bad;
			evlen = 4 + u32_at(d + pos + 4);
			if (delta != 1)
				ts += delta; /* a discarded event keeps its time */
		} else if (type_len == kTypeTimeExtend ||
			   type_len == kTypeTimeStamp) {
			if (pos + 8 > size)
				goto bad;
			uint64_t t = (uint64_t)u32_at(d + pos + 4) << kTsShift;
			t += delta;
			if (type_len == kTypeTimeExtend)
				ts += t;
			else
				ts = t | (ts & kTsMsb);
			evlen = 8;
		} else {
			size_t dataoff, datalen;
			if (type_len == 0) {
				if (pos + 8 > size)
					goto bad;
				uint32_t n = u32_at(d + pos + 4);
				if (n < 4)
					goto bad;
				evlen = 4 + n;
				dataoff = 8;
				datalen = n - 4;
			} else {
				evlen = 4 + 4 * type_len;
				dataoff = 4;
				datalen = 4 * type_len;
			}
			if (type_len > kTypeDataMax || pos + evlen > size)
				goto bad;
			ts += delta;
			RawEvent e;
			e.ts = ts;
			e.cpu = cpu;
			e.seq = (*seq)++;
			e.data.assign(d + pos + dataoff, d + pos + dataoff + datalen);
			out->push_back(std::move(e));
		}
		if (evlen == 0 || pos + evlen > size)
			goto bad;
		pos += evlen;
	}
	return true;
bad:
	*err = "malformed event at page offset " + std::to_string(pos) +
	       " of " + std::to_string(size);
	return false;
}

bool get_uint(const RawEvent &e, const Field &f, uint64_t *v)
{
	if (f.offset + f.size > e.data.size() ||
	    (f.size != 1 && f.size != 2 && f.size != 4 && f.size != 8))
		return false;
	uint64_t x = 0;
	memcpy(&x, e.data.data() + f.offset, f.size); /* little endian */
	*v = x;
	return true;
}

bool get_array(const RawEvent &e, const Field &f, unsigned elem,
	       std::vector<uint64_t> *v)
{
	v->clear();
	size_t off, len;
	if (f.data_loc) {
		if (f.offset + 4 > e.data.size())
			return false;
		uint32_t loc = u32_at(e.data.data() + f.offset);
		off = loc & 0xffff;
		len = loc >> 16;
	} else {
		off = f.offset;
		len = f.size;
	}
	if (off + len > e.data.size() || len % elem || (elem != 4 && elem != 8))
		return false;
	for (size_t i = 0; i < len; i += elem) {
		uint64_t x = 0;
		memcpy(&x, e.data.data() + off + i, elem);
		v->push_back(x);
	}
	return true;
}

/* ---- the deferred user stack events --------------------------------------- */

bool Decoder::load(std::string *err)
{
	std::string ev = root() + "/events/ftrace/";
	return load_texts(work::read_file(ev + "user_unwind_cookie/format"),
			  work::read_file(ev + "user_unwind_stack/format"),
			  work::read_file(ev + "user_stack/format"), err);
}

bool Decoder::load_texts(const std::string &cookie, const std::string &stack,
			 const std::string &user_stack, std::string *err)
{
	if (!parse_format(cookie, &cookie_, err) ||
	    !parse_format(stack, &stack_, err) ||
	    !parse_format(user_stack, &user_stack_, err))
		return false;
	for (const char *f : { "cookie", "stack", "inodes", "dev", "ips" }) {
		const Field *x = stack_.field(f);
		if (!x || (strcmp(f, "cookie") ? !x->data_loc : x->size != 8)) {
			*err = std::string("user_unwind_stack: no field ") + f +
			       " of the expected kind";
			return false;
		}
	}
	if (!cookie_.field("cookie") || !user_stack_.field("caller")) {
		*err = "user_unwind_cookie without cookie or user_stack "
		       "without caller";
		return false;
	}
	return true;
}

bool Decoder::cookie(const RawEvent &e, uint64_t *c) const
{
	return is_cookie(e) && get_uint(e, *cookie_.field("cookie"), c);
}

bool Decoder::stack(const RawEvent &e, UnwindStack *s) const
{
	/* unsigned long is the word the test program itself uses */
	const unsigned w = sizeof(unsigned long);
	return is_stack(e) && get_uint(e, *stack_.field("cookie"), &s->cookie) &&
	       get_array(e, *stack_.field("stack"), w, &s->stack) &&
	       get_array(e, *stack_.field("inodes"), w, &s->inodes) &&
	       get_array(e, *stack_.field("dev"), 4, &s->dev) &&
	       get_array(e, *stack_.field("ips"), w, &s->ips);
}

bool Decoder::user_stack(const RawEvent &e, std::vector<uint64_t> *ips) const
{
	if (!is_user_stack(e) ||
	    !get_array(e, *user_stack_.field("caller"), sizeof(unsigned long),
		       ips))
		return false;
	auto z = std::find(ips->begin(), ips->end(), 0);
	ips->erase(z, ips->end());
	return true;
}

/* ---- instances --------------------------------------------------------- */

static int write_errno(const std::string &path, const std::string &text)
{
	int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = ::write(fd, text.data(), text.size());
	int e = n < 0 ? -errno : (size_t)n == text.size() ? 0 : -EIO;
	close(fd);
	return e;
}

/* The CPUs the instance has a buffer for: per_cpu/cpuN. */
static std::vector<int> buffer_cpus(const std::string &path)
{
	std::vector<int> v;
	if (DIR *d = opendir((path + "/per_cpu").c_str())) {
		while (struct dirent *de = readdir(d))
			if (!strncmp(de->d_name, "cpu", 3) && de->d_name[3])
				v.push_back(atoi(de->d_name + 3));
		closedir(d);
	}
	std::sort(v.begin(), v.end());
	return v;
}

int Instance::create(const std::string &name, unsigned buffer_kb)
{
	static std::atomic<int> n{ 0 };
	std::string r = root();
	if (r.empty())
		return -ENOENT;
	remove();
	std::string p = r + "/instances/" + name + "-" +
			std::to_string(getpid()) + "-" + std::to_string(n++);
	if (mkdir(p.c_str(), 0755))
		return -errno;
	path_ = p;
	int e = tracing_on(false);
	if (!e && buffer_kb)
		e = write("buffer_size_kb", std::to_string(buffer_kb));
	if (!e && write("trace_clock", "mono"))
		e = write("trace_clock", "global");
	if (!e)
		e = write("options/overwrite", "0");
	return e;
}

int Instance::remove()
{
	if (path_.empty())
		return 0;
	tracing_on(false);
	disable_events();
	set_option("userstacktrace_delay", false);
	int e = rmdir(path_.c_str()) ? -errno : 0;
	if (!e || e == -ENOENT)
		path_.clear();
	return e;
}

int Instance::rmdir_only()
{
	if (path_.empty())
		return 0;
	int e = rmdir(path_.c_str()) ? -errno : 0;
	if (!e)
		path_.clear();
	return e;
}

int Instance::write(const std::string &file, const std::string &text) const
{
	if (path_.empty())
		return -ENOENT;
	return write_errno(path_ + "/" + file, text);
}

std::string Instance::read(const std::string &file) const
{
	return path_.empty() ? "" : work::read_file(path_ + "/" + file);
}

int Instance::set_option(const std::string &option, bool on) const
{
	return write("options/" + option, on ? "1" : "0");
}

int Instance::option(const std::string &option) const
{
	int fd = open((path_ + "/options/" + option).c_str(), O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char c = 0;
	ssize_t n = ::read(fd, &c, 1);
	int e = n < 0 ? -errno : 0;
	close(fd);
	return e ? e : c == '1';
}

int Instance::enable_event(const std::string &event, const std::string &filter)
{
	if (!filter.empty()) {
		int e = write("events/" + event + "/filter", filter);
		if (e)
			return e;
	}
	return write("events/" + event + "/enable", "1");
}

int Instance::disable_events() const
{
	return write("events/enable", "0");
}

bool Instance::drain(std::string *err)
{
	PageLayout l;
	if (!parse_header_page(read("events/header_page"), &l, err))
		return false;
	std::vector<uint8_t> page(l.page_size());
	for (int cpu : buffer_cpus(path_)) {
		std::string p = path_ + "/per_cpu/cpu" + std::to_string(cpu) +
				"/trace_pipe_raw";
		int fd = open(p.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0) {
			*err = p + ": " + strerror(errno);
			return false;
		}
		bool ok = true;
		for (;;) {
			ssize_t n = ::read(fd, page.data(), page.size());
			if (n <= 0) {
				if (n < 0 && errno != EAGAIN) {
					*err = p + ": " + strerror(errno);
					ok = false;
				}
				break;
			}
			if (!parse_page(page.data(), n, l, cpu, &seq_[cpu],
					&events_[cpu], &missed_, err)) {
				*err = p + ": " + *err;
				ok = false;
				break;
			}
		}
		close(fd);
		if (!ok)
			return false;
	}
	return true;
}

std::vector<const RawEvent *> Instance::by_time() const
{
	std::vector<const RawEvent *> v;
	for (auto &[cpu, evs] : events_)
		for (const RawEvent &e : evs)
			v.push_back(&e);
	std::stable_sort(v.begin(), v.end(), [](const RawEvent *a,
						const RawEvent *b) {
		return a->ts != b->ts ? a->ts < b->ts : a->cpu != b->cpu ?
		       a->cpu < b->cpu : a->seq < b->seq;
	});
	return v;
}

uint64_t Instance::lost() const
{
	uint64_t n = missed_;
	for (int cpu : buffer_cpus(path_)) {
		std::istringstream in(read("per_cpu/cpu" + std::to_string(cpu) +
					   "/stats"));
		std::string line;
		while (std::getline(in, line)) {
			size_t c = line.find(':');
			if (c == std::string::npos)
				continue;
			std::string k = line.substr(0, c);
			if (k == "overrun" || k == "dropped events")
				n += strtoull(line.c_str() + c + 1, nullptr, 10);
		}
	}
	return n;
}

bool delay_expected(std::string *why)
{
	std::string config = work::kernel_config();
	if (!config.empty()) {
		bool unwind = config.find("\nCONFIG_UNWIND_USER=y\n") !=
			      std::string::npos;
		bool tracing = config.find("\nCONFIG_TRACING=y\n") !=
			       std::string::npos;
		bool stack = config.find("\nCONFIG_STACKTRACE=y\n") !=
			     std::string::npos;
		*why = std::string("/proc/config.gz: CONFIG_UNWIND_USER") +
		       (unwind ? "=y" : " unset") + ", CONFIG_TRACING" +
		       (tracing ? "=y" : " unset") + ", CONFIG_STACKTRACE" +
		       (stack ? "=y" : " unset");
		return unwind && tracing && stack;
	}
	std::string d;
	bool defer = features::defer_callchain(&d);
	*why = "no /proc/config.gz; defer_callchain: " +
	       (defer ? std::string("accepted") : d);
	return defer;
}

uint64_t kernel_dev(dev_t d)
{
	return (uint64_t)major(d) << 20 | minor(d);
}

} // namespace ftrace
