// SPDX-License-Identifier: GPL-2.0
#include "symbols.h"

#include <elf.h>
#include <stdio.h>
#include <string.h>

#include <fstream>

namespace syms {

namespace {

template <typename Ehdr, typename Shdr, typename Sym>
std::vector<Symbol> parse(const std::vector<char> &f, std::string *err)
{
	std::vector<Symbol> out;
	if (f.size() < sizeof(Ehdr)) {
		*err = "truncated ELF header";
		return out;
	}
	Ehdr eh;
	memcpy(&eh, f.data(), sizeof(eh));
	if (eh.e_shoff == 0 || eh.e_shoff + eh.e_shnum * sizeof(Shdr) > f.size()) {
		*err = "no section headers";
		return out;
	}
	std::vector<Shdr> sh(eh.e_shnum);
	memcpy(sh.data(), f.data() + eh.e_shoff, eh.e_shnum * sizeof(Shdr));
	for (const Shdr &s : sh) {
		if (s.sh_type != SHT_SYMTAB || s.sh_link >= sh.size())
			continue;
		const Shdr &str = sh[s.sh_link];
		if (s.sh_offset + s.sh_size > f.size() ||
		    str.sh_offset + str.sh_size > f.size())
			break;
		for (size_t off = 0; off + sizeof(Sym) <= s.sh_size;
		     off += sizeof(Sym)) {
			Sym sym;
			memcpy(&sym, f.data() + s.sh_offset + off, sizeof(sym));
			if ((sym.st_info & 0xf) != STT_FUNC || !sym.st_value ||
			    sym.st_name >= str.sh_size)
				continue;
			const char *name = f.data() + str.sh_offset + sym.st_name;
			Symbol fn;
			fn.name.assign(name, strnlen(name,
						     str.sh_size - sym.st_name));
			fn.start = sym.st_value;
			fn.size = sym.st_size;
			if (sym.st_shndx < sh.size()) {
				const Shdr &in = sh[sym.st_shndx];
				fn.file_offset = fn.start - in.sh_addr +
						 in.sh_offset;
			}
			out.push_back(fn);
		}
	}
	if (out.empty())
		*err = "no function symbols (stripped binary?)";
	return out;
}

template <typename Ehdr, typename Phdr>
std::vector<Segment> parse_segments(const std::vector<char> &f,
				    std::string *err)
{
	std::vector<Segment> out;
	Ehdr eh;
	if (f.size() < sizeof(eh)) {
		*err = "truncated ELF header";
		return out;
	}
	memcpy(&eh, f.data(), sizeof(eh));
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		uint64_t at = eh.e_phoff + (uint64_t)i * eh.e_phentsize;
		Phdr ph;
		if (eh.e_phentsize < sizeof(ph) || at + sizeof(ph) > f.size()) {
			*err = "truncated program headers";
			return {};
		}
		memcpy(&ph, f.data() + at, sizeof(ph));
		out.push_back({ ph.p_type, ph.p_flags, ph.p_offset, ph.p_vaddr,
				ph.p_memsz });
	}
	return out;
}

/* PATH's bytes in F; false, with err set, when it is not an ELF file. */
bool read_elf(const std::string &path, std::vector<char> *f,
	      std::string *err)
{
	/* One read of the whole file: the test binaries are a few MB, and
	 * a byte at a time through a stream takes long under TCG. */
	std::ifstream in(path, std::ios::binary | std::ios::ate);
	f->assign(in ? (size_t)in.tellg() : 0, 0);
	in.seekg(0);
	if (!in.read(f->data(), f->size()))
		f->clear();
	if (f->size() < EI_NIDENT || memcmp(f->data(), ELFMAG, SELFMAG)) {
		*err = path + ": not an ELF file";
		return false;
	}
	return true;
}

} // namespace

std::vector<Symbol> load(const std::string &path, std::string *err)
{
	std::vector<char> f;
	if (!read_elf(path, &f, err))
		return {};
	if (f[EI_CLASS] == ELFCLASS64)
		return parse<Elf64_Ehdr, Elf64_Shdr, Elf64_Sym>(f, err);
	return parse<Elf32_Ehdr, Elf32_Shdr, Elf32_Sym>(f, err);
}

std::vector<Segment> segments(const std::string &path, std::string *err)
{
	std::vector<char> f;
	if (!read_elf(path, &f, err))
		return {};
	if (f[EI_CLASS] == ELFCLASS64)
		return parse_segments<Elf64_Ehdr, Elf64_Phdr>(f, err);
	return parse_segments<Elf32_Ehdr, Elf32_Phdr>(f, err);
}

int longest_run(const std::vector<uint64_t> &ips, const Symbol &sym)
{
	int best = 0, run = 0;
	for (uint64_t ip : ips) {
		run = sym.contains(ip) ? run + 1 : 0;
		best = run > best ? run : best;
	}
	return best;
}

const Symbol *find(const std::vector<Symbol> &s, const std::string &name)
{
	for (const Symbol &sym : s)
		if (sym.name == name)
			return &sym;
	return nullptr;
}

const Symbol *lookup(const std::vector<Symbol> &s, uint64_t addr)
{
	for (const Symbol &sym : s)
		if (sym.contains(addr))
			return &sym;
	return nullptr;
}

const std::vector<Symbol> &self()
{
	static std::vector<Symbol> s;
	if (s.empty()) {
		std::string err;
		s = load("/proc/self/exe", &err);
	}
	return s;
}

std::string name_of(uint64_t ip, const std::vector<Symbol> &s)
{
	char buf[64];
	const Symbol *f = lookup(s, ip);
	if (!f) {
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)ip);
		return buf;
	}
	snprintf(buf, sizeof(buf), "+0x%llx", (unsigned long long)(ip - f->start));
	return f->name + buf;
}

std::string chain_str(const std::vector<uint64_t> &ips,
		      const std::vector<Symbol> &s, size_t max)
{
	std::string o = "[" + std::to_string(ips.size()) + ":";
	for (size_t i = 0; i < ips.size() && i < max; i++)
		o += " " + name_of(ips[i], s);
	return o + (ips.size() > max ? " ...]" : "]");
}

} // namespace syms
