#!/usr/bin/env bash
# usage: kernel-doc.sh KERNEL_SRC
#
# scripts/kernel-doc -none over the C files and headers the series adds or
# changes (tools/ aside). A file the series adds must be clean; a file it
# changes must have no warning that the unpatched base did not have
# (include/linux/perf_event.h, for one, has old ones). Exit 1 with the new
# warnings otherwise.
. "$(dirname "$0")/../series/lib.sh"
. "$(dirname "$0")/../build/lib.sh"

src=$(realpath "$1")
base=${2:-$BASE_TAG}
[ -f "$src/scripts/kernel-doc" ] || die "$src/scripts/kernel-doc missing: run 'make tree'"
git -C "$src" rev-parse -q --verify "$base^{commit}" >/dev/null ||
	die "$src has no $base tag: run 'make tree'"
mapfile -t files < <(series_sources "$src" "$base")
[ "${#files[@]}" -gt 0 ] || die "the series in $src changes no kernel C file or header"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Same relative paths for both, so that the warnings compare.
mkdir -p "$tmp/base"
for f in "${files[@]}"; do
	if git -C "$src" cat-file -e "$base:$f" 2>/dev/null; then
		mkdir -p "$tmp/base/$(dirname "$f")"
		git -C "$src" show "$base:$f" >"$tmp/base/$f"
		(cd "$tmp/base" && perl "$src/scripts/kernel-doc" -none "$f") \
			>>"$tmp/base.log" 2>&1 || true
	fi
	(cd "$src" && perl scripts/kernel-doc -none "$f") >>"$tmp/new.log" 2>&1 || true
done
touch "$tmp/base.log" "$tmp/new.log"
new=$(new_warnings "$tmp/base.log" "$tmp/new.log")
if [ -n "$new" ]; then
	printf '%s\n' "$new"
	log "kernel-doc -none: ${#files[@]} files, $(printf '%s\n' "$new" | wc -l) new warnings"
	exit 1
fi
log "kernel-doc -none: ${#files[@]} files, no new warnings ($(wc -l <"$tmp/base.log") in the base)"
