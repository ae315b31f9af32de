#!/usr/bin/env bash
# usage: checkpatch.sh KERNEL_SRC
# scripts/checkpatch.pl --strict over every patch of the series. Any error,
# warning or check fails (exit 1) and is printed with the patch's name.
. "$(dirname "$0")/lib.sh"

src=$1
[ -x "$src/scripts/checkpatch.pl" ] || die "$src/scripts/checkpatch.pl missing: run 'make tree'"
mapfile -t series < <(series_files)
# With the tree, as a maintainer runs it: that includes the SPDX check,
# whose scripts/spdxcheck.py needs Debian's python3 (ply, git), not the
# first python3 on PATH.
export PATH=/usr/bin:$PATH
bad=0
for p in "${series[@]}"; do
	if ! out=$(cd "$src" && perl scripts/checkpatch.pl --strict \
		--terse --show-types --ignore FILE_PATH_CHANGES "$p" 2>&1); then
		printf '%s\n' "$out" | sed "s|^|$(basename "$p"): |"
		bad=$((bad + 1))
	elif printf '%s\n' "$out" | grep -qE ': (WARNING|CHECK|ERROR):'; then
		printf '%s\n' "$out" | sed "s|^|$(basename "$p"): |"
		bad=$((bad + 1))
	fi
done
log "checkpatch --strict: ${#series[@]} patches, $bad with findings"
[ "$bad" -eq 0 ] || exit 1
