#!/usr/bin/env bash
# usage: vmtest.sh KOBJ INITRD RUN_DIR SMP TIMEOUT [FILTER]
#
# Boot the guest once (qemu/vm.py), keep with its logs what the verdict
# needs (the kernel's .config, the list of packed programs), then judge
# the run (ci/verdict.sh). Exit: 0 all passed, 1 a failure, 4 every guest
# test skipped.
. "$(dirname "$0")/lib.sh"

kobj=$1 initrd=$2 dir=$3 smp=$4 timeout=$5 filter=${6:-}
boot_guest "$kobj" "$initrd" "$dir" "$smp" "$timeout" ${filter:+--filter "$filter"}
cp "$initrd.programs" "$dir/programs.txt"
# What this architecture left out of the guest, and why (the verdict names it).
[ ! -f "$initrd.left_out" ] || cp "$initrd.left_out" "$dir/left_out.txt"
exec bash "$ROOT/ci/verdict.sh" "$dir"
