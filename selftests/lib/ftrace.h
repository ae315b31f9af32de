/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ftrace's side of deferred user stacks (tracefs option
 * userstacktrace_delay): tracefs instances a test owns, and a reader of
 * their per-CPU binary buffers (per_cpu/cpuN/trace_pipe_raw), the way
 * trace-cmd reads them: pages as events/header_page describes them, each
 * event's fields as its events/<system>/<name>/format file says. The
 * binary buffers, not the trace file's text, because the text of a
 * user_unwind_stack event shows no ips (the addresses) and its layout is
 * the kernel's to change; the format files are the interface tools read.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace ftrace {

/* /sys/kernel/tracing (or debugfs's tracing), "" when tracefs is absent. */
std::string root();

/* ---- format files --------------------------------------------------------- */

/* One "field:" line of a format file. */
struct Field {
	std::string type, name; /* "__data_loc unsigned long[]", "stack" */
	unsigned offset = 0, size = 0;
	bool is_signed = false;
	bool data_loc = false; /* a u32: offset (low 16 bits), length (high) */
	unsigned array_len = 0; /* "unsigned long caller[8]": 8 */
};

struct Format {
	std::string name;
	long id = -1;
	std::vector<Field> fields; /* common fields first, as in the file */
	const Field *field(const std::string &name) const;
};

/* Parse the text of events/<system>/<name>/format; false with err. */
bool parse_format(const std::string &text, Format *out, std::string *err);

/* ---- pages of trace_pipe_raw --------------------------------------------- */

/* A page's layout, from events/header_page. */
struct PageLayout {
	unsigned commit_offset = 8, commit_size = 8;
	unsigned data_offset = 16, data_size = 4080;
	size_t page_size() const { return data_offset + data_size; }
};
bool parse_header_page(const std::string &text, PageLayout *out,
		       std::string *err);

/* One event of a buffer: its data (after the ring buffer's header). */
struct RawEvent {
	uint64_t ts = 0; /* the instance's trace_clock */
	int cpu = -1;
	size_t seq = 0; /* its place in its CPU's buffer, from 0 */
	std::vector<uint8_t> data;
	/* The common fields (struct trace_entry: type u16 at 0, pid s32 at 4). */
	uint16_t type() const;
	int32_t pid() const;
};

/*
 * Parse one page read from trace_pipe_raw (layout l), appending its data
 * events to out with cpu and consecutive seq numbers from *seq. *missed
 * is set when the page says events were lost before it. False with err
 * for a page that is not well formed.
 */
bool parse_page(const uint8_t *page, size_t len, const PageLayout &l, int cpu,
		size_t *seq, std::vector<RawEvent> *out, bool *missed,
		std::string *err);

/* A field's value (1, 2, 4 or 8 bytes, unsigned): false if out of the event. */
bool get_uint(const RawEvent &e, const Field &f, uint64_t *v);
/*
 * An array field's elements of elem bytes each (4 or 8): a __data_loc
 * array (the u32 at the field's offset locates it from the start of the
 * event) or a fixed one ("unsigned long caller[8]"). False if it does not
 * fit in the event.
 */
bool get_array(const RawEvent &e, const Field &f, unsigned elem,
	       std::vector<uint64_t> *v);

/* ---- the deferred user stack events --------------------------------------- */

struct UnwindStack {
	uint64_t cookie = 0;
	std::vector<uint64_t> stack, inodes, dev, ips;
};

/*
 * The formats of ftrace/user_unwind_cookie, ftrace/user_unwind_stack and
 * ftrace/user_stack (userstacktrace's in-place walk) and decoding of
 * their events.
 */
class Decoder {
public:
	/* Load the three formats from tracefs: false with err. */
	bool load(std::string *err);
	/* Load them from format file texts (unit tests). */
	bool load_texts(const std::string &cookie, const std::string &stack,
			const std::string &user_stack, std::string *err);
	bool is_cookie(const RawEvent &e) const { return e.type() == cookie_.id; }
	bool is_stack(const RawEvent &e) const { return e.type() == stack_.id; }
	bool is_user_stack(const RawEvent &e) const
	{
		return e.type() == user_stack_.id;
	}
	bool cookie(const RawEvent &e, uint64_t *c) const;
	bool stack(const RawEvent &e, UnwindStack *s) const;
	/* The non-zero entries of caller[] (the in-place walk). */
	bool user_stack(const RawEvent &e, std::vector<uint64_t> *ips) const;
	const Format &stack_format() const { return stack_; }

private:
	Format cookie_, stack_, user_stack_;
};

/* ---- instances --------------------------------------------------------- */

/*
 * A tracefs instance the test creates and always removes: the destructor
 * stops tracing, disables its events and its userstacktrace_delay option
 * and removes it, whatever the test did.
 */
class Instance {
public:
	Instance() = default;
	Instance(const Instance &) = delete;
	Instance &operator=(const Instance &) = delete;
	~Instance() { remove(); }

	/*
	 * mkdir instances/<name>-<pid>-<n>; 0 or -errno. Tracing starts off;
	 * buffer_kb per CPU (0: leave the default), trace_clock mono (the
	 * clock work::now_ns() reads, the same on every CPU), overwrite off.
	 */
	int create(const std::string &name, unsigned buffer_kb = 1024);
	/* Stop, clean up and rmdir; 0 or -errno (0 when there is none). */
	int remove();
	/* rmdir as it is (tracing, events, options left on); 0 or -errno. */
	int rmdir_only();
	bool exists() const { return !path_.empty(); }
	const std::string &path() const { return path_; }

	/* Write text to the instance's file (relative path): 0 or -errno. */
	int write(const std::string &file, const std::string &text) const;
	std::string read(const std::string &file) const;
	int set_option(const std::string &option, bool on) const;
	/* "1" / "0" of options/<option>; -errno if it cannot be read. */
	int option(const std::string &option) const;
	/* Enable system/name with filter (none if empty); 0 or -errno. */
	int enable_event(const std::string &event, const std::string &filter);
	int disable_events() const;
	int tracing_on(bool on) const { return write("tracing_on", on ? "1" : "0"); }

	/*
	 * Read every CPU's trace_pipe_raw until it is empty, appending to
	 * events(cpu); false with err. Each CPU's events stay in order.
	 */
	bool drain(std::string *err);
	const std::map<int, std::vector<RawEvent>> &events() const { return events_; }
	/* Every event drained so far, ordered by time (then CPU, then seq). */
	std::vector<const RawEvent *> by_time() const;
	/* Events lost: pages flagged as missing some, plus the per-CPU
	 * stats' overrun and dropped counts. */
	uint64_t lost() const;

private:
	std::string path_;
	std::map<int, std::vector<RawEvent>> events_;
	std::map<int, size_t> seq_;
	bool missed_ = false;
};

/*
 * Whether this kernel must have userstacktrace_delay: its own config
 * (/proc/config.gz) enables CONFIG_UNWIND_USER, CONFIG_TRACING and
 * CONFIG_STACKTRACE (what the option's CONFIG_TRACE_USER_UNWIND depends
 * on), or, without a readable config, perf takes defer_callchain. why
 * says which.
 */
bool delay_expected(std::string *why);

/* The kernel's dev_t of a stat() st_dev: major << 20 | minor. */
uint64_t kernel_dev(dev_t d);

} // namespace ftrace
