// SPDX-License-Identifier: GPL-2.0
#include "io_uring_raw.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_io_uring_setup
#define __NR_io_uring_setup 425
#define __NR_io_uring_enter 426
#endif

namespace uring {

namespace {

template <typename T> T *at(void *base, unsigned off)
{
	return reinterpret_cast<T *>(static_cast<char *>(base) + off);
}

} // namespace

int Ring::setup(unsigned entries, unsigned flags)
{
	memset(&p_, 0, sizeof(p_));
	p_.flags = flags;
	if (flags & IORING_SETUP_SQPOLL)
		p_.sq_thread_idle = 10; /* ms */
	long fd = syscall(__NR_io_uring_setup, entries, &p_);
	if (fd < 0)
		return -errno;
	fd_ = (int)fd;
	sq_len_ = p_.sq_off.array + p_.sq_entries * sizeof(unsigned);
	cq_len_ = p_.cq_off.cqes + p_.cq_entries * sizeof(io_uring_cqe);
	sqes_len_ = p_.sq_entries * sizeof(io_uring_sqe);
	sq_ = mmap(nullptr, sq_len_, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_POPULATE, fd_, IORING_OFF_SQ_RING);
	cq_ = mmap(nullptr, cq_len_, PROT_READ | PROT_WRITE,
		   MAP_SHARED | MAP_POPULATE, fd_, IORING_OFF_CQ_RING);
	sqes_ = mmap(nullptr, sqes_len_, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_POPULATE, fd_, IORING_OFF_SQES);
	if (sq_ == MAP_FAILED || cq_ == MAP_FAILED || sqes_ == MAP_FAILED) {
		int e = -errno;
		if (sq_ == MAP_FAILED)
			sq_ = nullptr;
		if (cq_ == MAP_FAILED)
			cq_ = nullptr;
		if (sqes_ == MAP_FAILED)
			sqes_ = nullptr;
		return e;
	}
	sq_head_ = at<unsigned>(sq_, p_.sq_off.head);
	sq_tail_ = at<unsigned>(sq_, p_.sq_off.tail);
	sq_mask_ = at<unsigned>(sq_, p_.sq_off.ring_mask);
	sq_array_ = at<unsigned>(sq_, p_.sq_off.array);
	cq_head_ = at<unsigned>(cq_, p_.cq_off.head);
	cq_tail_ = at<unsigned>(cq_, p_.cq_off.tail);
	cq_mask_ = at<unsigned>(cq_, p_.cq_off.ring_mask);
	cqes_ = at<io_uring_cqe>(cq_, p_.cq_off.cqes);
	return 0;
}

io_uring_sqe *Ring::next_sqe()
{
	unsigned tail = *sq_tail_;
	unsigned head = __atomic_load_n(sq_head_, __ATOMIC_ACQUIRE);
	if (tail - head >= p_.sq_entries)
		return nullptr;
	io_uring_sqe *sqe = static_cast<io_uring_sqe *>(sqes_) +
			    (tail & *sq_mask_);
	memset(sqe, 0, sizeof(*sqe));
	return sqe;
}

void Ring::push_sqe()
{
	unsigned tail = *sq_tail_;
	unsigned idx = tail & *sq_mask_;
	sq_array_[idx] = idx;
	__atomic_store_n(sq_tail_, tail + 1, __ATOMIC_RELEASE);
	queued_++;
}

bool Ring::queue_read(int fd, void *buf, unsigned len, bool async,
		      uint64_t user_data)
{
	io_uring_sqe *sqe = next_sqe();
	if (!sqe)
		return false;
	sqe->opcode = IORING_OP_READ;
	sqe->fd = fd;
	sqe->addr = (uint64_t)(uintptr_t)buf;
	sqe->len = len;
	sqe->off = 0;
	sqe->flags = async ? IOSQE_ASYNC : 0;
	sqe->user_data = user_data;
	push_sqe();
	return true;
}

bool Ring::queue_nop(bool async, uint64_t user_data)
{
	io_uring_sqe *sqe = next_sqe();
	if (!sqe)
		return false;
	sqe->opcode = IORING_OP_NOP;
	sqe->flags = async ? IOSQE_ASYNC : 0;
	sqe->user_data = user_data;
	push_sqe();
	return true;
}

int Ring::submit_and_wait(unsigned min_complete)
{
	unsigned flags = min_complete ? IORING_ENTER_GETEVENTS : 0;
	/* The submission thread may have gone idle: wake it */
	if (p_.flags & IORING_SETUP_SQPOLL)
		flags |= IORING_ENTER_SQ_WAKEUP;
	long r = syscall(__NR_io_uring_enter, fd_, queued_, min_complete,
			 flags, nullptr, 0);
	if (r < 0)
		return -errno;
	queued_ = 0;
	return (int)r;
}

bool Ring::reap(io_uring_cqe *out)
{
	unsigned head = *cq_head_;
	if (head == __atomic_load_n(cq_tail_, __ATOMIC_ACQUIRE))
		return false;
	*out = cqes_[head & *cq_mask_];
	__atomic_store_n(cq_head_, head + 1, __ATOMIC_RELEASE);
	return true;
}

Ring::~Ring()
{
	if (sq_)
		munmap(sq_, sq_len_);
	if (cq_)
		munmap(cq_, cq_len_);
	if (sqes_)
		munmap(sqes_, sqes_len_);
	if (fd_ >= 0)
		close(fd_);
}

} // namespace uring
