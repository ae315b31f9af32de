/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A chain of calls through copies of sframe_lib.so: hop i calls
 * hop[i].fn(&hop[i + 1], n). sf_lib_call() returns what its callee
 * returns.
 */
#ifndef HELPERS_SFRAME_LIBS_H
#define HELPERS_SFRAME_LIBS_H

struct sf_hop {
	long (*fn)(const struct sf_hop *next, long n);
};

long sf_lib_call(const struct sf_hop *h, long n);

#endif
