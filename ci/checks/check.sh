#!/usr/bin/env bash
# usage: check.sh   (what `make check` and CI run)
#
# deps -> the harness's own tests -> the series applies to a fresh base ->
# checkpatch --strict -> vmtest on the normal kernel -> test-perf ->
# vmtest on the debug kernel -> a short make stress on it
# (CHECK_STRESS_S=120 seconds, 0: none) -> the normal and debug runs on
# the arm64 guest (make vmtest ARCH=arm64; CHECK_ARM64=0 leaves them out,
# CHECK_DEBUG=0 both debug runs) -> the ABI tests on the series without
# the unwinder. CHECK_SLOW=on
# runs both debug steps in the slow-host mode (make vmtest SLOW=on).
# Each guest's kernel is built in the background while the steps before
# it run (ci/checks/prebuild.sh; CHECK_PREBUILD=0: in its own step).
# Stops at the first failing step and names it; prints each step's time
# and CPU time at the end, and each background build's.
. "$(dirname "$0")/../lib.sh"

cd "$ROOT"
mkdir -p "$BUILD"
times=()
background=() waited=()
run_kind=$(/usr/bin/python3 -m ci.checks.timings state "$BUILD") # cold, fresh or warm
# The machine's CPU time at the start: the end says how busy the cores
# were (a check is bounded by the work it does: builds and guests).
read -r _ cpu0 <<<"$(head -1 /proc/stat)"
stress_s=${CHECK_STRESS_S:-120}
[[ $stress_s =~ ^[0-9]+$ ]] ||
	die "CHECK_STRESS_S=$stress_s: give seconds (0 leaves the stress out)"

# The builds ahead of the steps (ci/checks/prebuild.sh): each guest's
# kernel is built while the steps before it run. CHECK_PREBUILD=0 builds
# everything in its step, one thing at a time.
pre=$BUILD/check-prebuild
bg=
# In the order the steps boot them; the guest that runs longest (arm64's
# debug one) before the last build, so that little is left to run alone
# once the builds are done.
items=("normal||kernel CONFIG=normal")
[ "${CHECK_DEBUG:-1}" = 1 ] || [ "$stress_s" -gt 0 ] &&
	items+=("debug||kernel CONFIG=debug")
if [ "${CHECK_ARM64:-1}" = 1 ]; then
	# arm64's initramfs after x86's first one, which builds the packer
	# both use (build/tools/gen_init_cpio).
	items+=("arm64|vmtest|initramfs kernel ARCH=arm64 CONFIG=normal")
	[ "${CHECK_DEBUG:-1}" = 1 ] &&
		items+=("arm64-debug||kernel ARCH=arm64 CONFIG=debug")
fi
items+=("nounwind||kernel CONFIG=nounwind")
start_prebuild() {
	[ "${CHECK_PREBUILD:-1}" = 1 ] || return 0
	rm -rf "$pre" && mkdir -p "$pre"
	setsid bash ci/checks/prebuild.sh $$ "$pre" "${items[@]}" &
	bg=$!
	# Whatever ends the check ends the builds ahead of it too.
	trap 'kill -- -"$bg" 2>/dev/null || true' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}
# after ITEM: wait until the background has built ITEM (or has ended).
after() {
	local f=$pre/$1.done t0=$SECONDS rc secs cpu
	[ -n "$bg" ] || return 0
	[ -e "$f" ] || [ -e "$pre/ended" ] ||
		log "check: waiting for the background build of $1 ($pre/$1.log)"
	while [ ! -e "$f" ] && [ ! -e "$pre/ended" ]; do sleep 2; done
	[ -e "$f" ] || return 0
	read -r rc secs cpu <"$f"
	# Once per item (the debug kernel is waited for by two steps)
	if [[ " ${waited[*]} " != *" $1 "* ]]; then
		background+=("$(printf '%-22s %4d s  rc=%d  cpu %4s s' "($1)" \
			"$secs" "$rc" "$cpu")")
		waited+=("$1")
	fi
	if [ "$rc" = 0 ]; then
		log "check: $1 built in the background in $secs s, $cpu CPU-s (waited $((SECONDS - t0)) s)"
	else
		warn "the background build of $1 failed (exit $rc, $pre/$1.log): the step builds it again"
	fi
}
step() {
	local name=$1 t0=$SECONDS rc=0 cpu
	shift
	if [ "$1" = --after ]; then
		after "$2"
		shift 2
	fi
	log "check: $name"
	# Its CPU time apart from the background builds', which this shell reaps
	cpu_counted "$BUILD/check-step.cpu" "$@" || rc=$?
	cpu=$(cat "$BUILD/check-step.cpu" 2>/dev/null) || cpu="?"
	times+=("$(printf '%-22s %4d s  rc=%d  cpu %4s s' "$name" \
		$((SECONDS - t0)) "$rc" "$cpu")")
	if [ "$rc" -ne 0 ]; then
		printf '%s\n' "${times[@]}" "${background[@]}"
		printf 'check: step "%s" failed (exit %d)\n' "$name" "$rc" >&2
		exit "$rc"
	fi
	[ -z "$bg" ] || touch "$pre/step-$name.done"
}
step deps make -s deps
step tree make -s tree
start_prebuild
step perf make -s perf
step harness-tests make -s test
step apply-fresh-base make -s apply-fresh
step checkpatch make -s checkpatch
step export-current make -s export-check
step vmtest --after normal make -s vmtest CONFIG=normal
step perf-tools-tests make -s test-perf
if [ "${CHECK_DEBUG:-1}" = 1 ]; then
	step vmtest-debug --after debug make -s vmtest CONFIG=debug SLOW="${CHECK_SLOW:-}"
fi
# A short make stress (the debug kernel, kmemleak switched on at boot):
# CHECK_STRESS_S seconds of fuzzing and lifecycle storms, 0 to leave it
# out. The long run is `make stress STRESS_S=600`.
if [ "$stress_s" -gt 0 ]; then
	step stress-short --after debug make -s stress STRESS_S="$stress_s"
fi
# The arm64 guest: cross-built kernel, perf and selftests, QEMU's virt
# machine under TCG with pseudo-NMIs (ci/guest/arm64.py, doc/arm64.md).
if [ "${CHECK_ARM64:-1}" = 1 ]; then
	step vmtest-arm64 --after arm64 make -s vmtest ARCH=arm64 CONFIG=normal
	if [ "${CHECK_DEBUG:-1}" = 1 ]; then
		step vmtest-arm64-debug --after arm64-debug make -s vmtest ARCH=arm64 CONFIG=debug SLOW="${CHECK_SLOW:-}"
	fi
fi
# The series built without CONFIG_UNWIND_USER: the defer bits are refused.
step vmtest-nounwind --after nounwind make -s vmtest CONFIG=nounwind FILTER='Abi.*'
log "check: all steps passed"
printf '%s\n' "${times[@]}"
# The builds ahead of the steps, in parentheses: their time is inside the
# steps' (beside them), their CPU time is not.
[ ${#background[@]} = 0 ] || printf '%s\n' "${background[@]}"
read -r _ cpu1 <<<"$(head -1 /proc/stat)"
/usr/bin/python3 -m ci.checks.timings busy "$SECONDS" "$cpu0" "$cpu1" || true
# A run in a fresh clone: its time to doc/timings.md (cold: README too).
/usr/bin/python3 -m ci.checks.timings record "$run_kind" "$SECONDS" \
	"${times[@]}" "${background[@]}" || warn "timings not recorded"
