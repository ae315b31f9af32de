/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Resolve addresses against the test binary's own symbol table
 * (/proc/self/exe, a static non-PIE ELF64 or ELF32 file).
 */
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace syms {

struct Symbol {
	std::string name;
	uint64_t start = 0, size = 0;
	uint64_t file_offset = 0; /* of start, in the ELF file (uprobes) */
	bool contains(uint64_t a) const { return a >= start && a < start + size; }
};

/* Function symbols of an ELF file; empty on error (err says why). */
std::vector<Symbol> load(const std::string &path, std::string *err);

/* PT_GNU_SFRAME: not in bookworm's glibc elf.h (binutils 2.40 emits it). */
constexpr uint32_t kPtGnuSframe = 0x6474e554;

/* A program header of an ELF64 or ELF32 file. */
struct Segment {
	uint32_t type = 0, flags = 0;
	uint64_t offset = 0, vaddr = 0, memsz = 0;
};
/* The program headers of an ELF file; empty on error (err says why). */
std::vector<Segment> segments(const std::string &path, std::string *err);
/* The longest run of consecutive ips inside sym: how many frames of a
 * recursion through sym a chain holds. */
int longest_run(const std::vector<uint64_t> &ips, const Symbol &sym);
/* The function symbol called name, or nullptr. */
const Symbol *find(const std::vector<Symbol> &s, const std::string &name);
/* The function containing addr, or nullptr. */
const Symbol *lookup(const std::vector<Symbol> &s, uint64_t addr);

/* The running program's function symbols (/proc/self/exe), loaded once. */
const std::vector<Symbol> &self();
/* "func+0x12", or "0x4011a0" where no symbol of s holds ip. */
std::string name_of(uint64_t ip, const std::vector<Symbol> &s = self());
/* A chain for a test's output, "[n: func+0x12 func+0x34 ...]": its
 * length and its first max frames by name. */
std::string chain_str(const std::vector<uint64_t> &ips,
		      const std::vector<Symbol> &s = self(), size_t max = 6);

} // namespace syms
