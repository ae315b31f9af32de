#!/usr/bin/env bash
# usage: save-golden.sh                 (make golden)
#        save-golden.sh NAME RUN_DIR
#
# Keep real guest runs as golden logs for the host tests: the files the
# verdict reads (console.log, results.log, run.json, kernel.config,
# programs.txt) go to tests/data/NAME/, with series.txt saying which
# series made them (build/linux's commits since the base).
#
# Without arguments, the one-command refresh of the evidence runs of
# today's series: make vmtest and make vmtest-debug of build/linux, each
# of which must pass, saved as tests/data/series/normal and
# tests/data/series/debug (tests/test_verdict.py judges them again).
# With NAME RUN_DIR: keep that run (after a make vmtest whose verdict you
# checked). tests/data/README says which runs are kept.
. "$(dirname "$0")/../series/lib.sh"

# save NAME RUN_DIR
save() {
	local name=$1 run=$2 dst f
	for f in console.log results.log run.json kernel.config programs.txt; do
		[ -f "$run/$f" ] || die "$run/$f missing: give the directory of a whole make vmtest run"
	done
	dst=$ROOT/tests/data/$name
	rm -rf "$dst"
	mkdir -p "$dst"
	cp "$run"/{console.log,results.log,run.json,kernel.config,programs.txt} "$dst/"
	[ ! -f "$run/left_out.txt" ] || cp "$run/left_out.txt" "$dst/"
	{
		echo "saved $(date -u '+%Y-%m-%d %H:%M UTC') from $run"
		if git -C "$WORKTREE" rev-parse -q --verify "$BASE_TAG" >/dev/null; then
			echo "series: $(git -C "$WORKTREE" rev-list --count "$BASE_TAG..HEAD") patches on $BASE_TAG, HEAD $(git -C "$WORKTREE" rev-parse --short=12 HEAD) $(git -C "$WORKTREE" log -1 --format=%s)"
			echo "diff: $(git -C "$WORKTREE" diff "$BASE_TAG..HEAD" | sha1sum | cut -c1-12) (sha1 of git diff $BASE_TAG..HEAD)"
		fi
		echo "harness: $(git -C "$ROOT" rev-parse --short=12 HEAD)"
	} >"$dst/series.txt"
	log "golden log $name: $dst (from $run)"
}

if [ $# -eq 2 ]; then
	save "$1" "$2"
	exit 0
fi
[ $# -eq 0 ] || die "usage: save-golden.sh [NAME RUN_DIR] (no arguments: make vmtest, make vmtest-debug, saved as tests/data/series/{normal,debug})"
# The evidence is x86_64's, of build/linux, at the host's speed: the run
# directories below are those.
[ "${VMTEST_ARCH:-x86_64}" = x86_64 ] && [ -z "${VMTEST_SLOW:-}" ] && [ -z "${KERNEL:-}" ] ||
	die "make golden saves x86_64 runs of build/linux: run it without ARCH=, SLOW= and KERNEL="
out=$BUILD/out/linux
make -C "$ROOT" --no-print-directory vmtest ||
	fail "make vmtest failed: the evidence must be a passing run"
make -C "$ROOT" --no-print-directory vmtest-debug ||
	fail "make vmtest-debug failed: the evidence must be a passing run"
save series/normal "$out/vmtest-normal"
save series/debug "$out/vmtest-debug"
