#!/usr/bin/env bash
# usage: worktree.sh
#
# Make sure the default kernel work tree (build/linux) exists and carries
# the series. The first run unpacks Debian's linux-source-6.12, strips the
# tarball's "ignore everything at the top level" .gitignore block, commits
# it as the base (tag vmtest-base, fixed identity and date so its hash is
# the same on every machine) and applies patches/ on top.
#
# Later runs never discard work: if the tree's commits since the base are
# exactly patches/, nothing happens; if patches/ is newer and the tree holds
# nothing that patches/ lacks, the tree is moved to patches/; if the tree
# holds commits that patches/ lacks, it is left as it is (run make export).
. "$(dirname "$0")/lib.sh"

TARBALL=${LINUX_SOURCE_TARBALL:-/usr/src/linux-source-6.12.tar.xz}

create() {
	[ -f "$TARBALL" ] || die "$TARBALL missing: run 'make deps' (installs linux-source-6.12)"
	local tmp=$BUILD/linux.unpack
	rm -rf "$tmp"
	mkdir -p "$tmp"
	log "unpacking $(basename "$TARBALL") into $WORKTREE"
	tar -xf "$TARBALL" -C "$tmp" --strip-components=1
	# Debian's tarball ignores every top-level path; git add would add nothing.
	sed -i '/^# Debian packaging: ignore everything at the top level/,/^!\/debian\/$/d' \
		"$tmp/.gitignore"
	! grep -qx '/\*' "$tmp/.gitignore" ||
		die "could not strip the Debian block from $TARBALL's .gitignore"
	local version
	version=$(sed -n -e 's/^VERSION = //p' -e 's/^PATCHLEVEL = //p' -e 's/^SUBLEVEL = //p' \
		"$tmp/Makefile" | paste -sd.)
	(
		cd "$tmp"
		export GIT_AUTHOR_NAME=vmtest GIT_AUTHOR_EMAIL=vmtest@localhost
		export GIT_COMMITTER_NAME=vmtest GIT_COMMITTER_EMAIL=vmtest@localhost
		export GIT_AUTHOR_DATE='2024-11-17 00:00:00 +0000'
		export GIT_COMMITTER_DATE=$GIT_AUTHOR_DATE
		git init -q -b master
		git add -A
		git commit -q -m "Linux $version (Debian linux-source-6.12)"
		git tag "$BASE_TAG"
	)
	mv "$tmp" "$WORKTREE"
	log "base: Linux $version at $(git -C "$WORKTREE" rev-parse --short HEAD) ($(git -C "$WORKTREE" ls-files | wc -l) files)"
}

# patch-ids, one per line, in order: of the tree's commits / of patches/.
tree_ids() { git -C "$WORKTREE" log --reverse -p --format='commit %H' "$BASE_TAG..HEAD" |
	git -C "$WORKTREE" patch-id --stable | cut -d' ' -f1; }
series_ids() { local p; for p in $(series_files); do
	git -C "$WORKTREE" patch-id --stable <"$p" | cut -d' ' -f1; done; }

mkdir -p "$BUILD"
# -e, not -d: in a "git worktree add" checkout .git is a file.
if [ ! -e "$WORKTREE/.git" ]; then
	[ ! -e "$WORKTREE" ] || [ -z "$(ls -A "$WORKTREE")" ] ||
		die "$WORKTREE exists but is not a git tree: move it away and rerun"
	rmdir "$WORKTREE" 2>/dev/null || true
	create
fi
git -C "$WORKTREE" rev-parse -q --verify "$BASE_TAG" >/dev/null ||
	die "$WORKTREE has no '$BASE_TAG' tag: remove the directory and rerun to recreate it"

have=$(tree_ids)
want=$(series_ids)
if [ "$have" = "$want" ]; then
	log "work tree $WORKTREE carries patches/ ($(printf '%s' "$want" | grep -c . || true) patches)"
	exit 0
fi
extra=$(comm -23 <(printf '%s\n' "$have" | grep . | sort) <(printf '%s\n' "$want" | grep . | sort) | grep -c . || true)
if [ "$extra" -gt 0 ]; then
	warn "$WORKTREE holds $extra commit(s) that patches/ does not have: building it as it is."
	warn "run 'make export' to save them into patches/ (nothing is discarded)."
	exit 0
fi
if [ -n "$(git -C "$WORKTREE" status --porcelain --untracked-files=no)" ]; then
	warn "$WORKTREE has uncommitted changes and patches/ changed: building it as it is."
	exit 0
fi
log "moving $WORKTREE to the series in patches/ (it held no commit patches/ lacks)"
git -C "$WORKTREE" reset -q --hard "$BASE_TAG"
"$ROOT/ci/apply.sh" "$WORKTREE"
