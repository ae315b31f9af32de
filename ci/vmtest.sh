#!/usr/bin/env bash
# usage: vmtest.sh KOBJ INITRD RUN_DIR SMP TIMEOUT [FILTER]
#
# Boot the guest once (qemu/vm.py), then let pytest turn its logs into one
# test per guest test, a JUnit file (RUN_DIR/junit.xml) and the summary.
# Exit: 0 all passed, 1 a failure, 4 every guest test skipped.
. "$(dirname "$0")/lib.sh"

kobj=$1 initrd=$2 dir=$3 smp=$4 timeout=$5 filter=${6:-}
rm -rf "$dir"
mkdir -p "$dir"
/usr/bin/python3 "$ROOT/qemu/vm.py" --kernel "$kobj/arch/x86/boot/bzImage" \
	--initrd "$initrd" --out "$dir" --smp "$smp" --timeout "$timeout" \
	${filter:+--filter "$filter"}
cp "$kobj/.config" "$dir/kernel.config"
rc=0
/usr/bin/python3 -m pytest -q -p no:cacheprovider --rootdir "$ROOT/ci/vmtest" \
	"$ROOT/ci/vmtest/test_guest.py" --vmtest-dir "$dir" \
	--vmtest-config "$dir/kernel.config" --junitxml "$dir/junit.xml" \
	-o junit_suite_name=vmtest --no-header -rN --tb=no || rc=$?
log "logs: $dir/{console,results}.log, JUnit: $dir/junit.xml"
case $rc in
0) log "vmtest: PASS" ;;
4) log "vmtest: every guest test skipped (exit 4)" ;;
*) log "vmtest: FAIL (exit $rc): see FAILED lines above" ;;
esac
exit "$rc"
