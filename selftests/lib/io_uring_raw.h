/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A minimal io_uring over the raw syscalls (no liburing in the guest):
 * enough to queue reads that io-wq workers (iou-wrk-<pid>) carry out.
 */
#pragma once

#include <linux/io_uring.h>
#include <stddef.h>
#include <stdint.h>

namespace uring {

class Ring {
public:
	/* Returns 0 or -errno (-ENOSYS: no io_uring in this kernel). */
	int setup(unsigned entries) { return setup(entries, 0); }
	/* With IORING_SETUP_* flags: IORING_SETUP_SQPOLL starts a kernel
	 * side submission thread (iou-sqp-<pid>), idle after 10 ms. */
	int setup(unsigned entries, unsigned flags);
	/*
	 * Queue one IORING_OP_READ of len bytes from fd into buf; async
	 * sets IOSQE_ASYNC, which hands the request to an io-wq worker.
	 * Returns false when the SQ is full.
	 */
	bool queue_read(int fd, void *buf, unsigned len, bool async,
			uint64_t user_data);
	/* Queue one IORING_OP_NOP, with IOSQE_ASYNC if async. */
	bool queue_nop(bool async, uint64_t user_data);
	/* Submit what is queued and wait for min_complete; returns
	 * io_uring_enter's result or -errno. */
	int submit_and_wait(unsigned min_complete);
	/* Pop one completion; false when the CQ is empty. */
	bool reap(io_uring_cqe *out);
	~Ring();

private:
	int fd_ = -1;
	io_uring_params p_{};
	void *sq_ = nullptr, *cq_ = nullptr, *sqes_ = nullptr;
	size_t sq_len_ = 0, cq_len_ = 0, sqes_len_ = 0;
	unsigned *sq_head_ = nullptr, *sq_tail_ = nullptr, *sq_mask_ = nullptr,
		 *sq_array_ = nullptr, *cq_head_ = nullptr,
		 *cq_tail_ = nullptr, *cq_mask_ = nullptr;
	io_uring_cqe *cqes_ = nullptr;
	unsigned queued_ = 0;
	io_uring_sqe *next_sqe();
	void push_sqe();
};

} // namespace uring
