#!/usr/bin/env bash
# usage: export-check.sh [TREE] [BASE]
#
# Whether patches/ is what make export writes from TREE (default: the work
# tree) and the cover letters' texts in ci/series/: the series exported
# to a scratch directory and compared file by file. A cover letter whose
# text changed without a re-export, or a patch hand-edited, fails (exit
# 1) with the files that differ. make check runs it on the tree it made
# from patches/, where only the cover letters can differ.
#
# Debian's 6.12 moves under the series (6.12.117, then .118): on a tree
# whose base is not the base-commit patches/ names, the export differs
# in what the base alone decides (index lines, hunk line numbers,
# base-commit). With nothing else different it is the same series: the
# check passes and warns that make export would refresh patches/.
. "$(dirname "$0")/lib.sh"

tree=${1:-$WORKTREE}
base=${2:-$BASE_TAG}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch" "$scratch".*' EXIT
if ! msg=$(VMTEST_PATCHES=$scratch bash "$(dirname "$0")/export.sh" "$tree" "${2:-}" 2>&1); then
	printf '%s\n' "$msg" >&2
	die "make export of $tree failed (above)"
fi
# without_base DIR: DIR's patches as they would read on any base, in a
# new directory whose path is printed.
without_base() {
	local dir=$scratch.$1 f
	mkdir -p "$dir"
	(cd "$2" && find . -name '*.patch') | while read -r f; do
		mkdir -p "$dir/$(dirname "$f")"
		sed -E -e 's/^index [0-9a-f]+\.\.[0-9a-f]+/index/' \
			-e 's/^@@ -[0-9]+(,[0-9]+)? \+[0-9]+(,[0-9]+)? @@.*/@@/' \
			-e 's/^base-commit: [0-9a-f]{40}$/base-commit:/' "$2/$f" >"$dir/$f"
	done
	echo "$dir"
}

if ! out=$(diff -r -q "$PATCHES" "$scratch" 2>&1); then
	old=$(sed -n 's/^base-commit: \([0-9a-f]\{40\}\)$/\1/p' "$PATCHES"/*/0000-cover-letter.patch 2>/dev/null | head -1)
	new=$(git -C "$tree" rev-parse "$base^{commit}")
	if [ -n "$old" ] && [ "$old" != "$new" ] &&
		diff -r -q "$(without_base committed "$PATCHES")" "$(without_base export "$scratch")" >/dev/null; then
		warn "patches/ was exported on base ${old:0:12}, $tree is on $(git -C "$tree" log -1 --format='%h (%s)' "$new"):"
		warn "the same series; only index lines, hunk line numbers and base-commit differ."
		warn "run 'make export' to refresh patches/ for this base"
		exit 0
	fi
	printf '%s\n' "${out//$scratch/(export)}" >&2
	fail "patches/ is not what make export writes from $tree: run 'make export' and commit patches/"
fi
log "patches/ is make export's output of $tree ($(find "$PATCHES" -name '*.patch' | wc -l) files)"
