#!/usr/bin/env bash
# usage: export.sh [TREE] [BASE]
#
# Regenerate patches/ from TREE's commits since BASE (default: the
# vmtest-base tag of build/linux), as two series (SERIES_NAMES in lib.sh):
#
#   patches/fixes/    the first commits, those ci/series/fixes.txt names: fixes of
#                     Linux itself, based on BASE, cover letter from
#                     ci/series/fixes-cover-letter.txt
#   patches/feature/  the rest, based on the fixes (format-patch --base
#                     gives BASE and the fixes' prerequisite-patch-id
#                     lines), cover letter from ci/series/cover-letter.txt
#
# count_fixes (lib.sh) refuses a tree where a listed fix is missing or
# comes after a feature commit. Output is stable: fixed file names, no
# commit hashes in the From lines, no version signature, so re-exporting an
# unchanged series changes no file. Each cover letter is generated from its
# text in ci/, the shortlog and the diffstat.
. "$(dirname "$0")/lib.sh"

tree=${1:-$WORKTREE}
base=${2:-}
[ -n "$base" ] || base=$BASE_TAG
git -C "$tree" rev-parse -q --verify "$base^{commit}" >/dev/null ||
	die "$tree has no base '$base': give BASE=<commit> (the unpatched 6.12.y commit)"
[ -z "$(git -C "$tree" status --porcelain --untracked-files=no)" ] ||
	warn "$tree has uncommitted changes: they are not exported (commit them first)"

base=$(git -C "$tree" rev-parse "$base^{commit}")
n=$(git -C "$tree" rev-list --count "$base..HEAD")
nfix=$(count_fixes "$tree" "$base")
fixhead=$base
[ "$nfix" -eq 0 ] || fixhead=$(git -C "$tree" rev-list --reverse "$base..HEAD" | sed -n "${nfix}p")

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# cover NAME FROM TO LETTER FIRST: the cover letter of series NAME
# (FROM..TO, FIRST its first patch file) on stdout, from the text LETTER
# (line 1 the subject, line 2 blank).
cover() {
	local name=$1 from=$2 to=$3 letter=$4 first=$5 count
	count=$(git -C "$tree" rev-list --count "$from..$to")
	echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
	echo "From: $(git -C "$tree" log -1 --format='%an <%ae>' "$to")"
	echo "Date: $(git -C "$tree" log -1 --format=%aD "$to")"
	sed -n '1s/^/Subject: [PATCH 0\/'"$count"'] /p' "$letter"
	echo
	sed '1,2d' "$letter"
	echo
	if [ "$name" = feature ] && [ "$from" != "$base" ]; then
		# The feature is based on the fixes: say so, as make send does.
		git -C "$tree" log --reverse --format=%s "$base..$from" >"$tmp/fixes.subjects"
		/usr/bin/python3 -m ci.series.send_prep based-on --subjects "$tmp/fixes.subjects" -- \
			"[PATCH 0/$(wc -l <"$tmp/fixes.subjects")] $(sed -n 1p "$ROOT/ci/series/fixes-cover-letter.txt")"
	fi
	git -C "$tree" shortlog "$from..$to"
	git -C "$tree" diff --stat=72 --summary "$from..$to"
	echo
	# What format-patch --base wrote at the end of the first patch: the
	# base, and the patches between it and this series (the fixes, for
	# the feature).
	sed -n '/^base-commit: /,$p' "$first"
}

# export_series NAME FROM TO LETTER: FROM..TO as patches/NAME/, with a
# cover letter, or no directory at all when the range is empty.
export_series() {
	local name=$1 from=$2 to=$3 letter=$4 dir=$PATCHES/$1
	rm -rf "$dir"
	[ "$(git -C "$tree" rev-list --count "$from..$to")" -gt 0 ] || return 0
	[ -f "$letter" ] || die "$letter missing: the $name series' cover letter text"
	mkdir -p "$dir" "$tmp/$name"
	# --base prints the base hash (and the fixes' patch-ids), stable as
	# they are.
	format_patch "$tree" -q --zero-commit --no-signature --numbered \
		--base="$base" -o "$tmp/$name" "$from..$to"
	cp "$tmp/$name"/*.patch "$dir"/
	cover "$name" "$from" "$to" "$letter" "$(ls "$dir"/0001-*.patch)" \
		>"$dir/0000-cover-letter.patch"
}

mkdir -p "$PATCHES"
# The one-series layout of before: its files are replaced.
rm -f "$PATCHES"/[0-9][0-9][0-9][0-9]-*.patch
export_series fixes "$base" "$fixhead" "$ROOT/ci/series/fixes-cover-letter.txt"
export_series feature "$fixhead" HEAD "$ROOT/ci/series/cover-letter.txt"
log "exported $n patches to $PATCHES: $nfix fixes, $((n - nfix)) feature" \
	"($(git -C "$ROOT" status --porcelain -- "$PATCHES" 2>/dev/null | wc -l) files changed)"
