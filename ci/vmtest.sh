#!/usr/bin/env bash
# usage: vmtest.sh KOBJ INITRD RUN_DIR SMP TIMEOUT [FILTER]
#
# Boot the guest once (qemu/vm.py), keep with its logs what the verdict
# needs (the kernel's .config, the list of packed programs), then judge
# the run (ci/verdict.sh). Exit: 0 all passed, 1 a failure, 4 every guest
# test skipped.
. "$(dirname "$0")/lib.sh"

kobj=$1 initrd=$2 dir=$3 smp=$4 timeout=$5 filter=${6:-}
rm -rf "$dir"
mkdir -p "$dir"
cp "$kobj/.config" "$dir/kernel.config"
cp "$initrd.programs" "$dir/programs.txt"
# The guest is timed and samples under TCG: keep builds off the two cores.
VMTEST_PROBE_CACHE=$BUILD/kvm-probe.json with_build_lock /usr/bin/python3 "$ROOT/qemu/vm.py" \
	--kernel "$kobj/$(arch KERNEL_IMAGE)" --initrd "$initrd" --out "$dir" \
	--smp "$smp" --timeout "$timeout" ${filter:+--filter "$filter"}
exec bash "$ROOT/ci/verdict.sh" "$dir"
