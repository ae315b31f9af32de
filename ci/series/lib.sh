# shellcheck shell=bash
# The patch series and kernel trees: where the patches are, which are the
# fixes, a tree's base commit. Source it (it sources ci/lib.sh).

. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

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
FIXES_LIST=${VMTEST_FIXES:-$ROOT/ci/series/fixes.txt}
# The default kernel work tree: Debian's linux-source-6.12 as a git repo.
WORKTREE=$BUILD/linux
# The tag commit_base puts on the unpatched base of a tree.
BASE_TAG=vmtest-base

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

# format_patch TREE ARGS...: git format-patch in TREE with the blob
# abbreviations Documentation/process/submitting-patches.rst asks for
# (core.abbrev = 12).
# Git's default grows with the repository's object count, so without
# it the index lines of one series change with how packed the tree is.
format_patch() { git -C "$1" -c core.abbrev=12 format-patch "${@:2}"; }

# patch_subject FILE: the subject of a format-patch file, without [PATCH n/m].
patch_subject() {
	awk '/^Subject: /{s = substr($0, 10)
		while ((getline l) > 0 && l ~ /^[ \t]/) s = s l
		sub(/^\[[^]]*\] */, "", s); print s; exit}' "$1"
}

# series_sources TREE BASE [FILTER]: the kernel C files and headers the
# series adds or changes (not tools/), one per line; FILTER is a
# git diff --diff-filter value (default AMR).
series_sources() {
	git -C "$1" diff --name-only --diff-filter="${3:-AMR}" "$2..HEAD" \
		-- '*.c' '*.h' ':!tools/'
}

