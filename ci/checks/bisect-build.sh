#!/usr/bin/env bash
# usage: bisect-build.sh KERNEL_SRC KCONFIG_ARGS...
#
# Prove the series is bisectable: check out every commit of KERNEL_SRC
# since the base (the fixes series, then the feature series, in the
# tree's order), one after the other, in a detached worktree
# (build/bisect) and build it incrementally: the guest kernel (normal
# config, the series' options as far as that commit defines them) when
# the commit touches anything outside tools/, and static perf and its
# python binding (perf.so) when it touches tools/. Stops at the first
# commit that does not build and names it. The user's tree is not
# touched. A kernel or perf whose sources already built with the same
# configuration (build/out/bisect/built.list) is not built again, so after
# a change to patch N only patches N.. are rebuilt, a reorder of perf
# patches rebuilds no kernel, and new kernel-only patches no perf.
. "$(dirname "$0")/../series/lib.sh"
. "$(dirname "$0")/../build/lib.sh"

# The harness files a build depends on (the cache key): this script
# decides what is built, lib.sh holds use_kernel_cc and perf's switches,
# ci/guest/x86_64.py the make target. tests/test_build.py keeps it whole.
BUILD_DEPS=(ci/checks/bisect-build.sh ci/lib.sh ci/series/lib.sh ci/build/lib.sh
	ci/build/ccache-cc ci/guest/lib.sh ci/build/kernel.sh ci/build/kconfig.py
	ci/build/configs.py ci/build/perf.sh ci/build/perf-python.sh
	ci/build/fetch-deb.sh ci/guest/arch.py ci/guest/x86_64.py)
mapfile -t -O "${#BUILD_DEPS[@]}" BUILD_DEPS < <(cd "$ROOT" && ls ci/guest/config/*.config)

[ $# -ge 2 ] || die "usage: bisect-build.sh KERNEL_SRC KCONFIG_ARGS..."
# The lock for the whole run: its builds' logs would take the "waiting"
# line of each one queued on its own, and another build between two of
# them would only make the run longer.
lock_script "$@"
src=$(realpath "$1")
shift
git -C "$src" rev-parse -q --verify "$BASE_TAG^{commit}" >/dev/null ||
	die "$src has no $BASE_TAG tag: run 'make tree'"
mapfile -t commits < <(git -C "$src" rev-list --reverse "$BASE_TAG..HEAD")
[ "${#commits[@]}" -gt 0 ] || die "$src has no commits after $BASE_TAG"
# Which series each commit is in, for the report: the fixes end where
# ci/series/fixes.txt says (count_fixes); a tree it does not fit (another
# order, KERNEL=DIR of someone else) is still built, unlabelled.
nfix=$( (count_fixes "$src" "$BASE_TAG") 2>/dev/null) || nfix=

cd "$ROOT"
wt=$BUILD/bisect
out=$BUILD/out/bisect
mkdir -p "$out"
git -C "$src" worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
git -C "$src" worktree prune
git -C "$src" worktree add -q --detach "$wt" "${commits[0]}"
trap 'git -C "$src" worktree remove --force "$wt" 2>/dev/null' EXIT

# A commit in the middle may define a series option before anything can
# enable it: build what that commit allows instead of refusing.
set -- "$@" --if-possible

# What a build depends on besides the tree: kconfig.py's arguments and
# every file of the harness that the builds below run or read (the
# configuration table's fragments among them).
config_id=$(for a in "$@" "${BUILD_DEPS[@]}"; do
	if [ -f "$a" ]; then cat "$a"; else echo "$a"; fi
done | md5sum | cut -c1-12)
built=$out/built.list
touch "$built"

t_all=$SECONDS
i=0
for c in "${commits[@]}"; do
	i=$((i + 1))
	subject=$(git -C "$src" log -1 --format=%s "$c")
	if [ "${nfix:-0}" -eq 0 ]; then
		:
	elif [ "$i" -le "$nfix" ]; then
		subject="[fixes $i/$nfix] $subject"
	else
		subject="[feature $((i - nfix))/$((${#commits[@]} - nfix))] $subject"
	fi
	# Each build is keyed by what it reads: the kernel everything but
	# tools/perf (objtool and tools/include are built with it); perf
	# tools/, the UAPI headers and the top Makefile (its version). A
	# commit that moved (a reorder), or that changed only one side,
	# finds the other side built before.
	kkey="kernel $({ git -C "$src" ls-tree "$c" | grep -v $'\ttools$'
		git -C "$src" ls-tree "$c:tools" | grep -v $'\tperf$' || :
	} | md5sum | cut -c1-12) $config_id"
	pkey="perf $({ git -C "$src" ls-tree "$c" tools Makefile
		git -C "$src" ls-tree "$c:include" uapi
		git -C "$src" ls-tree -r "$c" arch | grep '/include/uapi/' || :
	} | md5sum | cut -c1-12) $config_id"
	files=$(git -C "$src" diff-tree --no-commit-id --name-only -r "$c")
	want_kernel=
	want_perf=
	grep -qv '^tools/perf/' <<<"$files" && ! grep -qxF "$kkey" "$built" &&
		want_kernel=1
	grep -q '^tools/' <<<"$files" && ! grep -qxF "$pkey" "$built" &&
		want_perf=1
	if [ -z "$want_kernel$want_perf" ]; then
		printf '[%2d/%d] %-6s built before (same sources and config)\n' \
			"$i" "${#commits[@]}" "${c:0:12}"
		printf '        %s\n' "$subject"
		continue
	fi
	git -C "$wt" checkout -q --detach "$c"
	t0=$SECONDS
	what=
	if [ -n "$want_kernel" ]; then
		"$ROOT/ci/build/kernel.sh" "$wt" "$out/kobj" "$@" >"$out/kernel.log" 2>&1 || {
			tail -30 "$out/kernel.log" >&2
			fail "[$i/${#commits[@]}] kernel does not build at: $subject"
		}
		what="kernel"
		echo "$kkey" >>"$built"
	fi
	if [ -n "$want_perf" ]; then
		"$ROOT/ci/build/perf.sh" "$wt" "$out/perf" >"$out/perf.log" 2>&1 || {
			tail -30 "$out/perf.log" >&2
			fail "[$i/${#commits[@]}] perf does not build at: $subject"
		}
		what="${what:+$what + }perf"
		# perf.so links perf's util objects too, python.c besides them.
		"$ROOT/ci/build/perf-python.sh" "$wt" "$out/perf-python" >"$out/perf-python.log" 2>&1 || {
			tail -30 "$out/perf-python.log" >&2
			fail "[$i/${#commits[@]}] perf's python binding does not build at: $subject"
		}
		what="$what + perf.so"
		echo "$pkey" >>"$built"
	fi
	printf '[%2d/%d] %-6s builds (%s, %d s)\n' "$i" "${#commits[@]}" \
		"${c:0:12}" "$what" $((SECONDS - t0))
	printf '        %s\n' "$subject"
done
log "all ${#commits[@]} commits build, in $((SECONDS - t_all)) s"
