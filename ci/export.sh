#!/usr/bin/env bash
# usage: export.sh [TREE] [BASE]
#
# Regenerate patches/ from TREE's commits since BASE (default: the
# vmtest-base tag of build/linux). Output is stable: fixed file names, no
# commit hashes in the From lines, no version signature, so re-exporting an
# unchanged series changes no file. The cover letter is generated from
# ci/cover-letter.txt, the shortlog and the diffstat.
. "$(dirname "$0")/lib.sh"

tree=${1:-$WORKTREE}
base=${2:-}
[ -n "$base" ] || base=$BASE_TAG
git -C "$tree" rev-parse -q --verify "$base^{commit}" >/dev/null ||
	die "$tree has no base '$base': give BASE=<commit> (the unpatched 6.12.y commit)"
[ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ] ||
	warn "$tree has uncommitted changes: they are not exported (commit them first)"

n=$(git -C "$tree" rev-list --count "$base..HEAD")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ "$n" -gt 0 ]; then
	git -C "$tree" format-patch -q --zero-commit --no-signature --numbered \
		--base="$base" -o "$tmp" "$base..HEAD"
	# --base prints the base hash, stable as the base commit is.
fi
rm -f "$PATCHES"/[0-9][0-9][0-9][0-9]-*.patch
mkdir -p "$PATCHES"
cp "$tmp"/*.patch "$PATCHES"/ 2>/dev/null || true

if [ "$n" -gt 0 ]; then
	last_date=$(git -C "$tree" log -1 --format=%aD HEAD)
	author=$(git -C "$tree" log -1 --format='%an <%ae>' HEAD)
	{
		echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
		echo "From: $author"
		echo "Date: $last_date"
		sed -n '1s/^/Subject: [PATCH 0\/'"$n"'] /p' "$ROOT/ci/cover-letter.txt"
		echo
		sed '1,2d' "$ROOT/ci/cover-letter.txt"
		echo
		git -C "$tree" shortlog "$base..HEAD"
		git -C "$tree" diff --stat=72 --summary "$base..HEAD"
		echo
		echo "base-commit: $(git -C "$tree" rev-parse "$base")"
	} >"$PATCHES/0000-cover-letter.patch"
else
	rm -f "$PATCHES/0000-cover-letter.patch"
fi
log "exported $n patches to $PATCHES ($(git -C "$ROOT" status --porcelain -- patches | wc -l) files changed)"
