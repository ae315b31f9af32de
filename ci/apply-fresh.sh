#!/usr/bin/env bash
# usage: apply-fresh.sh
# Prove patches/ applies with `make apply` to an unpatched 6.12 base: a
# throwaway clone of build/linux at the vmtest-base tag.
. "$(dirname "$0")/lib.sh"

fresh=$BUILD/fresh-base
rm -rf "$fresh"
git clone -q --shared --no-checkout "$WORKTREE" "$fresh"
git -C "$fresh" checkout -q -b fresh "$BASE_TAG"
git -C "$fresh" config user.name vmtest
git -C "$fresh" config user.email vmtest@localhost
"$ROOT/ci/apply.sh" "$fresh"
rm -rf "$fresh"
