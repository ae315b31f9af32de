#!/usr/bin/env bash
# usage: realstacks.sh KOBJ INITRD OUT_DIR SMP PLAN
#
# make realstacks: boot the guest once running only the real programs'
# runner (/realstacks/run.sh with PLAN: all, or PROGRAM:BUILD[:ENTRY],...; ci/guest/init's
# vmtest.realstacks=), under the build lock, then judge the run and
# print the table (python3 -m ci.judge.realstacks, doc/realstacks.md).
# PLAN "overhead" (make overhead): what sampling costs the programs
# (run.sh overhead; python3 -m ci.judge.overhead, doc/bench.md); PLAN
# "profile" (make overhead PROFILE=1): where the deferred walks' time
# goes (run.sh profile; the same judge).
# Exit: 0 every run made and judged, 1 a broken run, 2 usage.
. "$(dirname "$0")/../guest/lib.sh"

[ $# -eq 5 ] || die "usage: realstacks.sh KOBJ INITRD OUT_DIR SMP PLAN"
kobj=$1 initrd=$2 dir=$3 smp=$4 plan=$5
[[ $plan =~ ^[a-z0-9:,]+$ ]] || die "REALSTACKS=$plan: give all, or PROGRAM:BUILD[:ENTRY] items (xz:fp,sqlite3:all,all:all:libc)"
[ "$(arch NAME)" = x86_64 ] || die "make realstacks runs on the x86-64 guest only"
t0=$SECONDS
# make overhead on the instruction counter runs one TCG thread: 913 s on
# the project's machine, so a host 2.5 times slower needs about 2300.
judge=(ci.judge.realstacks --doc "$ROOT/doc/realstacks.md") timeout=1800
case $plan in
overhead | profile) judge=(ci.judge.overhead) timeout=3600 ;;
esac
boot_guest "$kobj" "$initrd" "$dir" "$smp" "$timeout" --realstacks "$plan"
log "realstacks: guest run $((SECONDS - t0)) s (lock wait included)"
exec /usr/bin/python3 -m "${judge[@]}" "$dir"
