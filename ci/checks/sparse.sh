#!/usr/bin/env bash
# usage: sparse.sh KERNEL_SRC KOBJ OUTDIR KCONFIG_ARGS...
#
# sparse (C=2) over the kernel C files the series adds or changes, on the
# patched tree and on the unpatched base (a detached worktree at the base
# tag, build/sparse-base), both configured like the guest kernel (the
# fragments; on the base the series' options are left out). The patched
# kernel is built in KOBJ (the normal guest kernel's, so nothing is built
# twice), the base in OUTDIR/kobj-base; the logs go to OUTDIR. Warnings are
# compared without line numbers: any that the base does not have fails
# (exit 1) and is printed. Headers are checked through the C files that
# include them. A file that the configuration does not compile (no .o
# after the build) is not checked, and is named.
#
# Both kernels are built first (incrementally, through ccache), since
# sparse on single objects needs a prepared tree; C=2 then checks the
# named objects whether or not they need recompiling.
. "$(dirname "$0")/../series/lib.sh"
. "$(dirname "$0")/../build/lib.sh"

[ $# -ge 4 ] || die "usage: sparse.sh KERNEL_SRC KOBJ OUTDIR KCONFIG_ARGS..."
command -v sparse >/dev/null || die "sparse is not installed: run 'make deps'"
src=$(realpath "$1") kobj=$(realpath -m "$2") out=$(realpath -m "$3")
shift 3
git -C "$src" rev-parse -q --verify "$BASE_TAG^{commit}" >/dev/null ||
	die "$src has no $BASE_TAG tag: run 'make tree'"
mapfile -t files < <(series_sources "$src" "$BASE_TAG" AM | grep '\.c$')
[ "${#files[@]}" -gt 0 ] || die "the series in $src changes no kernel C file"

# The base defines none of the series' options.
given=("$@")
frags=("$@" --if-possible)

wt=$BUILD/sparse-base
mkdir -p "$out"
if [ "$(git -C "$wt" rev-parse -q --verify HEAD 2>/dev/null)" != \
     "$(git -C "$src" rev-parse "$BASE_TAG^{commit}")" ]; then
	git -C "$src" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
	git -C "$src" worktree prune
	git -C "$src" worktree add -q --detach "$wt" "$BASE_TAG"
fi

use_kernel_cc
cc=$KCC

# check TREE KOBJ LOG: build TREE in KOBJ, then sparse on the series' files
# that this configuration compiles; the warnings go to LOG, with paths
# relative to the tree.
check() {
	local tree=$1 kobj=$2 logf=$3 f objs=()
	local frags=("${frags[@]}")
	# The patched tree gets the fragments as given: the series' options
	# must be there.
	[ "$tree" = "$src" ] && frags=("${given[@]}")
	"$ROOT/ci/build/kernel.sh" "$tree" "$kobj" "${frags[@]}" \
		>"$logf.build" 2>&1 || {
		tail -30 "$logf.build" >&2
		fail "$tree does not build: see $logf.build"
	}
	for f in "${files[@]}"; do
		if [ -f "$kobj/${f%.c}.o" ]; then
			objs+=("${f%.c}.o")
		elif [ "$tree" = "$src" ]; then
			log "sparse: $f is not compiled in this configuration"
		fi
	done
	: >"$logf"
	printf '%s\n' "${objs[@]}" >"$logf.files"
	[ "${#objs[@]}" -gt 0 ] || return 0
	# the log takes make's output, not the lock's "waiting" line
	with_build_lock sh -c 'log=$1; shift; exec "$@" >"$log" 2>&1' - "$logf.sparse" \
		make -s -C "$tree" O="$kobj" "${KMAKE_ARGS[@]}" CC="$cc" C=2 CHECK=sparse \
		-j"$(nproc)" "${objs[@]}" || {
		tail -30 "$logf.sparse" >&2
		fail "sparse run failed in $tree: see $logf.sparse"
	}
	grep -E ': (warning|error): ' "$logf.sparse" |
		sed -E "s|^$tree/||; s|^(\.\./)+||; s|^\./||" >"$logf" || true
}

check "$wt" "$out/kobj-base" "$out/base.log"
check "$src" "$kobj" "$out/patched.log"
new=$(new_warnings "$out/base.log" "$out/patched.log")
n=$(wc -l <"$out/patched.log.files")
if [ -n "$new" ]; then
	printf '%s\n' "$new"
	log "sparse: $n files, $(printf '%s\n' "$new" | wc -l) new warnings (logs: $out)"
	exit 1
fi
log "sparse: $n files, no new warnings ($(wc -l <"$out/base.log") in the base)"
