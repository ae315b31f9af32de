/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map an ELF shared object the way a loader does: reserve its span, then
 * mmap() each PT_LOAD segment of the file over it with the segment's
 * protection (the text with PROT_EXEC, where the kernel looks for its
 * SFrame section). For libraries without relocations and without .bss
 * (helpers/sframe/sframe_lib.so, bench's chain libraries): nothing is
 * relocated. C and C++ (sframe_libs.c and bench.cc include it).
 */
#ifndef SELFTESTS_LIB_MAP_ELF_H
#define SELFTESTS_LIB_MAP_ELF_H

#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAP_ELF_PAGE 4096UL
#define MAP_ELF_MAX_PHDRS 16

/*
 * Map PATH; its entry point, or NULL (errno set). *text and *end: the
 * executable segment's pages; *span and *len what to munmap() to drop
 * it all.
 */
static inline void *map_elf(const char *path, unsigned long *text,
			    unsigned long *end, void **span,
			    unsigned long *len)
{
	Elf64_Phdr ph[MAP_ELF_MAX_PHDRS];
	unsigned long lo = -1UL, hi = 0;
	ssize_t phsize;
	Elf64_Ehdr eh;
	char *base;
	int fd, i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	phsize = 0;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_phnum <= MAP_ELF_MAX_PHDRS) {
		phsize = (ssize_t)(eh.e_phnum * sizeof(ph[0]));
		if (pread(fd, ph, phsize, eh.e_phoff) != phsize)
			phsize = 0;
	}
	for (i = 0; phsize && i < eh.e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if ((ph[i].p_vaddr & -MAP_ELF_PAGE) < lo)
			lo = ph[i].p_vaddr & -MAP_ELF_PAGE;
		if (ph[i].p_vaddr + ph[i].p_memsz > hi)
			hi = ph[i].p_vaddr + ph[i].p_memsz;
	}
	if (lo >= hi) {
		close(fd);
		return NULL;
	}
	hi = (hi + MAP_ELF_PAGE - 1) & -MAP_ELF_PAGE;
	/* Reserve the whole span, then map each segment over it */
	base = (char *)mmap(NULL, hi - lo, PROT_NONE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED) {
		close(fd);
		return NULL;
	}
	*span = base;
	*len = hi - lo;
	base -= lo;
	for (i = 0; i < eh.e_phnum; i++) {
		unsigned long start = ph[i].p_vaddr & -MAP_ELF_PAGE;
		unsigned long seg = ph[i].p_vaddr + ph[i].p_filesz - start;
		int prot = 0;

		if (ph[i].p_type != PT_LOAD)
			continue;
		prot |= ph[i].p_flags & PF_R ? PROT_READ : 0;
		prot |= ph[i].p_flags & PF_W ? PROT_WRITE : 0;
		prot |= ph[i].p_flags & PF_X ? PROT_EXEC : 0;
		if (mmap(base + start, seg, prot, MAP_PRIVATE | MAP_FIXED, fd,
			 ph[i].p_offset & -MAP_ELF_PAGE) == MAP_FAILED) {
			munmap(*span, *len);
			close(fd);
			return NULL;
		}
		if (prot & PROT_EXEC) {
			*text = (unsigned long)base + start;
			*end = *text + ((seg + MAP_ELF_PAGE - 1) &
					-MAP_ELF_PAGE);
		}
	}
	close(fd);
	return base + eh.e_entry;
}

#endif
