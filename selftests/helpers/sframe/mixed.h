/* SPDX-License-Identifier: GPL-2.0 */
/* sframe_mixed: the functions its two objects call across (mixed_fp.c). */
#ifndef HELPERS_SFRAME_MIXED_H
#define HELPERS_SFRAME_MIXED_H

#define NOINLINE __attribute__((noinline))

/* Built with frame pointers (mixed_fp.c). */
long mx_fp_callback(long n);
long mx_fp_lib(long n, long (*cb)(long));
/* Built without, with .sframe (mixed_sf.c). */
long mx_sf_callback(long n);
long mx_sf_lib(long n, long (*cb)(long));
long mx_sf_outer(long n);

#endif
