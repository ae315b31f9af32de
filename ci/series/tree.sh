#!/usr/bin/env bash
# usage: tree.sh
#
# Make sure the default kernel work tree (build/linux) exists and carries
# the series. The first run unpacks Debian's linux-source-6.12, commits it
# as the base (commit_base in lib.sh: tag vmtest-base, the same hash on
# every machine) and applies patches/ on top.
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
	commit_base "$tmp"
	mv "$tmp" "$WORKTREE"
	log "base: $(git -C "$WORKTREE" log -1 --format=%s) at $(git -C "$WORKTREE" rev-parse --short HEAD) ($(git -C "$WORKTREE" ls-files | wc -l) files)"
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
"$ROOT/ci/series/apply.sh" "$WORKTREE"
