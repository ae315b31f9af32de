#!/usr/bin/env bash
# usage: apply-fresh.sh
# Prove patches/ applies with `make apply` to an unpatched 6.12 base: a
# throwaway clone of build/linux at the vmtest-base tag. Each series is
# applied on its own, in order (SERIES_NAMES in lib.sh): the fixes alone
# onto the base, as they are sent, then the feature onto them. Only the
# files the series touch (and what apply.sh looks at) are checked out:
# git am reads nothing else, and writing all ~80k files took most of the
# time.
. "$(dirname "$0")/../series/lib.sh"

fresh=$BUILD/fresh-base
rm -rf "$fresh"
git clone -q --shared --no-checkout "$WORKTREE" "$fresh"
series_files | xargs sed -n 's|^diff --git a/\([^ ]*\) b/.*|/\1|p' | sort -u |
	{ cat; printf '%s\n' /Makefile /kernel/Makefile; } |
	git -C "$fresh" sparse-checkout set --no-cone --stdin
git -C "$fresh" checkout -q -b fresh "$BASE_TAG"
git -C "$fresh" config user.name vmtest
git -C "$fresh" config user.email vmtest@localhost
for s in "${SERIES_NAMES[@]}"; do
	[ -z "$(series_files "$s")" ] || SERIES=$s "$ROOT/ci/series/apply.sh" "$fresh"
done
rm -rf "$fresh"
log "every series applies to $BASE_TAG in turn: ${SERIES_NAMES[*]}"
