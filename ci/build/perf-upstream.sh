#!/usr/bin/env bash
# usage: perf-upstream.sh OUT_DIR
#
# Upstream perf for the interoperability tests: tools/perf of Linux 7.2
# from Debian unstable's linux-source-7.2 (fetched by ci/build/fetch-deb.sh,
# which leaves the machine's apt sources alone), built as the guest's perf
# is (ci/build/perf.sh: static, libelf and zstd, every other optional part
# off). The result is OUT_DIR/perf; the guest has it as /bin/perf-upstream
# and its tests record with each perf and read with the other.
#
# Only what perf's build reads is unpacked (tools/, scripts/, headers,
# arch/x86 and arm64's sysreg generator), once per package version, into
# build/perf-upstream-src.
. "$(dirname "$0")/../lib.sh"

[ $# -eq 1 ] || die "usage: perf-upstream.sh OUT_DIR"
out=$(realpath -m "$1")
pkg=linux-source-7.2
bash "$(dirname "$0")/fetch-deb.sh" sid "$BUILD/sid" "$pkg" >/dev/null ||
	fail "could not fetch $pkg from Debian unstable"
version=$(awk -v p="$pkg" '$1 == p { print $2 }' "$BUILD/sid/versions")
tarball=$BUILD/sid/usr/src/$pkg.tar.xz
[ -f "$tarball" ] || fail "$tarball missing after fetching $pkg"
src=$BUILD/perf-upstream-src
# One unpacking at a time: both architectures' builds read the source.
exec {lock_fd}>"$src.lock"
flock "$lock_fd"
if [ "$(cat "$src/.version" 2>/dev/null)" != "$version" ]; then
	log "unpacking tools/perf of $pkg $version into $src"
	rm -rf "$src" && mkdir -p "$src"
	tar -xJf "$tarball" -C "$src" --strip-components=1 \
		"$pkg/Makefile" "$pkg/tools" "$pkg/scripts" "$pkg/include/uapi" \
		"$pkg/include/linux" "$pkg/arch/x86" "$pkg/arch/arm64/tools" \
		"$pkg/arch/arm64/include" "$pkg/kernel/events" "$pkg/lib" ||
		fail "unpacking $tarball failed"
	echo "$version" >"$src/.version"
fi
exec {lock_fd}>&-
bash "$(dirname "$0")/perf.sh" "$src" "$out" || exit
echo "$pkg $version" >"$out/version"
