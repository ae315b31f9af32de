#!/usr/bin/env bash
# usage: check.sh   (what `make check` and CI run)
#
# deps -> the harness's own tests -> the series applies to a fresh base ->
# checkpatch --strict -> vmtest on the normal kernel -> vmtest on the debug
# kernel -> the ABI tests on the series without the unwinder -> the
# normal and debug runs on the arm64 guest (make vmtest ARCH=arm64;
# CHECK_ARM64=0 leaves them out, CHECK_DEBUG=0 both debug runs) -> a
# short make stress (CHECK_STRESS_S=120 seconds, 0: none). CHECK_SLOW=on
# runs both debug steps in the slow-host mode (make vmtest SLOW=on).
# Stops at the first failing step and names it; prints each step's time
# at the end.
. "$(dirname "$0")/../lib.sh"

cd "$ROOT"
times=()
run_kind=$(/usr/bin/python3 -m ci.checks.timings state "$BUILD") # cold, fresh or warm
step() {
	local name=$1 t0=$SECONDS rc=0
	shift
	log "check: $name"
	"$@" || rc=$?
	times+=("$(printf '%-22s %4d s  rc=%d' "$name" $((SECONDS - t0)) "$rc")")
	if [ "$rc" -ne 0 ]; then
		printf '%s\n' "${times[@]}"
		printf 'check: step "%s" failed (exit %d)\n' "$name" "$rc" >&2
		exit "$rc"
	fi
}
step deps make -s deps
step tree make -s tree
step perf make -s perf
step harness-tests make -s test
step apply-fresh-base make -s apply-fresh
step checkpatch make -s checkpatch
step export-current make -s export-check
step vmtest make -s vmtest CONFIG=normal
step perf-tools-tests make -s test-perf
if [ "${CHECK_DEBUG:-1}" = 1 ]; then
	step vmtest-debug make -s vmtest CONFIG=debug SLOW="${CHECK_SLOW:-}"
fi
# The series built without CONFIG_UNWIND_USER: the defer bits are refused.
step vmtest-nounwind make -s vmtest CONFIG=nounwind FILTER='Abi.*'
# The arm64 guest: cross-built kernel, perf and selftests, QEMU's virt
# machine under TCG with pseudo-NMIs (ci/guest/arm64.py, doc/arm64.md).
if [ "${CHECK_ARM64:-1}" = 1 ]; then
	step vmtest-arm64 make -s vmtest ARCH=arm64 CONFIG=normal
	if [ "${CHECK_DEBUG:-1}" = 1 ]; then
		step vmtest-arm64-debug make -s vmtest ARCH=arm64 CONFIG=debug SLOW="${CHECK_SLOW:-}"
	fi
fi
# A short make stress (its own debug + kmemleak kernel): CHECK_STRESS_S
# seconds of fuzzing and lifecycle storms, 0 to leave it out. The long
# run is `make stress STRESS_S=600`.
stress_s=${CHECK_STRESS_S:-120}
[[ $stress_s =~ ^[0-9]+$ ]] ||
	die "CHECK_STRESS_S=$stress_s: give seconds (0 leaves the stress out)"
if [ "$stress_s" -gt 0 ]; then
	step stress-short make -s stress STRESS_S="$stress_s"
fi
log "check: all steps passed"
printf '%s\n' "${times[@]}"
# A run in a fresh clone: its time to doc/timings.md (cold: README too).
/usr/bin/python3 -m ci.checks.timings record "$run_kind" "$SECONDS" "${times[@]}" || warn "timings not recorded"
