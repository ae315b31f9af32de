#!/usr/bin/env bash
# usage: upstream-tree.sh DIR
#
# Make DIR an unpatched upstream Linux 7.2 tree for make vmtest-upstream:
# Debian unstable's linux-source-7.2 (fetched by ci/build/fetch-deb.sh, the
# package make perf-upstream builds its perf from), unpacked and committed
# as git (commit_base: tag vmtest-base, the same hash on every machine for
# the same package version). The suite then runs on that kernel with that
# tree's own perf, perf.so and perf shell tests (doc/upstream/conformance.md).
#
# An existing DIR is used as it is if it is at its vmtest-base tag with no
# changes; otherwise this stops: a tree with the fixes or the series on it
# is no upstream kernel (use make vmtest KERNEL=DIR PERF_TREE=DIR for it).
. "$(dirname "$0")/lib.sh"

[ $# -eq 1 ] || die "usage: upstream-tree.sh DIR"
dir=$(realpath -m "$1")
pkg=linux-source-7.2

if [ -e "$dir/.git" ]; then
	git -C "$dir" rev-parse -q --verify "$BASE_TAG" >/dev/null ||
		die "$dir has no '$BASE_TAG' tag: remove it and rerun to unpack $pkg again"
	[ "$(git -C "$dir" rev-parse HEAD)" = "$(git -C "$dir" rev-parse "$BASE_TAG^{commit}")" ] ||
		die "$dir is not at its '$BASE_TAG' (upstream as Debian ships it): git -C $dir checkout $BASE_TAG, or use make vmtest KERNEL=$dir PERF_TREE=$dir"
	[ -z "$(git -C "$dir" status --porcelain --untracked-files=no)" ] ||
		die "$dir has uncommitted changes: git -C $dir stash (or checkout .) for an upstream run"
	log "upstream tree $dir: $(git -C "$dir" log -1 --format=%s) at $(git -C "$dir" rev-parse --short HEAD)"
	exit 0
fi
[ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] ||
	die "$dir exists but is not a git tree: move it away and rerun"
bash "$ROOT/ci/build/fetch-deb.sh" sid "$BUILD/sid" "$pkg" >/dev/null ||
	fail "could not fetch $pkg from Debian unstable"
tarball=$BUILD/sid/usr/src/$pkg.tar.xz
[ -f "$tarball" ] || fail "$tarball missing after fetching $pkg"
tmp=$dir.unpack
rm -rf "$tmp" && mkdir -p "$tmp"
log "unpacking $pkg $(awk -v p="$pkg" '$1 == p { print $2 }' "$BUILD/sid/versions") into $dir"
tar -xJf "$tarball" -C "$tmp" --strip-components=1 || fail "unpacking $tarball failed"
commit_base "$tmp"
rmdir "$dir" 2>/dev/null || true
mv "$tmp" "$dir"
log "upstream tree $dir: $(git -C "$dir" log -1 --format=%s) at $(git -C "$dir" rev-parse --short HEAD) ($(git -C "$dir" ls-files | wc -l) files)"
