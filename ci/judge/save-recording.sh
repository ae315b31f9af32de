#!/usr/bin/env bash
# usage: save-recording.sh RUN_DATA_DIR PERF DEST   (make guest-recording)
#
# Keep a real program's deferred recording from the guest for the host
# tests (tests/test_perf_convert.py): RUN_DATA_DIR is one deferred run's
# directory under make realstacks' data/ (its perf.data, sampled.data and
# shim.log, brought back by the plan word "data"). DEST gets
# deferred.data (the guest's perf.data as perf record wrote it: every
# traced call's entry), converted.data (perf inject --convert-callchain
# of it by PERF, the tree's perf), shim.log (glibc's backtrace() of every
# traced call: the truth their stacks are checked against), sampled.data
# and sampled-converted.data (the same workload on cpu-clock, for readers
# that refuse tracepoints without trace data) and source.txt (what made
# them).
. "$(dirname "$0")/../lib.sh"

[ $# -eq 3 ] || die "usage: save-recording.sh RUN_DATA_DIR PERF DEST"
src=$1 perf=$2 dst=$3
for f in perf.data sampled.data shim.log; do
	[ -s "$src/$f" ] || die "$src/$f missing: run make realstacks with the plan word data (make guest-recording)"
done
[ -x "$perf" ] || die "$perf: no perf built (make perf)"
tmp=$(mktemp -d "$(dirname "$dst")/.recording.XXXXXX")
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
cp "$src/perf.data" "$tmp/deferred.data"
cp "$src/sampled.data" "$tmp/sampled.data"
cp "$src/shim.log" "$tmp/"
convert() { # IN OUT, in $tmp
	"$perf" inject --convert-callchain -i "$tmp/$1" -o "$tmp/$2" 2>>"$tmp/inject.err" ||
		die "perf inject --convert-callchain -i $1 failed: $(cat "$tmp/inject.err")"
}
convert deferred.data converted.data
convert sampled.data sampled-converted.data
chmod 644 "$tmp"/*
{
	echo "saved $(date -u '+%Y-%m-%d %H:%M UTC') from $src"
	echo "recorded by: $(sed -n 's/^# realstacks-perf: //p' "$src/../../results.log" | head -1)"
	echo "kernel: $(sed -n 's/^# realstacks-start: kernel=\([^ ]*\).*/\1/p' "$src/../../results.log" | head -1)"
	echo "converted by: $("$perf" --version) ($perf)"
	echo "inject said: $(tr '\n' ' ' <"$tmp/inject.err")"
	echo "harness: $(git -C "$ROOT" rev-parse --short=12 HEAD)"
} >"$tmp/source.txt"
rm "$tmp/inject.err"
rm -rf "$dst"
mv "$tmp" "$dst"
trap - EXIT
log "guest recording: $dst ($(ls "$dst" | tr '\n' ' '))"
