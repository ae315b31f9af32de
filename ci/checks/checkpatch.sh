#!/usr/bin/env bash
# usage: checkpatch.sh KERNEL_SRC
# scripts/checkpatch.pl --strict over every patch of both series (fixes,
# feature). Any error, warning or check fails (exit 1) and is printed with
# the patch's series and name.
. "$(dirname "$0")/../series/lib.sh"

src=$1
[ -x "$src/scripts/checkpatch.pl" ] || die "$src/scripts/checkpatch.pl missing: run 'make tree'"
mapfile -t series < <(series_files)
# With the tree, as a maintainer runs it: that includes the SPDX check,
# whose scripts/spdxcheck.py needs Debian's python3 (ply, git), not the
# first python3 on PATH.
export PATH=/usr/bin:$PATH
# One checkpatch per core: each patch is judged on its own, and the
# reports are printed in series order.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# The reports are named series-file: the two series both have a 0001.
printf '%s\n' "${series[@]}" | (cd "$src" && xargs -P "$(nproc)" -I{} sh -c \
	'n=$(basename "$(dirname "$1")")-$(basename "$1")
	perl scripts/checkpatch.pl --strict --terse --show-types \
		"$1" >"$2/$n.out" 2>&1
	echo $? >"$2/$n.rc"' sh {} "$out")
# One exception: the names of the Python C API (PyObject, Py_DECREF,
# PyTuple_New, ...), which perf's python binding (tools/perf/util/python.c)
# cannot avoid and checkpatch cannot know (Python.h is not in the tree),
# are not CamelCase findings. Everything else counts; checkpatch's own exit
# status counts when it printed no finding at all.
PY_API='CHECK:CAMELCASE: Avoid CamelCase: <_?Py[A-Za-z0-9_]*>$'
bad=0
for p in "${series[@]}"; do
	name=$(series_of "$p")/$(basename "$p")
	f=$out/${name/\//-}
	grep -E ': (WARNING|CHECK|ERROR):' "$f.out" | grep -vE "$PY_API" >"$f.findings" || true
	if [ -s "$f.findings" ] || { [ "$(cat "$f.rc")" != 0 ] &&
		! grep -qE ': (WARNING|CHECK|ERROR):' "$f.out"; }; then
		sed "s|^|$name: |" "$f.out"
		bad=$((bad + 1))
	fi
done
counts=$(for s in "${SERIES_NAMES[@]}"; do echo "$(series_files "$s" | wc -l) $s"; done | paste -sd, | sed 's/,/, /g')
log "checkpatch --strict: ${#series[@]} patches ($counts), $bad with findings"
[ "$bad" -eq 0 ] || exit 1
