# shellcheck shell=bash
# Shared helpers for the harness's shell scripts. Source it; do not run it.
#
# Exit codes (doc/harness.md, "Exit codes"): 0 pass, 1 test or build failure,
# 2 usage or setup error (always with a message that says what to do),
# 4 all skipped.

set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# One lock for builds and guest runs; clones sharing a machine can share it.
KBUILD_LOCK=${VMTEST_LOCK:-$BUILD/.kbuild.lock}
# VMTEST_PATCHES points the scripts at another patches/ (the harness tests).
PATCHES=${VMTEST_PATCHES:-$ROOT/patches}
# patches/ holds two series, each in its own directory with its own cover
# letter, in the order they apply and are sent: the fixes of Linux itself
# (bugs that predate the feature, sent first as a series of their own),
# then the feature, which is based on them. This is the one place that
# knows the order (series_files).
SERIES_NAMES=(fixes feature)
# The subjects of the fixes, one a line: how make export and make send
# tell a tree's fixes from its feature commits (count_fixes).
# VMTEST_FIXES points at another list (the harness tests).
FIXES_LIST=${VMTEST_FIXES:-$ROOT/ci/fixes.txt}
# The default kernel work tree: Debian's linux-source-6.12 as a git repo.
WORKTREE=$BUILD/linux
# Tag that marks the unpatched base in a tree made by commit_base (below).
BASE_TAG=vmtest-base

log() { printf '==> %s\n' "$*" >&2; }
warn() { printf 'warning: %s\n' "$*" >&2; }
# die MESSAGE...: a usage/setup error (exit 2). Say what to do.
die() { printf 'error: %s\n' "$*" >&2; exit 2; }
# fail MESSAGE...: what was checked or built is wrong (exit 1): a tree
# that does not build is the series' failure, not the user's setup.
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

# commit_base DIR: make the files of DIR, a kernel source tree with no
# commit yet, its first commit, tagged $BASE_TAG. Debian's linux-source
# .gitignore ends with a block (for Debian's packaging repo) that ignores
# every top-level path: it is dropped first, or git add would add nothing.
# A fixed identity and date: the same files give the same commit anywhere.
commit_base() {
	local dir=$1 version msg
	version=$(sed -n -e 's/^VERSION = //p' -e 's/^PATCHLEVEL = //p' -e 's/^SUBLEVEL = //p' \
		"$dir/Makefile" | paste -sd.)
	msg="Linux $version"
	if grep -q '^# Debian packaging: ignore everything at the top level' "$dir/.gitignore" 2>/dev/null; then
		sed -i '/^# Debian packaging: ignore everything at the top level/,/^!\/debian\/$/d' \
			"$dir/.gitignore"
		! grep -qx '/\*' "$dir/.gitignore" ||
			die "could not strip the Debian block from $dir/.gitignore"
		msg+=" (Debian linux-source-${version%.*})"
	fi
	(
		cd "$dir"
		export GIT_AUTHOR_NAME=vmtest GIT_AUTHOR_EMAIL=vmtest@localhost
		export GIT_COMMITTER_NAME=vmtest GIT_COMMITTER_EMAIL=vmtest@localhost
		export GIT_AUTHOR_DATE='2024-11-17 00:00:00 +0000'
		export GIT_COMMITTER_DATE=$GIT_AUTHOR_DATE
		[ -e .git ] || git init -q -b master
		git add -A
		git -c commit.gpgSign=false commit -q --no-verify -m "$msg"
		git tag "$BASE_TAG"
	)
}

# perf's optional parts that neither the guest's static perf nor perf.so
# needs (ci/build-perf.sh, ci/build-perf-python.sh): off, as 6.12 knows them.
PERF_OFF_SWITCHES=(NO_LIBPERL=1 NO_SLANG=1 NO_GTK2=1 NO_LIBUNWIND=1 NO_LIBDW=1
	NO_LIBTRACEEVENT=1 NO_LIBBPF=1 NO_BPF_SKEL=1 NO_JVMTI=1 NO_LIBCRYPTO=1
	NO_LIBNUMA=1 NO_LIBCAP=1 NO_LIBBABELTRACE=1 NO_LZMA=1 NO_ZSTD=1
	NO_DEMANGLE=1 NO_LIBPFM4=1 NO_SDT=1 NO_AUXTRACE=1 NO_LIBLLVM=1
	NO_CAPSTONE=1 NO_SHELLCHECK=1 NO_LIBDEBUGINFOD=1)

# tools_stamp SRC WORDS...: a hash of SRC's tools/ (committed and
# uncommitted) and WORDS (the build's switches), empty if SRC is not a git
# tree. perf's build reads nothing outside tools/: when the stamp is what
# the last build saw, its make (6-10 s of doing nothing) can be skipped.
tools_stamp() {
	local src=$1
	shift
	git -C "$src" rev-parse -q --verify HEAD:tools >/dev/null 2>&1 || return 0
	{
		echo "$*"
		git -C "$src" rev-parse HEAD:tools
		git -C "$src" diff HEAD -- tools
		git -C "$src" ls-files -o --exclude-standard -z -- tools |
			xargs -0r sha1sum
	} | sha1sum | cut -d' ' -f1
}

# series_files [NAME...]: the patch files of the named series (default:
# every series, fixes first), in the order they apply, without the cover
# letters. A series without a directory has no patches.
series_files() {
	local s
	[ $# -gt 0 ] || set -- "${SERIES_NAMES[@]}"
	for s in "$@"; do
		[ -d "$PATCHES/$s" ] || continue
		find "$PATCHES/$s" -maxdepth 1 -name '[0-9][0-9][0-9][0-9]-*.patch' \
			! -name '0000-cover-letter.patch' | LC_ALL=C sort
	done
}

# series_of FILE: the series (a SERIES_NAMES word) a patch file is in.
series_of() { basename "$(dirname "$1")"; }

# count_fixes TREE BASE: how many of TREE's commits after BASE, from the
# first on, are the fixes series: those whose subject FIXES_LIST names.
# The fixes must come first and be all there; otherwise the series would
# be split wrongly, and this dies saying what to change (the tree's order,
# or the list after a fix's subject was reworded).
count_fixes() {
	local tree=$1 base=$2 n=0 feature='' sha subj f
	local -A listed=() seen=()
	[ -f "$FIXES_LIST" ] || die "$FIXES_LIST missing: it lists the fixes' subjects (empty: no fixes series)"
	while IFS= read -r subj; do
		listed[$subj]=1
	done < <(sed -e '/^#/d' -e '/^[[:space:]]*$/d' "$FIXES_LIST")
	while read -r sha subj; do
		if [ -z "${listed[$subj]:-}" ]; then
			[ -n "$feature" ] || feature=$subj
			continue
		fi
		[ -z "$feature" ] ||
			die "$tree: '$subj' (${sha:0:12}) is a fix (${FIXES_LIST#"$ROOT"/}) but comes after" \
				"the feature's '$feature': the fixes go first (git rebase -i $base)," \
				"or take it off the list if it belongs to the feature"
		seen[$subj]=1
		n=$((n + 1))
	done < <(git -C "$tree" log --reverse --format='%H %s' "$base..HEAD")
	[ "$n" -gt 0 ] || [ -n "$feature" ] || { echo 0; return 0; }
	for f in "${!listed[@]}"; do
		[ -n "${seen[$f]:-}" ] ||
			die "$tree has no commit '$f' after $base, which ${FIXES_LIST#"$ROOT"/} lists" \
				"as a fix: put the subject as reworded there, or drop the line"
	done
	echo "$n"
}

# patch_subject FILE: the subject of a format-patch file, without [PATCH n/m].
patch_subject() {
	awk '/^Subject: /{s = substr($0, 10)
		while ((getline l) > 0 && l ~ /^[ \t]/) s = s l
		sub(/^\[[^]]*\] */, "", s); print s; exit}' "$1"
}

# use_kernel_cc: set KCC, the CC= for kernel builds, and KMAKE_ARGS, the
# guest architecture's ARCH= and CROSS_COMPILE= (none for x86_64): gcc through ccache
# unless CCACHE=0 or ccache is missing, with ccache's settings exported,
# and fixed version strings, so that an unchanged tree relinks nothing.
# (Call it in the shell that runs make, not in $(...): the exports matter.)
use_kernel_cc() {
	export KBUILD_BUILD_USER=vmtest KBUILD_BUILD_HOST=vmtest
	export KBUILD_BUILD_TIMESTAMP='Sun Nov 17 00:00:00 UTC 2024'
	# The guest architecture's cross compiler (qemu/arm64.py), else gcc.
	KCC="$(arch CROSS_COMPILE)gcc"
	KMAKE_ARGS=()
	read -ra KMAKE_ARGS <<<"$(arch MAKE_ARGS)"
	if [ "${CCACHE:-1}" = 1 ] && command -v ccache >/dev/null; then
		# Paths under the checkout are hashed relative to it, so a
		# fresh clone in another directory still hits the cache.
		export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
		export CCACHE_SLOPPINESS=time_macros
		# Depend mode hashes the compiler's own -MMD output instead of
		# running the preprocessor a second time: measured on kernel/
		# and mm/ with a cold cache, 99 s against 120 s for gcc alone
		# and 138 s for ccache's default mode; warm, 5.5 s.
		export CCACHE_DEPEND=1
		export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
		KCC="ccache $KCC"
	fi
}

# Run a kernel build under one lock: two cores, one build at a time. A
# caller that holds the lock already (VMTEST_BUILD_LOCKED, lock_script)
# runs it as it is: a second flock of the same file would wait for ever.
with_build_lock() {
	mkdir -p "$BUILD"
	if [ -n "${VMTEST_BUILD_LOCKED:-}" ]; then
		"$@"
	else
		flock "$KBUILD_LOCK" "$@"
	fi
}

# lock_script "$@": run the calling build script again, whole, under the
# build lock (VMTEST_BUILD_LOCKED marks the locked run, which goes on).
lock_script() {
	[ -z "${VMTEST_BUILD_LOCKED:-}" ] || return 0
	mkdir -p "$BUILD"
	VMTEST_BUILD_LOCKED=1 exec flock "$KBUILD_LOCK" "$0" "$@"
}

# series_if_possible FRAGMENT...: FRAGS, the fragments with --series made
# --series-if-possible (ci/kconfig.py), for a tree that may define the
# series' options without being able to enable them yet: a commit inside
# the series (UNWIND_USER before x86 selects HAVE_UNWIND_USER_FP), the base.
series_if_possible() {
	local f
	FRAGS=()
	for f in "$@"; do
		[ "$f" = --series ] && f=--series-if-possible
		FRAGS+=("$f")
	done
}

# boot_guest KOBJ INITRD DIR SMP TIMEOUT [qemu/vm.py options...]: a fresh
# run directory DIR holding the kernel's .config, and one boot of the
# guest under the build lock: the guest is timed and samples under TCG, so
# builds stay off the two cores. vm.py fails only on a setup error; what
# the guest did is left in DIR for the caller's verdict.
boot_guest() {
	local kobj=$1 initrd=$2 dir=$3 smp=$4 timeout=$5
	shift 5
	rm -rf "$dir"
	mkdir -p "$dir"
	cp "$kobj/.config" "$dir/kernel.config"
	VMTEST_PROBE_CACHE=$BUILD/kvm-probe.json with_build_lock \
		/usr/bin/python3 "$ROOT/qemu/vm.py" \
		--kernel "$kobj/$(arch KERNEL_IMAGE)" --initrd "$initrd" \
		--out "$dir" --smp "$smp" --timeout "$timeout" "$@"
}

# arch NAME: one setting of the guest architecture, VMTEST_ARCH (make's
# ARCH=; default x86_64). qemu/x86_64.py and qemu/arm64.py are the only
# places that know them (image path, make target, QEMU arguments); a list
# prints as words. An unknown architecture is a setup error (exit 2).
arch() {
	/usr/bin/python3 "$ROOT/qemu/guest_arch.py" "${VMTEST_ARCH:-x86_64}" "$1" ||
		die "no guest architecture '${VMTEST_ARCH:-}' (VMTEST_ARCH, make's ARCH=)"
}

# new_warnings BASE NEW: the lines of file NEW that file BASE does not have,
# after dropping line and column numbers (file:12:5: -> file:), so that
# code moving in a file does not make its old warnings look new. Counted:
# a warning that occurs twice in NEW and once in BASE is printed once.
new_warnings() {
	local norm='s/:[0-9]+(:[0-9]+)?: /: /'
	comm -13 <(sed -E "$norm" "$1" | LC_ALL=C sort) \
		<(sed -E "$norm" "$2" | LC_ALL=C sort)
}

# series_sources TREE BASE [FILTER]: the kernel C files and headers the
# series adds or changes (not tools/), one per line; FILTER is a
# git diff --diff-filter value (default AMR).
series_sources() {
	git -C "$1" diff --name-only --diff-filter="${3:-AMR}" "$2..HEAD" \
		-- '*.c' '*.h' ':!tools/'
}
