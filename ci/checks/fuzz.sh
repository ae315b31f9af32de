#!/usr/bin/env bash
# usage: fuzz.sh SECONDS KSRC
#
# Fuzz the SFrame reader of the kernel tree KSRC (kernel/unwind/sframe.c,
# compiled for the host with fuzz/sframe/'s stand-ins) with libFuzzer under
# AddressSanitizer and UndefinedBehaviorSanitizer, for SECONDS seconds.
# The corpus (build/fuzz/sframe/corpus) starts from the real sections in
# fuzz/sframe/seeds/ (GNU as and ld of Debian bookworm, trixie and sid:
# SFrame versions 1, 2 and 3) and grows from run to run. Prints the
# inputs run and the findings; a finding is kept under
# build/fuzz/sframe/findings/ and fails the run (exit 1). FUZZ_OPTIONAL=1
# (make test's run): a tree without the reader is skipped, not an error.
. "$(dirname "$0")/../lib.sh"

[ $# -eq 2 ] || die "usage: fuzz.sh SECONDS KSRC"
secs=$1 ksrc=$(cd "$2" 2>/dev/null && pwd) ||
	die "no kernel tree at $2: make tree first (or KERNEL=DIR)"
if [ ! -f "$ksrc/kernel/unwind/sframe.c" ]; then
	# make test on a tree without the series (KERNEL=DIR): nothing to fuzz
	[ -z "${FUZZ_OPTIONAL:-}" ] ||
		{ echo "fuzz: skipped: $ksrc has no SFrame reader (kernel/unwind/sframe.c)"; exit 0; }
	die "$ksrc has no kernel/unwind/sframe.c: not a tree with the series"
fi
command -v clang >/dev/null || die "no clang: make deps installs it"

out=$BUILD/fuzz/sframe
mkdir -p "$out/corpus" "$out/findings"
make -s -C "$ROOT/fuzz/sframe" KSRC="$ksrc" OUT="$out" "$out/fuzz_sframe" >"$out/build.log" 2>&1 ||
	{ cat "$out/build.log" >&2; fail "fuzz: the SFrame reader does not build for the host"; }
cp -n "$ROOT"/fuzz/sframe/seeds/*.sframe "$out/corpus/"

# -timeout: one input may not take a second (the reader's work is bounded)
set +e
"$out/fuzz_sframe" -max_total_time="$secs" -timeout=1 -rss_limit_mb=2048 \
	-print_final_stats=1 -artifact_prefix="$out/findings/" \
	"$out/corpus" >"$out/run.log" 2>&1
rc=$?
set -e
runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$out/run.log" | tail -1)
[ -n "$runs" ] || runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/run.log" | tail -1)
corpus=$(find "$out/corpus" -type f | wc -l)
findings=$(find "$out/findings" -type f | wc -l)
echo "fuzz: SFrame reader: ${runs:-?} inputs in $secs s, corpus $corpus, findings $findings (build/fuzz/sframe/findings)"
if [ "$rc" -ne 0 ] || [ "$findings" -ne 0 ]; then
	grep -E 'ERROR|runtime error|outside the section|SUMMARY' "$out/run.log" | head -5 >&2 || true
	fail "fuzz: the SFrame reader failed on an input: $out/run.log"
fi
