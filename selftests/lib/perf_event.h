/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One perf ring-buffer reader for every selftest: open events, drain their
 * buffers, and parse samples, sample_id trailers and deferred callchain
 * records into plain structs.
 */
#pragma once

#include <linux/perf_event.h>
#include <stdint.h>
#include <sys/types.h>

#include <algorithm>

#include <string>
#include <vector>

namespace perf {

/* A sample_id trailer or the matching fields of a sample. */
struct SampleId {
	uint32_t pid = 0, tid = 0;
	uint64_t time = 0, id = 0, stream_id = 0, identifier = 0;
	uint32_t cpu = 0;
};

struct Sample {
	uint16_t misc = 0; /* the header's: PERF_RECORD_MISC_USER etc. */
	SampleId sid;
	uint64_t ip = 0, addr = 0, period = 0;
	std::vector<uint64_t> callchain; /* raw, with PERF_CONTEXT_* markers */
	/*
	 * PERF_SAMPLE_REGS_USER: the ABI word (PERF_SAMPLE_REGS_ABI_*, 0 for
	 * a kernel thread, which has no registers) and the registers of
	 * sample_regs_user in bit order. It is the last field the reader
	 * parses, so the registers are the rest of the record.
	 */
	uint64_t regs_abi = 0;
	std::vector<uint64_t> regs_user;
};

struct DeferredCallchain {
	uint16_t misc = 0;
	uint64_t cookie = 0;
	std::vector<uint64_t> ips;
	SampleId sid; /* valid when the event has sample_id_all */
};

/* One raw record, copied out of the ring buffer (wrap-around undone). */
struct Record {
	perf_event_header header;
	std::vector<uint8_t> bytes; /* the whole record, header included */
};

/* Parse a PERF_RECORD_SAMPLE body for the supported sample_type bits. */
bool parse_sample(const Record &r, uint64_t sample_type, Sample *out,
		  std::string *err);
/* Parse the sample_id trailer at the end of a non-sample record. */
bool parse_sample_id(const Record &r, size_t body_end, uint64_t sample_type,
		     SampleId *out, std::string *err);
bool parse_deferred(const Record &r, uint64_t sample_type, bool sample_id_all,
		    DeferredCallchain *out, std::string *err);

/* The user part and the kernel part of a raw callchain. */
struct SplitChain {
	std::vector<uint64_t> kernel, user;
	bool has_kernel_ctx = false, has_user_ctx = false;
	bool deferred = false; /* ends in PERF_CONTEXT_USER_DEFERRED, cookie */
	uint64_t cookie = 0;
};
SplitChain split_callchain(const std::vector<uint64_t> &chain);

/*
 * Sets the uprobe PMU's fields of *a (type, the retprobe bit for a
 * uretprobe, path and file offset of the probed code); the other fields
 * are left to the caller. path must outlive the perf_event_open() call.
 * False without the uprobe PMU.
 */
bool uprobe_attr(const char *path, uint64_t offset, bool ret,
		 perf_event_attr *a);
/* The same for the kprobe PMU: func+offset in the kernel. */
bool kprobe_attr(const char *func, uint64_t offset, bool ret,
		 perf_event_attr *a);

/* perf_event_open(2); returns -errno on failure. */
int open_event(perf_event_attr *attr, pid_t pid, int cpu, int group_fd = -1,
	       unsigned long flags = PERF_FLAG_FD_CLOEXEC);

/* An event with a mapped ring buffer. */
class Event {
public:
	Event() = default;
	~Event();
	Event(const Event &) = delete;
	Event &operator=(const Event &) = delete;
	Event(Event &&o) noexcept;

	/* Returns 0 or -errno. data_pages must be a power of two; with a
	 * group_fd the event joins that leader's group. */
	int open(const perf_event_attr &attr, pid_t pid, int cpu,
		 size_t data_pages = 64, int group_fd = -1);
	int fd() const { return fd_; }
	const perf_event_attr &attr() const { return attr_; }
	void enable();
	void disable();
	/* Copy every record out of the buffer and release the space. */
	std::vector<Record> drain();
	/*
	 * Bytes written and not yet drained, and the buffer's size: read
	 * from the mapped page alone, no system call, so a test can drain
	 * as the buffer fills without adding hits of its own.
	 */
	size_t pending() const;
	size_t capacity() const { return data_len_; }
	/*
	 * Records the kernel dropped because this buffer was full. A
	 * PERF_RECORD_LOST only reports them once a later record fits, so
	 * drain() also reads the event's own count (PERF_FORMAT_LOST),
	 * which covers drops at the very end of a run as well.
	 */
	uint64_t lost() const { return std::max(lost_, kernel_lost_); }
	/* The part of lost() no PERF_RECORD_LOST has reported. */
	uint64_t unreported_lost() const
	{
		return kernel_lost_ > lost_ ? kernel_lost_ - lost_ : 0;
	}

private:
	int fd_ = -1;
	perf_event_attr attr_{};
	void *base_ = nullptr;
	size_t map_len_ = 0, data_len_ = 0;
	uint64_t lost_ = 0, kernel_lost_ = 0;
};

} // namespace perf
