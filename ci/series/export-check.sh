#!/usr/bin/env bash
# usage: export-check.sh [TREE] [BASE]
#
# Whether patches/ is what make export writes from TREE (default: the work
# tree) and the cover letters' texts in ci/series/: the series exported
# to a scratch directory and compared file by file. A cover letter whose
# text changed without a re-export, or a patch hand-edited, fails (exit
# 1) with the files that differ. make check runs it on the tree it made
# from patches/, where only the cover letters can differ.
. "$(dirname "$0")/lib.sh"

tree=${1:-$WORKTREE}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if ! msg=$(VMTEST_PATCHES=$scratch bash "$(dirname "$0")/export.sh" "$tree" "${2:-}" 2>&1); then
	printf '%s\n' "$msg" >&2
	die "make export of $tree failed (above)"
fi
if ! out=$(diff -r -q "$PATCHES" "$scratch" 2>&1); then
	printf '%s\n' "${out//$scratch/(export)}" >&2
	fail "patches/ is not what make export writes from $tree: run 'make export' and commit patches/"
fi
log "patches/ is make export's output of $tree ($(find "$PATCHES" -name '*.patch' | wc -l) files)"
