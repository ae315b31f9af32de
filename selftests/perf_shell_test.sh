#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# perf's own shell tests of deferred callchains (tools/perf/tests/shell/
# callchain_defer_*.sh of the tree the guest's perf is built from, packed
# as /bin/tests/shell/, where 'perf test' looks beside /bin/perf), run
# through 'perf test' one at a time and reported as KTAP: one case per
# test, named PerfShell.<script>, with its verbose output as diagnostics.
# Exit codes as the other selftests: 0 passed, 1 a test failed, 4 all
# skipped.
#
# --gtest_filter=PATTERNS (what ci/guest/init passes with FILTER=) keeps the
# cases whose name matches one of the ':'-separated PATTERNS, shell
# patterns ('*' and '?'), as GoogleTest's positive patterns do.
# $PERF and $PERF_SHELL_DIR override /bin/perf and /bin/tests/shell.
perf=${PERF:-/bin/perf}
dir=${PERF_SHELL_DIR:-$(dirname "$perf")/tests/shell}
filter='*'
for arg in "$@"; do
	case "$arg" in --gtest_filter=*) filter=${arg#--gtest_filter=} ;; esac
done

echo "KTAP version 1"
# The guest always gets perf and its shell tests: missing, they are a
# plain skip, which the host fails on a kernel with the feature
# (doc/harness.md, "Skips and the feature").
if [ ! -x "$perf" ] || [ ! -d "$dir" ]; then
	echo "1..1"
	echo "# $perf or $dir missing: no perf shell tests packed"
	echo "ok 1 PerfShell # SKIP $perf or $dir missing"
	exit 4
fi

# description SCRIPT: what 'perf test' calls it, line 2 or line 3 after
# an SPDX line.
description() {
	sed -n '2,3p' "$1" | grep -v SPDX- | head -n 1 | sed 's/^# //'
}

# The tests to run: "<number>:<name>" for each callchain_defer_*.sh, the
# number 'perf test list' gives its description. Listed once: each
# 'perf test list' loads every test, seconds on a slow debug guest.
list=$(cd / && "$perf" test list 2>/dev/null)
tests=
for script in "$dir"/callchain_defer_*.sh; do
	[ -f "$script" ] || continue
	name=PerfShell.$(basename "$script" .sh)
	wanted=
	old_ifs=$IFS IFS=:
	set -f
	for pattern in $filter; do
		# shellcheck disable=SC2254
		case "$name" in $pattern) wanted=y ;; esac
	done
	set +f
	IFS=$old_ifs
	[ -n "$wanted" ] || continue
	desc=$(description "$script")
	num=$(echo "$list" |
		sed -n "s/^ *\([0-9][0-9]*\): $desc\$/\1/p" | head -n 1)
	tests="$tests $num:$name"
done
# A perf tree without the series (upstream's) has none of these tests.
if ! ls "$dir"/callchain_defer_*.sh >/dev/null 2>&1; then
	echo "1..1"
	echo "# $dir has no callchain_defer_*.sh: perf from a tree without them"
	echo "ok 1 PerfShell # SKIP not applicable: this perf has no deferred callchain shell tests"
	exit 4
fi
set -- $tests
echo "1..$#"
[ $# -gt 0 ] || exit 0

n=0 failed=0 skipped=0
for t in "$@"; do
	n=$((n + 1))
	num=${t%%:*} name=${t#*:}
	if [ -z "$num" ]; then
		echo "# $name: not in 'perf test list'"
		echo "not ok $n $name"
		failed=$((failed + 1))
		continue
	fi
	# From / so that perf test takes its shell tests beside the binary.
	out=$(cd / && "$perf" test -v "$num" 2>&1)
	echo "$out" | sed 's/^/# /'
	# The result line of this test, not of another one with its number.
	desc=$(description "$dir/${name#PerfShell.}.sh")
	result=$(echo "$out" |
		sed -n "s/^ *$num: $desc *: \(Ok\|FAILED!\|Skip.*\)\$/\1/p" | tail -n 1)
	case "$result" in
	Ok) echo "ok $n $name" ;;
	Skip*)
		why=$(echo "$result" | sed -n 's/^Skip (\(.*\))$/\1/p')
		echo "ok $n $name # SKIP ${why:-the test skipped (exit 2), see its output}"
		skipped=$((skipped + 1)) ;;
	*)
		echo "# result: '${result:-none}'"
		echo "not ok $n $name"
		failed=$((failed + 1)) ;;
	esac
done
[ $failed -eq 0 ] || exit 1
[ $skipped -lt $n ] || exit 4
exit 0
