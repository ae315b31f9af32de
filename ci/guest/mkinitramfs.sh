#!/usr/bin/env bash
# usage: mkinitramfs.sh OUT.cpio.gz SELFTEST_DIR KERNEL_SRC
#
# The guest's initramfs: busybox-static, ci/guest/init as /init, and every file
# of SELFTEST_DIR (the installed selftests and helpers) under /selftests.
# Built with the kernel's gen_init_cpio from a file list, so it needs no
# root for device nodes and is byte-for-byte reproducible.
# (gen_init_cpio is compiled from KERNEL_SRC/usr/gen_init_cpio.c.)
# PERF_BIN, when set, is the static perf installed as /bin/perf.
# PERF_UPSTREAM_BIN, when set, is upstream's static perf (make
# perf-upstream), installed as /bin/perf-upstream for the interop tests.
# PERF_SHELL, when set, is the tools/perf/tests/shell/ directory of the
# tree perf is built from: its callchain_defer_*.sh and lib/ are packed as
# /bin/tests/shell/, where 'perf test' looks for them beside /bin/perf
# (run by /selftests/perf_shell_test).
# PERF_PYTHON, when set, is perf's python binding built for Debian's
# /usr/bin/python3 (ci/build/perf-python.sh): the guest gets that
# interpreter as /usr/bin/python3, the shared libraries it and the module
# need (ldd, at their host paths), the module as
# /usr/lib/python3.11/lib-dynload/perf.*.so and only the stdlib files that
# importing what selftests/perf_python_test.py imports loads (found by
# doing those imports on the host with python3 -IS, as the test runs);
# /selftests/perf_python_test runs it.
# TRACE_CMD_BIN, when set, is Debian's trace-cmd (/usr/bin/trace-cmd of
# the host, which must be the guest's architecture): packed with its
# libraries and libtraceevent's plugins (trace_cmd_files below);
# /selftests/trace_cmd_test runs it.
# REALSTACKS_DIR, when set, is make realstacks' tree (ci/build/realprograms.sh:
# real programs, the libraries they run on, the shim, the runner),
# packed as it is under /realstacks (ci/guest/init runs
# /realstacks/run.sh when the command line says vmtest.realstacks=).
# VMTEST_ARCH (make's ARCH=) picks the guest architecture: another one
# than the host's gets its busybox-static from Debian (ci/guest/<arch>.py's
# BUSYBOX_DEB), and the files its LEFT_OUT names are not packed: they are
# listed with the reason in OUT.cpio.gz.left_out, which the verdict names.
. "$(dirname "$0")/lib.sh"

[ $# -eq 3 ] || die "usage: mkinitramfs.sh OUT.cpio.gz SELFTEST_DIR KERNEL_SRC"
out=$1 tests=$2 ksrc=$3
busybox=/bin/busybox # from busybox-static: the guest has no libc
bbdeb=$(arch BUSYBOX_DEB)
if [ -n "$bbdeb" ]; then
	bbdir=$BUILD/busybox-$(arch NAME)
	bash "$ROOT/ci/build/fetch-deb.sh" --arch "$(arch NAME)" bookworm "$bbdir" "$bbdeb" >/dev/null ||
		die "could not fetch $bbdeb for $(arch NAME) (ci/build/fetch-deb.sh)"
	busybox=$bbdir/bin/busybox
fi
[ -x "$busybox" ] || die "$busybox missing: run 'make deps' (busybox-static)"
STRIP=$(arch CROSS_COMPILE)strip
# LEFT_OUT globs (case patterns) of this architecture, and why.
left_out=()
while IFS=$'\t' read -r glob why; do
	[ -n "$glob" ] && left_out+=("$glob")
done < <(arch LEFT_OUT)
is_left_out() { # is_left_out NAME: a LEFT_OUT glob matches it
	local g
	for g in "${left_out[@]}"; do
		# shellcheck disable=SC2254
		case "$1" in $g) return 0 ;; esac
	done
	return 1
}
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
# The copy is staged under the file's path in the guest: /bin/perf and
# /bin/perf-upstream are both built as "perf", and a copy named after the
# host file made /bin/perf upstream's perf.
strip_copy() { # strip_copy FILE GUEST_PATH: FILE without debug info (or as it is)
	local copy=$stage/root$2
	mkdir -p "${copy%/*}"
	if "$STRIP" --strip-debug -o "$copy" "$1" 2>/dev/null; then
		echo "$copy"
	else
		echo "$1"
	fi
}
# packed_file GUEST_PATH HOST_FILE: the gen_init_cpio lines for the file
# and for each of its parent directories not packed yet, once.
packed_file() {
	local p=${1%/*} parents=
	grep -qxF "$1" "$stage/packed" 2>/dev/null && return
	echo "$1" >>"$stage/packed"
	while [ -n "$p" ]; do parents="$p $parents"; p=${p%/*}; done
	for p in $parents; do
		packed_dir "$p"
	done
	echo "file $1 $2 0755 0 0"
}
packed_dir() { # packed_dir GUEST_DIR: its gen_init_cpio line, once
	grep -qxF "$1" "$stage/packed" 2>/dev/null && return
	echo "$1" >>"$stage/packed"
	echo "dir $1 0755 0 0"
}
# libraries_of FILE...: the shared libraries they load and the dynamic
# loader, by ldd, at their host paths (the guest's are the same).
libraries_of() {
	ldd "$@" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^\t\(\/[^ ]*\) .*/\1/p'
}
# python_files: gen_init_cpio lines for python3, its libraries, the
# stdlib files perf_python_test.py's imports load, and perf.so.
python_files() {
	local py=/usr/bin/python3 so=$PERF_PYTHON f stdlib suffix
	[ -f "$so" ] || die "PERF_PYTHON=$so missing: run 'make perf-python'"
	[ -x "$py" ] || die "$py missing: run 'make deps' (python3)"
	stdlib=$("$py" -IS -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
	suffix=$("$py" -IS -c 'from importlib import machinery; print(machinery.EXTENSION_SUFFIXES[0])')
	mkdir -p "$stage/pymod"
	cp "$so" "$stage/pymod/perf$suffix"
	packed_file /usr/bin/python3 "$(realpath "$py")"
	{
		libraries_of "$py" "$so"
		# The stdlib files the test's imports load (the script says how).
		LC_ALL=C "$py" -IS "$ROOT/ci/guest/python_stdlib.py" "$stage/pymod" "$stdlib" \
			"$ROOT/selftests/perf_python_test.py"
	} | sort -u >"$stage/python.list"
	while read -r f; do
		[ -f "$f" ] && packed_file "$f" "$f"
	done <"$stage/python.list"
	packed_dir "$stdlib"
	packed_dir "$stdlib/lib-dynload"
	echo "file $stdlib/lib-dynload/perf$suffix $(strip_copy "$stage/pymod/perf$suffix" "$stdlib/lib-dynload/perf$suffix") 0755 0 0"
}
# trace_cmd_files: gen_init_cpio lines for Debian's trace-cmd as
# /usr/bin/trace-cmd, libtraceevent's plugins (which it loads from their
# host directory) and the libraries of both.
trace_cmd_files() {
	local bin=$TRACE_CMD_BIN lib plugins f
	[ -x "$bin" ] || die "TRACE_CMD_BIN=$bin missing: run 'make deps' (trace-cmd)"
	lib=$(libraries_of "$bin" | grep '/libtraceevent\.so' | head -1)
	[ -n "$lib" ] || die "$bin: no libtraceevent among its libraries (ldd)"
	# Where libtraceevent looks: /usr/lib/..., not ldd's /lib/... path
	plugins=$(realpath "${lib%/*}")/traceevent/plugins
	packed_file /usr/bin/trace-cmd "$(realpath "$bin")"
	{
		find "$plugins" -maxdepth 1 -name '*.so' 2>/dev/null
		libraries_of "$bin" $(find "$plugins" -maxdepth 1 -name '*.so' 2>/dev/null)
	} | LC_ALL=C sort -u | while read -r f; do
		[ -f "$f" ] && packed_file "$f" "$f"
	done
}
# tree_files DIR GUEST_DIR: gen_init_cpio lines for DIR's whole tree as
# GUEST_DIR, modes kept, in a stable order.
tree_files() {
	local src=$1 dst=$2 rel mode
	echo "dir $dst 0755 0 0"
	(cd "$src" && find . -mindepth 1 -printf '%y %m %P\n' | LC_ALL=C sort -k3) |
		while read -r kind mode rel; do
			case $kind in
			d) echo "dir $dst/$rel 0$mode 0 0" ;;
			f) echo "file $dst/$rel $src/$rel 0$mode 0 0" ;;
			l) echo "slink $dst/$rel $(readlink "$src/$rel") 0777 0 0" ;;
			*) die "$src/$rel: neither file, directory nor symbolic link" ;;
			esac
		done
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
	echo "file /init $ROOT/ci/guest/init 0755 0 0"
	if [ -n "${PERF_BIN:-}" ]; then
		[ -x "$PERF_BIN" ] || die "PERF_BIN=$PERF_BIN missing: run 'make perf'"
		echo "file /bin/perf $(strip_copy "$PERF_BIN" /bin/perf) 0755 0 0"
	fi
	if [ -n "${PERF_UPSTREAM_BIN:-}" ]; then
		[ -x "$PERF_UPSTREAM_BIN" ] ||
			die "PERF_UPSTREAM_BIN=$PERF_UPSTREAM_BIN missing: run 'make perf-upstream'"
		echo "file /bin/perf-upstream $(strip_copy "$PERF_UPSTREAM_BIN" /bin/perf-upstream) 0755 0 0"
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
	if [ -n "${PERF_PYTHON:-}" ]; then
		python_files
	fi
	if [ -n "${TRACE_CMD_BIN:-}" ]; then
		trace_cmd_files
	fi
	if [ -n "${REALSTACKS_DIR:-}" ]; then
		[ -x "$REALSTACKS_DIR/run.sh" ] ||
			die "REALSTACKS_DIR=$REALSTACKS_DIR has no run.sh: run 'make realprograms'"
		tree_files "$REALSTACKS_DIR" /realstacks
	fi
	# Per-program timeouts and which programs may run side by side.
	if [ -f "$ROOT/selftests/settings" ]; then
		echo "file /selftests/settings $ROOT/selftests/settings 0644 0 0"
	fi
	find "$tests" -maxdepth 1 -type f | LC_ALL=C sort | while read -r f; do
		is_left_out "${f##*/}" && continue
		echo "file /selftests/${f##*/} $(strip_copy "$f" "/selftests/${f##*/}") 0755 0 0"
	done
} >"$list"
mkdir -p "$(dirname "$out")"
# A name of this run's own: two runs packing the same tree's image at once
# (make stress beside make vmtest) must not rename each other's file.
KBUILD_BUILD_TIMESTAMP=0 "$gen" -t 0 "$list" | gzip -n -1 >"$out.$$.tmp"
mv "$out.$$.tmp" "$out"
# What was packed: the host checks that every one of these reported.
find "$tests" -maxdepth 1 -type f -name '*_test' -printf '%f\n' | LC_ALL=C sort |
	while read -r f; do is_left_out "$f" || echo "$f"; done >"$out.programs"
# What this architecture leaves out, and why ("GLOB<TAB>why" lines).
arch LEFT_OUT >"$out.left_out"
log "initramfs: $out ($(du -k "$out" | cut -f1) KiB)"
