#!/usr/bin/env bash
# usage: [STRESS_ARGS=a,b] stress.sh KOBJ INITRD OUT_DIR SMP SECONDS
#
# make stress: boot the stress kernel once running only selftests/stress
# for SECONDS (ci/guest/init's vmtest.stress=), under the build lock, then
# judge it (ci/judge/stress.py). Exit: 0 clean, 1 a splat, leak, taint, silent
# loss or unfinished run, 2 usage.
. "$(dirname "$0")/../guest/lib.sh"

[ $# -eq 5 ] || die "usage: stress.sh KOBJ INITRD OUT_DIR SMP SECONDS"
kobj=$1 initrd=$2 dir=$3 smp=$4 secs=$5
[[ $secs =~ ^[0-9]+$ ]] && [ "$secs" -gt 0 ] ||
	die "STRESS_S=$secs: give the stress time in seconds, e.g. STRESS_S=600"
# Boot and the final kmemleak scans of the debug kernel under TCG take
# a few minutes at most; a guest that overruns this has hung. One that
# reports a soft lockup, hung task or RCU stall is stopped long before
# (ci/guest/vm.py, --stuck-grace).
timeout=$((secs + 600))
t0=$SECONDS
boot_guest "$kobj" "$initrd" "$dir" "$smp" "$timeout" --stress "$secs" \
	--stress-args="${STRESS_ARGS:-}"
log "stress: guest run $((SECONDS - t0)) s (lock wait included)"
exec /usr/bin/python3 -m ci.judge.stress "$dir"
