#!/usr/bin/env bash
# usage: vmtest.sh KOBJ INITRD RUN_DIR SMP TIMEOUT [FILTER]
#
# Boot the guest once (ci/guest/vm.py, which keeps with its logs what the
# verdict needs: the kernel's .config, the list of packed programs), then
# judge the run (ci/judge/verdict.sh). Exit: 0 all passed, 1 a failure, 4 every guest
# test skipped.
. "$(dirname "$0")/../guest/lib.sh"

kobj=$1 initrd=$2 dir=$3 smp=$4 timeout=$5 filter=${6:-}
boot_guest "$kobj" "$initrd" "$dir" "$smp" "$timeout" ${filter:+--filter "$filter"}
exec bash "$ROOT/ci/judge/verdict.sh" "$dir"
