#!/usr/bin/env bash
# usage: toolchains.sh DIR
#
# The GNU assemblers and linkers the SFrame selftests' helpers are built
# with, one per SFrame version users' toolchains write:
#
#   bookworm  binutils 2.40   SFrame version 1
#   trixie    binutils 2.44   SFrame version 2
#   sid       binutils 2.47+  SFrame version 3 (GNU as's default since 2.46)
#
# Each suite's binutils and the libraries they run on (glibc included: a
# newer binutils needs a newer glibc than the machine's) are fetched from
# the machine's Debian archive with ci/build/fetch-deb.sh and unpacked under
# DIR/SUITE/root, without touching the machine's packages. DIR/SUITE/bin
# gets `as` and `ld` wrappers that run them through the suite's own
# dynamic loader, for `gcc -B DIR/SUITE/bin/`, and DIR/SUITE/version says
# what they are ("binutils 2.44-3 (trixie), SFrame version 2"), as measured
# by assembling a function and reading its .sframe header.
#
# VMTEST_ARCH=arm64 (make ARCH=arm64): the same suites' aarch64 cross
# binutils (binutils-aarch64-linux-gnu, an amd64 package), for the arm64
# guest's helpers, in a DIR of their own.
#
# Cached: a suite whose wrappers work is not fetched again, so a build costs
# no network once done; TOOLCHAINS_REFRESH=1 fetches the suites' current
# versions. A suite that cannot be fetched is reported and left out (exit
# 0): the selftests built without its helpers then fail on a kernel with
# the feature, naming it.
. "$(dirname "$0")/../guest/lib.sh"

[ $# -eq 1 ] || die "usage: toolchains.sh DIR"
mkdir -p "$1"
dir=$(cd "$1" && pwd)

SUITES=(bookworm:1 trixie:2 sid:3)
# The target's GNU triplet: the guest architecture's cross prefix, else
# the host's x86-64.
triplet=$(arch CROSS_COMPILE)
triplet=${triplet%-}
triplet=${triplet:-x86_64-linux-gnu}
binutils_pkg=binutils-${triplet//_/-}
PKGS=("$binutils_pkg" libbinutils libctf-nobfd0 libctf0
	libjansson4 libzstd1 zlib1g libc6)
# libsframe's soname follows the format: none in 2.40, 1 in 2.44, 3 later
declare -A SFRAME_LIB=([bookworm]="" [trixie]=libsframe1 [sid]=libsframe3)

# wrapper SUITE TOOL PROGRAM: DIR/SUITE/bin/TOOL runs PROGRAM of the suite
wrapper() {
	local root=$dir/$1/root lib ldso
	# Older suites' libc6 is not merged-/usr: its files are in /lib
	lib=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu
	ldso=$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
	[ -e "$ldso" ] || ldso=$root/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2
	cat >"$dir/$1/bin/$2" <<EOF
#!/bin/sh
# $2 of Debian $1's binutils, on $1's own glibc (ci/build/toolchains.sh)
exec "$ldso" --library-path "$lib" "$root/usr/bin/$3" "\$@"
EOF
	chmod +x "$dir/$1/bin/$2"
}

# probe_asm FILE: a function with CFI in the target's assembly, into FILE
probe_asm() {
	case $triplet in
	aarch64-*) printf '\t.text\nf:\n\t.cfi_startproc\n\tstp x29, x30, [sp, -16]!\n\t.cfi_def_cfa_offset 16\n\t.cfi_offset 29, -16\n\t.cfi_offset 30, -8\n\tldp x29, x30, [sp], 16\n\t.cfi_restore 30\n\t.cfi_restore 29\n\t.cfi_def_cfa_offset 0\n\tret\n\t.cfi_endproc\n' ;;
	*) printf '\t.text\nf:\n\t.cfi_startproc\n\tpush %%rbx\n\t.cfi_adjust_cfa_offset 8\n\tpop %%rbx\n\t.cfi_adjust_cfa_offset -8\n\tret\n\t.cfi_endproc\n' ;;
	esac >"$1"
}

# sframe_version SUITE: the SFrame version the suite's as writes
sframe_version() {
	local tmp
	tmp=$(mktemp -d)
	probe_asm "$tmp/f.s"
	"$dir/$1/bin/as" --gsframe -o "$tmp/f.o" "$tmp/f.s" &&
		"$(arch CROSS_COMPILE)objcopy" -O binary --only-section=.sframe "$tmp/f.o" "$tmp/f.sframe" &&
		od -An -tu1 -j2 -N1 "$tmp/f.sframe" | tr -d ' '
	rm -rf "$tmp"
}

for entry in "${SUITES[@]}"; do
	suite=${entry%%:*} want=${entry#*:}
	if [ -z "${TOOLCHAINS_REFRESH:-}" ] && [ -s "$dir/$suite/version" ] &&
		"$dir/$suite/bin/as" --version >/dev/null 2>&1 &&
		"$dir/$suite/bin/ld" --version >/dev/null 2>&1; then
		continue
	fi
	rm -rf "${dir:?}/$suite"
	mkdir -p "$dir/$suite/bin"
	pkgs=("${PKGS[@]}")
	[ -z "${SFRAME_LIB[$suite]}" ] || pkgs+=("${SFRAME_LIB[$suite]}")
	log "toolchains: fetching Debian $suite's binutils"
	if ! bash "$ROOT/ci/build/fetch-deb.sh" "$suite" "$dir/$suite/root" "${pkgs[@]}" \
		>"$dir/$suite.log" 2>&1; then
		warn "toolchains: could not fetch $suite's binutils ($dir/$suite.log): the SFrame helpers of $suite are not built"
		rm -rf "${dir:?}/$suite"
		continue
	fi
	wrapper "$suite" as "$triplet-as"
	wrapper "$suite" ld "$triplet-ld.bfd"
	ver=$(sed -n "s/^$binutils_pkg //p" "$dir/$suite/root/versions")
	got=$(sframe_version "$suite") || got=
	if [ "$got" != "$want" ]; then
		warn "toolchains: $suite's as ($ver) writes SFrame version '${got:-none}', not $want: its helpers are not built"
		rm -rf "${dir:?}/$suite"
		continue
	fi
	echo "binutils $ver ($suite), SFrame version $got" >"$dir/$suite/version"
done

# mold, Debian sid's: a linker other than GNU ld, for a library laid out
# as mold and lld lay them out by default (sframe_mm_test): the text
# segment starts inside the file page that ends the read-only segment
# before it, one page further on in memory, so that page is mapped twice.
# It writes PT_GNU_SFRAME for SHT_GNU_SFRAME input (sid's as). One amd64
# program links for every target: DIR/mold/bin/ld.mold, for gcc
# -fuse-ld=mold -B DIR/mold/bin/. DIR/mold/version names it once a link
# of sid's as output showed both the section's header and that layout.
mold_layout() {
	local tmp type off rest sframe="" inside=""
	tmp=$(mktemp -d)
	probe_asm "$tmp/f.s"
	if "$dir/sid/bin/as" --gsframe -o "$tmp/f.o" "$tmp/f.s" &&
		"$dir/mold/bin/ld.mold" -shared -o "$tmp/f.so" "$tmp/f.o" &&
		"$(arch CROSS_COMPILE)readelf" -lW "$tmp/f.so" >"$tmp/ph"; then
		# "LOAD 0x0003c0 VADDR PADDR FILESZ MEMSZ R E 0x1000"
		while read -r type off rest; do
			[ "$type" = GNU_SFRAME ] && sframe=1
			[ "$type" = LOAD ] && [[ $rest == *"E 0x"* ]] &&
				((off % 4096)) && inside=1
		done <"$tmp/ph"
	fi
	rm -rf "$tmp"
	[ -n "$sframe" ] && [ -n "$inside" ]
}

if [ -s "$dir/sid/version" ] && { [ -n "${TOOLCHAINS_REFRESH:-}" ] ||
	! [ -s "$dir/mold/version" ] ||
	! "$dir/mold/bin/ld.mold" --version >/dev/null 2>&1; }; then
	rm -rf "${dir:?}/mold"
	mkdir -p "$dir/mold/bin"
	log "toolchains: fetching Debian sid's mold"
	if ! bash "$ROOT/ci/build/fetch-deb.sh" --libs sid "$dir/mold/root" mold \
		>"$dir/mold.log" 2>&1; then
		warn "toolchains: could not fetch sid's mold ($dir/mold.log): sframe_lib_mold.so is not built"
		rm -rf "${dir:?}/mold"
	else
		wrapper mold ld.mold mold
		ver=$(sed -n 's/^mold //p' "$dir/mold/root/versions")
		if mold_layout; then
			echo "mold $ver (sid), PT_GNU_SFRAME, text inside the read-only segment's last file page" >"$dir/mold/version"
		else
			warn "toolchains: sid's mold ($ver) did not write PT_GNU_SFRAME with the text starting inside a page: sframe_lib_mold.so is not built"
			rm -rf "${dir:?}/mold"
		fi
	fi
fi

for entry in "${SUITES[@]}" mold:; do
	suite=${entry%%:*}
	[ -s "$dir/$suite/version" ] && log "toolchains: $(cat "$dir/$suite/version")${triplet:+ for $triplet}"
done
exit 0
