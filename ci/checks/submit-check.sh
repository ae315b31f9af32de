#!/usr/bin/env bash
# usage: submit-check.sh   (what `make submit-check` runs)
#
# What a maintainer runs before applying the series, cheapest first:
#
#   apply-fresh   the fixes series alone onto a fresh base, then the
#                 feature series onto them, with make apply
#   checkpatch    checkpatch.pl --strict on every patch of both series
#   kernel-doc    scripts/kernel-doc -none on the files the series touches
#   bisect-build  every commit builds on its own (kernel, perf)
#   sparse        C=2 on the files the series touches, no new warnings
#   kunit         the series' KUnit suites through kunit.py
#   vmtest        make vmtest on the normal kernel
#   vmtest-debug  make vmtest on the debug kernel
#
# Every check runs, even after one failed, and gets one summary line:
#   PASS|FAIL  name  time  detail
# where the detail is the last line the check printed (its full output is
# in build/out/submit-check/NAME.log). Exit 0 only if every check passed,
# 1 otherwise.
#
# CHECKS="checkpatch kernel-doc" runs only those. SUBMIT_CMD_<name> (name
# with - turned into _) replaces a check's command, e.g. for the tests:
#   SUBMIT_CMD_sparse='echo stub; exit 1'
. "$(dirname "$0")/../lib.sh"

ALL="apply-fresh checkpatch kernel-doc bisect-build sparse kunit vmtest vmtest-debug"
checks=${CHECKS:-$ALL}
for c in $checks; do
	[[ " $ALL " == *" $c "* ]] || die "CHECKS: unknown check '$c' (known: $ALL)"
done

# The checks are make targets, so that they see the same KERNEL= and
# other variables as the make that called us (MAKEFLAGS carries them).
default_cmd() {
	case $1 in
	kunit) echo 'make -s --no-print-directory kunit' ;;
	vmtest) echo 'make -s --no-print-directory vmtest CONFIG=normal' ;;
	vmtest-debug) echo 'make -s --no-print-directory vmtest CONFIG=debug' ;;
	*) echo "make -s --no-print-directory $1" ;;
	esac
}

logs=${SUBMIT_LOGS:-$BUILD/out/submit-check}
mkdir -p "$logs"
cd "$ROOT"
lines=() failed=()
for c in $checks; do
	var=SUBMIT_CMD_${c//-/_}
	cmd=${!var:-$(default_cmd "$c")}
	log "submit-check: $c ($cmd)"
	t0=$SECONDS rc=0
	bash -c "$cmd" >"$logs/$c.log" 2>&1 </dev/null || rc=$?
	# The detail: the check's own last word, without the "==> " prefix.
	detail=$({ grep -v '^[[:space:]]*$' "$logs/$c.log" || true; } | tail -1 |
		sed -E 's/^(==> |error: |warning: )//' | cut -c1-90)
	if [ "$rc" -eq 0 ]; then
		status=PASS
	else
		status=FAIL
		failed+=("$c")
		detail="exit $rc: ${detail:-no output}; log: ${logs#"$ROOT"/}/$c.log"
	fi
	lines+=("$(printf '%s  %-13s %5d s  %s' "$status" "$c" $((SECONDS - t0)) "$detail")")
	printf '%s\n' "${lines[-1]}" >&2
done

echo "submit-check summary:"
printf '%s\n' "${lines[@]}"
n=$(wc -w <<<"$checks")
if [ "${#failed[@]}" -eq 0 ]; then
	echo "submit-check: all $n checks passed"
	exit 0
fi
echo "submit-check: ${#failed[@]} of $n checks failed: ${failed[*]}"
exit 1
