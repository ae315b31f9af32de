#!/usr/bin/env bash
# usage: verdict.sh RUN_DIR
#
# Judge one saved guest run (what ci/guest/vm.py and vmtest.sh left in RUN_DIR:
# console.log, results.log, run.json, kernel.config, programs.txt) without
# booting anything, like `kunit.py parse`: one pytest case per guest test,
# RUN_DIR/junit.xml and the one-screen summary. EXPECT_FEATURE=yes|no|auto
# (default auto: from kernel.config) says whether a skipped feature test
# fails. Exit: 0 all passed, 1 a failure, 2 no run there, 4 all skipped.
. "$(dirname "$0")/../lib.sh"

[ $# -eq 1 ] || die "usage: verdict.sh RUN_DIR (make verdict RUN=DIR)"
dir=$(realpath -m "$1")
[ -f "$dir/run.json" ] || [ -f "$dir/results.log" ] ||
	die "$dir holds no guest run (no run.json, no results.log): give RUN= the directory make vmtest printed"
case ${EXPECT_FEATURE:=auto} in
yes | no | auto) ;;
*) die "EXPECT_FEATURE=$EXPECT_FEATURE: use yes, no or auto" ;;
esac
rc=0
/usr/bin/python3 -m pytest -q -p no:cacheprovider --rootdir "$ROOT/ci/judge/vmtest" \
	"$ROOT/ci/judge/vmtest/test_guest.py" --vmtest-dir "$dir" \
	--vmtest-expect-feature "$EXPECT_FEATURE" --junitxml "$dir/junit.xml" \
	-o junit_suite_name=vmtest --no-header -rN --tb=no || rc=$?
log "logs: $dir/{console,results}.log, JUnit: $dir/junit.xml"
case $rc in
0) log "vmtest: PASS" ;;
4) log "vmtest: every guest test skipped (exit 4)" ;;
*) rc=1; log "vmtest: FAIL (exit 1): see the FAILED lines above" ;;
esac
exit "$rc"
