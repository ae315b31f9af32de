#!/usr/bin/env bash
# usage: perf.sh KERNEL_SRC OUT_DIR
#
# Build tools/perf from the kernel tree as one static binary for the guest:
# only the `perf` target (the default target's shared objects do not link
# statically), libelf for symbols, zstd for compressed data, every other
# optional feature off. The result
# is OUT_DIR/perf; an unchanged tree rebuilds nothing.
#
# VMTEST_ARCH=arm64 (make ARCH=arm64) cross-builds it for that guest with
# ci/guest/arm64.py's CROSS_COMPILE; the static libelf, zlib and zstd it links
# are Debian bookworm's arm64 -dev packages, unpacked (never installed)
# into build/sysroot-arm64 by ci/build/fetch-deb.sh.
#
# PERF_SANITIZE=address builds the same perf for the host instead, linked
# dynamically with AddressSanitizer (make perf-asan): the host tests run
# crafted perf.data streams through it, where a read or write past a
# record is a report, not silent heap damage as in the static perf.
. "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || die "usage: perf.sh KERNEL_SRC OUT_DIR"
lock_script "$@"
src=$(realpath "$1") out=$(realpath -m "$2")
flags=(LDFLAGS=-static)
read -ra cross <<<"$(arch MAKE_ARGS)"
case "${PERF_SANITIZE:-}" in
"")
	if [ ${#cross[@]} -gt 0 ]; then
		deb_arch=$(arch NAME)
		sysroot=$BUILD/sysroot-$deb_arch
		bash "$ROOT/ci/build/fetch-deb.sh" --arch "$deb_arch" bookworm "$sysroot" \
			libelf-dev libelf1 zlib1g-dev libzstd-dev >/dev/null ||
			die "could not fetch $deb_arch's libelf, zlib, zstd (ci/build/fetch-deb.sh)"
		triplet=$(arch CROSS_COMPILE)
		triplet=${triplet%-}
		flags=("LDFLAGS=-static -L$sysroot/usr/lib/$triplet"
			"EXTRA_CFLAGS=-I$sysroot/usr/include -I$sysroot/usr/include/$triplet"
			"${cross[@]}")
	fi
	;;
address)
	[ ${#cross[@]} -eq 0 ] || die "PERF_SANITIZE is for the host's perf: not with ARCH=$(arch NAME)"
	flags=(LDFLAGS=-fsanitize=address
	EXTRA_CFLAGS="-fsanitize=address -fno-omit-frame-pointer -g") ;;
*) die "PERF_SANITIZE=$PERF_SANITIZE: only 'address' is known" ;;
esac
[ -d "$src/tools/perf" ] || die "$src/tools/perf missing: not a kernel tree"
mkdir -p "$out"
# Every optional part off: the switches known to work on 6.12, plus every
# NO_* switch the tree's own Makefiles and Build files test, so a newer
# tree's new optional parts (a Rust test workload whose static archive
# fails to link, say) are off too. KEEP lists what the guest's perf needs.
# libelf.a needs zlib; zstd reads 'perf record -z' data (PERF_RECORD_COMPRESSED
# and 7.x's COMPRESSED2).
KEEP=" NO_LIBELF NO_ZLIB NO_SYSCALL_TABLE NO_BIONIC NO_LIBZSTD "
switches=("${PERF_OFF_SWITCHES[@]}" NO_LIBPYTHON=1)
for sw in $(find "$src/tools/perf" -maxdepth 4 \( -name 'Makefile*' -o -name Build \) \
		-exec grep -ohE '\b(ifn?def|if(n)?eq \(\$\()\s*\(?NO_[A-Z0-9_]+' {} + |
	grep -oE 'NO_[A-Z0-9_]+' | sort -u); do
	case "$KEEP ${switches[*]} " in *" $sw "* | *" $sw=1 "*) continue ;; esac
	switches+=("$sw=1")
done
# perf's build reads nothing outside tools/: when tools/ (committed and
# uncommitted) and the switches are what the last build saw, its make,
# 6-10 s of doing nothing, is skipped. Trees that are not git repos always
# run make.
stamp=$(tools_stamp "$src" "${switches[*]} ${flags[*]}")
if [ -n "$stamp" ] && [ -x "$out/perf" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
	log "perf unchanged (tools/ as at the last build): $out/perf"
	exit 0
fi
rm -f "$out/stamp"
echo "${switches[*]}" >"$out/switches"
t0=$SECONDS
make -s -C "$src/tools/perf" O="$out" -j"$(nproc)" "${flags[@]}" \
	"${switches[@]}" WERROR=0 perf >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log" >&2
	fail "perf build failed (log: $out/build.log; switches: $out/switches)"
}
[ -z "$stamp" ] || echo "$stamp" >"$out/stamp"
log "perf built in $((SECONDS - t0)) s: $out/perf ($(du -k "$out/perf" | cut -f1) KiB)"
