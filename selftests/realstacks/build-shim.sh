#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# usage: build-shim.sh OUT.so BINUTILS_BIN_DIR
#
# make realstacks' shim (shim.c, stubs.S), built so that it is never the
# weak frame of a stack: with frame pointers (leaf functions too) and with
# SFrame tables, assembled and linked by the binutils in BINUTILS_BIN_DIR
# (Debian sid's, ci/build/toolchains.sh: gcc -B DIR -Wa,--gsframe), then
# checked: the library has a PT_GNU_SFRAME segment, holds one syscall
# instruction, and the function holding it starts with
# "push %rbp; mov %rsp,%rbp", as does shim_call, its caller. Exit 1 when
# the build or a check fails (the shim is then removed).
set -u
[ $# -eq 2 ] || { echo "usage: build-shim.sh OUT.so BINUTILS_BIN_DIR" >&2; exit 2; }
out=$1 bin=$2
src=$(cd "$(dirname "$0")" && pwd)
fail() {
	echo "build-shim.sh: $*" >&2
	rm -f "$out"
	exit 1
}
if [ ! -x "$bin/as" ] || [ ! -x "$bin/ld" ]; then
	fail "no as and ld in $bin (ci/build/toolchains.sh)"
fi
${CC:-gcc} -B"$bin/" -O2 -fPIC -shared -fasynchronous-unwind-tables \
	-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wa,--gsframe \
	-Wall -Wextra -Werror -o "$out" "$src/shim.c" "$src/stubs.S" ||
	fail "the build failed"
readelf -lW "$out" | grep -q GNU_SFRAME || fail "$out has no PT_GNU_SFRAME segment"
# The functions' first two instructions, and which holds the syscall
objdump -d --no-show-raw-insn "$out" | awk '
	/^[0-9a-f]+ <.*>:$/ { fn = $2; gsub(/[<>:]/, "", fn); n = 0; next }
	fn != "" && /^ *[0-9a-f]+:\t/ {
		sub(/^ *[0-9a-f]+:\t/, "")
		gsub(/ +/, " ")
		if (++n <= 2) first[fn] = first[fn] (n == 2 ? "; " : "") $0
		if ($0 == "syscall") { sys[fn]++; nsys++ }
	}
	END {
		if (nsys != 1) { print "syscall instructions: " nsys + 0; exit 1 }
		for (f in sys) {
			if (first[f] != "push %rbp; mov %rsp,%rbp") {
				print f " (holds the syscall) starts " first[f]; exit 1
			}
			print "syscall in " f
		}
		if (first["shim_call"] != "push %rbp; mov %rsp,%rbp") {
			print "shim_call starts " first["shim_call"]; exit 1
		}
	}' >"$out.check" || fail "$out: $(cat "$out.check")"
grep -qx "syscall in shim_syscall" "$out.check" || fail "$out: $(cat "$out.check")"
rm -f "$out.check"
