#!/usr/bin/env bash
# usage: bench.sh KOBJ INITRD OUT_DIR SMP PLAN
#
# make bench: boot the guest once running only selftests/bench with PLAN
# (quick, full, libs, maps or exitpath; ci/guest/init's vmtest.bench=),
# under the build lock so that no build shares the two cores with the
# timed runs, then judge, tabulate and plot it (ci/judge/bench/). Exit: 0 a whole run, 1 a broken
# run or deferral over its limits, 2 usage.
. "$(dirname "$0")/../guest/lib.sh"

[ $# -eq 5 ] || die "usage: bench.sh KOBJ INITRD OUT_DIR SMP PLAN"
kobj=$1 initrd=$2 dir=$3 smp=$4 plan=$5
case $plan in
exitpath | maps) timeout=600 ;;
quick | libs) timeout=900 ;;
full) timeout=1800 ;;
*) die "BENCH=$plan: use BENCH=quick, full, libs, maps or exitpath" ;;
esac
t0=$SECONDS
boot_guest "$kobj" "$initrd" "$dir" "$smp" "$timeout" --bench "$plan"
log "bench: guest run $((SECONDS - t0)) s (lock wait included)"
exec /usr/bin/python3 -m ci.judge.bench "$dir" --system-map "$kobj/System.map"
