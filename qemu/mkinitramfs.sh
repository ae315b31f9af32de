#!/usr/bin/env bash
# usage: mkinitramfs.sh OUT.cpio.gz SELFTEST_DIR KERNEL_SRC
#
# The guest's initramfs: busybox-static, qemu/init as /init, and every file
# of SELFTEST_DIR (the installed selftests and helpers) under /selftests.
# Built with the kernel's gen_init_cpio from a file list, so it needs no
# root for device nodes and is byte-for-byte reproducible.
# (gen_init_cpio is compiled from KERNEL_SRC/usr/gen_init_cpio.c.)
# PERF_BIN, when set, is the static perf installed as /bin/perf.
# PERF_SHELL, when set, is the tools/perf/tests/shell/ directory of the
# tree perf is built from: its callchain_defer_*.sh and lib/ are packed as
# /bin/tests/shell/, where 'perf test' looks for them beside /bin/perf
# (run by /selftests/perf_shell_test).
. "$(dirname "$0")/../ci/lib.sh"

[ $# -eq 3 ] || die "usage: mkinitramfs.sh OUT.cpio.gz SELFTEST_DIR KERNEL_SRC"
out=$1 tests=$2 ksrc=$3
busybox=/bin/busybox # from busybox-static: the guest has no libc
[ -x "$busybox" ] || die "$busybox missing: run 'make deps' (busybox-static)"
[ -d "$tests" ] || die "$tests: no selftests installed (make selftests)"

gen=$BUILD/tools/gen_init_cpio
if [ ! -x "$gen" ]; then
	mkdir -p "$(dirname "$gen")"
	cc -O2 -o "$gen" "$ksrc/usr/gen_init_cpio.c" ||
		die "could not build gen_init_cpio from $ksrc"
fi

list=$(mktemp)
stage=$(mktemp -d)
trap 'rm -rf "$list" "$stage"' EXIT
# Debug info is half of every static binary and only slows the guest's
# unpacking of the initramfs under TCG; the symbol tables, which the tests
# and perf resolve addresses with, stay.
strip_copy() { # strip_copy FILE: FILE without debug info (or as it is)
	if strip --strip-debug -o "$stage/${1##*/}" "$1" 2>/dev/null; then
		echo "$stage/${1##*/}"
	else
		echo "$1"
	fi
}
{
	for d in /bin /sbin /dev /proc /sys /tmp /selftests; do
		echo "dir $d 0755 0 0"
	done
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "file /bin/busybox $busybox 0755 0 0"
	for app in sh mount cat grep sed ls sync reboot nproc timeout uname \
		echo sleep id su chown chmod mkdir taskset rm \
		mktemp head tail wc dd cp printf basename dirname; do
		echo "slink /bin/$app /bin/busybox 0777 0 0"
	done
	echo "file /init $ROOT/qemu/init 0755 0 0"
	if [ -n "${PERF_BIN:-}" ]; then
		[ -x "$PERF_BIN" ] || die "PERF_BIN=$PERF_BIN missing: run 'make perf'"
		echo "file /bin/perf $(strip_copy "$PERF_BIN") 0755 0 0"
	fi
	if [ -n "${PERF_SHELL:-}" ] && [ -d "$PERF_SHELL" ]; then
		echo "dir /bin/tests 0755 0 0"
		echo "dir /bin/tests/shell 0755 0 0"
		echo "dir /bin/tests/shell/lib 0755 0 0"
		find "$PERF_SHELL" -maxdepth 1 -name 'callchain_defer_*.sh' -type f |
			LC_ALL=C sort | while read -r f; do
			echo "file /bin/tests/shell/${f##*/} $f 0755 0 0"
		done
		find "$PERF_SHELL/lib" -maxdepth 1 -type f 2>/dev/null |
			LC_ALL=C sort | while read -r f; do
			echo "file /bin/tests/shell/lib/${f##*/} $f 0644 0 0"
		done
	fi
	# Per-program timeouts and which programs may run side by side.
	if [ -f "$ROOT/selftests/settings" ]; then
		echo "file /selftests/settings $ROOT/selftests/settings 0644 0 0"
	fi
	find "$tests" -maxdepth 1 -type f | LC_ALL=C sort | while read -r f; do
		echo "file /selftests/$(basename "$f") $(strip_copy "$f") 0755 0 0"
	done
} >"$list"
mkdir -p "$(dirname "$out")"
KBUILD_BUILD_TIMESTAMP=0 "$gen" -t 0 "$list" | gzip -n -1 >"$out.tmp"
mv "$out.tmp" "$out"
# What was packed: the host checks that every one of these reported.
find "$tests" -maxdepth 1 -type f -name '*_test' -printf '%f\n' | LC_ALL=C sort >"$out.programs"
log "initramfs: $out ($(du -k "$out" | cut -f1) KiB)"
