// SPDX-License-Identifier: GPL-2.0
#include "perf_event.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <string>

#include "perf_abi.h"
#include "workload.h"

namespace perf {

namespace {

/* Bounds-checked cursor over one record. */
class Cursor {
public:
	Cursor(const Record &r, size_t pos, size_t end)
		: p_(r.bytes.data()), pos_(pos), end_(end)
	{
	}
	bool u64(uint64_t *v)
	{
		if (pos_ + 8 > end_)
			return false;
		memcpy(v, p_ + pos_, 8);
		pos_ += 8;
		return true;
	}
	bool u32pair(uint32_t *a, uint32_t *b)
	{
		uint64_t v;
		if (!u64(&v))
			return false;
		*a = (uint32_t)v;
		*b = (uint32_t)(v >> 32);
		return true;
	}
	size_t pos() const { return pos_; }

private:
	const uint8_t *p_;
	size_t pos_, end_;
};

/* Bytes of the sample_id trailer for this sample_type. */
size_t sample_id_size(uint64_t t)
{
	size_t n = 0;
	for (uint64_t bit : { PERF_SAMPLE_TID, PERF_SAMPLE_TIME, PERF_SAMPLE_ID,
			      PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,
			      PERF_SAMPLE_IDENTIFIER })
		if (t & bit)
			n += 8;
	return n;
}

constexpr uint64_t kSupported =
	PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
	PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID |
	PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
	PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER;

} // namespace

bool parse_sample(const Record &r, uint64_t t, Sample *s, std::string *err)
{
	if (t & ~kSupported) {
		*err = "sample_type has bits the reader does not parse";
		return false;
	}
	Cursor c(r, sizeof(perf_event_header), r.bytes.size());
	s->misc = r.header.misc;
	uint64_t v;
	uint32_t res;
	bool ok = true;
	if (t & PERF_SAMPLE_IDENTIFIER)
		ok &= c.u64(&s->sid.identifier);
	if (t & PERF_SAMPLE_IP)
		ok &= c.u64(&s->ip);
	if (t & PERF_SAMPLE_TID)
		ok &= c.u32pair(&s->sid.pid, &s->sid.tid);
	if (t & PERF_SAMPLE_TIME)
		ok &= c.u64(&s->sid.time);
	if (t & PERF_SAMPLE_ADDR)
		ok &= c.u64(&s->addr);
	if (t & PERF_SAMPLE_ID)
		ok &= c.u64(&s->sid.id);
	if (t & PERF_SAMPLE_STREAM_ID)
		ok &= c.u64(&s->sid.stream_id);
	if (t & PERF_SAMPLE_CPU)
		ok &= c.u32pair(&s->sid.cpu, &res);
	if (t & PERF_SAMPLE_PERIOD)
		ok &= c.u64(&s->period);
	if (ok && (t & PERF_SAMPLE_CALLCHAIN)) {
		ok = c.u64(&v) && v <= 4096;
		for (uint64_t i = 0; ok && i < v; i++) {
			uint64_t ip;
			ok = c.u64(&ip);
			s->callchain.push_back(ip);
		}
	}
	if (ok && (t & PERF_SAMPLE_REGS_USER)) {
		ok = c.u64(&s->regs_abi);
		while (ok && s->regs_abi && c.pos() < r.bytes.size()) {
			ok = c.u64(&v);
			s->regs_user.push_back(v);
		}
	}
	if (!ok)
		*err = "sample record shorter than its sample_type says";
	return ok;
}

bool parse_sample_id(const Record &r, size_t body_end, uint64_t t,
		     SampleId *s, std::string *err)
{
	size_t need = sample_id_size(t);
	if (body_end + need != r.bytes.size()) {
		*err = "record size " + std::to_string(r.bytes.size()) +
		       " != body " + std::to_string(body_end) +
		       " + sample_id " + std::to_string(need);
		return false;
	}
	Cursor c(r, body_end, r.bytes.size());
	uint32_t res;
	bool ok = true;
	if (t & PERF_SAMPLE_TID)
		ok &= c.u32pair(&s->pid, &s->tid);
	if (t & PERF_SAMPLE_TIME)
		ok &= c.u64(&s->time);
	if (t & PERF_SAMPLE_ID)
		ok &= c.u64(&s->id);
	if (t & PERF_SAMPLE_STREAM_ID)
		ok &= c.u64(&s->stream_id);
	if (t & PERF_SAMPLE_CPU)
		ok &= c.u32pair(&s->cpu, &res);
	if (t & PERF_SAMPLE_IDENTIFIER)
		ok &= c.u64(&s->identifier);
	return ok;
}

bool parse_deferred(const Record &r, uint64_t t, bool sample_id_all,
		    DeferredCallchain *d, std::string *err)
{
	if (r.header.type != perf_abi::kRecordCallchainDeferred) {
		*err = "not a PERF_RECORD_CALLCHAIN_DEFERRED record";
		return false;
	}
	d->misc = r.header.misc;
	Cursor c(r, sizeof(perf_event_header), r.bytes.size());
	uint64_t nr;
	if (!c.u64(&d->cookie) || !c.u64(&nr) ||
	    nr > (r.bytes.size() - c.pos()) / 8) {
		*err = "deferred record too short for its nr";
		return false;
	}
	d->ips.clear();
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t ip;
		c.u64(&ip);
		d->ips.push_back(ip);
	}
	if (sample_id_all)
		return parse_sample_id(r, c.pos(), t, &d->sid, err);
	if (c.pos() != r.bytes.size()) {
		*err = "deferred record has trailing bytes without sample_id_all";
		return false;
	}
	return true;
}

SplitChain split_callchain(const std::vector<uint64_t> &chain)
{
	SplitChain s;
	std::vector<uint64_t> *cur = nullptr;
	for (size_t i = 0; i < chain.size(); i++) {
		uint64_t ip = chain[i];
		if (ip == perf_abi::kContextUserDeferred) {
			s.deferred = true;
			if (i + 1 < chain.size())
				s.cookie = chain[i + 1];
			break;
		}
		if (ip == PERF_CONTEXT_KERNEL) {
			s.has_kernel_ctx = true;
			cur = &s.kernel;
		} else if (ip == PERF_CONTEXT_USER) {
			s.has_user_ctx = true;
			cur = &s.user;
		} else if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			cur = nullptr; /* hv, guest: not ours */
		} else if (cur) {
			cur->push_back(ip);
		}
	}
	return s;
}

namespace {

/* The fields of the probe PMU called pmu (a directory of sysfs) */
bool probe_attr(const std::string &pmu, const char *where, uint64_t offset,
		bool ret, perf_event_attr *a)
{
	std::string type = work::read_file(pmu + "type");
	std::string bit = work::read_file(pmu + "format/retprobe");
	if (type.empty() || bit.compare(0, 7, "config:"))
		return false;
	a->type = atoi(type.c_str());
	a->config = ret ? 1ULL << atoi(bit.c_str() + 7) : 0;
	a->config1 = (uint64_t)(uintptr_t)where; /* uprobe_path, kprobe_func */
	a->config2 = offset;			 /* probe_offset */
	return true;
}

} // namespace

bool uprobe_attr(const char *path, uint64_t offset, bool ret,
		 perf_event_attr *a)
{
	return probe_attr("/sys/bus/event_source/devices/uprobe/", path,
			  offset, ret, a);
}

bool kprobe_attr(const char *func, uint64_t offset, bool ret,
		 perf_event_attr *a)
{
	return probe_attr("/sys/bus/event_source/devices/kprobe/", func,
			  offset, ret, a);
}

int open_event(perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
	       unsigned long flags)
{
	long fd = syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
	return fd < 0 ? -errno : (int)fd;
}

Event::~Event()
{
	if (base_)
		munmap(base_, map_len_);
	if (fd_ >= 0)
		close(fd_);
}

Event::Event(Event &&o) noexcept
	: fd_(o.fd_), attr_(o.attr_), base_(o.base_), map_len_(o.map_len_),
	  data_len_(o.data_len_), lost_(o.lost_), kernel_lost_(o.kernel_lost_)
{
	o.fd_ = -1;
	o.base_ = nullptr;
}

int Event::open(const perf_event_attr &attr, pid_t pid, int cpu,
		size_t data_pages, int group_fd)
{
	attr_ = attr;
	attr_.size = sizeof(attr_);
	/* Only the count and the lost samples: see lost(). */
	if (!attr_.read_format)
		attr_.read_format = PERF_FORMAT_LOST;
	fd_ = open_event(&attr_, pid, cpu, group_fd);
	if (fd_ < 0) {
		int e = fd_;
		fd_ = -1;
		return e;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	data_len_ = data_pages * page;
	map_len_ = data_len_ + page;
	void *p = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd_, 0);
	if (p == MAP_FAILED) {
		int e = -errno;
		close(fd_);
		fd_ = -1;
		return e;
	}
	base_ = p;
	return 0;
}

void Event::enable()
{
	ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
}

void Event::disable()
{
	ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
}

size_t Event::pending() const
{
	if (!base_)
		return 0;
	auto *meta = static_cast<perf_event_mmap_page *>(base_);
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	return head - meta->data_tail;
}

std::vector<Record> Event::drain()
{
	std::vector<Record> out;
	auto *meta = static_cast<perf_event_mmap_page *>(base_);
	const uint8_t *data = static_cast<uint8_t *>(base_) + meta->data_offset;
	uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = meta->data_tail;
	auto copy = [&](uint64_t pos, void *dst, size_t len) {
		for (size_t i = 0; i < len; i++)
			static_cast<uint8_t *>(dst)[i] =
				data[(pos + i) % data_len_];
	};
	while (tail + sizeof(perf_event_header) <= head) {
		Record r;
		copy(tail, &r.header, sizeof(r.header));
		if (r.header.size < sizeof(r.header) ||
		    tail + r.header.size > head)
			break;
		r.bytes.resize(r.header.size);
		copy(tail, r.bytes.data(), r.header.size);
		tail += r.header.size;
		if (r.header.type == PERF_RECORD_LOST && r.bytes.size() >= 24) {
			uint64_t n;
			memcpy(&n, r.bytes.data() + 16, 8);
			lost_ += n;
		}
		out.push_back(std::move(r));
	}
	__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	if (attr_.read_format == PERF_FORMAT_LOST) {
		uint64_t v[2];
		if (read(fd_, v, sizeof(v)) == (ssize_t)sizeof(v))
			kernel_lost_ = v[1];
	}
	return out;
}

} // namespace perf
